# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The audit's report step on the controller (the action gpufleet.core.audit_report calls report_step with the
hosts' registered results): the run folder, run_audit (audit/run.py), the comparison with an earlier run after a
remediation, each host's verdict and the summary handed to ansible-runner and AWX."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
import os

from ansible_collections.gpufleet.core.plugins.module_utils.vocabulary import FIXABLE_ROLES
from ansible_collections.gpufleet.core.plugins.plugin_utils.audit.remediation import (
    compare, fixes_by_host, load_report, render_summary)
from ansible_collections.gpufleet.core.plugins.plugin_utils.audit.run import (
    accepted_unreachable, host_verdicts, run_audit)
from ansible_collections.gpufleet.core.plugins.plugin_utils.orchestration import orchestration
from ansible_collections.gpufleet.core.plugins.plugin_utils.reports.terminal import render_terminal
from ansible_collections.gpufleet.core.plugins.plugin_utils.reports.textfile import publish_textfile, textfile_line
from ansible_collections.gpufleet.core.plugins.plugin_utils.run_folder import (
    create_run_dir, existing_run_dir, write_atomically)
from ansible_collections.gpufleet.core.plugins.plugin_utils.store.record import settings_for
from ansible_collections.gpufleet.core.plugins.plugin_utils.text_safety import safe_text


class AuditReportError(Exception):
    """The report step could not do its job; the message says why (the audit is "not done", exit status 4)."""


def run_stats(report, run_dir, host_verdict):
    """The summary handed to ansible-runner and AWX (set_stats): small, flat enough to read in a job view."""
    summary = report["summary"]
    return {
        "run_id": report["run"]["id"],
        "run_status": report["run"]["status"],
        "run_dir": run_dir,
        # the run folder under its name before issue 26, for AWX jobs and templates that read it
        "report_dir": run_dir,
        "report_version": report["report_version"],
        "fail_severity": summary["fail_severity"],
        "failed_threshold": summary["failed_threshold"],
        "findings_by_severity": summary["by_severity"],
        "hosts": summary["hosts"],
        "hosts_failing": sorted(host for host, item in host_verdict.items() if item["verdict"] == "fail"),
        "hosts_not_audited": sorted(host for host, item in host_verdict.items() if item["verdict"] == "not_audited"),
        "causes": [cause["id"] for cause in report["causes"]],
        "orchestration": report["run"].get("orchestration"),
    }


def host_policies_of(args):
    """{host: effective policy} from policy_check's host_policy and policies; AuditReportError naming the hosts
    without one."""
    missing = [host for host in args["hosts"] if host not in args["host_policy"]]
    if missing:
        raise AuditReportError("audit_report: no checked policy for %s; run gpufleet.core.policy_check on "
                               "the same hosts first" % ", ".join(missing[:10]))
    return {host: args["policies"][args["host_policy"][host]] for host in args["hosts"]}


def report_step(result, args, results, groups=None, not_converged=(), not_acted=None, summary=None):
    """Fills the task's result (in place, returned) for the audit_report arguments args and {host: registered
    gpu_facts result}; groups: the inventory's groups (the store's group baselines); not_converged, not_acted: the
    hosts a remediation marked (read only with compare_with); summary: a list that gets what the run prints.
    AuditReportError when the run folder, the reports or the comparison cannot be written."""
    summary = [] if summary is None else summary
    not_acted = not_acted or {}
    host_policies = host_policies_of(args)
    scope = {"hosts": args["scope_hosts"], "pattern": args["scope_pattern"], "limit": args["limit"]}
    store = settings_for(args["report_root"], args["store_url"], args["store"],
                         list({id(policy): policy for policy in host_policies.values()}.values()), groups=groups)
    try:
        run_dir = create_run_dir(args["run_dir"]) if args["create_run_dir"] else existing_run_dir(args["run_dir"])
        counts = {}
        report, paths, lines = run_audit(results, host_policies, run_dir, args["report_root"],
                                         args["started_at"], args["fail_severity"], scope, store,
                                         orchestration(args["orchestration"]), counts,
                                         compress=args["compress_report"])
    except (OSError, ValueError) as exc:
        raise AuditReportError("audit_report: %s" % exc)

    if len(lines) <= args["host_lines"]:
        summary.extend(lines)
    else:
        summary.append("%d hosts: one line each in %s/hosts.txt" % (len(lines), run_dir))
    summary.append(render_terminal(report, paths=paths).rstrip("\n"))
    if args.get("textfile_dir"):
        result["textfile"] = publish_textfile(report, run_dir, args["textfile_dir"], args.get("run_kind") or "audit")
        summary.append(textfile_line(result["textfile"]))
    result.update(changed=False, run_dir=run_dir, report_dir=run_dir, files=paths, run_status=report["run"]["status"],
                  findings_by_severity=report["summary"]["by_severity"], causes=len(report["causes"]),
                  store=report.get("store"), diagnosed_in_workers=counts["diagnosed_in_workers"],
                  host_fixes=fixes_by_host(report), fixable_roles=list(FIXABLE_ROLES))
    if args["compare_with"]:
        try:
            record = compare(load_report(args["compare_with"]), report, list(not_converged), not_acted)
            paths.append(write_atomically(os.path.join(run_dir, "remediation.json"),
                                          json.dumps(record, indent=1) + "\n"))
        except (OSError, ValueError, KeyError) as exc:
            raise AuditReportError("audit_report: cannot compare with %s: %s" % (args["compare_with"], exc))
        summary.append(safe_text(render_summary(record)).rstrip("\n"))
        result["remediation"] = {key: len(record[key]) for key in ("cleared", "remaining", "new")}
        not_converged = record["not_converged"]
    else:
        not_converged, not_acted = [], {}
    # The task itself succeeds: the per-host verdict task (gpufleet.core.audit_verdict) fails exactly the
    # hosts with findings at or above the fail severity and marks the hosts it could not audit.
    accepted = accepted_unreachable(report["hosts"], host_policies)
    verdicts = host_verdicts(report, accepted, not_converged, not_acted)
    result.update(host_verdicts=verdicts, failed_threshold=report["summary"]["failed_threshold"],
                  stats=run_stats(report, run_dir, verdicts),
                  msg="run %s: %s; reports in %s" % (report["run"]["id"], report["run"]["status"], run_dir))
    return result
