# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gather_subset workload: the GPU services' own failures and what is in effect for their GPU processes.

For each asked-for service and each systemd unit that owns a process on a GPU: restarts, last exit status
and signal and result (systemctl show), the kernel OOM killer's kills in its cgroup in the window (kernel
log), the failures its journal shows in the window (journal_scan), the frameworks its interpreter carries
(workload_probe), and, per GPU process, the CUDA / PyTorch / MPS / NCCL variables of /proc/<pid>/environ.
Only those variables ever leave the host; every other value of environ is dropped unread.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import signal

from ansible_collections.gpufleet.core.plugins.module_utils.args_common import WINDOW_HOURS
from ansible_collections.gpufleet.core.plugins.module_utils.facts_model import add_error
from ansible_collections.gpufleet.core.plugins.module_utils.host_facts import parse_systemctl_show
from ansible_collections.gpufleet.core.plugins.module_utils import journal_scan
from ansible_collections.gpufleet.core.plugins.module_utils.kernel_log import journalctl_argv as kernel_journal_argv
from ansible_collections.gpufleet.core.plugins.module_utils.kernel_oom import cgroup_unit, parse_oom_kills
from ansible_collections.gpufleet.core.plugins.module_utils.workload_probe import new_frameworks, probe_frameworks

MAX_SERVICES = 16
MAX_PROCESSES = 64
MAX_JOURNAL_ENTRIES = 20000
MAX_OOM_EVENTS = 5
MAX_VARIABLES = 32
VALUE_LIMIT = 256
ENVIRON_LIMIT = 1024 * 1024
SYSTEMCTL_PROPERTIES = ("Id,LoadState,ActiveState,SubState,Result,NRestarts,ExecMainCode,ExecMainStatus,"
                        "MainPID,User,ExecStart")
KEPT_NAMES = ("CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES", "PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF")
KEPT_PREFIXES = ("CUDA_MPS_", "NCCL_")
# siginfo si_code of a child's exit (systemd's ExecMainCode)
_EXIT_CODES = {"1": "exited", "2": "killed", "3": "dumped", "4": "trapped", "5": "stopped", "6": "continued"}


def unit_name(name):
    return name if "." in name else name + ".service"


def kept_variable(name):
    return name in KEPT_NAMES or name.startswith(KEPT_PREFIXES)


def _printable(text, limit):
    return "".join(char if char.isprintable() else "?" for char in text[:limit])


def parse_environ(raw):
    """{name: value} of the kept variables of a NUL-separated /proc/<pid>/environ; nothing else."""
    kept = {}
    for item in (raw or "").split("\0"):
        name, sep, value = item.partition("=")
        if sep and kept_variable(name) and len(kept) < MAX_VARIABLES:
            kept[_printable(name, 64)] = _printable(value, VALUE_LIMIT)
    return kept


def unit_of_process(cgroup_text):
    """The systemd service a process runs in, from /proc/<pid>/cgroup (cgroup v2 or the v1 name=systemd line)."""
    for line in (cgroup_text or "").splitlines():
        parts = line.split(":", 2)
        if len(parts) == 3 and (parts[0] == "0" and parts[1] == "" or parts[1] == "name=systemd"):
            unit = cgroup_unit(parts[2])
            if unit and unit.endswith(".service"):
                return unit
    return None


def gpu_processes(facts):
    """[(gpu, process)] of every compute process the GPU facts list."""
    found = []
    for gpu in facts.get("gpus") or ():
        for process in gpu.get("processes") or ():
            if process.get("pid") is not None and process.get("type") != "graphics":
                found.append((gpu, process))
    return found


def _process_record(host, gpu, process):
    pid = process["pid"]
    raw = host.read_text("/proc/%d/environ" % pid, ENVIRON_LIMIT)
    # a recording host keeps only what leaves the host, never the rest of environ
    record_file = getattr(host, "record_file", None)
    if raw is not None and record_file is not None:
        record_file("/proc/%d/environ" % pid, "\0".join("%s=%s" % item for item in sorted(parse_environ(raw).items())))
    return {"pid": pid, "name": process.get("name"), "gpu_index": gpu.get("index"), "gpu_uuid": gpu.get("uuid"),
            "used_memory_mib": process.get("used_memory_mib"),
            "environment": parse_environ(raw) if raw is not None else None,
            "environment_unreadable": None if raw is not None else "/proc/%d/environ is not readable (exited, or not root)" % pid}


def units_with_gpu_processes(host, facts):
    """{unit: [process records]} of the GPU processes that run in a systemd service."""
    units = {}
    for gpu, process in gpu_processes(facts)[:MAX_PROCESSES]:
        unit = unit_of_process(host.read_text("/proc/%d/cgroup" % process["pid"]))
        if unit:
            units.setdefault(unit, []).append(_process_record(host, gpu, process))
    return units


def _int(value):
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _signal_name(number):
    try:
        return signal.Signals(number).name[3:]
    except (ValueError, TypeError):
        return None


def last_exit(props):
    """{code, status, signal} of the main process's last exit; a killed or dumped one names its signal."""
    code = _EXIT_CODES.get(props.get("ExecMainCode"), props.get("ExecMainCode") or None)
    if code == "0":
        code = None
    status = _int(props.get("ExecMainStatus"))
    killed = code in ("killed", "dumped")
    return {"code": code, "status": None if killed else status,
            "signal": _signal_name(status) if killed and status else None}


def new_service(unit, sources):
    return {"unit": unit, "sources": sources, "load_state": None, "active_state": None, "sub_state": None,
            "result": None, "restarts": None, "last_exit": {"code": None, "status": None, "signal": None},
            "main_pid": None, "user": None,
            "oom_kills": {"count": 0, "events": []}, "journal": new_journal("not_read"),
            "frameworks": new_frameworks("not_probed", reason="not read"), "processes": []}


def new_journal(status, reason=None):
    record = journal_scan.new_scan()
    record.update({"status": status, "reason": reason, "truncated": False})
    return record


def apply_properties(service, props):
    service["load_state"] = props.get("LoadState") or None
    service["active_state"] = props.get("ActiveState") or None
    service["sub_state"] = props.get("SubState") or None
    service["result"] = props.get("Result") or None
    service["restarts"] = _int(props.get("NRestarts"))
    service["last_exit"] = last_exit(props)
    service["main_pid"] = _int(props.get("MainPID")) or None
    service["user"] = _printable(props.get("User") or "", 64) or None


def _show_units(host, facts, units, timeout):
    """{unit: properties} from one systemctl show; {} (and an error) when systemctl cannot answer."""
    systemctl = host.find_bin("systemctl")
    if systemctl is None:
        add_error(facts, None, "workload: systemctl", "command not found")
        return {}
    units = sorted(units)  # the same command whatever order the units were asked in (a replay finds it)
    result = host.run([systemctl, "show", "--property=" + SYSTEMCTL_PROPERTIES] + units, timeout)
    if result.rc != 0:
        add_error(facts, None, "workload: systemctl show", result.describe_failure(), result.rc)
        return {}
    blocks = parse_systemctl_show(result.stdout)
    if len(blocks) == len(units):
        return dict(zip(units, blocks))
    return dict((block.get("Id"), block) for block in blocks if block.get("Id") in units)


def read_journal(host, unit, window_hours, timeout):
    journalctl = host.find_bin("journalctl")
    if journalctl is None:
        return new_journal("unavailable", "journalctl: command not found")
    result = host.run(journal_scan.journalctl_argv(journalctl, unit, window_hours, MAX_JOURNAL_ENTRIES), timeout)
    if result.rc != 0 and not (result.timed_out and result.stdout):
        return new_journal("failed", "journalctl --unit=%s: %s" % (unit, result.describe_failure()))
    record = new_journal("partial" if result.timed_out else "read")
    record.update(journal_scan.scan_journal(result.stdout))
    record["truncated"] = record["entries"] + record["unparsed"] >= MAX_JOURNAL_ENTRIES
    if result.timed_out:
        record["reason"] = "journalctl --unit=%s timed out; what it printed was read" % unit
    elif "not seeing messages" in (result.stderr or ""):
        record["status"] = "partial"
        record["reason"] = "journalctl shows this user's messages only (run with become)"
    return record


def read_kernel_log(host, facts, source, files, window_hours, timeout):
    """(text, boot_time) of the kernel log the OOM kills are looked for in, or None (an error says why)."""
    if source == "files":
        texts = [host.read_text(path) for path in files or ()]
        return "\n".join(text for text in texts if text), None
    journalctl = host.find_bin("journalctl") if source in ("auto", "journalctl") else None
    if journalctl is not None:
        result = host.run(kernel_journal_argv(journalctl, window_hours), timeout)
        if result.rc == 0:
            return result.stdout, None
        add_error(facts, None, "workload: journalctl (kernel)", result.describe_failure(), result.rc)
        if source == "journalctl":
            return None
    dmesg = host.find_bin("dmesg")
    if dmesg is None:
        add_error(facts, None, "workload: kernel log", "neither journalctl nor dmesg could be read")
        return None
    result = host.run([dmesg, "--ctime"], timeout)
    if result.rc != 0:
        add_error(facts, None, "workload: dmesg --ctime", result.describe_failure(), result.rc)
        return None
    return result.stdout, None


def oom_kills_by_unit(events):
    """{unit: [events]} of OOM kills whose victim's cgroup is a unit's."""
    by_unit = {}
    for event in events:
        unit = cgroup_unit(event.get("cgroup")) or cgroup_unit(event.get("limit_cgroup"))
        if unit:
            by_unit.setdefault(unit, []).append(event)
    return by_unit


def _bounded_events(events):
    if len(events) <= MAX_OOM_EVENTS:
        return list(events)
    return list(events[:MAX_OOM_EVENTS - 1]) + [events[-1]]


def _service_order(services, gpu_units):
    """[(unit, sources)]: the asked-for services first, then the other units with GPU processes."""
    ordered = []
    for name in services or ():
        unit = unit_name(str(name))
        if unit not in [item[0] for item in ordered]:
            ordered.append((unit, ["policy"] + (["gpu_process"] if unit in gpu_units else [])))
    for unit in sorted(gpu_units):
        if unit not in [item[0] for item in ordered]:
            ordered.append((unit, ["gpu_process"]))
    return ordered


def collect_workload(host, facts, services=(), window_hours=WINDOW_HOURS, kernel_log_source="auto", kernel_log_files=(),
                     timeout_for=lambda: 20.0):
    """Fills facts['workload'] (see the facts schema). timeout_for() gives each command's timeout."""
    gpu_units = units_with_gpu_processes(host, facts)
    ordered = _service_order(services, gpu_units)
    record = {"window_hours": window_hours, "services": [], "left_out": max(0, len(ordered) - MAX_SERVICES),
              "oom_kills_elsewhere": 0}
    facts["workload"] = record
    ordered = ordered[:MAX_SERVICES]
    if not ordered:
        return record
    units = [unit for unit, _sources in ordered]
    properties = _show_units(host, facts, units, timeout_for())
    kernel = read_kernel_log(host, facts, kernel_log_source, kernel_log_files, window_hours, timeout_for())
    kills = oom_kills_by_unit(parse_oom_kills(kernel[0], now=host.now(), window_seconds=window_hours * 3600.0)
                              if kernel else [])
    record["oom_kills_elsewhere"] = sum(len(events) for unit, events in kills.items() if unit not in units)
    for unit, sources in ordered:
        service = new_service(unit, sources)
        props = properties.get(unit)
        if props is not None:
            apply_properties(service, props)
        service["processes"] = gpu_units.get(unit, [])
        events = kills.get(unit, [])
        service["oom_kills"] = {"count": len(events), "events": _bounded_events(events),
                                "read": kernel is not None}
        if service["load_state"] == "not-found":
            service["journal"] = new_journal("not_read", "the unit does not exist")
            service["frameworks"] = new_frameworks("not_probed", reason="the unit does not exist")
        else:
            service["journal"] = read_journal(host, unit, window_hours, timeout_for())
            service["frameworks"] = probe_frameworks(host, (props or {}).get("ExecStart"), service["user"],
                                                     timeout_for())
        record["services"].append(service)
    return record
