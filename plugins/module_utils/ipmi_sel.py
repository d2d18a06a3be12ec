# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The BMC's System Event Log as `ipmitool -Z sel elist` (or `sel list`) prints it: one record per line,
`id | date | time | sensor | event | direction [| detail]`, with times in UTC (-Z) so they line up with
the kernel's Xid lines. Each record gets a severity from its text; a condition that a later record
deasserts is marked cleared."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import calendar
import re
import time

from ansible_collections.gpufleet.core.plugins.module_utils.ipmi_sensors import (
    OddLines, clean_field, complete_lines, key_value_blocks)

# Records of the window kept whole (the latest ones); the others are only counted.
MAX_SEL_EVENTS = 100

_DATE_RE = re.compile(r"^(\d{1,2})/(\d{1,2})/(\d{2}|\d{4})$")
_TIME_RE = re.compile(r"^(\d{1,2}):(\d{2}):(\d{2})(?:\s*([AaPp][Mm]))?(?:\s+([A-Za-z]{1,5}|[+-]\d{4}))?$")
# Zones ipmitool may print after a time (its %Z: -Z gives UTC, else the zone of the machine that ran it), in hours
# east of UTC. A zone not listed leaves the record without a time (said in problems), never a time off by hours.
ZONE_OFFSETS_H = {"gmt": 0, "utc": 0, "z": 0, "wet": 0, "west": 1, "bst": 1, "cet": 1, "cest": 2, "eet": 2,
                  "eest": 3, "msk": 3, "ist": 5.5, "cst": -6, "cdt": -5, "est": -5, "edt": -4, "mst": -7, "mdt": -6,
                  "pst": -8, "pdt": -7, "jst": 9, "kst": 9}
_CLOCK_RE = re.compile(r"(\d{1,2}/\d{1,2}/(?:\d{4}|\d{2}))\s+(\d{1,2}:\d{2}:\d{2})")

# (words in the event text or sensor name, severity), lower case; the first match wins, so the more
# specific words come first ("uncorrectable" before "correctable", "non-critical going" before "critical going").
_SEVERITY_WORDS = (
    ("uncorrectable", "critical"),
    ("non-critical going", "warning"),
    ("transition to non-critical", "warning"),
    ("predictive failure", "warning"),
    ("correctable", "warning"),
    ("sufficient from", "warning"),
    ("sufficient resources from", "warning"),
    ("insufficient resources", "critical"),
    ("non-redundant", "warning"),
    ("redundancy degraded", "warning"),
    ("chassis intrusion", "warning"),
    ("log almost full", "warning"),
    ("log full", "warning"),
    ("failure detected", "critical"),
    ("ac lost", "critical"),
    ("input lost", "critical"),
    ("fatal", "critical"),
    ("non-recoverable", "critical"),
    ("critical going", "critical"),
    ("transition to critical", "critical"),
    ("redundancy lost", "critical"),
    ("machine check", "critical"),
    ("ierr", "critical"),
    ("thermal trip", "critical"),
    ("pci serr", "critical"),
    ("pci perr", "critical"),
    ("processor config error", "critical"),
)


def _year(text):
    year = int(text)
    return year + 2000 if year < 100 else year


def record_time(date_text, time_text):
    """ISO 8601 UTC time of a record, or None when the BMC clock was not set (Pre-Init) or the text is
    not a date."""
    date, clock = _DATE_RE.match(date_text.strip()), _TIME_RE.match(time_text.strip())
    if date is None or clock is None:
        return None
    month, day, year = int(date.group(1)), int(date.group(2)), _year(date.group(3))
    hour, offset = _hour_of_day(int(clock.group(1)), clock.group(4)), zone_offset_s(clock.group(5))
    if hour is None or offset is None:
        return None
    try:
        epoch = calendar.timegm((year, month, day, hour, int(clock.group(2)), int(clock.group(3))))
    except (ValueError, OverflowError):
        return None
    return format_epoch(epoch - offset)


def _hour_of_day(hour, half):
    """The 24-hour hour of a 12-hour clock's ("01:22:53 PM") or a 24-hour clock's hour; None when not a time."""
    if half is None:
        return hour
    if not 1 <= hour <= 12:
        return None
    return hour % 12 + (12 if half.lower() == "pm" else 0)


def zone_offset_s(zone):
    """Seconds east of UTC of a zone ipmitool printed ("GMT", "WET", "+0100"); no zone is UTC (-Z); None for a
    zone not known."""
    if zone is None:
        return 0
    if zone[0] in "+-":
        sign = -1 if zone[0] == "-" else 1
        return sign * (int(zone[1:3]) * 3600 + int(zone[3:5]) * 60)
    hours = ZONE_OFFSETS_H.get(zone.lower())
    return None if hours is None else int(hours * 3600)


def format_epoch(epoch):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))


def iso_epoch(text):
    try:
        return calendar.timegm(time.strptime(text, "%Y-%m-%dT%H:%M:%SZ"))
    except (TypeError, ValueError):
        return None


def event_severity(sensor, event):
    """The severity of a record from its event text, the column that carries the state. The sensor column names
    the sensor (the BMC vendor's free text: "PSU Failure Sensor" is a name, not a failure) and decides nothing."""
    del sensor
    text = event.lower()
    for words, severity in _SEVERITY_WORDS:
        if words in text:
            return severity
    return "info"


# The date a BMC whose clock was not set gives its records
PRE_INIT = "pre-init"


def parse_sel(text, problems=None):
    """Records of `sel elist` / `sel list` (or of `sel get`, parse_sel_get), in log order. Lines of another shape and a last line cut mid-line
    are not read, and dates in a form not read (another locale) leave their records untimed: all said in
    problems (a list), when given."""
    problems = [] if problems is None else problems
    if _SEL_GET_RE.search(text or ""):
        return parse_sel_get(text, problems)
    records = []
    odd = OddLines("lines of another shape than ipmitool's event log, not read")
    dates = OddLines("records with a date in a form not read (another locale?), kept without a time")
    for line in complete_lines(text, problems):
        fields = [clean_field(field) for field in line.split("|")]
        if len(fields) < 6 or not fields[0]:
            odd.add(line)
            continue
        record_id, date_text, time_text, sensor, event, direction = fields[:6]
        if direction.lower() not in ("asserted", "deasserted"):
            odd.add(line)
            continue
        timed = record_time(date_text, time_text)
        if timed is None and date_text.lower() != PRE_INIT:
            dates.add(line)
        records.append({
            "id": record_id,
            "time": timed,
            "raw_time": None if timed else ("%s %s" % (date_text, time_text)).strip(),
            "sensor": sensor,
            "event": event,
            "asserted": direction.lower() == "asserted",
            "detail": " | ".join(fields[6:]) or None,
            "severity": event_severity(sensor, event),
            "cleared": False,
        })
    _mark_cleared(records)
    odd.report(problems)
    dates.report(problems)
    return records


_SEL_GET_RE = re.compile(r"^SEL Record ID\s*:", re.MULTILINE)
_STAMP_RE = re.compile(r"^(\S+)\s+(.+)$")


def parse_sel_get(text, problems=None):
    """Records of `ipmitool sel get ID...`: one "SEL Record ID : 0000" block each, with its Timestamp, Sensor Type
    and Number, Event Direction (Assertion Event, Deassertion Event) and Description; the sensor's own block that
    ipmitool prints after a record ("Sensor ID : ...") is not a record."""
    problems = [] if problems is None else problems
    records = []
    dates = OddLines("records with a date in a form not read (another locale?), kept without a time")
    for block in key_value_blocks(text, "SEL Record ID"):
        stamp = _STAMP_RE.match(clean_field((block.get("Timestamp") or [""])[0]))
        timed = record_time(stamp.group(1), stamp.group(2)) if stamp else None
        raw_time = None if timed else clean_field((block.get("Timestamp") or [""])[0]) or None
        if timed is None and raw_time and not raw_time.lower().startswith(PRE_INIT):
            dates.add("| %s" % raw_time)
        number = clean_field((block.get("Sensor Number") or [""])[0])
        sensor = clean_field((block.get("Sensor Type") or [""])[0]) + (" #0x%s" % number if number else "")
        event = clean_field((block.get("Description") or [""])[0])
        direction = clean_field((block.get("Event Direction") or [""])[0]).lower()
        records.append({
            "id": clean_field(block["SEL Record ID"][0]), "time": timed, "raw_time": raw_time,
            "sensor": sensor, "event": event, "asserted": not direction.startswith("deassertion"),
            "detail": None, "severity": event_severity(sensor, event), "cleared": False,
        })
    _mark_cleared(records)
    dates.report(problems)
    return records


def _mark_cleared(records):
    """An asserted record is cleared when a later record deasserts the same sensor and event."""
    pending = {}
    for record in records:
        key = (record["sensor"], record["event"])
        if record["asserted"]:
            pending.setdefault(key, []).append(record)
        else:
            for earlier in pending.pop(key, []):
                earlier["cleared"] = True


# Events that assert a state the sensor keeps until a deassertion ends it (a supply's failure, its lost input, lost
# redundancy), unlike a one-time event (an ECC error, a bus error) that is never deasserted
STATE_EVENT_WORDS = ("failure detected", "ac lost", "input lost", "redundancy lost", "insufficient resources")
# Such states asserted before the window and never deasserted, kept (the latest ones)
MAX_OPEN_BEFORE_WINDOW = 10


def is_state_event(record):
    return any(words in record["event"].lower() for words in STATE_EVENT_WORDS)


def window_events(records, now, window_hours):
    """{events, count, untimed, dropped, by_severity, open_before_window} of the records in the window (records
    without a time are kept: the BMC clock was not set, they may be recent). The latest MAX_SEL_EVENTS are kept.
    open_before_window: critical states asserted before the window and never deasserted since (a power supply that
    failed a year ago and was never replaced), the latest of each sensor and event."""
    cutoff = now - window_hours * 3600 if now is not None else None
    chosen = [record for record in records if record["time"] is None or cutoff is None
              or (iso_epoch(record["time"]) or 0) >= cutoff]
    by_severity = {"critical": 0, "warning": 0, "info": 0}
    for record in chosen:
        by_severity[record["severity"]] += 1
    kept = chosen[-MAX_SEL_EVENTS:]
    return {"events": kept, "count": len(chosen), "untimed": sum(1 for record in chosen if record["time"] is None),
            "dropped": len(chosen) - len(kept), "by_severity": by_severity, "total_records": len(records),
            "open_before_window": _open_before(records, chosen)}


def _open_before(records, chosen):
    in_window = set(id(record) for record in chosen)
    latest = {}
    for record in records:
        if (id(record) not in in_window and record["asserted"] and not record["cleared"]
                and record["severity"] == "critical" and is_state_event(record)):
            latest[(record["sensor"], record["event"])] = record
    return sorted(latest.values(), key=lambda record: record["time"] or "")[-MAX_OPEN_BEFORE_WINDOW:]


def parse_sel_clock(text):
    """Epoch seconds of `ipmitool -Z sel time get` ("12/02/26 01:10:10 GMT"), or None."""
    match = _CLOCK_RE.search(text or "")
    if match is None:
        return None
    stamp = record_time(match.group(1), match.group(2))
    return iso_epoch(stamp) if stamp else None
