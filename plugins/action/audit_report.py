# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpufleet.core.audit_report: the controller's half of an audit (docs: plugins/modules/audit_report.py)."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase
from ansible.utils.display import Display

from ansible_collections.gpufleet.core.plugins.modules.audit_report import ARGUMENT_SPEC
from ansible_collections.gpufleet.core.plugins.plugin_utils.audit_run import run_audit
from ansible_collections.gpufleet.core.plugins.plugin_utils.report_terminal import render_terminal


display = Display()


def registered_results(hostvars, hosts, name):
    """Each host's registered result, read without templating it again."""
    results = {}
    for host in hosts:
        variables = hostvars.raw_get(host)
        results[host] = variables.get(name) if name in variables else None
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
        results = registered_results(task_vars["hostvars"], args["hosts"], args["result_var"])
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
                      findings_by_severity=report["summary"]["by_severity"], causes=len(report["causes"]))
        if report["summary"]["failed_threshold"]:
            result.update(failed=True, msg="findings at or above %s: see %s"
                          % (report["summary"]["fail_severity"], paths[1] if len(paths) > 1 else args["run_dir"]))
        return result
