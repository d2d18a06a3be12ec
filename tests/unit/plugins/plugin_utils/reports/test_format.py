"""report.json 1.3 on disk (report_format.compact) and back (report_format.expanded): every finding once,
nothing lost, both forms valid against docs/schema/report.schema.json, 1.1 documents still read."""

import copy
import json
import os

import jsonschema
import pytest

from ansible_collections.gpufleet.core.plugins.plugin_utils.reports import writer as report_writer
from ansible_collections.gpufleet.core.plugins.plugin_utils.audit.remediation import load_report
from ansible_collections.gpufleet.core.plugins.plugin_utils.reports.format import compact, expanded, shared_actions
from ansible_collections.gpufleet.core.plugins.plugin_utils.reports.model import REPORT_VERSION, build_report
from tests.support.report_inputs import RUN, demo_like_inputs, finding, large_inputs
from tests.support.schema_check import ROOT

REPORT_SCHEMA = os.path.join(ROOT, "docs", "schema", "report.schema.json")


@pytest.fixture(scope="module")
def validator():
    with open(REPORT_SCHEMA, encoding="utf-8") as stream:
        return jsonschema.Draft202012Validator(json.load(stream))


@pytest.fixture(scope="module")
def demo_report():
    return build_report(*demo_like_inputs())


def on_disk(report):
    return json.loads(report_writer.render_json(report))


def test_the_version_is_1_5():
    assert REPORT_VERSION == "1.5"


def test_a_1_2_documents_persisting_objects_read_as_identities():
    document = {"report_version": "1.2", "findings": [], "hosts": {},
                "changes": {"status": "compared", "against": "r1", "counts": {"new": 0, "persisting": 1, "cleared": 0},
                            "new": [], "cleared": [],
                            "persisting": [{"identity": "abc", "rule": "hardware.xid", "host": "node-1", "gpu": None,
                                            "severity": "critical", "first_seen": "2026-11-30T06:00:00Z", "runs_open": 2}]}}
    assert expanded(document)["changes"]["persisting"] == ["abc"]
    assert expanded(dict(document, changes=dict(document["changes"], persisting=["abc"])))["changes"]["persisting"] == ["abc"]


def test_hosts_hold_positions_of_their_findings_in_the_top_level_list(demo_report):
    document = on_disk(demo_report)
    for host, entry in document["hosts"].items():
        assert all(isinstance(item, int) for item in entry["findings"])
        assert all("host" not in document["findings"][item] for item in entry["findings"])  # 1.3: the entry says it
        assert len(entry["findings"]) == len(demo_report["hosts"][host]["findings"])
    positions = sorted(item for entry in document["hosts"].values() for item in entry["findings"])
    assert positions == list(range(len(document["findings"])))


def test_a_shared_action_is_written_once_and_the_rest_stay_inline():
    findings = {"a": [finding("hardware.xid", "critical", "a", "00:07", "Xid 79", action="Drain it."),
                      finding("workload.x", "warning", "a", None, "one", action="Do A."),
                      finding("workload.x", "warning", "a", "00:08", "two", action="Do B.")],
                "b": [finding("hardware.xid", "critical", "b", "00:07", "Xid 79", action="Drain it.")]}
    hosts = {name: {"status": "ok", "facts_file": None, "message": None} for name in findings}
    report = build_report(RUN, hosts, findings, [])
    document = on_disk(report)
    assert document["defaults"]["hardware.xid"]["action"] == "Drain it."
    assert [f.get("action") for f in document["findings"] if f["rule"] == "hardware.xid"] == [None, None]
    # 1.3: the most common action of a rule is its default; only the other one stays inline
    assert [f.get("action") for f in document["findings"] if f["rule"] == "workload.x"].count(None) == 1
    assert expanded(document) == json.loads(json.dumps(report, default=str))
    assert shared_actions([{"rule": "r", "action": None}]) == {}


def test_expanded_gives_back_the_report_in_memory(demo_report, validator):
    document = on_disk(demo_report)
    validator.validate(document)
    back = expanded(document)
    validator.validate(back)
    assert back == json.loads(json.dumps(demo_report, default=str))
    for entry in back["hosts"].values():
        for item in entry["findings"]:
            assert any(item is other for other in back["findings"])  # the same objects, as in memory


def test_compact_leaves_the_report_alone_and_works_on_copies(demo_report):
    before = json.dumps(demo_report, sort_keys=True, default=str)
    copied = copy.deepcopy(demo_report)  # host entries and findings no longer the same objects
    assert compact(copied)["hosts"] == compact(demo_report)["hosts"]
    assert json.dumps(demo_report, sort_keys=True, default=str) == before


def test_a_1_1_document_reads_as_it_is(demo_report, validator):
    old = json.loads(json.dumps(demo_report, default=str))
    old["report_version"] = "1.1"
    validator.validate(old)
    assert expanded(old) == old


def test_remediation_reads_a_1_3_run_folder_back(tmp_path, demo_report):
    (tmp_path / "report.json").write_text(report_writer.render_json(demo_report))
    report = load_report(str(tmp_path))
    assert report["findings"] == json.loads(json.dumps(demo_report["findings"], default=str))
    assert report["hosts"]["dgx-h100-01"]["findings"][0]["action"]


def test_a_large_fleet_report_is_about_half_the_size_with_every_finding():
    report = build_report(*large_inputs(3000))
    full = len(json.dumps(report, separators=(",", ":"), ensure_ascii=False, default=str))
    text = report_writer.render_json(report)
    document = json.loads(text)
    assert len(document["findings"]) == len(report["findings"])
    assert len(text) < 0.6 * full, (len(text), full)


# ---------------------------------------------------------------- 1.3: shared text, defaults, implied host


def test_repeated_summaries_and_evidence_are_written_once_and_read_back():
    findings = {host: [finding("hardware.pcie_link", "warning", host, "00:01", "GPU 0 link x8", {"width": 8}),
                       finding("hardware.xid", "critical", host, "00:01", "Xid 79 on " + host, {"host": host})]
                for host in ("a", "b", "c")}
    hosts = {name: {"status": "ok", "facts_file": None, "message": None} for name in findings}
    report = build_report(RUN, hosts, findings, [])
    document = on_disk(report)
    assert document["summaries"] == ["GPU 0 link x8"] and document["evidence"] == [{"width": 8}]
    for stored in document["findings"]:
        shared = stored["rule"] == "hardware.pcie_link"
        assert ("summary_ref" in stored, "evidence_ref" in stored, "summary" in stored) == (shared, shared, not shared)
    assert expanded(document) == json.loads(json.dumps(report, default=str))


@pytest.mark.parametrize("inputs", ["demo", "large"])
def test_nothing_is_lost_expanded_of_compact_is_the_report(inputs):
    """Every finding, key for key, in memory and through the JSON text, on the demo fleet and a generated one."""
    report = build_report(*(demo_like_inputs() if inputs == "demo" else large_inputs(1500)))
    assert expanded(compact(report)) == report
    back = expanded(on_disk(report))
    assert back == json.loads(json.dumps(report, default=str))
    key_orders = [list(f) for f in json.loads(json.dumps(report["findings"], default=str))]
    assert [list(f) for f in back["findings"]] == key_orders


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
    assert expanded(compact(report)) == report
    assert expanded(on_disk(report)) == json.loads(json.dumps(report, default=str))


def test_unusual_findings_keep_every_key():
    """Keys a rule's defaults do not cover, values that only look equal (1 and True), a finding without an
    action, extra keys (the store's identity) and a finding listed under another host's name."""
    findings = {"a": [dict(finding("workload.x", "warning", "a", None, "same"), evidence={"n": 1}, identity="0" * 40),
                      dict(finding("workload.x", "warning", "a", "00:01", "same"), evidence={"n": True}),
                      dict(finding("workload.x", "info", "b", "00:02", "same"), evidence={"n": 1})]}
    del findings["a"][1]["action"]
    hosts = {"a": {"status": "ok", "facts_file": None, "message": None}}
    report = build_report(RUN, hosts, findings, [])
    back = expanded(on_disk(report))
    assert back == json.loads(json.dumps(report, default=str))
    assert [f["evidence"]["n"] for f in back["findings"]] == [f["evidence"]["n"] for f in report["findings"]]
    assert [type(f["evidence"]["n"]) for f in back["findings"]] == [type(f["evidence"]["n"]) for f in report["findings"]]


def test_a_1_2_document_still_reads():
    findings = {"a": [finding("hardware.xid", "critical", "a", "00:07", "Xid 79", action="Drain it.")]}
    hosts = {"a": {"status": "ok", "facts_file": None, "message": None}}
    report = json.loads(json.dumps(build_report(RUN, hosts, findings, []), default=str))
    old = dict(report, report_version="1.2", actions={"hardware.xid": "Drain it."},
               findings=[{key: value for key, value in report["findings"][0].items() if key != "action"}],
               hosts={"a": dict(report["hosts"]["a"], findings=[0])})
    assert expanded(old) == dict(report, report_version="1.2")


def test_a_large_fleet_report_is_under_two_fifths_of_its_full_size():
    report = build_report(*large_inputs(3000))
    full = len(json.dumps(report, separators=(",", ":"), ensure_ascii=False, default=str))
    text = report_writer.render_json(report)
    assert len(json.loads(text)["findings"]) == len(report["findings"])
    assert len(text) < 0.4 * full, (len(text), full)
