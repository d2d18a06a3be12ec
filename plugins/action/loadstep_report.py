# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpufleet.core.loadstep_report: the controller's end of loadstep.yml (docs: plugins/modules/loadstep_report.py)."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase

from ansible_collections.gpufleet.core.plugins.modules.loadstep_report import ARGUMENT_SPEC
from ansible_collections.gpufleet.core.plugins.plugin_utils.audit.run_summary import show_summary
from ansible_collections.gpufleet.core.plugins.plugin_utils.loadstep.run import IncompleteRun, run_report


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False
    _supports_check_mode = True

    def run(self, tmp=None, task_vars=None):
        task_vars = task_vars or {}
        result = super(ActionModule, self).run(tmp, task_vars)
        _validation, args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)
        hostvars = task_vars["hostvars"]
        recorded = {host: hostvars.raw_get(host).get(args["result_var"]) for host in args["hosts"]}
        recorded = {host: value for host, value in recorded.items() if isinstance(value, dict)}
        try:
            fields, summary = run_report(recorded, args["report_root"], args["run_dir"], args["started_at"],
                                         bool(self._task.check_mode))
        except IncompleteRun as exc:
            raise AnsibleActionFail("loadstep_report: a recorded run is incomplete: %s" % exc)
        result.update(fields)
        return show_summary(result, summary)
