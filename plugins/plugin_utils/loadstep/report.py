# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""loadstep.json (docs/loadstep.md, "loadstep.json"): one run per host and service from the steps the
playbook measured, compared with the previous loadstep run of the same host and service, written with the
HTML page into the run folder."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
import os

from ansible_collections.gpufleet.core.plugins.plugin_utils.loadstep import steps as loadstep
from ansible_collections.gpufleet.core.plugins.plugin_utils.run_folder import (
    LOADSTEP_FILE, LOADSTEP_HTML, RUN_KINDS, write_atomically)

SCHEMA = "gpufleet.loadstep"
VERSION = "1.0"
FILE_NAME = LOADSTEP_FILE
HTML_NAME = LOADSTEP_HTML
RUN_SUFFIX = RUN_KINDS["loadstep"]
# what "regressed" means in the comparison: throughput down or p95 up by more than this share
CHANGE_TOLERANCE = 0.10


def analyse_steps(measured, definition, knowledge=None, margin_c=5, service_mode=False):
    """(idle, steps): the summaries of the measured steps ([{step, concurrency, measurement}]) with their
    verdicts and memory per added worker. The idle step is step 0."""
    limits, warmup, duration = definition["limits"], definition["warmup_sec"], definition["duration_sec"]
    idle, baseline, steps = None, None, []
    for entry in measured:
        if entry["concurrency"] == 0:
            summary = loadstep.summarize_step(entry["measurement"], 0, 0, definition["idle_sec"], 0)
        else:
            summary = loadstep.summarize_step(entry["measurement"], entry["step"], entry["concurrency"], duration,
                                              warmup)
        summary["verdict"] = loadstep.judge_step(summary, limits, idle, baseline, knowledge, margin_c, service_mode)
        if entry["concurrency"] == 0:
            idle = summary
            continue
        if baseline is None:
            baseline = summary
        steps.append(summary)
    loadstep.add_memory_per_worker(steps, idle)
    return idle, steps


def run_entry(host, service, definition, idle, steps, status, restored, started_at, finished_at, mode, plan_steps):
    """One host's run as loadstep.json holds it."""
    broke = loadstep.broken_step(([idle] if idle and idle["verdict"]["broke"] else []) + steps)
    return {
        "host": host, "service": service, "mode": mode, "status": status,
        "started_at": started_at, "finished_at": finished_at,
        "definition": definition, "planned_steps": plan_steps,
        "idle": idle, "steps": steps,
        "baseline": _step_brief(steps[0]) if steps else None,
        "broke": broke,
        "held": _step_brief(loadstep.steps_that_held(steps)[-1]) if loadstep.steps_that_held(steps) else None,
        "suggestion": loadstep.suggest_cap(steps, definition["limits"]["memory_headroom_pct"], service)
        if steps and (idle is None or not idle["verdict"]["broke"]) else None,
        "host_restored": restored,
        "comparison": None,
    }


def _step_brief(step):
    stats = step.get("requests") or {}
    return {"step": step["step"], "concurrency": step["concurrency"], "throughput_rps": stats.get("throughput_rps"),
            "p95_ms": stats.get("p95_ms"), "memory_used_peak_mib": loadstep.total_used_mib(step)}


# ---------------------------------------------------------------- the previous run

def previous_runs(report_root, before_dir):
    """Run folders of earlier loadstep runs with a loadstep.json, newest first (by folder name, a UTC time)."""
    try:
        names = sorted(os.listdir(report_root), reverse=True)
    except OSError:
        return []
    current = os.path.basename(os.path.abspath(before_dir)) if before_dir else None
    folders = []
    for name in names:
        if RUN_SUFFIX not in name or (current and name >= current):
            continue
        path = os.path.join(report_root, name, FILE_NAME)
        if os.path.isfile(path):
            folders.append(os.path.join(report_root, name))
    return folders


def find_previous(report_root, run_dir, host, service):
    """(run folder, run entry) of the newest earlier run of this host and service, or (None, None)."""
    for folder in previous_runs(report_root, run_dir):
        try:
            with open(os.path.join(folder, FILE_NAME)) as handle:
                document = json.load(handle)
        except (IOError, OSError, ValueError):
            continue
        if not isinstance(document, dict) or document.get("schema") != SCHEMA:
            continue
        for entry in document.get("runs") or []:
            if isinstance(entry, dict) and entry.get("host") == host and entry.get("service") == service:
                return folder, entry
    return None, None


def _relative_change(before, after):
    if before in (None, 0) or after is None:
        return None
    return round((after - before) / float(before), 3)


def _step_comparison(before, after):
    b_stats, a_stats = before.get("requests") or {}, after.get("requests") or {}
    return {
        "concurrency": after["concurrency"],
        "broke_before": before["verdict"]["broke"], "broke_now": after["verdict"]["broke"],
        "throughput_change": _relative_change(b_stats.get("throughput_rps"), a_stats.get("throughput_rps")),
        "p95_change": _relative_change(b_stats.get("p95_ms"), a_stats.get("p95_ms")),
        "memory_change_mib": (loadstep.total_used_mib(after) - loadstep.total_used_mib(before))
        if loadstep.total_used_mib(after) is not None and loadstep.total_used_mib(before) is not None else None,
    }


def _held(entry):
    return (entry.get("held") or {}).get("concurrency") or 0


def compare_runs(previous, current, previous_dir):
    """How this run differs from the previous one of the same host and service: per shared concurrency, and a
    verdict: improved (a larger step holds now), regressed (a smaller one, or a step that held breaks now, or
    throughput down / p95 up by more than CHANGE_TOLERANCE), or unchanged."""
    before_steps = dict((step["concurrency"], step) for step in previous.get("steps") or [])
    shared = [_step_comparison(before_steps[step["concurrency"]], step)
              for step in current["steps"] if step["concurrency"] in before_steps]
    worse = [item for item in shared if (item["broke_now"] and not item["broke_before"])
             or (item["throughput_change"] is not None and item["throughput_change"] < -CHANGE_TOLERANCE)
             or (item["p95_change"] is not None and item["p95_change"] > CHANGE_TOLERANCE)]
    if _held(current) > _held(previous):
        verdict = "improved"
    elif _held(current) < _held(previous) or worse:
        verdict = "regressed"
    else:
        verdict = "unchanged"
    return {
        "previous_run": previous_dir, "previous_started_at": previous.get("started_at"), "verdict": verdict,
        "held_before": _held(previous), "held_now": _held(current),
        "broke_before": previous.get("broke"), "broke_now": current.get("broke"), "steps": shared,
    }


# ---------------------------------------------------------------- the document

def build_document(runs, run_dir, started_at, finished_at, tool_version=None):
    return {"schema": SCHEMA, "version": VERSION, "tool_version": tool_version, "run_dir": run_dir,
            "started_at": started_at, "finished_at": finished_at, "runs": runs}


def write_document(document, run_dir, render_html):
    """Writes loadstep.json and loadstep.html into run_dir; returns their paths."""
    os.makedirs(run_dir, exist_ok=True)
    paths = [write_atomically(os.path.join(run_dir, FILE_NAME), json.dumps(document, indent=1, sort_keys=True) + "\n")]
    paths.append(write_atomically(os.path.join(run_dir, HTML_NAME), render_html(document)))
    return paths
