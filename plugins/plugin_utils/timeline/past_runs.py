# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The project's own earlier runs on the timeline: when the hosts were audited and what was found, and the
first time each current finding was seen.

A history is any object with the two methods of RunHistory. ReportFolderHistory reads the run folders under
the report root (report.json of each); the run store plugs in by providing the same two methods (for
example from its first_seen column) and being passed as `history` to build_timeline.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
import os

from ansible_collections.gpufleet.core.plugins.plugin_utils.reports.format import expanded
from ansible_collections.gpufleet.core.plugins.plugin_utils.timeline.events import epoch_of_iso, event

SOURCE = "gpufleet"
CLOCK = "controller clock, UTC (the run's started_at)"
# run folders read, newest first by name: enough for weeks of hourly audits
MAX_RUNS = 500


def finding_key(finding):
    """What makes two runs' findings the same finding: host, rule and GPU."""
    return (finding.get("host"), finding.get("rule"), finding.get("gpu"))


class RunHistory:
    """The interface (the base answers: no history)."""

    def runs(self, hosts, since, until):
        """[{"run_id", "started_at" (UTC ISO), "status", "hosts": {host: {"findings": n, "worst": severity}}}]
        of the runs that started within [since, until] (epoch seconds) and covered any of hosts."""
        return []

    def first_seen(self, findings):
        """{finding_key: UTC ISO time of the earliest run that had it} for the findings given."""
        return {}


class ReportFolderHistory(RunHistory):
    """The run folders under report_root (not following the latest links), except the current one."""

    def __init__(self, report_root, exclude=None):
        self.report_root = report_root
        self.exclude = os.path.realpath(exclude) if exclude else None
        self._reports = None

    def _load(self):
        if self._reports is not None:
            return self._reports
        self._reports = []
        try:
            names = sorted(os.listdir(self.report_root), reverse=True)
        except (IOError, OSError):
            return self._reports
        for name in names:
            path = os.path.join(self.report_root, name)
            if name.startswith(".") or os.path.islink(path) or os.path.realpath(path) == self.exclude:
                continue
            report = _read_report(os.path.join(path, "report.json"))
            if report is not None:
                self._reports.append(report)
            if len(self._reports) >= MAX_RUNS:
                break
        return self._reports

    def runs(self, hosts, since, until):
        wanted = set(hosts)
        found = []
        for report in self._load():
            run = report.get("run") or {}
            started = epoch_of_iso(run.get("started_at"))
            if started is None or not since <= started <= until:
                continue
            covered = {host: _host_summary(entry) for host, entry in (report.get("hosts") or {}).items()
                       if host in wanted and isinstance(entry, dict)}
            if covered:
                found.append({"run_id": run.get("id"), "started_at": run.get("started_at"),
                              "status": run.get("status"), "hosts": covered})
        return sorted(found, key=lambda item: item["started_at"])

    def first_seen(self, findings):
        wanted = {finding_key(finding) for finding in findings}
        earliest = {}
        for report in self._load():
            started = (report.get("run") or {}).get("started_at")
            if epoch_of_iso(started) is None:
                continue
            for finding in report.get("findings") or ():
                key = finding_key(finding) if isinstance(finding, dict) else None
                if key in wanted and (key not in earliest or started < earliest[key]):
                    earliest[key] = started
        return earliest


def _read_report(path):
    try:
        with open(path, encoding="utf-8") as stream:
            report = json.load(stream)
    except (IOError, OSError, ValueError):
        return None
    return expanded(report) if isinstance(report, dict) else None


_SEVERITY_ORDER = ("critical", "warning", "info")


def _host_summary(entry):
    severities = [f.get("severity") for f in entry.get("findings") or () if isinstance(f, dict)]
    worst = next((name for name in _SEVERITY_ORDER if name in severities), None)
    return {"status": entry.get("status"), "findings": len(severities), "worst": worst}


def history_events(history, hosts, window, current_findings, run_id=None):
    """(events, first_seen {key: time}) of the earlier runs and of the current findings' first sightings."""
    found = []
    for run in history.runs(hosts, window["since"], window["until"]):
        for host, summary in sorted(run["hosts"].items()):
            found.append(event(epoch_of_iso(run["started_at"]), host, None, SOURCE, "audit_run",
                               "gpufleet run %s (%s): host %s, %d finding(s)%s" % (
                                   run["run_id"], run["status"], summary["status"], summary["findings"],
                                   ", worst %s" % summary["worst"] if summary["worst"] else ""),
                               CLOCK, "../%s/report.json" % run["run_id"], None, None, run_id=run["run_id"]))
    first = history.first_seen(current_findings)
    for finding in current_findings:
        seen = first.get(finding_key(finding))
        epoch = epoch_of_iso(seen)
        if epoch is None or not window["since"] <= epoch <= window["until"]:
            continue
        found.append(event(epoch, finding["host"], finding.get("layer"), SOURCE, "finding_first_seen",
                           "first seen by gpufleet: %s (%s)" % (finding.get("summary"), finding.get("rule")),
                           CLOCK, None, None, None, gpu=finding.get("gpu"), rule=finding.get("rule")))
    return found, first
