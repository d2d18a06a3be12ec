# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The incident's timeline (timeline.json): every event of the window from every host's evidence bundle and
from the project's earlier runs, on one UTC time axis, with events close in time across sources marked."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import functools

from ansible_collections.gpufleet.core.plugins.plugin_utils.incident.evidence_bundle import read_evidence_file
from ansible_collections.gpufleet.core.plugins.plugin_utils.timeline.bmc import clock_offset, sel_events
from ansible_collections.gpufleet.core.plugins.plugin_utils.timeline.boots import boot_events
from ansible_collections.gpufleet.core.plugins.plugin_utils.timeline.events import in_window, iso
from ansible_collections.gpufleet.core.plugins.plugin_utils.timeline.past_runs import RunHistory, history_events
from ansible_collections.gpufleet.core.plugins.plugin_utils.timeline.journal import journal_events
from ansible_collections.gpufleet.core.plugins.plugin_utils.timeline.kernel import kernel_events
from ansible_collections.gpufleet.core.plugins.plugin_utils.timeline.packages import dnf_events, dpkg_events

TIMELINE_FORMAT = "gpufleet-timeline"
TIMELINE_VERSION = 1
# events within this many seconds of each other, from different sources of one host, are marked as close
CLOSE_SECONDS = 120
# a service event this soon after an Xid of a process of that service is marked as following it
PROCESS_FOLLOW_SECONDS = 600
MAX_EVENTS = 20000
MAX_RELATED = 8
MAX_CORRELATIONS = 2000
SOURCES = ("kernel", "journal", "bmc", "packages", "boots", "gpufleet")
KERNEL_CLOCKS = {
    "journalctl": "host clock, UTC (journalctl -o short-iso-precise --utc)",
    "dmesg": "host clock, with its offset (dmesg --time-format=iso)",
    "files": "as the log file writes it; times without a zone are read in the controller's time zone",
}


def _files(manifest, prefix):
    return [entry for entry in manifest.get("files") or () if (entry.get("name") or "").startswith(prefix)]


def _source_record(entries, clock):
    usable = [entry for entry in entries if entry.get("status") == "ok" and entry.get("file")]
    record = {"files": [entry["file"] for entry in usable], "clock": clock, "events": 0,
              "status": "ok" if usable else "missing",
              "why": None if usable else "; ".join("%s: %s" % (entry.get("command"), entry.get("why") or entry.get(
                  "status")) for entry in entries) or "not collected"}
    return record, usable


def _kernel_source(manifest):
    kind = manifest.get("kernel_log_source") or "auto"
    entries = _files(manifest, "kernel")
    ok = [entry for entry in entries if entry.get("status") == "ok"]
    if kind == "files":
        return KERNEL_CLOCKS["files"], entries
    command = ok[0].get("command", "") if ok else ""
    return KERNEL_CLOCKS["dmesg" if command.startswith("dmesg") else "journalctl"], entries


def _kernel(read, host, manifest, sources):
    clock, entries = _kernel_source(manifest)
    sources["kernel"], usable = _source_record(entries, clock)
    now = (manifest.get("host_clock") or {}).get("now")
    return [found for entry in usable for found in kernel_events(read(entry["file"]), host, entry["file"], clock, now=now)]


def _journal(read, host, manifest, sources):
    sources["journal"], usable = _source_record(_files(manifest, "journal-"), "host clock, UTC (journal)")
    seen = set()
    return [found for entry in usable for found in journal_events(read(entry["file"]), host, entry["file"], seen)]


def _bmc(read, host, manifest, sources):
    now = (manifest.get("host_clock") or {}).get("now")
    sel_time = next((read(e["file"]) for e in _files(manifest, "ipmitool-sel-time") if e.get("status") == "ok"), None)
    sources["bmc"], usable = _source_record(_files(manifest, "ipmitool-sel-elist"), "BMC clock")
    events = []
    for entry in usable:
        found = sel_events(read(entry["file"]), host, entry["file"], clock_offset(sel_time, now))
        if found:
            sources["bmc"]["clock"] = found[0]["clock"]
        events.extend(found)
    return events


def _packages(read, host, manifest, sources):
    offset = (manifest.get("host_clock") or {}).get("utc_offset_seconds") or 0
    sources["packages"], usable = _source_record(_files(manifest, "dpkg.log") + _files(manifest, "dnf.rpm.log"),
                                                 "host local time (dpkg.log), with offset (dnf.rpm.log)")
    events = []
    for entry in usable:
        text = read(entry["file"])
        if entry["file"].startswith("dpkg"):
            events.extend(dpkg_events(text, host, entry["file"], offset))
        else:
            events.extend(dnf_events(text, host, entry["file"]))
    return events


def _boots(read, host, manifest, sources):
    sources["boots"], usable = _source_record(_files(manifest, "boots"), "host clock, UTC (journalctl --list-boots)")
    return [found for entry in usable for found in boot_events(read(entry["file"]), host, entry["file"])]


SOURCE_READERS = (_kernel, _journal, _bmc, _packages, _boots)


def host_events(run_dir, host, dir_name, manifest):
    """(events, sources) of one host's bundle: the events inside the host's window, and per source the files
    read, their clock, the number of events or why the source is missing."""
    read = functools.partial(read_evidence_file, run_dir, dir_name)
    events, sources = [], {}
    for reader in SOURCE_READERS:
        events.extend(reader(read, host, manifest, sources))
    window = manifest.get("window")
    kept = [item for item in events if in_window(item["epoch"], window)]
    for name, record in sources.items():
        record["events"] = sum(1 for item in kept if item["source"] == name)
    return kept, sources


def _sort_key(item):
    return (item["epoch"] is None, item["epoch"] or 0.0, item["host"] or "", SOURCES.index(item["source"])
            if item["source"] in SOURCES else 99, item["evidence"].get("line") or 0)


def _relate(first, second, seconds, why, correlations, link="time"):
    if len(correlations) >= MAX_CORRELATIONS:
        return
    if second["id"] in first.setdefault("related", []) or len(first["related"]) >= MAX_RELATED:
        return
    first["related"].append(second["id"])
    second.setdefault("related", []).append(first["id"])
    correlations.append({"events": [first["id"], second["id"]], "host": first["host"],
                         "seconds": round(seconds, 3), "why": why, "link": link})


def mark_close(events, pid_units_by_host, close_seconds=CLOSE_SECONDS):
    """Marks pairs of timed events of one host from different sources within close_seconds, and service
    events that follow an Xid of one of that service's processes; returns the list of pairs."""
    correlations = []
    timed = [item for item in events if item["epoch"] is not None and item["source"] != "gpufleet"]
    for position, first in enumerate(timed):
        for second in timed[position + 1:]:
            gap = second["epoch"] - first["epoch"]
            if gap > max(close_seconds, PROCESS_FOLLOW_SECONDS):
                break
            if second["host"] != first["host"]:
                continue
            why = _process_link(first, second, pid_units_by_host.get(first["host"]) or {})
            if why:
                _relate(first, second, gap, why, correlations, "process")
            elif gap <= close_seconds and second["source"] != first["source"]:
                _relate(first, second, gap, "within %d s, %s then %s" % (close_seconds, first["source"],
                                                                         second["source"]), correlations)
    return correlations


def _process_link(xid, service, pid_units):
    if xid["kind"] != "xid" or service["source"] != "journal" or service["epoch"] < xid["epoch"]:
        return None
    pid = (xid.get("details") or {}).get("pid")
    unit = pid_units.get(str(pid)) if pid is not None else None
    if unit and (service.get("details") or {}).get("unit") == unit:
        return "%s after Xid %s of its process %s" % (service["kind"], xid["details"].get("xid"), pid)
    return None


def build_timeline(run_dir, bundles, findings=(), history=None, run_id=None):
    """bundles: {host: (dir_name, manifest)}; findings: the current audit's findings; history: a RunHistory."""
    events, hosts = [], {}
    for host in sorted(bundles):
        dir_name, manifest = bundles[host]
        if manifest.get("status") != "ok":
            hosts[host] = {"window": None, "sources": {}, "status": manifest.get("status"), "why": manifest.get("why")}
            continue
        found, sources = host_events(run_dir, host, dir_name, manifest)
        events.extend(found)
        hosts[host] = {"window": _window_text(manifest.get("window")), "sources": sources, "status": "ok", "why": None}
    window = _union([manifest.get("window") for _name, manifest in bundles.values()])
    first_seen = {}
    if window is not None:
        found, first_seen = history_events(history or RunHistory(), sorted(bundles), window,
                                           [f for f in findings if f.get("host") in bundles], run_id)
        events.extend(found)
    events.sort(key=_sort_key)
    dropped = max(0, len(events) - MAX_EVENTS)
    events = events[:MAX_EVENTS]
    for number, item in enumerate(events, 1):
        item["id"] = "e%d" % number
    pid_units = {host: manifest.get("pid_units") or {} for host, (_name, manifest) in bundles.items()}
    correlations = mark_close(events, pid_units)
    return {
        "format": TIMELINE_FORMAT, "format_version": TIMELINE_VERSION, "run_id": run_id,
        "window": _window_text(window), "close_seconds": CLOSE_SECONDS, "hosts": hosts,
        "events": events, "dropped_events": dropped, "correlations": correlations,
        "first_seen": [{"host": key[0], "rule": key[1], "gpu": key[2], "first_seen": value}
                       for key, value in sorted(first_seen.items(), key=lambda pair: tuple(map(str, pair[0])))],
    }


def _union(windows):
    windows = [window for window in windows if window]
    if not windows:
        return None
    return {"since": min(window["since"] for window in windows), "until": max(window["until"] for window in windows)}


def _window_text(window):
    if not window:
        return None
    return {"since": iso(window["since"]), "until": iso(window["until"]),
            "since_epoch": window["since"], "until_epoch": window["until"]}
