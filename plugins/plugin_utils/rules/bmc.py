# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Hardware-layer rules on the chassis, from the BMC's facts (bmc): power supplies and their redundancy,
fans and their redundancy, liquid-cooling leak detectors, inlet temperature against thresholds.inlet_temperature_c,
critical event-log records."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import datetime

from ansible_collections.gpufleet.core.plugins.module_utils.args_common import WINDOW_HOURS
from ansible_collections.gpufleet.core.plugins.module_utils.redfish_chassis import is_leaking
from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.findings import parse_time, rule
from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.host_clock import offset_of

CRITICAL_STATUSES = ("cr", "nr", "lcr", "lnr", "ucr", "unr")
# redundancy states (bmc.redundancy[].state) of a group that no longer has its spare
NOT_REDUNDANT_STATES = ("lost", "non_redundant", "degraded")
# event-log records kept in a finding's evidence
MAX_EVIDENCE_EVENTS = 10


def _bmc(ctx):
    bmc = ctx.facts.get("bmc")
    return bmc if isinstance(bmc, dict) and bmc.get("status") in ("complete", "partial") else None


@rule("hardware.bmc_power_redundancy", "hardware", "critical",
      "A power supply failed or lost its input (critical), is degraded or out of service, or the power supplies "
      "are not redundant (warning) (BMC)")
def power_redundancy(ctx):
    bmc = _bmc(ctx)
    if bmc is None:
        return ()
    supplies = bmc.get("power_supplies") or ()
    failed = [psu for psu in supplies if psu.get("failed") or psu.get("ac_lost")]
    degraded = [psu for psu in supplies if (psu.get("predictive_failure") or psu.get("offline")) and psu not in failed]
    groups = [item for item in bmc.get("redundancy") or () if item.get("group") == "power_supply"]
    not_redundant = [item for item in groups if item.get("state") in NOT_REDUNDANT_STATES]
    if not (failed or degraded or not_redundant):
        return ()
    parts = ["%s: %s" % (psu["name"], ", ".join(psu.get("states") or ["failed"])) for psu in failed + degraded]
    parts += ["%s: %s" % (item["name"], item.get("text") or item.get("state")) for item in not_redundant]
    return [ctx.finding(
        None, "%s: %s" % ("Power supply failed" if failed else "Power supplies at risk", "; ".join(parts)),
        {"failed_supplies": failed, "degraded_supplies": degraded, "redundancy": groups,
         "power_draw_w": bmc.get("power_draw_w")},
        "Replace or reconnect the failed, degraded or disabled power supply (check its input feed); until the "
        "supplies are redundant again one more failure powers the node off, and GPUs at peak may be power-braked. "
        "Drain the node if it runs jobs that cannot be lost.",
        severity="critical" if failed else "warning")]


@rule("hardware.bmc_fan", "hardware", "critical",
      "A chassis fan failed or stopped (critical), runs below its non-critical threshold, gives no reading, or the "
      "fans lost their redundancy (warning) (BMC)")
def fans(ctx):
    bmc = _bmc(ctx)
    if bmc is None:
        return ()
    every = bmc.get("fans") or ()
    failed = [fan for fan in every if fan.get("failed")]
    slow = [fan for fan in every if fan.get("slow") and not fan.get("failed")]
    unread = [fan for fan in every if fan.get("no_reading") and not (fan.get("failed") or fan.get("slow"))]
    groups = [item for item in bmc.get("redundancy") or ()
              if item.get("group") == "fan" and item.get("state") in NOT_REDUNDANT_STATES]
    if not (failed or slow or unread or groups):
        return ()
    described = ["%s %s (%s)" % (fan["name"], _speed(fan), fan.get("status")) for fan in failed + slow + unread]
    described += ["%s: %s" % (item["name"], item.get("text") or item.get("state")) for item in groups]
    title = "Failed fans" if failed else ("Slow fans" if slow else ("Fans without a reading" if unread
                                                                    else "Fans without redundancy"))
    return [ctx.finding(
        None, "%s: %s" % (title, "; ".join(described)),
        {"failed": failed, "slow": slow, "no_reading": unread, "redundancy": groups,
         "inlet_temperature_c": bmc.get("inlet_temperature_c")},
        "Replace the fan; GPUs behind it heat up and throttle first under load (see their temperature and "
        "clock event reasons). A fan without a reading is a dead fan or an empty header: check whether a fan is "
        "fitted there.", severity="critical" if failed else "warning")]


@rule("hardware.bmc_leak", "hardware", "critical",
      "A liquid-cooling leak detector reports a leak (critical) or a warning (BMC, Redfish LeakDetection)")
def leak(ctx):
    bmc = _bmc(ctx)
    detectors = (bmc or {}).get("leak_detectors") or ()
    leaking = [item for item in detectors if is_leaking(item)]
    warned = [item for item in detectors if not is_leaking(item) and "warning" in (
        (item.get("state") or "").lower(), (item.get("health") or "").lower())]
    if not (leaking or warned):
        return ()
    named = ["%s (%s)" % (item["name"], item.get("state") or item.get("health")) for item in leaking + warned]
    return [ctx.finding(
        None, "%s: %s" % ("Liquid leak detected" if leaking else "Leak detector warning", "; ".join(named)),
        {"leaking": leaking, "warning": warned},
        "Treat a leak as live: power down and isolate the rack or the cooling loop per the site's procedure, then "
        "inspect the manifold and fittings the detector names before restoring coolant flow.",
        severity=None if leaking else "warning")]


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
      "Critical records in the BMC event log within thresholds.xid_window_hours, or a critical state (a supply's "
      "failure) asserted before it and never deasserted (warning when all were deasserted, or for warning records "
      "still asserted: a correctable-error limit, a non-critical threshold, an intrusion)")
def event_log(ctx):
    bmc = _bmc(ctx)
    sel = (bmc or {}).get("sel")
    if not sel:
        return ()
    cutoff = ctx.now + datetime.timedelta(seconds=_bmc_ahead_of_host(ctx, bmc),
                                          hours=-(ctx.thresholds.get("xid_window_hours") or WINDOW_HOURS))
    critical = [event for event in sel.get("events") or ()
                if event.get("severity") == "critical" and event.get("asserted") and _in_window(event, cutoff)]
    older = [event for event in sel.get("open_before_window") or () if not _cleared_by_sensors(bmc, event)]
    if not (critical or older):
        return _warning_records(ctx, sel, cutoff)
    still_open = [event for event in critical if not event.get("cleared")] + older
    shown = (still_open or critical)[-MAX_EVIDENCE_EVENTS:]
    names = sorted({"%s: %s" % (event["sensor"], event["event"]) for event in shown})
    counted = "%d critical BMC event-log record(s)%s" % (
        len(critical), "" if still_open else " (all deasserted since)") if critical else "BMC event log"
    since = "; still asserted since before the window: %s" % ", ".join(
        "%s: %s (%s)" % (event["sensor"], event["event"], event.get("time") or event.get("raw_time")) for event in older
    ) if older else ""
    return [ctx.finding(
        None, "%s: %s%s" % (counted, "; ".join(names), since),
        {"events": shown, "still_asserted": len(still_open), "critical_in_window": len(critical),
         "open_before_window": older, "clock_offset_s": bmc.get("clock_offset_s")},
        "Read the records with their times (UTC) beside the host's Xid events: a power or bus fault at the time of "
        "an Xid points at the chassis, not the GPU. Fix the part the record names and clear the log "
        "(ipmitool sel clear) once it is handled.", severity=None if still_open else "warning")]


def _warning_records(ctx, sel, cutoff):
    """A warning for the window's warning records still asserted (a DIMM's correctable-error logging limit, a
    threshold crossed going non-critical, a chassis intrusion); none when there are none."""
    warned = [event for event in sel.get("events") or () if event.get("severity") == "warning"
              and event.get("asserted") and not event.get("cleared") and _in_window(event, cutoff)]
    if not warned:
        return ()
    shown = warned[-MAX_EVIDENCE_EVENTS:]
    return [ctx.finding(
        None, "%d warning BMC event-log record(s) still asserted: %s" % (
            len(warned), "; ".join(sorted({"%s: %s" % (event["sensor"], event["event"]) for event in shown}))),
        {"events": shown, "still_asserted": len(warned), "critical_in_window": 0, "open_before_window": [],
         "clock_offset_s": (ctx.facts.get("bmc") or {}).get("clock_offset_s")},
        "Read what each record names: a memory module at its correctable-error logging limit is due for replacement "
        "at the next maintenance, a non-critical threshold points at cooling or power, an intrusion at an opened "
        "chassis. Clear the log (ipmitool sel clear) once handled.", severity="warning")]


def _cleared_by_sensors(bmc, event):
    """An old open record of a power supply that the sensors now read as present and healthy: the BMC did not log
    the deassertion (the SEL sensor column is the sensor type then its name, "Power Supply PS2 Status")."""
    for psu in bmc.get("power_supplies") or ():
        name = psu.get("name") or ""
        if name and event.get("sensor", "").endswith(name):
            return psu.get("present") is not False and not (psu.get("failed") or psu.get("ac_lost"))
    return False
