# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpufleet.core.driver_rollout: the controller's steps of a driver rollout (docs: modules/driver_rollout.py)."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible.plugins.action import ActionBase
from ansible.utils.display import Display

from ansible_collections.gpufleet.core.plugins.modules.driver_rollout import ARGUMENT_SPEC, REQUIRED_IF
from ansible_collections.gpufleet.core.plugins.plugin_utils.rollout import run as rollout

display = Display()


def show_deprecations(validation):
    """What a module's AnsibleModule says of a deprecated option or alias (report_dir), said here: an action
    plugin's validation only collects it."""
    for deprecation in validation._deprecations:  # pylint: disable=protected-access
        display.deprecated(deprecation["msg"], version=deprecation.get("version"), date=deprecation.get("date"),
                           collection_name=deprecation.get("collection_name"))


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False
    _supports_check_mode = True

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars or {})
        validation, args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC, required_if=REQUIRED_IF)
        show_deprecations(validation)
        try:
            outcome = rollout.rollout_step(args, bool(self._play_context.check_mode))
        except (rollout.RolloutError, OSError) as exc:
            result.update(failed=True, msg="driver_rollout(%s): %s" % (args["step"], exc))
            return result
        result.update(outcome, changed=False)
        if args["step"] == "plan":
            # serial: is templated before any host of the play runs, so the batches reach it as a fact
            # of localhost (the task delegates its facts there); nothing changes it afterwards.
            result["ansible_facts"] = {"gpufleet_driver_batches": outcome["batches"]}
        return result
