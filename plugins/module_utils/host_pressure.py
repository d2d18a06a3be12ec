# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gather_subset host_pressure: is the host starving its GPUs?

Over a few seconds: the share of time tasks stalled on CPU, memory and I/O (pressure stall information,
/proc/pressure/*: the `total` microseconds counters read at both ends of the sample, and the kernel's own
avg10/avg60/avg300), the load per core, available memory, swap-in and swap-out pages per second (/proc/vmstat)
and the memory-pressure counters since boot (swap, direct reclaim, compaction, OOM kills), and GPU utilization
sampled about once a second through nvidia-smi over the same seconds.

The parsers are pure functions of text: a PSI file of the host or of a cgroup v2 (`cpu.pressure`), with or without
the `full` line (the cpu file has none before kernel 5.13), also as `grep -n . /proc/pressure/*` prints it.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re
import time

from ansible_collections.gpufleet.core.plugins.module_utils.facts_model import add_error

RESOURCES = ("cpu", "memory", "io")
PSI_FOLDER = "/proc/pressure"
MAX_SAMPLE_SECONDS = 60
GPU_QUERY = ["--query-gpu=index,utilization.gpu", "--format=csv,noheader,nounits"]
QUERY_TIMEOUT = 5.0
# A shorter sample (pressure_sample_seconds 0, a replay) measures nothing: only the kernel's averages count.
MIN_MEASURED_SECONDS = 0.5
# what grep -H/-n puts before a line: "/proc/pressure/io:2:full avg10=..."
_FILE_PREFIX = re.compile(r"^(?P<path>[^\s:]*):(?:\d+:)?(?=(?:some|full)\s)")
# /proc/vmstat counters since boot that tell of memory pressure; allocstall is split by zone on newer kernels
VMSTAT_SINCE_BOOT = ("pswpin", "pswpout", "compact_stall", "compact_fail", "thp_fault_fallback", "pgmajfault",
                     "oom_kill")


def parse_psi(text):
    """{"some": {avg10, avg60, avg300, total}, "full": {...}} of a PSI file (host-wide or a cgroup's);
    None when the text holds no `some` line."""
    parsed = {}
    for line in (text or "").splitlines():
        prefix = _FILE_PREFIX.match(line)
        words = line[prefix.end():].split() if prefix else line.split()
        if not words or words[0] not in ("some", "full"):
            continue
        values = {}
        for word in words[1:]:
            key, _sep, value = word.partition("=")
            try:
                values[key] = int(value) if key == "total" else float(value)
            except ValueError:
                continue
        parsed[words[0]] = values
    return parsed if "some" in parsed else None


def split_psi_listing(text):
    """{resource: text} of PSI files printed together with their names (grep -H or -n over /proc/pressure/*)."""
    files = {}
    for line in (text or "").splitlines():
        prefix = _FILE_PREFIX.match(line)
        if prefix:
            resource = prefix.group("path").rsplit("/", 1)[-1].replace(".pressure", "")
            files[resource] = files.get(resource, "") + line + "\n"
    return files


def parse_meminfo(text):
    """{field: kiB} of /proc/meminfo."""
    values = {}
    for line in (text or "").splitlines():
        name, _sep, rest = line.partition(":")
        words = rest.split()
        if words and words[0].isdigit():
            values[name.strip()] = int(words[0])
    return values


def parse_vmstat(text):
    values = {}
    for line in (text or "").splitlines():
        words = line.split()
        if len(words) == 2 and words[1].isdigit():
            values[words[0]] = int(words[1])
    return values


def parse_loadavg(text):
    words = (text or "").split()
    try:
        return [float(word) for word in words[:3]] if len(words) >= 3 else None
    except ValueError:
        return None


def parse_cpu_list(text):
    """How many CPUs a list such as `0-15,32-47` names; None for garbage."""
    count = 0
    for part in (text or "").strip().split(","):
        if not part:
            continue
        low, _sep, high = part.partition("-")
        try:
            count += (int(high) - int(low) + 1) if high else 1
        except ValueError:
            return None
    return count or None


def parse_gpu_utilization(stdout):
    """{gpu index: percent} of `nvidia-smi --query-gpu=index,utilization.gpu` csv; [N/A] rows are left out."""
    found = {}
    for line in (stdout or "").splitlines():
        parts = [part.strip() for part in line.split(",")]
        if len(parts) == 2 and parts[0].isdigit() and parts[1].isdigit():
            found[int(parts[0])] = int(parts[1])
    return found


def _only_unavailable(stdout):
    """True when every row of the utilization query is a GPU index with [N/A]."""
    rows = [[part.strip() for part in line.split(",")] for line in (stdout or "").splitlines() if line.strip()]
    return bool(rows) and all(len(row) == 2 and row[0].isdigit() and row[1] == "[N/A]" for row in rows)


def _read_psi(host):
    return dict((resource, parse_psi(host.read_text("%s/%s" % (PSI_FOLDER, resource)))) for resource in RESOURCES)


def _stall_pct(before, after, kind, seconds):
    first, last = (before or {}).get(kind) or {}, (after or {}).get(kind) or {}
    if "total" not in first or "total" not in last or seconds < MIN_MEASURED_SECONDS:
        return None
    return round(min(100.0, max(0.0, (last["total"] - first["total"]) / (seconds * 1e6) * 100.0)), 2)


def pressure_record(before, after, seconds):
    """Per resource: some_pct and full_pct over the sample (from the totals), and the kernel's avg10/avg60."""
    if after is None:
        return None
    record = {}
    for kind in ("some", "full"):
        record["%s_pct" % kind] = _stall_pct(before, after, kind, seconds)
        for average in ("avg10", "avg60", "avg300"):
            record["%s_%s" % (kind, average)] = (after.get(kind) or {}).get(average)
    return record


def vmstat_record(vmstat):
    """The memory-pressure counters since boot (null where the kernel has none); allocstall sums its zones."""
    record = dict((name, vmstat.get(name)) for name in VMSTAT_SINCE_BOOT)
    stalls = [value for name, value in vmstat.items() if name == "allocstall" or name.startswith("allocstall_")]
    record["allocstall"] = sum(stalls) if stalls else None
    return record


def _mib(kib):
    return None if kib is None else round(kib / 1024.0, 1)


def memory_record(meminfo):
    total, available = meminfo.get("MemTotal"), meminfo.get("MemAvailable")
    return {"total_mib": _mib(total), "available_mib": _mib(available),
            "available_pct": round(100.0 * available / total, 1) if total and available is not None else None}


def swap_record(meminfo, before, after, seconds):
    def rate(name):
        if name not in before or name not in after or seconds < MIN_MEASURED_SECONDS:
            return None
        return round(max(0, after[name] - before[name]) / seconds, 2)
    return {"total_mib": _mib(meminfo.get("SwapTotal")), "free_mib": _mib(meminfo.get("SwapFree")),
            "pages_in_per_s": rate("pswpin"), "pages_out_per_s": rate("pswpout")}


def load_record(loadavg, cpus):
    if loadavg is None:
        return {"avg1": None, "avg5": None, "avg15": None, "per_core_avg1": None}
    return {"avg1": loadavg[0], "avg5": loadavg[1], "avg15": loadavg[2],
            "per_core_avg1": round(loadavg[0] / cpus, 2) if cpus else None}


def utilization_record(samples):
    """[{index, mean_pct, min_pct, max_pct, samples}] per GPU from [{index: pct}] samples."""
    by_gpu = {}
    for sample in samples:
        for index, value in sample.items():
            by_gpu.setdefault(index, []).append(value)
    return [{"index": index, "mean_pct": round(sum(values) / float(len(values)), 1), "min_pct": min(values),
             "max_pct": max(values), "samples": len(values)} for index, values in sorted(by_gpu.items())]


def _facts_utilization(facts):
    sample = {}
    for gpu in facts.get("gpus") or ():
        pct = (gpu.get("utilization") or {}).get("gpu_pct")
        if gpu.get("index") is not None and pct is not None:
            sample[gpu["index"]] = pct
    return [sample] if sample else []


class _GpuSampler:
    """nvidia-smi utilization queries; after a failed one it stops asking (and says why once)."""

    def __init__(self, host, facts):
        self.host = host
        self.facts = facts
        self.nvidia_smi = host.find_bin("nvidia-smi") if facts.get("nvidia_present") else None
        self.samples = []

    def sample(self, timeout):
        if self.nvidia_smi is None:
            return
        result = self.host.run([self.nvidia_smi] + GPU_QUERY, timeout)
        values = parse_gpu_utilization(result.stdout) if result.rc == 0 else {}
        if not values and result.rc == 0 and _only_unavailable(result.stdout):
            # every GPU answers [N/A] (MIG mode has no whole-GPU utilization): nothing to sample, nothing failed
            self.nvidia_smi = None
            return
        if not values:
            add_error(self.facts, None, "host pressure: nvidia-smi " + " ".join(GPU_QUERY),
                      result.describe_failure() if result.rc != 0 else "no utilization in the output", result.rc)
            self.nvidia_smi = None
            return
        self.samples.append(values)


def sample_host_pressure(host, facts, seconds, time_left, clock=time.monotonic, sleep=time.sleep):
    """Fills facts['host_pressure']. seconds: the sample asked for; time_left(): seconds the collection has
    left (the sample ends a second before)."""
    seconds = max(0.0, min(float(seconds), MAX_SAMPLE_SECONDS, time_left() - 1.0))
    sampler = _GpuSampler(host, facts)
    psi_before = _read_psi(host)
    vm_before = parse_vmstat(host.read_text("/proc/vmstat"))
    started = clock()
    while True:
        sampler.sample(min(QUERY_TIMEOUT, max(1.0, time_left() - 1.0)))
        elapsed = clock() - started
        if elapsed >= seconds:
            break
        sleep(min(1.0, seconds - elapsed))
    measured = max(clock() - started, 0.0)
    psi_after = _read_psi(host)
    vm_after = parse_vmstat(host.read_text("/proc/vmstat"))
    meminfo = parse_meminfo(host.read_text("/proc/meminfo"))
    cpus = parse_cpu_list(host.read_text("/sys/devices/system/cpu/online"))
    samples = sampler.samples or _facts_utilization(facts)
    record = {
        "sample_seconds": round(measured, 2),
        "cpus": cpus,
        "load": load_record(parse_loadavg(host.read_text("/proc/loadavg")), cpus),
        "memory": memory_record(meminfo),
        "swap": swap_record(meminfo, vm_before, vm_after, measured),
        "vmstat_since_boot": vmstat_record(vm_after) if vm_after else None,
        "pressure": dict((resource, pressure_record(psi_before[resource], psi_after[resource], measured))
                         for resource in RESOURCES),
        "gpu_utilization": utilization_record(samples),
        "gpu_utilization_source": "nvidia-smi" if sampler.samples else ("facts" if samples else None),
    }
    unreadable = [resource for resource in RESOURCES if psi_after[resource] is None]
    if unreadable:
        add_error(facts, None, "host pressure", "%s/{%s} not readable (a kernel without PSI, or psi=0 on its "
                  "command line)" % (PSI_FOLDER, ",".join(unreadable)))
    if not meminfo:
        add_error(facts, None, "host pressure", "/proc/meminfo not readable")
    facts["host_pressure"] = record
    return record
