# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""BMC event log entries (`ipmitool sel elist`): fans, power supplies, temperatures, memory, and what the
BMC saw of the host (watchdog, OS boot, critical interrupts).

The SEL keeps the BMC's own clock, with no time zone. It is read as UTC and, when `ipmitool sel time get`
shows that clock more than CLOCK_SKEW_TOLERANCE seconds away from the host's, moved by the difference; the
clock note of each event says which.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import calendar
import re

from ansible_collections.gpufleet.core.plugins.plugin_utils.timeline.events import event

SOURCE = "bmc"
CLOCK_SKEW_TOLERANCE = 30
_SEL_ID_RE = re.compile(r"^[0-9a-fA-F]+$")
_DATE_TIME_RE = re.compile(r"(\d\d)/(\d\d)/(\d{4})\s*\|?\s*(\d\d):(\d\d):(\d\d)")


def bmc_epoch(text):
    """Epoch seconds of 'MM/DD/YYYY HH:MM:SS' (or the same split by '|'), read as UTC; None otherwise."""
    match = _DATE_TIME_RE.search(text or "")
    if match is None:
        return None
    month, day, year, hour, minute, second = (int(match.group(i)) for i in range(1, 7))
    try:
        return float(calendar.timegm((year, month, day, hour, minute, second, 0, 0, 0)))
    except (OverflowError, ValueError):
        return None


def clock_offset(sel_time_text, host_now):
    """Seconds the BMC's clock is ahead of the host's (sel time get against the host's clock), or None."""
    bmc_now = bmc_epoch(sel_time_text)
    if bmc_now is None or host_now is None:
        return None
    return bmc_now - host_now


def clock_note(offset):
    if offset is None:
        return "BMC clock, read as UTC (its offset to the host is unknown)", 0.0
    if abs(offset) > CLOCK_SKEW_TOLERANCE:
        return ("BMC clock, read as UTC and moved by %+.0f s to the host's clock (sel time get)" % -offset,
                -offset)
    return "BMC clock, read as UTC (within %d s of the host's clock)" % CLOCK_SKEW_TOLERANCE, 0.0


def sel_events(text, host, file_name, offset=None):
    """One event per SEL line: 'id | date | time | sensor | event | direction'."""
    clock, correction = clock_note(offset)
    found = []
    for number, line in enumerate((text or "").splitlines(), 1):
        fields = [field.strip() for field in line.split("|")]
        if len(fields) < 5 or not _SEL_ID_RE.match(fields[0]):
            continue
        epoch = bmc_epoch(line)
        if epoch is not None:
            epoch += correction
        sensor = fields[3]
        description = " ".join(field for field in fields[4:] if field)
        found.append(event(epoch, host, "hardware", SOURCE, "bmc_event", "BMC: %s: %s" % (sensor, description),
                           clock, file_name, number, line, sensor=sensor))
    return found
