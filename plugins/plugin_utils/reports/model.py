# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The audit report as data: hosts, findings, likely causes and the counts every renderer shows.

The shape is a public contract, documented in docs/schema/report.schema.json. Within a major
REPORT_VERSION keys are only added; consumers ignore keys they do not know. 2.0 (docs/report-format.md): on disk
(report_format.disk_document) each finding is whole in the top-level findings and a host entry leaves out its
findings; 1.2 to 1.4 wrote shared values once (positions, per-rule defaults, shared texts by position), and
report_format.expanded reads every version back into this shape. 1.4: a host's inputs (reports/coverage.py).
2.0 also: a host's service state (reports/service.py, quarantine/service_state.py) and its validation, the summary
of its active checks (rules/active_checks.py, validation_summary).
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re

from ansible_collections.gpufleet.core.plugins.module_utils.vocabulary import (
    DEFAULT_FAIL_SEVERITY,
    FAIL_SEVERITIES,
    LAYER_ORDER,
    LAYERS,
    NO_FAILURE as NEVER_FAIL,
    SEVERITIES,
)
from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.findings import severity_rank

REPORT_VERSION = "2.0"
HOST_STATUSES = ("ok", "unreachable", "failed")
# complete: every host of the audit's pattern was targeted; partial: only some (--limit); failed: no
# host's facts could be read. A report built without a status is complete (callers of build_report).
RUN_STATUSES = ("complete", "partial", "failed")
_DIGITS = re.compile(r"([0-9]+)")


def host_sort_key(name):
    """Natural order: node-2 before node-10."""
    return [(0, int(part), "") if _DIGITS.fullmatch(part) else (1, 0, part) for part in _DIGITS.split(str(name))]


def finding_sort_key(finding, host_position):
    """Worst first, then by layer, host (host_position: {host: rank}), rule and GPU."""
    return (
        -severity_rank(finding.get("severity")),
        LAYER_ORDER.get(finding.get("layer"), len(LAYERS)),
        host_position.get(finding.get("host"), len(host_position)),
        str(finding.get("rule")),
        finding.get("gpu") or "",
    )


def same_host_sort_key(finding):
    return (
        -severity_rank(finding.get("severity")),
        LAYER_ORDER.get(finding.get("layer"), len(LAYERS)),
        str(finding.get("rule")),
        finding.get("gpu") or "",
    )


def cause_sort_key(cause):
    """Worst first, then the cause behind the most hosts."""
    return (-severity_rank(cause.get("severity")), -len(cause.get("hosts") or ()), str(cause.get("id")))


def normalize_run(run):
    """A copy of the run record with every documented key present."""
    result = dict(run or {})
    for key in ("id", "started_at", "finished_at", "tool_version"):
        result.setdefault(key, None)
    result["fail_severity"] = result.get("fail_severity") or DEFAULT_FAIL_SEVERITY
    if result["fail_severity"] not in FAIL_SEVERITIES:
        raise ValueError("run fail_severity %r is not one of %s"
                         % (result["fail_severity"], ", ".join(FAIL_SEVERITIES)))
    result["policy_errors"] = list(result.get("policy_errors") or [])
    result["status"] = result.get("status") or "complete"
    if result["status"] not in RUN_STATUSES:
        raise ValueError("run status %r is not one of %s" % (result["status"], ", ".join(RUN_STATUSES)))
    result.setdefault("status_reason", None)
    if result.get("rules_run") is not None:
        result["rules_run"] = sorted(set(result["rules_run"]))
    return result


def host_entry(info, findings):
    info = info or {}
    entry = {
        "status": info.get("status") or "ok",
        "facts_file": info.get("facts_file"),
        "message": info.get("message"),
        "findings": sorted(findings, key=same_host_sort_key),
    }
    for key in ("inputs", "validation"):
        if info.get(key) is not None:
            entry[key] = info[key]
    return entry


def build_hosts(hosts, findings_by_host):
    """One entry per host named by either input; a host known only from its findings counts as ok."""
    names = set(hosts or {}) | set(findings_by_host or {})
    return {
        name: host_entry((hosts or {}).get(name), (findings_by_host or {}).get(name) or [])
        for name in sorted(names, key=host_sort_key)
    }


def empty_counts():
    return {severity: 0 for severity in SEVERITIES}


def count_by_layer(findings):
    counts = {layer: empty_counts() for layer in LAYERS}
    for finding in findings:
        layer_counts = counts.setdefault(finding["layer"], empty_counts())
        layer_counts[finding["severity"]] = layer_counts.get(finding["severity"], 0) + 1
    return counts


def count_by_severity(findings):
    counts = empty_counts()
    for finding in findings:
        counts[finding["severity"]] = counts.get(finding["severity"], 0) + 1
    return counts


def count_by_rule(findings):
    counts = {}
    for finding in findings:
        counts[finding["rule"]] = counts.get(finding["rule"], 0) + 1
    return dict(sorted(counts.items()))


def worst_severity(findings):
    """The most severe severity among the findings, or None when there are none."""
    worst = None
    for finding in findings:
        if worst is None or severity_rank(finding["severity"]) > severity_rank(worst):
            worst = finding["severity"]
    return worst


def count_hosts_by_worst_severity(host_entries):
    """How many hosts have each severity as their worst finding; "none" for hosts without findings."""
    counts = dict(empty_counts(), none=0)
    for entry in host_entries.values():
        counts[worst_severity(entry["findings"]) or "none"] += 1
    return counts


def hosts_with_status(host_entries, status):
    return [name for name, entry in host_entries.items() if entry["status"] == status]


def fails_at(severity, fail_severity):
    """Whether a finding of this severity fails the run under fail_severity (none: nothing fails); the exit
    status, the summary's failed_threshold and junit.xml's failures all ask this."""
    return fail_severity != NEVER_FAIL and severity_rank(severity) >= severity_rank(fail_severity)


def threshold_reached(findings, fail_severity):
    return any(fails_at(finding["severity"], fail_severity) for finding in findings)


def build_summary(host_entries, findings, fail_severity):
    """fail_severity: the run's. Under none the summary names a real severity for the renderers (the default)
    and the threshold is never reached; run.fail_severity keeps none."""
    host_counts = {status: len(hosts_with_status(host_entries, status)) for status in HOST_STATUSES}
    return {
        "by_layer": count_by_layer(findings),
        "by_severity": count_by_severity(findings),
        "by_rule": count_by_rule(findings),
        "hosts": dict(total=len(host_entries), **host_counts),
        "hosts_by_worst_severity": count_hosts_by_worst_severity(host_entries),
        "unreachable": hosts_with_status(host_entries, "unreachable"),
        "failed": hosts_with_status(host_entries, "failed"),
        "fail_severity": DEFAULT_FAIL_SEVERITY if fail_severity == NEVER_FAIL else fail_severity,
        "failed_threshold": threshold_reached(findings, fail_severity),
    }


def build_report(run, hosts, findings_by_host, causes):
    """The report.json document.

    run: {"id", "started_at", "finished_at", "tool_version", "fail_severity", "policy_errors",
    optionally "rules_run": [rule ids that ran]}; hosts: {host: {"status", "facts_file", "message"}};
    findings_by_host: {host: [finding]}; causes: [cause] from correlate().
    """
    run = normalize_run(run)
    host_entries = build_hosts(hosts, findings_by_host)
    host_position = {host: position for position, host in enumerate(host_entries)}
    findings = sorted(
        (finding for entry in host_entries.values() for finding in entry["findings"]),
        key=lambda finding: finding_sort_key(finding, host_position),
    )
    return {
        "report_version": REPORT_VERSION,
        "run": run,
        "hosts": host_entries,
        "findings": findings,
        "causes": sorted(causes or [], key=cause_sort_key),
        "summary": build_summary(host_entries, findings, run["fail_severity"]),
    }
