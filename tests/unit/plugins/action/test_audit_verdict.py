"""Run folders, file modes, facts file names, run status and host verdicts (the controller side of issue 17)."""

import os
import stat
import threading

import pytest
from prometheus_client.parser import text_string_to_metric_families

from ansible_collections.gpufleet.core.plugins.plugin_utils.audit.play_results import verdict_result
from ansible_collections.gpufleet.core.plugins.plugin_utils.audit import run as audit_run
from ansible_collections.gpufleet.core.plugins.plugin_utils import run_folder
from ansible_collections.gpufleet.core.plugins.plugin_utils.reports import writer as report_writer
from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.findings import make_finding
from ansible_collections.gpufleet.core.plugins.plugin_utils.policy import validate_policy
from ansible_collections.gpufleet.core.plugins.plugin_utils.reports.junit import render_junit
from ansible_collections.gpufleet.core.plugins.plugin_utils.reports.model import build_report
from ansible_collections.gpufleet.core.plugins.plugin_utils.reports.prometheus import render_prometheus
from ansible_collections.gpufleet.core.plugins.plugin_utils.reports.terminal import render_terminal

RUN = {"id": "20261201T000000Z", "started_at": "2026-12-01T00:00:00Z", "finished_at": "2026-12-01T00:00:09Z",
       "tool_version": "0.1.0", "fail_severity": "critical", "policy_errors": []}


def mode_of(path):
    return stat.S_IMODE(os.stat(str(path)).st_mode)


@pytest.fixture
def umask():
    """Set the process umask for one test; the old one comes back afterwards."""
    previous = os.umask(0o022)
    yield os.umask
    os.umask(previous)


def report_with(status, hosts=None, findings=None):
    run = dict(RUN, status=status, status_reason="because")
    hosts = hosts or {"gpu-1": {"status": "ok", "facts_file": "facts/gpu-1.json", "message": None}}
    return build_report(run, hosts, findings or {}, [])


# ---------------------------------------------------------------- modes


@pytest.mark.parametrize("mask, report_mode, facts_mode", [
    (0o022, 0o644, 0o640),
    (0o077, 0o600, 0o600),
    (0o027, 0o640, 0o640),
    (0o002, 0o664, 0o640),   # a permissive umask never widens the facts beyond 0640
    (0o000, 0o666, 0o640),
])
def test_files_get_the_requested_mode_less_the_umask(tmp_path, umask, mask, report_mode, facts_mode):
    umask(mask)
    assert run_folder.current_umask() == mask
    report = run_folder.write_atomically(str(tmp_path / "report.json"), "{}\n")
    facts = run_folder.write_atomically(str(tmp_path / "facts.json"), "{}\n", mode=run_folder.FACTS_MODE)
    assert (mode_of(report), mode_of(facts)) == (report_mode, facts_mode)


def test_the_umask_is_read_without_being_changed(umask):
    umask(0o037)
    run_folder.current_umask()
    assert os.umask(0o037) == 0o037


def test_facts_files_of_a_run_are_not_world_readable(tmp_path, umask):
    umask(0o022)
    result = {"ansible_facts": {"gpufleet": {"nvidia_present": False}}}
    entry, _facts = audit_run.host_status("gpu-1", result, str(tmp_path))
    assert mode_of(tmp_path / "gpu-1.json") == 0o640 and entry["facts_file"] == "facts/gpu-1.json"


# ---------------------------------------------------------------- run folders


def test_a_taken_run_folder_name_gets_the_next_number(tmp_path):
    proposed = str(tmp_path / "reports" / "20261201T000000Z")
    created = [run_folder.create_run_dir(proposed) for _number in range(3)]
    assert [os.path.basename(path) for path in created] == ["20261201T000000Z", "20261201T000000Z-2",
                                                            "20261201T000000Z-3"]
    assert all(os.path.isdir(path) for path in created)


def test_audits_that_start_in_the_same_second_get_one_folder_each(tmp_path):
    proposed = str(tmp_path / "20261201T000000Z-before")
    created, barrier = [], threading.Barrier(16)

    def start():
        barrier.wait()
        created.append(run_folder.create_run_dir(proposed))

    threads = [threading.Thread(target=start) for _number in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(set(created)) == 16
    assert sorted(os.listdir(str(tmp_path))) == sorted(os.path.basename(path) for path in created)


def test_a_run_folder_needs_a_name_of_its_own(tmp_path):
    with pytest.raises(ValueError, match="no name"):
        run_folder.create_run_dir(str(tmp_path) + "/..")


# ---------------------------------------------------------------- which link a run moves


@pytest.mark.parametrize("status, links", [
    ("complete", ["latest"]),
    ("partial", ["latest-partial"]),
    ("failed", []),
])
def test_only_a_complete_run_moves_latest(tmp_path, status, links):
    root = tmp_path / "reports"
    report_writer.write_reports(report_with(status), str(root / "run1"), str(root))
    assert sorted(name for name in os.listdir(str(root)) if name.startswith("latest")) == links
    for link in links:
        assert os.readlink(str(root / link)) == "run1"


def test_a_partial_run_after_a_complete_one_leaves_latest_where_it_was(tmp_path):
    root = tmp_path / "reports"
    report_writer.write_reports(report_with("complete"), str(root / "run1"), str(root))
    report_writer.write_reports(report_with("partial"), str(root / "run2"), str(root))
    report_writer.write_reports(report_with("failed"), str(root / "run3"), str(root))
    assert (os.readlink(str(root / "latest")), os.readlink(str(root / "latest-partial"))) == ("run1", "run2")


# ---------------------------------------------------------------- host names as file names


def test_ordinary_host_names_are_their_own_file_names():
    names = run_folder.facts_file_names(["gpu-h100-01", "node_7.example.com", "GPU-A"])
    assert names == {"gpu-h100-01": "gpu-h100-01", "node_7.example.com": "node_7.example.com", "GPU-A": "GPU-A"}


@pytest.mark.parametrize("host", ["../x", "..", ".", "/", "a/b", "/etc/passwd", ".hidden", "x" * 300, "gp\u00fc-1",
                                  "bad\udc80name", "", "a\nb", "con:1"])
def test_odd_host_names_become_one_safe_file_name(tmp_path, host):
    name = run_folder.facts_file_names([host])[host]
    assert "/" not in name and "\0" not in name and not name.startswith(".")
    assert len((name + ".json").encode("utf-8")) <= 255
    assert name != host
    path = run_folder.write_atomically(str(tmp_path / (name + ".json")), "{}\n")
    assert os.path.dirname(path) == str(tmp_path) and os.listdir(str(tmp_path)) == [name + ".json"]


def test_names_that_differ_in_case_or_in_replaced_characters_never_share_a_file():
    hosts = ["Node-A", "node-a", "NODE-A", "a/b", "a?b", "a_b", "x" * 300, "x" * 299 + "y"]
    names = run_folder.facts_file_names(hosts)
    assert len({name.casefold() for name in names.values()}) == len(hosts)
    assert names["a_b"] == "a_b"
    assert names["a/b"].startswith("a_b-") and names["a?b"].startswith("a_b-")


def test_a_host_named_like_another_hosts_hashed_name_gets_its_own(tmp_path):
    hashed = run_folder.hashed_file_name("a/b")
    names = run_folder.facts_file_names(["a/b", hashed])
    assert names[hashed] != names["a/b"]


def test_the_report_records_the_file_of_each_host(tmp_path):
    results = {host: {"ansible_facts": {"gpufleet": {"nvidia_present": False}}} for host in ("../x", "Node-A", "node-a")}
    statuses = {}
    names = run_folder.facts_file_names(sorted(results))
    for host in results:
        statuses[host], _facts = audit_run.host_status(host, results[host], str(tmp_path), names[host])
    files = [entry["facts_file"] for entry in statuses.values()]
    assert len(set(files)) == 3
    assert sorted(os.listdir(str(tmp_path))) == sorted(os.path.basename(path) for path in files)


# ---------------------------------------------------------------- run status and scope


def statuses(**by_host):
    return {host: {"status": status, "facts_file": None, "message": "why"} for host, status in by_host.items()}


def test_a_run_over_every_host_of_the_pattern_is_complete():
    scope = audit_run.run_scope(["a", "b"], ["a", "b"], "all", None)
    assert audit_run.run_status(statuses(a="ok", b="unreachable"), scope)[0] == "complete"


def test_a_limited_run_is_partial():
    scope = audit_run.run_scope(["a"], ["a", "b", "c"], "gpu_fleet", "a")
    assert scope == {"pattern": "gpu_fleet", "limit": "a", "hosts_in_pattern": 3, "hosts_targeted": 1,
                     "hosts_not_targeted": 2}
    status, reason = audit_run.run_status(statuses(a="ok"), scope)
    assert status == "partial" and "2 of the pattern's 3 hosts" in reason and "--limit a" in reason


def test_a_run_that_read_no_host_failed():
    scope = audit_run.run_scope(["a", "b"], None)
    assert audit_run.run_status(statuses(a="failed", b="unreachable"), scope)[0] == "failed"
    assert audit_run.run_status({}, audit_run.run_scope([], None))[0] == "failed"


def test_a_report_with_an_unknown_run_status_is_refused():
    with pytest.raises(ValueError, match="run status"):
        build_report(dict(RUN, status="done"), {}, {}, [])


# ---------------------------------------------------------------- host verdicts


def critical(host):
    return make_finding("hardware.gpu_lost", "hardware", "critical", host, "0", "lost", {}, "Reseat.")


def test_each_host_gets_its_own_verdict():
    hosts = dict(statuses(good="ok", bad="ok", gone="unreachable", broken="failed"))
    report = build_report(RUN, hosts, {"bad": [critical("bad")]}, [])
    verdicts = audit_run.host_verdicts(report, accepted=[])
    assert {host: item["verdict"] for host, item in verdicts.items()} == {
        "good": "ok", "bad": "fail", "gone": "not_audited", "broken": "not_audited"}
    assert "hardware.gpu_lost" in verdicts["bad"]["msg"] and "unreachable" in verdicts["gone"]["msg"]


def test_fail_severity_none_fails_no_host():
    report = build_report(dict(RUN, fail_severity="none"), statuses(bad="ok"), {"bad": [critical("bad")]}, [])
    assert audit_run.host_verdicts(report, accepted=[])["bad"]["verdict"] == "ok"


def test_an_accepted_unreachable_host_is_judged_by_its_findings():
    hosts = statuses(gone="unreachable", broken="failed")
    policy = validate_policy({"report": {"accept_unreachable": True}})
    accepted = audit_run.accepted_unreachable(hosts, {"gone": policy, "broken": policy})
    assert accepted == ["gone"]
    finding = audit_run.unreachable_finding("gone", hosts["gone"])
    report = build_report(RUN, hosts, {"gone": [finding]}, [])
    verdicts = audit_run.host_verdicts(report, accepted)
    assert verdicts["gone"]["verdict"] == "ok" and verdicts["broken"]["verdict"] == "not_audited"
    strict = build_report(dict(RUN, fail_severity="warning"), hosts, {"gone": [finding]}, [])
    assert audit_run.host_verdicts(strict, accepted)["gone"]["verdict"] == "fail"


def test_a_host_not_converged_fails():
    report = build_report(RUN, statuses(a="ok", b="ok"), {}, [])
    verdicts = audit_run.host_verdicts(report, accepted=[], not_converged=["b"])
    assert (verdicts["a"]["verdict"], verdicts["b"]["verdict"]) == ("ok", "fail")


def test_accept_unreachable_is_a_checked_policy_key():
    assert validate_policy({})["report"]["accept_unreachable"] is False
    with pytest.raises(Exception, match="report.accept_unreachable"):
        validate_policy({"report": {"accept_unreachable": "sometimes"}})


@pytest.mark.parametrize("verdict, flag", [("ok", None), ("fail", "failed"), ("not_audited", "unreachable")])
def test_the_verdict_action_marks_the_result(verdict, flag):
    result = verdict_result(verdict, "why")
    assert result["msg"] == "why" and result["changed"] is False
    assert [key for key in ("failed", "unreachable") if result.get(key)] == ([flag] if flag else [])


# ---------------------------------------------------------------- every report shows the status


def test_every_report_shows_the_run_status():
    report = report_with("partial")
    assert "Run: PARTIAL - because" in render_terminal(report)
    assert '<property name="gpufleet.run_status" value="partial"/>' in render_junit(report)
    families = {family.name: family for family in text_string_to_metric_families(render_prometheus(report))}
    assert families["gpufleet_audit_info"].samples[0].labels["status"] == "partial"


def test_only_a_complete_run_writes_fleet_wide_series():
    host_findings = {"gpu-1": [critical("gpu-1")]}
    complete = {f.name for f in text_string_to_metric_families(render_prometheus(report_with("complete", findings=host_findings)))}
    partial = {f.name for f in text_string_to_metric_families(render_prometheus(report_with("partial", findings=host_findings)))}
    fleet = {"gpufleet_audit_failed_threshold", "gpufleet_audit_hosts", "gpufleet_fleet_findings",
             "gpufleet_cause_hosts", "gpufleet_audit_last_run_timestamp_seconds"}
    assert fleet <= complete
    assert partial & fleet == set()
    assert {"gpufleet_audit_info", "gpufleet_host_up", "gpufleet_findings", "gpufleet_finding"} <= partial
