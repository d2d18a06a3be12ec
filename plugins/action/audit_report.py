# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpufleet.core.audit_report: the controller's half of an audit (docs: plugins/modules/audit_report.py)."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase

from ansible_collections.gpufleet.core.plugins.modules.audit_report import ARGUMENT_SPEC
from ansible_collections.gpufleet.core.plugins.plugin_utils.audit.play_results import (
    reached_in_this_run, registered_results)
from ansible_collections.gpufleet.core.plugins.plugin_utils.audit.report_step import AuditReportError, report_step
from ansible_collections.gpufleet.core.plugins.plugin_utils.audit.run_summary import show_summary


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
        hostvars = task_vars["hostvars"]
        reached = reached_in_this_run(args["run_marker_var"], args["run_dir"], task_vars)
        results = registered_results(hostvars, args["hosts"], args["result_var"], reached)
        not_converged, not_acted = [], {}
        if args["compare_with"]:
            not_converged = [host for host in args["hosts"]
                             if hostvars.raw_get(host).get(args["not_converged_var"]) is True]
            not_acted = {host: str(hostvars.raw_get(host)[args["not_acted_var"]]) for host in args["hosts"]
                         if hostvars.raw_get(host).get(args["not_acted_var"])}
        try:
            return report_step(result, args, results, task_vars.get("groups"), not_converged, not_acted, summary)
        except AuditReportError as exc:
            raise AnsibleActionFail(str(exc))
