# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The short summary printed at the end of an audit: at most about 30 lines, whatever the fleet size."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import textwrap

import os

from ansible_collections.gpufleet.core.plugins.module_utils.vocabulary import LAYERS, NO_FAILURE, SEVERITIES
from ansible_collections.gpufleet.core.plugins.plugin_utils.reports.since_previous import terminal_lines as history_lines
from ansible_collections.gpufleet.core.plugins.plugin_utils.text_safety import safe_line, safe_text

MAX_CAUSES = 5
MAX_NAMES = 6
MAX_WIDTH = 120


def one_line(value):
    """Host-provided text on a single line, every control, bidi override or lone surrogate escaped
    (\\x1b, \\u202e, \\udcff: see text_safety)."""
    return safe_line(value)


def clip(line, width=MAX_WIDTH):
    return line if len(line) <= width else line[:width - 3] + "..."


def name_list(names, limit=MAX_NAMES):
    """'a, b, c ... and 7 more'."""
    names = list(names)
    shown = ", ".join(one_line(name) for name in names[:limit])
    if len(names) > limit:
        shown += " ... and %d more" % (len(names) - limit)
    return shown


def headline(report):
    hosts = report["summary"]["hosts"]
    return "gpufleet audit %s: %d hosts (%d ok, %d unreachable, %d failed), %d findings" % (
        one_line(report["run"].get("id") or ""), hosts["total"], hosts["ok"], hosts["unreachable"], hosts["failed"],
        len(report["findings"]))


def count_table(report):
    """Layers down, severities across, totals at the right and bottom."""
    by_layer = report["summary"]["by_layer"]
    by_severity = report["summary"]["by_severity"]
    header = ["layer"] + list(SEVERITIES) + ["total"]
    rows = [[layer] + [by_layer[layer][sev] for sev in SEVERITIES] + [sum(by_layer[layer].values())]
            for layer in LAYERS]
    rows.append(["all"] + [by_severity[sev] for sev in SEVERITIES] + [sum(by_severity.values())])
    widths = [max(len(str(row[col])) for row in [header] + rows) for col in range(len(header))]
    lines = []
    for row in [header] + rows:
        cells = [str(row[0]).ljust(widths[0])] + [str(cell).rjust(width) for cell, width in zip(row[1:], widths[1:])]
        lines.append("  " + "  ".join(cells))
    return lines


def cause_lines(causes):
    if not causes:
        return ["Likely causes: none found across hosts"]
    lines = ["Likely causes (%d):" % len(causes)]
    for cause in causes[:MAX_CAUSES]:
        lines += textwrap.wrap("[%s] %s" % (cause["severity"], one_line(cause["summary"])), MAX_WIDTH - 2,
                               initial_indent="  ", subsequent_indent="    ", max_lines=2, placeholder=" ...")
        lines.append(clip("    %d host(s): %s" % (len(cause["hosts"]), name_list(cause["hosts"], 4))))
    if len(causes) > MAX_CAUSES:
        lines.append("  ... and %d more causes (see report.html)" % (len(causes) - MAX_CAUSES))
    return lines


def host_problem_lines(report):
    summary = report["summary"]
    lines = []
    for status in ("unreachable", "failed"):
        if summary[status]:
            lines.append(clip("%s (%d): %s" % (status.capitalize(), len(summary[status]), name_list(summary[status]))))
    return lines


def run_status_line(report):
    run = report["run"]
    status = run.get("status") or "complete"
    reason = run.get("status_reason")
    return clip("Run: %s%s" % (status.upper(), " - %s" % one_line(reason) if reason else ""))


def verdict(report):
    summary = report["summary"]
    threshold = summary["fail_severity"]
    # summary.fail_severity names a real severity even when run.fail_severity is none
    if report["run"].get("fail_severity") == NO_FAILURE or threshold not in SEVERITIES:
        counts = ", ".join("%d %s" % (summary["by_severity"][sev], sev) for sev in SEVERITIES)
        return "Result: NOT JUDGED - fail_severity is none: findings never fail this run (%s)" % counts
    at_or_above = sum(summary["by_severity"][sev] for sev in SEVERITIES[:SEVERITIES.index(threshold) + 1])
    if summary["failed_threshold"]:
        return "Result: FAIL - %d finding(s) at or above %s" % (at_or_above, threshold)
    return "Result: PASS - no finding at or above %s" % threshold


def report_lines(paths, run_dir):
    if paths:
        folder = os.path.dirname(str(paths[0]))
        return ["Reports: %s/ (%s)" % (one_line(folder), ", ".join(one_line(os.path.basename(str(path)))
                                                                   for path in paths))]
    if run_dir:
        return ["Reports: %s" % one_line(run_dir)]
    return []


def render_terminal(report, paths=None, run_dir=None):
    """The summary text; paths (from write_reports) or run_dir (the run folder) say where the full reports are."""
    lines = [clip(headline(report))] + count_table(report)
    lines += cause_lines(report["causes"])
    lines += host_problem_lines(report)
    policy_errors = report["run"].get("policy_errors") or []
    if policy_errors:
        lines.append(clip("Policy errors (%d): %s" % (len(policy_errors), one_line(policy_errors[0]))))
    lines.append(run_status_line(report))
    lines += history_lines(report)
    lines.append(verdict(report))
    lines += report_lines(paths, run_dir)
    # every piece of host text was escaped where it was placed; this catches any line that missed it
    return "\n".join(safe_text(line) for line in lines) + "\n"
