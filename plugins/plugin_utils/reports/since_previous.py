# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the run store adds to every report: the changes since the previous complete run (new, persisting,
cleared), how long each finding is open, and whether the store was written. Each renderer calls the
function for its format here; a report without a "changes" section (no store) renders as before."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.gpufleet.core.plugins.plugin_utils.reports.format import persisting_identities
from ansible_collections.gpufleet.core.plugins.plugin_utils.text_safety import safe_line

MAX_TERMINAL_CHANGES = 5


def has_changes(report):
    return isinstance(report.get("changes"), dict)


def change_counts(report):
    return (report.get("changes") or {}).get("counts") or {"new": 0, "persisting": 0, "cleared": 0}


def store_kind(url):
    """The store's backend (sqlite, postgresql) from its URL: what a page shared beyond this controller shows,
    never a path, a host or credentials."""
    kind = str(url or "").split(":", 1)[0].split("+", 1)[0]
    return "%s store" % (kind or "unknown")


def store_line(report, where=None):
    """One line about the store: where the run went, or why it did not. where(url): what the line shows of the
    store's URL (default the URL, its password already left out); report.html shows only store_kind."""
    store = report.get("store")
    if not isinstance(store, dict):
        return None
    url = store.get("url")
    shown = where(url) if where else url
    if store.get("status") == "failed":
        error = str(store.get("error"))
        if where and url:
            error = error.replace(str(url), shown)
        return safe_line("Store: NOT WRITTEN (%s) - the reports are complete; the exit status does not change" % error)
    if store.get("status") == "off":
        return "Store: off (gpufleet_store: false)"
    skipped = (store.get("retention") or {}).get("skipped")
    if skipped:
        return safe_line("Store: run written to %s; retention NOT applied: %s" % (shown, skipped))
    return safe_line("Store: run written to %s" % shown)


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


# ----------------------------------------------------------------- prometheus

def prometheus_lines(report, family, sample):
    """Families for gpufleet.prom (family and sample are report_prometheus's builders): the store's state,
    and the counts of new, cleared and persisting findings (complete runs only, like the other fleet-wide
    series). When each finding was first seen is prometheus.py's finding family."""
    if not has_changes(report):
        return []
    store = report.get("store") or {}
    lines = family("gpufleet_store_written", "1 when this run was written to the run store, 0 when the store was "
                   "off or failed (store.error in report.json).",
                   [sample("gpufleet_store_written", [("status", store.get("status") or "")],
                           1 if store.get("status") == "written" else 0)])
    changes = report["changes"]
    if changes.get("status") != "unavailable" and (report["run"].get("status") or "complete") == "complete":
        counts = change_counts(report)
        lines += family("gpufleet_findings_changed", "Findings new, cleared and persisting against the previous "
                        "complete run of the same scope (changes in report.json).",
                        [sample("gpufleet_findings_changed", [("change", kind)], counts[kind])
                         for kind in ("new", "cleared", "persisting")])
    return lines


# ----------------------------------------------------------------- junit

def junit_properties(report):
    """(name, value) pairs for the run's <properties>."""
    if not has_changes(report):
        return []
    counts = change_counts(report)
    return [("gpufleet.store_status", (report.get("store") or {}).get("status") or ""),
            ("gpufleet.changes_against", report["changes"].get("against") or ""),
            ("gpufleet.findings_new", str(counts["new"])),
            ("gpufleet.findings_cleared", str(counts["cleared"])),
            ("gpufleet.findings_persisting", str(counts["persisting"]))]


# ----------------------------------------------------------------- html

MAX_HTML_CHANGES = 200


def _html_rows(entries, esc, limit=MAX_HTML_CHANGES):
    rows = ["<tr><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td></tr>" % (
        esc(entry.get("severity")), esc(entry.get("host")), esc(entry.get("rule")), esc(entry.get("gpu") or ""),
        esc(entry.get("summary") or ""), esc(entry.get("first_seen") or "")) for entry in entries[:limit]]
    if len(entries) > limit:
        rows.append('<tr><td colspan="6">... and %d more (report.json)</td></tr>' % (len(entries) - limit))
    return "".join(rows)


def html_section(report, esc):
    """The "Changes since the previous run" section, shown before everything else: new findings, then
    cleared ones, then the count of persisting ones. esc: report_html's escaping."""
    if not has_changes(report):
        return ""
    changes = report["changes"]
    parts = ['<section id="changes"><h2>Changes since the previous run</h2>']
    store = store_line(report, where=store_kind)
    if store:
        parts.append("<p>%s</p>" % esc(store))
    parts.append("<p>%s</p>" % esc(changes_line(report)))
    head = "<tr><th>severity</th><th>host</th><th>rule</th><th>GPU</th><th>summary</th><th>first seen</th></tr>"
    for label, title in (("new", "New findings"), ("cleared", "Cleared findings")):
        entries = changes.get(label) or []
        if entries:
            parts.append('<h3>%s <span class="count">(%d)</span></h3><table class="changes" id="changes-%s">%s%s</table>'
                         % (title, len(entries), label, head, _html_rows(entries, esc)))
    persisting = change_counts(report)["persisting"]
    if persisting:
        open_before = set(persisting_identities(changes))
        oldest = min((finding.get("first_seen") or "" for finding in report.get("findings") or ()
                      if finding.get("identity") in open_before), default="")
        parts.append("<p>%d findings persist from earlier runs%s.</p>" % (
            persisting, esc(", the oldest open since %s" % oldest) if oldest else ""))
    parts.append("</section>")
    return "".join(parts)
