"""The fabric under the real playbook (issue 32): the demo's fabric host, in an inventory of its own with the demo's
group_vars, audited twice against one store; before the second audit its fixture is replaced by a later recording
of the same host whose mlx5_3 counters grew (tools/demo_fabric_hosts.fabric_host with other counters, recorded by
tools/make_demo_fleet.record as the committed fixture is). The second audit reports the growth with each counter's
from, to and delta, beside the degraded and the down port both audits show."""

import importlib.util
import json
import os
import shutil
import subprocess
import sys

import pytest

from ansible_collections.gpufleet.core.plugins.plugin_utils.reports.format import expanded

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PLAYBOOK_BIN = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")
HOST = "gpu-h100-fabric-19"
LATER_SECONDS = 6 * 3600

pytestmark = pytest.mark.integration


def tool(name):
    if os.path.join(ROOT, "tools") not in sys.path:
        sys.path.insert(0, os.path.join(ROOT, "tools"))  # the tools import each other by name
    spec = importlib.util.spec_from_file_location(name, os.path.join(ROOT, "tools", name + ".py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def fabric_inventory(folder):
    """An inventory of the fabric host alone, in its demo group, with the demo's group_vars and its fixture."""
    demo = os.path.join(ROOT, "inventories", "demo")
    os.makedirs(os.path.join(folder, "fixtures"))
    shutil.copytree(os.path.join(demo, "group_vars"), os.path.join(folder, "group_vars"))
    shutil.copy(os.path.join(demo, "fixtures", HOST + ".json"), os.path.join(folder, "fixtures"))
    hosts = os.path.join(folder, "hosts.yml")
    with open(hosts, "w", encoding="utf-8") as stream:
        json.dump({"all": {"children": {"gpu_fleet": {"children": {"h100_fabric": {"hosts": {HOST: None}}}}}}}, stream)
    return hosts


def later_fixture(path):
    """The fabric host six hours later: mlx5_3 flapped three more times, with more symbol and receive errors."""
    hosts, make = tool("demo_fabric_hosts"), tool("make_demo_fleet")
    ports = hosts.default_ports()
    ports["mlx5_3"] = hosts.ib_port(3, rate=hosts.NDR_2X, symbol_error=1432 + 250, link_error_recovery=3 + 2,
                                    link_downed=2 + 3, port_rcv_errors=87 + 40)
    spec = hosts.fabric_host(ports=ports)
    spec["host"]["now"] += LATER_SECONDS
    with open(path, "w", encoding="utf-8") as stream:
        stream.write(make.fixture_text(make.record(spec)))


def audit(inventory, report_dir):
    env = {name: value for name, value in os.environ.items() if name != "GPUFLEET_STORE_URL"}
    env.update(ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_NOCOLOR="1")
    completed = subprocess.run([PLAYBOOK_BIN, "audit.yml", "-i", inventory, "-e", "gpufleet_report_dir=%s" % report_dir],
                               cwd=ROOT, env=env, capture_output=True, text=True, timeout=600, check=False)
    with open(os.path.join(report_dir, "latest", "report.json"), encoding="utf-8") as stream:
        return completed, expanded(json.load(stream))


def by_rule(report):
    return {finding["rule"]: finding for finding in report["findings"]}


def test_a_second_audit_of_the_fabric_host_reports_the_counters_that_grew(tmp_path):
    inventory = fabric_inventory(str(tmp_path / "inventory"))
    first_run, first = audit(inventory, str(tmp_path / "reports"))
    later_fixture(str(tmp_path / "inventory" / "fixtures" / (HOST + ".json")))
    second_run, second = audit(inventory, str(tmp_path / "reports"))
    assert first_run.returncode == second_run.returncode == 2, first_run.stdout[-3000:] + second_run.stdout[-3000:]
    for report in (first, second):
        found = by_rule(report)
        assert found["hardware.fabric_port_degraded"]["evidence"]["link"] == "mlx5_3/1"
        assert found["hardware.fabric_port_down"]["evidence"]["link"] == "mlx5_6/1"
    assert "hardware.fabric_counter_growth" not in by_rule(first)
    assert second["changes"]["against"] == first["run"]["id"]
    growth = by_rule(second)["hardware.fabric_counter_growth"]
    assert growth["severity"] == "critical" and growth["host"] == HOST
    assert growth["evidence"]["link"] == "mlx5_3/1" and growth["evidence"]["since"] == "2026-11-30T06:00:00Z"
    deltas = {entry["counter"]: (entry["from"], entry["to"], entry["delta"], entry["severity"])
              for entry in growth["evidence"]["counters"]}
    assert deltas == {"link_downed": (2, 5, 3, "critical"), "link_error_recovery": (3, 5, 2, "warning"),
                      "symbol_error": (1432, 1682, 250, "warning"), "port_rcv_errors": (87, 127, 40, "warning")}
    assert "HCA port mlx5_3/1: link_downed 2 -> 5 (+3)" in growth["summary"]
    assert "hardware.fabric_counter_growth" in second_run.stdout
