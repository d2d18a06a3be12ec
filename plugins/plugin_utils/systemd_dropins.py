# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""systemd files the roles worker_limits and restart_policy write, rendered from the effective policy.

Everything here is plain data in, text out: the roles call it through the filter
gpufleet.core.systemd_dropins and only copy the text to the host. Given the same policy entry and host
facts the output is byte for byte the same, so a second run changes nothing.

worker_limits_plan() and restart_policy_plan() compare what the policy wants with what the host has
(its units as `systemctl show` reports them, the gpufleet files found under the unit folder) and return
what to write, what to remove and what to report.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os
import re

from ansible_collections.gpufleet.core.plugins.module_utils.host_facts import parse_systemctl_show

UNIT_DIR = "/etc/systemd/system"
WORKERS_DROPIN = "50-gpufleet-workers.conf"
RESTART_DROPIN = "50-gpufleet-restart.conf"
RECYCLE_PREFIX = "gpufleet-recycle-"
# Set by worker_limits for services that take their worker count as a command-line option (workers_arg):
# the unit's ExecStart= passes it on, for example `--workers ${GPUFLEET_WORKERS}`.
WORKERS_ARG_VARIABLE = "GPUFLEET_WORKERS"
MANAGED_ENVIRONMENT = ("CUDA_VISIBLE_DEVICES", "PYTORCH_CUDA_ALLOC_CONF", "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE",
                       "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT", WORKERS_ARG_VARIABLE)
SYSTEMCTL = "/bin/systemctl"  # /bin is /usr/bin on merged-/usr systems; older Debian has only /bin/systemctl

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


# ---------------------------------------------------------------------------------------------------------
# Small pieces

def header(role, unit, keys):
    """Comment lines that open every file gpufleet writes: who manages it and where the values come from."""
    return [
        "# Managed by gpufleet (role %s): do not edit, the next run overwrites it." % role,
        "# Source: the effective gpufleet policy, workload.services %s (%s)." % (unit, ", ".join(keys)),
        "# Change the policy (docs/policy.md) and run remediate.yml instead.",
    ]


def is_service_unit(unit):
    return unit.endswith(".service")


def dropin_dir(unit, unit_dir=UNIT_DIR):
    return "%s/%s.d" % (unit_dir, unit)


def unit_of_file(path):
    """The unit a gpufleet file belongs to: vllm.service for .../vllm.service.d/50-gpufleet-workers.conf;
    a recycle timer or service (gpufleet-recycle-vllm.timer) is a unit of its own."""
    if os.path.basename(path).startswith(RECYCLE_PREFIX):
        return os.path.basename(path)
    folder = os.path.basename(os.path.dirname(path))
    return folder[:-2] if folder.endswith(".d") else folder


def quote_environment(name, value):
    """One Environment= assignment, quoted as systemd reads it (C escapes inside quotes, %% for %)."""
    text = str(value)
    if _CONTROL.search(text):
        raise ValueError("environment variable %s: the value %r holds a control character (newline, tab ...), "
                         "which a systemd unit cannot carry" % (name, text))
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("%", "%%")
    return 'Environment="%s=%s"' % (name, escaped)


def quote_argument(text):
    """One ExecStart= argument: systemd unescapes backslashes and expands % specifiers."""
    return text.replace("\\", "\\\\").replace("%", "%%")


# ---------------------------------------------------------------------------------------------------------
# worker_limits

def service_gpu_indexes(service, gpu_count):
    """GPU indexes the service may use: its list, or every GPU of the host for 'all' and null."""
    gpus = service.get("gpus", "all")
    if isinstance(gpus, list):
        outside = [index for index in gpus if index >= gpu_count]
        if outside:
            raise ValueError("%s: gpus %s names GPU %s, but this host has %d GPU%s (gpu_facts)"
                             % (service["name"], gpus, ", ".join(map(str, outside)), gpu_count,
                                "" if gpu_count == 1 else "s"))
        return list(gpus)
    return list(range(gpu_count))


def worker_count(service, gpu_count):
    """(count, explanation) for a service with workers_per_gpu, or (None, None) when it has none."""
    per_gpu = service.get("workers_per_gpu")
    if not per_gpu:
        return None, None
    gpus = service_gpu_indexes(service, gpu_count)
    if not gpus:
        raise ValueError("%s: workers_per_gpu is set but gpu_facts found no GPU on this host, so the worker "
                         "count cannot be derived; fix the GPU stack (run the audit) before worker_limits"
                         % service["name"])
    return len(gpus) * per_gpu, "%d GPU%s x %d workers_per_gpu" % (len(gpus), "" if len(gpus) == 1 else "s", per_gpu)


def visible_devices(service, gpu_count, sharing_mode):
    """CUDA_VISIBLE_DEVICES value, or None when the service is not pinned (gpus null; 'all' under MIG,
    where CUDA picks the MIG devices itself and GPU indexes would hide them)."""
    gpus = service.get("gpus", "all")
    if gpus is None or (gpus == "all" and sharing_mode == "mig"):
        return None
    indexes = service_gpu_indexes(service, gpu_count)
    return ",".join(str(index) for index in indexes) if indexes else None


def mps_environment(service, gpu_count):
    """MPS client limits; CUDA_MPS_PINNED_DEVICE_MEM_LIMIT is per CUDA device ordinal as the client
    enumerates them (0..n-1 after CUDA_VISIBLE_DEVICES)."""
    mps = service.get("mps") or {}
    environment = {}
    if mps.get("active_thread_percentage") is not None:
        environment["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"] = str(mps["active_thread_percentage"])
    limit = mps.get("pinned_device_mem_limit_mib")
    if limit is not None:
        devices = len(service_gpu_indexes(service, gpu_count))
        if devices:
            environment["CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"] = ",".join(
                "%d=%dM" % (ordinal, limit) for ordinal in range(devices))
    return environment


def derived_environment(service, gpu_count, sharing_mode):
    """The variables worker_limits derives from dedicated policy keys (not from `environment`)."""
    environment = {}
    count, _why = worker_count(service, gpu_count)
    if count is not None and service.get("workers_env"):
        environment[service["workers_env"]] = str(count)
    elif count is not None and service.get("workers_arg"):
        environment[WORKERS_ARG_VARIABLE] = str(count)
    devices = visible_devices(service, gpu_count, sharing_mode)
    if devices is not None:
        environment["CUDA_VISIBLE_DEVICES"] = devices
    if service.get("alloc_conf"):
        environment["PYTORCH_CUDA_ALLOC_CONF"] = str(service["alloc_conf"])
    if sharing_mode == "mps":
        environment.update(mps_environment(service, gpu_count))
    return environment


def manages_workers(service, sharing_mode):
    """True when the policy sets anything worker_limits writes for this service. gpus alone ('all', the
    default) does not count: a service listed only for its restart policy gets no worker drop-in."""
    mps = service.get("mps") or {}
    return bool(
        (service.get("workers_per_gpu") and (service.get("workers_env") or service.get("workers_arg")))
        or isinstance(service.get("gpus"), list)
        or service.get("alloc_conf")
        or service.get("environment")
        or (sharing_mode == "mps" and any(value is not None for value in mps.values())))


def worker_environment(service, gpu_count, sharing_mode):
    """Every Environment= variable of the worker drop-in, {name: value}."""
    derived = derived_environment(service, gpu_count, sharing_mode)
    extra = {str(name): str(value) for name, value in (service.get("environment") or {}).items()}
    clashes = sorted(set(derived) & set(extra))
    if clashes:
        raise ValueError("%s: environment sets %s, which worker_limits derives from the policy (%s); remove it "
                         "from environment" % (service["name"], ", ".join(clashes), _source_keys(service, clashes)))
    environment = dict(extra)
    environment.update(derived)
    return environment


def _source_keys(service, names):
    sources = {"CUDA_VISIBLE_DEVICES": "gpus", "PYTORCH_CUDA_ALLOC_CONF": "alloc_conf",
               "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE": "mps.active_thread_percentage",
               "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT": "mps.pinned_device_mem_limit_mib",
               WORKERS_ARG_VARIABLE: "workers_arg"}
    if service.get("workers_env"):
        sources[service["workers_env"]] = "workers_env"
    return ", ".join(sources.get(name, name) for name in names)


def workers_dropin(service, gpu_count, sharing_mode=None):
    """Text of 50-gpufleet-workers.conf for one workload.services entry, or None when the policy
    manages nothing worker_limits writes (the file must then be absent)."""
    if not manages_workers(service, sharing_mode):
        return None
    environment = worker_environment(service, gpu_count, sharing_mode)
    lines = header("worker_limits", service["name"], _worker_keys(service, sharing_mode))
    count, why = worker_count(service, gpu_count)
    if count is not None and (service.get("workers_env") or service.get("workers_arg")):
        lines.append("# Workers: %d = %s." % (count, why))
    if service.get("workers_arg") and count is not None:
        lines.append("# The unit's ExecStart= must pass %s ${%s} for the limit to apply."
                     % (service["workers_arg"], WORKERS_ARG_VARIABLE))
    lines += ["[Service]"] + [quote_environment(name, environment[name]) for name in sorted(environment)]
    return "\n".join(lines) + "\n"


def _worker_keys(service, sharing_mode):
    keys = []
    if service.get("workers_per_gpu"):
        keys.append("workers_per_gpu")
    for key in ("workers_env", "workers_arg", "gpus", "alloc_conf", "environment"):
        if service.get(key) not in (None, {}, ""):
            keys.append(key)
    if sharing_mode == "mps" and any(value is not None for value in (service.get("mps") or {}).values()):
        keys.append("mps")
    return keys


def exec_start_passes(exec_start, option):
    """True when a unit's ExecStart (as `systemctl show -p ExecStart` prints it) passes option with
    ${GPUFLEET_WORKERS} or $GPUFLEET_WORKERS, as one argument (--workers=$X) or two (--workers $X)."""
    references = ("${%s}" % WORKERS_ARG_VARIABLE, "$%s" % WORKERS_ARG_VARIABLE)
    words = (exec_start or "").split()
    for position, word in enumerate(words):
        if word in tuple("%s=%s" % (option, reference) for reference in references):
            return True
        if word == option and position + 1 < len(words) and words[position + 1] in references:
            return True
    return False


# ---------------------------------------------------------------------------------------------------------
# restart_policy

# Restart= values under which systemd starts a service again after RuntimeMaxSec= stopped it (the stop
# ends with result 'timeout'); under the others the service would stay down.
RECYCLING_RESTARTS = ("on-failure", "on-abnormal", "always")


def check_runtime_max(service):
    restart = service.get("restart")
    if service.get("runtime_max_sec") is not None and restart is not None and restart not in RECYCLING_RESTARTS:
        message = ("%s: runtime_max_sec with restart %r would stop the service for good when the time is up: "
                   "systemd restarts it only with restart %s")
        raise ValueError(message % (service["name"], restart, ", ".join(RECYCLING_RESTARTS)))


def restart_dropin(service):
    """Text of 50-gpufleet-restart.conf for one workload.services entry, or None when the policy sets
    none of its keys (restart null and neither timeout_stop_sec nor runtime_max_sec)."""
    check_runtime_max(service)
    unit_lines, service_lines, keys = [], [], []
    if service.get("restart") is not None:
        unit_lines += ["StartLimitIntervalSec=%d" % service["start_limit_interval_sec"],
                       "StartLimitBurst=%d" % service["start_limit_burst"]]
        service_lines += ["Restart=%s" % service["restart"], "RestartSec=%d" % service["restart_sec"]]
        keys += ["restart", "restart_sec", "start_limit_interval_sec", "start_limit_burst"]
    if service.get("timeout_stop_sec") is not None:
        service_lines.append("TimeoutStopSec=%d" % service["timeout_stop_sec"])
        keys.append("timeout_stop_sec")
    if service.get("runtime_max_sec") is not None:
        service_lines.append("RuntimeMaxSec=%d" % service["runtime_max_sec"])
        keys.append("runtime_max_sec")
    if not service_lines:
        return None
    lines = header("restart_policy", service["name"], keys)
    if unit_lines:
        lines += ["[Unit]"] + unit_lines + [""]
    lines += ["[Service]"] + service_lines
    return "\n".join(lines) + "\n"


def recycle_name(unit, suffix):
    """gpufleet-recycle-vllm.timer for vllm.service; '@' (template instances) becomes '_' so that the
    timer is not read as an instance of a template."""
    stem = unit[:-len(".service")] if unit.endswith(".service") else unit
    return "%s%s.%s" % (RECYCLE_PREFIX, stem.replace("@", "_"), suffix)


def recycle_timer(service):
    """Text of the timer that recycles the service on its recycle_calendar, or None without one."""
    calendar = service.get("recycle_calendar")
    if not calendar:
        return None
    if _CONTROL.search(calendar):
        raise ValueError("%s: recycle_calendar %r holds a control character" % (service["name"], calendar))
    lines = header("restart_policy", service["name"], ["recycle_calendar"]) + [
        "[Unit]",
        "Description=Recycle %s on schedule (gpufleet restart_policy)" % service["name"],
        "",
        "[Timer]",
        "OnCalendar=%s" % calendar,
        "Unit=%s" % recycle_name(service["name"], "service"),
        "",
        "[Install]",
        "WantedBy=timers.target",
    ]
    return "\n".join(lines) + "\n"


def recycle_service(service):
    """Text of the oneshot service the recycle timer starts: try-restart restarts the unit only when it
    runs, so a recycle never starts a service someone stopped."""
    if not service.get("recycle_calendar"):
        return None
    lines = header("restart_policy", service["name"], ["recycle_calendar"]) + [
        "[Unit]",
        "Description=Recycle %s (gpufleet restart_policy)" % service["name"],
        "",
        "[Service]",
        "Type=oneshot",
        "ExecStart=%s try-restart %s" % (SYSTEMCTL, quote_argument(service["name"])),
    ]
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------------------------
# Plans: what the policy wants against what the host has

def unit_states(systemctl_show, units):
    """{unit: properties} from `systemctl show --property=Id,LoadState,ActiveState,UnitFileState,ExecStart
    -- units...`. Blocks are matched by Id; a unit whose Id is not there (an alias reports its target's Id) takes the
    block at its position, since systemctl prints one block per unit in the order asked."""
    blocks = parse_systemctl_show(systemctl_show)
    by_id = {block.get("Id"): block for block in blocks}
    states = {}
    for position, unit in enumerate(units):
        if unit in by_id:
            states[unit] = by_id[unit]
        elif len(blocks) == len(units):
            states[unit] = blocks[position]
    return states


def units_to_show(services, existing=()):
    """Units to ask `systemctl show` about: the policy's .service units, in policy order, then the units of
    gpufleet drop-ins found on the host that the policy no longer names (a removal restarts them too)."""
    units = [service["name"] for service in services if is_service_unit(service["name"])]
    found = sorted({unit_of_file(path) for path in existing if not os.path.basename(path).startswith(RECYCLE_PREFIX)})
    return units + [unit for unit in found if unit not in units]


def is_installed(properties):
    return bool(properties) and properties.get("LoadState") not in (None, "", "not-found")


def is_running(properties):
    """Active, or on its way (starting, reloading, waiting to restart after a crash)."""
    return bool(properties) and properties.get("ActiveState") in ("active", "reloading", "activating")


def is_failed(properties):
    return bool(properties) and properties.get("ActiveState") == "failed"


def should_restart(properties):
    """A unit a changed setting restarts: one that runs, or one that crashed (failed) although enabled,
    that is, meant to run. A unit someone stopped (inactive) is left stopped."""
    return is_running(properties) or (
        is_failed(properties) and properties.get("UnitFileState") in ("enabled", "enabled-runtime"))


def split_services(services, states):
    """(services to manage, units not installed, units that are not .service units), in policy order."""
    managed, missing, unsupported = [], [], []
    for service in services:
        unit = service["name"]
        if not is_service_unit(unit):
            unsupported.append(unit)
        elif not is_installed(states.get(unit)):
            missing.append(unit)
        else:
            managed.append(service)
    return managed, missing, unsupported


def _removals(existing, wanted_paths):
    return [{"unit": unit_of_file(path), "path": path} for path in sorted(set(existing) - set(wanted_paths))]


def restart_lists(states, units):
    """{restart: units a change restarts, failed: those of them that failed (systemd refuses to start a
    unit that hit its start limit until `systemctl reset-failed`)}."""
    restart = sorted(unit for unit in set(units) if should_restart(states.get(unit)))
    return {"restart": restart, "failed": [unit for unit in restart if is_failed(states.get(unit))]}


def worker_limits_plan(services, gpu_count, sharing_mode=None, states=None, existing=(), unit_dir=UNIT_DIR):
    """What worker_limits does on one host.

    services: workload.services of the effective policy; gpu_count: GPUs gpu_facts found; states: unit_states()
    of the services; existing: paths of 50-gpufleet-workers.conf found on the host. Returns
    {write: [{unit, dir, path, content}], remove: [{unit, path}], restart, failed, missing, unsupported,
    workers_arg_unwired}. A file found but not wanted (its service left the policy, manages nothing any
    more, or is not installed) is removed. restart and failed: see restart_lists(), for the units of
    write and remove (the role restarts those whose file changed). workers_arg_unwired: [{unit, option, variable}] for services with workers_arg whose
    ExecStart= does not pass the variable on, so the limit does not apply until the unit does.
    """
    states = states or {}
    managed, missing, unsupported = split_services(services, states)
    write, unwired = [], []
    for service in managed:
        content = workers_dropin(service, gpu_count, sharing_mode)
        if content is None:
            continue
        folder = dropin_dir(service["name"], unit_dir)
        write.append({"unit": service["name"], "dir": folder, "path": "%s/%s" % (folder, WORKERS_DROPIN),
                      "content": content})
        option = service.get("workers_arg")
        if option and service.get("workers_per_gpu") and not exec_start_passes(
                states[service["name"]].get("ExecStart"), option):
            unwired.append({"unit": service["name"], "option": option, "variable": WORKERS_ARG_VARIABLE})
    remove = _removals(existing, [entry["path"] for entry in write])
    plan = {"write": write, "remove": remove, "missing": missing, "unsupported": unsupported,
            "workers_arg_unwired": unwired}
    plan.update(restart_lists(states, [entry["unit"] for entry in write + remove]))
    return plan


def restart_policy_plan(services, states=None, existing=(), unit_dir=UNIT_DIR):
    """What restart_policy does on one host.

    Returns {write: [{unit, kind, dir, path, content}], remove: [{unit, path}], timers, stale_timers,
    recover, missing, unsupported}. kind is 'dropin', 'timer' or 'recycle_service' (these two also name
    their 'timer'). timers: recycle timers to enable and start; stale_timers: recycle timers found on the
    host that the policy no longer wants (to stop and disable before their files go); recover: services
    that crashed (failed) although enabled, which the role starts again when their restart drop-in
    changed, as the new policy would have. existing: paths of gpufleet restart drop-ins and recycle units
    found on the host.
    """
    states = states or {}
    managed, missing, unsupported = split_services(services, states)
    write, timers = [], []
    for service in managed:
        unit = service["name"]
        dropin = restart_dropin(service)
        if dropin is not None:
            folder = dropin_dir(unit, unit_dir)
            write.append({"unit": unit, "kind": "dropin", "dir": folder,
                          "path": "%s/%s" % (folder, RESTART_DROPIN), "content": dropin})
        timer = recycle_timer(service)
        if timer is not None:
            timer_name = recycle_name(unit, "timer")
            for kind, suffix, content in (("timer", "timer", timer),
                                          ("recycle_service", "service", recycle_service(service))):
                write.append({"unit": unit, "kind": kind, "dir": unit_dir, "timer": timer_name,
                              "path": "%s/%s" % (unit_dir, recycle_name(unit, suffix)), "content": content})
            timers.append(timer_name)
    remove = _removals(existing, [entry["path"] for entry in write])
    stale_timers = [entry["unit"] for entry in remove if entry["unit"].endswith(".timer")]
    failed = [service["name"] for service in managed
              if is_failed(states.get(service["name"])) and should_restart(states.get(service["name"]))]
    return {"write": write, "remove": remove, "timers": timers, "stale_timers": stale_timers,
            "recover": failed, "missing": missing, "unsupported": unsupported}
