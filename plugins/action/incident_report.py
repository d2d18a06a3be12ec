# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpufleet.core.incident_report: the controller's half of an incident (docs: plugins/modules/incident_report.py)."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible.plugins.action import ActionBase

from ansible_collections.gpufleet.core.plugins.modules.incident_report import ARGUMENT_SPEC
from ansible_collections.gpufleet.core.plugins.plugin_utils.audit.play_results import (
    reached_in_this_run, registered_results)
from ansible_collections.gpufleet.core.plugins.plugin_utils.incident.run import incident_step
from ansible_collections.gpufleet.core.plugins.plugin_utils.audit.run_summary import show_summary


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False
    _supports_check_mode = True

    def run(self, tmp=None, task_vars=None):
        task_vars = task_vars or {}
        result = super(ActionModule, self).run(tmp, task_vars)
        _validation, args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)
        hostvars = task_vars["hostvars"]
        reached = reached_in_this_run(args["run_marker_var"], args["run_marker"], task_vars)
        evidence = registered_results(hostvars, args["hosts"], args["evidence_var"], reached)
        facts = registered_results(hostvars, args["hosts"], args["facts_var"], reached)
        try:
            fields, summary = incident_step(args["run_dir"], args["report_root"], evidence, facts)
        except (OSError, ValueError, KeyError) as exc:
            result.update(failed=True, msg="incident_report: %s" % exc)
            return result
        result.update(fields)
        return show_summary(result, summary)
