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
from ansible.utils.display import Display

from ansible_collections.gpufleet.core.plugins.modules.audit_report import ARGUMENT_SPEC
from ansible_collections.gpufleet.core.plugins.plugin_utils.audit_run import run_audit
from ansible_collections.gpufleet.core.plugins.plugin_utils.remediation import (
    compare, fixes_by_host, load_report, render_summary)
from ansible_collections.gpufleet.core.plugins.plugin_utils.report_terminal import render_terminal
from ansible_collections.gpufleet.core.plugins.plugin_utils.report_writer import write_atomically
from ansible_collections.gpufleet.core.plugins.plugin_utils.text_safety import safe_text


display = Display()


def registered_results(hostvars, hosts, name, marker, run_dir):
    """Each host's registered result, read without templating it again. A host that did not mark this
    run (it left the playbook earlier, unreachable or failed) holds only an older audit's result."""
    results = {}
    for host in hosts:
        variables = hostvars.raw_get(host)
        if variables.get(marker) != run_dir:
            results[host] = {"unreachable": True,
                             "msg": "not reached in this run: the host left the playbook earlier (unreachable or failed)"}
        else:
            results[host] = variables.get(name)
    return results


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False
    _supports_check_mode = True

    def run(self, tmp=None, task_vars=None):
        task_vars = task_vars or {}
        result = super(ActionModule, self).run(tmp, task_vars)
        _validation, args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)
        missing = [host for host in args["hosts"] if host not in args["host_policy"]]
        if missing:
            raise AnsibleActionFail("audit_report: no checked policy for %s; run gpufleet.core.policy_check on "
                                    "the same hosts first" % ", ".join(missing[:10]))
        host_policies = {host: args["policies"][args["host_policy"][host]] for host in args["hosts"]}
        results = registered_results(task_vars["hostvars"], args["hosts"], args["result_var"],
                                     args["run_marker_var"], args["run_dir"])
        try:
            report, paths, lines = run_audit(results, host_policies, args["run_dir"], args["report_root"],
                                             args["started_at"], args["fail_severity"])
        except (OSError, ValueError) as exc:
            raise AnsibleActionFail("audit_report: %s" % exc)

        if len(lines) <= args["host_lines"]:
            display.display("\n".join(lines))
        else:
            display.display("%d hosts: one line each in %s/hosts.txt" % (len(lines), args["run_dir"]))
        text = render_terminal(report, paths=paths)
        display.display(text)
        result.update(changed=False, report_dir=args["run_dir"], files=paths,
                      findings_by_severity=report["summary"]["by_severity"], causes=len(report["causes"]),
                      host_fixes=fixes_by_host(report))
        record = None
        if args["compare_with"]:
            hostvars = task_vars["hostvars"]
            not_converged = [host for host in args["hosts"]
                             if hostvars.raw_get(host).get(args["not_converged_var"]) is True]
            try:
                record = compare(load_report(args["compare_with"]), report, not_converged)
                paths.append(write_atomically(os.path.join(args["run_dir"], "remediation.json"),
                                              json.dumps(record, indent=1) + "\n"))
            except (OSError, ValueError, KeyError) as exc:
                raise AnsibleActionFail("audit_report: cannot compare with %s: %s" % (args["compare_with"], exc))
            display.display(safe_text(render_summary(record)))
            result["remediation"] = {key: len(record[key]) for key in ("cleared", "remaining", "new")}
        if args["compare_with"] and record["not_converged"]:
            result.update(failed=True, msg="not converged: %s (see %s)" % (
                ", ".join(record["not_converged"]), os.path.join(args["run_dir"], "remediation.json")))
        elif report["summary"]["failed_threshold"]:
            result.update(failed=True, msg="findings at or above %s: see %s"
                          % (report["summary"]["fail_severity"], paths[1] if len(paths) > 1 else args["run_dir"]))
        return result
