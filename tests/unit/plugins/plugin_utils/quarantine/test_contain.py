"""A node's place in its scheduler (plugin_utils/quarantine/contain.py): which scheduler answers, whether the node
is out and whose doing that is, and the plain scontrol / kubectl arguments."""

import copy
import json

from ansible_collections.gpufleet.core.plugins.plugin_utils.policy.defaults import DEFAULT_POLICY
from ansible_collections.gpufleet.core.plugins.plugin_utils.quarantine.contain import (
    commands, condition_reason, node_state, taint_value)

CONTAIN = copy.deepcopy(DEFAULT_POLICY["quarantine"]["contain"])
NAMES = {"slurm": "gpu-07", "kubernetes": "gpu-07.example"}
NO_SCONTROL = {"rc": 2, "stdout": "", "stderr": "[Errno 2] No such file or directory: b'scontrol'",
               "msg": "[Errno 2] No such file or directory: b'scontrol'"}


def kubectl_node(unschedulable=False, taints=(), conditions=()):
    spec = {"taints": list(taints)}
    if unschedulable:
        spec["unschedulable"] = True
    node = {"kind": "Node", "metadata": {"name": NAMES["kubernetes"]}, "spec": spec,
            "status": {"conditions": list(conditions)}}
    return {"rc": 0, "stdout": json.dumps(node)}


def test_auto_takes_slurm_when_scontrol_knows_the_node():
    line = "NodeName=gpu-07 State=IDLE+DRAIN Reason=operator: bad fan [root@2026-12-06T10:00:00]"
    state = node_state("auto", {"rc": 0, "stdout": line}, None, NAMES, CONTAIN)
    assert state == {"scheduler": "slurm", "name": "gpu-07", "known": True, "out": True, "reason": "operator: bad fan",
                     "busy": False, "state": "IDLE+DRAIN"}


def test_auto_falls_back_to_kubernetes_then_to_the_hosts_services():
    ours = {"key": "gpufleet.io/quarantine", "value": "hardware.gpu_lost", "effect": "NoSchedule"}
    condition = {"type": "GpufleetQuarantine", "status": "True", "message": "gpufleet: hardware.gpu_lost x (run 1)"}
    state = node_state("auto", NO_SCONTROL, kubectl_node(True, [ours], [condition]), NAMES, CONTAIN)
    assert state["scheduler"] == "kubernetes" and state["out"] is True
    assert state["reason"] == "gpufleet: hardware.gpu_lost x (run 1)"
    bare = node_state("auto", NO_SCONTROL, {"rc": 1, "stdout": "", "stderr": "connection refused"}, NAMES, CONTAIN)
    assert bare == {"scheduler": "services", "name": "gpu-07", "known": True, "out": False, "reason": "", "busy": False}


def test_a_cordon_without_the_taint_is_an_operators():
    state = node_state("kubernetes", None, kubectl_node(True, [{"key": "maint", "value": "", "effect": "NoSchedule"}]),
                       NAMES, CONTAIN)
    assert state["reason"] == "cordoned (spec.unschedulable); taints: maint=:NoSchedule"


def test_a_scheduler_the_policy_names_that_does_not_answer_is_unknown():
    state = node_state("slurm", NO_SCONTROL, None, NAMES, CONTAIN)
    assert state["known"] is False
    assert state["error"] == "scontrol show node gpu-07 exited 2: [Errno 2] No such file or directory: b'scontrol'"
    state = node_state("kubernetes", None, {"rc": 1, "stdout": "", "stderr": 'Error from server (NotFound): nodes '
                                            '"gpu-07.example" not found'}, NAMES, CONTAIN)
    assert state["error"] == ('kubectl get node gpu-07.example exited 1: Error from server (NotFound): nodes '
                              '"gpu-07.example" not found')


def test_kubernetes_commands_cordon_taint_and_condition_then_undo_them():
    decision = {"scheduler": "kubernetes", "rule": "hardware.gpu_lost", "reason": "gpufleet: hardware.gpu_lost x (run 1)"}
    built = commands(decision, CONTAIN, NAMES, "2026-12-06T22:00:00Z")
    cordon, taint, patch = built["contain"]
    assert cordon == ["kubectl", "cordon", "gpu-07.example"]
    assert taint == ["kubectl", "taint", "nodes", "gpu-07.example", "gpufleet.io/quarantine=hardware.gpu_lost:NoSchedule",
                     "--overwrite"]
    assert patch[:6] == ["kubectl", "patch", "node", "gpu-07.example", "--subresource=status", "--type=strategic"]
    assert json.loads(patch[6][len("--patch="):]) == {"status": {"conditions": [{
        "type": "GpufleetQuarantine", "status": "True", "reason": "HardwareGpuLost",
        "message": "gpufleet: hardware.gpu_lost x (run 1)", "lastHeartbeatTime": "2026-12-06T22:00:00Z",
        "lastTransitionTime": "2026-12-06T22:00:00Z"}]}}
    uncordon, untaint, unpatch = built["return"]
    assert uncordon == ["kubectl", "uncordon", "gpu-07.example"]
    assert untaint == ["kubectl", "taint", "nodes", "gpu-07.example", "gpufleet.io/quarantine:NoSchedule-"]
    assert json.loads(unpatch[6][len("--patch="):])["status"]["conditions"][0]["status"] == "False"


def test_slurm_commands_and_a_bare_host_has_none():
    decision = {"scheduler": "slurm", "reason": "gpufleet: r (run 1)"}
    assert commands(decision, CONTAIN, NAMES, "t") == {
        "contain": [["scontrol", "update", "NodeName=gpu-07", "State=DRAIN", "Reason=gpufleet: r (run 1)"]],
        "return": [["scontrol", "update", "NodeName=gpu-07", "State=RESUME"]]}
    assert commands({"scheduler": "services"}, CONTAIN, NAMES, "t") == {"contain": [], "return": []}


def test_taint_values_and_condition_reasons_are_what_kubernetes_accepts():
    assert taint_value("custom rule/with spaces") == "custom-rule-with-spaces"
    assert len(taint_value("x" * 100)) == 63
    assert condition_reason("hardware.bmc_power_redundancy", True) == "HardwareBmcPowerRedundancy"
    assert condition_reason("hardware.gpu_lost", False) == "ReturnedToService"
