# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The controller's part of one audit: facts files, diagnosis, correlation and the four reports."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import datetime
import json
import os

from ansible_collections.gpufleet.core.plugins.plugin_utils.correlate import correlate
from ansible_collections.gpufleet.core.plugins.plugin_utils.diagnose import diagnose_fleet, rules_run
from ansible_collections.gpufleet.core.plugins.plugin_utils.findings import SEVERITIES, severity_rank
from ansible_collections.gpufleet.core.plugins.plugin_utils.host_summary import collection_status, summary_line
from ansible_collections.gpufleet.core.plugins.plugin_utils.report_model import build_report
from ansible_collections.gpufleet.core.plugins.plugin_utils.report_writer import write_atomically, write_reports

TOOL_VERSION = "0.1.0"
NO_FAILURE = "none"


def utc_now():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def host_status(host, result, facts_dir):
    """(status record for the report, facts or None); writes the host's facts file."""
    status = collection_status(result)
    if status != "ok":
        message = " ".join(str((result or {}).get("msg") or "no result from the host").split())
        return {"status": status, "facts_file": None, "message": message}, None
    facts = result["ansible_facts"]["gpufleet"]
    path = os.path.join(facts_dir, "%s.json" % host)
    # compact: indenting makes the encoder several times slower, and a fleet writes thousands of these
    # (jq . facts/<host>.json reads one); no fsync per file, the reports written after them are durable
    write_atomically(path, json.dumps(facts, sort_keys=True, separators=(",", ":")) + "\n", durable=False)
    return {"status": "ok", "facts_file": os.path.join("facts", os.path.basename(path)), "message": None}, facts


def strictest_fail_severity(policies):
    """The lowest report.fail_severity of the policies in play ('none' only when all say so)."""
    chosen = [policy["report"]["fail_severity"] for policy in policies]
    failing = [severity for severity in chosen if severity != NO_FAILURE]
    if not failing:
        return NO_FAILURE if chosen else "critical"
    return min(failing, key=severity_rank)


def run_audit(results, host_policies, run_dir, report_root, started_at, fail_severity=None):
    """results: {host: registered gpu_facts result}; host_policies: {host: effective policy}.

    Returns (report, written paths, per-host summary lines).
    """
    facts_dir = os.path.join(run_dir, "facts")
    os.makedirs(facts_dir, exist_ok=True)
    statuses, facts_by_host = {}, {}
    for host in sorted(results):
        statuses[host], facts_by_host[host] = host_status(host, results[host], facts_dir)

    findings = diagnose_fleet(facts_by_host, host_policies)
    causes = correlate(facts_by_host, findings, host_policies)
    distinct = list({id(policy): policy for policy in host_policies.values()}.values())
    if fail_severity is None:
        fail_severity = strictest_fail_severity(distinct)
    allowed = SEVERITIES + (NO_FAILURE,)
    if fail_severity not in allowed:
        raise ValueError("fail_severity must be one of %s, not %r" % (", ".join(allowed), fail_severity))
    run = {
        "id": os.path.basename(os.path.normpath(run_dir)),
        "started_at": started_at,
        "finished_at": utc_now(),
        "tool_version": TOOL_VERSION,
        # the report counts a threshold only among real severities; 'none' is checked here
        "fail_severity": "critical" if fail_severity == NO_FAILURE else fail_severity,
        "policy_errors": [],
        "rules_run": rules_run(distinct),
    }
    report = build_report(run, statuses, findings, causes)
    if fail_severity == NO_FAILURE:
        report["summary"]["failed_threshold"] = False
        report["run"]["fail_severity"] = NO_FAILURE
    lines = [summary_line(host, results[host]) for host in sorted(results)]
    write_atomically(os.path.join(run_dir, "hosts.txt"), "\n".join(lines) + "\n")
    paths = write_reports(report, run_dir, report_root)
    return report, paths, lines
