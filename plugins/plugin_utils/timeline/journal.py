# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Service events from the systemd journal (`journalctl -o json`): starts, stops, failures with their
result (oom-kill, exit-code, signal), automatic restarts, processes that exited, units killed by the OOM
killer, and application lines that say CUDA or memory trouble. Times are the journal's own
__REALTIME_TIMESTAMP: microseconds since the epoch, UTC by definition."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
import re

from ansible_collections.gpufleet.core.plugins.plugin_utils.timeline.events import event

SOURCE = "journal"
CLOCK = "host clock, UTC (journal __REALTIME_TIMESTAMP)"
# systemd's catalog message ids (systemd/sd-messages.h)
MESSAGE_KINDS = {
    "39f53479d3a045ac8e11786248231fbf": "service_start",
    "9d1aaa27d60140bd96365438aad20286": "service_stop",
    "be02cf6855d2428ba40df7e9d022f03d": "service_failed",
    "5eb03494b6584870a536b337290809b3": "service_restart",
    "98e322203f7a4ed290d09fe03c09fe15": "service_exit",
    "d9b373ed55a64feb8242e02dbe79a49c": "service_result",
    "7ad2d189f7e94e70a38c781354912448": "service_stop",
    "fe6faa94e7774663a0da52717891d8ef": "oom_kill",
}
# the same events by their text, for journals without message ids
_UNIT_PREFIX = r"^(?:[^\s:]+: )?"
TEXT_KINDS = (
    (re.compile(_UNIT_PREFIX + r"Started "), "service_start"),
    (re.compile(_UNIT_PREFIX + r"Stopped "), "service_stop"),
    (re.compile(_UNIT_PREFIX + r"Scheduled restart job"), "service_restart"),
    (re.compile(r"killed by the OOM killer"), "oom_kill"),
    (re.compile(_UNIT_PREFIX + r"Failed with result '([^']+)'"), "service_result"),
    (re.compile(_UNIT_PREFIX + r"Main process exited, code=(\w+), status=(\S+)"), "service_exit"),
    (re.compile(_UNIT_PREFIX + r"Failed to start "), "service_failed"),
)
_APPLICATION_TROUBLE_RE = re.compile(
    r"CUDA error|CUDA out of memory|out of memory|CUBLAS_STATUS|NCCL (?:WARN|error)|Traceback \(most recent|"
    r"Segmentation fault|illegal memory access", re.I)
_RESULT_RE = re.compile(r"result '([^']+)'")
MAX_LINES = 200000


def _text(value):
    """journalctl writes a message that is not UTF-8 as a list of byte values."""
    if isinstance(value, list):
        try:
            return bytes(value).decode("utf-8", "replace")
        except (TypeError, ValueError):
            return ""
    return "" if value is None else str(value)


def classify(record):
    """(kind, unit) of a journal record, or (None, None) for one that is not a service event."""
    message = _text(record.get("MESSAGE"))
    unit = record.get("UNIT") or record.get("USER_UNIT")
    kind = MESSAGE_KINDS.get(record.get("MESSAGE_ID"))
    if kind is None and unit and record.get("_PID") in ("1", 1):
        for pattern, text_kind in TEXT_KINDS:
            if pattern.search(message):
                kind = text_kind
                break
    if kind is not None:
        return kind, unit or record.get("_SYSTEMD_UNIT")
    if _APPLICATION_TROUBLE_RE.search(message):
        return "service_log", record.get("_SYSTEMD_UNIT")
    return None, None


def _refine(kind, record, message):
    """A unit result of oom-kill is an OOM kill; a start job that did not finish is a failure."""
    result = record.get("UNIT_RESULT") or (_RESULT_RE.search(message).group(1) if _RESULT_RE.search(message) else None)
    if kind == "service_result":
        return ("oom_kill" if result == "oom-kill" else "service_failed"), result
    if kind == "service_start" and record.get("JOB_RESULT") not in (None, "done"):
        return "service_failed", record.get("JOB_RESULT")
    return kind, result


def _epoch(record):
    try:
        return int(record["__REALTIME_TIMESTAMP"]) / 1000000.0
    except (KeyError, TypeError, ValueError):
        return None


def journal_events(text, host, file_name, seen=None):
    """Timeline events of `journalctl -o json` text (one JSON object per line). seen: cursors already
    taken from another file of the same journal (they are skipped and added)."""
    found = []
    seen = set() if seen is None else seen
    for number, line in enumerate((text or "").splitlines()[:MAX_LINES], 1):
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if not isinstance(record, dict):
            continue
        cursor = record.get("__CURSOR")
        if cursor in seen:
            continue
        kind, unit = classify(record)
        if kind is None:
            continue
        if cursor:
            seen.add(cursor)
        message = _text(record.get("MESSAGE"))
        kind, result = _refine(kind, record, message)
        details = {"unit": unit, "boot_id": record.get("_BOOT_ID")}
        if result:
            details["result"] = result
        if record.get("_PID") not in (None, "1"):
            details["pid"] = int(record["_PID"]) if str(record["_PID"]).isdigit() else None
        layer = "workload"
        found.append(event(_epoch(record), host, layer, SOURCE, kind, "%s: %s" % (unit or "?", message), CLOCK,
                           file_name, number, message, **{k: v for k, v in details.items() if v is not None}))
    return found
