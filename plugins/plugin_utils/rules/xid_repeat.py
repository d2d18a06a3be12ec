# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Hardware-layer rule: application Xids that repeat on one GPU across different processes.

An application Xid (the catalog's application_error: 13, 31, 43) is the application's own fault, unless it
repeats on one GPU with different workloads: then NVIDIA's guidance is to suspect the card. The rule reports a
GPU whose window holds at least REPEAT_MIN_EVENTS application Xids and either
- processes of at least REPEAT_MIN_WORKLOADS different names (different workloads), or
- one SM (GPC, TPC, SM of Xid 13/31) hit by at least REPEAT_MIN_WORKLOADS different processes (pids): a bug
  in one program faults wherever its threads run, a weak SM faults wherever it is.
The driver often logs Xid 13 with pid '<unknown>' and names the process in the Xid 43 that stops it: an event
without a process takes the process of the next application Xid of the same GPU within ATTRIBUTE_SECONDS.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.findings import gpu_label, parse_time, rule
from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.hardware import gpus_by_bus, xid_groups

REPEAT_MIN_EVENTS = 3
REPEAT_MIN_WORKLOADS = 2
ATTRIBUTE_SECONDS = 10
MAX_LISTED = 10
RULE_ID = "hardware.xid_app_repeat"


def _process(event):
    """(name, pid) of the event's process, or None when the line names neither."""
    if event.get("process_name") is None and event.get("pid") is None:
        return None
    return (event.get("process_name"), event.get("pid"))


def _process_text(process):
    name, pid = process
    return "%s (pid %s)" % (name or "?", pid if pid is not None else "?")


def _epoch(event):
    moment = parse_time(event.get("time"))
    return moment.timestamp() if moment is not None else None


def attributed_events(events):
    """[(event, (name, pid) or None, attributed)] in time order: an event without a process takes the process of
    the next event with one within ATTRIBUTE_SECONDS (attributed True)."""
    ordered = sorted(events, key=lambda event: (_epoch(event) is None, _epoch(event) or 0.0))
    result = []
    for position, event in enumerate(ordered):
        process = _process(event)
        if process is not None:
            result.append((event, process, False))
            continue
        found = _next_process(ordered[position + 1:], _epoch(event))
        result.append((event, found, found is not None))
    return result


def _next_process(later, moment):
    if moment is None:
        return None
    for event in later:
        epoch = _epoch(event)
        if epoch is None or epoch - moment > ATTRIBUTE_SECONDS:
            return None
        if _process(event) is not None:
            return _process(event)
    return None


def _location(event):
    if event.get("gpc") is None:
        return None
    return (event.get("gpc"), event.get("tpc"), event.get("sm"))


def _location_text(location):
    return "GPC %s, TPC %s, SM %s" % tuple("?" if part is None else part for part in location)


class Repeat:
    """What the application Xids of one GPU say about its card."""

    def __init__(self, entries):
        self.counts = {number: counted.count for number, counted in entries}
        self.events = [event for _number, counted in entries for event in counted.events]
        self.attributed = attributed_events(self.events)
        self.processes = {}
        self.locations = {}
        for event, process, _attributed in self.attributed:
            if process is not None:
                self.processes.setdefault(process, []).append(event)
            location = _location(event)
            if location is not None:
                self.locations.setdefault(location, {}).setdefault(process, 0)
                self.locations[location][process] += 1

    @property
    def count(self):
        return sum(self.counts.values())

    def workload_names(self):
        return sorted({name for name, _pid in self.processes if name})

    def shared_locations(self):
        """{location: processes} for the SMs hit by REPEAT_MIN_WORKLOADS or more distinct known processes."""
        shared = {}
        for location, by_process in self.locations.items():
            known = [process for process in by_process if process is not None]
            if len(known) >= REPEAT_MIN_WORKLOADS:
                shared[location] = sorted(known, key=lambda process: (str(process[0]), str(process[1])))
        return shared

    def suspects_card(self):
        if self.count < REPEAT_MIN_EVENTS:
            return False
        return len(self.workload_names()) >= REPEAT_MIN_WORKLOADS or bool(self.shared_locations())


def _evidence(ctx, repeat, gpu):
    times = sorted(event["time"] for event in repeat.events if event.get("time"))
    shared = repeat.shared_locations()
    evidence = {
        "xids": [{"xid": number, "count": count} for number, count in sorted(repeat.counts.items())],
        "count": repeat.count,
        "processes": [{"name": name, "pid": pid, "events": len(events),
                       "xids": sorted({event["xid"] for event in events})}
                      for (name, pid), events in sorted(repeat.processes.items(),
                                                        key=lambda item: (-len(item[1]), str(item[0])))][:MAX_LISTED],
        "workload_names": repeat.workload_names()[:MAX_LISTED],
        "events_without_process": sum(1 for _e, process, _a in repeat.attributed if process is None),
        "events_attributed": sum(1 for _e, _p, attributed in repeat.attributed if attributed),
        "same_sm_across_processes": [
            dict(zip(("gpc", "tpc", "sm"), location), processes=[_process_text(p) for p in processes])
            for location, processes in sorted(shared.items(), key=lambda item: (-len(item[1]), item[0]))][:MAX_LISTED],
        "locations": [dict(zip(("gpc", "tpc", "sm"), location), events=sum(by_process.values()))
                      for location, by_process in sorted(repeat.locations.items(),
                                                         key=lambda item: (-sum(item[1].values()), item[0]))][:MAX_LISTED],
        "first_time": times[0] if times else None,
        "last_time": times[-1] if times else None,
        "window_hours": ctx.thresholds.get("xid_window_hours"),
        "min_events": REPEAT_MIN_EVENTS,
        "min_workloads": REPEAT_MIN_WORKLOADS,
    }
    if gpu is not None:
        evidence["gpu_serial"] = gpu.get("serial")
        evidence["gpu_uuid"] = gpu.get("uuid")
    return evidence


def _summary(ctx, repeat, gpu, bus):
    where = gpu_label(gpu) if gpu is not None else ("GPU %s" % bus if bus else "an unnamed GPU")
    xids = ", ".join("%d x%d" % (number, count) for number, count in sorted(repeat.counts.items()))
    names = repeat.workload_names()
    text = "Application Xids %s on %s within %sh from %d processes (%s)" % (
        xids, where, ctx.thresholds.get("xid_window_hours"), len(repeat.processes),
        ", ".join(names[:5]) if names else "names unknown")
    shared = repeat.shared_locations()
    if shared:
        location, processes = max(shared.items(), key=lambda item: len(item[1]))
        text += ", %d of them at the same SM (%s)" % (len(processes), _location_text(location))
    return text + ": the same faults under different workloads point at the card"


@rule(RULE_ID, "hardware", "warning",
      "Application Xids (13, 31, 43) repeating on one GPU within thresholds.xid_window_hours under different "
      "workloads, or at one SM under different processes: suspect the card (NVIDIA's guidance for these Xids)")
def application_xid_repeats(ctx):
    application = ctx.knowledge.application_xids()
    by_bus = gpus_by_bus(ctx)
    findings = []
    for bus, entries in sorted(xid_groups(ctx).items(), key=lambda item: item[0] or ""):
        counted = [(number, events) for number, events, _riders in entries if number in application]
        if sum(events.count for _number, events in counted) < REPEAT_MIN_EVENTS:
            continue  # the usual case, decided before the events are read
        repeat = Repeat(counted)
        if not repeat.suspects_card():
            continue
        gpu = by_bus.get(bus)
        findings.append(ctx.finding(
            bus, _summary(ctx, repeat, gpu, bus), _evidence(ctx, repeat, gpu),
            "Drain the GPU and run DCGM diagnostics (dcgmi diag -r 3) or the vendor's field diagnostic; hand the card "
            "over for repair if it fails, or if the Xids keep coming under other workloads. Rule out first that the "
            "processes share the faulty code (one framework or library in every job)."))
    return findings
