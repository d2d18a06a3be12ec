# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Xid messages decoded as NVIDIA decodes them (data/xid_decode.yml):

    decode_message(145, "RLW_RXPIPE Nonfatal XC0 i0 Link 13 (0x0409a0c2 0x00000008 ...)")
        -> {"resolution": "IGNORE", "severity": "info", "action": "...", "detail": {...}}
    group_verdict(74, events, "hopper", catalog_entry) -> the severity and action of a group of events
    xid154_recovery_action("GPU recovery action changed from 0x0 (None) to 0x4 (Drain and Reset)")
        -> "drain_and_reset"
    recovery_action("node_reboot") -> {"severity": "critical", "action": "..."}

A message that does not decode gives None: the Xid catalog's entry then stands (for Xid 74 a critical
finding, for 144-150 a warning, or a GPU reset when the message says Fatal).
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import functools
import os
import re

import yaml

from ansible_collections.gpufleet.core.plugins.module_utils.vocabulary import (
    RECOVERY_ACTIONS, SEVERITY_RANK, recovery_action_name)
from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.knowledge_tables import (
    DATA_DIR, normalize_architecture)

NVLINK_ERROR_XID = 74
RECOVERY_ACTION_XID = 154
NVLINK5_XIDS = frozenset(range(144, 151))
DECODED_XIDS = NVLINK5_XIDS | {NVLINK_ERROR_XID}

_HEX = r"0x[0-9a-fA-F]{1,8}"
_NVLINK5_RE = re.compile(
    r"(?P<unit>[A-Z][A-Z0-9_/]*)\s+(?P<word>Fatal|Nonfatal|Non-fatal)\s+XC(?P<xc>\d+)\s+i(?P<injected>\d+)\s+"
    r"Link\s+(?P<link>-?\d+)\s*\((?P<registers>(?:%s[\s,]*){2,})\)" % _HEX)
_NVLINK5_WORD_RE = re.compile(r"(?P<unit>[A-Z][A-Z0-9_/]*)\s+(?P<word>Fatal|Nonfatal|Non-fatal)\s+XC\d+")
_NVLINK_REGISTERS_RE = re.compile(r"link\s+(?P<link>\d+)\s*\((?P<registers>(?:%s,?\s*){7})\)" % _HEX)
_XID154_RE = re.compile(r"recovery action changed from\s+0x[0-9a-fA-F]+\s*\([^)]*\)\s+to\s+"
                        r"0x(?P<value>[0-9a-fA-F]+)\s*(?:\((?P<words>[^)]*)\))?")


@functools.lru_cache(maxsize=1)
def tables():
    """data/xid_decode.yml, read once per process."""
    with open(os.path.join(DATA_DIR, "xid_decode.yml")) as handle:
        return check_tables(yaml.safe_load(handle))


def check_tables(data):
    """The decode tables, or ValueError naming the first entry that refers to what the tables do not define."""
    for name in data["recovery_actions"]:
        if name not in RECOVERY_ACTIONS:
            raise ValueError("xid_decode.recovery_actions: unknown action %r (allowed: %s)"
                             % (name, ", ".join(RECOVERY_ACTIONS)))
    known = set(data["resolutions"])
    rows = [("nvlink5.rules[%d]" % i, row, ("resolution", "promoted")) for i, row in enumerate(data["nvlink5"]["rules"])]
    rows += [("nvlink_registers.classes[%d]" % i, entry, ("resolution", "repeated_resolution"))
             for i, entry in enumerate(data["nvlink_registers"]["classes"])]
    for where, entry, keys in rows:
        for key in keys:
            if entry.get(key) is not None and entry[key] not in known:
                raise ValueError("xid_decode.%s: %s %r is not one of the resolutions (%s)"
                                 % (where, key, entry[key], ", ".join(sorted(known))))
    return data


def _verdict(resolution, detail):
    entry = tables()["resolutions"][resolution]
    return {"resolution": resolution, "severity": entry["severity"], "action": entry["action"], "detail": detail}


def _worst(verdicts):
    return max(verdicts, key=lambda verdict: SEVERITY_RANK.get(verdict["severity"], 0))


def _registers(text):
    return [int(word, 16) for word in re.findall(_HEX, text)]


def _fits(mask, value):
    """Does the 32-bit value fit the mask ("0"/"1" fixed bits, "-" any; most significant bit first)?"""
    for position, bit in enumerate(mask):
        if bit != "-" and ((value >> (31 - position)) & 1) != int(bit):
            return False
    return True


# ---------------------------------------------------------------- Xid 144-150 (NVLink5)

def _nvlink5_rows(xid, intr_info, status):
    """(row, resolution) of every decode-sheet row that fits the intrInfo and errorStatus; a status with several
    bits set matches the row of each bit."""
    found = []
    for row in tables()["nvlink5"]["rules"]:
        if row["xid"] != xid or not (row["status"] is None or row["status"] == status
                                     or (row["status"] and status & row["status"] == row["status"])):
            continue
        if _fits(row["v1"], intr_info) or _fits(row["v2"], intr_info):
            found.append((row, row["resolution"]))
        elif row.get("promoted") and (_fits(row["promoted_v1"], intr_info) or _fits(row["promoted_v2"], intr_info)):
            found.append((row, row["promoted"]))
    exact = [item for item in found if item[0]["status"] == status]
    return exact or found


def _same_unit(rows, unit):
    """The rows whose unit (the sheet's "A/B" names two) is the one the message names, when any is."""
    named = [item for item in rows if unit in item[0]["unit"].split("/")]
    return named or rows


def decode_nvlink5(xid, message):
    match = _NVLINK5_RE.search(message or "")
    if match is None:
        return _fatal_word_only(message)
    intr_info, status = _registers(match.group("registers"))[:2]
    fatal = match.group("word") == "Fatal"
    detail = {"unit": match.group("unit"), "fatal": fatal, "link": int(match.group("link")),
              "intr_info": "0x%08x" % intr_info, "error_status": "0x%08x" % status}
    rows = _same_unit(_nvlink5_rows(xid, intr_info, status), match.group("unit"))
    verdicts = [_verdict(resolution, dict(detail, decoded_unit=row["unit"],
                                          kind=row["kind"] if resolution == row["resolution"] else "promoted"))
                for row, resolution in rows]
    if fatal:
        # NVIDIA's sheet: a Fatal error takes all links down and stops every application channel
        verdicts.append(_verdict("RESET_GPU", dict(detail, kind="fatal (message)")))
    return _worst(verdicts) if verdicts else None


def _fatal_word_only(message):
    """A line whose registers cannot be read (cut, or redacted as '(...)') still needs a reset when it says Fatal."""
    match = _NVLINK5_WORD_RE.search(message or "")
    if match is None or match.group("word") != "Fatal":
        return None
    return _verdict("RESET_GPU", {"unit": match.group("unit"), "fatal": True, "kind": "fatal (message)"})


# ---------------------------------------------------------------- Xid 74 (NVLink registers, Hopper)

def _register_classes(registers):
    """[(class, set bits)] of the register bits the decode names, and whether any set bit is outside them."""
    classes = tables()["nvlink_registers"]["classes"]
    named, unnamed = [], False
    for field in sorted({entry["field"] for entry in classes}):
        value = registers[field]
        known = 0
        for entry in (e for e in classes if e["field"] == field):
            bits = [bit for bit in entry["bits"] if value >> bit & 1]
            known |= sum(1 << bit for bit in entry["bits"])
            if bits:
                named.append((entry, bits))
        unnamed = unnamed or bool(value & ~known)
    return named, unnamed


def decode_nvlink_registers(message, architecture, repeats=None):
    """The verdict of one Xid 74 message on a GPU of this architecture; repeats: {(link, field, first bit): times
    seen on this GPU}, for the classes that need support only when they repeat."""
    if normalize_architecture(architecture) not in tables()["nvlink_registers"]["architectures"]:
        return None
    match = _NVLINK_REGISTERS_RE.search(message or "")
    if match is None:
        return None
    link, registers = int(match.group("link")), _registers(match.group("registers"))
    named, unnamed = _register_classes(registers)
    if unnamed or not named:
        return None
    verdicts = []
    for entry, bits in named:
        resolution = entry["resolution"]
        if entry.get("repeat") and (repeats or {}).get((link, entry["field"], entry["bits"][0]), 0) > entry["repeat"]:
            resolution = entry["repeated_resolution"]
        verdicts.append(_verdict(resolution, {"link": link, "register": entry["field"], "bits": bits,
                                              "meaning": entry["meaning"]}))
    return _worst(verdicts)


def _register_repeats(events):
    """{(link, field, first bit of the class): events with those bits set} over a GPU's Xid 74 events."""
    counts = {}
    for event in events:
        match = _NVLINK_REGISTERS_RE.search(event.get("message") or "")
        if match is None:
            continue
        registers = _registers(match.group("registers"))
        for entry, _bits in _register_classes(registers)[0]:
            key = (int(match.group("link")), entry["field"], entry["bits"][0])
            counts[key] = counts.get(key, 0) + 1
    return counts


# ---------------------------------------------------------------- groups of events

def decode_message(xid, message, architecture=None, repeats=None):
    """The verdict of one Xid message ({"resolution", "severity", "action", "detail"}), or None when it does
    not decode."""
    if xid in NVLINK5_XIDS:
        return decode_nvlink5(xid, message)
    if xid == NVLINK_ERROR_XID:
        return decode_nvlink_registers(message, architecture, repeats)
    return None


def group_verdict(xid, events, architecture, catalog_entry):
    """{"severity", "action", "decoded": [...], "undecoded": n} for the kept events of one Xid on one GPU: the worst
    of their decodes, and of the catalog's entry when any kept event did not decode. None for an Xid whose
    messages are not decoded, or when no event decodes."""
    if xid not in DECODED_XIDS:
        return None
    repeats = _register_repeats(events) if xid == NVLINK_ERROR_XID else None
    decoded, undecoded = {}, 0
    for event in events:
        verdict = decode_message(xid, event.get("message"), architecture, repeats)
        if verdict is None:
            undecoded += 1
            continue
        key = (verdict["resolution"], repr(sorted(verdict["detail"].items())))
        decoded.setdefault(key, dict(verdict, count=0))["count"] += 1
    if not decoded:
        return None
    candidates = list(decoded.values())
    if undecoded:
        candidates.append({"severity": catalog_entry.get("severity"), "action": catalog_entry.get("action")})
    worst = _worst(candidates)
    return {"severity": worst["severity"], "action": worst["action"], "undecoded": undecoded,
            "decoded": [{"resolution": v["resolution"], "severity": v["severity"], "count": v["count"],
                         "detail": v["detail"]} for v in decoded.values()]}


# ---------------------------------------------------------------- recovery action (Xid 154 and the GPU field)

def xid154_recovery_action(message):
    """The action a Xid 154 message changes to ("GPU recovery action changed from 0x0 (None) to 0x2 (Node
    Reboot Required)" -> "node_reboot"), by its value, else its words; None when the message names none."""
    match = _XID154_RE.search(message or "")
    if match is None:
        return None
    value = int(match.group("value"), 16)
    if value < len(RECOVERY_ACTIONS):
        return RECOVERY_ACTIONS[value]
    return recovery_action_name(match.group("words"))


def recovery_action(name):
    """{"severity" (None: nothing to do), "action"} of a recovery action the facts name; None when unknown."""
    entry = tables()["recovery_actions"].get(name)
    return dict(entry) if entry else None


# ---------------------------------------------------------------- docs (tools/xid_table.py)

def table_rows():
    """Markdown sections for docs/xid-table.md: the decoded resolutions and the recovery actions."""
    data = tables()
    rows = ["## Decoded messages", "",
            "Xid 74 (on %s GPUs) and Xid 144-150 take the severity and action of their message's decode "
            "(`xid_decode.yml`, %d NVLink5 decode rows, %d Xid 74 register classes); a message that does not "
            "decode keeps the Xid's row above, and a 144-150 message that says `Fatal` needs a GPU reset."
            % (", ".join(data["nvlink_registers"]["architectures"]), len(data["nvlink5"]["rules"]),
               len(data["nvlink_registers"]["classes"])), "",
            "| Decoded resolution | Severity | Action |", "|---|---|---|"]
    for name, entry in sorted(data["resolutions"].items()):
        rows.append("| %s | %s | %s |" % (name, entry["severity"], entry["action"]))
    rows += ["", "## GPU recovery action (Xid 154, nvidia-smi gpu_recovery_action, NVML)", "",
             "| NVML value | Name in the facts | Severity | Action |", "|---|---|---|---|"]
    for value, name in enumerate(RECOVERY_ACTIONS):
        entry = data["recovery_actions"][name]
        note = " (assumed)" if entry.get("assumed") else ""
        rows.append("| %d | %s | %s | %s%s |" % (value, name, entry["severity"] or "no finding", entry["action"], note))
    return rows + [""]
