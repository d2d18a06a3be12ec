# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpufleet.core.run_folder: create an audit's run folder exclusively before the collection
(docs: plugins/modules/run_folder.py)."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible.plugins.action import ActionBase

from ansible_collections.gpufleet.core.plugins.modules.run_folder import ARGUMENT_SPEC
from ansible_collections.gpufleet.core.plugins.plugin_utils.run_folder import create_run_dir


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False
    _supports_check_mode = True

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars or {})
        _validation, args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)
        facts = {"gpufleet_run_dir": args["path"], "gpufleet_started_at": args["started_at"]}
        try:
            created = create_run_dir(args["path"])
        except (OSError, ValueError) as exc:
            # the facts still name the folder proposed: audit_report tries it again and says why it cannot
            result.update(failed=True, msg="run_folder: %s" % exc, ansible_facts=facts)
            return result
        facts["gpufleet_run_dir"] = created
        result.update(changed=True, path=created, msg="run folder %s" % created, ansible_facts=facts)
        return result
