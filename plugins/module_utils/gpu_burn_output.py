# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Reads what gpu-burn (wilicc/gpu-burn) prints; its exit status is not trusted (it exits 0 with FAULTY GPUs).

    parse_gpu_burn(text) -> {"per_gpu": {"<index>": {"result": "ok"|"faulty"|"died"|"unknown", "errors": int|None}},
                             "progress_lines": int, "init_error": str|None, "tested": int|None}

Progress lines: "46.7%  proc'd: 11367 (7109 Gflop/s) - 11100 (6743 Gflop/s)   errors: 0 - 0   temps: 62 C - 82 C"
(errors may be negative or carry "(WARNING!)"/"(DIED!)", and the next line may be glued to the end). The summary:
"Tested 2 GPUs:" then "GPU 0: OK" / "GPU 1: FAULTY". A GPU is "died" when a progress line marks it (DIED!),
"faulty" when the summary says so, "ok" only when the summary says OK and at least one progress line was printed
("OK" with no progress at all is "unknown": nothing was computed), "unknown" when the summary does not name it.
errors: the GPU's count on the last progress line (null when there was none).
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re

_PROGRESS = re.compile(r"proc'd:.*?errors:(?P<errors>.*?)(?:temps:|$)")
_ERROR_ITEM = re.compile(r"(?P<count>-?\d+)\s*(?P<mark>\((?:WARNING|DIED)!\))?")
_TESTED = re.compile(r"^\s*Tested (?P<count>\d+) GPUs:")
_VERDICT = re.compile(r"^\s*GPU (?P<gpu>\d+): (?P<verdict>OK|FAULTY)\s*$")
_INIT_ERROR = re.compile(r"Couldn't init a GPU test:.*|Error in \"[^\"]+\".*|No CUDA devices.*")
RESULTS = {"OK": "ok", "FAULTY": "faulty"}


def _progress_errors(segment):
    """[(count, mark)] per GPU of one progress line's errors segment."""
    return [(int(m.group("count")), m.group("mark")) for m in _ERROR_ITEM.finditer(segment)]


def parse_gpu_burn(text):
    last_errors, died, progress, verdicts, tested, init_error = [], set(), 0, {}, None, None
    in_summary = False
    for line in (text or "").splitlines():
        found = _PROGRESS.search(line)
        if found:
            progress += 1
            last_errors = _progress_errors(found.group("errors"))
            died.update(index for index, (_count, mark) in enumerate(last_errors) if mark == "(DIED!)")
            continue
        found = _TESTED.match(line)
        if found:
            tested, in_summary = int(found.group("count")), True
            continue
        found = _VERDICT.match(line)
        if found and in_summary:
            verdicts[found.group("gpu")] = RESULTS[found.group("verdict")]
            continue
        found = _INIT_ERROR.search(line)
        if found and init_error is None:
            init_error = found.group(0).strip()
    indexes = set(verdicts) | set(str(index) for index in range(len(last_errors))) | set(str(i) for i in died)
    per_gpu = {}
    for index in sorted(indexes, key=int):
        result = verdicts.get(index, "unknown")
        if int(index) in died:
            result = "died"
        elif result == "ok" and progress == 0:
            result = "unknown"
        errors = last_errors[int(index)][0] if int(index) < len(last_errors) else None
        per_gpu[index] = {"result": result, "errors": errors}
    return {"per_gpu": per_gpu, "progress_lines": progress, "init_error": init_error, "tested": tested}
