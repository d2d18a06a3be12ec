# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The repair ladder (docs/quarantine.md): which repair a quarantined node gets next. Pure: the loop asks only for
a node that is still out and still needs a repair (a passed step whose re-audit is clean returns the node
instead), and records what it did as a repair event (quarantine/service_state.py)."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

LADDER = ("reset", "reboot", "rma")
RMA = "rma"


def check_arguments(allowed_steps, max_failed_repairs):
    unknown = [step for step in allowed_steps if step not in LADDER]
    if unknown:
        raise ValueError("repair steps %s are not among %s" % (", ".join(map(repr, unknown)), ", ".join(LADDER)))
    if isinstance(max_failed_repairs, bool) or not isinstance(max_failed_repairs, int) or max_failed_repairs < 1:
        raise ValueError("max_failed_repairs must be a whole number of at least 1, not %r" % (max_failed_repairs,))


def next_repair(repairs_tried, allowed_steps, max_failed_repairs):
    """"reset", "reboot", "rma" or None (nothing left to try: the packet is made, or no step is allowed).

    repairs_tried: [{step, result}] of the node's current quarantine, oldest first (a service state's repairs);
    allowed_steps: the steps the policy allows, taken in the ladder's order (reset, reboot, rma) whatever their
    order here; max_failed_repairs: after this many failed repairs the next step is the return-to-vendor packet.
    Steps go up the ladder past the last one tried; when the allowed steps below the packet are used up before
    max_failed_repairs repairs failed, the highest of them is tried again. ValueError for an unknown step or a
    max_failed_repairs below 1."""
    allowed = [step for step in LADDER if step in set(allowed_steps or ())]
    check_arguments(list(allowed_steps or ()), max_failed_repairs)
    tried = [repair.get("step") for repair in repairs_tried or ()]
    if RMA in tried or not allowed:
        return None
    failed = sum(1 for repair in repairs_tried or () if repair.get("result") == "failed")
    repairs = [step for step in allowed if step != RMA]
    packet = RMA if RMA in allowed else None
    if failed >= max_failed_repairs or not repairs:
        return packet
    last = max((LADDER.index(step) for step in tried if step in LADDER), default=-1)
    higher = [step for step in repairs if LADDER.index(step) > last]
    return higher[0] if higher else repairs[-1]
