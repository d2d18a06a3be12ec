# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Reboots from the journal's boot list (`journalctl --list-boots --utc`): each boot's first entry is when
the host came up, the boot before it ended at its last entry."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import calendar
import re

from ansible_collections.gpufleet.core.plugins.plugin_utils.timeline.events import event

SOURCE = "boots"
CLOCK = "host clock, UTC (journalctl --list-boots --utc)"
_BOOT_RE = re.compile(r"^\s*(-?\d+)\s+([0-9a-f]{32})\s+(.*)$")
_TIME_RE = re.compile(r"(\d{4})-(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d) (UTC|GMT)")


def parse_boots(text):
    """[(index, boot id, first epoch, last epoch)] in the list's order (oldest first)."""
    boots = []
    for line in (text or "").splitlines():
        match = _BOOT_RE.match(line)
        if match is None:
            continue
        times = [calendar.timegm(tuple(int(part) for part in stamp[:6]) + (0, 0, 0))
                 for stamp in _TIME_RE.findall(match.group(3))]
        if len(times) >= 2:
            boots.append((int(match.group(1)), match.group(2), float(times[0]), float(times[1]), line))
    return boots


def boot_events(text, host, file_name):
    found = []
    lines = (text or "").splitlines()
    boots = parse_boots(text)
    for position, (index, boot_id, first, _last, line) in enumerate(boots):
        number = lines.index(line) + 1
        if position > 0:
            previous = boots[position - 1]
            found.append(event(previous[3], host, "driver", SOURCE, "boot_end",
                               "last journal entry of boot %s (%d) before the reboot" % (previous[1][:8], previous[0]),
                               CLOCK, file_name, lines.index(previous[4]) + 1, previous[4], boot_id=previous[1]))
            summary = "host booted: boot %s (%d) began" % (boot_id[:8], index)
        else:
            summary = "host booted: boot %s (%d) began (the earliest boot the journal keeps)" % (boot_id[:8], index)
        found.append(event(first, host, "driver", SOURCE, "boot", summary, CLOCK, file_name, number, line,
                           boot_id=boot_id))
    return found
