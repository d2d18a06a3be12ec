# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The baseline template of the method, per baseline group, rendered as Markdown from the store: GPU models
and counts, driver and CUDA versions, isolation (MIG, compute mode, persistence), the known-good run.
`gpufleet baseline show --markdown` prints it."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from collections import Counter

from ansible_collections.gpufleet.core.plugins.plugin_utils.store.queries import baselines, run_facts


def _values(counter):
    if not counter:
        return "unknown (facts no longer kept)"
    return ", ".join("%s (%d)" % (value, count) for value, count in sorted(counter.items(), key=lambda item: -item[1]))


def group_profile(facts_by_host):
    """Counters of what the hosts of a baseline run had."""
    profile = {name: Counter() for name in ("models", "gpu_count", "driver", "cuda", "isolation", "persistence")}
    for facts in facts_by_host.values():
        gpus = [gpu for gpu in facts.get("gpus") or () if not gpu.get("lost")]
        driver = facts.get("driver") or {}
        profile["gpu_count"][len(gpus)] += 1
        profile["driver"][driver.get("version") or "none"] += 1
        profile["cuda"][driver.get("cuda_driver_version") or "none"] += 1
        for gpu in gpus:
            profile["models"][gpu.get("name") or "unknown"] += 1
            mig = "MIG" if (gpu.get("mig") or {}).get("mode_current") else "no MIG"
            profile["isolation"]["%s, compute mode %s" % (mig, gpu.get("compute_mode"))] += 1
            profile["persistence"]["on" if gpu.get("persistence_mode") else "off"] += 1
    return profile


def render_markdown(connection):
    rows = baselines(connection)
    if not rows:
        return "# Baselines\n\nNo baseline is set (gpufleet baseline set RUN|latest [--group G]).\n"
    lines = ["# Baselines", ""]
    for group, row in rows.items():
        facts = run_facts(connection, row.id)
        profile = group_profile(facts)
        lines += ["## %s" % ("the whole fleet" if group == "all" else "group %s" % group), "",
                  "| | known good |", "|---|---|",
                  "| run | %s (started %s, set %s) |" % (row.run_id, row.started_at, row.set_at),
                  "| hosts with facts | %d |" % len(facts),
                  "| GPU models (GPUs) | %s |" % _values(profile["models"]),
                  "| GPUs per host (hosts) | %s |" % _values(profile["gpu_count"]),
                  "| driver (hosts) | %s |" % _values(profile["driver"]),
                  "| CUDA driver API (hosts) | %s |" % _values(profile["cuda"]),
                  "| isolation (GPUs) | %s |" % _values(profile["isolation"]),
                  "| persistence mode (GPUs) | %s |" % _values(profile["persistence"]),
                  ""]
    lines.append("Worker caps and thresholds are the policy's (docs/policy.md); drift from these runs is reported "
                 "as baseline_* findings (docs/history.md).")
    return "\n".join(lines) + "\n"
