"""report.json 2.0 on disk (report_format.disk_document) and back (report_format.expanded): every finding whole,
nothing shared by position or per-rule default, valid against docs/schema/report.schema.json; 1.1 to 1.4
documents still read; findings.ndjson one whole finding per line."""

import json
import os

import jsonschema
import pytest

from ansible_collections.gpufleet.core.plugins.plugin_utils.reports import writer as report_writer
from ansible_collections.gpufleet.core.plugins.plugin_utils.audit.remediation import load_report
from ansible_collections.gpufleet.core.plugins.plugin_utils.cli.audit_command import summary_text
from ansible_collections.gpufleet.core.plugins.plugin_utils.reports.format import FINDING_KEYS, expanded
from ansible_collections.gpufleet.core.plugins.plugin_utils.reports.model import REPORT_VERSION, build_report
from tests.support.report_inputs import RUN, demo_like_inputs, finding, large_inputs
from tests.support.schema_check import ROOT

REPORT_SCHEMA = os.path.join(ROOT, "docs", "schema", "report.schema.json")
# written by report 1.4's writer (main before report 2.0) from demo_like_inputs(): the 1.3 layout on disk
REPORT_1_4 = os.path.join(ROOT, "tests", "fixtures", "reports", "report-1.4.json")
SHARED_KEYS = ("actions", "defaults", "summaries", "evidence")


@pytest.fixture(scope="module")
def validator():
    with open(REPORT_SCHEMA, encoding="utf-8") as stream:
        return jsonschema.Draft202012Validator(json.load(stream))


@pytest.fixture(scope="module")
def demo_report():
    return build_report(*demo_like_inputs())


def on_disk(report):
    return json.loads(report_writer.render_json(report))


def as_json(value):
    return json.loads(json.dumps(value, default=str))


def test_the_version_is_2_0():
    assert REPORT_VERSION == "2.0"


def test_every_finding_on_disk_is_whole_and_nothing_is_shared(demo_report, validator):
    document = on_disk(demo_report)
    validator.validate(document)
    assert document["report_version"] == "2.0"
    assert not set(SHARED_KEYS) & set(document)
    assert document["findings"] == as_json(demo_report["findings"])
    for stored in document["findings"]:
        assert set(FINDING_KEYS) <= set(stored)
        assert not {"summary_ref", "evidence_ref"} & set(stored)
    assert all("findings" not in entry for entry in document["hosts"].values())
    critical = [f for f in document["findings"] if f["severity"] == "critical"]
    assert [(f["host"], f["rule"]) for f in critical] == [
        ("dgx-h100-01", "hardware.xid"), ("dgx-h100-02", "driver.kernel_userspace_mismatch")]


def test_the_schema_refuses_a_2_0_finding_that_is_not_whole(demo_report, validator):
    document = on_disk(demo_report)
    without_severity = dict(document, findings=[{k: v for k, v in document["findings"][0].items() if k != "severity"}])
    assert not validator.is_valid(without_severity)
    assert not validator.is_valid(dict(document, defaults={}))
    assert validator.is_valid(dict(document, report_version="2.1"))


def test_expanded_gives_back_the_report_in_memory(demo_report, validator):
    back = expanded(on_disk(demo_report))
    validator.validate(back)
    assert back == as_json(demo_report)
    for entry in back["hosts"].values():
        for item in entry["findings"]:
            assert any(item is other for other in back["findings"])  # the same objects, as in memory


def test_a_1_4_document_of_the_previous_release_reads_back(demo_report, validator):
    with open(REPORT_1_4, encoding="utf-8") as stream:
        old = json.load(stream)
    validator.validate(old)
    assert "defaults" in old and all(isinstance(item, int) for item in old["hosts"]["dgx-h100-01"]["findings"])
    assert expanded(old) == dict(as_json(demo_report), report_version="1.4")


def test_remediation_and_the_cli_read_a_1_4_run_folder(tmp_path, demo_report):
    with open(REPORT_1_4, encoding="utf-8") as stream:
        (tmp_path / "report.json").write_text(stream.read())
    report = load_report(str(tmp_path))
    assert report["findings"] == as_json(demo_report["findings"])
    assert report["hosts"]["dgx-h100-01"]["findings"][0]["action"] == "Drain the node and hand the GPU over for repair."

    class Progress:
        messages, verdicts = {}, {}

        def run_dir(self):
            return str(tmp_path)
    text = summary_text(Progress(), "", 2)
    assert "No report was written" not in text
    assert "8 hosts (6 ok, 1 unreachable, 1 failed), 7 findings" in text
    assert "FAIL - 2 finding(s) at or above critical" in text


def test_a_1_1_document_reads_as_it_is(demo_report, validator):
    old = as_json(demo_report)
    old["report_version"] = "1.1"
    validator.validate(old)
    assert expanded(old) == old


def test_a_1_2_document_still_reads():
    findings = {"a": [finding("hardware.xid", "critical", "a", "00:07", "Xid 79", action="Drain it.")]}
    hosts = {"a": {"status": "ok", "facts_file": None, "message": None}}
    report = as_json(build_report(RUN, hosts, findings, []))
    old = dict(report, report_version="1.2", actions={"hardware.xid": "Drain it."},
               findings=[{key: value for key, value in report["findings"][0].items() if key != "action"}],
               hosts={"a": dict(report["hosts"]["a"], findings=[0])})
    assert expanded(old) == dict(report, report_version="1.2")


def test_a_1_2_documents_persisting_objects_read_as_identities():
    document = {"report_version": "1.2", "findings": [], "hosts": {},
                "changes": {"status": "compared", "against": "r1", "counts": {"new": 0, "persisting": 1, "cleared": 0},
                            "new": [], "cleared": [],
                            "persisting": [{"identity": "abc", "rule": "hardware.xid", "host": "node-1", "gpu": None,
                                            "severity": "critical", "first_seen": "2026-11-30T06:00:00Z", "runs_open": 2}]}}
    assert expanded(document)["changes"]["persisting"] == ["abc"]
    assert expanded(dict(document, changes=dict(document["changes"], persisting=["abc"])))["changes"]["persisting"] == ["abc"]


@pytest.mark.parametrize("inputs", ["demo", "large"])
def test_nothing_is_lost_through_the_json_text(inputs):
    """Every finding, key for key and in make_finding's key order, on the demo fleet and a generated one."""
    report = build_report(*(demo_like_inputs() if inputs == "demo" else large_inputs(1500)))
    back = expanded(on_disk(report))
    assert back == as_json(report)
    assert [list(f) for f in back["findings"]] == [list(f) for f in as_json(report["findings"])]


def test_the_generated_bench_fleet_round_trips():
    """The bench's fleet (replayed demo facts, 4 policies) through run_audit's own diagnosis and report."""
    import sys
    sys.path.insert(0, os.path.join(ROOT, "bench"))
    try:
        import diagnose_bench
    finally:
        sys.path.remove(os.path.join(ROOT, "bench"))
    from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.correlate import correlate
    from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.diagnose import diagnose_fleet
    templates, policies = diagnose_bench.load_templates()
    results, host_policies = diagnose_bench.build_fleet(60, templates, policies)
    facts = {host: result["ansible_facts"]["gpufleet"] for host, result in results.items()}
    findings = diagnose_fleet(facts, host_policies)
    hosts = {host: {"status": "ok", "facts_file": "facts/%s.json" % host, "message": None} for host in facts}
    report = build_report(RUN, hosts, findings, correlate(facts, findings, host_policies))
    assert expanded(on_disk(report)) == as_json(report)


def test_unusual_findings_keep_every_key():
    """Values that only look equal (1 and True), a finding without an action, extra keys (the store's identity)."""
    findings = {"a": [dict(finding("workload.x", "warning", "a", None, "same"), evidence={"n": 1}, identity="0" * 40),
                      dict(finding("workload.x", "warning", "a", "00:01", "same"), evidence={"n": True})]}
    del findings["a"][1]["action"]
    hosts = {"a": {"status": "ok", "facts_file": None, "message": None}}
    report = build_report(RUN, hosts, findings, [])
    back = expanded(on_disk(report))
    assert back == as_json(report)
    assert [type(f["evidence"]["n"]) for f in back["findings"]] == [int, bool]


def test_findings_ndjson_is_one_whole_finding_per_line_with_the_run(demo_report):
    lines = report_writer.render_ndjson(demo_report).splitlines()
    assert len(lines) == len(demo_report["findings"]) == 7
    records = [json.loads(line) for line in lines]
    for record, original in zip(records, as_json(demo_report["findings"])):
        assert record["run_id"] == "20260301T120000Z" and record["time"] == "2026-03-01T12:03:10Z"
        assert {key: value for key, value in record.items() if key not in ("run_id", "time")} == original
    assert records[0]["severity"] == "critical" and records[0]["host"] == "dgx-h100-01"


def test_a_large_fleet_report_holds_every_finding_whole():
    report = build_report(*large_inputs(3000))
    document = json.loads(report_writer.render_json(report))
    assert len(document["findings"]) == len(report["findings"])
    assert all(set(FINDING_KEYS) <= set(stored) for stored in document["findings"])
