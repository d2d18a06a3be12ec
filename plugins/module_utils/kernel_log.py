# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""NVIDIA kernel log events: Xid lines, GPUs fallen off the bus, API mismatches, NVSwitch errors (SXids).

parse_kernel_log() reads the text of journalctl (short-iso, short-iso-precise, short),
syslog/kern.log files (classic, ISO 8601 with or without a zone, `YYYY-MM-DD HH:MM:SS,mmm`,
RFC 5424), `dmesg --ctime`/`dmesg -T`, `dmesg --decode`, raw dmesg (with or without its <priority>),
/dev/kmsg records and bare lines, and returns records in the schema's xid_event and kernel_event shapes.
Times are rendered as UTC ISO 8601; a raw dmesg/kmsg time with no known boot time
stays the raw seconds-since-boot string. Local times (syslog, dmesg --ctime) are read
in the time zone of the process, which on a target is the host's own.

collect_kernel_log() picks the source (journalctl, else dmesg, or named files).
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import calendar
import collections
import re
import time

from ansible_collections.gpufleet.core.plugins.module_utils.args_common import KERNEL_LOG_SOURCES, WINDOW_HOURS
from ansible_collections.gpufleet.core.plugins.module_utils.facts_model import (
    add_error, normalize_pci_bus_id, printable)

# The Xid that says a GPU fell off the bus. The controller's Xid catalog (plugin_utils/rules/data/xid_catalog.yml,
# gpu_lost) is not shipped to hosts, so the collector names it here; a unit test keeps the two the same.
GPU_LOST_XID = 79

_MONTHS = {name: number for number, name in enumerate(
    ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"), 1)}
_MONTH_ALT = "|".join(_MONTHS)

# journalctl -o short-iso / short-iso-precise, rsyslog high-precision, dmesg --time-format=iso,
# "YYYY-MM-DD HH:MM:SS,mmm"; the zone may be Z, +hh, +hhmm or +hh:mm
_ISO_TEXT = r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d{1,9})?(?:Z|[+-]\d\d(?::?\d\d)?)?"
_ISO_RE = re.compile(
    r"(\d{4})-(\d\d)-(\d\d)[T ](\d\d):(\d\d):(\d\d)(?:[.,](\d{1,9}))?(Z|[+-]\d\d(?::?\d\d)?)?\s")
# What some dumps put before the time: the facility and level of `dmesg --decode` ("kern  :warn  : "),
# the priority of `dmesg -r` and pstore ("<4>[ 1126.635824] ")
_LEVEL_TEXT = r"[a-z]{2,8}\s*:[a-z]{2,8}\s*:\s|<\d{1,3}>(?=\[)"
_LEVEL_RE = re.compile(_LEVEL_TEXT)
# RFC 5424: "<PRI>VERSION TIMESTAMP HOSTNAME APP-NAME PROCID MSGID STRUCTURED-DATA MSG"; the timestamp
# may be "-" (unknown)
_RFC5424_RE = re.compile(r"<\d{1,3}>\d{1,2} ")
# classic syslog and journalctl -o short: "Jun 30 11:07:05 host kernel: ..." (no year)
_SYSLOG_RE = re.compile(r"(%s)\s+(\d{1,2})\s+(\d\d):(\d\d):(\d\d)(?:\.\d+)?\s" % _MONTH_ALT)
# dmesg --ctime / dmesg -T: "[Fri Aug 30 11:43:09 2024] ..."
_CTIME_RE = re.compile(r"\[[A-Z][a-z]{2}\s+(%s)\s+(\d{1,2})\s+(\d\d):(\d\d):(\d\d)\s+(\d{4})\]" % _MONTH_ALT)
# raw dmesg: "[ 7386.259769] ..." (seconds since boot)
_MONO_RE = re.compile(r"\[\s*(\d+)\.(\d+)\]")
# /dev/kmsg: "prio,seq,usec,flags;message"
_KMSG_RE = re.compile(r"(\d+),(\d+),(\d+),[^;]*;")

_PCI = r"[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}(?:\.[0-7])?"
# groups: pci, GPU-I, GPU-CI, xid, pid, name, message. pid= and name= are optional
# (older drivers and some code paths print neither, or pid= alone).
_XID_RE = re.compile(
    r"Xid \((?:PCI:)?(%s)(?: GPU-I:(\d+))?(?: GPU-CI:(\d+))?[^)]*\):\s*(\d+)\s*,?\s*"
    r"(?:pid=('[^']*'|[^,\s]*)(?:,\s*|\s*$)(?:name=([^,]*)(?:,\s*|\s*$))?)?(.*)" % _PCI, re.S)
_FALLEN_PCI_RE = re.compile(r"GPU (?:at )?(?:PCI:)?(?P<pci>%s)" % _PCI)
# "the client has the version X, but" (drivers up to 570) or, from 575 on, "the client 'comm' (pid N)
# has the version X, but": the client's name and pid are only in the newer form
_CLIENT_VERSION_RE = re.compile(
    r"the client (?:'(?P<name>[^']{0,64})' \(pid (?P<pid>\d{1,10})\) )?has the version (?P<version>\d+(?:\.\d+)*)")
_KERNEL_VERSION_RE = re.compile(r"this kernel module has the version (\d+(?:\.\d+)*)")

# NVSwitch errors: "nvidia-nvswitch3: SXid (PCI:0000:86:00.0): 12028, Non-fatal, Link 46 <text>", logged by the
# nvidia-nvswitch driver (not NVRM); one error may go on with ", Severity 5 Engine instance ..." and ", Data {...}"
# lines of the same switch and SXid. Groups: device number, PCI address (or a placeholder), SXid, the rest.
_SXID_SENDER = r"nvidia-nvswitch\d*:\s*SXid"
_SXID_SENDER_RE = re.compile(_SXID_SENDER)
_SXID_RE = re.compile(r"nvidia-nvswitch(\d{0,6}):\s*SXid \((?:PCI:)?([^)]{0,64})\):\s*(\d{1,9})(?!\d)\s*,?\s*(.*)", re.S)
_SXID_FATALITY_RE = re.compile(r"(Non-fatal|Nonfatal|Fatal)\b\s*,?\s*", re.I)
_SXID_LINK_RE = re.compile(r"Link\s+(-?\d{1,6})\b")
_SXID_DATA_RE = re.compile(r"Data\s*(\{[^}]*\}?)")
_SXID_DETAIL_RE = re.compile(r"(?:Severity\s+\d+|Data\s*\{)")
# Xid 13 and 31 name the unit that faulted: "... on (GPC 7, TPC 7, SM 0): ..."
SM_LOCATION_XIDS = (13, 31)
_SM_LOCATION_RE = re.compile(r"\bGPC\s*(\d{1,6})\b(?:\s*,\s*TPC\s*(\d{1,6})\b)?(?:\s*,\s*SM\s*(\d{1,6})\b)?")

# The message field of a kernel line: after the time, after "<host> kernel:" where a syslog or journal
# line names its sender, after a raw "[seconds]" stamp; NVRM must begin it. Text of another sender
# (a process that logs "NVRM: Xid ..." to syslog) or later in a kernel message (a command line the
# kernel quotes) is data and never an event.
_MESSAGE_PREFIX_RE = re.compile(
    r"(?:%s)?(?:(?:%s"
    r"|(?:%s)\s+\d{1,2}\s+\d\d:\d\d:\d\d(?:\.\d+)?)\s+(?:(?:\S+\s+)?kernel(?:\[[^\]\s]*\])?:\s*)?"
    r"|<\d{1,3}>\d{1,2} (?:%s|-) \S+ kernel \S+ \S+ (?:-|(?:\[(?:[^\]\\]|\\.)*\])+) \ufeff?"
    r"|\[[A-Z][a-z]{2}\s+(?:%s)\s+\d{1,2}\s+\d\d:\d\d:\d\d\s+\d{4}\]\s*"
    r"|\d+,\d+,\d+,[^;]*;"
    r"|kernel:\s*)?"
    r"(?:\[\s*\d+\.\d+\]\s*)?(?=NVRM|%s)" % (_LEVEL_TEXT, _ISO_TEXT, _MONTH_ALT, _ISO_TEXT, _MONTH_ALT, _SXID_SENDER))

# A line in a known format whose message does not start with NVRM: another sender's (syslog, RFC 5424),
# or a kernel message that names NVRM later on. Such a line is placed (read, and no event).
_KNOWN_LINE_RE = re.compile(
    r"(?:%s)?(?:(?:%s|(?:%s)\s+\d{1,2}\s+\d\d:\d\d:\d\d(?:\.\d+)?)"
    r"\s+(?:[^\s:]+\s+)?(?!NVRM)[^\s:\[\]]+(?:\[[^\]\s]*\])?:\s"
    r"|<\d{1,3}>\d{1,2} (?:%s|-) \S+ (?!NVRM)\S+ "
    r"|\[[A-Z][a-z]{2}\s+(?:%s)\s+\d{1,2}\s+\d\d:\d\d:\d\d\s+\d{4}\]"
    r"|\[\s*\d+\.\d+\]"
    r"|\d+,\d+,\d+,[^;]*;)" % (_LEVEL_TEXT, _ISO_TEXT, _MONTH_ALT, _ISO_TEXT, _MONTH_ALT))

FALLEN = "fallen off the bus"
MISMATCH = "API mismatch"
# A message split over several log records is joined for at most this many records.
_MAX_JOINED_RECORDS = 5


class _Record:
    """One kernel message: its time and its text from 'NVRM' on, continuation lines included."""
    __slots__ = ("time", "text", "kmsg", "joined")

    def __init__(self, time_text, text, kmsg):
        self.time = time_text
        self.text = text
        self.kmsg = kmsg
        self.joined = 1


class UnplacedLines:
    """NVRM and SXid lines in a format the reader does not know (no time stamp or sender it can place): counted,
    with the first as an example, so that a log in another format is reported, never silently empty."""
    MAX_EXAMPLE = 200

    def __init__(self):
        self.count = 0
        self.example = None

    def add(self, line):
        self.count += 1
        if self.example is None:
            self.example = printable(line[:self.MAX_EXAMPLE])

    def describe(self):
        return ("%d lines naming NVRM or SXid are in a format the kernel log reader does not know and were not read, "
                "for example: %s" % (self.count, self.example))


class _Clock:
    """Turns the timestamps of the supported formats into epoch seconds, with caches,
    because a 100k-line log repeats the same stamps and hours over and over."""

    def __init__(self, now, boot_time):
        self.now = now
        self.boot_time = boot_time
        self.this_year = time.localtime(now).tm_year
        self._local_hours = {}
        self.stamps = {}

    def local_hour(self, year, month, day, hour):
        key = (year, month, day, hour)
        epoch = self._local_hours.get(key)
        if epoch is None:
            try:
                epoch = time.mktime((year, month, day, hour, 0, 0, 0, 0, -1))
            except (OverflowError, ValueError):
                epoch = None
            self._local_hours[key] = epoch
        return epoch

    def syslog(self, month, day, hour, minute, second):
        """syslog lines carry no year: take the latest year that does not put the line
        more than a day after now (a log read on 2 January still holds December lines)."""
        for year in range(self.this_year, self.this_year - 5, -1):
            if month == 2 and day == 29 and not calendar.isleap(year):
                continue
            base = self.local_hour(year, month, day, hour)
            if base is None:
                return None
            epoch = base + minute * 60 + second
            if epoch <= self.now + 86400:
                return epoch
        return None

    def since_boot(self, seconds):
        if self.boot_time is None:
            return None
        return self.boot_time + seconds


def _offset_seconds(zone):
    if zone == "Z":
        return 0
    sign = -1 if zone[0] == "-" else 1
    digits = zone[1:].replace(":", "")
    return sign * (int(digits[:2]) * 3600 + int(digits[2:4] or 0) * 60)


def _iso_epoch(match, clock):
    year, month, day, hour, minute, second = (int(match.group(i)) for i in range(1, 7))
    fraction = match.group(7)
    frac = float("0." + fraction) if fraction else 0.0
    zone = match.group(8)
    if zone:
        try:
            base = calendar.timegm((year, month, day, hour, 0, 0, 0, 0, 0))
        except (OverflowError, ValueError):
            return None
        return base + minute * 60 + second + frac - _offset_seconds(zone)
    base = clock.local_hour(year, month, day, hour)
    return None if base is None else base + minute * 60 + second + frac


def format_epoch(epoch):
    """UTC ISO 8601, with microseconds only when the source had them; None for a time
    the platform cannot represent (a damaged line)."""
    whole = int(epoch)
    micro = int(round((epoch - whole) * 1000000))
    if micro >= 1000000:
        whole, micro = whole + 1, 0
    try:
        text = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(whole))
    except (OverflowError, OSError, ValueError):
        return None
    return "%s.%06dZ" % (text, micro) if micro else text + "Z"


def _placed(epoch, raw=None):
    """(epoch, time text, False): the epoch is dropped when it cannot be rendered."""
    text = format_epoch(epoch) if epoch is not None else None
    if text is None:
        return None, raw, False
    return epoch, text, False


def _line_time(line, clock):
    """(epoch or None, time text or None, is_kmsg) for one log line; the time text is
    ISO 8601 UTC when the epoch is known, else the raw seconds since boot."""
    level = _LEVEL_RE.match(line)
    if level is not None:
        line = line[level.end():]
        if not line:
            return None, None, False
    first = line[0]
    if first == "<":
        return _rfc5424_time(line, clock)
    if first == "[" or "0" <= first <= "9":
        match = _CTIME_RE.match(line) if first == "[" else _ISO_RE.match(line)
    else:
        match = _SYSLOG_RE.match(line)
    if match is not None:
        stamp = match.group(0)
        known = clock.stamps.get(stamp)
        if known is None:
            known = clock.stamps[stamp] = _placed(_absolute_epoch(match, first, clock))
        return known
    return _boot_relative_time(line, first, clock)


def _rfc5424_time(line, clock):
    header = _RFC5424_RE.match(line)
    match = _ISO_RE.match(line, header.end()) if header else None
    if match is None:
        return None, None, False
    stamp = match.group(0)
    known = clock.stamps.get(stamp)
    if known is None:
        known = clock.stamps[stamp] = _placed(_iso_epoch(match, clock))
    return known


def _absolute_epoch(match, first, clock):
    if first == "[":
        month, day, hour, minute, second, year = (
            _MONTHS[match.group(1)], int(match.group(2)), int(match.group(3)),
            int(match.group(4)), int(match.group(5)), int(match.group(6)))
        base = clock.local_hour(year, month, day, hour)
        return None if base is None else base + minute * 60 + second
    if "0" <= first <= "9":
        return _iso_epoch(match, clock)
    return clock.syslog(_MONTHS[match.group(1)], int(match.group(2)), int(match.group(3)),
                        int(match.group(4)), int(match.group(5)))


def _boot_relative_time(line, first, clock):
    if first == "[":
        match = _MONO_RE.match(line)
        if match:
            raw = "%s.%s" % (match.group(1), match.group(2))
            return _placed(clock.since_boot(float(raw)), raw)
    elif "0" <= first <= "9":
        match = _KMSG_RE.match(line)
        if match:
            usec = int(match.group(3))
            raw = "%d.%06d" % (usec // 1000000, usec % 1000000)
            epoch, text = _placed(clock.since_boot(usec / 1000000.0), raw)[:2]
            return epoch, text, True
    return None, None, False


def _unescape(text):
    """rsyslog writes a newline inside a message as '#012' (tab as '#011');
    /dev/kmsg writes it as '\\x0a'."""
    if "#01" in text:
        text = text.replace("#012", "\n").replace("#011", "\t")
    if "\\x0" in text:
        text = text.replace("\\x0a", "\n").replace("\\x09", "\t")
    return text


def _records(text, clock, cutoff, unplaced=None):
    """Groups the NVRM lines of a log into records; lines that continue a message
    (indented, as dmesg and journalctl print them) are appended to it. NVRM lines without a
    time stamp or sender the reader knows go to unplaced (an UnplacedLines), when given."""
    records = []
    current = None
    for line in text.splitlines():
        if not line:
            current = None
            continue
        first = line[0]
        if first == " " or first == "\t":
            # /dev/kmsg continuation lines are KEY=value properties, not message text
            if current is not None and not current.kmsg:
                current.text += "\n" + line.strip()
            continue
        if "NVRM" not in line and "SXid" not in line:
            current = None
            continue
        anchored = _MESSAGE_PREFIX_RE.match(line)
        if anchored is None:
            current = None
            if unplaced is not None and ("NVRM" in line or _SXID_SENDER_RE.search(line)) \
                    and _KNOWN_LINE_RE.match(line) is None:
                unplaced.add(line)
            continue
        start = anchored.end()
        epoch, time_text, kmsg = _line_time(line, clock)
        if cutoff is not None and epoch is not None and epoch < cutoff:
            current = None
            continue
        current = _Record(time_text, _unescape(line[start:]), kmsg)
        records.append(current)
    return records


def _flatten(text):
    """'NVRM: a\\nNVRM: b' -> 'a b': one line without the per-line NVRM prefixes."""
    if "\n" not in text:
        return text[5:].strip() if text.startswith("NVRM:") else text.strip()
    parts = []
    for part in text.split("\n"):
        part = part.strip()
        if part.startswith("NVRM:"):
            part = part[5:].strip()
        if part:
            parts.append(part)
    return " ".join(parts)


def _is_incomplete(flat):
    """Messages the driver prints over several records, cut before the part we need."""
    if flat.startswith(MISMATCH):
        return _KERNEL_VERSION_RE.search(flat) is None
    return flat.startswith("The NVIDIA GPU") and FALLEN not in flat


def _joined_records(records):
    """Yields (record, flat text), joining a message that syslog or journald stored as
    several records ('NVRM: API mismatch ... but' + 'NVRM: this kernel module ...')."""
    pending = None
    for record in records:
        flat = _flatten(record.text)
        if pending is not None:
            held, held_flat = pending
            if flat[:1].islower() and not _is_sxid(flat) and held.joined < _MAX_JOINED_RECORDS:
                held.joined += 1
                held_flat = held_flat + " " + flat
                if _is_incomplete(held_flat):
                    pending = (held, held_flat)
                else:
                    pending = None
                    yield held, held_flat
                continue
            pending = None
            yield held, held_flat
        if _is_incomplete(flat):
            pending = (record, flat)
            continue
        yield record, flat
    if pending is not None:
        yield pending


def _int_or_none(text):
    """'1234' -> 1234; None, '' and the driver's '<unknown>' -> None."""
    if text is None:
        return None
    text = text.strip("'")
    return int(text) if text.isdigit() else None


def _xid_event(match, time_text, pci_cache):
    pci, gpu_instance, compute_instance, xid, pid, name, message = match.groups()
    bus_id = pci_cache.get(pci)
    if bus_id is None:
        bus_id = pci_cache[pci] = normalize_pci_bus_id(pci)
    if name is not None:
        name = name.strip()
        if not name or name == "<unknown>":
            name = None
    return {
        "xid": int(xid),
        "pci_bus_id": bus_id,
        "time": time_text,
        "pid": _int_or_none(pid),
        "process_name": name,
        "gpu_instance_id": _int_or_none(gpu_instance),
        "compute_instance_id": _int_or_none(compute_instance),
        "message": message.strip(),
    }


def _fallen_event(flat, time_text):
    match = _FALLEN_PCI_RE.search(flat)
    return {
        "kind": "fallen_off_bus",
        "time": time_text,
        "pci_bus_id": normalize_pci_bus_id(match.group("pci")) if match else None,
        "message": flat,
    }


def _mismatch_event(flat, time_text):
    """Both versions, and the client's process where the driver names it. The process name is the
    client's own comm: data, kept printable and short."""
    client = _CLIENT_VERSION_RE.search(flat)
    kernel = _KERNEL_VERSION_RE.search(flat)
    name = client.group("name") if client else None
    if name is not None:
        name = "".join(char if char.isprintable() else "?" for char in name) or None
    return {
        "kind": "api_mismatch",
        "time": time_text,
        "pci_bus_id": None,
        "client_version": client.group("version") if client else None,
        "kernel_module_version": kernel.group(1) if kernel else None,
        "client_process": name,
        "client_pid": int(client.group("pid")) if client and client.group("pid") else None,
        "message": flat,
    }


def with_sm_location(event):
    """An Xid 13 or 31 event with the gpc, tpc and sm its message names (None where it names none)."""
    if event["xid"] not in SM_LOCATION_XIDS:
        return event
    match = _SM_LOCATION_RE.search(event["message"])
    event["gpc"], event["tpc"], event["sm"] = (
        tuple(_int_or_none(part) for part in match.groups()) if match else (None, None, None))
    return event


def _is_sxid(flat):
    return flat.startswith("nvidia-nvswitch") and _SXID_RE.match(flat) is not None


def _sxid_event(match, time_text):
    device, pci, number, rest = match.groups()
    rest = rest.strip()
    fatality = _SXID_FATALITY_RE.match(rest)
    link = _SXID_LINK_RE.search(rest) if fatality else None
    data = _SXID_DATA_RE.match(rest)
    return {
        "sxid": int(number),
        "device": "nvidia-nvswitch%s" % device,
        "pci_bus_id": normalize_pci_bus_id(pci),
        "time": time_text,
        "fatal": (fatality.group(1).lower() == "fatal") if fatality else None,
        "link": int(link.group(1)) if link else None,
        "data": data.group(1) if data else None,
        "message": rest,
    }


class _SxidJoiner:
    """Joins the lines the nvidia-nvswitch driver prints for one error (the line with Fatal/Non-fatal and the
    link, then ', Severity ...' and ', Data {...}') into one sxid event; yields each event once it is whole."""

    def __init__(self):
        self.pending = None

    def take(self, match, time_text):
        """The events finished by this SXid line, oldest first."""
        event = _sxid_event(match, time_text)
        held = self.pending
        if held is not None and self._continues(held, event):
            self._merge(held, event)
            return []
        self.pending = event
        return [held] if held is not None else []

    @staticmethod
    def _continues(held, event):
        return (_SXID_DETAIL_RE.match(event["message"]) is not None and held["sxid"] == event["sxid"]
                and held["device"] == event["device"] and held["pci_bus_id"] == event["pci_bus_id"]
                and not (event["data"] and held["data"]))

    @staticmethod
    def _merge(held, event):
        if event["data"]:
            held["data"] = event["data"]
        else:
            held["message"] = "%s; %s" % (held["message"], event["message"])

    def flush(self):
        held, self.pending = self.pending, None
        return [held] if held is not None else []


def _is_fallen(flat):
    return flat.startswith(("The NVIDIA GPU", "GPU ")) and FALLEN in flat


def iter_kernel_events(text, now=None, window_seconds=None, boot_time=None, unplaced=None, sxids=False):
    """("xid", event) and ("kernel", event) pairs of kernel log text, in log order; see parse_kernel_log.
    unplaced: an UnplacedLines that counts the NVRM lines of a format the reader does not know.
    sxids: also ("sxid", event) pairs for the NVSwitch errors (an event is yielded once its lines are whole)."""
    if not text:
        return
    now = time.time() if now is None else now
    cutoff = now - window_seconds if window_seconds is not None else None
    clock = _Clock(now, boot_time)
    pci_cache = {}
    joiner = _SxidJoiner()
    for record, flat in _joined_records(_records(text, clock, cutoff, unplaced)):
        if flat.startswith("Xid"):
            match = _XID_RE.match(flat)
            if match:
                yield "xid", with_sm_location(_xid_event(match, record.time, pci_cache))
        elif _is_fallen(flat):
            yield "kernel", _fallen_event(flat, record.time)
        elif flat.startswith(MISMATCH):
            yield "kernel", _mismatch_event(flat, record.time)
        elif sxids and flat.startswith("nvidia-nvswitch"):
            match = _SXID_RE.match(flat)
            for event in joiner.take(match, record.time) if match else ():
                yield "sxid", event
    for event in joiner.flush() if sxids else ():
        yield "sxid", event


def parse_kernel_log(text, now=None, window_seconds=None, boot_time=None, unplaced=None):
    """(xid_events, kernel_events) from kernel log text, in log order, every event (unbounded:
    collect_kernel_log keeps a bounded sample through EventBounds).

    now: epoch seconds (default: the current time), used for the window and to give
    syslog lines their year. window_seconds: drop events older than now - window; events
    whose time is unknown are kept. boot_time: epoch of boot, to place raw dmesg and
    /dev/kmsg times. A 'fallen off the bus' message for a GPU that also has an Xid 79
    in the same text is left out: the Xid event already says it. unplaced: an UnplacedLines
    that counts the NVRM lines of a format the reader does not know.
    """
    xid_events, kernel_events, _sxid_events = read_kernel_events(text, now, window_seconds, boot_time, unplaced)
    return xid_events, kernel_events


def read_kernel_events(text, now=None, window_seconds=None, boot_time=None, unplaced=None):
    """(xid_events, kernel_events, sxid_events): parse_kernel_log's two lists and the NVSwitch errors
    (SXid lines of the nvidia-nvswitch driver), every event, in log order."""
    events = {"xid": [], "kernel": [], "sxid": []}
    for kind, event in iter_kernel_events(text, now, window_seconds, boot_time, unplaced, sxids=True):
        events[kind].append(event)
    return events["xid"], _without_fallen_of_xid79(events["xid"], events["kernel"]), events["sxid"]


def _without_fallen_of_xid79(xid_events, kernel_events):
    fallen_with_xid = set(event["pci_bus_id"] for event in xid_events if event["xid"] == GPU_LOST_XID)
    if not fallen_with_xid:
        return kernel_events
    return [event for event in kernel_events
            if not (event["kind"] == "fallen_off_bus" and event["pci_bus_id"] in fallen_with_xid)]


# --- bounds -----------------------------------------------------------------------------

# Per group (an Xid on one GPU, one kind of kernel event on one GPU): the first and the last few
# events are kept whole, the others only counted, by hour.
KEEP_FIRST = 5
KEEP_LAST = 5
# Groups beyond these are only counted (a log naming thousands of bus ids is damaged or hostile).
MAX_XID_GROUPS = 64
MAX_KERNEL_GROUPS = 32
MAX_SXID_GROUPS = 32
# Hours of dropped events counted one by one; older ones are summed.
MAX_HOUR_BUCKETS = 168
_ISO_HOUR_RE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d")


class _Group:
    __slots__ = ("kind", "xid", "pci_bus_id", "count", "first_time", "last_time", "head", "tail",
                 "dropped", "untimed", "by_hour", "older", "older_until")

    def __init__(self, kind, xid, pci_bus_id):
        self.kind, self.xid, self.pci_bus_id = kind, xid, pci_bus_id
        self.count = 0
        self.first_time = self.last_time = None
        self.head, self.tail = [], collections.deque()
        self.dropped = self.untimed = self.older = 0
        self.by_hour = {}
        self.older_until = None

    def add(self, sequence, event):
        self.count += 1
        moment = event.get("time")
        if moment is not None:
            self.first_time = self.first_time or moment
            self.last_time = moment
        if len(self.head) < KEEP_FIRST:
            self.head.append((sequence, event))
            return
        if len(self.tail) >= KEEP_LAST:
            self._drop(self.tail.popleft()[1])
        self.tail.append((sequence, event))

    def _drop(self, event):
        self.dropped += 1
        moment = event.get("time") or ""
        if not _ISO_HOUR_RE.match(moment):
            self.untimed += 1
            return
        hour = moment[:13]
        self.by_hour[hour] = self.by_hour.get(hour, 0) + 1
        if len(self.by_hour) > MAX_HOUR_BUCKETS:
            oldest = min(self.by_hour)
            self.older += self.by_hour.pop(oldest)
            self.older_until = max(self.older_until or oldest, oldest)

    def kept(self):
        return self.head + list(self.tail)

    def summary(self):
        return {
            "kind": self.kind, "xid": self.xid, "pci_bus_id": self.pci_bus_id, "count": self.count,
            "kept": len(self.head) + len(self.tail), "first_time": self.first_time, "last_time": self.last_time,
            "dropped": {"count": self.dropped, "untimed": self.untimed,
                        "by_hour": dict(sorted(self.by_hour.items())), "older": self.older,
                        "older_until_hour": self.older_until},
        }


_GROUP_LIMITS = {"xid": MAX_XID_GROUPS, "kernel": MAX_KERNEL_GROUPS, "sxid": MAX_SXID_GROUPS}


def _group_kind(kind):
    """'xid', 'sxid', or 'kernel' for the kinds of kernel_event."""
    return kind if kind in ("xid", "sxid") else "kernel"


def _group_summary(group):
    """A group's summary; an NVSwitch error group names its number in sxid (xid is null)."""
    summary = group.summary()
    if group.kind == "sxid":
        summary["sxid"], summary["xid"] = summary["xid"], None
    return summary


class EventBounds:
    """Takes every event of a kernel log and keeps a bounded sample with exact counts: per group the
    first KEEP_FIRST and last KEEP_LAST events, the count, the first and last time, and the dropped
    events counted by hour so a shorter window can still count them."""

    def __init__(self):
        self._groups = collections.OrderedDict()
        self._sequence = 0
        self.ungrouped = {"xid": 0, "kernel": 0, "sxid": 0}
        self.oom_kills = []  # every OOM kill of the window (kernel_oom), bounded when the facts are written

    def add(self, kind, event):
        self._sequence += 1
        event = dict((key, printable(value)) for key, value in event.items())
        if kind == "xid":
            key = ("xid", event["xid"], event["pci_bus_id"])
        elif kind == "sxid":
            key = ("sxid", event["sxid"], event["pci_bus_id"])
        else:
            key = (event["kind"], None, event["pci_bus_id"])
        group = self._groups.get(key)
        if group is None:
            if self._group_count(kind) >= _GROUP_LIMITS[kind]:
                self.ungrouped[kind] += 1
                return
            group = self._groups[key] = _Group(*key)
        group.add(self._sequence, event)

    def add_all(self, xid_events, kernel_events, sxid_events=(), oom_kills=()):
        self.oom_kills.extend(oom_kills)
        for event in xid_events:
            self.add("xid", event)
        for event in kernel_events:
            self.add("kernel", event)
        for event in sxid_events:
            self.add("sxid", event)

    def _group_count(self, kind):
        return sum(1 for key in self._groups if _group_kind(key[0]) == kind)

    def sxid_events(self):
        """The kept NVSwitch error events, in log order."""
        kept = sorted((item for group in self._groups.values() if group.kind == "sxid" for item in group.kept()),
                      key=lambda item: item[0])
        return [event for _seq, event in kept]

    def _final_groups(self):
        """Without the 'fallen off the bus' of a GPU that has an Xid 79: the Xid already says it."""
        fallen_with_xid = set(key[2] for key in self._groups if key[0] == "xid" and key[1] == GPU_LOST_XID)
        return [group for key, group in self._groups.items()
                if not (key[0] == "fallen_off_bus" and key[2] in fallen_with_xid)]

    def result(self):
        """(xid_events, kernel_events, summary) with the kept events in log order."""
        groups = self._final_groups()
        xids = sorted((item for group in groups if group.kind == "xid" for item in group.kept()),
                      key=lambda item: item[0])
        kernel = sorted((item for group in groups if _group_kind(group.kind) == "kernel" for item in group.kept()),
                        key=lambda item: item[0])
        summary = {
            "events": sum(group.count for group in groups) + sum(self.ungrouped.values()),
            "kept": sum(len(group.head) + len(group.tail) for group in groups),
            "dropped": sum(group.dropped for group in groups),
            "ungrouped": sum(self.ungrouped.values()),
            "groups": [_group_summary(group) for group in groups],
        }
        return [event for _seq, event in xids], [event for _seq, event in kernel], summary


# --- collection -------------------------------------------------------------------------

SOURCES = KERNEL_LOG_SOURCES


def journalctl_argv(path, window_hours):
    """Kernel messages of every boot in the window: -k would mean the current boot only,
    and miss the Xid 79 logged just before the reboot that followed it."""
    argv = [path, "_TRANSPORT=kernel", "-o", "short-iso", "--no-pager"]
    if window_hours is not None:
        argv.append("--since=-%dh" % int(window_hours))
    return argv


def _read_boot_time(host):
    text = host.read_text("/proc/uptime")
    try:
        return host.now() - float(text.split()[0])
    except (AttributeError, IndexError, ValueError):
        return None


def _run_journalctl(host, facts, window_hours, timeout):
    path = host.find_bin("journalctl")
    if path is None:
        add_error(facts, None, "journalctl", "command not found")
        return None
    argv = journalctl_argv(path, window_hours)
    result = host.run(argv, timeout)
    if result.rc != 0:
        add_error(facts, None, " ".join(["journalctl"] + argv[1:]), result.describe_failure(), result.rc)
        return None
    return result.stdout


def _permission_denied(result):
    detail = (result.stderr or "") + (result.stdout or "")
    return "Operation not permitted" in detail or "Permission denied" in detail


def _run_dmesg(host, facts, timeout):
    """dmesg --ctime first; plain dmesg when this dmesg lacks the option (busybox).
    Returns (text, boot_time or None), or None when dmesg could not be read."""
    path = host.find_bin("dmesg")
    if path is None:
        add_error(facts, None, "dmesg", "command not found")
        return None
    result = host.run([path, "--ctime"], timeout)
    if result.rc == 0:
        return result.stdout, None
    add_error(facts, None, "dmesg --ctime", result.describe_failure(), result.rc)
    if result.timed_out or result.missing or _permission_denied(result):
        return None
    result = host.run([path], timeout)
    if result.rc == 0:
        return result.stdout, _read_boot_time(host)
    add_error(facts, None, "dmesg", result.describe_failure(), result.rc)
    return None


def _merge_without_duplicates(combined, events, key):
    """Adds events from another file, skipping the copies of events already taken
    (kern.log and syslog hold the same kernel lines)."""
    seen = collections.Counter(key(event) for event in combined)
    taken = collections.Counter()
    for event in events:
        identity = key(event)
        taken[identity] += 1
        if event["time"] is None or taken[identity] > seen[identity]:
            combined.append(event)


def _event_key(event):
    return tuple(sorted((k, str(v)) for k, v in event.items()))


def _parse_files(host, facts, files, now, window_seconds, unplaced):
    xids, kernel, sxids, oom_kills = [], [], [], []
    if not files:
        add_error(facts, None, "kernel log files", "source is files but no files were named")
        return xids, kernel, sxids, oom_kills
    for path in files:
        if str(path).endswith((".gz", ".xz", ".bz2", ".zst")):
            add_error(facts, None, "read %s" % path, "compressed log files are not read")
            continue
        text = host.read_text(path)
        if text is None:
            add_error(facts, None, "read %s" % path, "file is absent or not readable")
            continue
        file_xids, file_kernel, file_sxids = read_kernel_events(
            text, now=now, window_seconds=window_seconds, unplaced=unplaced)
        file_kernel.extend(_host_events(text, now, window_seconds, None))
        _merge_without_duplicates(xids, file_xids, _event_key)
        _merge_without_duplicates(kernel, file_kernel, _event_key)
        _merge_without_duplicates(sxids, file_sxids, _event_key)
        _merge_without_duplicates(oom_kills, _oom_kills(text, now, window_seconds, None), _event_key)
    return xids, kernel, sxids, oom_kills


def collect_kernel_log(host, facts, source="auto", files=None, window_hours=WINDOW_HOURS, timeout=20):
    """Fills facts['xid_events'], facts['kernel_events'] and facts['sxid_events'] (NVSwitch errors) with a bounded
    sample of the window's events (EventBounds) and facts['kernel_log'] with the source, the counts and the groups.

    source: auto (journalctl, falling back to dmesg), journalctl, dmesg or files.
    Returns the source actually read ('journalctl', 'dmesg', 'files'), or 'none' when
    none could be read; every failure is an entry in facts['errors'].
    """
    bounds = EventBounds()
    unplaced = UnplacedLines()
    read = _read_kernel_log(host, facts, bounds, unplaced, source, files, window_hours, timeout)
    xids, kernel, summary = bounds.result()
    facts["xid_events"].extend(xids)
    facts["kernel_events"].extend(kernel)
    facts["sxid_events"] = bounds.sxid_events()
    summary["source"] = read
    summary["unplaced_lines"] = unplaced.count
    summary["oom_kills"] = _host_oom_record(bounds.oom_kills)
    facts["kernel_log"] = summary
    if unplaced.count:
        add_error(facts, None, "kernel log", unplaced.describe())
    if summary["dropped"] or summary["ungrouped"]:
        add_error(facts, None, "kernel log", "%d events: kept the first %d and last %d of each Xid and GPU (%d kept); "
                  "%d more only counted, %d beyond %d groups only counted"
                  % (summary["events"], KEEP_FIRST, KEEP_LAST, summary["kept"], summary["dropped"],
                     summary["ungrouped"], MAX_XID_GROUPS))
    return read


def _host_oom_record(events):
    # kernel_oom imports this module's clock helpers: a top-level import would be a cycle
    from ansible_collections.gpufleet.core.plugins.module_utils.kernel_oom import host_oom_record
    return host_oom_record(events)


def _read_kernel_log(host, facts, bounds, unplaced, source, files, window_hours, timeout):
    if source not in SOURCES:
        add_error(facts, None, "kernel log", "unknown source %r; allowed: %s" % (source, ", ".join(SOURCES)))
        return "none"
    now = host.now()
    window_seconds = window_hours * 3600.0 if window_hours is not None else None
    if source == "files":
        bounds.add_all(*_parse_files(host, facts, files, now, window_seconds, unplaced))
        return "files"
    if source in ("auto", "journalctl"):
        text = _run_journalctl(host, facts, window_hours, timeout)
        if text is not None:
            _read_text(bounds, text, now, window_seconds, None, unplaced)
            return "journalctl"
        if source == "journalctl":
            return "none"
    answer = _run_dmesg(host, facts, timeout)
    if answer is None:
        return "none"
    text, boot_time = answer
    _read_text(bounds, text, now, window_seconds, boot_time, unplaced)
    return "dmesg"


def _stream(bounds, events):
    for kind, event in events:
        bounds.add(kind, event)


def _host_events(text, now, window_seconds, boot_time):
    """The host health events beside the NVIDIA ones (kernel_messages: AER, hung tasks, ...)."""
    # imported here: kernel_messages reads the time of a line with this module's clock
    from ansible_collections.gpufleet.core.plugins.module_utils.kernel_messages import iter_host_events
    return iter_host_events(text, now=now, window_seconds=window_seconds, boot_time=boot_time)


def _oom_kills(text, now, window_seconds, boot_time):
    # kernel_oom imports this module's clock helpers: a top-level import would be a cycle
    from ansible_collections.gpufleet.core.plugins.module_utils.kernel_oom import parse_oom_kills
    return parse_oom_kills(text, now=now, window_seconds=window_seconds, boot_time=boot_time)


def _read_text(bounds, text, now, window_seconds, boot_time, unplaced):
    """Every event of one kernel log text into bounds: NVIDIA's, the host's, the OOM kills."""
    _stream(bounds, iter_kernel_events(text, now=now, window_seconds=window_seconds, boot_time=boot_time,
                                       unplaced=unplaced, sxids=True))
    for event in _host_events(text, now, window_seconds, boot_time):
        bounds.add("kernel", event)
    bounds.oom_kills.extend(_oom_kills(text, now, window_seconds, boot_time))


def line_time(line, now=None, boot_time=None):
    """(epoch or None, time text or None) of one log line in any format parse_kernel_log reads; the text is
    UTC ISO 8601 when the epoch is known (local times are read in the time zone of the process)."""
    if not line:
        return None, None
    clock = _Clock(time.time() if now is None else now, boot_time)
    epoch, text, _kmsg = _line_time(line, clock)
    return epoch, text
