# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Driver-layer rules: kernel module vs library, CUDA needs, GPU support, pin, skew, fabric manager, persistence,
and the CUDA stack mismatches a GPU service's journal shows (cuDNN, driver too old, forward compatibility)."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from collections import Counter

from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.findings import (
    declare_rule, gpu_label, parse_time, rule)
from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.hardware import (
    events_in_window, gpus_by_bus, kernel_event_groups)
from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.knowledge import compare_versions, driver_branch
from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.workload_health import (
    frameworks_of, journal_detail, workload_services)

FABRIC_MANAGER_SERVICE = "fabricmanager"


def driver_version(ctx):
    return (ctx.facts.get("driver") or {}).get("version")


def _host_subset_collected(ctx):
    """Host facts (services, toolkits) are only meaningful when the host subset ran."""
    return "host" in (ctx.facts.get("gather_subset") or ()) or bool(ctx.facts.get("host"))


@rule("driver.nvidia_absent", "driver", "critical",
      "No NVIDIA stack answered on a host the policy expects GPUs on (gpus.expected_count)")
def nvidia_absent(ctx):
    expected = (ctx.policy.get("gpus") or {}).get("expected_count")
    if ctx.facts.get("nvidia_present") or not expected or (ctx.facts.get("driver") or {}).get("mismatch"):
        return ()
    if (ctx.facts.get("collection") or {}).get("status") == "failed":
        return ()  # NVIDIA hardware or software is there: driver.collection_incomplete says what failed
    reasons = [_error_text(error) for error in ctx.facts.get("errors") or ()][:5]
    return [ctx.finding(
        None,
        "No NVIDIA driver or GPU answered; the policy expects %d GPUs" % expected,
        {"nvidia_present": False, "expected_count": expected, "errors": reasons},
        "Check that the driver is installed and loaded (lsmod | grep nvidia, nvidia-smi) and that the GPUs are on "
        "the bus (lspci -d 10de:); install the pinned driver or reboot, and if lspci shows no GPU, hand the host "
        "over for repair.")]


@rule("driver.kernel_userspace_mismatch", "driver", "critical",
      "Kernel module and userspace library versions differ", fix="driver")
def kernel_userspace_mismatch(ctx):
    driver = ctx.facts.get("driver") or {}
    # the collector settles driver.mismatch from NVML, nvidia-smi, the versions and the kernel log (an
    # 'API mismatch' line stays in the log after a reboot fixed it); the events are only evidence here
    if not driver.get("mismatch"):
        return ()
    events = [event for event in ctx.facts.get("kernel_events") or () if event.get("kind") == "api_mismatch"]
    kernel = driver.get("kernel_module_version") or next(
        (event.get("kernel_module_version") for event in events if event.get("kernel_module_version")), None)
    library = driver.get("userspace_version") or next(
        (event.get("client_version") for event in events if event.get("client_version")), None)
    return [ctx.finding(
        None,
        "Kernel module %s and userspace library %s differ" % (kernel or "?", library or "?"),
        {"kernel_module_version": kernel, "userspace_version": library,
         "mismatch_reason": driver.get("mismatch_reason"), "api_mismatch_events": len(events)},
        "Drain the host and reboot it so the kernel module matches the installed libraries; if it persists, "
        "reinstall one driver version (packages and module) everywhere.")]


# ---------------------------------------------------------------- the kernel log: the driver and the kernel

@rule("driver.gpu_init_failed", "driver", "critical",
      "The NVIDIA driver could not initialise a GPU (NVRM: RmInitAdapter failed)")
def gpu_init_failed(ctx):
    findings = []
    for (_kind, bus), events in sorted(kernel_event_groups(ctx, ("init_failed",)).items(),
                                       key=lambda item: item[0][1] or ""):
        gpu = gpus_by_bus(ctx).get(bus)
        codes = sorted(set(event.get("code") for event in events.events if event.get("code")))
        findings.append(ctx.finding(
            bus, "The NVIDIA driver failed to initialise %s %d times (RmInitAdapter failed! %s)" % (
                gpu_label(gpu) if gpu else "GPU %s" % (bus or "(the log names no PCI address)"), events.count,
                ", ".join(codes) or "no code"),
            {"pci_bus_id": bus, "count": events.count, "codes": codes, "first_time": events.events[0].get("time"),
             "last_time": events.events[-1].get("time")},
            "Drain the host. Check that lspci -d 10de: lists the GPU and that its driver supports it, then reboot; "
            "if it still fails, reseat the GPU and check its power cables, and hand it over for repair when it fails "
            "again."))
    return findings


# a task blocked this soon after an Xid waits on the GPU the Xid hit (the kernel reports it after 120 s or more)
HUNG_AFTER_XID_SECONDS = 900


GSP_RPC_TIMEOUT_XID = 119


@rule("driver.gsp_rpc_errors", "driver", "critical",
      "The driver rate-limits a GPU's GSP RPC errors ('The GPU likely needs to be reset') and no Xid 119 of that GPU "
      "is in the window to say it")
def gsp_rpc_errors(ctx):
    reported = set(xid.get("pci_bus_id") for xid in events_in_window(ctx, ctx.facts.get("xid_events") or ())
                   if xid.get("xid") == GSP_RPC_TIMEOUT_XID)
    findings = []
    for (_kind, bus), events in sorted(kernel_event_groups(ctx, ("gsp_rpc_rate_limited",)).items(),
                                       key=lambda item: item[0][1] or ""):
        if bus in reported:
            continue  # the Xid 119 finding of this GPU says it, with the count of its timeouts
        gpu = gpus_by_bus(ctx).get(bus)
        findings.append(ctx.finding(
            bus, "The driver rate-limits the GSP RPC errors of %s (the GPU likely needs to be reset)" % (
                gpu_label(gpu) if gpu else "GPU %s" % (bus or "(not named)")),
            {"pci_bus_id": bus, "count": events.count, "last_time": events.events[-1].get("time"),
             "message": events.events[-1].get("message")},
            "Drain the host and reset the GPU (nvidia-smi -r, or reboot); if GSP errors return, update the driver "
            "(its GSP firmware) and hand the GPU over for repair if they persist."))
    return findings


def _xids_before(ctx, events):
    """The window's Xids logged at most HUNG_AFTER_XID_SECONDS before one of the hung tasks (both timed)."""
    moments = [parse_time(event.get("time")) for event in events]
    moments = [moment for moment in moments if moment is not None]
    found = []
    for xid in events_in_window(ctx, ctx.facts.get("xid_events") or ()):
        logged = parse_time(xid.get("time"))
        if logged is not None and any(0 <= (moment - logged).total_seconds() <= HUNG_AFTER_XID_SECONDS
                                      for moment in moments):
            found.append(xid)
    return found


@rule("driver.kernel_hung_task", "driver", "warning",
      "Tasks blocked for minutes in the kernel (hung_task): critical when the NVIDIA modules are in their stack or "
      "an Xid came shortly before")
def kernel_hung_task(ctx):
    groups = kernel_event_groups(ctx, ("hung_task",))
    events = [event for group in groups.values() for event in group.events]
    if not events:
        return ()
    count = sum(group.count for group in groups.values())
    in_nvidia = [event for event in events if event.get("nvidia_stack")]
    xids = _xids_before(ctx, events)
    tasks = ["%s (pid %s, %ss)" % (event.get("process"), event.get("pid"), event.get("seconds")) for event in events]
    evidence = {"count": count, "tasks": tasks[:8], "in_nvidia_stack": len(in_nvidia),
                "xids_before": sorted(set("Xid %s on %s" % (xid.get("xid"), xid.get("pci_bus_id")) for xid in xids)),
                "last_time": events[-1].get("time")}
    if in_nvidia or xids:
        return [ctx.finding(None, "%d hung tasks in the kernel log%s: %s" % (
            count, " with the NVIDIA modules in their stack" if in_nvidia else " shortly after an Xid",
            ", ".join(tasks[:3])), evidence,
            "Drain the host and reboot it: a task stuck in the NVIDIA driver holds the GPU (nvidia-smi and new jobs "
            "hang); read the Xids before it for the cause.", severity="critical")]
    return [ctx.finding(None, "%d hung tasks in the kernel log: %s" % (count, ", ".join(tasks[:3])), evidence,
                        "Find what the tasks wait on (their stack: a filesystem, the container runtime, storage) and "
                        "fix it; if they stay blocked the node cannot start new work: drain it.")]


SOFT_LOCKUP_REPEATS = 3


@rule("driver.kernel_soft_lockup", "driver", "warning",
      "Soft lockups in the kernel log (a CPU stuck in the kernel for seconds); critical when one CPU locks up "
      "again and again")
def kernel_soft_lockup(ctx):
    groups = kernel_event_groups(ctx, ("soft_lockup",))
    events = [event for group in groups.values() for event in group.events]
    if not events:
        return ()
    by_cpu = Counter(event.get("cpu") for event in events)
    repeated = sorted(cpu for cpu, times in by_cpu.items() if times >= SOFT_LOCKUP_REPEATS)
    processes = sorted(set("%s (CPU %s, %ss)" % (event.get("process"), event.get("cpu"), event.get("seconds"))
                           for event in events))
    return [ctx.finding(
        None, "%d soft lockups in the kernel log: %s" % (sum(group.count for group in groups.values()),
                                                         ", ".join(processes[:3])),
        {"count": sum(group.count for group in groups.values()), "cpus": sorted(by_cpu), "repeated_cpus": repeated,
         "processes": processes[:8], "last_time": events[-1].get("time")},
        "Drain the host and reboot it: a CPU keeps locking up in the kernel. Then look for a driver or firmware "
        "update for what the stack shows." if repeated else
        "Read the stack after the lockup line for the kernel code that spun; one lockup under heavy load can pass, "
        "a recurring one needs a kernel, driver or firmware fix.",
        severity="critical" if repeated else None)]


@rule("driver.kernel_panic", "driver", "critical", "A kernel panic in the kernel log or in pstore (the host rebooted)")
def kernel_panic(ctx):
    groups = kernel_event_groups(ctx, ("kernel_panic",))
    events = [event for group in groups.values() for event in group.events]
    if not events:
        return ()
    reasons = sorted(set(event.get("reason") or "" for event in events))
    return [ctx.finding(
        None, "Kernel panic: %s" % "; ".join(reasons[:3]),
        {"count": sum(group.count for group in groups.values()), "reasons": reasons[:5],
         "last_time": events[-1].get("time")},
        "Keep the host drained until the panic's cause is known: read the stack of the panic (pstore or the "
        "previous boot's journal); a hardware machine check needs a repair, a driver's oops an update.")]


# ---------------------------------------------------------------- one workload's libraries

CLIENT_MISMATCH = "driver.client_library_mismatch"
_MAX_LISTED_PROCESSES = 10


def running_driver_version(ctx):
    """The kernel module's version now: the facts' own reading, the driver clients' reading, else the
    version NVML or nvidia-smi answered with (they only answer when the module matches them)."""
    driver = ctx.facts.get("driver") or {}
    clients = ctx.facts.get("driver_clients") or {}
    if driver.get("kernel_module_version") or clients.get("kernel_module_version"):
        return driver.get("kernel_module_version") or clients.get("kernel_module_version")
    return driver.get("version") if not driver.get("mismatch") else None


def _host_library_version(ctx):
    """The host's own userspace version while the host-wide mismatch rule reports it, else None."""
    driver = ctx.facts.get("driver") or {}
    return driver.get("userspace_version") if driver.get("mismatch") else None


def _is_forward_compat(client, running):
    """A libcuda from a CUDA compat folder newer than the module is forward compatibility, which
    datacenter GPUs support; an older one is a stale compat package."""
    return client.get("compat") and compare_versions(client.get("library_version"), running) > 0


def _mismatched_processes(ctx, running):
    """{(container, name, version): [clients]} of the processes that mapped libraries of another version."""
    covered = _host_library_version(ctx)
    groups = {}
    for client in (ctx.facts.get("driver_clients") or {}).get("mismatched") or ():
        version = client.get("library_version")
        if version in (None, running, covered) or _is_forward_compat(client, running):
            continue
        key = (client.get("container_id") or client.get("container"), client.get("name"), version)
        groups.setdefault(key, []).append(client)
    return groups


def current_client_mismatch_events(ctx, running):
    """{client version: [events]}: 'API mismatch' lines of the window whose kernel module is the one
    running now and whose client is of another version. One whose module differs is history (the module
    was replaced since); one the host-wide mismatch already covers is left to that rule."""
    covered = _host_library_version(ctx)
    if (ctx.facts.get("driver") or {}).get("mismatch") and covered is None:
        return {}  # the host-wide rule reports the log's versions itself when no library version is known
    by_version = {}
    for event in ctx.facts.get("kernel_events") or ():
        if event.get("kind") != "api_mismatch" or event.get("kernel_module_version") != running:
            continue
        client = event.get("client_version")
        if client in (None, running, covered):
            continue
        by_version.setdefault(client, []).append(event)
    return by_version


def _client_fix(client, running):
    path = client.get("library")
    if client.get("compat"):
        return ("Remove the stale CUDA compat package that provides %s (apt-get remove / dnf remove cuda-compat-*, "
                "or drop its folder from LD_LIBRARY_PATH and /etc/ld.so.conf.d) so the process loads the driver's "
                "own %s libraries, then restart it." % (path, running))
    if client.get("container"):
        return ("The container carries its own NVIDIA driver libraries (%s): remove them from the image (no "
                "cuda-drivers, libnvidia-* or nvidia-utils packages in it, no copied libcuda.so) and run it with the "
                "NVIDIA container toolkit (docker --gpus, runtimeClassName nvidia or CDI), which injects the host's "
                "%s libraries; then restart the workload." % (path, running))
    return ("Libraries of another driver are on this process's library path (%s: a second driver install, a copy "
            "in the application's folder or LD_LIBRARY_PATH): remove them so it loads the driver's own %s "
            "libraries, then restart it." % (path, running))


def _process_finding(ctx, key, clients, events, running):
    container, name, version = key
    first = clients[0]
    pids = [client.get("pid") for client in clients]
    where = ("container %s" % (first.get("container_id") or first.get("container"))[:80]) if container else "the host"
    evidence = {
        "kernel_module_version": running, "client_version": version, "process_name": name,
        "pids": pids[:_MAX_LISTED_PROCESSES], "process_count": len(pids), "container": first.get("container"), "container_id": first.get("container_id"),
        "library": first.get("library"), "compat": bool(first.get("compat")),
        "kernel_log_events": len(events), "last_logged": events[-1].get("time") if events else None,
    }
    return ctx.finding(
        None,
        "%d process(es) %s (pid %s) in %s loaded driver libraries %s (%s) while the kernel module is %s: their CUDA "
        "and NVML calls fail, though the host's own nvidia-smi answers"
        % (len(pids), name or "?", ", ".join(str(pid) for pid in pids[:3]) + (" ..." if len(pids) > 3 else ""),
           where, version, first.get("library"), running),
        evidence, _client_fix(first, running))


def _log_only_finding(ctx, version, events, running):
    names = sorted({"%s (pid %s)" % (event["client_process"], event.get("client_pid"))
                    for event in events if event.get("client_process")})
    evidence = {"kernel_module_version": running, "client_version": version, "kernel_log_events": len(events),
                "first_logged": events[0].get("time"), "last_logged": events[-1].get("time"),
                "clients": names[:_MAX_LISTED_PROCESSES]}
    last = events[-1].get("time") or "at an unknown time"
    clients = ", " + ", ".join(names[:3]) if names else ""
    return ctx.finding(
        None,
        "The kernel module %s refused a client with driver libraries %s %d time(s) in the window (last %s%s); no "
        "running process maps them now" % (running, version, len(events), last, clients),
        evidence,
        "Find the workload that starts with driver libraries %s: usually a container image that bundles its own "
        "(remove them and run it with the NVIDIA container toolkit, which injects the host's %s libraries) or a "
        "stale cuda-compat package on its library path (remove it); journalctl -k | grep 'API mismatch' shows "
        "when it happens." % (version, running), severity="warning")


@rule(CLIENT_MISMATCH, "driver", "critical",
      "A workload loaded NVIDIA driver libraries of another version than the kernel module (its own driver libraries "
      "in a container, a stale CUDA compat package); critical while such a process runs, warning when only the "
      "kernel log shows it")
def client_library_mismatch(ctx):
    # critical: a running process whose every CUDA/NVML call fails, on a host whose own checks all pass, so
    # nothing else reports it, and it stays broken until the image or package is fixed. warning: only the
    # log shows a refused client in the window; it may have been a one-off start that is gone.
    running = running_driver_version(ctx)
    if not running:
        return ()
    events = current_client_mismatch_events(ctx, running)
    findings = []
    for key, clients in sorted(_mismatched_processes(ctx, running).items(), key=lambda item: str(item[0])):
        findings.append(_process_finding(ctx, key, clients, events.pop(key[2], []), running))
    for version, version_events in sorted(events.items()):
        findings.append(_log_only_finding(ctx, version, version_events, running))
    return findings


def _required_toolkits(ctx):
    """(version, where) for installed toolkits and policy cuda.toolkits_required, de-duplicated."""
    seen, result = set(), []
    for toolkit in (ctx.facts.get("host") or {}).get("cuda_toolkits") or ():
        if toolkit.get("version") and toolkit["version"] not in seen:
            seen.add(toolkit["version"])
            result.append((toolkit["version"], "installed at %s" % toolkit.get("path")))
    for version in (ctx.policy.get("cuda") or {}).get("toolkits_required") or ():
        version = str(version)
        if version not in seen:
            seen.add(version)
            result.append((version, "policy cuda.toolkits_required"))
    return result


def _major(version):
    try:
        return int(str(version).split(".", 1)[0])
    except ValueError:
        return None


@rule("driver.cuda_toolkit_unsupported", "driver", "critical",
      "Driver older than an installed or required CUDA toolkit needs (warning under minor-version compatibility)",
      fix="driver")
def cuda_toolkit_unsupported(ctx):
    version = driver_version(ctx)
    if not version or ctx.knowledge is None:
        return ()
    findings = []
    for toolkit, where in _required_toolkits(ctx):
        needed = ctx.knowledge.cuda_min_driver(toolkit)
        if needed is None or compare_versions(version, needed) >= 0:
            continue
        floor = ctx.knowledge.cuda_minor_compat_floor(_major(toolkit)) if _major(toolkit) is not None else None
        compatible = floor is not None and compare_versions(version, floor) >= 0
        evidence = {"driver_version": version, "toolkit": toolkit, "toolkit_source": where,
                    "min_driver": needed, "minor_compat_floor": floor, "minor_version_compatible": compatible}
        if compatible:
            findings.append(ctx.finding(
                None,
                "Driver %s is below %s needed by CUDA %s (%s); it runs only under minor-version compatibility "
                "(driver >= %s): limited features, no PTX JIT of newer code" % (version, needed, toolkit, where, floor),
                evidence, "Upgrade the driver to %s or newer, or accept the limited features of minor-version "
                          "compatibility." % needed, severity="warning"))
        else:
            findings.append(ctx.finding(
                None,
                "Driver %s is below %s needed by CUDA %s (%s)" % (version, needed, toolkit, where),
                evidence, "Upgrade the driver to %s or newer (or use a toolkit this driver supports)." % needed))
    return findings


@rule("driver.gpu_unsupported", "driver", "critical", "Driver branch does not support the GPU model", fix="driver")
def gpu_unsupported(ctx):
    version = driver_version(ctx)
    if not version or ctx.knowledge is None:
        return ()
    findings, seen = [], set()
    for gpu in ctx.gpus:
        key = (gpu.get("name"), gpu.get("architecture"))
        if key in seen or not gpu.get("name"):
            continue
        seen.add(key)
        supported, reason = ctx.knowledge.driver_supports_gpu(version, gpu.get("name"), gpu.get("architecture"))
        if supported is False:
            same = [other.get("pci_bus_id") for other in ctx.gpus if (other.get("name"), other.get("architecture")) == key]
            findings.append(ctx.finding(
                same[0] if len(same) == 1 else None,
                "Driver %s does not support %s: %s" % (version, gpu.get("name"), reason),
                {"driver_version": version, "gpu_name": gpu.get("name"), "architecture": gpu.get("architecture"),
                 "reason": reason, "bus_ids": same},
                "Install a driver branch that supports %s (see the reason), then reboot." % gpu.get("name")))
    return findings


@rule("driver.pin_drift", "driver", "warning", "Driver differs from the policy's driver.pin or driver.branch",
      fix="driver")
def pin_drift(ctx):
    version = driver_version(ctx)
    wanted = ctx.policy.get("driver") or {}
    pin, branch = wanted.get("pin"), wanted.get("branch")
    if not version or (pin is None and branch is None):
        return ()
    if pin is not None and compare_versions(version, str(pin)) != 0:
        return [ctx.finding(
            None, "Driver %s differs from the pinned %s" % (version, pin),
            {"driver_version": version, "pin": pin, "branch": branch},
            "Roll out driver %s with the driver role (driver_rollout.yml), in batches." % pin)]
    if branch is not None and driver_branch(version) != str(branch):
        return [ctx.finding(
            None,
            "Driver %s is not on the policy's branch %s" % (version, branch),
            {"driver_version": version, "pin": pin, "branch": branch, "driver_branch": driver_branch(version)},
            "Roll out a driver of branch %s with the driver role (driver_rollout.yml), in batches." % branch)]
    return ()


def fabric_manager_required(ctx):
    """policy fabric_manager.required: true/false, or auto = 8 or more GPUs of an SXM-class model (an
    NVSwitch system; a lost GPU without a name still counts)."""
    required = (ctx.policy.get("fabric_manager") or {}).get("required", "auto")
    if required != "auto":
        return bool(required)
    return (len(ctx.gpus) >= ctx.knowledge.nvswitch_gpu_count
            and any(ctx.knowledge.is_baseboard_model(gpu.get("name")) for gpu in ctx.gpus))


@rule("driver.fabric_manager_down", "driver", "critical",
      "Fabric manager not running on an NVSwitch system (fabric_manager.required)")
def fabric_manager_down(ctx):
    if not ctx.gpus or not _host_subset_collected(ctx) or not fabric_manager_required(ctx):
        return ()
    service = ((ctx.facts.get("host") or {}).get("services") or {}).get(FABRIC_MANAGER_SERVICE)
    state = (service or {}).get("state", "not_found")
    if state in ("running", "unknown"):
        return ()  # unknown: its state was not read (no systemctl, as in an nvidia-bug-report.log), not down
    return [ctx.finding(
        None,
        "Fabric manager is %s on a host with %d %s GPUs (NVSwitch)" % (state, len(ctx.gpus), ctx.gpus[0].get("name")),
        {"service": (service or {}).get("name"), "state": state, "gpu_count": len(ctx.gpus),
         "driver_version": driver_version(ctx)},
        "Install nvidia-fabricmanager of exactly the driver's version and start it "
        "(systemctl enable --now nvidia-fabricmanager); CUDA jobs fail until it runs.")]


@rule("driver.fabric_registration", "driver", "critical",
      "GPU not registered with the NVLink fabric (fabric state not completed) where fabric manager is required",
      scope="gpu")
def fabric_registration(ctx, gpu):
    fabric = gpu.get("fabric")
    if not fabric or fabric.get("state") in (None, "completed", "not_supported") or not fabric_manager_required(ctx):
        return ()
    return [ctx.finding(
        gpu,
        "%s fabric registration is %s (status %s)" % (gpu_label(gpu), fabric.get("state"), fabric.get("status")),
        {"state": fabric.get("state"), "status": fabric.get("status"), "clique_id": fabric.get("clique_id")},
        "Check that nvidia-fabricmanager runs and matches the driver version, read its log "
        "(/var/log/fabricmanager.log), then restart it; reboot if the state stays incomplete.")]


@rule("driver.persistence_mode", "driver", "warning", "Persistence mode off while the policy wants it on",
      fix="gpu_settings")
def persistence_mode(ctx):
    if not ctx.policy.get("persistence_mode", True):
        return ()
    off = [gpu for gpu in ctx.gpus if gpu.get("persistence_mode") is False]
    if not off:
        return ()
    bus_ids = [gpu.get("pci_bus_id") for gpu in off]
    return [ctx.finding(
        bus_ids[0] if len(off) == 1 else None,
        "Persistence mode is off on %d of %d GPUs (%s)" % (len(off), len(ctx.gpus), ", ".join(map(str, bus_ids))),
        {"gpus_off": bus_ids, "gpu_count": len(ctx.gpus)},
        "Enable nvidia-persistenced (the gpu_settings role does it) so the driver stays loaded between jobs.")]


# An older driver without a function answers like a GPU without the feature.
_UNSUPPORTED_REASONS = ("not supported", "function not found")


def _means_unsupported(error):
    reason = str(error.get("reason")).lower()
    return any(text in reason for text in _UNSUPPORTED_REASONS)


def _error_text(error):
    return {"gpu": error.get("gpu"), "call": error.get("call"), "reason": str(error.get("reason"))[:200]}


@rule("driver.collection_errors", "driver", "info", "Queries that failed while collecting the facts")
def collection_errors(ctx):
    errors = [error for error in ctx.facts.get("errors") or () if not _means_unsupported(error)]
    if not errors:
        return ()
    calls = sorted({str(error.get("call")) for error in errors})
    return [ctx.finding(
        None,
        "%d queries failed while collecting facts (%s)" % (len(errors), ", ".join(calls[:5]) + (" ..." if len(calls) > 5 else "")),
        {"count": len(errors), "errors": [_error_text(error) for error in errors[:10]]},
        "Values behind these queries are unknown; if the driver or a GPU misbehaves, the errors name it.")]


# ---------------------------------------------------------------- fleet rule

VERSION_SKEW = declare_rule("driver.version_skew", "driver", "warning",
                            "Driver versions differ between hosts that share a policy with driver.allow_skew false",
                            fix="driver", scope="fleet")


def _reference_version(versions):
    """The most common version; a tie goes to the newest."""
    counts = Counter(versions.values())
    best = None
    for version, count in counts.items():
        if best is None or count > counts[best] or (count == counts[best] and compare_versions(version, best) > 0):
            best = version
    return best


def version_skew(group_name, versions):
    """Findings for the hosts of one group whose driver differs from the group's usual one.

    versions: {host: driver version} of the group's reachable hosts.
    """
    if len(set(versions.values())) < 2:
        return {}
    reference = _reference_version(versions)
    counts = dict(Counter(versions.values()))
    findings = {}
    for host, version in versions.items():
        if version == reference:
            continue
        findings[host] = [VERSION_SKEW.finding(
            host, None,
            "Driver %s differs from %s, the driver of most hosts in %s" % (version, reference, group_name),
            {"driver_version": version, "group_reference": reference, "group": group_name, "group_versions": counts},
            "Bring the group to one driver version with the driver role (driver_rollout.yml), or set "
            "driver.allow_skew while a rollout is under way.")]
    return findings


@rule("driver.clock_offset", "driver", "warning",
      "The host's clock is further from the controller's than thresholds.clock_offset_s")
def clock_offset(ctx):
    offset = ctx.facts.get("clock_offset_s")
    limit = ctx.thresholds.get("clock_offset_s")
    if not isinstance(offset, int) or isinstance(offset, bool) or limit is None or abs(offset) <= limit:
        return ()
    return [ctx.finding(
        None,
        "The host's clock is %s %s the controller's (more than %s s)"
        % (_duration(abs(offset)), "ahead of" if offset > 0 else "behind", limit),
        {"clock_offset_s": offset, "threshold_s": limit, "collected_at": ctx.facts.get("collected_at")},
        "Synchronise the host's clock (chronyc tracking, timedatectl status; enable chronyd or systemd-timesyncd). "
        "Its kernel-log and job times are off by as much; the audit counts the Xid window in the host's own clock.")]


def _duration(seconds):
    """3725 -> '1 h 2 min', 90 -> '90 s'."""
    if seconds < 120:
        return "%d s" % seconds
    if seconds < 7200:
        return "%d min" % (seconds // 60)
    if seconds < 172800:
        return "%d h %d min" % (seconds // 3600, seconds % 3600 // 60)
    return "%d days" % (seconds // 86400)


# ---------------------------------------------------------------- what the GPU services' journals say

def _service_runtime_cuda(service):
    """The CUDA runtime the service's frameworks were built for ("12.4"), or None."""
    versions = sorted({package.get("cuda") for package in frameworks_of(service) if package.get("cuda")})
    return versions[-1] if versions else None


def _cudnn_mismatch(ctx, service, detail):
    runtime, compiled = detail.get("runtime_version"), detail.get("compiled_version")
    unknown = "(version not in the message)"
    return ("%s loads cuDNN %s but its framework was built against cuDNN %s" % (
            service["unit"], runtime or unknown, compiled or unknown),
            "Give the service the cuDNN its framework was built with (%s, same major version, equal or newer minor): "
            "install it in the image or environment, or take the older cuDNN out of LD_LIBRARY_PATH so the "
            "framework loads the one it bundles. The node is healthy." % (compiled or "the build's"))


def _driver_insufficient(ctx, service, detail):
    driver = (ctx.facts.get("driver") or {})
    version = driver.get("version") or detail.get("driver_version")
    driver_cuda = driver.get("cuda_driver_version") or detail.get("driver_cuda_version")
    runtime = _service_runtime_cuda(service)
    needed = ctx.knowledge.cuda_min_driver(runtime) if runtime and ctx.knowledge is not None else None
    return ("%s: the driver (%s, CUDA %s) is older than the CUDA runtime the service was built for (%s)" % (
            service["unit"], version or "version unknown", driver_cuda or "unknown",
            "CUDA %s" % runtime if runtime else "its version is not in the message nor in the frameworks probe"),
            "Upgrade the driver to %s, or run a build of the service for CUDA %s or older (its image or "
            "environment)." % ("%s or newer" % needed if needed else "one that supports the service's CUDA runtime",
                               driver_cuda or "the driver's"))


def _forward_compat(ctx, service, detail):
    version = (ctx.facts.get("driver") or {}).get("version") or detail.get("driver_version")
    names = sorted({gpu.get("name") for gpu in ctx.gpus if gpu.get("name")})
    return ("%s uses CUDA forward compatibility (the cuda-compat libraries) on %s, which does not support it, with "
            "driver %s" % (service["unit"], ", ".join(names) or "a GPU", version or "version unknown"),
            "Forward compatibility works on data-centre GPUs only: take the cuda-compat libraries out of the "
            "service's LD_LIBRARY_PATH (or its image) so the driver's own libcuda is used, and upgrade the host "
            "driver if the service needs a newer CUDA than driver %s supports." % (version or "this"))


CUDA_STACK_KINDS = (("cudnn_mismatch", _cudnn_mismatch), ("cuda_driver_insufficient", _driver_insufficient),
                    ("cuda_forward_compat", _forward_compat))


@rule("driver.cuda_stack_mismatch", "driver", "warning",
      "A GPU service's journal shows its CUDA stack does not match the host: cuDNN older than its build, a driver "
      "too old for its CUDA runtime (error 35), CUDA forward compatibility on a GPU without it (error 804)")
def cuda_stack_mismatch(ctx):
    findings = []
    for service in workload_services(ctx.facts):
        matches = (service.get("journal") or {}).get("matches") or {}
        for kind, describe in CUDA_STACK_KINDS:
            match = matches.get(kind) or {}
            if not match.get("count"):
                continue
            detail = journal_detail(service, kind)
            summary, action = describe(ctx, service, detail)
            last = match.get("last") or {}
            findings.append(ctx.finding(
                None, summary,
                {"service": service["unit"], "kind": kind, "count": match["count"], "message_says": detail,
                 "driver_version": (ctx.facts.get("driver") or {}).get("version"),
                 "runtime_cuda": _service_runtime_cuda(service),
                 "last": "%s %s" % (last.get("time") or "", last.get("message") or "")}, action))
    return findings
