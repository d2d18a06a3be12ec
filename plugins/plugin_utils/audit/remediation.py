# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a remediation run did: the findings of the audit before it against the audit after it."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
import os

from ansible_collections.gpufleet.core.plugins.module_utils.vocabulary import FIXABLE_ROLES, REMEDIATION_ROLES
from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.findings import severity_rank
from ansible_collections.gpufleet.core.plugins.plugin_utils.reports.format import expanded

REMEDIATION_VERSION = "1.2"  # 1.1: not_compared; 1.2: not_acted
# Findings remediate.yml repairs with a role it otherwise leaves to driver_rollout.yml: a kernel module
# and userspace library that differ get the driver role's verified reboot or module reload.
REPAIRED_RULES = {"driver.kernel_userspace_mismatch": "driver"}


def finding_key(finding):
    return (finding["host"], finding["rule"], finding.get("gpu") or "")


def load_report(run_dir):
    """The report of a run folder as it was in memory (report_format.expanded), whatever its 1.x version."""
    with open(os.path.join(run_dir, "report.json")) as handle:
        return expanded(json.load(handle))


def fixes_by_host(report, roles=REMEDIATION_ROLES):
    """{host: [roles]} for the findings of a report that remediate.yml can fix, in the order it runs them."""
    wanted = {}
    for finding in report["findings"]:
        role = REPAIRED_RULES.get(finding["rule"]) or (finding.get("fix") if finding.get("fix") in roles else None)
        if role:
            wanted.setdefault(finding["host"], set()).add(role)
    return {host: [role for role in FIXABLE_ROLES if role in found] for host, found in wanted.items()}


def _brief(finding):
    return {key: finding.get(key) for key in ("host", "rule", "layer", "severity", "gpu", "summary", "fix")}


def not_in_both(before, after):
    """Hosts one of the two runs did not audit at all (a --limit, another pattern): their findings are compared
    with nothing, so they are neither cleared, remaining nor new."""
    return set(before["hosts"]) ^ set(after["hosts"])


def compare(before, after, not_converged=(), not_acted=None):
    """The remediation record: cleared, remaining (with why), and new findings; not_compared: the findings of
    hosts only one of the two runs audited. not_acted: {host: message} of the hosts remediate.yml refused to act
    on (plugin_utils/acting_target.py)."""
    not_acted = dict(not_acted or {})
    outside = not_in_both(before, after)
    before_keys = {finding_key(f): f for f in before["findings"] if f["host"] not in outside}
    after_keys = {finding_key(f): f for f in after["findings"] if f["host"] not in outside}
    unread_after = {host for host, entry in after["hosts"].items() if entry["status"] != "ok"}
    not_converged = set(not_converged) | (unread_after & set(before["hosts"]))
    # a finding of a host the second audit could not read is not cleared: nobody looked
    cleared = [_brief(before_keys[key]) for key in sorted(before_keys)
               if key not in after_keys and key[0] not in unread_after]
    remaining = []
    for key in sorted(before_keys):
        if key not in after_keys and key[0] not in unread_after:
            continue
        entry = _brief(after_keys.get(key) or before_keys[key])
        if entry["host"] in not_acted:
            entry["why"] = "no role acted on this host: the run refused it (not_acted in remediation.json says why)"
        elif entry["host"] in not_converged:
            entry["why"] = "the host was not converged (its remediation failed or it was unreachable)"
        elif entry["fix"] in REMEDIATION_ROLES or entry["rule"] in REPAIRED_RULES:
            entry["why"] = "the %s role ran but the finding remains: see the run's output" % entry["fix"]
        elif entry["fix"]:
            entry["why"] = "fixed by the %s role, which remediate.yml does not run (use driver_rollout.yml)" % entry["fix"]
        else:
            entry["why"] = "no role fixes this: it needs a person (%s)" % (
                (after_keys.get(key) or before_keys[key]).get("action") or "see report")
        remaining.append(entry)
    new = [_brief(after_keys[key]) for key in sorted(after_keys) if key not in before_keys]
    remaining.sort(key=lambda f: (-severity_rank(f["severity"]), f["host"], f["rule"]))
    return {
        "remediation_version": REMEDIATION_VERSION,
        "before": before["run"]["id"],
        "after": after["run"]["id"],
        "not_converged": sorted(not_converged),
        "not_acted": {host: not_acted[host] for host in sorted(not_acted)},
        "cleared": cleared,
        "remaining": remaining,
        "new": new,
        "not_compared": not_compared(before, after, outside),
    }


def not_compared(before, after, outside):
    """The findings of the hosts in outside, each with why it was not compared."""
    entries = []
    for report, other in ((before, after), (after, before)):
        for finding in sorted(report["findings"], key=finding_key):
            if finding["host"] in outside:
                entry = _brief(finding)
                entry["why"] = "run %s did not audit %s" % (other["run"]["id"], finding["host"])
                entries.append(entry)
    return entries


def render_summary(record, limit=12):
    lines = ["Remediation %s -> %s: %d finding(s) cleared, %d remain, %d new"
             % (record["before"], record["after"], len(record["cleared"]), len(record["remaining"]),
                len(record["new"]))]
    for title, entries in (("Cleared", record["cleared"]), ("Remaining", record["remaining"]),
                           ("New", record["new"])):
        for finding in entries[:limit]:
            line = "  %s: %s %s%s" % (title.lower(), finding["host"], finding["rule"],
                                      " " + finding["gpu"] if finding.get("gpu") else "")
            if finding.get("why"):
                line += " - " + finding["why"]
            lines.append(line)
        if len(entries) > limit:
            lines.append("  ... and %d more %s (remediation.json)" % (len(entries) - limit, title.lower()))
    if record.get("not_compared"):
        lines.append("Not compared: %d finding(s) of hosts only one of the two runs audited (%s)" % (
            len(record["not_compared"]), ", ".join(sorted({entry["host"] for entry in record["not_compared"]}))))
    if record["not_converged"]:
        lines.append("Not converged: %s" % ", ".join(record["not_converged"]))
    if record.get("not_acted"):
        lines.append("Not acted on (refused, see above): %s" % ", ".join(record["not_acted"]))
    return "\n".join(lines)
