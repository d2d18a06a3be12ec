# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Processes that loaded NVIDIA userspace driver libraries of another version than the kernel module.

A container that carries its own driver libraries, or a stale CUDA compat package on the library
path, makes that one workload fail (the kernel logs 'API mismatch') while the host's own NVML and
nvidia-smi answer fine. /proc/<pid>/maps names every library a process mapped, with the version
in the file name (libcuda.so.535.54.03); /proc/<pid>/cgroup tells whether it runs in a container.

Read only, through the injected host object, bounded in processes, bytes and time. A recording
host keeps only the NVIDIA lines of each maps file, so fixtures stay small and replay the same.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os
import re
import time

from ansible_collections.gpufleet.core.plugins.module_utils.facts_model import add_error
from ansible_collections.gpufleet.core.plugins.module_utils.host_facts import read_kernel_module_version

PROC = "/proc"
SYS_MODULE_VERSION = "/sys/module/nvidia/version"

MAX_PROCESSES = 4096
MAX_CLIENTS = 32
MAX_LIBRARIES = 4
MAPS_LIMIT = 8 * 1024 * 1024
SCAN_SECONDS = 10.0
NAME_LIMIT = 64
PATH_LIMIT = 256

# Driver libraries carry the driver's version in their file name; libraries NVIDIA versions on their
# own (libnvidia-egl-wayland.so.1.1.13) have no three-digit major and are left out.
_LIBRARY_RE = re.compile(
    r"/(lib(?:cuda|cudadebugger|nvcuvid|nvoptix|nvidia-[A-Za-z0-9_-]+)\.so)\.(\d{3,4}\.\d{1,3}(?:\.\d{1,3})?)$")
_QUICK_MARKERS = ("libcuda", "libnv")
_CONTAINER_RE = re.compile(r"docker|containerd|crio|libpod|podman|kubepods|/lxc[./]|garden|buildkit")
_CONTAINER_ID_RE = re.compile(r"[0-9a-f]{64}")
_COMPAT_MARKERS = ("/compat/", "cuda-compat")

STATUSES = ("complete", "partial", "no_kernel_module", "proc_unreadable")


def running_module_version(host):
    """The loaded nvidia module's version: /proc/driver/nvidia/version, else /sys/module/nvidia/version."""
    version = read_kernel_module_version(host)
    if version:
        return version
    text = (host.read_text(SYS_MODULE_VERSION) or "").strip()
    return text if re.match(r"^\d+(?:\.\d+)+$", text) else None


def clean_text(text, limit):
    """Host-controlled text as data: printable characters only, at most limit of them."""
    if text is None:
        return None
    text = text.strip()
    cleaned = "".join(char if char.isprintable() else "?" for char in text[:limit])
    return cleaned + ("..." if len(text) > limit else "") or None


def nvidia_libraries(maps_text):
    """[(path, version)] of the versioned NVIDIA driver libraries in a maps file, each once, in order."""
    found = []
    seen = set()
    for line in maps_text.splitlines():
        parts = line.split(None, 5)
        if len(parts) < 6:
            continue
        path = parts[5]
        if path.endswith(" (deleted)"):
            path = path[:-len(" (deleted)")]
        match = _LIBRARY_RE.search(path)
        if match and path not in seen:
            seen.add(path)
            found.append((path, match.group(2)))
    return found


def _nvidia_lines(maps_text):
    return "\n".join(line for line in maps_text.splitlines() if _LIBRARY_RE.search(line.replace(" (deleted)", "")))


def container_of(cgroup_text):
    """(cgroup path, container id or None) when the process runs in a container, else (None, None).
    cgroup v2 has one '0::path' line; under v1 any hierarchy names the container."""
    paths = []
    for line in (cgroup_text or "").splitlines():
        parts = line.split(":", 2)
        if len(parts) == 3:
            paths.append(parts[2])
    for path in paths:
        if _CONTAINER_RE.search(path):
            match = _CONTAINER_ID_RE.search(path)
            return clean_text(path, PATH_LIMIT), (match.group(0) if match else None)
    return None, None


def is_compat_path(path):
    return any(marker in path for marker in _COMPAT_MARKERS)


def _read_maps(host, path):
    text = host.read_text(path, MAPS_LIMIT)
    # a recording host (maybe wrapped) keeps what the parser needs, not the address space of every process
    record_file = getattr(host, "record_file", None)
    if text is not None and record_file is not None:
        record_file(path, _nvidia_lines(text))
    return text


def _client(host, pid, mismatched):
    name = clean_text(host.read_text("%s/%s/comm" % (PROC, pid)), NAME_LIMIT)
    cgroup, container_id = container_of(host.read_text("%s/%s/cgroup" % (PROC, pid)))
    path, version = mismatched[0]
    return {
        "pid": int(pid),
        "name": name,
        "container": cgroup,
        "container_id": container_id,
        "library": clean_text(path, PATH_LIMIT),
        "library_version": version,
        "compat": is_compat_path(path),
        "libraries": [clean_text(other, PATH_LIMIT) for other, _version in mismatched[:MAX_LIBRARIES]],
    }


def _new_record(module_version, status):
    return {"kernel_module_version": module_version, "status": status, "processes_scanned": 0,
            "processes_unreadable": 0, "mismatched": [], "mismatched_left_out": 0}


def scan_driver_clients(host, timeout=SCAN_SECONDS, own_pid=None):
    """The record of facts['driver_clients']: the processes whose mapped NVIDIA driver libraries have
    another version than the running kernel module. status 'partial' when the process or time bound
    stopped the scan (what was found is kept)."""
    module_version = running_module_version(host)
    if module_version is None:
        return _new_record(None, "no_kernel_module")
    entries = host.listdir(PROC)
    if entries is None:
        return _new_record(module_version, "proc_unreadable")
    record = _new_record(module_version, "complete")
    own_pid = str(os.getpid() if own_pid is None else own_pid)
    deadline = time.monotonic() + min(timeout, SCAN_SECONDS)
    pids = [entry for entry in entries if entry.isdigit() and entry != own_pid]
    for pid in pids:
        if record["processes_scanned"] >= MAX_PROCESSES or time.monotonic() > deadline:
            record["status"] = "partial"
            break
        record["processes_scanned"] += 1
        text = _read_maps(host, "%s/%s/maps" % (PROC, pid))
        if text is None:
            record["processes_unreadable"] += 1
            continue
        if not any(marker in text for marker in _QUICK_MARKERS):
            continue
        mismatched = [(path, version) for path, version in nvidia_libraries(text) if version != module_version]
        if not mismatched:
            continue
        if len(record["mismatched"]) >= MAX_CLIENTS:
            record["mismatched_left_out"] += 1
            continue
        record["mismatched"].append(_client(host, pid, mismatched))
    return record


def collect_driver_clients(host, facts, timeout=SCAN_SECONDS):
    """Fills facts['driver_clients']; a scan cut short, or one that could not read most processes'
    maps (not root), is also an entry in facts['errors']."""
    record = scan_driver_clients(host, timeout)
    facts["driver_clients"] = record
    if record["status"] == "partial":
        add_error(facts, None, "driver clients", "scan stopped after %d processes (bound of %d processes or %ss)"
                  % (record["processes_scanned"], MAX_PROCESSES, SCAN_SECONDS))
    elif record["status"] == "proc_unreadable":
        add_error(facts, None, "driver clients", "%s cannot be listed" % PROC)
    unreadable, scanned = record["processes_unreadable"], record["processes_scanned"]
    if unreadable and unreadable * 2 >= scanned:
        add_error(facts, None, "driver clients", "maps of %d of %d processes not readable (run with become)"
                  % (unreadable, scanned))
    return record
