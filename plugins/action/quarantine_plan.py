# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpufleet.core.quarantine_plan: the quarantine run's plan (docs: plugins/modules/quarantine_plan.py)."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible.plugins.action import ActionBase

from ansible_collections.gpufleet.core.plugins.modules.quarantine_plan import ARGUMENT_SPEC
from ansible_collections.gpufleet.core.plugins.plugin_utils.quarantine.run import host_values, plan_step

QUERY_VAR = "gpufleet_quarantine_query"


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False
    _supports_check_mode = True

    def run(self, tmp=None, task_vars=None):
        task_vars = task_vars or {}
        result = super(ActionModule, self).run(tmp, task_vars)
        _validation, args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)
        args = dict(args, queries=host_values(task_vars.get("hostvars") or {}, args["hosts"], QUERY_VAR))
        try:
            result.update(plan_step(args, self._task.check_mode))
        except (OSError, ValueError) as exc:
            result.update(failed=True, msg="quarantine_plan: %s" % exc)
            return result
        summary = ", ".join("%s %s" % (action, " ".join(hosts)) for action, hosts in sorted(result["summary"].items()))
        result.update(changed=False, msg="plan of %s: %s" % (result["run_dir"], summary or "no hosts"))
        return result
