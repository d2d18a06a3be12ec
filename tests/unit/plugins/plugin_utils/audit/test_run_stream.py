"""run_audit reads the fleet host by host and keeps only each host's fleet view (fleet_view.py) for the fleet-wide
steps: those steps give what they give on the whole facts, and an audit whose results hold no facts (the gpu_facts
action's keep_facts=false: the facts only in the facts files) writes the same reports as one whose results do."""

import copy
import json
import os

import pytest

from ansible_collections.gpufleet.core.plugins.plugin_utils.audit import run as audit_run
from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.correlate import correlate
from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.diagnose import FleetDiagnosis, diagnose_fleet
from ansible_collections.gpufleet.core.plugins.plugin_utils.audit.fleet_view import fleet_view
from ansible_collections.gpufleet.core.plugins.plugin_utils.audit.host_step import (
    DIAGNOSIS_KEY, accepted_diagnosis, host_diagnosis, policy_digest, worker_step)
from ansible_collections.gpufleet.core.plugins.plugin_utils.run_folder import FACTS_FILE_KEY, facts_file_text
from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.drift_trend import (
    DRIFT_RULES, TREND_RULES, HistoryContext, run_rules)
from ansible_collections.gpufleet.core.plugins.plugin_utils.store.baseline_template import group_profile
from ansible_collections.gpufleet.core.plugins.plugin_utils.store.counters import host_counters
from ansible_collections.gpufleet.core.plugins.plugin_utils.audit.record_step import CounterRow
from ansible_collections.gpufleet.core.plugins.plugin_utils.store.record import StoreSettings
from tests.support.demo_fleet import HOSTS, demo_audit, demo_policy
from tests.support.rule_builders import KNOWLEDGE

STARTED_AT = "2026-12-05T04:00:00Z"
REPORT_FILES = ("report.json", "report.html", "junit.xml", "gpufleet.prom", "hosts.txt")


def skewed_fleet():
    """The demo fleet plus, per host, a copy like it and a copy on another driver with other framework builds and
    another GPU sharing, so that every fleet rule and the driver correlation have something to find."""
    facts = copy.deepcopy(demo_audit()[0])
    fleet, policies = {}, {}
    for host in sorted(facts):
        for copy_name in ("", "-b", "-c"):
            name = host + copy_name
            fleet[name] = copy.deepcopy(facts[host])
            policies[name] = demo_policy(host)
        moved = fleet[host + "-c"]
        if moved.get("driver", {}).get("version"):
            moved["driver"]["version"] = "550.127.05"
        for service in (moved.get("workload") or {}).get("services") or ():
            for package in (service.get("frameworks") or {}).get("packages") or ():
                package["version"] = "2.7.0+cu128"
        sharing = (moved.get("kubernetes") or {}).get("sharing")
        if sharing:
            sharing["resources"] = [{"name": "nvidia.com/gpu", "replicas": 4}]
    return fleet, policies


def fleet_rules(findings):
    return sorted({f["rule"] for entries in findings.values() for f in entries
                   if f["rule"] in ("driver.version_skew", "scheduling.k8s_sharing_skew", "workload.framework_skew")})


def test_the_fleet_rules_and_the_correlation_find_on_views_what_they_find_on_the_facts():
    fleet, policies = skewed_fleet()
    now = "2026-11-30T06:00:00Z"
    whole = diagnose_fleet(copy.deepcopy(fleet), policies, KNOWLEDGE, now=now)
    whole_causes = correlate(fleet, whole, policies)

    diagnosis = FleetDiagnosis(policies, KNOWLEDGE, now=now)
    streamed = {host: diagnosis.host(host, copy.deepcopy(facts)) for host, facts in fleet.items()}
    views = {host: fleet_view(facts) for host, facts in fleet.items()}
    diagnosis.fleet(views, streamed)
    streamed_causes = correlate(views, streamed, policies)

    assert fleet_rules(whole) == ["driver.version_skew", "scheduling.k8s_sharing_skew", "workload.framework_skew"]
    assert {cause["id"] for cause in whole_causes} >= {"workload:concurrency"}
    assert streamed == whole
    assert streamed_causes == whole_causes


def moved_gpus(facts):
    """facts with every fact a drift rule compares moved on each GPU, and a service setting changed."""
    moved = copy.deepcopy(facts)
    if (moved.get("driver") or {}).get("version"):
        moved["driver"]["version"] = "999.1"
    for gpu in moved.get("gpus") or ():
        gpu.update(vbios_version="00.00", persistence_mode=not gpu.get("persistence_mode"), compute_mode="prohibited")
        gpu.setdefault("power", {})["limit_w"] = 123.0
        gpu.setdefault("ecc", {})["mode_current"] = not (gpu.get("ecc") or {}).get("mode_current")
        gpu["mig"] = {"mode_current": True, "gpu_instances": [{"profile_name": "1g.10gb", "placement": {"start": 0}}]}
    for service in ((moved.get("host") or {}).get("services") or {}).values():
        service["restart"] = "always"
    return moved


def grown_counters(facts):
    """The previous run's counter rows of each GPU, a day ago, each counter lower than now."""
    rows = {}
    for key, (_gpu, counters) in host_counters(facts).items():
        before = {name: (value - 1 if value else 0) for name, value in counters.items()}
        rows[key] = CounterRow(host="h", gpu_key=key, observed_at="2026-11-29T06:00:00Z", **before)
    return rows


@pytest.mark.parametrize("host", sorted(HOSTS))
def test_the_history_rules_and_baseline_templates_read_the_same_from_views(host):
    facts = demo_audit()[0][host]
    before = moved_gpus(facts)
    policy = dict(demo_policy(host), trends={"ecc_corrected_per_day": 0, "retired_pages_per_day": 0,
                                             "remapped_rows_per_day": 0, "pcie_replays_per_day": 0,
                                             "nvlink_errors_per_day": 0, "xid_per_day": 0, "min_hours": 0})
    baseline = {"run": "good", "group": "all"}

    def drift(now, then):
        return run_rules(DRIFT_RULES, HistoryContext(host, now, then, baseline, policy))

    def trends(now):
        return run_rules(TREND_RULES, HistoryContext(host, now, policy=policy, counters=grown_counters(facts),
                                                     current={key: (None, counters) for key, (_gpu, counters)
                                                              in host_counters(facts).items()}))

    whole_drift = drift(facts, before)
    assert drift(fleet_view(facts), fleet_view(before)) == whole_drift
    assert trends(fleet_view(facts)) == trends(facts)
    if facts.get("gpus"):
        assert {f["rule"] for f in whole_drift} >= {"hardware.baseline_vbios", "scheduling.baseline_mig_layout"}
    assert group_profile({host: fleet_view(facts)}) == group_profile({host: facts})


def slim_result(result, run_dir, host, hosts, policy=None):
    """The result the gpu_facts action returns with keep_facts=false, made by the action's own step (worker_step):
    its facts checked and written to its facts file, and with policy, the host diagnosed."""
    slim = worker_step(copy.deepcopy(result), host, hosts, run_dir, policy, keep_facts=False)
    assert "warnings" not in slim and "failed" not in slim, slim
    return slim


def audit(root, results, policies, store):
    run_dir = os.path.join(root, "20261205T040000Z")
    os.makedirs(os.path.join(run_dir, "facts"), exist_ok=True)
    settings = StoreSettings("sqlite:///%s" % os.path.join(root, "store.sqlite"), "test") if store else None
    report, _paths, lines = audit_run.run_audit(results, policies, run_dir, root, STARTED_AT, store=settings)
    files = {}
    for name in REPORT_FILES:
        with open(os.path.join(run_dir, name), "rb") as stream:
            files[name] = stream.read()
    return report, lines, files


@pytest.mark.parametrize("store", [False, True])
@pytest.mark.parametrize("diagnosed", [False, True], ids=["read from the files", "diagnosed by the workers"])
def test_an_audit_of_results_without_facts_writes_the_same_reports(tmp_path, monkeypatch, store, diagnosed):
    monkeypatch.setattr(audit_run, "utc_now", lambda: "2026-12-05T04:01:00Z")
    fleet, policies = skewed_fleet()
    hosts = sorted(fleet)
    # evidence copies the facts' own key order; the facts files sort their keys, so the held facts do too here
    held = {host: {"changed": False, "ansible_facts": {"gpufleet": json.loads(facts_file_text(facts))}}
            for host, facts in fleet.items()}
    held["gone-01"] = {"unreachable": True, "msg": "ssh: connect to host gone-01 port 22: No route to host"}
    policies["gone-01"] = policies[hosts[0]]
    slim_root = str(tmp_path / "slim")
    run_dir = os.path.join(slim_root, "20261205T040000Z")
    slim = {host: slim_result(result, run_dir, host, sorted(held), policies[host] if diagnosed else None)
            if host != "gone-01" else result for host, result in copy.deepcopy(held).items()}
    assert all("ansible_facts" not in result for result in slim.values())
    if diagnosed:  # run_audit reads no facts file then
        monkeypatch.setattr(audit_run, "read_facts_file", None)

    held_report, held_lines, held_files = audit(str(tmp_path / "held"), held, policies, store)
    slim_report, slim_lines, slim_files = audit(slim_root, slim, policies, store)

    assert slim_lines == held_lines and len(slim_lines) == len(hosts) + 1
    assert held_report["summary"]["by_severity"]["critical"] > 0
    if store:
        # the two stores are two files: only the store's own section may differ
        assert held_report["store"]["status"] == slim_report["store"]["status"] == "written"
        for report in (held_report, slim_report):
            report.pop("store")
        # as report.json has them (a rule's tuple in the evidence is a list once it went through the worker's text)
        assert json.loads(json.dumps(slim_report)) == json.loads(json.dumps(held_report))
        assert slim_files["hosts.txt"] == held_files["hosts.txt"]
    else:
        assert slim_files == held_files


def test_a_facts_file_that_cannot_be_read_is_a_failed_host_and_the_others_are_audited(tmp_path):
    fleet, policies = skewed_fleet()
    hosts = sorted(fleet)[:3]
    root = str(tmp_path)
    run_dir = os.path.join(root, "20261205T040000Z")
    results = {host: slim_result({"ansible_facts": {"gpufleet": fleet[host]}}, run_dir, host, hosts) for host in hosts}
    os.remove(os.path.join(run_dir, results[hosts[1]][FACTS_FILE_KEY]))
    report, lines, _files = audit(root, results, policies, store=False)
    assert {host: entry["status"] for host, entry in report["hosts"].items()} == {
        hosts[0]: "ok", hosts[1]: "failed", hosts[2]: "ok"}
    assert report["hosts"][hosts[1]]["message"] == (
        "the facts file the collection wrote (facts/%s.json) could not be read: no such file in the run folder" % hosts[1])
    assert lines[1].startswith("%s: FAILED - the facts file the collection wrote" % hosts[1])
    assert report["run"]["status"] == "complete"


def test_a_workers_diagnosis_counts_only_for_the_policy_and_shape_it_was_made_with():
    fleet, policies = skewed_fleet()
    host = "gpu-h100-xid79-02"
    result = {"ansible_facts": {"gpufleet": fleet[host]}}
    diagnosis = host_diagnosis(host, result, policies[host])
    digest = policy_digest(policies[host])
    findings, view, line = accepted_diagnosis({DIAGNOSIS_KEY: diagnosis}, digest)
    assert findings == diagnose_fleet({host: fleet[host]}, policies)[host] and view == fleet_view(fleet[host])
    assert line.startswith("%s: ok source=" % host) and "lost=" in line
    other = dict(policies[host], thresholds=dict(policies[host]["thresholds"], gpu_temp_warn_c=1))
    assert policy_digest(other) != digest
    assert accepted_diagnosis({DIAGNOSIS_KEY: diagnosis}, policy_digest(other)) is None
    document = json.loads(diagnosis)
    broken = [None, [], {}, "[1, 2", "[]"] + [json.dumps(dict(document, **change)) for change in (
        {"extra": 1}, {"findings": "x"}, {"findings": [1]}, {"view": []}, {"line": None})]
    for text in broken:
        assert accepted_diagnosis({DIAGNOSIS_KEY: text}, digest) is None
    # the text as it is, not an object: a result that holds another shape was not made by the action
    assert accepted_diagnosis({DIAGNOSIS_KEY: document}, digest) is None
