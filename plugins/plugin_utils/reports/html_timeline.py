# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The timeline view of report.html for an incident: one lane per host on a UTC time axis, then every event
as a table row (time, host, GPU, layer, source, what, the evidence line), events close in time across
sources marked and linked. Plain HTML and CSS, no script: it renders with scripts off too."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import html

from ansible_collections.gpufleet.core.plugins.plugin_utils.text_safety import safe_line

MAX_ROWS = 2000
MAX_MARKS_PER_HOST = 400
STYLE = (
    "#timeline .lanes{margin:8px 0 16px}#timeline .lane{display:flex;align-items:center;margin:4px 0}"
    "#timeline .lane .name{width:16em;overflow:hidden;text-overflow:ellipsis;white-space:nowrap;font-size:12px}"
    "#timeline .axis{position:relative;flex:1;height:18px;background:#eef1f5;border-radius:3px}"
    "#timeline .mark{position:absolute;top:3px;width:6px;height:12px;margin-left:-3px;border-radius:2px;"
    "background:#6b7a90}#timeline .mark.hardware{background:#c0392b}#timeline .mark.driver{background:#8e44ad}"
    "#timeline .mark.workload{background:#d68910}#timeline .mark.scheduling{background:#2874a6}"
    "#timeline .ends{display:flex;justify-content:space-between;font-size:11px;color:#555;margin-left:16em}"
    "#timeline table.events td{vertical-align:top;font-size:12px}#timeline tr.close td{background:#fff4e0}"
    "#timeline td.line{font-family:monospace;white-space:pre-wrap;word-break:break-all}"
)


def esc(value):
    return html.escape(safe_line(value if value is not None else "", 600), quote=True)


def _position(epoch, window):
    span = window["until_epoch"] - window["since_epoch"]
    if epoch is None or span <= 0:
        return None
    return max(0.0, min(100.0, (epoch - window["since_epoch"]) * 100.0 / span))


def lanes(timeline):
    window = timeline.get("window")
    if not window:
        return ""
    rows = []
    for host in sorted(timeline.get("hosts", {})):
        marks = []
        for item in [e for e in timeline["events"] if e["host"] == host][:MAX_MARKS_PER_HOST]:
            left = _position(item["epoch"], window)
            if left is not None:
                marks.append('<a class="mark %s" href="#%s" style="left:%.3f%%" title="%s"></a>' % (
                    esc(item.get("layer") or "none"), esc(item["id"]), left,
                    esc("%s %s" % (item["time"], item["summary"]))))
        rows.append('<div class="lane" data-host="%s"><span class="name">%s</span><div class="axis">%s</div></div>'
                    % (esc(host), esc(host), "".join(marks)))
    return ('<div class="lanes">%s<div class="ends"><span>%s</span><span>%s</span></div></div>'
            % ("".join(rows), esc(window["since"]), esc(window["until"])))


def event_row(item):
    related = item.get("related") or []
    links = " ".join('<a href="#%s">%s</a>' % (esc(other), esc(other)) for other in related)
    evidence = item["evidence"]
    where = "%s:%s" % (evidence.get("file") or "", evidence.get("line") or "") if evidence.get("file") else ""
    return ('<tr id="%s" class="event%s" data-kind="%s" data-layer="%s"><td>%s</td><td>%s</td><td>%s</td>'
            '<td>%s</td><td>%s</td><td>%s</td><td>%s</td><td class="line" title="%s">%s</td><td>%s</td><td>%s</td></tr>'
            % (esc(item["id"]), " close" if related else "", esc(item["kind"]), esc(item.get("layer") or ""),
               esc(item["id"]), esc(item.get("time") or "time unknown"), esc(item["host"]), esc(item.get("gpu") or ""),
               esc(item.get("layer") or ""), esc(item["source"]), esc(item["summary"]), esc(item.get("clock")),
               esc(item.get("line") or ""), esc(where), links))


def sources_table(timeline):
    rows = []
    for host, entry in sorted(timeline.get("hosts", {}).items()):
        if entry.get("status") != "ok":
            rows.append("<tr><td>%s</td><td>all</td><td>%s</td><td></td><td>%s</td></tr>" % (
                esc(host), esc(entry.get("status")), esc(entry.get("why"))))
            continue
        for name, source in sorted(entry["sources"].items()):
            rows.append("<tr><td>%s</td><td>%s</td><td>%s</td><td>%d</td><td>%s</td></tr>" % (
                esc(host), esc(name), esc(source["status"]), source["events"], esc(source.get("why") or source["clock"])))
    return ('<table class="sources"><thead><tr><th>host</th><th>source</th><th>status</th><th>events</th>'
            '<th>clock, or why missing</th></tr></thead><tbody>%s</tbody></table>' % "".join(rows))


def timeline_section(timeline):
    events = timeline.get("events") or []
    shown = events[:MAX_ROWS]
    more = len(events) - len(shown) + (timeline.get("dropped_events") or 0)
    note = '<p class="more">%d more events in timeline.json</p>' % more if more else ""
    window = timeline.get("window") or {}
    return (
        '<style>%s</style><section id="timeline"><h2>Timeline <span class="count">(%d events, %s to %s UTC; '
        '%d pairs within %d s across sources)</span></h2>%s%s'
        '<table class="events"><thead><tr><th>id</th><th>time (UTC)</th><th>host</th><th>GPU</th><th>layer</th>'
        '<th>source</th><th>event</th><th>line</th><th>evidence</th><th>close to</th></tr></thead><tbody>%s</tbody>'
        '</table>%s</section>' % (
            STYLE, len(events), esc(window.get("since")), esc(window.get("until")),
            len(timeline.get("correlations") or []), timeline.get("close_seconds") or 0, lanes(timeline),
            sources_table(timeline), "".join(event_row(item) for item in shown), note))
