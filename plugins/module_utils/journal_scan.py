# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A GPU service's journal, searched for the failures that show first under concurrency.

Reads `journalctl -o json` (one entry a line; also `-o json-pretty`) and counts, per kind, the entries
whose MESSAGE matches: CUDA out of memory, NCCL errors, NCCL timeouts, illegal memory accesses, Python
tracebacks, and systemd's own note that the OOM killer hit the unit. Of each kind the first and the last
line are kept (time and text, printable and clipped), never more: a journal holds user data.

MESSAGE comes as a string, as an array of byte values (not UTF-8), as an array of strings (a field set
twice), or null (too large without --all). Old systemd wrote invalid escapes (\\uffffffd0); they are
read as the bytes they meant.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
import re
import time

MESSAGE_LIMIT = 300

# kind -> what the journal says; the first match wins, in this order
PATTERNS = (
    ("cuda_oom", re.compile(r"CUDA out of memory|CUBLAS_STATUS_ALLOC_FAILED|cudaErrorMemoryAllocation")),
    ("illegal_memory_access", re.compile(r"illegal memory access", re.IGNORECASE)),
    ("nccl_timeout", re.compile(r"Watchdog caught collective operation timeout|NCCL[^\n]{0,200}?tim(?:ed|e)[ -]?out"
                                r"|ProcessGroupNCCL[^\n]{0,200}?[Tt]imeout", re.IGNORECASE)),
    ("nccl_error", re.compile(r"NCCL error|NCCL WARN|nccl(?:System|Internal|UnhandledCuda|Remote|InvalidUsage"
                              r"|InvalidArgument)Error|ProcessGroupNCCL[^\n]{0,200}?Exception")),
    ("python_traceback", re.compile(r"Traceback \(most recent call last\)")),
    # systemd's whole message about the unit, so that text it quotes (a unit's description) never matches
    ("oom_killed", re.compile(r"^[\w@.:\\-]+: (?:A process of this unit has been killed by the OOM killer"
                              r"|Failed with result 'oom-kill')\.?$")),
)
KINDS = tuple(kind for kind, _pattern in PATTERNS)
# What systemd (PID 1) says about the unit; the other kinds are read only in the service's own messages, so that
# neither a service printing systemd's words nor systemd quoting the unit's description ("Started <description>")
# counts as the other.
SERVICE_MANAGER_KINDS = ("oom_killed",)
SERVICE_KINDS = tuple(kind for kind in KINDS if kind not in SERVICE_MANAGER_KINDS)

_BAD_ESCAPE = re.compile(r"(?:\\uffffff[0-9a-fA-F]{2})+")
_GPU_INDEX = re.compile(r"\bGPU (\d{1,2})\b")


def _bytes_of_escapes(match):
    raw = bytes(int(match.group(0)[i + 8:i + 10], 16) for i in range(0, len(match.group(0)), 10))
    return json.dumps(raw.decode("utf-8", "replace"))[1:-1]


def repair_escapes(text):
    """`\\uffffffd0\\uffffff9f` (systemd 224 and older) as the JSON escape of the UTF-8 text those bytes are."""
    return _BAD_ESCAPE.sub(_bytes_of_escapes, text) if "\\uffffff" in text else text


def message_text(value):
    """MESSAGE as text: a string, bytes as a list of integers, several values as a list of strings."""
    if value is None:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        if value and all(isinstance(item, int) and 0 <= item < 256 for item in value):
            return bytes(value).decode("utf-8", "replace")
        parts = [message_text(item) for item in value]
        return "\n".join(part for part in parts if part)
    return str(value)


def _decode(text):
    try:
        entry = json.loads(repair_escapes(text))
    except ValueError:
        return None
    return entry if isinstance(entry, dict) else None


def iter_entries(text):
    """(entry dict or None, raw text) for each journal entry of `-o json` or `-o json-pretty` output; None
    for an entry that does not parse (cut off, not JSON). Lines outside an entry are skipped."""
    buffer = []
    for line in (text or "").splitlines():
        stripped = line.strip()
        if line.startswith("{"):
            if buffer:
                yield None, "\n".join(buffer)
            buffer = [line]
            if stripped.endswith("}"):
                raw = "\n".join(buffer)
                buffer = []
                yield _decode(raw), raw
            continue
        if not buffer:
            continue
        buffer.append(line)
        if stripped == "}":
            raw = "\n".join(buffer)
            buffer = []
            yield _decode(raw), raw
    if buffer:
        yield None, "\n".join(buffer)


def entry_time(entry):
    """ISO 8601 UTC of __REALTIME_TIMESTAMP (microseconds since the epoch), or None."""
    try:
        micros = int(entry.get("__REALTIME_TIMESTAMP"))
    except (TypeError, ValueError):
        return None
    whole, micro = divmod(micros, 1000000)
    try:
        return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(whole)) + (".%06dZ" % micro if micro else "Z")
    except (OverflowError, OSError, ValueError):
        return None


def clip(text, limit=MESSAGE_LIMIT):
    """Host text as data: printable characters only (a newline becomes a space), at most limit of them."""
    if text is None:
        return None
    text = text.strip()
    cleaned = "".join(char if char.isprintable() else " " for char in text[:limit])
    return cleaned + ("..." if len(text) > limit else "")


def classify(message, kinds=KINDS):
    """The kind of a message among kinds (see PATTERNS), or None."""
    if not message:
        return None
    for kind, pattern in PATTERNS:
        if kind in kinds and pattern.search(message):
            return kind
    return None


def sender_kinds(entry):
    """The kinds an entry can be: journald's trusted _PID says whether systemd or the service wrote it."""
    return SERVICE_MANAGER_KINDS if entry.get("_PID") in ("1", 1) else SERVICE_KINDS


def new_match():
    return {"count": 0, "first": None, "last": None}


def new_scan():
    return {"entries": 0, "unparsed": 0, "matches": dict((kind, new_match()) for kind in KINDS), "cuda_oom_gpus": []}


def _line(entry, message):
    return {"time": entry_time(entry), "pid": _int(entry.get("_PID")), "message": clip(message)}


def _int(value):
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def scan_journal(text):
    """Counts of each kind of failure in journal JSON, with the first and last line of each."""
    scan = new_scan()
    oom_gpus = set()
    for entry, _raw in iter_entries(text):
        if entry is None:
            scan["unparsed"] += 1
            continue
        scan["entries"] += 1
        message = message_text(entry.get("MESSAGE"))
        kind = classify(message, sender_kinds(entry))
        if kind is None:
            continue
        match = scan["matches"][kind]
        match["count"] += 1
        line = _line(entry, message)
        if match["first"] is None:
            match["first"] = line
        match["last"] = line
        if kind == "cuda_oom":
            oom_gpus.update(int(index) for index in _GPU_INDEX.findall(message))
    scan["cuda_oom_gpus"] = sorted(oom_gpus)
    return scan


def journalctl_argv(path, unit, window_hours, max_entries):
    """The unit's entries of the window (every boot), newest max_entries, as JSON with full fields."""
    return [path, "--unit=%s" % unit, "--output=json", "--all", "--no-pager",
            "--since=-%dh" % int(window_hours), "--lines=%d" % int(max_entries)]
