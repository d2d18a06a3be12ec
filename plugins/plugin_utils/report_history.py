# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the run store adds to every report: the changes since the previous complete run (new, persisting,
cleared), how long each finding is open, and whether the store was written. Each renderer calls the
function for its format here; a report without a "changes" section (no store) renders as before."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import datetime

from ansible_collections.gpufleet.core.plugins.plugin_utils.findings import parse_time
from ansible_collections.gpufleet.core.plugins.plugin_utils.text_safety import safe_line

MAX_TERMINAL_CHANGES = 5


def has_changes(report):
    return isinstance(report.get("changes"), dict)


def change_counts(report):
    return (report.get("changes") or {}).get("counts") or {"new": 0, "persisting": 0, "cleared": 0}


def store_line(report):
    """One line about the store: where the run went, or why it did not."""
    store = report.get("store")
    if not isinstance(store, dict):
        return None
    if store.get("status") == "failed":
        return safe_line("Store: NOT WRITTEN (%s) - the reports are complete; the exit status does not change"
                         % store.get("error"))
    if store.get("status") == "off":
        return "Store: off (gpufleet_store: false)"
    return safe_line("Store: run written to %s" % store.get("url"))


def changes_line(report):
    changes = report.get("changes") or {}
    if changes.get("status") == "unavailable":
        return "Changes: unknown (no store to compare with)"
    counts = change_counts(report)
    if changes.get("status") == "first_run":
        return "Changes: first run of this scope in the store (%d findings, all new)" % counts["new"]
    return safe_line("Changes since %s: %d new, %d cleared, %d persisting" % (
        changes.get("against"), counts["new"], counts["cleared"], counts["persisting"]))


def change_text(entry):
    where = entry.get("host") or ""
    if entry.get("gpu"):
        where += " " + entry["gpu"]
    return safe_line("[%s] %s %s" % (entry.get("severity"), entry.get("rule"), where))


def terminal_lines(report, limit=MAX_TERMINAL_CHANGES):
    """Lines for the terminal summary: the store, then the counts and the first new and cleared findings."""
    if not has_changes(report):
        return []
    lines = [line for line in (store_line(report), changes_line(report)) if line]
    changes = report["changes"]
    for label in ("new", "cleared"):
        entries = changes.get(label) or []
        for entry in entries[:limit]:
            lines.append("  %s: %s" % (label, change_text(entry)))
        if len(entries) > limit:
            lines.append("  ... and %d more %s (report.json changes.%s)" % (len(entries) - limit, label, label))
    return lines


def age_seconds(first_seen, now):
    moment = parse_time(first_seen)
    if moment is None or now is None:
        return None
    return max(0.0, (now - moment).total_seconds())


def report_time(report):
    run = report.get("run") or {}
    return parse_time(run.get("finished_at")) or parse_time(run.get("started_at")) or datetime.datetime.now(
        datetime.timezone.utc)
