"""A host's own step (audit/host_step.py) is one piece of code: what the gpu_facts action makes of a host in its
worker (worker_step) is what audit_report makes of the same facts on the controller when the worker did not
(audit/run.py): the same findings, fleet view, summary line and facts file, and for a rule that fails on the facts,
the same reason."""

import copy
import json
import os

import pytest

from ansible_collections.gpufleet.core.plugins.plugin_utils.audit import run as audit_run
from ansible_collections.gpufleet.core.plugins.plugin_utils.audit.host_step import (
    DIAGNOSIS_KEY, accepted_diagnosis, host_step, policy_digest, worker_step)
from ansible_collections.gpufleet.core.plugins.plugin_utils.rules import diagnose
from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.diagnose import FleetDiagnosis
from ansible_collections.gpufleet.core.plugins.plugin_utils.run_folder import FACTS_FILE_KEY, facts_file_text
from ansible_collections.gpufleet.core.plugins.plugin_utils.store.extract import STORE_EXTRACT_KEY
from tests.support.demo_fleet import HOSTS, demo_audit, demo_policy

STARTED_AT = "2026-12-05T04:00:00Z"


def registered(facts):
    """A gpu_facts result as the module returns it, its facts with their keys in the facts file's order."""
    return {"changed": False, "ansible_facts": {"gpufleet": json.loads(facts_file_text(facts))}}


def worker_and_controller(tmp_path, host, facts, policy):
    """(the worker's result, the controller's fallback step and facts status) for one host's facts."""
    worker_dir = tmp_path / "worker"
    worker = worker_step(registered(facts), host, [host], str(worker_dir), policy, keep_facts=False)
    controller_facts = tmp_path / "controller" / "facts"
    controller_facts.mkdir(parents=True)
    result = registered(facts)
    status, held = audit_run.host_status(host, result, str(controller_facts))
    step = host_step(host, result, held, FleetDiagnosis({host: policy}).host)
    return worker, step, status


@pytest.mark.parametrize("host", HOSTS)
def test_the_workers_step_and_the_controllers_fallback_agree(tmp_path, host):
    facts, policy = demo_audit()[0][host], demo_policy(host)
    worker, step, status = worker_and_controller(tmp_path, host, facts, policy)
    assert "warnings" not in worker and "ansible_facts" not in worker
    assert step.failure is None
    # as JSON (the reports' form): a rule's evidence may hold tuples, which the worker's JSON text makes lists
    assert json.dumps(accepted_diagnosis(worker, policy_digest(policy))) == json.dumps(
        (step.findings, step.view, step.line))
    assert worker[FACTS_FILE_KEY] == status["facts_file"] == "facts/%s.json" % host
    assert (tmp_path / "worker" / worker[FACTS_FILE_KEY]).read_bytes() == (
        tmp_path / "controller" / status["facts_file"]).read_bytes()
    assert STORE_EXTRACT_KEY in worker


def test_the_demo_fleet_has_findings_to_compare():
    facts = demo_audit()[0]
    steps = [host_step(host, registered(facts[host]), facts[host], FleetDiagnosis({host: demo_policy(host)}).host)
             for host in HOSTS]
    assert sum(len(step.findings) for step in steps) > 0


def test_a_rule_that_fails_gives_the_same_reason_in_the_worker_and_on_the_controller(tmp_path, monkeypatch):
    def broken(*_args):
        raise KeyError("thresholds")
    host = sorted(HOSTS)[0]
    facts, policy = demo_audit()[0][host], demo_policy(host)  # before the patch: the demo's audit diagnoses too
    monkeypatch.setattr(diagnose, "diagnose_host", broken)
    worker, step, _status = worker_and_controller(tmp_path, host, facts, policy)
    assert DIAGNOSIS_KEY not in worker
    reason = "the host's facts could not be diagnosed (KeyError: 'thresholds'); report this with its facts"
    assert worker["warnings"] == ["the host was not diagnosed in the worker: " + reason]
    assert step.failure == reason and step.findings == []
    assert step.line == "%s: FAILED - %s" % (host, reason)


def test_an_audit_of_the_workers_results_and_of_the_modules_writes_the_same_reports(tmp_path, monkeypatch):
    """The whole audit: every host stepped in its worker, or every host left to the controller's fallback."""
    monkeypatch.setattr(audit_run, "utc_now", lambda: "2026-12-05T04:01:00Z")
    facts = demo_audit()[0]
    policies = {host: demo_policy(host) for host in HOSTS}
    written = {}
    for side in ("worker", "controller"):
        run_dir = tmp_path / side / "20261205T040000Z"
        run_dir.mkdir(parents=True)
        results = {host: registered(facts[host]) for host in HOSTS}
        if side == "worker":
            results = {host: worker_step(copy.deepcopy(result), host, sorted(HOSTS), str(run_dir), policies[host], False)
                       for host, result in results.items()}
        counts = {}
        audit_run.run_audit(results, policies, str(run_dir), str(tmp_path / side), STARTED_AT, counts=counts)
        assert counts["diagnosed_in_workers"] == (len(HOSTS) if side == "worker" else 0)
        written[side] = {name: (run_dir / name).read_bytes()
                         for name in ("report.json", "report.html", "junit.xml", "gpufleet.prom", "hosts.txt")}
        written[side].update({os.path.join("facts", name): (run_dir / "facts" / name).read_bytes()
                              for name in os.listdir(str(run_dir / "facts"))})
    assert sorted(written["worker"]) == sorted(written["controller"])
    assert written["worker"] == written["controller"]
