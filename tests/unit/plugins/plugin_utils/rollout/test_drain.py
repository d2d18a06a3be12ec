"""The driver role's view of a node before and after its own drain (plugin_utils/rollout/drain.py): Slurm's and
Kubernetes' answers, and which drain is the role's own."""

import json

import pytest

from ansible_collections.gpufleet.core.plugins.filter.driver_plan import driver_plan
from ansible_collections.gpufleet.core.plugins.plugin_utils.rollout.drain import (
    device_scan_pids, prior_drain, slurm_node)

OWN = "gpufleet driver change"


def scontrol_line(state, reason=None, stamp="root@2026-12-01T22:05:36"):
    """One `scontrol show node --oneliner` line of Slurm 22.05, shortened to fields around State and Reason."""
    line = ("NodeName=gpu-07 Arch=x86_64 CoresPerSocket=1  CPUAlloc=0 CPUEfctv=1 CPUTot=1 NodeAddr=10.1.0.7 "
            "OS=Linux 6.1.0 #1 SMP PREEMPT_DYNAMIC  RealMemory=100 AllocMem=0 State=%s ThreadsPerCore=1 "
            "Partitions=gpu  CfgTRES=cpu=1,mem=100M,billing=1 AllocTRES= CapWatts=n/a" % state)
    if reason is not None:
        line += " Reason=%s [%s]" % (reason, stamp)
    return line + "\n"


@pytest.mark.parametrize("state, reason, expected", [
    ("IDLE", None, {"found": True, "state": "IDLE", "drain": False, "busy": False, "reason": "", "ours": False}),
    ("ALLOCATED", None, {"found": True, "state": "ALLOCATED", "drain": False, "busy": True, "reason": "", "ours": False}),
    ("ALLOCATED+DRAIN", OWN, {"found": True, "state": "ALLOCATED+DRAIN", "drain": True, "busy": True, "reason": OWN,
                              "ours": True}),
    ("MIXED+DRAIN", OWN, {"found": True, "state": "MIXED+DRAIN", "drain": True, "busy": True, "reason": OWN,
                          "ours": True}),
    ("IDLE+DRAIN", "operator: bad fan", {"found": True, "state": "IDLE+DRAIN", "drain": True, "busy": False,
                                         "reason": "operator: bad fan", "ours": False}),
    ("IDLE+COMPLETING+DRAIN", OWN, {"found": True, "state": "IDLE+COMPLETING+DRAIN", "drain": True, "busy": True,
                                    "reason": OWN, "ours": True}),
    ("DOWN*", "Not responding", {"found": True, "state": "DOWN*", "drain": True, "busy": False,
                                 "reason": "Not responding", "ours": False}),
])
def test_slurm_node_states(state, reason, expected):
    assert slurm_node(scontrol_line(state, reason), OWN) == expected


def test_slurm_reason_without_a_stamp_and_a_missing_node():
    assert slurm_node("NodeName=n1 State=IDLE+DRAIN Reason=maintenance window 12", OWN)["reason"] == "maintenance window 12"
    assert slurm_node("", OWN)["found"] is False


def test_an_operator_drain_is_kept_and_the_roles_own_drain_is_not_prior():
    operator = prior_drain("slurm", scontrol_line("IDLE+DRAIN", "operator: bad fan"), OWN)
    assert operator == {"drained_before": True, "reason": "operator: bad fan", "ours": False, "known": True}
    # left drained by a run that failed after draining: the next successful run undoes it
    leftover = prior_drain("slurm", scontrol_line("IDLE+DRAIN", OWN), OWN)
    assert leftover == {"drained_before": False, "reason": OWN, "ours": True, "known": True}
    idle = prior_drain("slurm", scontrol_line("IDLE"), OWN)
    assert idle["drained_before"] is False and idle["known"] is True
    down = prior_drain("slurm", scontrol_line("DOWN", "Not responding"), OWN)
    assert down["drained_before"] is True and down["reason"] == "Not responding"


def test_a_cordoned_kubernetes_node_stays_cordoned():
    cordoned = json.dumps({"spec": {"unschedulable": True, "taints": [
        {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}]}})
    assert driver_plan({"method": "kubernetes", "output": cordoned, "reason": OWN}, "prior_drain") == {
        "drained_before": True, "reason": "cordoned (spec.unschedulable)", "ours": False, "known": True}
    schedulable = driver_plan({"method": "kubernetes", "output": json.dumps({"spec": {}}), "reason": OWN}, "prior_drain")
    assert schedulable["drained_before"] is False
    assert driver_plan({"method": "kubernetes", "output": "error", "reason": OWN}, "prior_drain")["known"] is False


def test_a_command_drain_cannot_know_the_prior_state():
    assert prior_drain("command", None, OWN) == {"drained_before": False, "reason": "", "ours": False, "known": False}


def test_device_scan_leaves_out_nvidia_persistenced_and_noise():
    assert device_scan_pids("12 nvidia-persistenced\n3001 python3\n3001 python3\nfind: x\n44\n") == [44, 3001]
