# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpufleet.core.audit_report: the controller's half of an audit (docs: plugins/modules/audit_report.py)."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
import os

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase

from ansible_collections.gpufleet.core.plugins.module_utils.vocabulary import FIXABLE_ROLES
from ansible_collections.gpufleet.core.plugins.modules.audit_report import ARGUMENT_SPEC
from ansible_collections.gpufleet.core.plugins.plugin_utils.audit.run import (
    accepted_unreachable, host_verdicts, run_audit)
from ansible_collections.gpufleet.core.plugins.plugin_utils.orchestration import orchestration
from ansible_collections.gpufleet.core.plugins.plugin_utils.audit.remediation import (
    compare, fixes_by_host, load_report, render_summary)
from ansible_collections.gpufleet.core.plugins.plugin_utils.reports.terminal import render_terminal
from ansible_collections.gpufleet.core.plugins.plugin_utils.run_folder import create_run_dir, write_atomically
from ansible_collections.gpufleet.core.plugins.plugin_utils.audit.run_summary import show_summary
from ansible_collections.gpufleet.core.plugins.plugin_utils.store.record import settings_for
from ansible_collections.gpufleet.core.plugins.plugin_utils.text_safety import safe_text


def registered_results(hostvars, hosts, name, reached):
    """Each host's registered result, read without templating it again. A host this run did not reach
    (it left the playbook earlier, unreachable or failed) holds only an older audit's result."""
    results = {}
    for host in hosts:
        variables = hostvars.raw_get(host)
        if not reached(host, variables):
            results[host] = {"unreachable": True,
                             "msg": "not reached in this run: the host left the playbook earlier (unreachable or failed)"}
        else:
            results[host] = variables.get(name)
    return results


def existing_run_dir(path):
    """A run folder created before the collection (gpufleet.core.run_folder), as an absolute path; created when
    missing."""
    if os.path.basename(path) in ("", ".", ".."):
        raise ValueError("run folder %r has no name of its own" % path)
    path = os.path.abspath(path)
    os.makedirs(path, exist_ok=True)
    return path


def reached_in_this_run(args, task_vars):
    """reached(host, its variables): by the run marker when one is named, else by the play's active hosts."""
    if args["run_marker_var"]:
        marker, run_dir = args["run_marker_var"], args["run_dir"]
        return lambda host, variables: variables.get(marker) == run_dir
    active = set(task_vars.get("ansible_play_hosts") or ())
    return lambda host, variables: host in active


def run_stats(report, run_dir, host_verdict):
    """The summary handed to ansible-runner and AWX (set_stats): small, flat enough to read in a job view."""
    summary = report["summary"]
    return {
        "run_id": report["run"]["id"],
        "run_status": report["run"]["status"],
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


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False
    _supports_check_mode = True

    def run(self, tmp=None, task_vars=None):
        task_vars = task_vars or {}
        result = super(ActionModule, self).run(tmp, task_vars)
        _validation, args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)
        summary = []
        try:
            result = self.audit(result, args, task_vars, summary)
        except AnsibleActionFail as exc:
            # returned, not raised: a raised error bypasses the task's failed_when, and the playbook turns
            # this failure into "could not do its job" for every host (exit status 4), not a failed host (2)
            result.update(failed=True, msg=getattr(exc, "message", None) or str(exc))
        return show_summary(result, "\n".join(summary), last=args["summary_last"])

    def audit(self, result, args, task_vars, summary):
        """The task result; what the run prints goes to summary."""
        missing = [host for host in args["hosts"] if host not in args["host_policy"]]
        if missing:
            raise AnsibleActionFail("audit_report: no checked policy for %s; run gpufleet.core.policy_check on "
                                    "the same hosts first" % ", ".join(missing[:10]))
        host_policies = {host: args["policies"][args["host_policy"][host]] for host in args["hosts"]}
        results = registered_results(task_vars["hostvars"], args["hosts"], args["result_var"],
                                     reached_in_this_run(args, task_vars))
        scope = {"hosts": args["scope_hosts"], "pattern": args["scope_pattern"], "limit": args["limit"]}
        store = settings_for(args["report_root"], args["store_url"], args["store"],
                             list({id(policy): policy for policy in host_policies.values()}.values()),
                             groups=task_vars.get("groups"))
        try:
            run_dir = create_run_dir(args["run_dir"]) if args["create_run_dir"] else existing_run_dir(args["run_dir"])
            counts = {}
            report, paths, lines = run_audit(results, host_policies, run_dir, args["report_root"],
                                             args["started_at"], args["fail_severity"], scope, store,
                                             orchestration(args["orchestration"]), counts)
        except (OSError, ValueError) as exc:
            raise AnsibleActionFail("audit_report: %s" % exc)

        if len(lines) <= args["host_lines"]:
            summary.extend(lines)
        else:
            summary.append("%d hosts: one line each in %s/hosts.txt" % (len(lines), args["run_dir"]))
        summary.append(render_terminal(report, paths=paths).rstrip("\n"))
        result.update(changed=False, report_dir=run_dir, files=paths, run_status=report["run"]["status"],
                      findings_by_severity=report["summary"]["by_severity"], causes=len(report["causes"]),
                      store=report.get("store"), diagnosed_in_workers=counts["diagnosed_in_workers"],
                      host_fixes=fixes_by_host(report), fixable_roles=list(FIXABLE_ROLES))
        record = None
        not_converged, not_acted = [], {}
        if args["compare_with"]:
            hostvars = task_vars["hostvars"]
            not_converged = [host for host in args["hosts"]
                             if hostvars.raw_get(host).get(args["not_converged_var"]) is True]
            not_acted = {host: str(hostvars.raw_get(host)[args["not_acted_var"]]) for host in args["hosts"]
                         if hostvars.raw_get(host).get(args["not_acted_var"])}
            try:
                record = compare(load_report(args["compare_with"]), report, not_converged, not_acted)
                paths.append(write_atomically(os.path.join(run_dir, "remediation.json"),
                                              json.dumps(record, indent=1) + "\n"))
            except (OSError, ValueError, KeyError) as exc:
                raise AnsibleActionFail("audit_report: cannot compare with %s: %s" % (args["compare_with"], exc))
            summary.append(safe_text(render_summary(record)).rstrip("\n"))
            result["remediation"] = {key: len(record[key]) for key in ("cleared", "remaining", "new")}
            not_converged = record["not_converged"]
        # The task itself succeeds: the per-host verdict task (gpufleet.core.audit_verdict) fails exactly the
        # hosts with findings at or above the fail severity and marks the hosts it could not audit.
        accepted = accepted_unreachable(report["hosts"], host_policies)
        verdicts = host_verdicts(report, accepted, not_converged, not_acted)
        result.update(host_verdicts=verdicts, failed_threshold=report["summary"]["failed_threshold"],
                      stats=run_stats(report, run_dir, verdicts),
                      msg="run %s: %s; reports in %s" % (report["run"]["id"], report["run"]["status"], run_dir))
        return result
