# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Reads what nvbandwidth (v0.2 to v0.8) prints: one block per test case.

    Running host_to_device_memcpy_ce.
    memcpy CE CPU(row) -> GPU(column) bandwidth (GB/s)
              0         1
    0     26.03     25.94

    SUM host_to_device_memcpy_ce 51.97

parse_nvbandwidth(text) -> {"tool_version": "v0.7"|None, "testcases": [{name, unit, per_gpu, matrix, sum, error}]}

A matrix cell "N/A" is null; the diagonal of a device-to-device matrix (0.00 or N/A) is no pair, not a failed one.
per_gpu: for a 1xN host<->device matrix each GPU's column value; for an Nx1 matrix each GPU's row value; for an
NxN device-to-device matrix the mean of each GPU's off-diagonal row. A test case that printed a data-validation
failure ("Invalid value when checking the pattern"), an ASSERT, a CUDA error or an abort has "error" (the first such
line); one whose output ends before its matrix has error "no bandwidth matrix was printed"; one nvbandwidth
"Waived." (device-to-device on one GPU) has error WAIVED.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re

_RUNNING = re.compile(r"^\s*Running (?P<name>[\w]+)\.?\s*$")
_MATRIX_TITLE = re.compile(r"bandwidth \((?P<unit>[^)]+)\)\s*$")
_SUM = re.compile(r"^\s*SUM (?P<name>\w+) (?P<value>[-\d.]+)\s*$")
_VERSION = re.compile(r"^\s*nvbandwidth Version:\s*(?P<version>\S+)")
_FAILURES = (re.compile(r"Invalid value when checking the pattern.*"), re.compile(r"ASSERT in expression.*"),
             re.compile(r"CUDA_ERROR_\w+.*|CUDA error.*|cuda error.*", re.IGNORECASE),
             re.compile(r"Aborted \(core dumped\)|Segmentation fault.*|terminate called.*"))
NO_MATRIX = "no bandwidth matrix was printed"
# nvbandwidth prints "Waived." for a test case the system cannot run (device-to-device with one GPU)
WAIVED = "waived: the test case does not apply to this system"


def _number(token):
    try:
        return float(token)
    except ValueError:
        return None


def _matrix_row(line, width):
    """[values] of a row "0     26.03  N/A ..." with `width` columns, or None when the line is not one."""
    tokens = line.split()
    if len(tokens) != width + 1 or not tokens[0].isdigit():
        return None
    values = [_number(token) for token in tokens[1:]]
    if any(value is None and token != "N/A" for value, token in zip(values, tokens[1:])):
        return None
    return values


def _mean(values):
    values = [value for value in values if value is not None]
    return round(sum(values) / len(values), 2) if values else None


def per_gpu(matrix):
    """{"<index>": GB/s}: the column values of a 1xN row, the row values of an Nx1 column, the off-diagonal row means
    of an NxN matrix."""
    if not matrix:
        return {}
    if len(matrix) == 1:
        return dict((str(index), value) for index, value in enumerate(matrix[0]) if value is not None)
    if all(len(row) == 1 for row in matrix):
        return dict((str(index), row[0]) for index, row in enumerate(matrix) if row[0] is not None)
    means = {}
    for index, row in enumerate(matrix):
        mean = _mean(value for column, value in enumerate(row) if column != index)
        if mean is not None:
            means[str(index)] = mean
    return means


def _failure(line):
    for pattern in _FAILURES:
        match = pattern.search(line)
        if match:
            return match.group(0).strip()
    return None


class _Case:
    def __init__(self, name):
        self.name, self.unit, self.width, self.rows = name, "GB/s", None, []
        self.total, self.error, self.in_matrix = None, None, False

    def read(self, line):
        title = _MATRIX_TITLE.search(line)
        if title:
            self.unit, self.in_matrix, self.width = title.group("unit"), True, None
            return
        if self.in_matrix and self.width is None and line.split() and all(t.isdigit() for t in line.split()):
            self.width = len(line.split())
            return
        if self.in_matrix and self.width is not None:
            row = _matrix_row(line, self.width)
            if row is not None:
                self.rows.append(row)
                return
            self.in_matrix = False
        if line.strip().lower().startswith("waived") and self.error is None:
            self.error = WAIVED
            return
        failure = _failure(line)
        if failure and self.error is None:
            self.error = failure

    def result(self):
        error = self.error
        if error is None and not self.rows:
            error = NO_MATRIX
        return {"name": self.name, "unit": self.unit, "per_gpu": per_gpu(self.rows), "matrix": self.rows,
                "sum": self.total, "error": error}


def parse_nvbandwidth(text):
    version, cases, case = None, [], None
    for line in (text or "").splitlines():
        found = _VERSION.match(line)
        if found and version is None:
            version = found.group("version")
            continue
        running = _RUNNING.match(line)
        if running:
            case = _Case(running.group("name"))
            cases.append(case)
            continue
        total = _SUM.match(line)
        if total:
            named = [c for c in cases if c.name == total.group("name")]
            if named:
                named[-1].total = _number(total.group("value"))
            continue
        if case is not None:
            case.read(line)
    return {"tool_version": version, "testcases": [c.result() for c in cases]}
