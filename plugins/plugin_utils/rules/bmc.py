# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Hardware-layer rules on the chassis, from the BMC's facts (bmc): power supplies and their redundancy,
fans, inlet temperature against thresholds.inlet_temperature_c, critical event-log records."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import datetime

from ansible_collections.gpufleet.core.plugins.module_utils.args_common import WINDOW_HOURS
from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.findings import parse_time, rule
from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.host_clock import offset_of

CRITICAL_STATUSES = ("cr", "nr", "lcr", "lnr", "ucr", "unr")
LOST_STATES = ("lost", "non_redundant")
# event-log records kept in a finding's evidence
MAX_EVIDENCE_EVENTS = 10


def _bmc(ctx):
    bmc = ctx.facts.get("bmc")
    return bmc if isinstance(bmc, dict) and bmc.get("status") in ("complete", "partial") else None


@rule("hardware.bmc_power_redundancy", "hardware", "critical",
      "A power supply failed or lost its input, or the power supplies lost their redundancy (BMC)")
def power_redundancy(ctx):
    bmc = _bmc(ctx)
    if bmc is None:
        return ()
    failed = [psu for psu in bmc.get("power_supplies") or () if psu.get("failed") or psu.get("ac_lost")]
    groups = [item for item in bmc.get("redundancy") or () if item.get("group") == "power_supply"]
    lost = [item for item in groups if item.get("state") in LOST_STATES]
    degraded = [item for item in groups if item.get("state") == "degraded"]
    if not (failed or lost or degraded):
        return ()
    parts = ["%s: %s" % (psu["name"], ", ".join(psu.get("states") or ["failed"])) for psu in failed]
    parts += ["%s: %s" % (item["name"], item.get("text") or item.get("state")) for item in lost + degraded]
    severity = "critical" if failed or lost else "warning"
    return [ctx.finding(
        None, "Power supplies without redundancy: %s" % "; ".join(parts),
        {"failed_supplies": failed, "redundancy": groups, "power_draw_w": bmc.get("power_draw_w")},
        "Replace or reconnect the failed power supply (check its input feed); until then one more failure powers "
        "the node off, and GPUs at peak may be power-braked. Drain the node if it runs jobs that cannot be lost.",
        severity=severity)]


@rule("hardware.bmc_fan", "hardware", "critical",
      "A chassis fan failed or stopped (critical), or runs below its non-critical threshold (warning) (BMC)")
def fans(ctx):
    bmc = _bmc(ctx)
    if bmc is None:
        return ()
    failed = [fan for fan in bmc.get("fans") or () if fan.get("failed")]
    slow = [fan for fan in bmc.get("fans") or () if fan.get("slow") and not fan.get("failed")]
    if not (failed or slow):
        return ()
    described = ["%s %s (%s)" % (fan["name"], _speed(fan), fan.get("status")) for fan in failed + slow]
    return [ctx.finding(
        None, "%s: %s" % ("Failed fans" if failed else "Slow fans", "; ".join(described)),
        {"failed": failed, "slow": slow, "inlet_temperature_c": bmc.get("inlet_temperature_c")},
        "Replace the fan; GPUs behind it heat up and throttle first under load (see their temperature and "
        "clock event reasons).", severity="critical" if failed else "warning")]


def _speed(fan):
    if fan.get("rpm") is not None:
        return "%g RPM" % fan["rpm"]
    if fan.get("percent") is not None:
        return "%g%%" % fan["percent"]
    return "no reading"


@rule("hardware.bmc_inlet_temperature", "hardware", "warning",
      "Inlet (ambient) temperature above thresholds.inlet_temperature_c (critical when the BMC says critical)")
def inlet_temperature(ctx):
    bmc = _bmc(ctx)
    limit = ctx.thresholds.get("inlet_temperature_c")
    if bmc is None or limit is None or bmc.get("inlet_temperature_c") is None:
        return ()
    inlet = bmc["inlet_temperature_c"]
    if inlet <= limit:
        return ()
    statuses = [item.get("status") for item in bmc.get("temperatures") or () if item.get("celsius") == inlet]
    critical = any(status in CRITICAL_STATUSES for status in statuses)
    return [ctx.finding(
        None, "Inlet temperature %g C is above the policy's %g C" % (inlet, limit),
        {"inlet_temperature_c": inlet, "limit_c": limit, "exhaust_temperature_c": bmc.get("exhaust_temperature_c"),
         "bmc_status": statuses[0] if statuses else None},
        "Check the room and the rack: cooling, blanking panels, hot-aisle recirculation. GPUs fed hot air reach "
        "their slowdown temperature and throttle at peak load.", severity="critical" if critical else None)]


def _in_window(event, cutoff):
    moment = parse_time(event.get("time"))
    return moment is None or moment >= cutoff


def _bmc_ahead_of_host(ctx, bmc):
    """Seconds the BMC's clock (its records' times) is ahead of the host's (ctx.now): clock_offset_s is measured
    against the host in band, against the controller over LAN."""
    offset = bmc.get("clock_offset_s")
    if not isinstance(offset, int) or isinstance(offset, bool):
        return 0
    return offset - offset_of(ctx.facts) if bmc.get("source") == "lan" else offset


@rule("hardware.bmc_event_log", "hardware", "critical",
      "Critical records in the BMC event log within thresholds.xid_window_hours (warning when all were deasserted)")
def event_log(ctx):
    bmc = _bmc(ctx)
    sel = (bmc or {}).get("sel")
    if not sel:
        return ()
    cutoff = ctx.now + datetime.timedelta(seconds=_bmc_ahead_of_host(ctx, bmc),
                                          hours=-(ctx.thresholds.get("xid_window_hours") or WINDOW_HOURS))
    critical = [event for event in sel.get("events") or ()
                if event.get("severity") == "critical" and event.get("asserted") and _in_window(event, cutoff)]
    if not critical:
        return ()
    still_open = [event for event in critical if not event.get("cleared")]
    shown = (still_open or critical)[-MAX_EVIDENCE_EVENTS:]
    names = sorted({"%s: %s" % (event["sensor"], event["event"]) for event in shown})
    return [ctx.finding(
        None, "%d critical BMC event-log record(s)%s: %s" % (
            len(critical), "" if still_open else " (all deasserted since)", "; ".join(names)),
        {"events": shown, "still_asserted": len(still_open), "critical_in_window": len(critical),
         "clock_offset_s": bmc.get("clock_offset_s")},
        "Read the records with their times (UTC) beside the host's Xid events: a power or bus fault at the time of "
        "an Xid points at the chassis, not the GPU. Fix the part the record names and clear the log "
        "(ipmitool sel clear) once it is handled.", severity=None if still_open else "warning")]
