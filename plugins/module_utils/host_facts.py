# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Host facts around the GPUs: kernel module version, OS, services, CUDA toolkits,
container runtime configuration and PCIe AER counters.

Everything is read through the injected host object. A source that cannot be read
gives null, never a guess; a source that is there but broken adds an error entry.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
import re

from ansible_collections.gpufleet.core.plugins.module_utils.facts_model import add_error

PROC_DRIVER_VERSION = "/proc/driver/nvidia/version"

# "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.154.05  Thu Dec 28 ..." and
# "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  570.124.06  Release Build ..."
_KERNEL_MODULE_RE = re.compile(r"Kernel Module(?:\s+for\s+\S+)?\s+(\d+(?:\.\d+)+)\b")

# Role of a service -> unit names to try, the usual one first. NVIDIA ships no MPS unit;
# nvidia-mps is the name sites commonly give theirs. DCGM's unit was dcgm before 2.x
# packages renamed it nvidia-dcgm.
SERVICE_UNITS = (
    ("persistenced", ("nvidia-persistenced",)),
    ("fabricmanager", ("nvidia-fabricmanager",)),
    ("mps", ("nvidia-mps", "nvidia-cuda-mps-control")),
    ("dcgm", ("nvidia-dcgm", "dcgm")),
)
SYSTEMCTL_PROPERTIES = "Id,LoadState,ActiveState,UnitFileState,Restart"

# /proc/<pid>/comm holds at most 15 characters: both nvidia-cuda-mps-control and
# nvidia-cuda-mps-server read as "nvidia-cuda-mps" there.
MPS_COMMS = ("nvidia-cuda-mps", "nvidia-cuda-mps-control", "nvidia-cuda-mps-server")

CUDA_PARENT = "/usr/local"
_CUDA_DIR_RE = re.compile(r"^cuda(?:-(\d+(?:\.\d+)*))?$")
_CUDA_TXT_RE = re.compile(r"CUDA Version\s+(\d+(?:\.\d+)*)")

DOCKER_DAEMON_JSON = "/etc/docker/daemon.json"
CONTAINERD_CONFIGS = (
    "/etc/containerd/config.toml",
    "/var/lib/rancher/k3s/agent/etc/containerd/config.toml",
    "/var/lib/rancher/rke2/agent/etc/containerd/config.toml",
)
CONTAINERD_DROPIN_DIR = "/etc/containerd/conf.d"
# a runtimes table named after nvidia, or a runtime whose binary is nvidia-container-runtime
_CONTAINERD_NVIDIA_RE = re.compile(
    r"""^\s*(?:\[[^\]#]*\.runtimes\.["']?[\w.-]*nvidia[\w.-]*["']?\]"""
    r"""|BinaryName\s*=\s*["'][^"']*nvidia-container-runtime[^"']*["'])""",
    re.M)
_CTK_VERSION_RE = re.compile(r"version\s+(\d+(?:\.\d+)+)", re.I)
_CLI_VERSION_RE = re.compile(r"^cli-version:\s*(\d+(?:\.\d+)+)", re.M)

AER_FILES = (("correctable", "aer_dev_correctable", "TOTAL_ERR_COR"),
             ("nonfatal", "aer_dev_nonfatal", "TOTAL_ERR_NONFATAL"),
             ("fatal", "aer_dev_fatal", "TOTAL_ERR_FATAL"))


# --- kernel module ---------------------------------------------------------------------

def read_kernel_module_version(host):
    """Version of the loaded NVIDIA kernel module, or None when none is loaded."""
    text = host.read_text(PROC_DRIVER_VERSION)
    if not text:
        return None
    match = _KERNEL_MODULE_RE.search(text.splitlines()[0])
    return match.group(1) if match else None


# --- identity ---------------------------------------------------------------------------

def _first_line(text):
    if text is None:
        return None
    stripped = text.strip()
    return stripped.splitlines()[0] if stripped else None


def _unquote_os_release(value):
    """Shell-style quoting as os-release(5) allows it: "..." with backslash escapes, or '...'."""
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] == '"':
        return re.sub(r'\\([\\$"`])', r"\1", value[1:-1])
    if len(value) >= 2 and value[0] == value[-1] == "'":
        return value[1:-1]
    return value


def parse_os_release(text):
    """KEY=value lines of os-release(5) as a dict."""
    values = {}
    for line in (text or "").splitlines():
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, value = line.split("=", 1)
        values[key.strip()] = _unquote_os_release(value)
    return values


def read_os(host):
    text = host.read_text("/etc/os-release")
    if text is None:
        text = host.read_text("/usr/lib/os-release")
    values = parse_os_release(text)
    return {"id": values.get("ID"), "version_id": values.get("VERSION_ID"),
            "pretty_name": values.get("PRETTY_NAME")}


# --- services ---------------------------------------------------------------------------

def _unit_name(name):
    return name if "." in name else name + ".service"


def parse_systemctl_show(text):
    """Blocks of KEY=value lines, one per unit, in the order systemctl printed them."""
    blocks = []
    current = {}
    for line in (text or "").splitlines():
        if not line.strip():
            if current:
                blocks.append(current)
                current = {}
            continue
        if "=" in line:
            key, value = line.split("=", 1)
            current[key.strip()] = value.strip()
    if current:
        blocks.append(current)
    return blocks


_ACTIVE_STATES = {"active": "running", "reloading": "running", "failed": "failed",
                  "inactive": "stopped", "deactivating": "stopped"}
_ENABLED_STATES = {"enabled": True, "enabled-runtime": True, "linked": True, "linked-runtime": True,
                   "disabled": False, "masked": False, "masked-runtime": False}


def service_from_properties(name, props):
    """{name, state, enabled, restart} from one systemctl show block. 'activating'
    (starting, or waiting to restart after a crash) cannot be told apart without
    SubState and reads as unknown."""
    load = props.get("LoadState")
    if load == "not-found":
        return {"name": name, "state": "not_found", "enabled": None, "restart": None}
    return {
        "name": name,
        "state": _ACTIVE_STATES.get(props.get("ActiveState"), "unknown"),
        "enabled": _ENABLED_STATES.get(props.get("UnitFileState")),
        "restart": props.get("Restart") or None,
    }


def _unknown_service(name):
    return {"name": name, "state": "unknown", "enabled": None, "restart": None}


def _service_roles(extra_services):
    roles = list(SERVICE_UNITS)
    known = set(role for role, units in roles)
    for name in extra_services or ():
        name = str(name)
        if name and name not in known:
            roles.append((name, (name,)))
            known.add(name)
    return roles


def _blocks_by_unit(units, blocks):
    """systemctl show prints one block per unit, in the order asked; Id is only a check,
    because an alias (dcgm.service -> nvidia-dcgm.service) reports its target's Id."""
    if len(blocks) == len(units):
        return dict(zip(units, blocks))
    by_id = dict((block.get("Id"), block) for block in blocks)
    return dict((unit, by_id[unit]) for unit in units if unit in by_id)


def _pick_unit(role_units, found):
    """The first unit of a role that exists; the role's usual name when none does."""
    for name in role_units:
        props = found.get(_unit_name(name))
        if props is not None and props.get("LoadState") not in (None, "not-found"):
            return service_from_properties(name, props)
    name = role_units[0]
    props = found.get(_unit_name(name))
    return service_from_properties(name, props) if props is not None else _unknown_service(name)


def collect_services(host, facts, extra_services=(), timeout=10):
    roles = _service_roles(extra_services)
    systemctl = host.find_bin("systemctl")
    if systemctl is None:
        return dict((role, _unknown_service(units[0])) for role, units in roles)
    units = [_unit_name(name) for role, role_units in roles for name in role_units]
    result = host.run([systemctl, "show", "--property=" + SYSTEMCTL_PROPERTIES] + units, timeout)
    if result.rc != 0:
        add_error(facts, None, "systemctl show", result.describe_failure(), result.rc)
        return dict((role, _unknown_service(role_units[0])) for role, role_units in roles)
    found = _blocks_by_unit(units, parse_systemctl_show(result.stdout))
    return dict((role, _pick_unit(role_units, found)) for role, role_units in roles)


def mps_daemon_running(host):
    """True when an MPS control daemon or server runs; None when /proc cannot be listed."""
    entries = host.listdir("/proc")
    if entries is None:
        return None
    for entry in entries:
        if not entry.isdigit():
            continue
        comm = host.read_text("/proc/%s/comm" % entry)
        if comm is not None and comm.strip() in MPS_COMMS:
            return True
    return False


# --- CUDA toolkits ----------------------------------------------------------------------

def _cuda_version(host, facts, folder):
    text = host.read_text(folder + "/version.json")
    if text is not None:
        try:
            version = json.loads(text).get("cuda", {}).get("version")
        except (ValueError, AttributeError) as exc:
            add_error(facts, None, "read %s/version.json" % folder, "not valid JSON: %s" % exc)
        else:
            if isinstance(version, str) and version:
                return version
    match = _CUDA_TXT_RE.search(host.read_text(folder + "/version.txt") or "")
    return match.group(1) if match else None


def _name_specificity(name):
    """cuda-12.4 > cuda-12 > cuda: how precisely a folder name states its version."""
    match = _CUDA_DIR_RE.match(name)
    suffix = match.group(1) if match else None
    return (suffix.count(".") + 1) if suffix else 0


def _dedupe_toolkits(found):
    """/usr/local/cuda and /usr/local/cuda-12 are usually symlinks (alternatives) to a
    versioned folder; host_io cannot resolve links, so among folders that report the
    same version only the one with the most specific name is kept. Folders whose version
    cannot be read are all kept."""
    best = {}
    for name, version in found:
        if version is None:
            continue
        if version not in best or _name_specificity(name) > _name_specificity(best[version]):
            best[version] = name
    kept = [(name, version) for name, version in found if version is None or best[version] == name]
    return [{"path": "%s/%s" % (CUDA_PARENT, name), "version": version} for name, version in sorted(kept)]


def collect_cuda_toolkits(host, facts):
    entries = host.listdir(CUDA_PARENT) or []
    found = [(name, _cuda_version(host, facts, "%s/%s" % (CUDA_PARENT, name)))
             for name in entries if _CUDA_DIR_RE.match(name)]
    return _dedupe_toolkits(found)


# --- container runtime ------------------------------------------------------------------

def _container_toolkit_version(host, facts, timeout):
    for program, argv_tail, pattern in (("nvidia-ctk", ["--version"], _CTK_VERSION_RE),
                                        ("nvidia-container-cli", ["--version"], _CLI_VERSION_RE)):
        path = host.find_bin(program)
        if path is None:
            continue
        result = host.run([path] + argv_tail, timeout)
        if result.rc != 0:
            add_error(facts, None, " ".join([program] + argv_tail), result.describe_failure(), result.rc)
            continue
        match = pattern.search(result.stdout or "")
        if match:
            return match.group(1)
        add_error(facts, None, " ".join([program] + argv_tail), "no version in the output")
    return None


def read_docker_runtime(host, facts):
    """(docker_nvidia_runtime, docker_default_runtime) from /etc/docker/daemon.json."""
    text = host.read_text(DOCKER_DAEMON_JSON)
    if text is None:
        return None, None
    if not text.strip():
        return False, None
    try:
        config = json.loads(text)
    except ValueError as exc:
        add_error(facts, None, "read %s" % DOCKER_DAEMON_JSON, "not valid JSON: %s" % exc)
        return None, None
    if not isinstance(config, dict):
        add_error(facts, None, "read %s" % DOCKER_DAEMON_JSON, "not a JSON object")
        return None, None
    runtimes = config.get("runtimes")
    has_nvidia = isinstance(runtimes, dict) and any(
        _is_nvidia_runtime(name, spec) for name, spec in runtimes.items())
    default = config.get("default-runtime")
    return has_nvidia, (default if isinstance(default, str) and default else None)


def _is_nvidia_runtime(name, spec):
    path = spec.get("path") if isinstance(spec, dict) else None
    return "nvidia" in str(name) or (isinstance(path, str) and "nvidia" in path)


def _containerd_texts(host):
    texts = [host.read_text(path) for path in CONTAINERD_CONFIGS]
    for name in host.listdir(CONTAINERD_DROPIN_DIR) or []:
        if name.endswith(".toml"):
            texts.append(host.read_text("%s/%s" % (CONTAINERD_DROPIN_DIR, name)))
    return [text for text in texts if text is not None]


def read_containerd_runtime(host):
    """True when a containerd config names an nvidia runtime; None when no config is readable.
    A text search, because Python before 3.11 has no TOML reader."""
    texts = _containerd_texts(host)
    if not texts:
        return None
    return any(_CONTAINERD_NVIDIA_RE.search(text) for text in texts)


def collect_container_toolkit(host, facts, timeout=10):
    docker_nvidia, docker_default = read_docker_runtime(host, facts)
    return {
        "version": _container_toolkit_version(host, facts, timeout),
        "docker_nvidia_runtime": docker_nvidia,
        "docker_default_runtime": docker_default,
        "containerd_nvidia_runtime": read_containerd_runtime(host),
    }


# --- the host ---------------------------------------------------------------------------

def collect_host(host, facts, extra_services=(), timeout=10):
    """Fills facts['host']."""
    facts["host"] = {
        "hostname": _first_line(host.read_text("/proc/sys/kernel/hostname")),
        "kernel": _first_line(host.read_text("/proc/sys/kernel/osrelease")),
        "os": read_os(host),
        "services": collect_services(host, facts, extra_services, timeout),
        "mps_daemon_running": mps_daemon_running(host),
        "cuda_toolkits": collect_cuda_toolkits(host, facts),
        "container_toolkit": collect_container_toolkit(host, facts, timeout),
    }
    return facts["host"]


# --- PCIe AER ---------------------------------------------------------------------------

def parse_aer_file(text, total_name):
    """(total or None, {name: count}) from an aer_dev_* file of 'NAME COUNT' lines."""
    total = None
    counters = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) != 2 or not parts[1].isdigit():
            continue
        if parts[0] == total_name:
            total = int(parts[1])
        else:
            counters[parts[0]] = int(parts[1])
    return total, counters


def read_pcie_aer(host, pci_bus_id):
    """The aer record of one device, or None when the kernel exposes no AER files for it.
    Counter names repeat between the nonfatal and fatal files, so each is keyed
    '<class>.<name>' (correctable.RxErr, fatal.DLP); only non-zero counters are kept."""
    aer = {"correctable": None, "nonfatal": None, "fatal": None, "counters": {}}
    readable = False
    for kind, filename, total_name in AER_FILES:
        text = host.read_text("/sys/bus/pci/devices/%s/%s" % (pci_bus_id, filename))
        if text is None:
            continue
        readable = True
        total, counters = parse_aer_file(text, total_name)
        aer[kind] = total
        for name, count in counters.items():
            if count:
                aer["counters"]["%s.%s" % (kind, name)] = count
    return aer if readable else None


def collect_pcie_aer(host, facts):
    """Fills gpus[i].pcie.aer for every GPU whose PCI bus id is known."""
    for gpu in facts["gpus"]:
        bus_id = gpu.get("pci_bus_id")
        if bus_id:
            gpu["pcie"]["aer"] = read_pcie_aer(host, bus_id)
