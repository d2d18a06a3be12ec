# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
name: audit
type: stdout
short_description: Ansible's default output, with each host's audit verdict on one line and the run's summary last
version_added: 1.1.0
description:
  - The stdout callback of this project's playbooks (C(stdout_callback = gpufleet.core.audit) in C(ansible.cfg)).
    It prints what C(ansible.builtin.default) prints, with two differences.
  - "A host's verdict from M(gpufleet.core.audit_verdict) is one line, C(failed: [host] why) for a host with findings
    at or above the fail severity and C(unreachable: [host] why) for a host the run could not audit, instead of an
    error block that quotes the task's source for each host. The task results, the PLAY RECAP and the exit
    status are the same as with C(ansible.builtin.default)."
  - The summaries that the collection's controller steps hand to it (M(gpufleet.core.audit_report),
    M(gpufleet.core.incident_report), M(gpufleet.core.loadstep_report)) are printed after the playbook's last task,
    just before the PLAY RECAP, in the order the steps ran. With any other stdout callback those steps print their
    summaries as they run.
author:
  - gpufleet contributors (!UNKNOWN)
extends_documentation_fragment:
  - default_callback
  - result_format_callback
requirements:
  - set as the stdout callback in ansible.cfg
"""

from ansible import constants as C
from ansible.plugins.callback.default import CallbackModule as DefaultCallbackModule

from ansible_collections.gpufleet.core.plugins.plugin_utils.audit.run_summary import SUMMARY_CALLBACK, SUMMARY_KEY

COLLECTION_PREFIX = "gpufleet.core."
VERDICT_ACTION = COLLECTION_PREFIX + "audit_verdict"


def is_verdict(result):
    return result.task.resolved_action == VERDICT_ACTION


class CallbackModule(DefaultCallbackModule):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "stdout"
    CALLBACK_NAME = SUMMARY_CALLBACK

    def __init__(self):
        super(CallbackModule, self).__init__()
        self._summaries = []

    def v2_runner_on_ok(self, result):
        self._keep_summary(result)
        super(CallbackModule, self).v2_runner_on_ok(result)

    def v2_runner_on_failed(self, result, ignore_errors=False):
        self._keep_summary(result)
        if is_verdict(result):
            self._verdict_line(result, "failed", C.COLOR_ERROR, ignore_errors)
        else:
            super(CallbackModule, self).v2_runner_on_failed(result, ignore_errors)

    def v2_runner_on_unreachable(self, result):
        if is_verdict(result):
            self._verdict_line(result, "unreachable", C.COLOR_UNREACHABLE, result.task.ignore_unreachable)
        else:
            super(CallbackModule, self).v2_runner_on_unreachable(result)

    def v2_playbook_on_stats(self, stats):
        if self._summaries:
            self._display.display("\n" + "\n".join(self._summaries))
        self._summaries = []
        super(CallbackModule, self).v2_playbook_on_stats(stats)

    def _keep_summary(self, result):
        """Takes the summary out of a collection step's result (each callback has its own copy of the result),
        to print it last."""
        if not (result.task.resolved_action or "").startswith(COLLECTION_PREFIX):
            return
        text = result.result.pop(SUMMARY_KEY, None)
        if text:
            self._summaries.append(text)

    def _verdict_line(self, result, outcome, color, ignoring):
        if self._last_task_banner != result.task._uuid:
            self._print_task_banner(result.task)
        self._handle_warnings(result.result)
        self._display.display("%s: [%s] %s" % (outcome, self.host_label(result), result.result.get("msg", "")),
                              color=color, stderr=self.get_option("display_failed_stderr"))
        if ignoring:
            self._display.display("...ignoring", color=C.COLOR_SKIP)
