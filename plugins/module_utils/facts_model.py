# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The gpufleet fact schema as Python: empty records, errors and shared normalisers.

Every backend (NVML, nvidia-smi XML, replay) fills the records built here, so the
shape of the facts is defined in one place. docs/schema/gpu_facts.schema.json is
the published contract; tests validate every output against it.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re

SCHEMA_VERSION = "1.6"

SOURCES = ("nvml", "nvidia_smi", "replay", "none")

# NVML clocks event (throttle) reason bits, nvml.h group nvmlClocksEventReasons.
CLOCK_EVENT_REASON_BITS = (
    (0x1, "gpu_idle"),
    (0x2, "applications_clocks_setting"),
    (0x4, "sw_power_cap"),
    (0x8, "hw_slowdown"),
    (0x10, "sync_boost"),
    (0x20, "sw_thermal_slowdown"),
    (0x40, "hw_thermal_slowdown"),
    (0x80, "hw_power_brake_slowdown"),
    (0x100, "display_clock_setting"),
    (0x200, "board_limit"),
    (0x400, "reliability"),
)

COMPUTE_MODES = ("default", "exclusive_thread", "prohibited", "exclusive_process")


def new_facts():
    return {
        "schema_version": SCHEMA_VERSION,
        "source": "none",
        "replay_of": None,
        "collected_at": None,
        "collection_seconds": 0.0,
        "gather_subset": [],
        "nvidia_present": False,
        "nvidia_evidence": [],
        "collection": {"status": "complete", "reasons": []},
        "driver": {
            "version": None,
            "nvml_version": None,
            "cuda_driver_version": None,
            "kernel_module_version": None,
            "userspace_version": None,
            "mismatch": False,
            "mismatch_reason": None,
        },
        "gpus": [],
        "host": {},
        "xid_events": [],
        "kernel_events": [],
        "driver_clients": None,
        "workload": None,
        "host_pressure": None,
        "bmc": None,
        "kubernetes": None,
        "errors": [],
    }


def new_gpu(index):
    return {
        "index": index,
        "name": None,
        "uuid": None,
        "serial": None,
        "pci_bus_id": None,
        "board_part_number": None,
        "vbios_version": None,
        "architecture": None,
        "compute_capability": None,
        "lost": False,
        "memory": {
            "total_mib": None, "used_mib": None, "free_mib": None,
            "reserved_mib": None, "bar1_total_mib": None, "bar1_used_mib": None,
        },
        "temperature": {"gpu_c": None, "slowdown_c": None, "shutdown_c": None, "memory_c": None},
        "power": {
            "draw_w": None, "limit_w": None, "default_limit_w": None,
            "min_limit_w": None, "max_limit_w": None,
        },
        "fan_speed_pct": None,
        "clocks": {
            "graphics_mhz": None, "sm_mhz": None, "memory_mhz": None,
            "max_graphics_mhz": None, "max_sm_mhz": None, "max_memory_mhz": None,
        },
        "clock_event_reasons": {"mask": None, "active": []},
        "performance_state": None,
        "utilization": {"gpu_pct": None, "memory_pct": None},
        "ecc": {
            "mode_current": None, "mode_pending": None,
            "volatile_corrected": None, "volatile_uncorrected": None,
            "aggregate_corrected": None, "aggregate_uncorrected": None,
        },
        "retired_pages": {"single_bit": None, "double_bit": None, "pending": None},
        "remapped_rows": {"correctable": None, "uncorrectable": None, "pending": None, "failure": None},
        "pcie": {
            "gen_current": None, "gen_max": None, "width_current": None, "width_max": None,
            "replay_counter": None, "aer": None,
        },
        "nvlinks": [],
        "compute_mode": None,
        "persistence_mode": None,
        "mig": {"mode_current": None, "mode_pending": None, "gpu_instances": []},
        "processes": [],
        "fabric": None,
        "recovery_action": None,
    }


def new_process(pid):
    return {
        "pid": pid, "name": None, "type": None, "used_memory_mib": None,
        "gpu_instance_id": None, "compute_instance_id": None,
    }


# C0 and C1 control characters: text read from the host never reaches a terminal or a report raw
_CONTROL_RE = re.compile(u"[\x00-\x1f\x7f-\x9f]")


def printable(value):
    """Text with its control characters written as \\xNN; anything else unchanged."""
    if not isinstance(value, str) or _CONTROL_RE.search(value) is None:
        return value
    return _CONTROL_RE.sub(lambda match: "\\x%02x" % ord(match.group(0)), value)


def add_error(facts, gpu, call, reason, code=None):
    facts["errors"].append({"gpu": gpu, "call": call, "reason": str(reason), "code": code})


_PCI_RE = re.compile(
    r"^(?:(?P<domain>[0-9a-fA-F]{1,8}):)?(?P<bus>[0-9a-fA-F]{1,2}):(?P<dev>[0-9a-fA-F]{1,2})(?:\.(?P<fn>[0-7]))?$")


def normalize_pci_bus_id(value):
    """'00000000:3B:00.0', '0000:3b:00' or '3b:00.0' -> '0000:3b:00.0'; None when unparsable."""
    if value is None:
        return None
    match = _PCI_RE.match(str(value).strip())
    if not match:
        return None
    domain = int(match.group("domain") or "0", 16)
    return "%04x:%02x:%02x.%d" % (
        domain & 0xFFFF, int(match.group("bus"), 16), int(match.group("dev"), 16), int(match.group("fn") or 0))


def dcgm_pci_bus_id(value):
    """'0000:3b:00.0' (any form normalize_pci_bus_id reads) -> '00000000:3B:00.0', the form nvidia-smi and
    dcgm-exporter print (pci_bus_id label); None when unparsable."""
    normalised = normalize_pci_bus_id(value)
    if normalised is None:
        return None
    domain, rest = normalised.split(":", 1)
    return ("%08x:%s" % (int(domain, 16), rest)).upper()


def decode_clock_event_reasons(mask):
    if mask is None:
        return []
    return [name for bit, name in CLOCK_EVENT_REASON_BITS if mask & bit]


def bytes_to_mib(value):
    if value is None:
        return None
    return int(value) // (1024 * 1024)


def cuda_version_from_int(value):
    """NVML encodes CUDA 12.4 as 12040."""
    if value is None or value <= 0:
        return None
    return "%d.%d" % (value // 1000, (value % 1000) // 10)


# --- readings that cannot be true -------------------------------------------------------

# Die and memory temperatures outside this range are a broken sensor or a garbled answer.
TEMPERATURE_RANGE_C = (0, 200)
# The signed 64-bit range the run store's counter columns hold (SQLite INTEGER, PostgreSQL BIGINT). NVML says
# "not available" with the top of an unsigned counter's range (2^64-1): no count gets beyond this.
INT64_MIN, INT64_MAX = -(2 ** 63), 2 ** 63 - 1
# No GPU has this much memory (16 TiB): a larger total or BAR1 size is a garbled answer.
MEMORY_MAX_MIB = 2 ** 24
_NON_NEGATIVE = (
    ("memory", ("total_mib", "used_mib", "free_mib", "reserved_mib", "bar1_total_mib", "bar1_used_mib")),
    ("power", ("draw_w", "limit_w", "default_limit_w", "min_limit_w", "max_limit_w")),
    ("clocks", ("graphics_mhz", "sm_mhz", "memory_mhz", "max_graphics_mhz", "max_sm_mhz", "max_memory_mhz")),
    ("ecc", ("volatile_corrected", "volatile_uncorrected", "aggregate_corrected", "aggregate_uncorrected")),
    ("retired_pages", ("single_bit", "double_bit")),
    ("remapped_rows", ("correctable", "uncorrectable")),
    ("pcie", ("gen_current", "gen_max", "width_current", "width_max", "replay_counter")),
)
_PERCENT = (("utilization", ("gpu_pct", "memory_pct")),)
# (part, smaller, larger): the smaller cannot exceed the larger
_AT_MOST = (("memory", "used_mib", "total_mib"), ("memory", "free_mib", "total_mib"),
            ("memory", "reserved_mib", "total_mib"), ("memory", "bar1_used_mib", "bar1_total_mib"))


def _is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _reject(facts, gpu, field, value, why):
    add_error(facts, gpu.get("index"), "reading %s" % field,
              "%r cannot be true (%s); reported as null" % (value, why))


def _check_part(facts, gpu, part, names, valid, why):
    record = gpu.get(part)
    if not isinstance(record, dict):
        return
    for name in names:
        value = record.get(name)
        if _is_number(value) and not valid(value):
            _reject(facts, gpu, "%s.%s" % (part, name), value, why)
            record[name] = None


def _check_gpu(facts, gpu):
    low, high = TEMPERATURE_RANGE_C
    _check_part(facts, gpu, "temperature", ("gpu_c", "slowdown_c", "shutdown_c", "memory_c"),
                lambda value: low <= value <= high, "outside %d..%d C" % (low, high))
    for part, names in _NON_NEGATIVE:
        _check_part(facts, gpu, part, names, lambda value: value >= 0, "negative")
        _check_part(facts, gpu, part, names, lambda value: value <= INT64_MAX,
                    "beyond 2^63-1: a value that says 'not available', not a reading")
    _check_part(facts, gpu, "memory", _NON_NEGATIVE[0][1], lambda value: value <= MEMORY_MAX_MIB,
                "more than %d MiB, which no GPU has" % MEMORY_MAX_MIB)
    for part, names in _PERCENT:
        _check_part(facts, gpu, part, names, lambda value: 0 <= value <= 100, "outside 0..100 %")
    if _is_number(gpu.get("fan_speed_pct")) and gpu["fan_speed_pct"] < 0:
        _reject(facts, gpu, "fan_speed_pct", gpu["fan_speed_pct"], "negative")
        gpu["fan_speed_pct"] = None
    for part, smaller, larger in _AT_MOST:
        record = gpu.get(part) or {}
        if _is_number(record.get(smaller)) and _is_number(record.get(larger)) and record[smaller] > record[larger]:
            _reject(facts, gpu, "%s.%s" % (part, smaller), record[smaller], "more than %s %r" % (larger, record[larger]))
            record[smaller] = None
    for link in gpu.get("nvlinks") or ():
        errors = link.get("errors") or {}
        for name, value in errors.items():
            if _is_number(value) and not 0 <= value <= INT64_MAX:
                _reject(facts, gpu, "nvlinks[%s].errors.%s" % (link.get("link"), name), value,
                        "negative" if value < 0 else "beyond 2^63-1: a value that says 'not available', not a reading")
                errors[name] = None
    for process in gpu.get("processes") or ():
        value = process.get("used_memory_mib")
        if _is_number(value) and value < 0:
            _reject(facts, gpu, "processes[pid %s].used_memory_mib" % process.get("pid"), value, "negative")
            process["used_memory_mib"] = None


def drop_impossible_readings(facts):
    """Sets every GPU reading that cannot be true to null, with an error entry naming the field:
    temperatures outside 0..200 C, negative memory, power, clocks and counters, counters beyond 2^63-1,
    memory beyond 16 TiB, percentages outside 0..100, used (or free, reserved) memory above the total.
    One place for every backend."""
    for gpu in facts.get("gpus") or ():
        _check_gpu(facts, gpu)
    return facts
