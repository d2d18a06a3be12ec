# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The shape of one timeline event, shared by every parser."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import calendar
import datetime
import re

from ansible_collections.gpufleet.core.plugins.plugin_utils.text_safety import safe_line

MAX_LINE = 500
_ISO_Z_RE = re.compile(r"^(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(?:\.(\d{1,6}))?Z$")


def iso(epoch):
    """UTC ISO 8601 of epoch seconds, with microseconds only when there are any."""
    if epoch is None:
        return None
    moment = datetime.datetime.fromtimestamp(epoch, tz=datetime.timezone.utc)
    if moment.microsecond:
        return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def epoch_of_iso(text):
    """Epoch seconds of a UTC ISO 8601 text ending in Z (as kernel_log and the reports write them), else None."""
    match = _ISO_Z_RE.match(text or "")
    if match is None:
        return None
    whole = calendar.timegm(tuple(int(match.group(i)) for i in range(1, 7)) + (0, 0, 0))
    fraction = match.group(7)
    return whole + (float("0." + fraction) if fraction else 0.0)


def event(epoch, host, layer, source, kind, summary, clock, file_name=None, line_number=None, line=None,
          gpu=None, **details):
    """One event. epoch None: the source gave no usable time (kept, listed after the timed ones)."""
    entry = {
        "time": iso(epoch),
        "epoch": epoch,
        "host": host,
        "gpu": gpu,
        "layer": layer,
        "source": source,
        "kind": kind,
        "summary": safe_line(summary, MAX_LINE),
        "clock": clock,
        "evidence": {"file": file_name, "line": line_number},
        "line": safe_line(line, MAX_LINE) if line is not None else None,
    }
    if details:
        entry["details"] = details
    return entry


def in_window(epoch, window):
    """True for an untimed event and for one inside [since, until]."""
    if epoch is None or not window:
        return True
    return window["since"] <= epoch <= window["until"]
