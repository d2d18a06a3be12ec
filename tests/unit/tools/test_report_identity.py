"""tools/report_identity.py compares two run folders byte for byte after masking only the run's own id, times and
durations and the hosts' collection times: everything else that differs is reported (bench/README.md,
"Restructuring, issue 26")."""

import importlib.util
import json
import os

from tests.support.schema_check import ROOT


def identity_tool():
    spec = importlib.util.spec_from_file_location("report_identity", os.path.join(ROOT, "tools", "report_identity.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


TOOL = identity_tool()


def write_run(folder, run_id, started, finished, first_seen=None, open_seconds=None, collection_seconds=1.5,
              temperature=40):
    """A run folder as the audit writes one, small: its report.json, junit.xml, gpufleet.prom and one facts file."""
    (folder / "facts").mkdir(parents=True)
    report = {"run": {"id": run_id, "started_at": started, "finished_at": finished},
              "findings": [{"rule": "hardware.temperature", "first_seen": first_seen or started}]}
    (folder / "report.json").write_text(json.dumps(report, indent=1), encoding="utf-8")
    (folder / "junit.xml").write_text('<testsuites name="gpufleet audit %s"><testsuite timestamp="%s"/></testsuites>\n'
                                      % (run_id, started), encoding="utf-8")
    duration = float(TOOL.epoch_texts(finished)[1]) - float(TOOL.epoch_texts(started)[1])
    (folder / "gpufleet.prom").write_text(
        'gpufleet_audit_info{run_id="%s"} 1\n'
        "gpufleet_audit_last_run_timestamp_seconds %s\n"
        "gpufleet_audit_duration_seconds %r\n"
        'gpufleet_finding_open_seconds{host="a",rule="hardware.temperature"} %r\n'
        % (run_id, TOOL.epoch_texts(finished)[0], duration, duration if open_seconds is None else open_seconds),
        encoding="utf-8")
    (folder / "facts" / "a.json").write_text(
        json.dumps({"collected_at": finished, "collection_seconds": collection_seconds,
                    "gpus": [{"temperature": {"gpu_c": temperature}}]}, separators=(",", ":")),
        encoding="utf-8")
    return folder


def base_and_work(tmp_path, **work):
    base = write_run(tmp_path / "base", "20261206T190000Z", "2026-12-06T19:00:00Z", "2026-12-06T19:00:21Z")
    changed = dict({"collection_seconds": 2.25}, **work)
    after = write_run(tmp_path / "work", "20261206T191500Z", "2026-12-06T19:15:00Z", "2026-12-06T19:15:24Z",
                      **changed)
    return base, after


def differing_files(base, work):
    return [name for name, _lines in TOOL.compare_run_folders(base, work)]


def test_two_runs_that_differ_only_in_their_own_id_times_and_durations_are_identical(tmp_path):
    assert differing_files(*base_and_work(tmp_path)) == []


def test_a_fact_that_differs_is_reported_with_its_line(tmp_path):
    base, work = base_and_work(tmp_path, temperature=41)
    ((name, lines),) = TOOL.compare_run_folders(base, work)
    assert name == os.path.join("facts", "a.json")
    assert any('"gpu_c":41' in line for line in lines if line.startswith("+"))


def test_a_first_seen_older_than_the_run_is_compared(tmp_path):
    assert differing_files(*base_and_work(tmp_path, first_seen="2026-12-01T00:00:00Z")) == ["report.json"]


def test_a_finding_open_longer_than_the_run_is_compared(tmp_path):
    assert differing_files(*base_and_work(tmp_path, open_seconds=86400.0)) == ["gpufleet.prom"]


def test_a_file_only_one_run_folder_has_differs(tmp_path):
    base, work = base_and_work(tmp_path)
    (work / "hosts.txt").write_text("a ok\n", encoding="utf-8")
    assert TOOL.compare_run_folders(base, work) == [("hosts.txt", ["only in the working tree"])]


def test_the_masks_keep_everything_but_the_masked_values():
    own = TOOL.run_own_values_of({"id": "20261206T190000Z", "started_at": "2026-12-06T19:00:00Z",
                                  "finished_at": "2026-12-06T19:00:21Z"})
    text = ('{"run": "20261206T190000Z", "collection_seconds": 1.5, "count": 1.5}\n'
            "gpufleet_audit_duration_seconds 21.0\ngpufleet_audit_duration_seconds_total 21.0\n")
    assert TOOL.masked(text, own) == ('{"run": "<run.id>", "collection_seconds": <collection_seconds>, "count": 1.5}\n'
                                      "gpufleet_audit_duration_seconds <run duration>\n"
                                      "gpufleet_audit_duration_seconds_total 21.0\n")
