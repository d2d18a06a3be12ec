"""The correlation learns the fabric (issue 32): NCCL network failures on a host, with fabric faults on it or on
the peer host its message names, point at the fabric, not at the GPUs."""

import copy

from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.correlate import peer_host
from tests.support.correlate_builders import audit
from tests.support.fabric_builders import fabric_node
from tests.unit.plugins.plugin_utils.rules.test_service_journal_verdicts import service_logging

IB_ERROR = ("gpu-a:3468:3905 [4] ib_plugin.c:1615 NCCL WARN NET/IB : Got completion from peer "
            "gpu-b.cluster<54862> with status=12 opcode=0 len=0 vendor err 129 (Recv)\n")
WATCHDOG = "[Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE)\n"


def with_journal(facts, text):
    facts["gather_subset"] = facts["gather_subset"] + ["workload"]
    facts["workload"] = {"window_hours": 72, "services": [service_logging(text)], "left_out": 0,
                         "oom_kills_elsewhere": 0}
    return facts


def degraded(facts, hca=1):
    facts["fabric"]["hcas"][hca]["ports"][0].update(rate_gbps=200.0, width="2X")
    return facts


def run(fleet, the_policy=None):
    """The findings and causes of the fleet (its facts checked against the schema, each cause's keys)."""
    return audit(copy.deepcopy(fleet), the_policy)


def test_an_nccl_error_naming_a_peer_with_a_degraded_port_points_at_that_port():
    fleet = {"gpu-a": with_journal(fabric_node(), IB_ERROR), "gpu-b": degraded(fabric_node())}
    findings, causes = run(fleet)
    [cause] = [cause for cause in causes if cause["kind"] == "fabric"]
    assert cause["id"] == "fabric:gpu-a" and cause["layer"] == "hardware" and cause["severity"] == "critical"
    assert cause["hosts"] == ["gpu-a", "gpu-b"]
    assert cause["evidence"]["symptoms"] == [{"rule": "hardware.nccl_network", "service": "vllm.service",
                                              "severity": "critical", "peer": "gpu-b.cluster", "peer_host": "gpu-b"}]
    assert [(entry["host"], entry["rule"], entry["link"]) for entry in cause["evidence"]["fabric"]] == [
        ("gpu-b", "hardware.fabric_port_degraded", "mlx5_1/1")]
    assert "points at the fabric, not at the GPUs" in cause["summary"] and "mlx5_1/1 on gpu-b" in cause["summary"]
    assert "do not drain or replace the GPUs" in cause["action"]
    [symptom] = [f for f in findings["gpu-a"] if f["rule"] == "hardware.nccl_network"]
    [fault] = [f for f in findings["gpu-b"] if f["rule"] == "hardware.fabric_port_degraded"]
    assert symptom["evidence"]["explained_by"] == fault["evidence"]["explained_by"] == "fabric:gpu-a"


def test_a_timeout_with_a_fault_on_its_own_host_points_at_the_fabric():
    fleet = {"gpu-a": degraded(with_journal(fabric_node(), WATCHDOG), hca=3), "gpu-b": fabric_node()}
    _findings, causes = run(fleet)
    [cause] = causes
    assert cause["hosts"] == ["gpu-a"] and cause["evidence"]["fabric"][0]["link"] == "mlx5_3/1"
    assert cause["evidence"]["symptoms"][0]["rule"] == "workload.runtime_failure"


def test_no_fabric_fault_no_fabric_cause_and_a_fault_on_another_host_is_not_blamed():
    fleet = {"gpu-a": with_journal(fabric_node(), IB_ERROR), "gpu-b": fabric_node(), "gpu-c": degraded(fabric_node())}
    findings, causes = run(fleet)
    assert causes == []
    assert all("explained_by" not in f["evidence"] for f in findings["gpu-a"])


def test_the_peer_is_found_by_inventory_name_or_hostname_whole_or_short():
    fleet = {"node-07": {"host": {"hostname": "n7.cluster.local"}}, "10.0.0.9": {}}
    assert peer_host("node-07.cluster", fleet) == "node-07"
    assert peer_host("n7", fleet) == "node-07" and peer_host("N7.cluster.local", fleet) == "node-07"
    assert peer_host("10.0.0.9", fleet) == "10.0.0.9" and peer_host("10.0.0.7", fleet) is None
    assert peer_host("10", {"10.1.1.1": {}}) is None and peer_host(None, fleet) is None
