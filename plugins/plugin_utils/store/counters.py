# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Each GPU's cumulative error counters, read once per run from the facts: the store writes them
(gpu_counters) and the trend rules compare them with the previous run (rules/drift_trend.py). The same for each
HCA port's counters of the facts family `fabric` (hca_counters, one row per port).

A counter is stored in a signed 64-bit column (SQLite INTEGER, PostgreSQL BIGINT). Each count of the facts fits
(facts_validation refuses larger ones), but a sum of them (retired pages, NVLink errors over every link) may not:
a sum beyond the column's range is stored as its largest value, 2^63-1 (docs/store.md)."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.gpufleet.core.plugins.module_utils.facts_model import INT64_MAX
from ansible_collections.gpufleet.core.plugins.plugin_utils.store.identity import gpu_key

COUNTER_COLUMNS = ("ecc_corrected", "retired_pages", "remapped_rows", "pcie_replays", "nvlink_errors")


def total(values):
    """The sum of the integers among values (booleans are not counts), None when there is none."""
    counts = [value for value in values if type(value) is int]  # pylint: disable=unidiomatic-typecheck
    return min(sum(counts), INT64_MAX) if counts else None  # (type() is int: a boolean is not a count)


def nvlink_total(gpu):
    return total(value for link in gpu.get("nvlinks") or () for value in (link.get("errors") or {}).values())


def count(value):
    return min(value, INT64_MAX) if type(value) is int else None  # pylint: disable=unidiomatic-typecheck


def gpu_counters(gpu):
    """{counter column: cumulative value or None} of one GPU's facts."""
    retired = gpu.get("retired_pages") or {}
    remapped = gpu.get("remapped_rows") or {}
    return {
        "ecc_corrected": count((gpu.get("ecc") or {}).get("aggregate_corrected")),
        "retired_pages": total((retired.get("single_bit"), retired.get("double_bit"))),
        "remapped_rows": total((remapped.get("correctable"), remapped.get("uncorrectable"))),
        "pcie_replays": count((gpu.get("pcie") or {}).get("replay_counter")),
        "nvlink_errors": nvlink_total(gpu),
    }


def host_counters(facts):
    """{gpu key: (gpu, counters)} of a host's GPUs that answered (lost GPUs and GPUs without a name left out)."""
    found = {}
    for gpu in (facts or {}).get("gpus") or ():
        if gpu.get("lost"):
            continue
        key = gpu_key(gpu)
        if key is not None:
            found[key] = (gpu, gpu_counters(gpu))
    return found


def hca_port_counters(facts):
    """{(hca name, port number): {counter: cumulative value}} of the integer counters of a host's HCA ports
    (fabric.hcas[].ports[].counters); ports without a name, a number or any counter are left out."""
    fabric = (facts or {}).get("fabric")
    found = {}
    for hca in (fabric.get("hcas") if isinstance(fabric, dict) else None) or ():
        if not isinstance(hca, dict) or not isinstance(hca.get("name"), str):
            continue
        for port in hca.get("ports") or ():
            number = port.get("port") if isinstance(port, dict) else None
            if type(number) is not int:  # pylint: disable=unidiomatic-typecheck
                continue
            values = {name: count(value) for name, value in (port.get("counters") or {}).items()
                      if count(value) is not None}
            if values:
                found[(hca["name"], number)] = values
    return found
