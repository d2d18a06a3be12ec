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

from ansible_collections.gpufleet.core.plugins.module_utils.ipmi_sensors import OddLines, clean_field, complete_lines

# Records of the window kept whole (the latest ones); the others are only counted.
MAX_SEL_EVENTS = 100

_DATE_RE = re.compile(r"^(\d{1,2})/(\d{1,2})/(\d{2}|\d{4})$")
_TIME_RE = re.compile(r"^(\d{1,2}):(\d{2}):(\d{2})(?:\s+(GMT|UTC|Z))?$")
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
    try:
        epoch = calendar.timegm((year, month, day, int(clock.group(1)), int(clock.group(2)), int(clock.group(3))))
    except (ValueError, OverflowError):
        return None
    return format_epoch(epoch)


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
    """Records of `sel elist` / `sel list`, in log order. Lines of another shape and a last line cut mid-line
    are not read, and dates in a form not read (another locale) leave their records untimed: all said in
    problems (a list), when given."""
    problems = [] if problems is None else problems
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


def window_events(records, now, window_hours):
    """{events, count, untimed, dropped, by_severity} of the records in the window (records without a
    time are kept: the BMC clock was not set, they may be recent). The latest MAX_SEL_EVENTS are kept."""
    cutoff = now - window_hours * 3600 if now is not None else None
    chosen = [record for record in records if record["time"] is None or cutoff is None
              or (iso_epoch(record["time"]) or 0) >= cutoff]
    by_severity = {"critical": 0, "warning": 0, "info": 0}
    for record in chosen:
        by_severity[record["severity"]] += 1
    kept = chosen[-MAX_SEL_EVENTS:]
    return {"events": kept, "count": len(chosen), "untimed": sum(1 for record in chosen if record["time"] is None),
            "dropped": len(chosen) - len(kept), "by_severity": by_severity, "total_records": len(records)}


def parse_sel_clock(text):
    """Epoch seconds of `ipmitool -Z sel time get` ("12/02/26 01:10:10 GMT"), or None."""
    match = _CLOCK_RE.search(text or "")
    if match is None:
        return None
    stamp = record_time(match.group(1), match.group(2))
    return iso_epoch(stamp) if stamp else None
