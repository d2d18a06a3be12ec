# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A host's clock against the controller's.

The module stamps its facts with the host's time when the collection starts (collected_at, whole seconds); the
gpu_facts action on the controller knows when it sent the module and when the answer came. A host whose clock
agrees started between the two, so the offset measured is the distance of collected_at from that interval: 0
within it, never more than the clock is really off (the transfer time is not counted against the host)."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import datetime

from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.findings import parse_time

# collected_at is cut to the second: the host's true time is up to this much later
STAMP_RESOLUTION_S = 1.0


def measured_offset(collected_at, sent, answered):
    """Seconds the host's clock is ahead of the controller's (negative: behind), from the host's collected_at and
    the controller's epoch seconds before the module was sent and after its answer; None when collected_at is not
    a time."""
    moment = parse_time(collected_at)
    if moment is None:
        return None
    host = moment.timestamp()
    if host > answered:
        return int(round(host - answered))
    if host + STAMP_RESOLUTION_S < sent:
        return int(round(host + STAMP_RESOLUTION_S - sent))
    return 0


def offset_of(facts):
    """The facts' clock_offset_s as a number, 0 when it was not measured (a replay, older facts)."""
    offset = (facts or {}).get("clock_offset_s")
    return offset if isinstance(offset, (int, float)) and not isinstance(offset, bool) else 0


def on_host_clock(moment, facts):
    """A controller time (aware datetime) as the host's clock read it at that moment: the host's log times and
    collected_at are on its own clock, so windows over them are counted from here."""
    return moment + datetime.timedelta(seconds=offset_of(facts))
