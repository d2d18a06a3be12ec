# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpufleet.core.audit_verdict: one host's verdict as its task result (docs: plugins/modules/audit_verdict.py).

ansible-playbook exits 2 when a host failed and 4 when a host was unreachable (TaskQueueManager's
RUN_FAILED_HOSTS and RUN_UNREACHABLE_HOSTS; the strategy returns 4 first). A result with unreachable set
counts as unreachable, so "could not audit this host" becomes 4 and "findings" stays 2.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible.plugins.action import ActionBase

from ansible_collections.gpufleet.core.plugins.modules.audit_verdict import ARGUMENT_SPEC
from ansible_collections.gpufleet.core.plugins.plugin_utils.audit.play_results import verdict_result


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False
    _supports_check_mode = True

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars or {})
        _validation, args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)
        result.update(verdict_result(args["verdict"], args["msg"]))
        return result
