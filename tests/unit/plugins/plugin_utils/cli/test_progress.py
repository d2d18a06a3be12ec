"""The gpufleet command's progress, from ansible-runner events recorded in a real `gpufleet audit` run
(tests/fixtures/runner_events/audit_unreachable.json: the demo's gpu-h100-ok-01 and gpu-h100-xid79-02 replayed
locally and a host on a closed ssh port; trimmed to the keys the progress reads)."""

import io
import json
import os

from ansible_collections.gpufleet.core.plugins.plugin_utils.cli.progress import (
    AuditProgress, ProgressDisplay, bar_line, elapsed_text)
from tests.support.schema_check import ROOT

EVENTS = os.path.join(ROOT, "tests", "fixtures", "runner_events",
                      "audit_unreachable.json")


class FakeClock(object):
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def recorded_events():
    with open(EVENTS) as handle:
        return json.load(handle)


def replay(events, progress, display=None, clock=None, step=1.0):
    for event in events:
        if clock is not None:
            clock.now += step
        what = progress.handle(event)
        if display is not None:
            display.update(progress, what)


def test_the_recorded_run_counts_hosts_collections_and_verdicts():
    progress = AuditProgress(clock=FakeClock())
    replay(recorded_events(), progress)
    assert progress.total == 3
    assert progress.done == 3
    assert progress.unreachable == ["down-03"]
    assert progress.failed == []
    assert progress.verdict_hosts("fail") == ["gpu-h100-xid79-02"]
    assert progress.verdict_hosts("not_audited") == ["down-03"]
    assert progress.verdict_hosts("ok") == ["gpu-h100-ok-01"]
    assert "hardware.gpu_lost" in progress.messages["gpu-h100-xid79-02"]
    assert "port 9" in progress.messages["down-03"]
    assert progress.finished and progress.reporting
    assert progress.audit_stats()["report_dir"].startswith("/srv/gpufleet/reports/")
    assert progress.audit_stats()["hosts_not_audited"] == ["down-03"]
    # an artifact written before issue 26 names the run folder report_dir only
    assert "run_dir" not in progress.audit_stats() and progress.run_dir() == progress.audit_stats()["report_dir"]


def test_the_run_folder_is_the_artifacts_run_dir():
    progress = AuditProgress(clock=FakeClock())
    assert progress.run_dir() is None
    progress.artifacts["gpufleet_audit"] = {"run_dir": "/r/20261206T161400Z", "report_dir": "/r/older"}
    assert progress.run_dir() == "/r/20261206T161400Z"


def test_the_total_is_known_before_any_host_is_collected():
    events = recorded_events()
    progress = AuditProgress(clock=FakeClock())
    first_collect = next(i for i, event in enumerate(events)
                         if event["event"] != "runner_on_start"
                         and event["event_data"].get("resolved_action") == "gpufleet.core.gpu_facts"
                         and event["event_data"].get("host"))
    replay(events[:first_collect], progress)
    assert (progress.total, progress.done) == (3, 0)


def test_the_second_play_adds_no_host():
    """audit.yml's second play runs on the whole (limited) inventory: its events do not change the total."""
    events = recorded_events()
    extra = {"event": "runner_on_ok", "event_data": {"host": "elsewhere-99", "task": "x",
                                                     "resolved_action": "gpufleet.core.audit_verdict"}}
    stats = next(i for i, event in enumerate(events) if event["event"] == "playbook_on_stats")
    second_play = {"event": "playbook_on_play_start", "event_data": {"play": "Check that the audit ran"}}
    progress = AuditProgress(clock=FakeClock())
    replay(events[:stats] + [second_play, extra] + events[stats:], progress)
    assert progress.total == 3


def test_a_collection_that_failed_is_counted_as_failed():
    progress = AuditProgress(clock=FakeClock())
    progress.handle({"event": "playbook_on_play_start", "event_data": {}})
    progress.handle({"event": "runner_on_failed", "event_data": {
        "host": "h1", "task_action": "gpufleet.core.gpu_facts", "ignore_errors": True}})
    progress.handle({"event": "runner_on_ok", "event_data": {"host": "h2", "task_action": "gpu_facts"}})
    assert progress.failed == ["h1"] and progress.done == 2 and progress.total == 2


def test_the_bar_on_a_terminal_is_redrawn_in_place():
    clock = FakeClock()
    progress = AuditProgress(clock=clock)
    stream = io.StringIO()
    display = ProgressDisplay(stream, tty=True, width=120)
    replay(recorded_events(), progress, display, clock)
    display.finish(progress)
    text = stream.getvalue()
    frames = text.split("\r\x1b[K")[1:]
    assert text.endswith("\n") and text.count("\n") == 1
    assert frames[0].startswith("[------------------------] 0/? hosts  failed 0  unreachable 0  0:00:0")
    assert "[------------------------] 0/3 hosts  failed 0  unreachable 0  0:00:" in text
    assert "[########----------------] 1/3 hosts  failed 0  unreachable 1" in text
    assert frames[-1].startswith("[########################] 3/3 hosts  failed 0  unreachable 1  0:00:")
    assert frames[-1].rstrip("\n").endswith("done")


def test_plain_lines_when_not_a_terminal():
    clock = FakeClock()
    progress = AuditProgress(clock=clock)
    stream = io.StringIO()
    display = ProgressDisplay(stream, tty=False)
    replay(recorded_events(), progress, display, clock)
    display.finish(progress)
    lines = stream.getvalue().splitlines()
    assert "\r" not in stream.getvalue()
    assert lines[0].startswith("gpufleet audit: 1/3 hosts done, 0 failed, 1 unreachable, ")
    assert lines[0].endswith("(down-03: unreachable)")
    assert any(line.endswith("; diagnosing and writing the reports") for line in lines)
    assert lines[-1].startswith("gpufleet audit: 3/3 hosts done, 0 failed, 1 unreachable, ")
    assert lines[-1].endswith(", finished")


def test_plain_lines_are_few_on_a_big_fleet():
    clock = FakeClock()
    progress = AuditProgress(clock=clock)
    stream = io.StringIO()
    display = ProgressDisplay(stream, tty=False)
    hosts = ["h%04d" % number for number in range(1000)]
    events = [{"event": "playbook_on_play_start", "event_data": {}}]
    events += [{"event": "runner_on_start", "event_data": {"host": host, "task_action": "include_vars"}}
               for host in hosts]
    events += [{"event": "runner_on_ok", "event_data": {"host": host, "task_action": "gpu_facts"}} for host in hosts]
    replay(events, progress, display, clock, step=0.01)
    lines = stream.getvalue().splitlines()
    assert len(lines) == 11
    assert lines[-1].startswith("gpufleet audit: 1000/1000 hosts done")


def test_elapsed_is_hours_minutes_seconds():
    assert elapsed_text(0) == "0:00:00"
    assert elapsed_text(3725.9) == "1:02:05"


def test_the_bar_without_hosts_says_it_does_not_know_the_total():
    progress = AuditProgress(clock=FakeClock())
    assert " 0/? hosts " in bar_line(progress)
