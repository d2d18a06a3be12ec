# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type


class ModuleDocFragment(object):
    """Where the kernel log is read from: module_utils/args_common.py's kernel_log_spec()."""

    DOCUMENTATION = r"""
options:
  kernel_log_source:
    description:
      - Where kernel log events (Xid, fallen off the bus, API mismatch, NVSwitch errors (SXid)) are read from.
      - V(auto) uses C(journalctl -k), then C(dmesg). V(files) reads O(kernel_log_files).
    type: str
    choices: [auto, journalctl, dmesg, files]
    default: auto
  kernel_log_files:
    description:
      - Log files to read when O(kernel_log_source=files), for example C(/var/log/kern.log) or a saved C(dmesg).
      - Read are classic syslog lines, ISO 8601 times with or without a zone, C(YYYY-MM-DD HH:MM:SS,mmm), RFC 5424,
        C(dmesg --ctime), C(dmesg --decode), raw C(dmesg) and C(/dev/kmsg) records; NVRM lines in any other format
        are counted in C(kernel_log.unplaced_lines) with an entry in C(errors).
    type: list
    elements: path
    default: []
"""
