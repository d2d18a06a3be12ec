"""report.json 1.2 on disk (report_format.compact) and back (report_format.expanded): every finding once,
nothing lost, both forms valid against docs/schema/report.schema.json, 1.1 documents still read."""

import copy
import json
import os

import jsonschema
import pytest

from ansible_collections.gpufleet.core.plugins.plugin_utils import report_writer
from ansible_collections.gpufleet.core.plugins.plugin_utils.remediation import load_report
from ansible_collections.gpufleet.core.plugins.plugin_utils.report_format import compact, expanded, shared_actions
from ansible_collections.gpufleet.core.plugins.plugin_utils.report_model import REPORT_VERSION, build_report
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


def test_the_version_is_1_3():
    assert REPORT_VERSION == "1.3"


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
        assert [document["findings"][item]["host"] for item in entry["findings"]] == [host] * len(entry["findings"])
        assert len(entry["findings"]) == len(demo_report["hosts"][host]["findings"])
    positions = sorted(item for entry in document["hosts"].values() for item in entry["findings"])
    assert positions == list(range(len(document["findings"])))


def test_a_shared_action_is_written_once_and_the_rest_stay_inline():
    findings = {"a": [finding("hardware.xid", "critical", "a", "00:07", "Xid 79", action="Drain it."),
                      finding("workload.x", "warning", "a", None, "one", action="Do A."),
                      finding("workload.x", "warning", "a", "00:08", "two", action="Do B.")],
                "b": [finding("hardware.xid", "critical", "b", "00:07", "Xid 79", action="Drain it.")]}
    hosts = {name: {"status": "ok", "facts_file": None, "message": None} for name in findings}
    document = on_disk(build_report(RUN, hosts, findings, []))
    assert document["actions"] == {"hardware.xid": "Drain it."}
    assert [f.get("action") for f in document["findings"] if f["rule"] == "hardware.xid"] == [None, None]
    assert sorted(f["action"] for f in document["findings"] if f["rule"] == "workload.x") == ["Do A.", "Do B."]
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


def test_remediation_reads_a_1_2_run_folder_back(tmp_path, demo_report):
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
