# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Reads what nccl-tests' all_reduce_perf (and the other *_perf programs) print.

    parse_nccl_tests(text) -> {"tool_version": str|None, "gpus": int|None, "rows": [{size_bytes, count, type, redop,
        time_us, algbw_gbs, busbw_gbs, wrong}], "peak_busbw_gbs", "avg_busbw_gbs", "out_of_bounds": int|None,
        "error_text": str|None}

Rows are the out-of-place figures. Layouts: 13 fields (size count type redop root time algbw busbw #wrong, then the
in-place four) since nccl-tests 2.x with redop/root; 12 (redop, no root); 11 (NCCL 2.6 era: no redop/root, and a
max-error float such as "0e+00" in place of #wrong: 0 when it is zero, else null). "[0]" rank tags glued into the
columns (multi-process runs) are removed first. "#wrong" "N/A" (validation off) is null. Output without a header or
without "# Avg bus bandwidth" is read all the same (the average is then null). error_text is the first "Test CUDA
failure ...", "Test NCCL failure ..." (or NCCL WARN) line, also when the output is quoted inside JSON (escaped newlines).
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re

_RANK_TAG = re.compile(r"\[\d+\]")
_AVG = re.compile(r"^#\s*Avg bus bandwidth\s*:\s*(?P<value>[-\d.eE+]+)")
_OUT_OF_BOUNDS = re.compile(r"^#\s*Out of bounds values\s*:\s*(?P<value>\d+)")
_NGPUS = re.compile(r"nThread\s+(?P<threads>\d+)\s+nGpus\s+(?P<gpus>\d+)")
_RANK_LINE = re.compile(r"^#\s+Rank\s+\d+\s+Group\s+\d+\s+Pid\s+\d+\s+on\s+\S+\s+device\s+\d+")
_VERSION = re.compile(r"nccl-tests version (?P<tests>\S+)|NCCL version (?P<nccl>[\d.]+\S*)")
# a failure line ends at the line's end, or at an escaped newline when the output is quoted inside JSON
_FAILURE = re.compile(r"((?:Test (?:CUDA |NCCL )?failure|NCCL failure|Cuda failure|NCCL WARN)[^\\\n]*)")


def _int(token):
    try:
        return int(token)
    except ValueError:
        return None


def _float(token):
    try:
        return float(token)
    except ValueError:
        return None


def _wrong(token):
    """#wrong as an int; "N/A" -> None; an old max-error float: 0 when it is 0, else None."""
    as_int = _int(token)
    if as_int is not None:
        return as_int
    as_float = _float(token)
    return 0 if as_float == 0.0 else None


def parse_row(line):
    """The out-of-place figures of one result row, or None when the line is not a row."""
    tokens = _RANK_TAG.sub(" ", line).split()
    if len(tokens) < 11 or _int(tokens[0]) is None or _int(tokens[1]) is None:
        return None
    size, count, kind = int(tokens[0]), int(tokens[1]), tokens[2]
    rest = tokens[3:]
    redop = None
    if rest and _float(rest[0]) is None:
        redop, rest = rest[0], rest[1:]
    if len(rest) == 9:
        rest = rest[1:]  # the root column (-1 for all_reduce)
    if len(rest) != 8:
        return None
    time_us, algbw, busbw = (_float(token) for token in rest[:3])
    if None in (time_us, algbw, busbw):
        return None
    return {"size_bytes": size, "count": count, "type": kind, "redop": redop, "time_us": time_us,
            "algbw_gbs": algbw, "busbw_gbs": busbw, "wrong": _wrong(rest[3])}


def parse_nccl_tests(text):
    rows, average, out_of_bounds, error, version, gpus, ranks = [], None, None, None, None, None, 0
    for line in (text or "").splitlines():
        stripped = _RANK_TAG.sub("", line.strip(), count=1).strip() if line.strip().startswith("[") else line.strip()
        found = _NGPUS.search(line)
        if found and gpus is None:
            gpus = int(found.group("threads")) * int(found.group("gpus"))
        if stripped.startswith("#"):
            found = _AVG.match(stripped)
            if found:
                average = _float(found.group("value"))
            found = _OUT_OF_BOUNDS.match(stripped)
            if found:
                out_of_bounds = int(found.group("value"))
            if _RANK_LINE.match(stripped):
                ranks += 1
            found = _VERSION.search(stripped)
            if found and version is None:
                version = found.group("tests") or found.group("nccl")
            continue
        failure = _FAILURE.search(line)
        if failure and error is None:
            error = failure.group(1).strip()
            continue
        row = parse_row(line)
        if row is not None:
            rows.append(row)
    peak = max(row["busbw_gbs"] for row in rows) if rows else None
    return {"tool_version": version, "gpus": ranks or gpus, "rows": rows, "peak_busbw_gbs": peak,
            "avg_busbw_gbs": average, "out_of_bounds": out_of_bounds, "error_text": error}
