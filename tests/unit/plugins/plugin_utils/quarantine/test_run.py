"""A quarantine run on the controller (plugin_utils/quarantine/run.py): the plan from a report.json on disk, its
quarantine.json, the outcome, the exit status and the service events it records."""

import copy
import json
import os

from ansible_collections.gpufleet.core.plugins.plugin_utils.policy.defaults import DEFAULT_POLICY
from ansible_collections.gpufleet.core.plugins.plugin_utils.quarantine.run import (
    collection_has, plan_step, report_step)

LOST = {"rule": "hardware.gpu_lost", "layer": "hardware", "severity": "critical", "gpu": "0000:0f:00.0",
        "summary": "GPU 1 has fallen off the bus", "evidence": {"lost": True}, "action": "drain", "fix": None}


def write_report(folder, hosts):
    findings = []
    entries = {}
    for host, (status, host_findings) in hosts.items():
        entries[host] = {"status": status, "facts_file": None, "message": None,
                         "findings": list(range(len(findings), len(findings) + len(host_findings)))}
        findings.extend(host_findings)
    report = {"report_version": "1.2", "run": {"id": "20261206T220000Z"}, "hosts": entries, "findings": findings}
    os.makedirs(str(folder), exist_ok=True)
    with open(os.path.join(str(folder), "report.json"), "w") as handle:
        json.dump(report, handle)


def scontrol(name, state="IDLE", reason=None):
    line = "NodeName=%s Arch=x86_64 State=%s ThreadsPerCore=1" % (name, state)
    if reason:
        line += " Reason=%s [root@2026-12-06T22:00:00]" % reason
    return {"rc": 0, "stdout": line, "stderr": ""}


def args(tmp_path, queries, hosts=("n1", "n2"), **extra):
    policy = copy.deepcopy(DEFAULT_POLICY)
    return dict({"audit_dir": str(tmp_path / "audit"), "report_root": str(tmp_path / "reports"), "hosts": list(hosts),
                 "policies": {"p": policy}, "host_policy": {host: "p" for host in hosts}, "queries": queries,
                 "groups": {}, "fleet": list(hosts) + ["n%d" % i for i in range(3, 11)]}, **extra)


def query(name, **slurm):
    return {"method": "auto", "names": {"slurm": name, "kubernetes": name}, "slurm": scontrol(name, **slurm)}


def test_the_plan_drains_with_plain_scontrol_and_keeps_an_operators_node(tmp_path):
    write_report(tmp_path / "audit", {"n1": ("ok", [LOST]), "n2": ("ok", [LOST])})
    queries = {"n1": query("n1"), "n2": query("n2", state="IDLE+DRAIN", reason="operator: fan")}
    result = plan_step(args(tmp_path, queries), check_mode=True)
    assert os.path.basename(result["run_dir"]).endswith("-quarantine-check")
    n1, n2 = result["hosts"]["n1"], result["hosts"]["n2"]
    assert n1["commands"] == {
        "contain": [["scontrol", "update", "NodeName=n1", "State=DRAIN",
                     "Reason=gpufleet: hardware.gpu_lost GPU 1 has fallen off the bus (run 20261206T220000Z)"]],
        "return": [["scontrol", "update", "NodeName=n1", "State=RESUME"]]}
    assert n2["action"] == "operator_out" and n2["node_reason"] == "operator: fan"
    with open(os.path.join(result["run_dir"], "quarantine.json")) as handle:
        assert json.load(handle)["plan"]["hosts"]["n1"]["action"] == "contain"


def test_an_unreadable_report_decides_nothing_and_exits_4(tmp_path):
    result = plan_step(args(tmp_path, {}), check_mode=False)
    assert result["exit_status"] == 4
    assert result["hosts"]["n1"]["why"].startswith("nothing decided: the audit's report %s could not be read"
                                                   % os.path.join(str(tmp_path / "audit"), "report.json"))


def test_the_outcome_gives_verdicts_exit_status_and_service_events(tmp_path):
    write_report(tmp_path / "audit", {"n1": ("ok", [LOST]), "n2": ("ok", [LOST])})
    planned = plan_step(args(tmp_path, {"n1": query("n1"), "n2": query("n2")}, fleet=["n1", "n2"]), check_mode=False)
    assert planned["hosts"]["n2"]["action"] == "left_in_service"  # the fleet's 20% of 2: one node
    done = report_step({"run_dir": planned["run_dir"], "outcomes": {"n1": {"step": "contain", "failed": False}}},
                       check_mode=False)
    assert done["exit_status"] == 2
    assert done["host_verdicts"]["n2"]["verdict"] == "fail"
    assert [(e["host"], e["event"]) for e in done["events"]] == [("n1", "quarantined"), ("n2", "left_in_service")]
    assert done["events"][0]["reason"].startswith("gpufleet: hardware.gpu_lost")
    assert done["events"][1]["reason"] == "the fleet has 1 of 2 out, limit 20% (1 node)"
    failed = report_step({"run_dir": planned["run_dir"],
                          "outcomes": {"n1": {"step": "contain", "failed": True, "msg": "scontrol exited 1"}}}, False)
    assert failed["exit_status"] == 4 and failed["events"][0]["host"] == "n2"
    assert failed["host_verdicts"]["n1"] == {"verdict": "not_audited",
                                             "msg": "contain: contain failed: scontrol exited 1"}


def test_a_clean_node_is_held_when_the_policy_requires_a_validation_the_collection_lacks(tmp_path):
    write_report(tmp_path / "audit", {"n1": ("ok", [])})
    own = query("n1", state="IDLE+DRAIN", reason="gpufleet: hardware.gpu_lost x (run y)")
    policy = copy.deepcopy(DEFAULT_POLICY)
    policy["quarantine"]["return"]["require_validation"] = True
    given = dict(args(tmp_path, {"n1": own}, hosts=("n1",)), policies={"p": policy})
    decision = plan_step(given, check_mode=True)["hosts"]["n1"]
    if collection_has("gpu_validate"):
        assert decision["action"] == "return" and decision["validation"] == "run"
    else:
        assert decision["action"] == "hold"
        assert decision["why"] == ("not returned: the policy requires validation "
                                   "(quarantine.return.require_validation) and gpu_validate is not available")
