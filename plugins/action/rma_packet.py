# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpufleet.core.rma_packet: write a node's return-to-vendor packet (docs: plugins/modules/rma_packet.py)."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible.plugins.action import ActionBase

from ansible_collections.gpufleet.core.plugins.modules.rma_packet import ARGUMENT_SPEC
from ansible_collections.gpufleet.core.plugins.plugin_utils.quarantine.rma_packet import rma_packet_task


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False
    _supports_check_mode = True

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars or {})
        _validation, args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)
        result.update(rma_packet_task(args, check_mode=bool(self._task.check_mode)))
        return result
