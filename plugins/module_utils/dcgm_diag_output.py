# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Reads what `dcgmi diag -r N [-j]` prints: the JSON of DCGM 3.x and 4.x, and the text table as a fallback.

    parse_dcgm_diag(text) -> {"format": "json"|"json_lenient"|"text"|None, "tool_version": str|None,
                              "tests": [{name, category, status, gpus: {"<index>": {status, messages}}, messages}],
                              "error": str|None}

Test names are kept as DCGM prints them ("GPU Memory" in 3.x, "memory" in 4.x). A status is one of pass, fail,
warn, skip. Layouts read:

- DCGM 3.x JSON: {"DCGM GPU Diagnostic": {"test_categories": [{"category", "tests": [{"name", "results":
  [{"gpu_id": "0", "status": "Pass", "warnings": [...], "info": [...]}]}]}]}, "version": "3.3.8"}.
- DCGM 4.x JSON: {"DCGM Diagnostic": {"test_categories": [... "results": [{"entity_group": "GPU", "entity_id": 0,
  "status": "Pass", "warnings": [{"warning": "...", "error_id": N}]}], "test_summary": {"status": "Fail"}]}]},
  "metadata": {"DCGM Version": "4.2.3"}}; results of other entity groups (CPU) are left out.
- JSON that is not valid (elided or cut when quoted) is read leniently, key by key, in the order it comes.
- The text table: 3.x "Pass - All", "Fail - GPU: 0" (one result per line, a test's results over several lines),
  "Skip - All"; 4.x "Fail" then "GPUn: Pass" lines; "Warning"/"Info" rows whose text DCGM wraps mid-word at the
  column width (joined back without a separator).
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
import re

STATUSES = {"pass": "pass", "passed": "pass", "fail": "fail", "failed": "fail", "warn": "warn", "warning": "warn",
            "skip": "skip", "skipped": "skip", "not run": "skip", "notrun": "skip"}
_RANK = {"fail": 3, "warn": 2, "pass": 1, "skip": 0}
_ROOT_KEYS = ("DCGM GPU Diagnostic", "DCGM Diagnostic")


def normal_status(value):
    """pass/fail/warn/skip for a status DCGM printed; anything unknown counts as warn, never as pass."""
    return STATUSES.get(str(value or "").strip().lower(), "warn")


def worst(statuses):
    """fail over warn over pass over skip; skip for none."""
    statuses = list(statuses)
    return max(statuses, key=lambda status: _RANK[status]) if statuses else "skip"


def new_test(name, category):
    return {"name": name, "category": category, "status": None, "gpus": {}, "messages": []}


def finish_test(test):
    if test["status"] is None:
        test["status"] = worst(result["status"] for result in test["gpus"].values())
    return test


def _message_text(item):
    if isinstance(item, dict):
        for key in ("warning", "info", "message", "msg"):
            if item.get(key):
                return str(item[key])
        return None
    return str(item) if item not in (None, "") else None


def _messages(result):
    found = []
    for key in ("warnings", "info", "errors"):
        values = result.get(key)
        if isinstance(values, (str, dict)):
            values = [values]
        for item in values or []:
            text = _message_text(item)
            if text:
                found.append(text)
    return found


def _result_gpu(result):
    """The GPU index of one result ("gpu_id" in 3.x, "entity_id" of the GPU entity group in 4.x), or None."""
    if "gpu_id" in result:
        return str(result["gpu_id"]).strip()
    group = str(result.get("entity_group", "GPU")).upper()
    if "entity_id" in result and group == "GPU":
        return str(result["entity_id"]).strip()
    return None


def _json_test(category, test):
    parsed = new_test(str(test.get("name")), category)
    for result in test.get("results") or []:
        if not isinstance(result, dict):
            continue
        gpu = _result_gpu(result)
        if gpu is None:
            continue
        parsed["gpus"][gpu] = {"status": normal_status(result.get("status")), "messages": _messages(result)}
    summary = test.get("test_summary")
    if isinstance(summary, dict) and summary.get("status"):
        parsed["status"] = normal_status(summary["status"])
        parsed["messages"] = _messages(summary)
    return finish_test(parsed)


def _json_version(document):
    metadata = document.get("metadata") if isinstance(document.get("metadata"), dict) else {}
    for value in (metadata.get("DCGM Version"), metadata.get("version"), document.get("version"),
                  document.get("DCGM Version")):
        if value:
            return str(value)
    return None


def parse_json_document(document):
    root = next((document[key] for key in _ROOT_KEYS if isinstance(document.get(key), dict)), None)
    if root is None:
        return None
    tests = []
    for category in root.get("test_categories") or []:
        if not isinstance(category, dict):
            continue
        for test in category.get("tests") or []:
            if isinstance(test, dict) and test.get("name"):
                tests.append(_json_test(category.get("category"), test))
    error = document.get("runtime_error") or root.get("runtime_error")
    return {"format": "json", "tool_version": _json_version(document), "tests": tests,
            "error": str(error) if error else None}


_JSON_PAIR = re.compile(r'"(category|name|gpu_id|entity_id|entity_group|status|warning|info|version|DCGM Version|'
                        r'runtime_error)"\s*:\s*(?:"((?:[^"\\]|\\.)*)"|(-?\d+))')


def parse_json_leniently(text):
    """The tests of JSON that does not parse (elided or cut), read key by key in document order."""
    tests, test, category, gpu, group, version, error = [], None, None, None, "GPU", None, None
    for match in _JSON_PAIR.finditer(text):
        key, value = match.group(1), match.group(2) if match.group(2) is not None else match.group(3)
        if key == "category":
            category = value
        elif key == "name":
            test = new_test(value, category)
            tests.append(test)
            gpu, group = None, "GPU"
        elif key == "entity_group":
            group = value.upper()
        elif key in ("gpu_id", "entity_id") and test is not None:
            gpu = value if group == "GPU" else None
        elif key == "status" and test is not None:
            if gpu is not None:
                test["gpus"][gpu] = {"status": normal_status(value), "messages": []}
                gpu = None
            else:
                test["status"] = normal_status(value)
        elif key in ("warning", "info") and test is not None:
            target = test["gpus"][gpu]["messages"] if gpu in test["gpus"] else test["messages"]
            target.append(value)
        elif key in ("version", "DCGM Version"):
            version = value
        elif key == "runtime_error":
            error = value
    return {"format": "json_lenient", "tool_version": version, "tests": [finish_test(t) for t in tests],
            "error": error}


# Text table: "| left | right |" rows; section rows "|-----  Deployment  ---" / "+-----  Hardware  ---".
_ROW = re.compile(r"^\|\s?(?P<left>[^|]*?)\s*\|\s?(?P<right>.*?)\s*\|?\s*$")
_SECTION = re.compile(r"^[|+]-+\s+(?P<name>[A-Za-z][\w /]*?)\s+-+")
_RESULT_3X = re.compile(r"^(?P<status>Pass|Fail|Warn|Skip)\s*-\s*(?:All|GPUs?:\s*(?P<gpus>[\d,\s]+))\s*$",
                        re.IGNORECASE)
_RESULT_4X = re.compile(r"^(?P<status>Pass|Fail|Warn|Skip|Not Run)$", re.IGNORECASE)
_GPU_LINE = re.compile(r"^GPU(?P<gpu>\d+):\s*(?P<status>Pass|Fail|Warn|Skip|Not Run)\s*$", re.IGNORECASE)
_MESSAGE_GPU = re.compile(r"^GPU (\d+)\b")
_MESSAGE_KINDS = ("warning", "info", "error")


class _TextTable:
    """Walks the rows of the table; tests with their results and messages."""

    def __init__(self):
        self.tests, self.section, self.metadata = [], None, {}
        self.test, self.message, self.all_gpus = None, None, set()

    def close_message(self):
        if self.message is not None and self.test is not None and self.message.strip():
            self.test["messages"].append(self.message.strip())
        self.message = None

    def set_results(self, status, gpus):
        status = normal_status(status)
        if gpus is None:
            self.test["all"] = status
            if self.test["status"] is None or _RANK[status] > _RANK[self.test["status"]]:
                self.test["status"] = status
            return
        for gpu in gpus:
            self.test["gpus"][gpu] = {"status": status, "messages": []}
            self.all_gpus.add(gpu)

    def result(self, text):
        """Reads a result line of the current test; False when the text is not one."""
        match = _RESULT_3X.match(text)
        if match:
            gpus = [g.strip() for g in match.group("gpus").split(",") if g.strip()] if match.group("gpus") else None
            self.set_results(match.group("status"), gpus)
            return True
        match = _GPU_LINE.match(text)
        if match:
            self.set_results(match.group("status"), [match.group("gpu")])
            return True
        match = _RESULT_4X.match(text)
        if match:
            self.set_results(match.group("status"), None)
            return True
        return False

    def row(self, left, right):
        right_text = right.strip()
        if left.lower() in _MESSAGE_KINDS:
            self.close_message()
            self.message = right
        elif left:
            self.close_message()
            if self.section == "Metadata":
                self.metadata[left] = right_text
                return
            self.test = new_test(left, self.section)
            self.test["all"] = None
            self.tests.append(self.test)
            self.result(right_text)
        elif self.message is not None and not _GPU_LINE.match(right_text) and not _RESULT_3X.match(right_text):
            # DCGM wraps a message at the column width, mid-word: the pieces join without a separator
            self.message += right
        elif self.test is not None:
            self.close_message()
            self.result(right_text)

    def detected_gpus(self):
        """Indexes of the GPUs the metadata lists ("GPU Device IDs Detected": one device id per GPU)."""
        ids = [part for part in re.split(r"[,\s]+", self.metadata.get("GPU Device IDs Detected", "")) if part]
        return [str(index) for index in range(len(ids))]

    def finish(self):
        self.close_message()
        gpus = sorted(self.all_gpus, key=int) or self.detected_gpus()
        for test in self.tests:
            everyone = test.pop("all")
            if everyone is not None and not test["gpus"]:
                for gpu in gpus:
                    test["gpus"][gpu] = {"status": everyone, "messages": []}
            attribute_messages(test)
            if test["status"] is None or test["gpus"]:
                statuses = [r["status"] for r in test["gpus"].values()] + ([everyone] if everyone else [])
                test["status"] = worst(statuses)
        return self.tests


def attribute_messages(test):
    """Moves the messages that start with "GPU n" to that GPU's messages (4.x prints them before its GPU lines)."""
    kept = []
    for message in test["messages"]:
        match = _MESSAGE_GPU.match(message)
        if match and match.group(1) in test["gpus"]:
            test["gpus"][match.group(1)]["messages"].append(message)
        else:
            kept.append(message)
    test["messages"] = kept


# dcgmi's table is 78 characters wide; the right column holds 45 characters of text (DCGM cuts longer text every 45
# characters, mid-word, and the pieces join back without a separator)
_TABLE_WIDTH = 78
_RIGHT_COLUMN = slice(30, 75)


def _right_column(line):
    if len(line) == _TABLE_WIDTH and line.endswith("  |") and line[28] == "|":
        return line[_RIGHT_COLUMN]
    right = line.split("|", 2)[2] if line.count("|") >= 2 else ""
    right = right[1:] if right.startswith(" ") else right
    return right.rstrip().rstrip("|").rstrip()


def _raw_rows(text):
    """(left, right) of each table row, with the section rows setting the section; None for a section row."""
    for line in text.splitlines():
        line = line.rstrip("\r\n")
        section = _SECTION.match(line)
        if section:
            yield section.group("name").strip(), None
            continue
        if not line.startswith("|") or line.startswith("+="):
            continue
        match = _ROW.match(line.rstrip())
        if match:
            yield match.group("left").strip(), _right_column(line)


def parse_text(text):
    table = _TextTable()
    for left, right in _raw_rows(text):
        if right is None:
            table.close_message()
            table.section = left
            continue
        if left == "Diagnostic" and right.strip() == "Result":
            continue
        table.row(left, right)
    tests = table.finish()
    version = table.metadata.get("DCGM Version")
    return {"format": "text" if tests or table.metadata else None, "tool_version": version.strip() if version else None,
            "tests": tests, "error": None}


def _json_part(text):
    start, end = text.find("{"), text.rfind("}")
    return text[start:end + 1] if start >= 0 and end > start else None


def parse_dcgm_diag(text):
    """What a dcgmi diag run reported; tests empty and format None when nothing could be read."""
    text = text or ""
    body = _json_part(text)
    if body is not None and any(key in body for key in _ROOT_KEYS):
        try:
            document = json.loads(body)
        except ValueError:
            document = None
        parsed = parse_json_document(document) if isinstance(document, dict) else None
        return parsed if parsed is not None else parse_json_leniently(body)
    if body is not None and '"runtime_error"' in body:
        return parse_json_leniently(body)
    return parse_text(text)


def gpu_verdicts(tests):
    """{"<index>": worst status} over every test that names the GPU."""
    verdicts = {}
    for test in tests:
        for gpu, result in test["gpus"].items():
            verdicts[gpu] = worst([verdicts[gpu], result["status"]]) if gpu in verdicts else result["status"]
    return verdicts
