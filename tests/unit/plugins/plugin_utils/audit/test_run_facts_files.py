"""run_audit and the facts files: written by run_audit, or already written by the worker (gpufleet_facts_file)."""

import json
import os

from ansible_collections.gpufleet.core.plugins.plugin_utils.audit import run as audit_run
from ansible_collections.gpufleet.core.plugins.plugin_utils.policy import validate_policy

STARTED_AT = "2026-12-01T00:00:00Z"
FACTS = {"nvidia_present": False}


def registered(facts_file=None):
    result = {"ansible_facts": {"gpufleet": dict(FACTS)}, "changed": False}
    if facts_file is not None:
        result[audit_run.FACTS_FILE_KEY] = facts_file
    return result


def audit(tmp_path, results):
    report_root = str(tmp_path / "reports")
    run_dir = os.path.join(report_root, "20261201T000000Z")
    os.makedirs(os.path.join(run_dir, "facts"))
    policy = validate_policy({})
    report, _paths, _lines = audit_run.run_audit(results, {host: policy for host in results}, run_dir, report_root,
                                                 STARTED_AT)
    return report, run_dir


def test_a_host_without_the_key_gets_its_facts_file_written(tmp_path):
    report, run_dir = audit(tmp_path, {"gpu-01": registered()})
    assert report["hosts"]["gpu-01"]["facts_file"] == "facts/gpu-01.json"
    with open(os.path.join(run_dir, "facts", "gpu-01.json"), encoding="utf-8") as stream:
        assert json.load(stream) == FACTS


def test_a_facts_file_the_worker_wrote_is_named_and_not_written_again(tmp_path):
    run_dir = tmp_path / "reports" / "20261201T000000Z"
    (run_dir / "facts").mkdir(parents=True)
    written = run_dir / "facts" / "worker-name.json"
    written.write_text("written by the worker\n", encoding="utf-8")
    facts_dir = str(run_dir / "facts")
    entry, facts = audit_run.host_status("gpu-01", registered("facts/worker-name.json"), facts_dir, "gpu-01")
    assert entry == {"status": "ok", "facts_file": "facts/worker-name.json", "message": None}
    assert facts == FACTS
    assert written.read_text(encoding="utf-8") == "written by the worker\n"
    assert sorted(os.listdir(facts_dir)) == ["worker-name.json"]


def test_run_audit_mixes_both_ways(tmp_path):
    run_dir = tmp_path / "reports" / "20261201T000000Z"
    (run_dir / "facts").mkdir(parents=True)
    (run_dir / "facts" / "gpu-01.json").write_text("{}\n", encoding="utf-8")
    report_root = str(tmp_path / "reports")
    policy = validate_policy({})
    results = {"gpu-01": registered("facts/gpu-01.json"), "gpu-02": registered()}
    report, _paths, _lines = audit_run.run_audit(results, {host: policy for host in results}, str(run_dir),
                                                 report_root, STARTED_AT)
    assert {host: entry["facts_file"] for host, entry in report["hosts"].items()} == {
        "gpu-01": "facts/gpu-01.json", "gpu-02": "facts/gpu-02.json"}
    assert (run_dir / "facts" / "gpu-01.json").read_text(encoding="utf-8") == "{}\n"
    assert json.loads((run_dir / "facts" / "gpu-02.json").read_text(encoding="utf-8")) == FACTS


def test_a_key_that_names_no_file_inside_facts_is_not_trusted(tmp_path):
    facts_dir = tmp_path / "facts"
    facts_dir.mkdir()
    (tmp_path / "outside.json").write_text("{}\n", encoding="utf-8")
    for named in ("facts/missing.json", "../outside.json", "facts/../outside.json", "/etc/passwd", 7):
        entry, _facts = audit_run.host_status("gpu-01", registered(named), str(facts_dir), "gpu-01")
        assert entry["facts_file"] == "facts/gpu-01.json"
        assert json.loads((facts_dir / "gpu-01.json").read_text(encoding="utf-8")) == FACTS


def test_facts_that_strict_json_cannot_hold_fail_their_host_only_and_no_file_holds_them(tmp_path):
    """Facts no worker checked (facts_validation) with a NaN: that host's collection failed, with why; the others'
    facts files are written, and every facts file is strict JSON."""
    odd = registered()
    odd["ansible_facts"]["gpufleet"]["collection_seconds"] = float("nan")
    report, run_dir = audit(tmp_path, {"gpu-01": registered(), "gpu-02": odd})
    assert report["hosts"]["gpu-02"]["status"] == "failed" and report["hosts"]["gpu-02"]["facts_file"] is None
    assert "cannot be written as JSON: Out of range float values are not JSON compliant" in (
        report["hosts"]["gpu-02"]["message"])
    assert report["hosts"]["gpu-01"]["status"] == "ok" and report["run"]["status"] == "complete"
    assert os.listdir(os.path.join(run_dir, "facts")) == ["gpu-01.json"]

    def refuse(constant):
        raise ValueError(constant)
    with open(os.path.join(run_dir, "facts", "gpu-01.json"), encoding="utf-8") as stream:
        assert json.loads(stream.read(), parse_constant=refuse) == FACTS


def test_facts_a_rule_fails_on_fail_their_host_only(tmp_path, monkeypatch):
    """Facts of the schema's shape that still make a rule raise: that host's collection failed with the reason,
    the other host diagnosed and every report written."""
    real_host = audit_run.FleetDiagnosis.host

    def failing_on_gpu_02(self, host, facts):
        if host == "gpu-02":
            raise KeyError("index")
        return real_host(self, host, facts)
    monkeypatch.setattr(audit_run.FleetDiagnosis, "host", failing_on_gpu_02)
    report, run_dir = audit(tmp_path, {"gpu-01": registered(), "gpu-02": registered()})
    assert report["hosts"]["gpu-02"]["status"] == "failed" and report["hosts"]["gpu-02"]["facts_file"] is None
    assert report["hosts"]["gpu-02"]["message"] == (
        "the host's facts could not be diagnosed (KeyError: 'index'); report this with its facts")
    assert report["hosts"]["gpu-01"]["status"] == "ok" and report["run"]["status"] == "complete"
    assert sorted(os.listdir(run_dir)) == ["facts", "findings.ndjson", "gpufleet.prom", "hosts.txt", "junit.xml",
                                           "report.html", "report.json"]
    with open(os.path.join(run_dir, "hosts.txt"), encoding="utf-8") as stream:
        assert "gpu-02: FAILED - the host's facts could not be diagnosed" in stream.read()
