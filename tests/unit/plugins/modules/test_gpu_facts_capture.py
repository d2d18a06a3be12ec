"""gpu_facts' capture option: a captured host read instead of the live one (docs/offline.md)."""

import os

from tests.support.capture_roots import write_file
from tests.support.gpu_facts_module import T4_XML, run_module

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
BUG_REPORT = os.path.join(ROOT, "tests", "fixtures", "captures", "nvidia-bug-report-sample.log")


def test_the_module_reads_a_captured_root_with_its_clock(capsys, tmp_path):
    root = str(tmp_path)
    with open(T4_XML) as handle:
        write_file(root, "sos_commands/nvidia/nvidia-smi_-q_-x", handle.read())
    write_file(root, "capture.json", '{"collected_at": "2026-11-30T06:00:00Z"}')
    result = run_module(capsys, capture=root, gather_subset=["min"])
    facts = result["ansible_facts"]["gpufleet"]
    assert result["changed"] is False
    assert facts["collected_at"] == "2026-11-30T06:00:00Z" and facts["capture"]["path"] == root
    assert [gpu["name"] for gpu in facts["gpus"]] == ["Tesla T4"]
    assert facts["inputs"][0]["input"] == "driver" and facts["inputs"][0]["status"] == "read"


def test_the_module_reads_a_bug_report(capsys):
    facts = run_module(capsys, capture=BUG_REPORT)["ansible_facts"]["gpufleet"]
    assert facts["capture"]["kind"] == "nvidia_bug_report"
    assert [event["xid"] for event in facts["xid_events"]] == [79]


def test_a_capture_that_cannot_be_read_fails_the_module_naming_it(capsys, tmp_path):
    result = run_module(capsys, capture=str(tmp_path / "gone"))
    assert result["failed"] is True and result["msg"] == "capture %s does not exist" % (tmp_path / "gone")


def test_nvml_cannot_be_read_from_a_capture(capsys):
    result = run_module(capsys, capture=BUG_REPORT, source="nvml")
    assert result["failed"] is True
    assert result["msg"].startswith("capture is read with source=auto or nvidia_smi (source is nvml)")


def test_a_capture_and_a_fixture_exclude_each_other(capsys, tmp_path):
    result = run_module(capsys, capture=BUG_REPORT, source="replay", fixture=str(tmp_path / "f.json"))
    assert result["failed"] is True and "mutually exclusive: capture|fixture" in result["msg"]
