# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""bench only: wall time of each task, from its start to the next task's start (or the playbook's end),
written as JSON to $GPUFLEET_TASK_TIMES. Used by bench/audit_bench.py --task-times."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
import os
import time

from ansible.plugins.callback import CallbackBase

DOCUMENTATION = r"""
name: gpufleet_task_times
type: aggregate
short_description: bench only, wall time per task
description: [Writes the wall time of each task to the file named in GPUFLEET_TASK_TIMES.]
requirements: [enabled in callbacks_enabled]
"""


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "gpufleet_task_times"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self):
        super().__init__()
        self._tasks = []
        self._current = None

    def _close(self):
        if self._current is not None:
            name, started = self._current
            self._tasks.append({"name": name, "seconds": round(time.perf_counter() - started, 3)})
            self._current = None

    def v2_playbook_on_task_start(self, task, is_conditional):
        self._close()
        self._current = (task.get_name(), time.perf_counter())

    def v2_playbook_on_handler_task_start(self, task):
        self.v2_playbook_on_task_start(task, False)

    def v2_playbook_on_stats(self, stats):
        self._close()
        path = os.environ.get("GPUFLEET_TASK_TIMES")
        if path:
            with open(path, "w") as handle:
                json.dump(self._tasks, handle, indent=1)
