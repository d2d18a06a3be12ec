# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The progress of one audit, from ansible-runner's events, and how it is shown: a bar redrawn in place on a
terminal, a few plain lines otherwise (cron mail, journald, a CI log).

Counted from the audit play (the first play of audit.yml): every host with a task event in it is a host of
the run (its first task starts on all of them, so the total is known before any host is contacted); a host
is done once its gpu_facts task returned (ok, failed or unreachable); the verdict task
(gpufleet.core.audit_verdict) says which hosts fail (findings at or above the fail severity) and which were
not audited. The stats event carries the set_stats artifact gpufleet_audit (run id, report folder).
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import shutil
import time

HOST_EVENTS = {"runner_on_ok": "ok", "runner_on_failed": "failed", "runner_on_unreachable": "unreachable",
               "runner_on_skipped": "skipped"}
COLLECT_ACTION = "gpu_facts"
VERDICT_ACTION = "audit_verdict"
REPORT_ACTION = "audit_report"
BAR_WIDTH = 24
# plain output: a line each time this share of the hosts more is done (and for every host that goes wrong)
PLAIN_STEP = 0.1


def action_name(event_data):
    """gpu_facts for gpufleet.core.gpu_facts, however the task spelled it."""
    action = event_data.get("resolved_action") or event_data.get("task_action") or ""
    return action.rsplit(".", 1)[-1]


def elapsed_text(seconds):
    seconds = int(max(seconds, 0))
    hours, rest = divmod(seconds, 3600)
    return "%d:%02d:%02d" % (hours, rest // 60, rest % 60)


class AuditProgress(object):
    """What the events so far say about the run."""

    def __init__(self, clock=time.monotonic):
        self.clock = clock
        self.started = clock()
        self.play = 0
        self.task = None
        self.hosts = set()
        self.collected = {}
        self.verdicts = {}
        self.messages = {}
        self.artifacts = {}
        self.reporting = False
        self.finished = False
        self.interrupted = False

    @property
    def total(self):
        return len(self.hosts)

    @property
    def done(self):
        return len(self.collected)

    def hosts_where(self, outcome):
        return sorted(host for host, value in self.collected.items() if value == outcome)

    @property
    def failed(self):
        return self.hosts_where("failed")

    @property
    def unreachable(self):
        return self.hosts_where("unreachable")

    def verdict_hosts(self, verdict):
        return sorted(host for host, value in self.verdicts.items() if value == verdict)

    def elapsed(self):
        return self.clock() - self.started

    def handle(self, event):
        """Takes one runner event; returns the host it finished, 'phase' for a new phase, 'task' for a new task
        of the audit play, or None."""
        kind = event.get("event")
        data = event.get("event_data") or {}
        if kind == "playbook_on_play_start":
            self.play += 1
            return None
        if kind == "playbook_on_task_start":
            self.task = data.get("task") or data.get("name")
            if action_name(data) == REPORT_ACTION and self.play == 1:
                self.reporting = True
                return "phase"
            return "task" if self.play == 1 else None
        if kind == "playbook_on_stats":
            self.artifacts = data.get("artifact_data") or {}
            self.finished = True
            return "phase"
        if kind == "runner_on_start" and data.get("host") and self.play == 1:
            self.hosts.add(data["host"])
            return None
        if kind in HOST_EVENTS and data.get("host"):
            return self.host_event(HOST_EVENTS[kind], data)
        return None

    def host_event(self, outcome, data):
        host = data["host"]
        if self.play == 1:
            self.hosts.add(host)
        action = action_name(data)
        if action == COLLECT_ACTION and self.play == 1 and host not in self.collected:
            self.collected[host] = "ok" if outcome == "skipped" else outcome
            return host
        if action == VERDICT_ACTION and outcome != "skipped":
            self.verdicts[host] = {"ok": "ok", "failed": "fail", "unreachable": "not_audited"}[outcome]
            message = (data.get("res") or {}).get("msg")
            if outcome != "ok" and message:
                self.messages[host] = str(message)
        return None

    def audit_stats(self):
        """The gpufleet_audit artifact of set_stats (run_id, run_dir, ...), or {} when the run wrote none."""
        return self.artifacts.get("gpufleet_audit") or {}

    def run_dir(self):
        """The run folder the audit wrote its reports in (the artifact's run_dir; report_dir before issue 26), or
        None when it wrote none."""
        stats = self.audit_stats()
        return stats.get("run_dir") or stats.get("report_dir")


def bar_line(progress, width=BAR_WIDTH):
    total = progress.total
    filled = width * progress.done // total if total else 0
    counts = "%d/%s hosts" % (progress.done, total if total else "?")
    phase = "writing reports" if progress.reporting and not progress.finished else (progress.task or "starting")
    if progress.finished:
        phase = "done"
    if progress.interrupted:
        phase = "interrupted"
    return "[%s%s] %s  failed %d  unreachable %d  %s  %s" % (
        "#" * filled, "-" * (width - filled), counts, len(progress.failed), len(progress.unreachable),
        elapsed_text(progress.elapsed()), phase)


def plain_line(progress, host=None):
    text = "gpufleet audit: %d/%s hosts done, %d failed, %d unreachable, %s elapsed" % (
        progress.done, progress.total if progress.total else "?", len(progress.failed), len(progress.unreachable),
        elapsed_text(progress.elapsed()))
    if host is not None and progress.collected.get(host) != "ok":
        text += " (%s: %s)" % (host, progress.collected[host])
    return text


class ProgressDisplay(object):
    """Shows an AuditProgress on a stream: redrawn bar (tty) or plain lines."""

    def __init__(self, stream, tty=None, width=None):
        self.stream = stream
        self.tty = stream.isatty() if tty is None else tty
        self.width = width or shutil.get_terminal_size((100, 24)).columns
        self.last_step = -1
        self.drawn = False
        self.reporting_said = False

    def update(self, progress, what):
        if what is None:
            return
        if self.tty:
            self.draw(bar_line(progress)[:self.width - 1])
        else:
            self.plain(progress, what)

    def draw(self, line):
        self.stream.write("\r\x1b[K" + line)
        self.stream.flush()
        self.drawn = True

    def plain(self, progress, what):
        if what == "task":
            return
        if what == "phase":
            if progress.reporting and not self.reporting_said:
                self.reporting_said = True
                self.write_line(plain_line(progress) + "; diagnosing and writing the reports")
            return
        total = progress.total or 1
        step = int(progress.done / total / PLAIN_STEP)
        went_wrong = progress.collected.get(what) != "ok"
        if went_wrong or step != self.last_step or progress.done == progress.total:
            self.last_step = step
            self.write_line(plain_line(progress, what))

    def write_line(self, line):
        self.stream.write(line + "\n")
        self.stream.flush()

    def finish(self, progress):
        """Ends the bar's line (tty) or writes the last count (plain), finished or interrupted."""
        if self.tty:
            self.draw(bar_line(progress)[:self.width - 1])
            self.stream.write("\n")
        else:
            self.write_line(plain_line(progress) + (", interrupted" if progress.interrupted else ", finished"))
        self.stream.flush()
