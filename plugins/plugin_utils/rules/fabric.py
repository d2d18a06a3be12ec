# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Hardware-layer rule of the NVLink fabric: NVSwitch errors (SXids), joined to the GPU side of the same fault.

On HGX/DGX systems an NVLink incident has two halves: the NVSwitch logs an SXid, the GPUs behind the port log an
NVLink Xid (74, or 144-150 on NVLink 5) and may lose links. An SXid finding names the NVLink Xids of the same host
within SXID_JOIN_SECONDS of it and the GPUs whose NVLinks are down now, so one look shows both halves.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.findings import parse_time, rule
from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.hardware import (  # pylint: disable=protected-access
    XidEvents, _window_start, dropped_in_window, events_in_window, xid_info)
from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.sxid_catalog import load_catalog, sxid_info

# An NVLink Xid this close in time to an SXid of the same host is taken as the GPU side of the same fault.
SXID_JOIN_SECONDS = 300
MAX_JOINED = 16


def sxid_groups(ctx):
    """{(switch bus id, sxid): XidEvents} of the window, counting the events the collector only counted."""
    groups = {}
    for event in events_in_window(ctx, ctx.facts.get("sxid_events") or ()):
        groups.setdefault((event.get("pci_bus_id"), event.get("sxid")), []).append(event)
    dropped = {}
    start = _window_start(ctx)
    for group in (ctx.facts.get("kernel_log") or {}).get("groups") or ():
        if group.get("kind") == "sxid" and isinstance(group.get("sxid"), int):
            extra = dropped_in_window(group, start)
            if extra:
                key = (group.get("pci_bus_id"), group["sxid"])
                dropped[key] = extra
                groups.setdefault(key, [])
    return {key: XidEvents(events, dropped.get(key, 0)) for key, events in groups.items()}


def fatal_in_log(events):
    """True when a line of the error said Fatal, False when one said Non-fatal (and none Fatal), else None."""
    said = {event.get("fatal") for event in events}
    if True in said:
        return True
    return False if False in said else None


def _epoch(event):
    moment = parse_time(event.get("time"))
    return moment.timestamp() if moment is not None else None


def nvlink_xid_events(ctx, gpu_xids):
    """(epoch, event) of the window's GPU Xids that report the NVLink side of a switch fault, with a time."""
    timed = ((_epoch(event), event) for event in events_in_window(ctx, ctx.facts.get("xid_events") or ())
             if event.get("xid") in gpu_xids)
    return [(epoch, event) for epoch, event in timed if epoch is not None]


def joined_xids(ctx, sxid_events, nvlink_events):
    """The NVLink Xids within SXID_JOIN_SECONDS of any of the SXid's events: [{gpu, xid, name, count, first_time}]."""
    moments = [epoch for epoch in (_epoch(event) for event in sxid_events) if epoch is not None]
    joined = {}
    for epoch, event in nvlink_events:
        if any(abs(epoch - moment) <= SXID_JOIN_SECONDS for moment in moments):
            key = (event.get("pci_bus_id") or "", event["xid"])
            entry = joined.setdefault(key, {"gpu": event.get("pci_bus_id"), "xid": event["xid"],
                                            "name": xid_info(ctx.knowledge, event["xid"]).get("name"),
                                            "count": 0, "first_time": event.get("time")})
            entry["count"] += 1
    return [joined[key] for key in sorted(joined)][:MAX_JOINED]


def inactive_nvlinks(ctx):
    """[{gpu, links}] for the GPUs whose NVLinks are down now (the state when the facts were collected)."""
    down = []
    for gpu in ctx.gpus:
        links = [link.get("link") for link in gpu.get("nvlinks") or () if link.get("active") is False]
        if links:
            down.append({"gpu": gpu.get("pci_bus_id"), "links": links})
    return down[:MAX_JOINED]


def _summary(evidence):
    links, joined = evidence["links"], evidence["nvlink_xids"]
    text = "SXid %d (%s%s) x%d on NVSwitch %s (%s)%s within %sh" % (
        evidence["sxid"], evidence["name"],
        {True: ", Fatal in the log", False: ", Non-fatal in the log"}.get(evidence["fatal_in_log"], ""),
        evidence["count"], evidence["switch"] or "?", evidence["switch_pci_bus_id"] or "address unknown",
        ", link%s %s" % ("s" if len(links) > 1 else "", ", ".join(map(str, links))) if links else "",
        evidence["window_hours"])
    if joined:
        joined_text = ", ".join("Xid %d x%d on %s" % (j["xid"], j["count"], j["gpu"] or "a GPU") for j in joined[:3])
        text += "; with %s within %d s" % (joined_text, SXID_JOIN_SECONDS)
    return text


def _evidence(ctx, info, bus, counted, fatal, joined, down):
    events = counted.events
    times = [event.get("time") for event in events if event.get("time")]
    last = events[-1] if events else {}
    return {
        "sxid": info["sxid"], "name": info["name"], "class": info["class"], "catalog_table": info["table"],
        "fatal_in_log": fatal, "switch": last.get("device"), "switch_pci_bus_id": bus,
        "links": sorted({event["link"] for event in events if isinstance(event.get("link"), int)}),
        "count": counted.count, "first_time": times[0] if times else None, "last_time": times[-1] if times else None,
        "window_hours": ctx.thresholds.get("xid_window_hours"), "last_message": str(last.get("message") or "")[:300],
        "data": last.get("data"), "note": info["note"],
        "nvlink_xids": joined, "join_seconds": SXID_JOIN_SECONDS, "gpus_with_inactive_nvlinks": down,
    }


@rule("hardware.sxid", "hardware", "warning",
      "NVSwitch errors (SXids) in the kernel log within thresholds.xid_window_hours, classified by the SXid catalog "
      "and the fatality the line gives; evidence names the NVLink Xids of the host within %d s and the GPUs with "
      "inactive NVLinks" % SXID_JOIN_SECONDS)
def sxid_errors(ctx):
    groups = sxid_groups(ctx)
    if not groups:
        return ()
    catalog = load_catalog()
    nvlink_events = nvlink_xid_events(ctx, catalog["gpu_xids"])
    down = inactive_nvlinks(ctx)
    findings = []
    for (bus, number), counted in sorted(groups.items(), key=lambda item: (item[0][0] or "", item[0][1])):
        fatal = fatal_in_log(counted.events)
        info = sxid_info(number, fatal, catalog)
        joined = joined_xids(ctx, counted.events, nvlink_events)
        evidence = _evidence(ctx, info, bus, counted, fatal, joined, down)
        findings.append(ctx.finding(None, _summary(evidence), evidence, info["action"], severity=info["severity"]))
    return findings


# ---------------------------------------------------------------- NCCL's network failures in the services' journals

@rule("hardware.nccl_network", "hardware", "warning",
      "A GPU service's NCCL lost its network or a peer: an InfiniBand/RoCE completion error is critical for the "
      "path it names (transport retries exceeded: link, cable, switch or the peer host); a peer that exited or a "
      "socket closed is a warning")
def nccl_network(ctx):
    findings = []
    for service in (ctx.facts.get("workload") or {}).get("services") or ():
        journal = service.get("journal") or {}
        match = ((journal.get("matches") or {}).get("nccl_network")) or {}
        if not match.get("count"):
            continue
        detail = (journal.get("details") or {}).get("nccl_network") or {}
        transport = detail.get("cause") == "ib_completion_error"
        peer = detail.get("peer")
        last = match.get("last") or {}
        findings.append(ctx.finding(
            None,
            "%s: NCCL %s%s%s (%d in the window)" % (
                service.get("unit"),
                "InfiniBand/RoCE completion error status %s (vendor error %s)" % (
                    detail.get("ib_status"), detail.get("vendor_error")) if transport
                else "lost a peer or its network connection",
                " with peer %s" % peer if peer else "",
                " seen on %s" % detail["reporter"] if detail.get("reporter") else "", match["count"]),
            {"service": service.get("unit"), "count": match["count"], "message_says": detail,
             "peer": peer, "last": "%s %s" % (last.get("time") or "", last.get("message") or "")},
            ("Check the fabric path between this host and %s: the HCA port's state and error counters (ibstat, "
             "perfquery), the cable and the switch port; status 12 means the transport gave up retrying." % (
                 peer or "the peer") if transport else
             "Find out whether %s crashed (its own journal, OOM kills, Xids) or the network failed (link flaps, "
             "HCA counters on both hosts) before restarting the job." % (peer or "the peer rank's host")),
            severity="critical" if transport else None))
    return findings
