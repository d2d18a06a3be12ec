# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The nodes' service state in the reports (report.json hosts.<host>.service, docs/quarantine.md "Service
state"): which nodes are out of service, since when, why, and the repairs tried. Each renderer calls the function
for its format here; a report whose hosts have no service state renders as before."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

MAX_SERVICE_HOSTS_LISTED = 500
STATE_LABELS = {"in_service": "in service", "quarantined": "quarantined", "operator_out": "out (operator)"}
STATE_CLASSES = {"in_service": "ok", "quarantined": "critical", "operator_out": "warning"}  # html.py's .sev colours


def service_hosts(report):
    """[(host, service state)] of the report's hosts that have one, out of service first."""
    listed = [(host, entry["service"]) for host, entry in report["hosts"].items() if entry.get("service")]
    return sorted(listed, key=lambda item: item[1]["state"] == "in_service")


def repairs_text(service):
    return ", ".join("%s %s" % (repair["step"], repair["result"]) for repair in service.get("repairs") or ())


def html_section(report, esc):
    """The "Service state" section of report.html (esc: html.py's escaper), or "" when no host has a state."""
    listed = service_hosts(report)
    if not listed:
        return ""
    out = sum(1 for _host, service in listed if service["state"] != "in_service")
    rows = "".join(
        '<tr><td><code>%s</code></td><td><span class="sev %s">%s</span></td><td>%s</td><td>%s</td>'
        '<td>%s</td><td>%s</td><td>%s</td></tr>' % (
            esc(host), esc(STATE_CLASSES.get(service["state"], "none")), esc(STATE_LABELS.get(service["state"], service["state"])),
            esc(service.get("since") or ""), esc(service.get("rule") or ""),
            esc(service.get("reason") or service.get("finding") or ""), esc(service.get("scheduler") or ""),
            esc(repairs_text(service)))
        for host, service in listed[:MAX_SERVICE_HOSTS_LISTED])
    more = ""
    if len(listed) > MAX_SERVICE_HOSTS_LISTED:
        more = '<p class="muted">... and %d more: see hosts.&lt;host&gt;.service in report.json.</p>' % (
            len(listed) - MAX_SERVICE_HOSTS_LISTED)
    return ('<section id="service"><h2>Service state <span class="count">(%d of %d nodes out of service)</span></h2>'
            '<table><thead><tr><th>host</th><th>state</th><th>since</th><th>rule</th><th>why</th><th>scheduler</th>'
            '<th>repairs tried</th></tr></thead><tbody>%s</tbody></table>%s</section>' % (
                out, len(listed), rows, more))


def prometheus_lines(report, family, sample, epoch_seconds):
    """Families for gpufleet.prom (family, sample, epoch_seconds: prometheus.py's): whether each node with a
    service state is in service, since when a quarantined one is out, and the repairs of its current (or last)
    quarantine by step and result. None when no host has a state."""
    listed = service_hosts(report)
    if not listed:
        return []
    in_service = [sample("gpufleet_node_in_service", [("host", host)], service["state"] == "in_service")
                  for host, service in listed]
    since = []
    for host, service in listed:
        moment = epoch_seconds(service.get("since"))
        if service["state"] == "quarantined" and moment is not None:
            since.append(sample("gpufleet_node_quarantined_since_timestamp_seconds",
                                [("host", host), ("rule", service.get("rule") or "")], moment))
    repairs = []
    for host, service in listed:
        counts = {}
        for repair in service.get("repairs") or ():
            counts[(repair["step"], repair["result"])] = counts.get((repair["step"], repair["result"]), 0) + 1
        repairs.extend(sample("gpufleet_node_repairs_total", [("host", host), ("step", step), ("result", result)], n)
                       for (step, result), n in sorted(counts.items()))
    return (family("gpufleet_node_in_service", "1 when the node is in service, 0 when quarantined or taken out by "
                   "an operator (hosts.<host>.service in report.json).", in_service)
            + family("gpufleet_node_quarantined_since_timestamp_seconds",
                     "Unix time a quarantined node was taken out, by the rule that took it out.", since)
            + family("gpufleet_node_repairs_total", "Repairs tried during the node's current (or last) quarantine, "
                     "by step and result.", repairs))
