# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""fault-log.md: the incident written down in the method's template, readable by someone who was not there.

Window, symptoms, hosts and GPUs affected; per layer what was checked and found, with the evidence files;
likely causes ranked with their evidence; recommended next actions; and the sections a person fills in
(actions taken, result, regression test after the fix)."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import collections

from ansible_collections.gpufleet.core.plugins.module_utils.vocabulary import LAYERS, SEVERITIES
from ansible_collections.gpufleet.core.plugins.plugin_utils.reports.html_validation import check_details
from ansible_collections.gpufleet.core.plugins.plugin_utils.text_safety import safe_line

MAX_EVENTS_PER_LAYER = 25
MAX_FINDINGS_PER_LAYER = 50
CHECK_FAILED = ("failed", "error", "timeout")
KIND_WORDS = {
    "xid": "Xid", "sxid": "NVSwitch error (SXid)", "fallen_off_bus": "GPU fallen off the bus",
    "api_mismatch": "driver API mismatch",
    "pcie_aer": "PCIe AER error", "oom_kill": "OOM kill", "service_start": "service start",
    "service_stop": "service stop", "service_failed": "service failure", "service_restart": "service restart",
    "service_exit": "service process exit", "service_log": "service error line", "bmc_event": "BMC event",
    "package_install": "package install", "package_upgrade": "package upgrade",
    "package_downgrade": "package downgrade", "package_remove": "package removal", "boot": "boot",
    "boot_end": "end of a boot", "audit_run": "earlier gpufleet run", "finding_first_seen": "finding first seen",
}
SYMPTOM_KINDS = ("xid", "sxid", "fallen_off_bus", "api_mismatch", "pcie_aer", "oom_kill", "service_failed",
                 "service_restart", "service_exit", "service_log", "bmc_event", "boot", "package_install",
                 "package_upgrade", "package_downgrade", "package_remove")


def md(value):
    """One line of text that Markdown shows as it is: no table pipes, no HTML."""
    text = safe_line(value if value is not None else "", 300)
    for character in ("\\", "|", "<", ">", "`", "*", "_", "[", "]"):
        text = text.replace(character, "\\" + character)
    return text


def code(value):
    """A code span that also sits safely in a table cell (a pipe is escaped, as GitHub's tables read it)."""
    return "`%s`" % safe_line(value if value is not None else "", 300).replace("`", "'").replace("|", "\\|")


def section(title, lines):
    return ["", "## %s" % title, ""] + list(lines)


# ---------------------------------------------------------------------- the parts


def window_lines(timeline, report):
    window = timeline.get("window") or {}
    lines = ["- From **%s** to **%s** (UTC)." % (window.get("since") or "?", window.get("until") or "?"),
             "- Run %s, audit status %s; every time below is UTC, with each source's clock in timeline.json."
             % (code(report["run"].get("id")), report["run"].get("status"))]
    for host, entry in sorted(timeline.get("hosts", {}).items()):
        if entry.get("status") != "ok":
            lines.append("- %s: no evidence could be collected (%s)." % (md(host), md(entry.get("why"))))
    return lines


def _event_counts(events):
    counts = collections.OrderedDict()
    for item in events:
        if item["kind"] in SYMPTOM_KINDS:
            key = (item["host"], item["kind"])
            counts.setdefault(key, []).append(item)
    return counts


def symptom_lines(timeline, report):
    lines = []
    for (host, kind), items in _event_counts(timeline["events"]).items():
        first, last = items[0].get("time") or "time unknown", items[-1].get("time") or "time unknown"
        when = "at %s" % first if len(items) == 1 else "from %s to %s" % (first, last)
        lines.append("- %s: %d %s %s, e.g. %s" % (
            md(host), len(items), KIND_WORDS.get(kind, kind), when, md(items[0]["summary"])))
    by_severity = report["summary"]["by_severity"]
    lines.append("- The audit of the same run: %s." % ", ".join(
        "%d %s" % (by_severity.get(severity, 0), severity) for severity in SEVERITIES))
    if len(lines) == 1:
        lines.insert(0, "- No Xid, OOM kill, service failure, BMC event, package change or reboot in the window.")
    return lines


def affected_lines(timeline, report):
    lines = ["| host | audit | GPUs with events or findings | events in the window | findings (critical/warning/info) |",
             "|---|---|---|---|---|"]
    for host in sorted(timeline.get("hosts", {})):
        entry = report["hosts"].get(host) or {}
        findings = entry.get("findings") or []
        gpus = sorted({str(item["gpu"]) for item in timeline["events"] if item["host"] == host and item.get("gpu")}
                      | {str(f["gpu"]) for f in findings if f.get("gpu") is not None})
        severities = collections.Counter(f["severity"] for f in findings)
        lines.append("| %s | %s | %s | %d | %s |" % (
            md(host), md(entry.get("status", "not audited")), md(", ".join(gpus) or "none"),
            sum(1 for item in timeline["events"] if item["host"] == host),
            "/".join(str(severities.get(severity, 0)) for severity in SEVERITIES)))
    return lines


def _evidence_of_layer(manifests, layer):
    rows = []
    for host, (dir_name, manifest) in sorted(manifests.items()):
        for entry in manifest.get("files") or ():
            if entry.get("layer") == layer:
                rows.append((host, dir_name, entry))
    return rows


def checked_lines(manifests, layer, report):
    lines = ["Checked:", ""]
    rules = [rule for rule in report["run"].get("rules_run", []) if rule.split(".", 1)[0] == layer]
    lines.append("- the audit's %d %s rules on the facts (facts/<host>.json)" % (len(rules), layer))
    for host, dir_name, entry in _evidence_of_layer(manifests, layer):
        where = "evidence/%s/%s" % (dir_name, entry["file"]) if entry.get("file") else "nothing kept"
        status = entry.get("status")
        why = "" if status == "ok" else ": %s" % md(entry.get("why"))
        lines.append("- %s: %s, %s (%s%s)" % (md(host), code(entry.get("command")), code(where), status, why))
    return lines


def finding_lines(report, manifests, layer, first_seen):
    findings = [f for f in report["findings"] if f["layer"] == layer and f["host"] in manifests]
    if not findings:
        return ["", "Findings: none in this layer."]
    lines = ["", "Findings:", ""]
    for finding in findings[:MAX_FINDINGS_PER_LAYER]:
        dir_name = manifests[finding["host"]][0]
        files = ["evidence/%s/facts.json" % dir_name] + [
            "evidence/%s/%s" % (dir_name, entry["file"]) for _h, _d, entry in _evidence_of_layer(
                {finding["host"]: manifests[finding["host"]]}, layer) if entry.get("status") == "ok" and entry.get("file")]
        seen = first_seen.get((finding["host"], finding["rule"], finding.get("gpu")))
        lines.append("- **%s** %s%s: %s (%s; %s). Evidence: %s" % (
            finding["severity"], md(finding["host"]), " GPU %s" % md(finding["gpu"]) if finding.get("gpu") else "",
            md(finding["summary"]), code(finding["rule"]),
            "first seen by gpufleet %s" % seen if seen else "not seen by an earlier run under the report folder",
            ", ".join(code(name) for name in files[:6])))
    if len(findings) > MAX_FINDINGS_PER_LAYER:
        lines.append("- ... and %d more in report.json" % (len(findings) - MAX_FINDINGS_PER_LAYER))
    return lines


def validation_lines(report, manifests):
    """The incident's active checks that failed or were refused, one line each with their figures (report.json
    hosts.<host>.validation); none when no check failed."""
    lines = []
    for host, (dir_name, _manifest) in sorted(manifests.items()):
        validation = (report["hosts"].get(host) or {}).get("validation") or {}
        where = code("evidence/%s/validation.json" % dir_name)
        if validation.get("refused"):
            lines.append("- %s: refused, no check ran: %s (%s)" % (md(host), md(validation["refused"].get("reason")), where))
        for name, check in sorted((validation.get("checks") or {}).items()):
            if check.get("status") in CHECK_FAILED:
                lines.append("- %s: %s %s: %s (%s)" % (md(host), code(name), check["status"],
                                                       md("; ".join(check_details(name, check))), where))
    return ["", "Active checks that failed:", ""] + lines if lines else []


def layer_event_lines(timeline, layer):
    events = [item for item in timeline["events"] if item.get("layer") == layer]
    if not events:
        return ["", "Events on the timeline: none in this layer."]
    lines = ["", "Events on the timeline:", ""]
    for item in events[:MAX_EVENTS_PER_LAYER]:
        lines.append("- %s %s %s: %s (%s, line %s)" % (
            item.get("time") or "time unknown", md(item["host"]), md(KIND_WORDS.get(item["kind"], item["kind"])),
            md(item["summary"]), code(item["evidence"].get("file")), item["evidence"].get("line") or "?"))
    if len(events) > MAX_EVENTS_PER_LAYER:
        lines.append("- ... and %d more in timeline.json" % (len(events) - MAX_EVENTS_PER_LAYER))
    return lines


def layer_lines(timeline, report, manifests):
    first_seen = {(item["host"], item["rule"], item["gpu"]): item["first_seen"] for item in timeline.get("first_seen", [])}
    lines = []
    for layer in LAYERS:
        lines += ["", "### %s" % layer, ""]
        lines += checked_lines(manifests, layer, report)
        if layer == "hardware":
            lines += validation_lines(report, manifests)
        lines += finding_lines(report, manifests, layer, first_seen)
        lines += layer_event_lines(timeline, layer)
    return lines


# ---------------------------------------------------------------------- causes and actions

TIMELINE_HYPOTHESES = (
    # (first kind, second kind, layer, title, action, score[, link: "process" or "time" only])
    ("bmc_event", "xid", "hardware", "A BMC event (power, fans, temperature) seconds before a GPU error",
     "Read the BMC event and the PSU/fan state; check the server's power feeds and cooling before replacing the GPU.", 90),
    ("bmc_event", "fallen_off_bus", "hardware", "A BMC event seconds before a GPU fell off the bus",
     "Check power supplies, risers and cooling; a power event explains a GPU lost from the bus.", 95),
    ("pcie_aer", "xid", "hardware", "PCIe AER errors next to a GPU error",
     "Check the link (lspci -vvv evidence: LnkSta, AER), reseat the GPU or riser, compare with its peers.", 80),
    ("xid", "service_restart", "workload", "A service restarted right after an Xid in its process",
     "Look up the Xid in the catalog: an application Xid (13, 31, 43) is the service's bug; a hardware Xid is the GPU's.",
     85, "process"),
    ("xid", "service_exit", "workload", "A service process ended right after an Xid in its process",
     "Look up the Xid in the catalog and read the service's journal around it.", 84, "process"),
    ("xid", "service_restart", "workload", "A service restarted within seconds of an Xid",
     "Read the service's journal around the Xid: a service that uses the GPU fails with it; one that does not is "
     "a coincidence.", 60, "time"),
    ("xid", "service_failed", "workload", "A service failed within seconds of an Xid",
     "Read the service's journal around the Xid: a service that uses the GPU fails with it; one that does not is "
     "a coincidence.", 60, "time"),
    ("package_upgrade", "api_mismatch", "driver", "Driver packages changed without a reboot: API mismatch",
     "Reboot the host (or reload the kernel module) so the kernel module matches the libraries.", 88),
    ("package_install", "api_mismatch", "driver", "Driver packages installed without a reboot: API mismatch",
     "Reboot the host (or reload the kernel module) so the kernel module matches the libraries.", 88),
)
OOM_HYPOTHESIS = ("workload", "Host memory ran out: the OOM killer killed a service process",
                  "Lower the workers per GPU or the batch size, or raise the service's memory limit; compare the "
                  "service's memory with the host's (facts: processes, memory).", 70)


def timeline_hypotheses(timeline):
    by_id = {item["id"]: item for item in timeline["events"]}
    found = {}
    for pair in timeline.get("correlations", []):
        first, second = (by_id.get(event_id) for event_id in pair["events"])
        if first is None or second is None:
            continue
        for kind_a, kind_b, layer, title, action, score, *link in TIMELINE_HYPOTHESES:
            if (first["kind"], second["kind"]) == (kind_a, kind_b) and (not link or link[0] == pair.get("link")):
                entry = found.setdefault(title, {"title": title, "layer": layer, "action": action, "score": score,
                                                 "evidence": []})
                entry["evidence"].append((first, second, pair["why"]))
    ooms = [item for item in timeline["events"] if item["kind"] == "oom_kill"]
    if ooms:
        layer, title, action, score = OOM_HYPOTHESIS
        found[title] = {"title": title, "layer": layer, "action": action, "score": score,
                        "evidence": [(item, None, "%d OOM kill(s) in the window" % len(ooms)) for item in ooms[:5]]}
    return sorted(found.values(), key=lambda entry: (-entry["score"], entry["title"]))


def _event_ref(item):
    return "%s %s %s (%s line %s)" % (item.get("time") or "?", md(item["host"]), md(item["summary"]),
                                      code(item["evidence"].get("file")), item["evidence"].get("line") or "?")


def cause_lines(timeline, report):
    lines = []
    rank = 0
    for cause in report.get("causes") or ():
        rank += 1
        lines.append("%d. **%s** (%s, from the audit's correlation across hosts): %s" % (
            rank, md(cause.get("id")), cause.get("layer"), md(cause.get("summary"))))
        lines.append("   - Evidence: hosts %s; %s" % (md(", ".join(cause.get("hosts") or [])),
                                                      code(str(cause.get("evidence"))[:200])))
    for hypothesis in timeline_hypotheses(timeline):
        rank += 1
        lines.append("%d. **%s** (%s, from the timeline)" % (rank, md(hypothesis["title"]), hypothesis["layer"]))
        for first, second, why in hypothesis["evidence"][:3]:
            lines.append("   - %s%s; %s" % (_event_ref(first), " then %s" % _event_ref(second) if second else "", md(why)))
    critical = [f for f in report["findings"] if f["severity"] == "critical" and f["host"] in timeline["hosts"]]
    for finding in critical[:10]:
        rank += 1
        lines.append("%d. **%s** on %s (%s, a critical finding): %s" % (
            rank, md(finding["rule"]), md(finding["host"]), finding["layer"], md(finding["summary"])))
    return lines or ["No likely cause: no correlation across hosts, no related events and no critical finding."]


def action_lines(timeline, report, manifests):
    actions = []
    for cause in report.get("causes") or ():
        actions.append(cause.get("action"))
    actions += [hypothesis["action"] for hypothesis in timeline_hypotheses(timeline)]
    for severity in SEVERITIES:
        actions += [f["action"] for f in report["findings"] if f["severity"] == severity and f["host"] in manifests]
    missing = sorted({entry.get("command") for _d, manifest in manifests.values() for entry in manifest.get("files") or ()
                      if entry.get("status") in ("missing", "failed", "timed_out")})
    if missing:
        actions.append("Fill the gaps in the evidence (see manifest.json for why each is missing): %s"
                       % ", ".join(missing[:8]))
    unique = list(collections.OrderedDict((action, None) for action in actions if action))
    return ["%d. %s" % (number, md(action)) for number, action in enumerate(unique[:20], 1)] or ["Nothing to do."]


def evidence_lines(manifests):
    lines = ["| host | file | command | status | bytes | sha256 | why |", "|---|---|---|---|---|---|---|"]
    for host, (dir_name, manifest) in sorted(manifests.items()):
        if manifest.get("status") != "ok":
            lines.append("| %s | | | %s | | | %s |" % (md(host), manifest.get("status"), md(manifest.get("why"))))
            continue
        for entry in manifest.get("files") or ():
            lines.append("| %s | %s | %s | %s | %s | %s | %s |" % (
                md(host), code("evidence/%s/%s" % (dir_name, entry["file"])) if entry.get("file") else "",
                code(entry.get("command")), entry.get("status"), entry.get("size"),
                (entry.get("sha256") or "")[:16], md(entry.get("why") or (entry.get("cut") or {}).get("kept") or "")))
        lines.append("| %s | %s | | archive | | | every file above and manifest.json |" % (
            md(host), code("evidence/%s/%s" % (dir_name, manifest.get("archive")))))
    return lines


def render_fault_log(report, timeline, manifests, generated_at):
    """manifests: {host: (evidence folder name, manifest)}."""
    hosts = ", ".join(sorted(timeline.get("hosts", {}))) or "none"
    lines = ["# Fault log: incident %s" % md(report["run"].get("id")), "",
             "Hosts: %s. Written by gpufleet `incident.yml` at %s (UTC). The raw evidence is in `evidence/<host>/` "
             "(manifest.json, one archive per host), every event on one time axis in `timeline.json` and in the "
             "timeline of `report.html`, every finding in `report.json`." % (md(hosts), generated_at)]
    lines += section("Window", window_lines(timeline, report))
    lines += section("Symptoms", symptom_lines(timeline, report))
    lines += section("Hosts and GPUs affected", affected_lines(timeline, report))
    lines += section("Layers: what was checked, what was found", layer_lines(timeline, report, manifests))
    lines += section("Likely causes, ranked", cause_lines(timeline, report))
    lines += section("Recommended next actions", action_lines(timeline, report, manifests))
    lines += section("Evidence collected", evidence_lines(manifests))
    lines += section("Actions taken", ["_To fill in: what was done, by whom, when (UTC), on which hosts and GPUs._"])
    lines += section("Result", ["_To fill in: what changed after the actions; did the symptoms stop?_"])
    lines += section("Regression test after the fix", [
        "_To fill in: the check that shows the fix holds (for example `ansible-playbook audit.yml -l HOSTS` with no "
        "finding of the rules above, and the load that failed before, run again)._"])
    return "\n".join(lines) + "\n"
