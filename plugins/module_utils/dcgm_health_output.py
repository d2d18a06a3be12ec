# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Reads DCGM's other reports around a diagnostic: `dcgmi health -c [-j]`, `dcgmi nvlink --link-status` and the nvvs
debug log (nv-hostengine's diagnostic log). None of them is a GPU verdict on its own: DCGM health says "Healthy" for a
GPU that needs a reset (NVIDIA/DCGM#263), and "NvLink link down" on a GPU that has no NVLink is no fault (decide with
the link capability, not the link state).

    parse_dcgm_health(text) -> {"overall": "Healthy"|"Warning"|"Failure"|None, "systems": [{"entity": str|None,
                                "system": str, "health": str, "messages": [str]}]}
    parse_nvlink_link_status(text) -> {"gpus": {"<gpuId>": ["U"|"D"|"X"|"_", ...]}, "nvswitches": {...}}
    parse_nvvs_log(text) -> {"results": {test: int}, "errors": [{"test": str, "message": str}],
                             "blank_values": [{"gpu": int, "field": str, "meaning": str}]}

In the nvvs log, "Test X had result N" is the plugin's result code (0 pass; anything else is not a pass) and a value
of 9223372036854775792 or more for a field is one of DCGM's "blank" sentinels (no value), never a count.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
import re

# dcgm_structs.h: DCGM_INT64_BLANK and the sentinels just above it
DCGM_INT64_BLANK = 0x7FFFFFFFFFFFFFF0
BLANK_MEANINGS = {0: "blank", 1: "not found", 2: "not supported", 3: "not permissioned"}

_HEALTH_ROW = re.compile(r"^\|\s*(?P<left>[^|]*?)\s*\|\s*(?P<right>[^|]*?)\s*\|?\s*$")
_HEALTH_WORDS = ("Healthy", "Warning", "Failure")
_LINK_GPU = re.compile(r"^\s*gpuId (?P<id>\d+):\s*$")
_LINK_SWITCH = re.compile(r"^\s*physicalId (?P<id>\d+):\s*$")
_LINK_STATES = re.compile(r"^\s*(?P<states>(?:[UDX_]\s*)+)$")
_NVVS_RESULT = re.compile(r"\]\s+Test (?P<test>.+?) had result (?P<code>-?\d+)")
_NVVS_ERROR = re.compile(r"\bERROR\s+\[[\d:]+\]\s+(?:\[\[(?P<plugin>[^\]]+)\]\]\s+)?(?P<message>.*?)(?:\s+\[/\S+\]\s+\[\S+\])?\s*$")
_NVVS_BLANK = re.compile(r"gpuId (?P<gpu>\d+) returned status \d+, value (?P<value>\d+)\s*for (?P<field>DCGM_FI_\w+)")


def _health_json(text):
    start, end = text.find("{"), text.rfind("}")
    try:
        document = json.loads(text[start:end + 1]) if start >= 0 else None
    except ValueError:
        return None
    if not isinstance(document, dict) or not isinstance(document.get("body"), dict):
        return None
    overall = (document["body"].get("Overall Health") or {}).get("value")
    systems = []
    for entity, value in document["body"].items():
        if entity == "Overall Health" or not isinstance(value, dict):
            continue
        for system, detail in (value.get("children") or value).items():
            if isinstance(detail, dict) and "value" in detail:
                systems.append({"entity": entity, "system": system, "health": detail["value"],
                                "messages": [str(m) for m in detail.get("messages") or []]})
    return {"overall": overall, "systems": systems}


def parse_dcgm_health(text):
    """The overall health and each system's, from the JSON (-j) or the table."""
    text = text or ""
    parsed = _health_json(text)
    if parsed is not None:
        return parsed
    overall, entity, systems = None, None, []
    for line in text.splitlines():
        row = _HEALTH_ROW.match(line.rstrip())
        if not row:
            continue
        left, right = row.group("left"), row.group("right")
        if left == "Overall Health":
            overall = right or None
        elif left.startswith("-> ") and right in _HEALTH_WORDS:
            name = left[3:].strip()
            if name.isdigit() or name.startswith("GPU"):
                entity = name
            else:
                systems.append({"entity": entity, "system": name, "health": right, "messages": []})
        elif not left and right and systems:
            systems[-1]["messages"].append(right)
    return {"overall": overall, "systems": systems}


def parse_nvlink_link_status(text):
    """Link states per GPU (and NVSwitch) id: U up, D down, X disabled, _ not supported."""
    found, current, kind = {"gpus": {}, "nvswitches": {}}, None, "gpus"
    for line in (text or "").splitlines():
        if line.strip().startswith("NvSwitches:"):
            kind, current = "nvswitches", None
            continue
        header = _LINK_GPU.match(line) or _LINK_SWITCH.match(line)
        if header:
            current = header.group("id")
            found[kind][current] = []
            continue
        states = _LINK_STATES.match(line)
        if states and current is not None:
            found[kind][current] += states.group("states").split()
    return found


def blank_meaning(value):
    """What a DCGM int64 sentinel stands for ("not supported"), or None for a real value."""
    offset = value - DCGM_INT64_BLANK
    return BLANK_MEANINGS.get(offset, "blank") if offset >= 0 else None


def parse_nvvs_log(text):
    results, errors, blanks = {}, [], []
    for line in (text or "").splitlines():
        found = _NVVS_RESULT.search(line)
        if found:
            results[found.group("test")] = int(found.group("code"))
        found = _NVVS_ERROR.search(line)
        if found:
            errors.append({"test": found.group("plugin"), "message": found.group("message")})
        found = _NVVS_BLANK.search(line)
        if found and blank_meaning(int(found.group("value"))):
            blanks.append({"gpu": int(found.group("gpu")), "field": found.group("field"),
                           "meaning": blank_meaning(int(found.group("value")))})
    return {"results": results, "errors": errors, "blank_values": blanks}
