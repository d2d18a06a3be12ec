"""The fabric rules on a captured host (issue 32, docs/offline.md): a captured root of the demo's fabric host, read
by the collectors as `gpufleet analyze` reads it, gives the fabric findings of its live audit."""

import json
import os

from ansible_collections.gpufleet.core.plugins.module_utils import collector
from ansible_collections.gpufleet.core.plugins.module_utils.capture_host import open_capture
from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.diagnose import diagnose_fleet
from ansible_collections.gpufleet.core.plugins.plugin_utils.policy import validate_policy
from tests.support.capture_roots import root_from_fixture
from tests.support.demo_fabric_checks import HOST
from tests.support.demo_fleet import demo_audit, group_vars
from tests.support.schema_check import ROOT, assert_valid_facts
from tests.support.rule_builders import KNOWLEDGE

FIXTURE = os.path.join(ROOT, "inventories", "demo", "fixtures", HOST + ".json")


def fabric_only(found):
    return sorted((f["rule"], f["severity"], f["evidence"].get("link")) for f in found
                  if f["rule"].startswith(("hardware.fabric", "hardware.gpudirect", "hardware.gpu_nic")))


def fabric_findings(facts, policy):
    return fabric_only(diagnose_fleet({HOST: facts}, {HOST: policy}, KNOWLEDGE)[HOST])


def test_a_captured_root_of_the_fabric_host_gives_the_fabric_findings_of_its_live_audit(tmp_path):
    with open(FIXTURE, encoding="utf-8") as stream:
        fixture = json.load(stream)
    policy = validate_policy(group_vars("h100_fabric")["gpufleet_policy_fabric"])
    root = root_from_fixture(fixture, str(tmp_path / "capture"))
    captured, _recorded = collector.Collection(capture=open_capture(root), gather_subset=fixture["gather_subset"]).run()
    assert_valid_facts(captured)
    assert captured["capture"]["kind"] == "root" and captured["fabric"]["hcas_source"] == "sysfs"
    expected = [("hardware.fabric_port_degraded", "critical", "mlx5_3/1"),
                ("hardware.fabric_port_down", "critical", "mlx5_6/1")]
    live = fabric_only(demo_audit()[1][HOST])  # the demo's audit of the host, by its group's policy
    assert fabric_findings(captured, policy) == live == expected
    # the capture's topology and GPUDirect facts are judged too: a stricter distance finds what the capture shows
    assert captured["fabric"]["topology"]["matrix"]["GPU0"]["NIC1"] == "NODE"
    captured["fabric"]["topology"]["matrix"]["GPU0"]["NIC0"] = "SYS"
    assert ("hardware.gpu_nic_distance", "warning", None) in fabric_findings(captured, policy)
