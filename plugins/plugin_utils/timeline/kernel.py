# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Kernel log events for the timeline: the NVRM events exactly as the collector parses them (Xid, fallen off
the bus, API mismatch: module_utils/kernel_log.py) and the NVSwitch errors (SXid), plus the kernel's OOM kills and
PCIe AER errors."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re

from ansible_collections.gpufleet.core.plugins.module_utils.kernel_log import iter_kernel_events, line_time
from ansible_collections.gpufleet.core.plugins.plugin_utils.timeline.events import epoch_of_iso, event

SOURCE = "kernel"
_OOM_KILLED_RE = re.compile(r"(?:Memory cgroup out of memory|Out of memory): Killed process (\d+) \(([^)]*)\)")
_OOM_CONTEXT_RE = re.compile(r"oom-kill:.*?task_memcg=([^,\s]*).*?task=([^,\s]*),pid=(\d+)")
_SERVICE_RE = re.compile(r"([A-Za-z0-9@_.:\\-]+\.service)")
_AER_RE = re.compile(r"(?:(\S+) )?([0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]): "
                     r"(?:AER: (Corrected|Uncorrected \((?:Non-Fatal|Fatal)\)|Multiple \w+) error[s]? received: "
                     r"([0-9a-fA-F:.]+)|PCIe Bus Error: severity=([A-Za-z() -]+?),\s*type=([A-Za-z ]+))")


def _nvrm_marker(kind, entry):
    if kind == "xid":
        return "Xid", "): %d" % entry["xid"]
    if kind == "sxid":
        return "SXid", "): %d" % entry["sxid"]
    if entry["kind"] == "fallen_off_bus":
        return "fallen off the bus", None
    return "API mismatch", None


def _locate(lines, start, marker, detail):
    """Index of the first line at or after start that holds the marker (and detail), else None."""
    for position in range(start, len(lines)):
        text = lines[position]
        if ("NVRM" in text or "SXid" in text) and marker in text and (detail is None or detail in text):
            return position
    return None


def _nvrm_summary(kind, entry):
    if kind == "sxid":
        return "NVSwitch SXid %d on %s (%s): %s" % (entry["sxid"], entry["device"], entry.get("pci_bus_id") or "?",
                                                    entry["message"]), "sxid"
    if kind == "xid":
        process = ""
        if entry.get("pid") or entry.get("process_name"):
            process = " (process %s %s)" % (entry.get("pid") or "?", entry.get("process_name") or "")
        return "Xid %d on %s%s: %s" % (entry["xid"], entry["pci_bus_id"], process.rstrip(), entry["message"]), "xid"
    if entry["kind"] == "fallen_off_bus":
        return "GPU %s has fallen off the bus" % (entry.get("pci_bus_id") or "?"), "fallen_off_bus"
    return ("API mismatch: client %s, kernel module %s" % (entry.get("client_version"),
                                                           entry.get("kernel_module_version")), "api_mismatch")


def _nvrm_layer(kind, entry):
    return "driver" if kind == "kernel" and entry["kind"] == "api_mismatch" else "hardware"


def nvrm_events(text, host, file_name, clock, now, boot_time=None):
    lines = text.splitlines()
    # an SXid event comes once its last line is read, after NVRM events of later lines: each has its own cursor
    found, cursors = [], {"sxid": 0, "nvrm": 0}
    for kind, entry in iter_kernel_events(text, now=now, boot_time=boot_time, sxids=True):
        marker, detail = _nvrm_marker(kind, entry)
        lane = "sxid" if kind == "sxid" else "nvrm"
        position = _locate(lines, cursors[lane], marker, detail)
        if position is not None:
            cursors[lane] = position + 1
        summary, event_kind = _nvrm_summary(kind, entry)
        details = {key: entry.get(key) for key in ("xid", "pid", "process_name", "sxid", "fatal", "link")
                   if entry.get(key) is not None}
        found.append(event(epoch_of_iso(entry.get("time")), host, _nvrm_layer(kind, entry), SOURCE, event_kind,
                           summary, clock, file_name, None if position is None else position + 1,
                           lines[position] if position is not None else None,
                           gpu=entry.get("pci_bus_id") if kind != "sxid" else None,
                           **details))
    return found


def _oom_event(line, number, host, file_name, clock, now, pending_unit):
    killed = _OOM_KILLED_RE.search(line)
    if killed is None:
        return None
    epoch = line_time(line, now)[0]
    pid, name = int(killed.group(1)), killed.group(2)
    unit = pending_unit.get(pid)
    summary = "OOM killer killed process %d (%s)%s" % (pid, name, " of %s" % unit if unit else "")
    details = {"pid": pid, "process_name": name}
    if unit:
        details["unit"] = unit
    return event(epoch, host, "workload", SOURCE, "oom_kill", summary, clock, file_name, number, line, **details)


def _aer_event(line, number, host, file_name, clock, now):
    match = _AER_RE.search(line)
    if match is None:
        return None
    reporter, severity = match.group(2), match.group(3) or match.group(5)
    device = match.group(4) or reporter
    summary = "PCIe AER %s error on %s%s" % ((severity or "").strip().lower(), device,
                                             " (%s)" % match.group(6).strip() if match.group(6) else "")
    return event(line_time(line, now)[0], host, "hardware", SOURCE, "pcie_aer", summary, clock, file_name,
                 number, line, gpu=device.lower() if len(device) == 12 else None, severity=(severity or "").strip())


def other_kernel_events(text, host, file_name, clock, now):
    """OOM kills (with the unit from the oom-kill line before them) and AER errors, in log order."""
    found, pending_unit = [], {}
    for number, line in enumerate(text.splitlines(), 1):
        if "oom-kill:" in line:
            context = _OOM_CONTEXT_RE.search(line)
            if context:
                units = _SERVICE_RE.findall(context.group(1))
                if units:
                    pending_unit[int(context.group(3))] = units[-1]
            continue
        if "Killed process" in line:
            item = _oom_event(line, number, host, file_name, clock, now, pending_unit)
        elif "AER" in line or "PCIe Bus Error" in line:
            item = _aer_event(line, number, host, file_name, clock, now)
        else:
            continue
        if item is not None:
            found.append(item)
    return found


def kernel_events(text, host, file_name, clock, now=None, boot_time=None):
    """Every timeline event of one kernel log text."""
    if not text:
        return []
    return nvrm_events(text, host, file_name, clock, now, boot_time) + other_kernel_events(
        text, host, file_name, clock, now)
