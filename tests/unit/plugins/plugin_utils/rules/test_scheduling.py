"""Scheduling-layer rules: MIG mode and layout against an nvidia-mig-parted config, compute mode, MPS, container runtime."""

import os

import pytest

from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.findings import list_rules
from ansible_collections.gpufleet.core.plugins.plugin_utils.policy import resolve_mig_config as loaded
from tests.support.corpus import reference_path
from tests.support.schema_check import ROOT
from tests.support.rule_builders import findings_of, healthy_node, only, policy, service

A100 = "NVIDIA A100-SXM4-80GB"
A100_BUS_IDS = ("0000:07:00.0", "0000:0f:00.0", "0000:47:00.0", "0000:4e:00.0",
                "0000:87:00.0", "0000:90:00.0", "0000:b7:00.0", "0000:bd:00.0")
OPERATOR_CONFIG = "nvidia-mig-parted-configs/gpu-operator_default-mig-parted-config.config.yaml"
OWN_CONFIG = os.path.join(ROOT, "tests", "fixtures", "samples", "mig-parted_config.yaml")

MIG_CONFIG = {"version": "v1", "mig-configs": {
    "all-disabled": [{"devices": "all", "mig-enabled": False}],
    "all-1g.10gb": [{"devices": "all", "mig-enabled": True, "mig-devices": {"1g.10gb": 7}}],
    "all-3g.40gb": [{"devices": "all", "mig-enabled": True, "mig-devices": {"3g.40gb": 2}}],
    "three-3g": [{"devices": "all", "mig-enabled": True, "mig-devices": {"3g.40gb": 3}}],
}}

# GPU instance profile ids and placements of an A100 80GB (nvidia-smi mig -lgipp).
PROFILE = {"1g.10gb": (19, 1, 0), "3g.40gb": (9, 4, 2)}


def gpu_instance(gi_id, profile, start):
    profile_id, size, ci_profile_id = PROFILE[profile]
    return {"id": gi_id, "profile_id": profile_id, "profile_name": profile, "placement": {"start": start, "size": size},
            "memory_mib": 40192 if size == 4 else 9728,
            "compute_instances": [{"id": 0, "profile_id": ci_profile_id, "profile_name": profile,
                                   "placement": {"start": 0, "size": 3 if size == 4 else 1}}]}


def two_3g_40gb():
    return [gpu_instance(1, "3g.40gb", 4), gpu_instance(2, "3g.40gb", 0)]


def seven_1g_10gb():
    return [gpu_instance(index + 7, "1g.10gb", start) for index, start in enumerate((0, 1, 2, 3, 4, 5, 6))]


def a100_mig_node(layout=two_3g_40gb):
    facts = healthy_node(driver="535.183.06")
    facts["driver"]["cuda_driver_version"] = "12.2"
    facts["host"]["cuda_toolkits"] = [{"path": "/usr/local/cuda-12.2", "version": "12.2.2"}]
    for gpu, bus in zip(facts["gpus"], A100_BUS_IDS):
        gpu.update(name=A100, pci_bus_id=bus, architecture="ampere", compute_capability="8.0",
                   vbios_version="92.00.45.00.05", fabric=None, processes=[])
        gpu["memory"].update(total_mib=81920, used_mib=0, free_mib=81920)
        gpu["power"].update(limit_w=400.0, default_limit_w=400.0, max_limit_w=400.0, draw_w=61.2)
        gpu["pcie"].update(gen_current=4, gen_max=4)
        gpu["nvlinks"] = gpu["nvlinks"][:12]
        gpu["mig"] = {"mode_current": True, "mode_pending": True, "gpu_instances": layout()}
    return facts


def mig_policy(selected, **extra):
    return policy(mig={"config": MIG_CONFIG, "selected": selected}, **extra)


def test_mig_mode_pending_a_reset():
    facts = a100_mig_node()
    for gpu in facts["gpus"][4:]:
        gpu["mig"] = {"mode_current": False, "mode_pending": True, "gpu_instances": []}
    found = findings_of(facts, "scheduling.mig_pending")
    assert [f["gpu"] for f in found] == list(A100_BUS_IDS[4:])
    assert found[0]["fix"] == "mig_layout" and found[0]["evidence"] == {"mode_current": False, "mode_pending": True}


def test_mig_mode_settled_is_quiet():
    assert findings_of(a100_mig_node(), "scheduling.mig_pending") == []


def test_mig_layout_drift_from_the_selected_config():
    facts = a100_mig_node(seven_1g_10gb)
    found = findings_of(facts, "scheduling.mig_layout_drift", mig_policy("all-3g.40gb"))
    assert len(found) == 8 and found[0]["fix"] == "mig_layout"
    assert found[0]["evidence"]["diff"]["devices"] == {
        "1g.10gb": {"want": 0, "have": 7}, "3g.40gb": {"want": 2, "have": 0}}
    assert "1g.10gb x7, wanted x0" in found[0]["summary"]


def test_mig_layout_matching_the_config_is_quiet():
    assert findings_of(a100_mig_node(), "scheduling.mig_layout_drift", mig_policy("all-3g.40gb")) == []
    assert findings_of(a100_mig_node(seven_1g_10gb), "scheduling.mig_layout_drift", mig_policy("all-1g.10gb")) == []


@pytest.mark.corpus
def test_mig_layout_from_the_gpu_operator_default_config_file():
    the_policy = loaded(policy(mig={"config_file": reference_path(OPERATOR_CONFIG), "selected": "all-3g.40gb"}))
    assert findings_of(a100_mig_node(), "scheduling.mig_layout_drift", the_policy) == []
    the_policy = loaded(policy(mig={"config_file": reference_path(OPERATOR_CONFIG), "selected": "all-disabled"}))
    assert len(findings_of(a100_mig_node(), "scheduling.mig_layout_drift", the_policy)) == 8


def test_mig_layout_from_a_config_file():
    the_policy = loaded(policy(mig={"config_file": OWN_CONFIG, "selected": "training-halves"}))
    assert findings_of(a100_mig_node(), "scheduling.mig_layout_drift", the_policy) == []
    the_policy = loaded(policy(mig={"config_file": OWN_CONFIG, "selected": "inference-split"}))
    found = findings_of(a100_mig_node(), "scheduling.mig_layout_drift", the_policy)
    assert len(found) == 8
    assert found[0]["evidence"]["diff"]["devices"] == {
        "1g.10gb": {"want": 2, "have": 0}, "2g.20gb": {"want": 1, "have": 0}, "3g.40gb": {"want": 1, "have": 2}}


def test_mig_config_that_cannot_be_read_is_reported():
    the_policy = policy(mig={"config_file": "/nonexistent/mig.yaml", "selected": "all-3g.40gb"})
    finding = only(a100_mig_node(), "scheduling.mig_layout_drift", the_policy)
    assert "/nonexistent/mig.yaml" in finding["evidence"]["error"]


def test_pending_mode_change_alone_is_not_drift():
    facts = a100_mig_node()
    facts["gpus"][0]["mig"] = {"mode_current": False, "mode_pending": True, "gpu_instances": []}
    found = findings_of(facts, "scheduling.mig_layout_drift", mig_policy("all-disabled"))
    assert [f["gpu"] for f in found] == list(A100_BUS_IDS[1:])


def test_layout_the_a100_cannot_hold():
    facts = a100_mig_node()
    found = findings_of(facts, "scheduling.mig_layout_infeasible", mig_policy("three-3g"))
    assert len(found) == 8 and "3g.40gb" in found[0]["summary"]
    assert findings_of(facts, "scheduling.mig_layout_drift", mig_policy("three-3g")) == []


def test_mig_layout_on_a_gpu_without_mig():
    facts = healthy_node(gpus=1)
    facts["gpus"][0].update(name="NVIDIA L40S", nvlinks=[], fabric=None)
    facts["gpus"][0]["mig"] = {"mode_current": None, "mode_pending": None, "gpu_instances": []}
    the_policy = policy(mig={"config": {"version": "v1", "mig-configs": {"l40s": [
        {"devices": [0], "mig-enabled": True, "mig-devices": {"1g.12gb": 4}}]}}, "selected": "l40s"},
        gpus={"expected_count": 1})
    finding = only(facts, "scheduling.mig_layout_infeasible", the_policy)
    assert "does not support MIG" in finding["summary"]


def test_feasible_layout_is_quiet():
    assert findings_of(a100_mig_node(), "scheduling.mig_layout_infeasible", mig_policy("all-1g.10gb")) == []


def test_compute_mode_differs_from_policy():
    facts = healthy_node()
    finding = only(facts, "scheduling.compute_mode", policy(compute_mode="exclusive_process"))
    assert finding["fix"] == "gpu_settings" and len(finding["evidence"]["gpus"]) == 8
    assert findings_of(facts, "scheduling.compute_mode", policy(compute_mode="default")) == []


def mps_node():
    facts = healthy_node()
    facts["host"]["services"]["mps"] = service("nvidia-mps", restart="on-failure")
    facts["host"]["mps_daemon_running"] = True
    for gpu in facts["gpus"]:
        gpu["compute_mode"] = "exclusive_process"
    return facts


def test_mps_daemon_where_policy_wants_exclusive_gpus():
    finding = only(mps_node(), "scheduling.mps_daemon", policy(sharing={"mode": "exclusive"}))
    assert finding["severity"] == "warning" and finding["evidence"]["exclusive_process_gpus"] == 8


def test_mps_daemon_with_sharing_unset_is_info_and_with_mps_quiet():
    assert only(mps_node(), "scheduling.mps_daemon")["severity"] == "info"
    assert findings_of(mps_node(), "scheduling.mps_daemon", policy(sharing={"mode": "mps"})) == []


def test_mps_policy_without_a_daemon():
    finding = only(healthy_node(), "scheduling.mps_daemon", policy(sharing={"mode": "mps"}))
    assert finding["evidence"]["mps_daemon_running"] is False
    assert findings_of(healthy_node(), "scheduling.mps_daemon", policy(sharing={"mode": "exclusive"})) == []


def test_container_runtime_required_but_not_configured():
    facts = healthy_node()
    facts["host"]["container_toolkit"].update(docker_nvidia_runtime=False)
    finding = only(facts, "scheduling.container_runtime", policy(container_runtime={"required": True}))
    assert finding["severity"] == "critical" and finding["evidence"]["version"] == "1.16.2"
    assert findings_of(facts, "scheduling.container_runtime") == []


def test_container_runtime_configured_is_quiet():
    assert findings_of(healthy_node(), "scheduling.container_runtime", policy(container_runtime={"required": True})) == []


def test_every_scheduling_rule_names_a_fix_or_none():
    rules = [rule for rule in list_rules() if rule["layer"] == "scheduling"]
    assert {rule["id"]: rule["fix"] for rule in rules if rule["id"].startswith("scheduling.mig")} == {
        "scheduling.mig_layout_drift": "mig_layout", "scheduling.mig_layout_infeasible": None,
        "scheduling.mig_pending": "mig_layout"}
