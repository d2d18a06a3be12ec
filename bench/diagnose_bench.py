# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Figure 4 of `make bench`: the controller's side of an audit for 1,000 to 10,000 hosts of 8 GPUs.

Times the real `plugin_utils.audit.run.run_audit` (facts files, diagnosis, correlate,
build_report, the four reports and hosts.txt) on fleets made from the demo fleet's replayed facts,
with each phase timed by wrapping the names run_audit calls. The baseline, timed next to every
audit, is `json.dumps` of the same facts: one pure serialisation pass over the same data.
Run alone with `bench/run.py --only diagnose`; what the figures mean: bench/README.md, section 4.
"""

import cProfile
import contextlib
import gc
import io
import json
import os
import pstats
import random
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
if str(REPO / "collections") not in sys.path:
    sys.path[:0] = [str(REPO), str(REPO / "collections")]

# pylint: disable=wrong-import-position
import pynvml  # noqa: E402

from ansible_collections.gpufleet.core.plugins.module_utils.collector import Collection  # noqa: E402
from ansible_collections.gpufleet.core.plugins.plugin_utils.audit import record_step, run as audit_run
from ansible_collections.gpufleet.core.plugins.plugin_utils.audit import host_step  # noqa: E402
from ansible_collections.gpufleet.core.plugins.plugin_utils import run_folder  # noqa: E402
from ansible_collections.gpufleet.core.plugins.plugin_utils.reports import writer as report_writer  # noqa: E402
from ansible_collections.gpufleet.core.plugins.plugin_utils.audit.host_summary import collection_status  # noqa: E402
from ansible_collections.gpufleet.core.plugins.plugin_utils.policy import policy_from_vars  # noqa: E402

DEMO = REPO / "inventories" / "demo"
SIZES = (1000, 2000, 5000, 10000)
GPUS_PER_HOST = 8
HOST_NAME = "gpu-node-%05d"
# Every VERSION_STEP-th copy of a template runs the other driver of its branch, so the fleet has the
# version skew real fleets have while rollouts go on.
VERSION_STEP = 16
OTHER_DRIVER = {"550.90.07": "550.54.15", "535.183.06": "535.161.08", "470.256.02": "470.239.06",
                "550.127.05": "550.90.07", "515.105.01": "515.86.01"}
STARTED_AT = "2026-11-30T06:05:00Z"


# ---------------------------------------------------------------- the demo fleet as templates

def demo_inventory_groups():
    """{host: [groups from the top down]} of inventories/demo/hosts.yml."""
    found = {}

    def walk(group, parents):
        for host in (group.get("hosts") or {}):
            found[host] = list(parents)
        for name, child in (group.get("children") or {}).items():
            walk(child or {}, parents + [name])
    walk(yaml.safe_load((DEMO / "hosts.yml").read_text(encoding="utf-8"))["all"], ["all"])
    return found


def group_variables(groups):
    """A host's variables as Ansible merges group_vars, parents first."""
    variables = {}
    for group in groups:
        path = DEMO / "group_vars" / ("%s.yml" % group)
        if path.exists():
            variables.update(yaml.safe_load(path.read_text(encoding="utf-8")) or {})
    return variables


def replayed_facts(host):
    fixture = json.loads((DEMO / "fixtures" / ("%s.json" % host)).read_text(encoding="utf-8"))
    facts, _recorded = Collection(source="replay", fixture=fixture, gather_subset=fixture.get("gather_subset"),
                                  pynvml=pynvml).run()
    return facts


def load_templates():
    """[(demo host, group, facts)] of the demo's GPU hosts (a host without the NVIDIA stack is left out),
    and {group: effective policy}, one policy object per inventory group as the audit shares them."""
    groups = demo_inventory_groups()
    templates, policies = [], {}
    for host in sorted(groups):
        facts = replayed_facts(host)
        if not facts.get("nvidia_present"):
            continue
        group = groups[host][-1]
        if group not in policies:
            policies[group] = policy_from_vars(group_variables(groups[host]))
        templates.append((host, group, pad_gpus(facts, GPUS_PER_HOST)))
    return templates, policies


def pad_gpus(facts, count):
    """Hosts with fewer GPUs (the 4x L40S, the 1x T4) filled up to `count` with copies of their last GPU
    on new bus ids; a host whose GPUs NVML cannot see (the driver mismatch) keeps none."""
    gpus = facts["gpus"]
    if not gpus or len(gpus) >= count:
        return facts
    source = json.dumps(dict(gpus[-1], processes=[]))
    for index in range(len(gpus), count):
        gpu = json.loads(source)
        gpu["index"] = index
        gpu["pci_bus_id"] = "0000:%02x:00.0" % (0xc1 + index)
        gpus.append(gpu)
    return facts


# ---------------------------------------------------------------- one fleet

def template_of(number, templates):
    """Rotates the scenarios: each block of len(templates) hosts holds every scenario once, shifted by
    one place per block, so a scenario is not tied to a position in the name."""
    size = len(templates)
    return templates[(number + number // size) % size]


def vary(facts, number, block, name, rng):
    """One host's copy: its own name, serials and UUIDs, a few measured values moved a little, and every
    VERSION_STEP-th copy on the other driver of its branch."""
    if facts.get("host"):
        facts["host"]["hostname"] = name
    for gpu in facts["gpus"]:
        gpu["uuid"] = "GPU-%s" % uuid.uuid5(uuid.NAMESPACE_DNS, "%s/%d" % (name, gpu["index"]))
        if gpu.get("serial") and gpu["serial"].strip("0"):
            gpu["serial"] = "%s%05d%d" % (gpu["serial"][:7], number % 100000, gpu["index"])
        if gpu["temperature"].get("gpu_c") is not None:
            gpu["temperature"]["gpu_c"] += rng.randint(-2, 2)
        if gpu["power"].get("draw_w") is not None:
            gpu["power"]["draw_w"] = round(gpu["power"]["draw_w"] * rng.uniform(0.9, 1.1), 3)
    driver = facts["driver"]
    if block % VERSION_STEP == VERSION_STEP - 1 and driver.get("version") in OTHER_DRIVER:
        other = OTHER_DRIVER[driver["version"]]
        for key in ("version", "kernel_module_version", "userspace_version"):
            driver[key] = other
        if driver.get("nvml_version"):
            driver["nvml_version"] = "%s.%s" % (driver["nvml_version"].split(".")[0], other)
    return facts


def build_fleet(size, templates, policies, seed=2026):
    """(results, host_policies) for `size` hosts: each host's registered gpu_facts result, in the shape
    the audit reads, and its group's policy object."""
    rng = random.Random(seed)
    encoded = [(group, json.dumps(facts)) for _host, group, facts in templates]
    results, host_policies = {}, {}
    for number in range(size):
        group, text = template_of(number, encoded)
        name = HOST_NAME % number
        facts = vary(json.loads(text), number, number // len(encoded), name, rng)
        results[name] = {"ansible_facts": {"gpufleet": facts}, "changed": False}
        host_policies[name] = policies[group]
    return results, host_policies


# ---------------------------------------------------------------- timing the phases of run_audit

class PhaseClock:
    """Wall and CPU seconds spent in each named phase, summed over calls. CPU time (this process's user and
    system time) leaves out waiting: for the disk, and for the CPU while other processes have it."""

    def __init__(self):
        self.wall = {}
        self.cpu = {}

    def timed(self, name, func):
        def wrapper(*args, **kwargs):
            wall, cpu = time.perf_counter(), time.process_time()
            try:
                return func(*args, **kwargs)
            finally:
                self.add(name(*args) if callable(name) else name, time.perf_counter() - wall,
                         time.process_time() - cpu)
        return wrapper

    def add(self, name, wall, cpu):
        self.wall[name] = self.wall.get(name, 0.0) + wall
        self.cpu[name] = self.cpu.get(name, 0.0) + cpu


def written_file(path, _content=None):
    """The phase a write_atomically call belongs to: "write facts files" or "write <report file>"."""
    folder, name = os.path.split(path)
    return "write facts files" if os.path.basename(folder) == "facts" else "write " + name


@contextlib.contextmanager
def patched(replacements):
    """Sets (module, attribute, value) for the duration, then puts the originals back."""
    originals = [(module, attribute, getattr(module, attribute)) for module, attribute, _value in replacements]
    try:
        for module, attribute, value in replacements:
            setattr(module, attribute, value)
        yield
    finally:
        for module, attribute, value in originals:
            setattr(module, attribute, value)


def phase_timers(clock):
    """Wrappers around the names run_audit and write_reports look up when they run."""
    renderers = tuple((name, clock.timed("render " + name, render)) for name, render in report_writer.RENDERERS)
    return [
        (audit_run, "host_status", clock.timed("facts files", audit_run.host_status)),
        (audit_run, "write_atomically", clock.timed(written_file, audit_run.write_atomically)),
        (audit_run.FleetDiagnosis, "host", clock.timed("diagnose", audit_run.FleetDiagnosis.host)),
        (audit_run.FleetDiagnosis, "fleet", clock.timed("diagnose", audit_run.FleetDiagnosis.fleet)),
        (audit_run, "correlate", clock.timed("correlate", audit_run.correlate)),
        (record_step, "build_report", clock.timed("build_report", record_step.build_report)),
        (host_step, "summary_line", clock.timed("hosts.txt lines", host_step.summary_line)),
        (audit_run, "write_reports", clock.timed("reports", audit_run.write_reports)),
        (report_writer, "RENDERERS", renderers),
        (report_writer, "write_atomically", clock.timed(written_file, run_folder.write_atomically)),
        (report_writer, "point_latest", clock.timed("latest link", run_folder.point_latest)),
    ]


REPORT_FILES = tuple(name for name, _render in report_writer.RENDERERS)
# Rows of the phase table: (row, timed names added, timed names taken away). "facts files" (host_status)
# includes its write, so the row is split into encoding and writing.
PHASES = (
    ("facts files: encode", ("facts files",), ("write facts files",)),
    ("facts files: write", ("write facts files",), ()),
    ("diagnose", ("diagnose",), ()),
    ("correlate", ("correlate",), ()),
    ("build_report", ("build_report",), ()),
) + tuple(
    row for name in REPORT_FILES
    for row in (("%s: render" % name, ("render " + name,), ()), ("%s: write" % name, ("write " + name,), ()))
) + (
    ("hosts.txt", ("hosts.txt lines", "write hosts.txt"), ()),
)


def phase_table(seconds, total):
    """{row: seconds} for PHASES, and "other" for the rest of run_audit's time (the latest link,
    the ids of the rules that ran, the summary of fail severities)."""
    rows = {}
    for row, plus, minus in PHASES:
        rows[row] = sum(seconds.get(name, 0.0) for name in plus) - sum(seconds.get(name, 0.0) for name in minus)
    rows["other"] = total - sum(rows.values())
    return rows


# ---------------------------------------------------------------- one timed audit

class GcClock:
    """Time spent in the cyclic garbage collector, and its full (generation 2) collections, while it is
    one of gc.callbacks. Collections run inside whatever phase allocated, so this overlaps the phases."""

    def __init__(self):
        self.seconds = 0.0
        self.full_collections = 0
        self._started = None

    def __call__(self, phase, info):
        if phase == "start":
            self._started = time.perf_counter()
        elif self._started is not None:
            self.seconds += time.perf_counter() - self._started
            self._started = None
            self.full_collections += info.get("generation") == 2


@contextlib.contextmanager
def gc_callback(callback):
    gc.callbacks.append(callback)
    try:
        yield
    finally:
        gc.callbacks.remove(callback)


def facts_of(results):
    return [result["ansible_facts"]["gpufleet"] for result in results.values()]


def baseline_seconds(results):
    """(wall s, CPU s, bytes) of json.dumps of each host's facts, compact (CPython's C encoder): one pure
    serialisation pass over the same data, host by host as the facts files are written, not kept."""
    facts = facts_of(results)
    dumps = json.dumps
    total = 0
    wall, cpu = time.perf_counter(), time.process_time()
    for host_facts in facts:
        total += len(dumps(host_facts))
    return time.perf_counter() - wall, time.process_time() - cpu, total


def output_sizes(run_dir, paths):
    sizes = {os.path.basename(path): os.path.getsize(path) for path in paths}
    sizes["hosts.txt"] = os.path.getsize(os.path.join(run_dir, "hosts.txt"))
    with os.scandir(os.path.join(run_dir, "facts")) as entries:
        facts = [entry.stat().st_size for entry in entries if entry.is_file()]
    sizes["facts/*.json"] = sum(facts)
    return sizes, len(facts)


def prewrite_facts_files(results, run_dir, host_policies=None):
    """What the per-host gpu_facts action does in the Ansible worker as each result arrives, by its own
    functions (plugin_utils/audit/host_step.py: write_facts, host_diagnosis): with
    host_policies, diagnose the host (gpufleet_diagnosis); write facts/<host>.json, name it in the result as
    gpufleet_facts_file and add the run store's extract (gpufleet_store_extract). The play's file names are
    computed once here (each worker computes them for its host). Returns (results that name their files, still
    holding the facts, CPU s, wall s)."""
    from ansible_collections.gpufleet.core.plugins.action.gpu_facts import KNOWLEDGE_FOR
    from ansible_collections.gpufleet.core.plugins.plugin_utils.audit.host_step import (
        DIAGNOSIS_KEY, host_diagnosis, write_facts)
    from ansible_collections.gpufleet.core.plugins.plugin_utils.store.extract import STORE_EXTRACT_KEY
    names = run_folder.facts_file_names(sorted(results))
    facts_dir = os.path.join(run_dir, run_folder.FACTS_FOLDER)
    os.makedirs(facts_dir, exist_ok=True)
    named = {}
    wall, cpu = time.perf_counter(), time.process_time()
    for host, result in results.items():
        if collection_status(result) != "ok":
            named[host] = result
            continue
        named[host] = dict(result)
        if host_policies is not None:
            named[host][DIAGNOSIS_KEY] = host_diagnosis(host, result, host_policies[host], KNOWLEDGE_FOR)
        named[host][audit_run.FACTS_FILE_KEY], named[host][STORE_EXTRACT_KEY] = write_facts(
            facts_dir, names[host], result["ansible_facts"]["gpufleet"], extract=True)
    return named, time.process_time() - cpu, time.perf_counter() - wall


def without_facts(results):
    """The results as the gpu_facts action returns them with keep_facts=false: the facts only in the files."""
    return {host: {key: value for key, value in result.items() if key != "ansible_facts"}
            if audit_run.FACTS_FILE_KEY in result else result for host, result in results.items()}


# run_audit's report options for every run of the bench: --compress also writes report.json.gz (its size is listed)
REPORT_OPTIONS = {"compress": False}


def audit_once(results, host_policies, work_root, replacements=(), profiler=None, prewritten=False):
    """((wall s, CPU s), report, sizes, facts files, facts pre-written (CPU s, wall s) or None) of one run_audit
    into a fresh folder, removed afterwards. prewritten: the facts files are written and each host diagnosed
    first, untimed in the run's time, as the per-host worker does (prewrite_facts_files), and run_audit gets the
    results without facts, as audit.yml gives them (keep_facts=false): it names the files, takes the diagnoses."""
    root = tempfile.mkdtemp(prefix="gpufleet-bench-diagnose-", dir=work_root)
    try:
        report_root = os.path.join(root, "reports")
        run_dir = os.path.join(report_root, STARTED_AT.replace("-", "").replace(":", ""))
        prewrite = None
        if prewritten:
            results, prewrite_cpu, prewrite_wall = prewrite_facts_files(results, run_dir, host_policies)
            results = without_facts(results)
            prewrite = (prewrite_cpu, prewrite_wall)
        with patched(replacements):
            wall, cpu = time.perf_counter(), time.process_time()
            if profiler:
                profiler.enable()
            try:
                report, paths, _lines = audit_run.run_audit(results, host_policies, run_dir, report_root, STARTED_AT,
                                                            compress=REPORT_OPTIONS["compress"])
            finally:
                if profiler:
                    profiler.disable()
            seconds = (time.perf_counter() - wall, time.process_time() - cpu)
        sizes, facts_files = output_sizes(run_dir, paths)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return seconds, report, sizes, facts_files, prewrite


def peak_rss_mib():
    try:
        import resource
    except ImportError:
        return None
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def timed_audit(results, host_policies, work_root):
    """One run_audit with its phases and the garbage collector timed, after the baseline on the same facts."""
    gc.collect()
    baseline, baseline_cpu, baseline_bytes = baseline_seconds(results)
    clock, collector = PhaseClock(), GcClock()
    with gc_callback(collector):
        (seconds, cpu), report, sizes, facts_files, _none = audit_once(results, host_policies, work_root,
                                                                       phase_timers(clock))
    gc.collect()
    # the same audit with the facts files already written by the worker (the gpu_facts action's path)
    (pre_wall, pre_cpu), _report, _sizes, _files, (write_cpu, write_wall) = audit_once(
        results, host_policies, work_root, prewritten=True)
    return {
        "prewritten_total_seconds": pre_wall,
        "prewritten_total_cpu_seconds": pre_cpu,
        "facts_file_cpu_ms_per_host": 1e3 * write_cpu / max(len(results), 1),
        "facts_file_wall_ms_per_host": 1e3 * write_wall / max(len(results), 1),
        "hosts": len(results),
        "gpus": sum(len(facts["gpus"]) for facts in facts_of(results)),
        "baseline_seconds": baseline,
        "baseline_cpu_seconds": baseline_cpu,
        "baseline_json_bytes": baseline_bytes,
        "total_seconds": seconds,
        "total_cpu_seconds": cpu,
        "phases": phase_table(clock.wall, seconds),
        "phases_cpu": phase_table(clock.cpu, cpu),
        "gc_seconds": collector.seconds,
        "gc_full_collections": collector.full_collections,
        "findings": len(report["findings"]),
        "findings_by_severity": dict(report["summary"]["by_severity"]),
        "causes": len(report["causes"]),
        "output_bytes": sizes,
        "facts_files": facts_files,
    }


def measure_size(size, templates, policies, work_root, profile=False):
    """One fleet of `size` hosts built, timed (and profiled when asked) and dropped again, so the heap
    holds one fleet at a time, as on a controller."""
    built = time.perf_counter()
    results, host_policies = build_fleet(size, templates, policies)
    build_seconds = time.perf_counter() - built
    run = timed_audit(results, host_policies, work_root)
    run["build_seconds"] = build_seconds
    run["peak_rss_mib"] = peak_rss_mib()
    if profile:
        run["profile"] = profile_audit(results, host_policies, work_root)
    del results, host_policies
    gc.collect()
    return run


def repeats(size, smallest, small_repeats):
    """More runs of the small fleets, whose timings are short and noisier: small_repeats at the smallest
    size, fewer as the fleet grows, at least one."""
    return max(1, int(round(small_repeats * smallest / float(size))))


def schedule(sizes, small_repeats):
    """Rounds of ascending sizes; a size drops out of later rounds once it has its runs."""
    counts = {size: repeats(size, min(sizes), small_repeats) for size in sizes}
    order = []
    for round_number in range(max(counts.values())):
        order.extend(size for size in sorted(sizes) if counts[size] > round_number)
    return order


# ---------------------------------------------------------------- where the time goes

PACKAGE = str(REPO / "collections" / "ansible_collections" / "gpufleet" / "core") + os.sep
REPO_PREFIX = str(REPO) + os.sep


def function_label(key):
    """plugins/plugin_utils/rules/correlate.py:176(<genexpr>), json/encoder.py:205(iterencode), or the built-in."""
    filename, line, name = key
    if filename == "~":
        return name
    for prefix in (PACKAGE, REPO_PREFIX):
        if filename.startswith(prefix):
            return "%s:%d(%s)" % (filename[len(prefix):], line, name)
    parts = Path(filename).parts
    return "%s:%d(%s)" % ("/".join(parts[-2:]), line, name)


def without_facts_files(profiler):
    """host_status with the profiler paused: one indented json.dumps and one write per host, whose time the
    phase table has; profiling CPython's pure-Python JSON encoder would multiply the run's time by ~7."""
    original = audit_run.host_status

    def host_status(*args):
        profiler.disable()
        try:
            return original(*args)
        finally:
            profiler.enable()
    return [(audit_run, "host_status", host_status)]


def main_caller(callers):
    """(label, share) of the caller the function spent most of its own time for."""
    if not callers:
        return None, None
    own = {key: value[2] for key, value in callers.items()}
    total = sum(own.values())
    key = max(own, key=own.get)
    return function_label(key), (own[key] / total if total else None)


def profile_audit(results, host_policies, work_root):
    """{function: [calls, own s, cumulative s, main caller, its share]} of one profiled run_audit, in CPU
    time (other processes' load does not count; the profile costs half as much again as with the default
    wall clock), without the facts files, and with the garbage collector off, so that a collection's time
    is not charged to the function that happened to trigger it (GcClock has the collector's own time)."""
    profiler = cProfile.Profile(time.process_time)
    with audit_run.collector_paused():
        seconds, _report, _sizes, _files, _none = audit_once(results, host_policies, work_root,
                                                             without_facts_files(profiler), profiler)
    stats = pstats.Stats(profiler, stream=io.StringIO())
    table = {}
    for key, (_primitive, calls, own, cumulative, callers) in stats.stats.items():
        table[function_label(key)] = [calls, own, cumulative] + list(main_caller(callers))
    return {"hosts": len(results), "functions": table, "profiled_seconds": stats.total_tt, "wall_seconds": seconds[0]}


def hot_spots(small, large, top=5, share_floor=0.01):
    """The `top` functions by own time in the large run, the `top` of gpufleet's own code, and every
    function above share_floor whose own time or call count grows more than twice as fast as the fleet
    (the sign of work that is quadratic in the hosts)."""
    hosts_ratio = large["hosts"] / float(small["hosts"])
    total = large["profiled_seconds"]

    def row(label):
        calls, own, cumulative, caller, caller_share = large["functions"][label]
        before = small["functions"].get(label)
        return {"function": label, "calls": calls, "own_seconds": own, "cumulative_seconds": cumulative,
                "own_share": own / total if total else None,
                "own_growth": own / before[1] if before and before[1] > 0 else None,
                "calls_growth": calls / float(before[0]) if before and before[0] else None,
                "main_caller": caller, "main_caller_share": caller_share}
    ranked = sorted(large["functions"], key=lambda label: -large["functions"][label][1])
    rows = [row(label) for label in ranked]
    significant = [entry for entry in rows if entry["own_share"] and entry["own_share"] >= share_floor]
    return {
        "hosts": large["hosts"],
        "compared_with_hosts": small["hosts"],
        "profiled_seconds": total,
        "wall_seconds": {small["hosts"]: small["wall_seconds"], large["hosts"]: large["wall_seconds"]},
        "top": rows[:top],
        "top_gpufleet": [entry for entry in rows if entry["function"].startswith("plugins/")][:top],
        "superlinear": [entry for entry in significant
                        if (entry["own_growth"] or 0) > 2 * hosts_ratio or (entry["calls_growth"] or 0) > 2 * hosts_ratio],
        "note": "cProfile of run_audit in CPU time, host_status (the facts files) paused, garbage collector off; "
                "growth: own time or calls at %d hosts over %d hosts" % (large["hosts"], small["hosts"]),
    }


# ---------------------------------------------------------------- summaries

WRITE_ROWS = ("facts files: write",) + tuple("%s: write" % name for name in REPORT_FILES)


def median(values):
    return statistics.median(values) if values else None


def without_writes(run, clock=""):
    """run_audit's time less the writing of files (facts and reports, each flushed to disk by fsync).
    clock: "" for wall time, "_cpu" for CPU time."""
    return run["total%s_seconds" % clock] - sum(run["phases" + clock][name] for name in WRITE_ROWS)


def clock_summary(runs, clock):
    """Medians over the runs of one size in one clock ("" wall, "_cpu" CPU); ratios per run, then their median."""
    def total(run):
        return run["total%s_seconds" % clock]

    def baseline(run):
        return run["baseline%s_seconds" % clock]

    def phase(run, name):
        return run["phases" + clock][name]
    return {
        "total": median([total(run) for run in runs]),
        "total_all": [total(run) for run in runs],
        "without_writes": median([without_writes(run, clock) for run in runs]),
        "baseline": median([baseline(run) for run in runs]),
        "baseline_all": [baseline(run) for run in runs],
        "phases": {name: median([phase(run, name) for run in runs]) for name in runs[0]["phases" + clock]},
        "ratio_total_over_baseline": median([total(run) / baseline(run) for run in runs]),
        "ratio_diagnose_over_baseline": median([phase(run, "diagnose") / baseline(run) for run in runs]),
        "ratio_facts_encode_over_baseline": median([phase(run, "facts files: encode") / baseline(run)
                                                    for run in runs]),
    }


def size_summary(runs):
    """Both clocks' medians over the runs of one size, and what the first run found and wrote."""
    first = runs[0]
    return {
        "hosts": first["hosts"],
        "gpus": first["gpus"],
        "runs": len(runs),
        "wall": clock_summary(runs, ""),
        "cpu": clock_summary(runs, "_cpu"),
        "baseline_json_bytes": first["baseline_json_bytes"],
        "gc_seconds": median([run["gc_seconds"] for run in runs]),
        "gc_full_collections": median([run["gc_full_collections"] for run in runs]),
        "findings": first["findings"],
        "findings_by_severity": first["findings_by_severity"],
        "causes": first["causes"],
        "output_bytes": first["output_bytes"],
        "facts_files": first["facts_files"],
        "peak_rss_mib": first["peak_rss_mib"],
        "build_seconds": median([run["build_seconds"] for run in runs]),
        "prewritten": {"wall": median([run["prewritten_total_seconds"] for run in runs]),
                       "cpu": median([run["prewritten_total_cpu_seconds"] for run in runs])},
        "facts_file_ms_per_host": {"wall": median([run["facts_file_wall_ms_per_host"] for run in runs]),
                                   "cpu": median([run["facts_file_cpu_ms_per_host"] for run in runs])},
    }


def ratio(value, reference):
    return value / reference if value is not None and reference else None


def clock_growth(summary, first, hosts_ratio):
    return {
        "total": ratio(summary["total"], first["total"]),
        "without_writes": ratio(summary["without_writes"], first["without_writes"]),
        "baseline": ratio(summary["baseline"], first["baseline"]),
        "baseline_normalised_total": ratio(summary["ratio_total_over_baseline"],
                                           first["ratio_total_over_baseline"]) * hosts_ratio,
        "phases": {name: ratio(seconds, first["phases"][name]) for name, seconds in summary["phases"].items()},
    }


def growth(summaries):
    """t(N)/t(N0) against N/N0 (N0 the smallest size), in wall and CPU time, for the total, the total without
    file writes, each phase and the baseline; and the total with each size first divided by its own
    baseline, which takes out how fast the machine was at that moment (as long as the baseline itself
    grows linearly), times N/N0."""
    first = summaries[min(summaries)]
    table = {}
    for size, summary in sorted(summaries.items()):
        hosts_ratio = size / float(first["hosts"])
        table[size] = {"hosts_ratio": hosts_ratio,
                       "wall": clock_growth(summary["wall"], first["wall"], hosts_ratio),
                       "cpu": clock_growth(summary["cpu"], first["cpu"], hosts_ratio),
                       "gc": ratio(summary["gc_seconds"], first["gc_seconds"])}
    return table


# ---------------------------------------------------------------- the figure

def filesystem_of(path):
    """The type of the file system holding path, from /proc/mounts (None where there is none)."""
    path = os.path.realpath(path)
    best, kind = "", None
    try:
        with open("/proc/mounts", encoding="utf-8") as mounts:
            for line in mounts:
                fields = line.split()
                point = fields[1].replace("\\040", " ")
                if (path == point or path.startswith(point.rstrip("/") + "/")) and len(point) >= len(best):
                    best, kind = point, fields[2]
    except OSError:
        return None
    return kind


def diagnose_bench(sizes=SIZES, small_repeats=2, profile=True, work_root=None):
    """The whole figure: every size timed (the small ones more often, interleaved); the smallest and the
    largest fleet also profiled, on the same facts, right after their first timed run."""
    sizes = sorted(set(sizes))
    work_root = work_root or tempfile.gettempdir()
    started = time.perf_counter()
    templates, policies = load_templates()
    order = schedule(sizes, small_repeats)
    to_profile = {min(sizes), max(sizes)} if profile and len(sizes) > 1 else set()
    runs = {size: [] for size in sizes}
    profiles = {}
    for size in order:
        run = measure_size(size, templates, policies, work_root, profile=size in to_profile and not runs[size])
        if "profile" in run:
            profiles[size] = run.pop("profile")
        runs[size].append(run)
    summaries = {size: size_summary(size_runs) for size, size_runs in runs.items()}
    result = {
        "templates": [{"demo_host": host, "group": group, "gpus": len(facts["gpus"]),
                       "driver": facts["driver"].get("version") or facts["driver"].get("kernel_module_version")}
                      for host, group, facts in templates],
        "policies": sorted(policies),
        "work_dir_filesystem": filesystem_of(work_root),
        "order": order,
        "sizes": summaries,
        "growth": growth(summaries),
    }
    if to_profile:
        result["profile"] = hot_spots(profiles[min(sizes)], profiles[max(sizes)])
    result["seconds"] = time.perf_counter() - started
    return result


# ---------------------------------------------------------------- printing

def print_row(label, values, fmt="%12.3f"):
    print("   %-28s" % label + "".join(fmt % value if value is not None else "%12s" % "-" for value in values))


def print_clock(title, summaries, clock):
    print("   %s" % title)
    print_row("run_audit total", [s[clock]["total"] for s in summaries])
    for name in summaries[0][clock]["phases"]:
        print_row("  " + name, [s[clock]["phases"][name] for s in summaries])
    print_row("total without writes", [s[clock]["without_writes"] for s in summaries])
    print_row("baseline json.dumps", [s[clock]["baseline"] for s in summaries])
    print_row("ratio total/baseline", [s[clock]["ratio_total_over_baseline"] for s in summaries], "%12.2f")
    print_row("ratio diagnose/baseline", [s[clock]["ratio_diagnose_over_baseline"] for s in summaries], "%12.2f")
    print_row("ratio facts encode/baseline", [s[clock]["ratio_facts_encode_over_baseline"] for s in summaries],
              "%12.2f")
    print_row("ms per host", [1e3 * s[clock]["total"] / s["hosts"] for s in summaries], "%12.2f")


def print_growth(title, rows, clock):
    print("   %s" % title)
    print_row("total", [row[clock]["total"] for row in rows], "%12.2f")
    print_row("baseline-normalised total", [row[clock]["baseline_normalised_total"] for row in rows], "%12.2f")
    print_row("total without writes", [row[clock]["without_writes"] for row in rows], "%12.2f")
    for name in rows[0][clock]["phases"]:
        print_row("  " + name, [row[clock]["phases"][name] for row in rows], "%12.2f")
    print_row("baseline", [row[clock]["baseline"] for row in rows], "%12.2f")


def print_diagnose(result):
    sizes = sorted(result["sizes"])
    summaries = [result["sizes"][size] for size in sizes]
    rows = [result["growth"][size] for size in sizes]
    print("== 4. the controller's side of an audit (run_audit), %s hosts (the demo fleet's %d GPU hosts "
          "replicated, %d policies; files on %s)" % (" / ".join("{:,}".format(size) for size in sizes),
                                                     len(result["templates"]), len(result["policies"]),
                                                     result["work_dir_filesystem"]))
    print("   run order: %s; seconds are medians over the runs of a size" % " ".join(str(s) for s in result["order"]))
    print_row("hosts", sizes, "%12d")
    print_row("GPUs", [s["gpus"] for s in summaries], "%12d")
    print_row("runs", [s["runs"] for s in summaries], "%12d")
    print_clock("wall-clock seconds", summaries, "wall")
    print_row("(garbage collector, wall s)", [s["gc_seconds"] for s in summaries])
    print_clock("CPU seconds (this process, user + system)", summaries, "cpu")
    print_row("growth: hosts N/N0", [row["hosts_ratio"] for row in rows], "%12.2f")
    print("   the audit's path: facts files written and hosts diagnosed in the workers, results without facts "
          "(run_audit names the files, takes the diagnoses)")
    print_row("run_audit, pre-written, CPU s", [s["prewritten"]["cpu"] for s in summaries])
    print_row("run_audit, pre-written, wall s", [s["prewritten"]["wall"] for s in summaries])
    print_row("growth, pre-written, CPU", [s["prewritten"]["cpu"] / summaries[0]["prewritten"]["cpu"]
                                           for s in summaries], "%12.2f")
    print_row("pre-written / as today, CPU", [s["prewritten"]["cpu"] / s["cpu"]["total"] for s in summaries], "%12.2f")
    print_row("worker's part, CPU ms/host", [s["facts_file_ms_per_host"]["cpu"] for s in summaries])
    print_row("worker's part, wall ms/host", [s["facts_file_ms_per_host"]["wall"] for s in summaries])
    print_growth("growth t(N)/t(N0), CPU time", rows, "cpu")
    print_growth("growth t(N)/t(N0), wall-clock time", rows, "wall")
    print_row("  garbage collector", [row["gc"] for row in rows], "%12.2f")
    print_row("findings", [s["findings"] for s in summaries], "%12d")
    print_row("likely causes", [s["causes"] for s in summaries], "%12d")
    for name in summaries[0]["output_bytes"]:
        print_row("%s, MB" % name, [s["output_bytes"][name] / 1e6 for s in summaries], "%12.2f")
    print_row("peak RSS so far, MiB", [s["peak_rss_mib"] for s in summaries], "%12.0f")
    if result.get("profile"):
        print_profile(result["profile"])


def print_profile(profile):
    print("   cProfile at %s hosts (%s): %.1f CPU s profiled"
          % ("{:,}".format(profile["hosts"]), profile["note"], profile["profiled_seconds"]))
    print("   %-64s %9s %7s %6s %6s %6s" % ("function", "calls", "own s", "share", "own x", "calls x"))
    sections = (("top 5 by own time", profile["top"]), ("top 5 of gpufleet's code by own time", profile["top_gpufleet"]),
                ("growing faster than twice the fleet", profile["superlinear"]))
    for title, entries in sections:
        print("   %s:%s" % (title, "" if entries else " none above 1% of the profile"))
        for entry in entries:
            print_hot_spot(entry)


def print_hot_spot(entry):
    def times(value):
        return "%6.1f" % value if value is not None else "%6s" % "new"
    print("   %-64s %9d %7.2f %5.1f%% %s %s" % (
        entry["function"][-64:], entry["calls"], entry["own_seconds"], 100 * entry["own_share"],
        times(entry["own_growth"]), times(entry["calls_growth"])))
    if not entry["function"].startswith("plugins/") and entry["main_caller"]:
        print("       %.0f%% of it for %s" % (100 * entry["main_caller_share"], entry["main_caller"]))


def main(argv=None):
    import argparse
    parser = argparse.ArgumentParser(description="run_audit at fleet scale (bench/README.md, section 4); "
                                                 "bench/run.py --only diagnose runs the same and saves the results")
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES))
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--no-profile", action="store_true")
    parser.add_argument("--compress", action="store_true", help="also write report.json.gz and list its size")
    parser.add_argument("--output", type=Path)
    args = parser.parse_args(argv)
    REPORT_OPTIONS["compress"] = args.compress
    result = diagnose_bench(args.sizes, args.repeats, not args.no_profile)
    print_diagnose(result)
    if args.output:
        args.output.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
