# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Workload-layer rules on the GPU services' own facts (gather_subsets workload and host_pressure): an OOM
while several processes shared the GPU, a crash loop, a framework built for a CUDA the driver does not run
(or different across the hosts of one group), processes on GPUs the policy did not give the service, an
allocator setting the policy asks for and the process lacks, and GPUs idle while the host is starved."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from collections import Counter

from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.findings import declare_rule, rule
from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.workload import compute_processes, oom_reading

FAILURE_KINDS = ("cuda_oom", "illegal_memory_access", "nccl_timeout", "nccl_error", "python_traceback", "cuda_ecc",
                 "cuda_driver_insufficient", "cuda_forward_compat", "cuda_devices_busy", "cuda_no_kernel_image",
                 "cudnn_mismatch", "device_side_assert", "nccl_network", "nccl_resource", "nccl_cuda")
ALLOC_VARIABLES = ("PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF")


def workload_services(facts):
    return ((facts.get("workload") or {}).get("services")) or []


def policy_services(policy):
    """{unit: policy service} of workload.services."""
    return dict((service.get("name"), service) for service in (policy.get("workload") or {}).get("services") or ())


def _matches(service, kind):
    return (((service.get("journal") or {}).get("matches") or {}).get(kind)) or {}


def _line_text(line):
    return "%s %s" % (line.get("time") or "", line.get("message") or "") if line else None


def _gpu_processes(gpu, units):
    """The compute processes of a GPU, each with the unit that owns it when the workload facts know it."""
    return [{"pid": process.get("pid"), "name": process.get("name"), "unit": units.get(process.get("pid")),
             "used_memory_mib": process.get("used_memory_mib")} for process in compute_processes(gpu)]


def _units_by_pid(facts):
    return dict((process.get("pid"), service.get("unit")) for service in workload_services(facts)
                for process in service.get("processes") or ())


def _service_gpus(service, policy_service, gpus):
    """GPU indexes the service uses: those of its processes, else the policy's list, else the GPUs its CUDA
    out-of-memory messages name (process-relative, so only when nothing better is known)."""
    indexes = sorted({process.get("gpu_index") for process in service.get("processes") or ()
                      if process.get("gpu_index") is not None})
    if indexes:
        return indexes
    wanted = (policy_service or {}).get("gpus")
    if isinstance(wanted, list):
        return wanted
    known = {gpu.get("index") for gpu in gpus}
    return [index for index in (service.get("journal") or {}).get("cuda_oom_gpus") or () if index in known]


def journal_detail(service, kind):
    """What the service's messages of a kind say in numbers (journal details), {} when nothing."""
    return (((service.get("journal") or {}).get("details")) or {}).get(kind) or {}


def kernel_oom_kills(service):
    """OOM-killer kills of the service: those the kernel log names, else systemd's own notes of them."""
    kills = (service.get("oom_kills") or {}).get("count") or 0
    return kills or _matches(service, "oom_killed").get("count") or 0


def _oom_gpus(ctx, service):
    """[(gpu, processes)] of the GPUs the service uses, with their compute processes."""
    gpus = dict((gpu.get("index"), gpu) for gpu in ctx.gpus)
    units = ctx.cached("units_by_pid", lambda c: _units_by_pid(c.facts))
    wanted = policy_services(ctx.policy).get(service.get("unit"))
    return [(gpus[index], _gpu_processes(gpus[index], units))
            for index in _service_gpus(service, wanted, ctx.gpus) if index in gpus]


def _oom_evidence(service, cuda_oom, kernel_oom, processes):
    detail = journal_detail(service, "cuda_oom")
    points_at, _action = oom_reading(processes, detail)
    return {"service": service["unit"], "cuda_oom": cuda_oom, "kernel_oom_kills": kernel_oom,
            "first": _line_text(_matches(service, "cuda_oom").get("first")),
            "last": _line_text(_matches(service, "cuda_oom").get("last")),
            "message_says": detail, "points_at": points_at}


@rule("workload.oom_shared_gpu", "workload", "critical",
      "An out-of-memory (CUDA, or the kernel OOM killer) in the window of a service whose GPU several processes "
      "share")
def oom_shared_gpu(ctx):
    findings = []
    for service in workload_services(ctx.facts):
        cuda_oom = _matches(service, "cuda_oom").get("count") or 0
        kernel_oom = kernel_oom_kills(service)
        if not cuda_oom and not kernel_oom:
            continue
        for gpu, processes in _oom_gpus(ctx, service):
            if len(processes) < 2:
                continue
            held = ", ".join("%s %s MiB" % (process["pid"], process["used_memory_mib"]) for process in processes[:8])
            evidence = _oom_evidence(service, cuda_oom, kernel_oom, len(processes))
            evidence.update({"processes": len(processes), "held": processes[:16],
                             "used_mib": sum(process["used_memory_mib"] or 0 for process in processes),
                             "total_mib": (gpu.get("memory") or {}).get("total_mib")})
            findings.append(ctx.finding(
                gpu,
                "%s ran out of memory in the window (%d CUDA out-of-memory messages, %d kernel OOM kills) while "
                "%d processes share GPU %s (%s)" % (
                    service["unit"], cuda_oom, kernel_oom, len(processes), gpu.get("index"), held),
                evidence,
                oom_reading(len(processes), journal_detail(service, "cuda_oom"))[1]
                + " The processes listed held the memory when the facts were collected."))
    return findings


HOST_MEMORY_ACTION = ("The OOM killer killed the service for host memory, not GPU memory: raise the unit's MemoryMax "
                      "(or the container's memory limit) to what the job needs, or make it hold less (fewer "
                      "dataloader workers, no dataset held in memory).")


@rule("workload.out_of_memory", "workload", "warning",
      "A service ran out of GPU memory in the window (a framework's out-of-memory error) while no other process "
      "shared its GPU (several: workload.oom_shared_gpu), or systemd says the OOM killer hit it while the kernel "
      "log names no kill of it (kills the kernel log names: workload.kernel_oom_kill)")
def out_of_memory(ctx):
    findings = []
    for service in workload_services(ctx.facts):
        cuda_oom = _matches(service, "cuda_oom").get("count") or 0
        kernel_oom = kernel_oom_kills(service)
        systemd_only = not cuda_oom and not (service.get("oom_kills") or {}).get("count") and kernel_oom
        if not cuda_oom and not systemd_only:
            continue
        gpus = _oom_gpus(ctx, service)
        if cuda_oom and any(len(processes) >= 2 for _gpu, processes in gpus):
            continue  # workload.oom_shared_gpu
        processes = max([len(found) for _gpu, found in gpus] or [0])
        evidence = _oom_evidence(service, cuda_oom, kernel_oom, processes)
        evidence.update({"gpus": [gpu.get("index") for gpu, _found in gpus], "processes": processes})
        if systemd_only:
            evidence["points_at"] = ["host_memory"]
            findings.append(ctx.finding(
                None, "%s was killed by the OOM killer %d times in the window (systemd's account; the kernel log "
                      "names no kill of it)" % (service["unit"], kernel_oom), evidence, HOST_MEMORY_ACTION))
            continue
        framework = evidence["message_says"].get("framework")
        findings.append(ctx.finding(
            gpus[0][0] if len(gpus) == 1 else None,
            "%s ran out of GPU memory in the window (%d %sout-of-memory errors)%s" % (
                service["unit"], cuda_oom, framework + " " if framework else "",
                " with %d process on its GPU" % processes if gpus else ""),
            evidence, oom_reading(processes, evidence["message_says"])[1]))
    return findings


# kind -> (severity, what it is, what to do); the kinds other rules judge are not here: cuda_oom (the two
# rules above), cuda_ecc (hardware.cuda_ecc_reported), nccl_network (hardware.nccl_network), cudnn_mismatch,
# cuda_driver_insufficient and cuda_forward_compat (driver.cuda_stack_mismatch), oom_killed (with the kills)
RUNTIME_FAILURES = {
    "cuda_devices_busy": ("warning", "CUDA found the GPU busy or unavailable (cudaErrorDevicesUnavailable)",
                          "Check the GPU's compute mode (Exclusive Process lets one process in) and stray processes "
                          "holding it (nvidia-smi, fuser /dev/nvidia*); if it persists with no process on it, the GPU "
                          "needs a reset (see the hardware layer)."),
    "cuda_no_kernel_image": ("warning", "the framework build has no kernel for this GPU's architecture",
                             "Install a build of the framework compiled for this GPU's architecture (the message "
                             "names both); the node is healthy."),
    "device_side_assert": ("info", "a CUDA kernel assertion failed (device-side assert)",
                           "A bug or bad data in the job (an index or a label out of range), not the node: run it "
                           "with CUDA_LAUNCH_BLOCKING=1 to find the operation."),
    "illegal_memory_access": ("warning", "CUDA illegal memory accesses",
                              "Usually the job's own kernels or a library bug; if several jobs fail this way on this "
                              "GPU only, look at its Xid 13/31/43 and memory errors."),
    "nccl_resource": ("warning", "NCCL failed on a local resource",
                      "Give NCCL what it needs on this host: GPU memory (fewer processes or a smaller model per "
                      "GPU), /dev/shm (a container's default 64 MB is too small: --shm-size or a memory-backed "
                      "volume), locked memory for InfiniBand (ulimit -l unlimited / LimitMEMLOCK=infinity)."),
    "nccl_cuda": ("warning", "NCCL failed on a CUDA error",
                  "Read the CUDA error NCCL carries: an initialization error or invalid device points at the "
                  "driver or CUDA_VISIBLE_DEVICES, an out of memory at the job's size."),
    "nccl_timeout": ("warning", "NCCL collectives timed out (watchdog)",
                     "A rank stalled or a link failed: look for the rank that did not arrive (its host's GPU, "
                     "network and load) before raising the timeout."),
    "nccl_error": ("warning", "NCCL errors without a named cause",
                   "Run with NCCL_DEBUG=INFO to find the cause (a peer that crashed, the network, a resource); "
                   "look at the other ranks' hosts."),
    "python_traceback": ("info", "Python tracebacks", "Read the service's journal around the lines shown."),
}


@rule("workload.runtime_failure", "workload", "warning",
      "A GPU service's journal shows CUDA or NCCL failures that are the job's or its configuration's (devices "
      "busy, no kernel image for the GPU, device-side assert, illegal address, NCCL resource, CUDA, timeout or "
      "other errors, Python tracebacks), each with its own severity")
def runtime_failure(ctx):
    findings = []
    for service in workload_services(ctx.facts):
        for kind, (severity, what, action) in sorted(RUNTIME_FAILURES.items()):
            match = _matches(service, kind)
            if not match.get("count") or _judged_elsewhere(service, kind):
                continue
            detail = journal_detail(service, kind)
            findings.append(ctx.finding(
                None, "%s: %s (%d in the window)%s" % (service["unit"], what, match["count"], _detail_text(detail)),
                {"service": service["unit"], "kind": kind, "count": match["count"],
                 "first": _line_text(match.get("first")), "last": _line_text(match.get("last")),
                 "message_says": detail}, action, severity=severity))
    return findings


def _judged_elsewhere(service, kind):
    """An NCCL failure on an uncorrectable ECC error is judged with the ECC error (hardware.cuda_ecc_reported)."""
    return kind == "nccl_cuda" and "ECC" in (journal_detail(service, "nccl_cuda").get("cuda_error") or "")


def _detail_text(detail):
    if detail.get("gpu_arch"):
        return ": %s is %s, the build has %s" % (detail.get("gpu_name"), detail["gpu_arch"],
                                                 " ".join(detail.get("build_archs") or ()) or "other architectures")
    if detail.get("cuda_error"):
        return ": %s" % detail["cuda_error"]
    if detail.get("resource"):
        return ": %s" % detail["resource"]
    return ""


def _is_down(service):
    return service.get("active_state") != "active"


@rule("workload.crash_loop", "workload", "warning",
      "A GPU service that systemd restarted workload.crash_loop_restarts times or more, or that hit its start "
      "limit (critical while it is down)")
def crash_loop(ctx):
    limit = (ctx.policy.get("workload") or {}).get("crash_loop_restarts") or 3
    findings = []
    for service in workload_services(ctx.facts):
        restarts = service.get("restarts") or 0
        gave_up = service.get("result") == "start-limit-hit"
        if restarts < limit and not gave_up:
            continue
        failures = dict((kind, _matches(service, kind).get("count") or 0) for kind in FAILURE_KINDS)
        last = [_line_text(_matches(service, kind).get("last")) for kind in FAILURE_KINDS
                if _matches(service, kind).get("last")]
        exit_text = _exit_text(service.get("last_exit") or {})
        findings.append(ctx.finding(
            None,
            "%s is in a crash loop: %d restarts%s, last exit %s, now %s/%s" % (
                service["unit"], restarts, " and systemd gave up (start limit hit)" if gave_up else "", exit_text,
                service.get("active_state"), service.get("sub_state")),
            {"service": service["unit"], "restarts": restarts, "limit": limit, "result": service.get("result"),
             "last_exit": service.get("last_exit"), "active_state": service.get("active_state"),
             "sub_state": service.get("sub_state"), "journal_failures": failures, "last_lines": last[:5],
             "kernel_oom_kills": (service.get("oom_kills") or {}).get("count")},
            "Read the service's journal around the last lines shown (journalctl -u %s); fix what kills it before "
            "raising its restart limits." % service["unit"],
            severity="critical" if _is_down(service) else None))
    return findings


def _exit_text(last_exit):
    if last_exit.get("signal"):
        return "by signal %s" % last_exit["signal"]
    if last_exit.get("code") == "exited":
        return "with status %s" % last_exit.get("status")
    return "unknown"


def frameworks_of(service):
    frameworks = service.get("frameworks") or {}
    return frameworks.get("packages") or [] if frameworks.get("status") == "read" else []


@rule("workload.framework_cuda_unsupported", "workload", "critical",
      "A framework a GPU service runs was built for a CUDA runtime the driver does not support (warning: only "
      "with CUDA minor-version compatibility, reduced features)", fix="driver")
def framework_cuda_unsupported(ctx):
    driver = (ctx.facts.get("driver") or {}).get("version")
    if not driver:
        return ()
    findings = []
    for service in workload_services(ctx.facts):
        for package in frameworks_of(service):
            if not package.get("cuda"):
                continue
            status, reason = ctx.knowledge.cuda_support(driver, package["cuda"])
            if status not in ("unsupported", "minor_compat"):
                continue
            findings.append(ctx.finding(
                None,
                "%s runs %s %s built for CUDA %s: %s" % (service["unit"], package["name"], package.get("version"),
                                                         package["cuda"], reason),
                {"service": service["unit"], "framework": package["name"], "version": package.get("version"),
                 "cuda": package["cuda"], "driver": driver, "support": status,
                 "min_driver": ctx.knowledge.cuda_min_driver(package["cuda"]),
                 "interpreter": (service.get("frameworks") or {}).get("interpreter")},
                "Upgrade the driver (driver_rollout.yml) to one that supports CUDA %s, or install a %s build for "
                "the CUDA the driver supports (%s)." % (package["cuda"], package["name"],
                                                        (ctx.facts.get("driver") or {}).get("cuda_driver_version")),
                severity=None if status == "unsupported" else "warning"))
    return findings


@rule("workload.wrong_gpus", "workload", "warning",
      "Processes of a policy service run on GPUs its policy gpus list does not give it", fix="worker_limits")
def wrong_gpus(ctx):
    findings = []
    wanted = policy_services(ctx.policy)
    for service in workload_services(ctx.facts):
        allowed = (wanted.get(service.get("unit")) or {}).get("gpus")
        if not isinstance(allowed, list):
            continue
        stray = [process for process in service.get("processes") or ()
                 if process.get("gpu_index") is not None and process["gpu_index"] not in allowed]
        if not stray:
            continue
        found = sorted({process["gpu_index"] for process in stray})
        findings.append(ctx.finding(
            None,
            "%s runs %d processes on GPU %s; its policy gives it GPU %s" % (
                service["unit"], len(stray), ", ".join(map(str, found)), ", ".join(map(str, allowed))),
            {"service": service["unit"], "policy_gpus": allowed, "found_gpus": found,
             "processes": [{"pid": process["pid"], "gpu": process["gpu_index"],
                            "CUDA_VISIBLE_DEVICES": (process.get("environment") or {}).get("CUDA_VISIBLE_DEVICES")}
                           for process in stray[:16]]},
            "Pin the service to its GPUs (worker_limits sets CUDA_VISIBLE_DEVICES from the policy) and restart it."))
    return findings


def alloc_options(text):
    """{option: value} of a PyTorch allocator setting: 'expandable_segments:True,max_split_size_mb:512'."""
    options = {}
    for part in (text or "").split(","):
        key, _sep, value = part.partition(":")
        if key.strip():
            options[key.strip().lower()] = value.strip().lower()
    return options


@rule("workload.alloc_conf_missing", "workload", "warning",
      "A GPU process of a service lacks the PYTORCH_CUDA_ALLOC_CONF options its policy alloc_conf asks for",
      fix="worker_limits")
def alloc_conf_missing(ctx):
    findings = []
    wanted = policy_services(ctx.policy)
    for service in workload_services(ctx.facts):
        asked = (wanted.get(service.get("unit")) or {}).get("alloc_conf")
        if not asked:
            continue
        lacking = []
        for process in service.get("processes") or ():
            environment = process.get("environment")
            if environment is None:
                continue  # unread (not root): unknown, not missing
            have = alloc_options(",".join(environment.get(name, "") for name in ALLOC_VARIABLES))
            missing = sorted(key for key, value in alloc_options(asked).items() if have.get(key) != value)
            if missing:
                lacking.append({"pid": process["pid"], "missing": missing,
                                "has": dict((name, environment[name]) for name in ALLOC_VARIABLES if name in environment)})
        if lacking:
            findings.append(ctx.finding(
                None,
                "%d GPU processes of %s lack PYTORCH_CUDA_ALLOC_CONF=%s (%s)" % (
                    len(lacking), service["unit"], asked, ", ".join(lacking[0]["missing"])),
                {"service": service["unit"], "alloc_conf": asked, "processes": lacking[:16]},
                "Set the allocator options with worker_limits (a drop-in with PYTORCH_CUDA_ALLOC_CONF) and restart "
                "the service: a process reads them only when it starts."))
    return findings


def _pressure_pct(record):
    """The sample's some_pct, or the kernel's 10 s average when the sample measured nothing."""
    if not record:
        return None
    return record.get("some_pct") if record.get("some_pct") is not None else record.get("some_avg10")


@rule("workload.input_bound", "workload", "warning",
      "GPUs that run compute processes are mostly idle while CPU or I/O pressure is high: data loading or "
      "preprocessing starves them")
def input_bound(ctx):
    record = ctx.facts.get("host_pressure") or {}
    limits = ctx.policy.get("host_pressure") or {}
    busy = set(gpu.get("index") for gpu in ctx.gpus if compute_processes(gpu))
    utilization = [sample for sample in record.get("gpu_utilization") or () if sample.get("index") in busy]
    if not utilization:
        return ()
    mean = sum(sample["mean_pct"] for sample in utilization) / float(len(utilization))
    pressure = record.get("pressure") or {}
    cpu, io = _pressure_pct(pressure.get("cpu")), _pressure_pct(pressure.get("io"))
    starved = [name for name, value, limit in (("CPU", cpu, limits.get("cpu_pressure_pct", 25)),
                                               ("I/O", io, limits.get("io_pressure_pct", 25)))
               if value is not None and value >= limit]
    if mean >= limits.get("gpu_idle_pct", 30) or not starved:
        return ()
    return [ctx.finding(
        None,
        "GPUs with work are %.0f%% busy on average while %s pressure is high (CPU %s%%, I/O %s%%): the GPUs wait "
        "for input" % (mean, " and ".join(starved), cpu, io),
        {"gpu_mean_pct": round(mean, 1), "gpus": utilization, "cpu_pressure_pct": cpu, "io_pressure_pct": io,
         "limits": limits, "load_per_core": (record.get("load") or {}).get("per_core_avg1"),
         "memory_available_pct": (record.get("memory") or {}).get("available_pct"), "swap": record.get("swap"),
         "sample_seconds": record.get("sample_seconds")},
        "Look at data loading and preprocessing, not at the GPUs: more loader workers or CPU cores per GPU, faster "
        "storage or a local cache, preprocessing moved to the GPU; swap activity means the host lacks memory.")]


# ---------------------------------------------------------------- fleet rule

FRAMEWORK_SKEW = declare_rule("workload.framework_skew", "workload", "warning",
                              "A service runs another framework build (version or CUDA) than on most hosts of its group",
                              scope="fleet")


def _builds(facts):
    """{(unit, framework): "version (CUDA x)"} of one host's workload facts."""
    found = {}
    for service in workload_services(facts or {}):
        for package in frameworks_of(service):
            found[(service["unit"], package["name"])] = "%s (CUDA %s)" % (
                package.get("version"), package.get("cuda") or "none")
    return found


def framework_skew(group_name, hosts):
    """{host: [findings]} of the hosts of one group whose build of a service's framework differs from the
    group's most common one. hosts: {host: facts}."""
    by_key = {}
    for host, facts in hosts.items():
        for key, build in _builds(facts).items():
            by_key.setdefault(key, {})[host] = build
    findings = {}
    for (unit, framework), builds in sorted(by_key.items()):
        if len(set(builds.values())) < 2:
            continue
        counts = Counter(builds.values())
        reference = sorted(counts.items(), key=lambda item: (-item[1], item[0]))[0][0]
        for host, build in sorted(builds.items()):
            if build == reference:
                continue
            findings.setdefault(host, []).append(FRAMEWORK_SKEW.finding(
                host, None,
                "%s runs %s %s; most hosts of %s run %s" % (unit, framework, build, group_name, reference),
                {"service": unit, "framework": framework, "build": build, "group_reference": reference,
                 "group": group_name, "group_builds": dict(counts)},
                "Install one build of %s for %s across the group (the same version and CUDA), so a job behaves the "
                "same on every host." % (framework, unit)))
    return findings
