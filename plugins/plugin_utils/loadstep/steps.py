# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The analysis of a stepwise load run (docs/loadstep.md), on the controller: what one step measured
(summarize_step), whether it broke and in which layer (judge_step), how much memory each added worker
costs, and the largest worker count that held with the policy's headroom (suggest_cap).

Plain functions over the measurements of gpufleet.core.loadstep; the tests call them directly.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import math
import re

OOM_PATTERN = re.compile(r"out of memory|OutOfMemoryError|CUDA_ERROR_OUT_OF_MEMORY|cudaErrorMemoryAllocation", re.I)
# the first reason in this order is the one the report names; every reason found is listed
REASON_ORDER = ("sampler", "xid", "ecc", "oom", "throttle", "temperature", "memory_headroom", "exit", "errors",
                "latency")
LAYER_OF_REASON = {"ecc": "hardware", "oom": "workload", "throttle": "hardware", "temperature": "hardware",
                   "memory_headroom": "workload", "exit": "workload", "errors": "workload", "latency": "workload",
                   "sampler": "driver"}
# Xids the catalog does not know are looked at as hardware first, as the audit does
UNKNOWN_XID_LAYER = "hardware"


def percentile(values, pct):
    """Nearest-rank percentile (the smallest value with at least pct percent of the values at or below it);
    None for no values."""
    ordered = sorted(value for value in values if value is not None)
    if not ordered:
        return None
    rank = max(1, int(math.ceil(pct / 100.0 * len(ordered))))
    return ordered[min(rank, len(ordered)) - 1]


# ---------------------------------------------------------------- one step

def _judged_records(load, warmup):
    return [record for record in (load.get("records") or []) if record[0] >= warmup]


def request_stats(load, warmup, seconds):
    """{requests, errors, error_pct, throughput_rps, p50_ms, p95_ms, error_examples} of the records after the
    warm-up; None values where the load printed no records."""
    records = _judged_records(load, warmup)
    requests = sum(record[4] for record in records)
    errors = sum(record[4] for record in records if not record[1])
    latencies = [record[2] for record in records if record[1] and record[2] is not None]
    examples = []
    for record in records:
        if record[3] and record[3] not in examples and len(examples) < 5:
            examples.append(record[3])
    return {
        "records": len(records), "requests": requests, "errors": errors,
        "error_pct": round(100.0 * errors / requests, 3) if requests else None,
        "throughput_rps": round(requests / float(seconds), 3) if records and seconds > 0 else None,
        "p50_ms": percentile(latencies, 50), "p95_ms": percentile(latencies, 95),
        "error_examples": examples,
    }


def _peak(values):
    values = [value for value in values if value is not None]
    return max(values) if values else None


def _low(values):
    values = [value for value in values if value is not None]
    return min(values) if values else None


def _ecc_delta(first, last, key):
    if first.get(key) is None or last.get(key) is None:
        return 0
    return max(0, last[key] - first[key])


def gpu_peaks(samples):
    """Per GPU index: peaks over the samples (memory, temperature, power, utilization, processes), lowest SM
    clock, the throttle reasons seen and the ECC counts the step added."""
    series = {}
    for sample in samples:
        for gpu in sample.get("gpus") or []:
            series.setdefault(gpu["index"], []).append(gpu)
    peaks = {}
    for index, readings in sorted(series.items()):
        first, last = readings[0], readings[-1]
        total = _peak(reading["memory_total_mib"] for reading in readings)
        used = _peak(reading["memory_used_mib"] for reading in readings)
        reasons = sorted(set(reason for reading in readings for reason in reading.get("throttle_reasons") or []))
        peaks[index] = {
            "index": index, "name": first.get("name"), "uuid": first.get("uuid"),
            "memory_total_mib": total, "memory_used_peak_mib": used,
            "memory_free_low_pct": round(100.0 * (total - used) / total, 2) if total and used is not None else None,
            "processes_peak": _peak(len(reading.get("processes") or []) for reading in readings),
            "utilization_peak_pct": _peak(reading.get("utilization_pct") for reading in readings),
            "temperature_peak_c": _peak(reading.get("temperature_c") for reading in readings),
            "slowdown_c": first.get("slowdown_c"),
            "power_peak_w": _peak(reading.get("power_w") for reading in readings),
            "power_limit_w": first.get("power_limit_w"),
            "sm_clock_low_mhz": _low(reading.get("sm_clock_mhz") for reading in readings),
            "throttle_reasons": reasons,
            "ecc_new_corrected": _ecc_delta(first, last, "ecc_volatile_corrected"),
            "ecc_new_uncorrected": _ecc_delta(first, last, "ecc_volatile_uncorrected"),
        }
    return peaks


def process_peaks(samples):
    """[{pid, name, gpu, used_peak_mib}] of every GPU process seen during the step."""
    found = {}
    for sample in samples:
        for gpu in sample.get("gpus") or []:
            for process in gpu.get("processes") or []:
                key = (process["pid"], gpu["index"])
                entry = found.setdefault(key, {"pid": process["pid"], "name": process.get("name"),
                                               "gpu": gpu["index"], "used_peak_mib": 0})
                entry["used_peak_mib"] = max(entry["used_peak_mib"], process.get("used_mib") or 0)
    return [found[key] for key in sorted(found)]


def pressure_peaks(samples):
    names = ("cpu_some_avg10", "io_some_avg10", "memory_some_avg10")
    return {name: _peak((sample.get("pressure") or {}).get(name) for sample in samples) for name in names}


def summarize_step(measurement, step, concurrency, duration, warmup):
    """The step as loadstep.json has it (without its verdict, which judge_step adds)."""
    load = measurement.get("load") or {}
    samples = measurement.get("samples") or []
    kernel = measurement.get("kernel") or {}
    return {
        "step": step, "concurrency": concurrency, "started_at": measurement.get("started_at"),
        "seconds": measurement.get("seconds"), "duration_sec": duration, "warmup_sec": warmup,
        "samples": len(samples),
        "load": {"ended": load.get("ended"), "rc": load.get("rc"), "early_exit_s": load.get("early_exit_s"),
                 "left_running": load.get("left_running") or [], "invalid_lines": load.get("invalid_lines", 0),
                 "records_dropped": load.get("records_dropped", 0),
                 "stderr_tail": (load.get("stderr_tail") or "")[-2000:]},
        "requests": request_stats(load, warmup, duration) if concurrency else None,
        "gpus": list(gpu_peaks(samples).values()),
        "processes": process_peaks(samples),
        "pressure": pressure_peaks(samples),
        "xid_events": list(kernel.get("xid") or []),
        "kernel_events": list(kernel.get("other") or []),
        "sampler_errors": list(measurement.get("sampler_errors") or []),
    }


# ---------------------------------------------------------------- did it break

def _reason(kind, detail, layer=None, **evidence):
    return dict({"reason": kind, "layer": layer or LAYER_OF_REASON[kind], "detail": detail}, **evidence)


def _xid_reasons(summary, knowledge):
    reasons = []
    for event in summary["xid_events"]:
        entry = knowledge.xid(event.get("xid")) if knowledge is not None else None
        layer = entry["layer"] if entry else UNKNOWN_XID_LAYER
        name = entry["name"] if entry else "not in the Xid catalog"
        reasons.append(_reason("xid", "Xid %s (%s) on %s with %d in flight" % (
            event.get("xid"), name, event.get("pci_bus_id") or "an unknown GPU", summary["concurrency"]),
            layer=layer, xid=event.get("xid"), catalog_layer=entry["layer"] if entry else None))
    distinct, seen = [], set()
    for reason in reasons:
        if reason["xid"] not in seen:
            seen.add(reason["xid"])
            distinct.append(reason)
    return distinct[:5]


def _ecc_reasons(summary):
    return [_reason("ecc", "GPU %s: %d new uncorrected and %d new corrected ECC errors" % (
        gpu["index"], gpu["ecc_new_uncorrected"], gpu["ecc_new_corrected"]), gpu=gpu["index"])
        for gpu in summary["gpus"] if gpu["ecc_new_uncorrected"] or gpu["ecc_new_corrected"]]


def _oom_reasons(summary):
    texts = [summary["load"]["stderr_tail"]] + ((summary["requests"] or {}).get("error_examples") or [])
    if any(OOM_PATTERN.search(text or "") for text in texts):
        return [_reason("oom", "CUDA out of memory with %d workers" % summary["concurrency"])]
    return []


def _throttle_reasons(summary, limits, idle):
    idle_reasons = dict((gpu["index"], set(gpu["throttle_reasons"])) for gpu in (idle or {}).get("gpus", []))
    reasons = []
    for gpu in summary["gpus"]:
        new = [reason for reason in gpu["throttle_reasons"]
               if reason in limits["throttle_reasons"] and reason not in idle_reasons.get(gpu["index"], set())]
        if new:
            reasons.append(_reason("throttle", "GPU %s throttled (%s) at %s W of %s W, step %d" % (
                gpu["index"], ", ".join(new), gpu["power_peak_w"], gpu["power_limit_w"], summary["step"]),
                gpu=gpu["index"], throttle_reasons=new))
    return reasons


def _temperature_reasons(summary, limits, margin_c):
    reasons = []
    for gpu in summary["gpus"]:
        limit = limits["temperature_c"]
        if limit is None and gpu["slowdown_c"] is not None:
            limit = gpu["slowdown_c"] - margin_c
        if limit is not None and gpu["temperature_peak_c"] is not None and gpu["temperature_peak_c"] >= limit:
            reasons.append(_reason("temperature", "GPU %s reached %s C (limit %s C)" % (
                gpu["index"], gpu["temperature_peak_c"], limit), gpu=gpu["index"]))
    return reasons


def _headroom_reasons(summary, limits):
    return [_reason("memory_headroom", "GPU %s kept only %s%% of its memory free (limit %s%%) with %d workers" % (
        gpu["index"], gpu["memory_free_low_pct"], limits["memory_headroom_pct"], summary["concurrency"]),
        gpu=gpu["index"])
        for gpu in summary["gpus"]
        if gpu["memory_free_low_pct"] is not None and gpu["memory_free_low_pct"] < limits["memory_headroom_pct"]]


def _exit_reasons(summary, service_mode):
    load = summary["load"]
    if load["ended"] == "exited" and load["rc"] not in (0, None):
        return [_reason("exit", "the load exited with status %s after %ss" % (
            load["rc"], load["early_exit_s"] if load["early_exit_s"] is not None else summary["seconds"]))]
    if load["ended"] == "timeout":
        return [_reason("exit", "the load did not end within its step and was stopped by its host-side timeout")]
    if service_mode and load["early_exit_s"] is not None:
        return [_reason("exit", "the service ended after %ss of a %ss step" % (load["early_exit_s"], summary["seconds"]))]
    return []


def _request_reasons(summary, limits, baseline, service_mode):
    stats = summary["requests"] or {}
    reasons = []
    if not service_mode and not stats.get("records"):
        reasons.append(_reason("errors", "the load command printed no result line after its warm-up "
                                         "(docs/loadstep.md, the load command)"))
    if stats.get("error_pct") is not None and stats["error_pct"] > limits["error_pct"]:
        reasons.append(_reason("errors", "%s%% of %d requests failed (limit %s%%)" % (
            stats["error_pct"], stats["requests"], limits["error_pct"])))
    p95 = stats.get("p95_ms")
    if p95 is not None and limits["p95_latency_ms"] is not None and p95 > limits["p95_latency_ms"]:
        reasons.append(_reason("latency", "p95 latency %s ms above %s ms" % (p95, limits["p95_latency_ms"])))
    base = ((baseline or {}).get("requests") or {}).get("p95_ms")
    ratio = limits["p95_latency_ratio"]
    if p95 is not None and ratio is not None and base and p95 > ratio * base:
        reasons.append(_reason("latency", "p95 latency %s ms is more than %s x the baseline's %s ms" % (p95, ratio, base)))
    return reasons


def judge_step(summary, limits, idle=None, baseline=None, knowledge=None, margin_c=5, service_mode=False):
    """{"broke", "reason", "layer", "detail", "reasons"}: every breaking reason of the step, the first of
    REASON_ORDER named as the step's."""
    reasons = []
    if not summary["samples"] or not any(gpu for gpu in summary["gpus"]):
        reasons.append(_reason("sampler", "no GPU could be sampled: %s" % (
            "; ".join(summary["sampler_errors"][:2]) or "nvidia-smi answered nothing")))
    if limits["new_xid"]:
        reasons += _xid_reasons(summary, knowledge)
    if limits["new_ecc"]:
        reasons += _ecc_reasons(summary)
    if summary["concurrency"]:
        reasons += _oom_reasons(summary)
        reasons += _throttle_reasons(summary, limits, idle)
        reasons += _temperature_reasons(summary, limits, margin_c)
        reasons += _headroom_reasons(summary, limits)
        reasons += _exit_reasons(summary, service_mode)
        reasons += _request_reasons(summary, limits, baseline, service_mode)
    reasons.sort(key=lambda item: REASON_ORDER.index(item["reason"]))
    first = reasons[0] if reasons else {}
    return {"broke": bool(reasons), "reason": first.get("reason"), "layer": first.get("layer"),
            "detail": first.get("detail"), "reasons": reasons}


# ---------------------------------------------------------------- across steps

def total_used_mib(summary):
    values = [gpu["memory_used_peak_mib"] for gpu in summary["gpus"] if gpu["memory_used_peak_mib"] is not None]
    return sum(values) if values else None


def add_memory_per_worker(steps, idle):
    """Sets memory_per_added_worker_mib on each loaded step: the peak GPU memory it added over the step
    before it (step 0 for the first), divided by the workers it added."""
    before = idle
    for step in steps:
        used, previous = total_used_mib(step), total_used_mib(before) if before else None
        added = step["concurrency"] - (before["concurrency"] if before else 0)
        step["memory_per_added_worker_mib"] = (
            round(float(used - previous) / added, 1) if used is not None and previous is not None and added > 0
            else None)
        before = step


def steps_that_held(steps):
    """The steps before the first that broke (the run stops there; a later step does not count)."""
    held = []
    for step in steps:
        if step["verdict"]["broke"]:
            break
        held.append(step)
    return held


def worker_memory_mib(steps):
    """MiB one worker holds: the largest process peak of the steps that held, else the baseline's memory per
    added worker."""
    held = steps_that_held(steps)
    peaks = [process["used_peak_mib"] for step in held for process in step["processes"] if process["used_peak_mib"]]
    if peaks:
        return max(peaks)
    per_worker = [step["memory_per_added_worker_mib"] for step in held if step.get("memory_per_added_worker_mib")]
    return max(per_worker) if per_worker else None


def suggest_cap(steps, headroom_pct, service):
    """The largest step that held, as workers per GPU, lowered to what fits each card with headroom_pct of its
    memory kept free; with the policy fragment for worker_limits. None when no step held."""
    held = steps_that_held(steps)
    if not held:
        return None
    largest = held[-1]
    per_gpu = _peak(gpu["processes_peak"] for gpu in largest["gpus"]) or largest["concurrency"]
    memory = worker_memory_mib(steps)
    fits = None
    totals = [gpu["memory_total_mib"] for gpu in largest["gpus"] if gpu["memory_total_mib"]]
    if memory and totals:
        fits = int((min(totals) * (1 - headroom_pct / 100.0)) // memory)
    workers = max(1, min(per_gpu, fits) if fits is not None else per_gpu)
    basis = "step %d (%d in flight) held with %d workers on its busiest GPU" % (
        largest["step"], largest["concurrency"], per_gpu)
    if fits is not None:
        basis += "; %s MiB per worker fits %d per GPU with %s%% of the card kept free" % (memory, fits, headroom_pct)
    return {
        "workers_per_gpu": workers, "held_step": largest["step"], "held_concurrency": largest["concurrency"],
        "worker_memory_mib": memory, "headroom_pct": headroom_pct, "basis": basis,
        "fragment": {"gpufleet_policy_loadstep": {"workload": {"services": {service: {"workers_per_gpu": workers}}}}},
    }


def broken_step(steps):
    broke = [step for step in steps if step["verdict"]["broke"]]
    if not broke:
        return None
    step = broke[0]
    return {"step": step["step"], "concurrency": step["concurrency"], "reason": step["verdict"]["reason"],
            "layer": step["verdict"]["layer"], "detail": step["verdict"]["detail"]}
