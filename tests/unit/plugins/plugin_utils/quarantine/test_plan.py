"""The quarantine plan (plugin_utils/quarantine/plan.py): triggers, the circuit breaker, operators' drains, nodes
the audit or the scheduler could not answer for, and the exit status."""

import copy

import pytest

from ansible_collections.gpufleet.core.plugins.plugin_utils.policy.defaults import DEFAULT_POLICY
from ansible_collections.gpufleet.core.plugins.plugin_utils.quarantine.plan import (
    EXIT_BREAKER, EXIT_DONE, EXIT_NOT_DONE, allowed_out, node_reason, plan_quarantine, trigger_matches,
    triggering_findings)

TRIGGERS = DEFAULT_POLICY["quarantine"]["triggers"]
RUN = "20261206T220000Z"


def finding(rule, severity="critical", summary="something", **evidence):
    return {"rule": rule, "severity": severity, "summary": summary, "evidence": evidence, "gpu": None}


LOST = finding("hardware.gpu_lost", summary="GPU 1 (0000:0f:00.0) has fallen off the bus", lost=True)
PARTIAL = finding("driver.collection_incomplete", "warning", "The collection was partial", status="partial")
FAILED = finding("driver.collection_incomplete", "critical", "no GPU facts could be read", status="failed")


def policy(**breaker):
    section = copy.deepcopy(DEFAULT_POLICY["quarantine"])
    for scope, limit in breaker.items():
        section["breaker"][scope].update(limit)
    return section


def slurm(out=False, reason="", known=True):
    return {"scheduler": "slurm", "known": known, "out": out, "reason": reason, "busy": False}


def plan(findings, nodes=None, hosts=("n1", "n2", "n3", "n4"), groups=None, states=None, audit=None, **breaker):
    policies = {host: policy(**breaker) for host in hosts}
    audit_hosts = audit or {host: {"status": "ok"} for host in hosts}
    nodes = dict({host: slurm() for host in hosts}, **(nodes or {}))
    return plan_quarantine(findings, audit_hosts, RUN, policies, nodes, states or {}, groups or {}, list(hosts))


@pytest.mark.parametrize("found, expected", [
    (LOST, True),
    (finding("hardware.ecc_uncorrected", volatile_uncorrected=2), True),
    (finding("hardware.row_remap", "critical", failure=True), True),
    (finding("hardware.row_remap", "warning", pending=True), False),
    (finding("hardware.xid", "critical", xid=48), True),
    (finding("driver.xid", "critical", xid=119), True),
    (finding("workload.xid", "warning", xid=13), False),
    (finding("hardware.recovery_action", recovery_action="node_reboot"), True),
    (finding("hardware.recovery_action", "warning", recovery_action="drain_p2p"), False),
    (finding("hardware.bmc_power_redundancy"), True),
    (finding("driver.pin_drift", "warning"), False),
])
def test_the_default_triggers(found, expected):
    assert bool(triggering_findings([found], TRIGGERS)) is expected


def test_a_trigger_reads_the_rule_pattern_severity_and_evidence():
    trigger = {"rule": "hardware.*", "min_severity": "critical", "evidence": {"xid": [79, 48]}}
    assert trigger_matches(trigger, finding("hardware.xid", xid=48))
    assert not trigger_matches(trigger, finding("hardware.xid", "warning", xid=48))
    assert not trigger_matches(trigger, finding("hardware.xid", xid=31))
    assert not trigger_matches(trigger, finding("driver.xid", xid=48))


def test_a_node_with_a_lost_gpu_is_contained_with_a_reason_naming_the_finding_and_run():
    result = plan({"n2": [LOST, PARTIAL]})
    decision = result["hosts"]["n2"]
    assert decision["action"] == "contain" and decision["rule"] == "hardware.gpu_lost"
    assert decision["reason"] == ("gpufleet: hardware.gpu_lost GPU 1 (0000:0f:00.0) has fallen off the bus "
                                  "(run %s)" % RUN)
    assert result["hosts"]["n1"]["action"] == "in_service"
    assert result["exit_status"] == EXIT_DONE


def test_the_reason_is_one_line_of_at_most_200_characters_and_keeps_the_run():
    reason = node_reason(finding("hardware.xid", summary="word\n" * 100), RUN)
    assert len(reason) == 200 and "\n" not in reason and reason.endswith("... (run %s)" % RUN)


def test_the_breaker_counts_the_nodes_already_out_and_says_which_limit_refused():
    nodes = {"n1": slurm(out=True, reason="operator: bad fan")}
    result = plan({"n2": [LOST], "n3": [LOST]}, nodes=nodes, groups={"gpu-a": ["n1", "n2", "n3", "n4"]},
                  fleet={"max_out_pct": 100})
    assert result["hosts"]["n1"]["action"] == "operator_out"
    assert result["hosts"]["n2"]["action"] == "contain"
    left = result["hosts"]["n3"]
    assert left["action"] == "left_in_service"
    assert left["breaker"] == "group gpu-a has 2 of 4 out, limit 50% (2 nodes)"
    assert "n3 stays in service although hardware.gpu_lost" in left["why"]
    assert result["exit_status"] == EXIT_BREAKER


def test_the_fleet_limit_and_a_count_limit():
    result = plan({"n1": [LOST], "n2": [LOST]}, fleet={"max_out_pct": 20})
    assert [result["hosts"][h]["action"] for h in ("n1", "n2")] == ["contain", "left_in_service"]
    assert result["hosts"]["n2"]["breaker"] == "the fleet has 1 of 4 out, limit 20% (1 node)"
    counted = plan({"n1": [LOST], "n2": [LOST], "n3": [LOST]}, fleet={"max_out_pct": None, "max_out": 2})
    assert counted["summary"]["left_in_service"] == ["n3"]


def test_worse_findings_go_out_first():
    ecc = finding("hardware.xid", "warning", xid=8)
    result = plan({"n1": [dict(ecc, severity="critical")], "n2": [LOST]}, fleet={"max_out": 1})
    assert result["hosts"]["n1"]["action"] == "contain"  # equal severity: by name
    result = plan({"n1": [finding("hardware.bmc_power_redundancy", "warning")], "n2": [LOST]}, fleet={"max_out": 1})
    assert result["hosts"]["n2"]["action"] == "contain" and result["hosts"]["n1"]["action"] == "left_in_service"


@pytest.mark.parametrize("total, pct, count, allowed", [
    (4, 50, None, 2), (3, 50, None, 1), (1, 50, None, 1), (10, 20, None, 2), (4, 0, None, 0),
    (100, 50, 5, 5), (4, None, None, None),
])
def test_allowed_out(total, pct, count, allowed):
    assert allowed_out(total, pct, count) == allowed


def test_an_operators_drain_is_kept_with_its_reason_even_when_the_node_triggers():
    result = plan({"n1": [LOST]}, nodes={"n1": slurm(out=True, reason="operator: bad fan")})
    decision = result["hosts"]["n1"]
    assert decision["action"] == "operator_out"
    assert decision["why"] == "taken out of service outside gpufleet (reason: operator: bad fan); kept as it is"


def test_our_own_node_is_repaired_while_it_triggers_and_returned_when_clean():
    ours = slurm(out=True, reason="gpufleet: hardware.gpu_lost GPU 1 ... (run x)")
    result = plan({"n1": [LOST]}, nodes={"n1": ours, "n2": ours})
    assert result["hosts"]["n1"]["action"] == "repair"
    assert result["hosts"]["n2"]["action"] == "return"


@pytest.mark.parametrize("audit, findings, node, why", [
    ({"status": "unreachable", "message": "ssh timed out"}, [LOST], slurm(),
     "nothing decided: the audit could not read it (unreachable: ssh timed out)"),
    ({"status": "ok"}, [FAILED], slurm(), "nothing decided: its collection was failed: no GPU facts could be read"),
    ({"status": "ok"}, [PARTIAL], slurm(out=True, reason="gpufleet: x"),
     "nothing decided: its collection was partial: The collection was partial"),
    ({"status": "ok"}, [LOST], dict(slurm(known=False), error="scontrol exited 1"),
     "nothing decided: the scheduler (slurm) could not be asked about it: scontrol exited 1"),
])
def test_a_node_nothing_can_vouch_for_is_neither_contained_nor_returned(audit, findings, node, why):
    others = {host: {"status": "ok"} for host in ("n2", "n3", "n4")}
    result = plan({"n1": findings}, nodes={"n1": node}, audit=dict(others, n1=audit))
    assert result["hosts"]["n1"]["action"] == "unverified"
    assert result["hosts"]["n1"]["why"] == why
    assert result["exit_status"] == EXIT_NOT_DONE


def test_a_quarantined_bare_host_is_known_from_the_store():
    bare = {"scheduler": "services", "known": True, "out": False, "reason": "", "busy": False}
    states = {"n1": {"state": "quarantined", "rule": "hardware.gpu_lost", "failed_repairs": 1}}
    result = plan({}, nodes={"n1": bare}, states=states)
    assert result["hosts"]["n1"]["action"] == "return"
    assert result["hosts"]["n1"]["failed_repairs"] == 1
