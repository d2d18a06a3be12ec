# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Kernel messages about the host's health beside the NVIDIA Xids: PCIe AER errors and the devices whose driver
cannot recover from them, PCIe links that limit a device's bandwidth, machine checks and EDAC memory errors, hung
tasks, soft lockups, kernel panics, NVIDIA GPUs whose initialisation failed (RmInitAdapter failed) or whose GSP RPC
errors the driver rate-limits, and crashes of processes inside NVIDIA or CUDA libraries.

iter_host_events() reads every line format kernel_log reads (journalctl, syslog, dmesg, dmesg -T, dmesg --decode,
/dev/kmsg, pstore, bare lines: the message is found wherever it is in the line) and yields events of the schema's
kernel_event shape; a pure function of the text, so a live host and a capture are read alike.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re
import time

from ansible_collections.gpufleet.core.plugins.module_utils.facts_model import normalize_pci_bus_id, printable
from ansible_collections.gpufleet.core.plugins.module_utils.kernel_log import _Clock, _line_time

MESSAGE_LIMIT = 300
# lines after a hung task's first line that are read for its stack (the kernel prints some 30 to 60)
STACK_LINES = 80
# lines after an AER error line that may name its errors ("device [vvvv:dddd] ...", then one "[NN] Name" each)
AER_DETAIL_LINES = 20

_PCI = r"[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]"
_DEVICE = r"(?P<driver>[\w.-]{1,32}) (?P<pci>%s):" % _PCI

_AER_ERROR_RE = re.compile(
    _DEVICE + r" PCIe Bus Error: severity=(?P<severity>[A-Za-z() -]+?),\s*type=(?P<type>[A-Za-z ]+)")
_AER_DETAIL_RE = re.compile(_DEVICE + r"\s+\[\s*\d{1,2}\] (?P<name>[A-Za-z][\w-]*(?: [A-Za-z][\w-]*)*)")
_AER_UNRECOVERED_RE = re.compile(_DEVICE + r" AER: can't recover \(no error_detected callback\)")
# the kernel coalesced errors that came faster than it could log them: "AER: Multiple Corrected error received"
_AER_MULTIPLE_RE = re.compile(_DEVICE + r" AER: Multiple ")
_LINK_LIMITED_RE = re.compile(
    r"(?P<pci>%s): (?P<available>[\d.]+) Gb/s available PCIe bandwidth, limited by (?P<limit>[\d.]+ GT/s PCIe x\d+) "
    r"link at (?P<at>%s) \(capable of (?P<capable>[\d.]+) Gb/s with (?P<full>[\d.]+ GT/s PCIe x\d+) link\)"
    % (_PCI, _PCI))
_HUNG_TASK_RE = re.compile(
    r"INFO: task (?P<process>.{1,64}?):(?P<pid>\d{1,10}) blocked for more than (?P<seconds>\d+) seconds")
_SOFT_LOCKUP_RE = re.compile(
    r"soft lockup - CPU#(?P<cpu>\d{1,5}) stuck for (?P<seconds>\d+)s! \[(?P<process>.{1,64}?):(?P<pid>\d{1,10})\]")
_PANIC_RE = re.compile(r"Kernel panic - not syncing: ?(?P<reason>.*)")
_EDAC_RE = re.compile(r"EDAC (?:[\w-]+ )?MC(?P<mc>\d{1,3}): (?P<count>\d{1,9}) (?P<type>CE|UE) (?P<where>.*)")
_MCE_RE = re.compile(r"mce: \[Hardware Error\]: (?P<text>.*)")
# the driver stops printing a GPU's GSP RPC errors one by one (and with them their Xid 119 lines)
_GSP_RATE_LIMITED_RE = re.compile(r"NVRM: Rate limiting GSP RPC error prints for GPU at PCI:(?P<pci>[0-9a-fA-F:.]{7,16})")
_INIT_FAILED_RE = re.compile(r"NVRM: (?:GPU (?P<pci>%s): )?RmInitAdapter failed! \((?P<code>[^)]{0,40})\)" % _PCI)
_SEGFAULT_RE = re.compile(r"(?P<process>[^\s\[]{1,64})\[(?P<pid>\d{1,10})\]: segfault at \S+ ip \S+ sp \S+ error \d+"
                          r" in (?P<library>lib(?:nccl|cuda|cudart|cudnn|cublas\w*|cufft|curand|cusparse|cusolver|nvrtc"
                          r"|nvidia-[\w-]+|nvinfer\w*|nvjitlink)[\w.+-]*)")
# a hung task whose stack runs through the NVIDIA modules: the driver, not the task, is stuck
_NVIDIA_STACK_RE = re.compile(
    r"\[nvidia\w*\]|\buvm_\w+\+0x|\bnvidia_\w+\+0x|\b_nv\d+rm\+0x|\bos_\w+\+0x\w+/\w+ \[nvidia")
_AER_SEVERITIES = (("non-fatal", "non_fatal"), ("fatal", "fatal"), ("correct", "corrected"))
_MCE_UNCORRECTED = ("Machine Check Exception", "Uncorrected", "PROCESSOR CONTEXT CORRUPT", "Fatal")


def _text(value, limit=MESSAGE_LIMIT):
    return printable(value.strip()[:limit]) if value is not None else None


def _bus(pci):
    return normalize_pci_bus_id(pci) if pci else None


def aer_severity(text):
    """corrected, non_fatal or fatal of the kernel's severity= text (Corrected, Correctable, Uncorrected
    (Non-Fatal), Uncorrectable (Fatal), ...)."""
    lowered = (text or "").lower()
    for word, severity in _AER_SEVERITIES:
        if word in lowered:
            return severity
    return None


def _event(kind, time_text, pci_bus_id, message, **fields):
    event = {"kind": kind, "time": time_text, "pci_bus_id": pci_bus_id, "message": _text(message)}
    event.update(fields)
    return event


def _aer_error(match, time_text, line):
    return _event("pcie_aer", time_text, _bus(match.group("pci")), line[match.start():],
                  aer_severity=aer_severity(match.group("severity")), aer_type=_text(match.group("type"), 40),
                  aer_errors=[], multiple=False)


def _hung_task(match, time_text, line):
    return _event("hung_task", time_text, None, line[match.start():], process=_text(match.group("process"), 64),
                  pid=int(match.group("pid")), seconds=int(match.group("seconds")), nvidia_stack=False)


def _one_line_event(line, time_text):
    """The event of a line that says all in itself, or None."""
    match = _AER_UNRECOVERED_RE.search(line)
    if match:
        return _event("pcie_aer_unrecovered", time_text, _bus(match.group("pci")), line[match.start():],
                      driver=_text(match.group("driver"), 32))
    match = _LINK_LIMITED_RE.search(line)
    if match:
        return _event("pcie_link_limited", time_text, _bus(match.group("pci")), line[match.start():],
                      available_gbps=float(match.group("available")), capable_gbps=float(match.group("capable")),
                      limited_by=match.group("limit"), limiting_pci_bus_id=_bus(match.group("at")),
                      full_link=match.group("full"))
    match = _SOFT_LOCKUP_RE.search(line)
    if match:
        return _event("soft_lockup", time_text, None, line[match.start():], cpu=int(match.group("cpu")),
                      seconds=int(match.group("seconds")), process=_text(match.group("process"), 64),
                      pid=int(match.group("pid")))
    return _machine_event(line, time_text) or _gpu_event(line, time_text)


def _machine_event(line, time_text):
    match = _EDAC_RE.search(line)
    if match:
        return _event("memory_error", time_text, None, line[match.start():], corrected=match.group("type") == "CE",
                      count=int(match.group("count")), location=_text(match.group("where").split(" (")[0], 120))
    match = _MCE_RE.search(line)
    if match:
        text = match.group("text")
        return _event("machine_check", time_text, None, line[match.start():],
                      corrected=None if "events logged" in text else not any(word in text for word in _MCE_UNCORRECTED))
    match = _PANIC_RE.search(line)
    if match:
        return _event("kernel_panic", time_text, None, line[match.start():], reason=_text(match.group("reason"), 200))
    return None


def _gpu_event(line, time_text):
    match = _GSP_RATE_LIMITED_RE.search(line)
    if match:
        return _event("gsp_rpc_rate_limited", time_text, _bus(match.group("pci").rstrip(".:")), line[match.start():])
    match = _INIT_FAILED_RE.search(line)
    if match:
        return _event("init_failed", time_text, _bus(match.group("pci")), line[match.start():],
                      code=_text(match.group("code"), 40))
    match = _SEGFAULT_RE.search(line)
    if match:
        return _event("segfault", time_text, None, line[match.start():], process=_text(match.group("process"), 64),
                      pid=int(match.group("pid")), library=_text(match.group("library"), 80))
    return None


def _may_start_event(line):
    """False for a line that names none of the words an event starts with (plain substring tests: the fastest
    way through a long log of other messages)."""
    return ("AER" in line or "PCIe" in line or "INFO: task" in line or "lockup" in line or "panic" in line
            or "EDAC" in line or "mce:" in line or "RmInitAdapter" in line or "segfault" in line
            or "GSP RPC" in line)


class _Reader:
    """Turns lines into events; an AER error takes the error names of the detail lines after it, a hung task the
    NVIDIA modules of its stack."""

    def __init__(self, clock, cutoff):
        self.clock = clock
        self.cutoff = cutoff
        self.aer = None
        self.aer_left = 0
        self.multiple = None  # the device of an "AER: Multiple ..." line not yet given to its error
        self.hung = None
        self.stack_left = 0

    def _time(self, line):
        """(skip, time text): skip is True for a line older than the window."""
        epoch, time_text, _kmsg = _line_time(line, self.clock) if line.strip() else (None, None, False)
        return self.cutoff is not None and epoch is not None and epoch < self.cutoff, time_text

    def _coalesced(self, line):
        """An "AER: Multiple ... received" line marks the error of its device just before or just after it."""
        match = _AER_MULTIPLE_RE.search(line)
        if match is None:
            return False
        bus = _bus(match.group("pci"))
        if self.aer is not None and self.aer_left > 0 and self.aer["pci_bus_id"] == bus:
            self.aer["multiple"] = True
        else:
            self.multiple = bus
        return True

    def _continues(self, line):
        if self.aer_left > 0:
            self.aer_left -= 1
            detail = _AER_DETAIL_RE.search(line) if "] " in line else None
            if detail and _bus(detail.group("pci")) == self.aer["pci_bus_id"]:
                if len(self.aer["aer_errors"]) < 16:
                    self.aer["aer_errors"].append(detail.group("name"))
                return True
        if self.hung is not None and self.stack_left > 0:
            self.stack_left -= 1
            if _NVIDIA_STACK_RE.search(line):
                self.hung["nvidia_stack"] = True
        return False

    def read(self, line):
        """The events a line starts (none, or one)."""
        if (self.aer_left or self.stack_left) and self._continues(line):
            return None
        if not _may_start_event(line):
            return None
        too_old, time_text = self._time(line)
        if too_old:
            return None
        if "Multiple" in line and self._coalesced(line):
            return None
        match = _AER_ERROR_RE.search(line)
        if match:
            self.aer, self.aer_left = _aer_error(match, time_text, line), AER_DETAIL_LINES
            if self.multiple == self.aer["pci_bus_id"]:
                self.aer["multiple"], self.multiple = True, None
            return self.aer
        match = _HUNG_TASK_RE.search(line)
        if match:
            self.hung, self.stack_left = _hung_task(match, time_text, line), STACK_LINES
            return self.hung
        return _one_line_event(line, time_text)


def iter_host_events(text, now=None, window_seconds=None, boot_time=None):
    """Host health events of kernel log text, in log order (kernel_event shape; see the module's docstring)."""
    if not text:
        return
    now = time.time() if now is None else now
    reader = _Reader(_Clock(now, boot_time), now - window_seconds if window_seconds is not None else None)
    held = None  # the last event, yielded when the next one starts: the lines between may complete it
    for line in text.splitlines():
        if not (reader.aer_left or reader.stack_left or _may_start_event(line)):
            continue
        event = reader.read(line)
        if event is not None:
            if held is not None:
                yield held
            held = event
    if held is not None:
        yield held


def parse_host_events(text, now=None, window_seconds=None, boot_time=None):
    """Every host health event of kernel log text, in log order."""
    return list(iter_host_events(text, now, window_seconds, boot_time))
