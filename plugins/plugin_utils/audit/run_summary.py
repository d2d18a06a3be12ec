# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where a run's summary is printed: when the controller step that wrote the reports ends, or, with the stdout
callback gpufleet.core.audit (ansible.cfg), after the playbook's last task, just before the PLAY RECAP, so that
the hosts' verdicts do not push it out of sight (plugins/callback/audit.py)."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible import constants as C
from ansible.utils.display import Display

SUMMARY_CALLBACK = "gpufleet.core.audit"
# the task result key that hands the summary to the callback
SUMMARY_KEY = "summary_text"

display = Display()


def summary_printed_last():
    """Whether the stdout callback of this run prints the summaries it is handed after the last task."""
    return C.config.get_config_value("DEFAULT_STDOUT_CALLBACK") == SUMMARY_CALLBACK


def show_summary(result, text, last=True):
    """The task result, with text handed to the stdout callback to print last (when last and the callback
    does that), or printed now."""
    if not text:
        return result
    if last and summary_printed_last():
        result[SUMMARY_KEY] = text
    else:
        display.display(text)
    return result
