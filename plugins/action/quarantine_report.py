# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpufleet.core.quarantine_report: each host's outcome and verdict (docs: plugins/modules/quarantine_report.py)."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible.plugins.action import ActionBase

from ansible_collections.gpufleet.core.plugins.modules.quarantine_report import ARGUMENT_SPEC
from ansible_collections.gpufleet.core.plugins.plugin_utils.quarantine.run import host_values, report_step

OUTCOME_VAR = "gpufleet_quarantine_outcome"


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False
    _supports_check_mode = True

    def run(self, tmp=None, task_vars=None):
        task_vars = task_vars or {}
        result = super(ActionModule, self).run(tmp, task_vars)
        _validation, args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)
        outcomes = host_values(task_vars.get("hostvars") or {}, args["hosts"], OUTCOME_VAR)
        try:
            result.update(report_step(dict(args, outcomes=outcomes), self._task.check_mode))
        except (OSError, ValueError, KeyError) as exc:
            result.update(failed=True, msg="quarantine_report: %s" % exc)
            return result
        result.update(changed=False, msg="%s: exit status %d" % (result["path"], result["exit_status"]))
        return result
