# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Workload-layer rules: processes per GPU, memory close to full, GPU services without a restart policy."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from collections import Counter

from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.findings import gpu_label, rule
from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.hardware import events_in_window, kernel_event_groups

NO_RESTART = (None, "no")


def compute_processes(gpu):
    """Processes that use the GPU for compute (graphics-only clients such as Xorg left out)."""
    return [process for process in gpu.get("processes") or () if process.get("type") != "graphics"]


def processes_per_device(gpu):
    """{device: [processes]}: the whole GPU, or each MIG instance (gpu instance, compute instance)."""
    devices = {}
    for process in compute_processes(gpu):
        key = None
        if process.get("gpu_instance_id") is not None:
            key = (process.get("gpu_instance_id"), process.get("compute_instance_id"))
        devices.setdefault(key, []).append(process)
    return devices


def worker_limit(policy):
    """(limit, where): workload.max_processes_per_gpu, else the sum of the services' workers_per_gpu."""
    workload = policy.get("workload") or {}
    if workload.get("max_processes_per_gpu") is not None:
        return workload["max_processes_per_gpu"], "workload.max_processes_per_gpu"
    per_service = [service.get("workers_per_gpu") for service in workload.get("services") or ()
                   if service.get("workers_per_gpu")]
    if per_service:
        return sum(per_service), "workers_per_gpu of workload.services"
    return None, None


def _device_label(gpu, device):
    if device is None:
        return gpu_label(gpu)
    return "%s MIG GI %s CI %s" % (gpu_label(gpu), device[0], device[1])


@rule("workload.gpu_oversubscribed", "workload", "warning",
      "More compute processes on a GPU (or MIG device) than the worker limit", fix="worker_limits", scope="gpu")
def gpu_oversubscribed(ctx, gpu):
    limit, where = ctx.cached("worker_limit", lambda c: worker_limit(c.policy))
    if limit is None:
        return ()
    findings = []
    for device, processes in processes_per_device(gpu).items():
        if len(processes) <= limit:
            continue
        findings.append(ctx.finding(
            gpu,
            "%s runs %d processes, limit %d (%s)" % (_device_label(gpu, device), len(processes), limit, where),
            {"processes": len(processes), "limit": limit, "limit_from": where,
             "mig_device": list(device) if device else None,
             "names": sorted({p.get("name") or "?" for p in processes})[:10],
             "used_memory_mib": sum(p.get("used_memory_mib") or 0 for p in processes)},
            "Lower the workers per GPU (the worker_limits role sets them from the policy) or spread them over more GPUs."))
    return findings


@rule("workload.memory_near_full", "workload", "warning",
      "GPU memory in use at or above thresholds.memory_used_pct (critical with several processes: OOM under "
      "concurrency; info with one process, whose allocator may hold the memory)", fix="worker_limits", scope="gpu")
def memory_near_full(ctx, gpu):
    memory = gpu.get("memory") or {}
    used, total = memory.get("used_mib"), memory.get("total_mib")
    threshold = ctx.thresholds.get("memory_used_pct")
    if used is None or not total or threshold is None:
        return ()
    percent = 100.0 * used / total
    if percent < threshold:
        return ()
    processes = compute_processes(gpu)
    count = len(processes)
    evidence = {"used_mib": used, "total_mib": total, "used_pct": round(percent, 1), "threshold_pct": threshold,
                "processes": count,
                "largest": sorted(((p.get("used_memory_mib") or 0, p.get("name") or "?") for p in processes),
                                  reverse=True)[:5]}
    summary = "%s memory %d of %d MiB used (%.1f%%) by %d processes" % (gpu_label(gpu), used, total, percent, count)
    if count >= 2:
        return [ctx.finding(
            gpu, summary + ": the next allocation of any of them can fail (OOM)",
            evidence, "Run fewer workers on this GPU (the worker_limits role) or cap each one's memory "
                      "(e.g. PYTORCH_CUDA_ALLOC_CONF, per-process memory fraction); give each worker its own GPU or MIG slice.",
                      severity="critical")]
    if count == 1:
        return [ctx.finding(
            gpu, summary + " (one process: its allocator may simply hold it)",
            evidence, "Nothing to do unless that job fails with out-of-memory errors.", severity="info", fix=None)]
    return [ctx.finding(
        gpu, summary + ": memory held without a visible process",
        evidence, "Find what holds the memory (processes in other containers, leaked contexts: nvidia-smi, fuser "
                  "/dev/nvidia*); restart it, or reset the GPU when it is idle.", fix=None)]


# ---------------------------------------------------------------- the kernel log and the host's pressure

def _comm(name):
    """A process name as the kernel logs it: the file name, at most 15 characters."""
    return (name or "").rsplit("/", 1)[-1][:15]


def _gpu_process_names(ctx):
    """Names of the processes known to use a GPU: on the GPUs now, in the services' facts, in the window's Xids."""
    names = set(_comm(process.get("name")) for gpu in ctx.gpus for process in compute_processes(gpu))
    names.update(_comm(process.get("name")) for service in (ctx.facts.get("workload") or {}).get("services") or ()
                 for process in service.get("processes") or ())
    names.update(_comm(event.get("process_name")) for event in events_in_window(ctx, ctx.facts.get("xid_events") or ()))
    names.discard("")
    return names


def _oom_owner(event):
    """Where a killed process ran: its pod, container, unit or cgroup, as far as the report says."""
    if event.get("pod_uid"):
        return "pod %s" % event["pod_uid"]
    if event.get("container_id"):
        return "container %s" % event["container_id"][:12]
    return event.get("unit") or event.get("cgroup") or "no cgroup named"


def _oom_action(global_kills, victims, gpu_victims):
    if global_kills:
        action = ("The host ran out of memory: run fewer processes or workers per host, give each container or unit a "
                  "memory limit so one job cannot take the host, and look for a process whose memory grows.")
    else:
        action = ("A container or unit reached its memory limit: raise the limit (the pod's resources.limits.memory, "
                  "the unit's MemoryMax) to what the job needs, or make the job hold less host memory.")
    if len(victims) > 1:
        action += (" Several processes were killed: they share the memory; fewer workers or model copies per limit, "
                   "or a limit per worker.")
    else:
        action += (" One process was killed: its own size grew (dataset or batch held in memory, pinned buffers, "
                   "dataloader workers).")
    if gpu_victims:
        action += " %s used a GPU: its job failed with it; restart it once memory is sized." % ", ".join(gpu_victims)
    return action


@rule("workload.kernel_oom_kill", "workload", "warning",
      "The kernel OOM killer killed processes on the host: at a container's or unit's memory limit, or host-wide")
def kernel_oom_kill(ctx):
    record = (ctx.facts.get("kernel_log") or {}).get("oom_kills") or {}
    count = record.get("count") or 0
    if not count:
        return ()
    events = record.get("events") or []
    global_kills = record.get("global") or 0
    victims = Counter(_comm(event.get("process")) or "?" for event in events)
    gpu_victims = sorted(name for name in victims if name in _gpu_process_names(ctx))
    killed = ["%s (pid %s, %s)" % (event.get("process") or "?", event.get("pid"), _oom_owner(event))
              for event in events]
    return [ctx.finding(
        None, "The kernel OOM killer killed %d processes (%d host-wide, %d at a cgroup limit): %s" % (
            count, global_kills, count - global_kills, ", ".join(killed[:3])),
        {"count": count, "global": global_kills, "victims": dict(victims), "gpu_processes": gpu_victims,
         "killed": killed[:10], "pods": sorted(set(e["pod_uid"] for e in events if e.get("pod_uid")))[:10],
         "units": sorted(set(e["unit"] for e in events if e.get("unit")))[:10],
         "last_time": events[-1].get("time") if events else None},
        _oom_action(global_kills, victims, gpu_victims))]


@rule("workload.gpu_library_crash", "workload", "warning",
      "A process crashed (segfault) inside an NVIDIA or CUDA library (NCCL, cuDNN, cuBLAS, the driver's libraries)")
def gpu_library_crash(ctx):
    groups = kernel_event_groups(ctx, ("segfault",))
    events = [event for group in groups.values() for event in group.events]
    if not events:
        return ()
    crashes = Counter((event.get("process"), event.get("library")) for event in events)
    listed = ["%s in %s (%d)" % (process, library, times) for (process, library), times in sorted(crashes.items())]
    return [ctx.finding(
        None, "%d crashes of processes inside GPU libraries: %s" % (
            sum(group.count for group in groups.values()), ", ".join(listed[:3])),
        {"count": sum(group.count for group in groups.values()), "crashes": listed[:10],
         "last_time": events[-1].get("time")},
        "The job crashed, not the node: check that the library's version matches what the framework was built with "
        "(NCCL, cuDNN) and the driver, and rerun with the library's debug output (NCCL_DEBUG=INFO) to see where.")]


MEMORY_PRESSURE_PCT = 10
# since boot: this many pages swapped out, or this many failed compactions, mean the host lacked memory
SWAP_OUT_PAGES = 1000
COMPACT_FAILURES = 100


def pressure_stall_pct(record, kind="some"):
    """A PSI record's share of time stalled: the sample's own, else the kernel's 10 s average."""
    if not record:
        return None
    measured = record.get("%s_pct" % kind)
    return measured if measured is not None else record.get("%s_avg10" % kind)


def _gpus_with_work_idle(ctx, record, limits):
    """The GPUs that run compute processes are mostly idle: workload.input_bound then reports CPU and I/O
    pressure as what starves them."""
    busy = set(gpu.get("index") for gpu in ctx.gpus if compute_processes(gpu))
    samples = [sample["mean_pct"] for sample in record.get("gpu_utilization") or () if sample.get("index") in busy]
    return bool(samples) and sum(samples) / float(len(samples)) < limits.get("gpu_idle_pct", 30)


@rule("workload.host_pressure", "workload", "warning",
      "Tasks stall on CPU, memory or I/O (the kernel's PSI) at or above host_pressure's limits: the host, not the "
      "GPUs, limits the work (CPU and I/O left to workload.input_bound while the GPUs with work are idle)")
def host_pressure(ctx):
    record = ctx.facts.get("host_pressure") or {}
    limits = ctx.policy.get("host_pressure") or {}
    pressure = record.get("pressure") or {}
    resources = [("memory", MEMORY_PRESSURE_PCT)]
    if not _gpus_with_work_idle(ctx, record, limits):
        resources += [("cpu", limits.get("cpu_pressure_pct", 25)), ("io", limits.get("io_pressure_pct", 25))]
    high = []
    for resource, limit in resources:
        stalled = pressure_stall_pct(pressure.get(resource))
        if stalled is not None and stalled >= limit:
            average = (pressure.get(resource) or {}).get("some_avg300")
            high.append({"resource": resource, "some_pct": stalled, "limit": limit, "some_avg300": average,
                         "full_pct": pressure_stall_pct(pressure.get(resource), "full"),
                         "sustained": average is not None and average >= limit / 2.0})
    if not high:
        return ()
    return [ctx.finding(
        None, "Host pressure: %s" % ", ".join(
            "%s %s%% of the time stalled (%s)" % (item["resource"], item["some_pct"],
                                                  "sustained" if item["sustained"] else "a burst")
            for item in high),
        {"high": high, "load_per_core": (record.get("load") or {}).get("per_core_avg1"),
         "sample_seconds": record.get("sample_seconds")},
        "Find what competes on the host (top, iotop, the cgroups' own *.pressure): too many data loader workers or "
        "jobs per host, a slow or shared disk; give the GPU jobs reserved cores and faster local storage. A burst "
        "(the 5-minute average is low) may pass on its own.")]


@rule("workload.host_memory_pressure", "workload", "warning",
      "The host ran short of memory since boot: pages swapped out, compaction failing (huge pages not allocated), "
      "swapping during the sample")
def host_memory_pressure(ctx):
    record = ctx.facts.get("host_pressure") or {}
    counters = record.get("vmstat_since_boot") or {}
    swapping_now = (record.get("swap") or {}).get("pages_out_per_s")
    signs = []
    if (counters.get("pswpout") or 0) >= SWAP_OUT_PAGES:
        signs.append("%d pages swapped out" % counters["pswpout"])
    if (counters.get("compact_fail") or 0) >= COMPACT_FAILURES:
        signs.append("%d of %s compactions failed" % (counters["compact_fail"], counters.get("compact_stall")))
    if swapping_now:
        signs.append("swapping out %s pages/s now" % swapping_now)
    if not signs:
        return ()
    return [ctx.finding(
        None, "The host ran short of memory: %s" % ", ".join(signs),
        {"since_boot": counters, "swap_out_per_s": swapping_now,
         "memory_available_pct": (record.get("memory") or {}).get("available_pct")},
        "Give the jobs less host memory each or the host fewer jobs (data loader workers, pinned buffers, datasets "
        "held in memory); counters are since boot: compare two audits to see whether it still happens.",
        severity=None)]


def _host_service(services, unit):
    """The host.services entry of a policy service, matched by the unit it describes.

    Keys of host.services are roles (persistenced, fabricmanager, mps, dcgm) or unit names as asked, and
    each entry's name is the unit systemctl answered for. A key alone is not enough: a policy service
    "mps.service" is not the entry under the role key "mps", which describes nvidia-mps or
    nvidia-cuda-mps-control, and must not lend that unit's restart policy to it. An entry without a
    name (older facts) is taken by its key."""
    stem = unit[:-len(".service")] if unit.endswith(".service") else unit
    for key in (unit, stem):
        service = services.get(key)
        if isinstance(service, dict) and service.get("name") in (None, unit, stem):
            return service
    for service in services.values():
        if isinstance(service, dict) and service.get("name") in (unit, stem):
            return service
    return None


@rule("workload.restart_policy", "workload", "warning",
      "GPU service of workload.services without a systemd restart policy while workload.restart_policy_required",
      fix="restart_policy")
def restart_policy(ctx):
    workload = ctx.policy.get("workload") or {}
    if not workload.get("restart_policy_required"):
        return ()
    services = (ctx.facts.get("host") or {}).get("services") or {}
    findings = []
    for wanted in workload.get("services") or ():
        unit = wanted.get("name")
        service = _host_service(services, unit) if unit else None
        if service is None or service.get("state") in ("not_found", "unknown"):
            continue
        if service.get("restart") not in NO_RESTART:
            continue
        findings.append(ctx.finding(
            None,
            "GPU service %s has no restart policy (Restart=%s, %s)"
            % (unit, service.get("restart") or "unset", service.get("state")),
            {"service": unit, "restart": service.get("restart"), "state": service.get("state"),
             "wanted_restart": wanted.get("restart")},
            "Give %s a restart policy (Restart=%s) with the restart_policy role, so a crashed worker comes back."
            % (unit, wanted.get("restart") or "on-failure")))
    return findings


# ---------------------------------------------------------------- what an out-of-memory points at

# reserved but unallocated memory at or above this share of the GPU (or of what is reserved) is fragmentation
FRAGMENTATION_SHARE = 0.2


def _mib(value):
    return "%.0f MiB" % value


def oom_reading(processes, detail=None):
    """(points_at, action) of an out-of-memory, from the processes that shared its GPU and what the message
    says (detail: journal_failure_detail). points_at names what the evidence supports: "model_size" and
    "batch_or_input_size" for one process, "worker_count" and "model_copies" for several, "allocator_reserve"
    when the allocator held far more than its tensors used, "kv_cache_config" for vLLM's KV cache."""
    detail = detail or {}
    several = processes >= 2 or (detail.get("other_processes") or 0) >= 1
    points_at, actions = [], []
    if detail.get("kv_cache_needed_mib") or detail.get("kv_cache_tokens") is not None:
        points_at.append("kv_cache_config")
        actions.append("vLLM's KV cache cannot hold one request at the model's max length: lower max_model_len, or "
                       "raise gpu_memory_utilization when nothing else shares the GPU, or serve on more (tensor "
                       "parallel) or larger GPUs.")
    if several:
        points_at += ["worker_count", "model_copies"]
        actions.append("%s processes held memory on the GPU: run fewer workers per GPU (worker_limits), load one "
                       "model copy per GPU, or cap each one's memory (per-process memory fraction, "
                       "PYTORCH_CUDA_ALLOC_CONF); give each worker its own GPU or MIG slice."
                       % (max(processes, 1 + (detail.get("other_processes") or 0))))
    else:
        points_at += ["model_size", "batch_or_input_size"]
        actions.append("One process used the GPU: the job does not fit it. Reduce the model's size (quantise it, "
                       "shard it over more GPUs), the batch size or the input size (sequence length, image size).")
    requested, total = detail.get("requested_mib"), detail.get("total_mib")
    if requested and total and requested >= total:
        actions.append("It asked for %s at once, more than the GPU's %s: no setting of the allocator helps; the "
                       "model or the input must shrink or be split." % (_mib(requested), _mib(total)))
    allocated, reserved = detail.get("allocated_mib"), detail.get("reserved_mib")
    if allocated is not None and reserved is not None and \
            reserved - allocated >= FRAGMENTATION_SHARE * (total or reserved) and reserved - allocated > 0:
        points_at.append("allocator_reserve")
        actions.append("The allocator reserved %s while its tensors used %s: fragmentation; set "
                       "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (or max_split_size_mb) before shrinking the "
                       "job." % (_mib(reserved), _mib(allocated)))
    return points_at, " ".join(actions)
