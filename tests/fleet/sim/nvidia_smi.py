# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A simulated `nvidia-smi` for the gpufleet test fleet (python3 standard library only).

It answers from a state file instead of a GPU: /var/lib/gpufleet-sim/state.json (built by
state.py) and the processes registered by the simulated workloads in
/run/gpufleet-sim/procs/<pid>.json. GPUFLEET_SIM_ROOT moves all of these under another
folder standing in for / (the unit tests use a temporary one). See README.md beside this
file for the state format and the commands it answers.

Every command that changes something changes only the state file, under an exclusive lock
and by an atomic rename, so concurrent calls never corrupt it. The texts and exit codes are
the ones the real nvidia-smi prints (exit codes are NVML return codes, as nvidia-smi's are).
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import fcntl
import hashlib
import json
import os
import signal
import socket
import sys
import time
from xml.sax.saxutils import escape, quoteattr

sys.path.insert(0, os.path.dirname(os.path.realpath(__file__)))

from load_model import under_load  # noqa: E402  pylint: disable=wrong-import-position

ROOT_ENV = "GPUFLEET_SIM_ROOT"
STATE_FORMAT = 1

RC_OK = 0
RC_INVALID_ARGUMENT = 2
RC_NOT_SUPPORTED = 3
RC_NOT_FOUND = 6
RC_DRIVER_NOT_LOADED = 9
RC_LIBRARY_NOT_FOUND = 12
RC_GPU_LOST = 15
RC_VERSION_MISMATCH = 18
RC_IN_USE = 19
RC_INSUFFICIENT_RESOURCES = 23
RC_UNKNOWN = 255

NVML_TEXT = {
    RC_INVALID_ARGUMENT: "Invalid Argument",
    RC_NOT_SUPPORTED: "Not Supported",
    RC_NOT_FOUND: "Not Found",
    RC_IN_USE: "In use by another client",
    RC_INSUFFICIENT_RESOURCES: "Insufficient Resources",
}

INVALID_COMBINATION = "Invalid combination of input arguments. Please run 'nvidia-smi -h' for help."
NO_DRIVER = ("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
             "Make sure that the latest NVIDIA driver is installed and running.")
NO_LIBRARY = ("NVIDIA-SMI couldn't find libnvidia-ml.so library in your system. Please make sure that the "
              "NVIDIA Display Driver is properly installed and present in your system.\n"
              "Please also try adding directory that contains libnvidia-ml.so to your system PATH.")
NO_MIG_DEVICES = "No MIG-enabled devices found."
IN_USE_EXPLANATION = ("%s is currently being used by one or more other processes (e.g. CUDA application or a "
                      "monitoring application such as another instance of nvidia-smi). Please first kill all "
                      "processes using the device and retry the command or reboot the system to make MIG mode "
                      "effective.")
RESET_IN_USE_EXPLANATION = ("currently being used by one or more other processes (e.g., Fabric Manager, CUDA "
                            "application, graphics application such as an X server, or a monitoring application "
                            "such as another instance of nvidia-smi). Please first kill all processes using this "
                            "device and all compute applications running in the system.")

# Compute modes as nvidia-smi -c takes them (number or name) and as -q -x prints them.
COMPUTE_MODES = {"0": "Default", "DEFAULT": "Default", "2": "Prohibited", "PROHIBITED": "Prohibited",
                 "3": "Exclusive_Process", "EXCLUSIVE_PROCESS": "Exclusive_Process"}

# MIG mode changes: "reset_required" (pending until -r or a reboot), "immediate" (the driver resets
# the GPU itself when nothing uses it) or "reboot_required" (-r is not supported, as in VMs).
MIG_MODE_CHANGES = ("reset_required", "immediate", "reboot_required")

# Compute-instance profile ids by compute slices (NVML_COMPUTE_INSTANCE_PROFILE_*_SLICE).
CI_PROFILE_IDS = {1: 0, 2: 1, 3: 2, 4: 3, 7: 4, 8: 5, 6: 6}

# The CUDA version a driver branch reports (nvidia-smi "CUDA Version").
CUDA_BY_BRANCH = ((595, "13.2"), (590, "13.1"), (580, "13.0"), (575, "12.9"), (570, "12.8"), (565, "12.7"),
                  (560, "12.6"), (555, "12.5"), (550, "12.4"), (545, "12.3"), (535, "12.2"), (530, "12.1"),
                  (525, "12.0"), (520, "11.8"), (515, "11.7"), (510, "11.6"), (495, "11.5"), (470, "11.4"),
                  (465, "11.3"), (460, "11.2"), (455, "11.1"), (450, "11.0"), (440, "10.2"), (418, "10.1"))

CLOCK_EVENT_REASONS = ("gpu_idle", "applications_clocks_setting", "sw_power_cap", "hw_slowdown",
                       "hw_thermal_slowdown", "hw_power_brake_slowdown", "sync_boost", "sw_thermal_slowdown",
                       "display_clocks_setting")


class SmiError(Exception):
    """A failed command: the text nvidia-smi prints and its exit status."""

    def __init__(self, text, rc):
        Exception.__init__(self, text)
        self.text = text
        self.rc = rc


class Output:
    """Lines a command prints, and its exit status."""

    def __init__(self):
        self.lines = []
        self.errors = []
        self.rc = RC_OK

    def say(self, line):
        self.lines.append(line)

    def fail(self, rc):
        if self.rc == RC_OK:
            self.rc = rc


# ---------------------------------------------------------------- files

def sim_root():
    return os.environ.get(ROOT_ENV) or "/"


def sim_path(relative):
    return os.path.join(sim_root(), relative)


def state_path():
    return sim_path("var/lib/gpufleet-sim/state.json")


def lock_path():
    return sim_path("var/lib/gpufleet-sim/state.lock")


def procs_dir():
    return sim_path("run/gpufleet-sim/procs")


def persistenced_pid_path():
    return sim_path("run/gpufleet-sim/persistenced.pid")


def kernel_log_path():
    return sim_path("var/log/gpufleet-sim/kern.log")


class StateLock:
    """flock on the state's lock file: shared to read, exclusive to change."""

    def __init__(self, exclusive=True):
        self.exclusive = exclusive
        self.fd = None

    def __enter__(self):
        directory = os.path.dirname(lock_path())
        if not os.path.isdir(directory):
            os.makedirs(directory)
        self.fd = os.open(lock_path(), os.O_RDWR | os.O_CREAT, 0o644)
        fcntl.flock(self.fd, fcntl.LOCK_EX if self.exclusive else fcntl.LOCK_SH)
        return self

    def __exit__(self, *exc):
        fcntl.flock(self.fd, fcntl.LOCK_UN)
        os.close(self.fd)


def load_state():
    """The state, or None when there is none (no driver installed at all)."""
    try:
        with open(state_path()) as handle:
            return json.load(handle)
    except (IOError, OSError):
        return None


def write_json_atomically(path, data):
    directory = os.path.dirname(path)
    if not os.path.isdir(directory):
        os.makedirs(directory)
    temporary = "%s.%d.tmp" % (path, os.getpid())
    with open(temporary, "w") as handle:
        json.dump(data, handle, indent=1, sort_keys=True)
        handle.write("\n")
    os.rename(temporary, path)


def save_state(state):
    write_json_atomically(state_path(), state)


def append_kernel_log(state, lines):
    """Appends one kernel message, syslog style, continuation lines joined by #012 as rsyslog does."""
    path = kernel_log_path()
    directory = os.path.dirname(path)
    if not os.path.isdir(directory):
        os.makedirs(directory)
    now = time.localtime()
    stamp = "%s %2d %s" % (time.strftime("%b", now), now.tm_mday, time.strftime("%H:%M:%S", now))
    host = state.get("hostname") or socket.gethostname()
    with open(path, "a") as handle:
        handle.write("%s %s kernel: %s\n" % (stamp, host, "#012".join(lines)))


# ---------------------------------------------------------------- processes

def _proc_stat_fields(pid):
    """Fields of /proc/<pid>/stat after the command name (state first), or None."""
    try:
        with open("/proc/%d/stat" % pid) as handle:
            text = handle.read()
    except (IOError, OSError):
        return None
    return text[text.rindex(")") + 2:].split()


def process_start_time(pid):
    fields = _proc_stat_fields(pid)
    return fields[19] if fields else None


def pid_alive(pid, starttime=None):
    """True for a running (not zombie) process; starttime guards against a reused pid."""
    fields = _proc_stat_fields(pid)
    if not fields or fields[0] in ("Z", "X"):
        return False
    return starttime is None or str(starttime) == fields[19]


def _read_proc_file(path):
    try:
        with open(path) as handle:
            data = json.load(handle)
    except (IOError, OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def registered_processes():
    """[(pid, record, alive)] for every file in the procs folder."""
    try:
        names = os.listdir(procs_dir())
    except (IOError, OSError):
        return []
    found = []
    for name in sorted(names):
        if not name.endswith(".json") or not name[:-5].isdigit():
            continue
        pid = int(name[:-5])
        record = _read_proc_file(os.path.join(procs_dir(), name))
        if record is not None:
            found.append((pid, record, pid_alive(pid, record.get("starttime"))))
    return found


def live_processes():
    """Live registered GPU processes: [{pid, gpu, used_mib, name, type, gpu_instance_id, compute_instance_id}]."""
    procs = []
    for pid, record, alive in registered_processes():
        if alive and isinstance(record.get("gpu"), int):
            procs.append({
                "pid": pid, "gpu": record["gpu"], "used_mib": int(record.get("used_mib") or 0),
                "name": record.get("name") or "python3", "type": record.get("type") or "C",
                "gpu_instance_id": record.get("gpu_instance_id"),
                "compute_instance_id": record.get("compute_instance_id"),
            })
    return sorted(procs, key=lambda proc: proc["pid"])


def remove_stale_process_files():
    for pid, _record, alive in registered_processes():
        if not alive:
            try:
                os.unlink(os.path.join(procs_dir(), "%d.json" % pid))
            except OSError:
                pass


def persistenced_running():
    try:
        with open(persistenced_pid_path()) as handle:
            pid = int(handle.read().strip() or "0")
    except (IOError, OSError, ValueError):
        return False
    return pid > 0 and pid_alive(pid)


# ---------------------------------------------------------------- state queries

def visible_gpus(state):
    """GPUs the driver enumerates, in nvidia-smi index order (lost ones are skipped)."""
    return [gpu for gpu in state["gpus"] if not gpu.get("lost")]


def lost_gpus(state):
    return [gpu for gpu in state["gpus"] if gpu.get("lost")]


def gpu_processes(procs, index):
    return [proc for proc in procs if proc["gpu"] == index]


def whole_gpu_processes(procs, index):
    """Processes on a GPU that are not inside a MIG instance."""
    return [proc for proc in gpu_processes(procs, index) if proc["gpu_instance_id"] is None]


def mig_model(state, gpu):
    mig = gpu.get("mig")
    if not mig:
        return None
    return state["mig_models"][mig["model"]]


def mig_enabled(gpu):
    return bool(gpu.get("mig") and gpu["mig"]["current"])


def profile_by_name(model, name):
    for profile in model["profiles"]:
        if profile["name"] == name:
            return profile
    return None


def profile_by_id(model, profile_id):
    for profile in model["profiles"]:
        if profile["id"] == profile_id:
            return profile
    return None


def resolve_profile(model, token):
    """A -cgi profile given as id, short name or full name ("9", "3g.40gb", "MIG 3g.40gb")."""
    text = token.strip()
    if text.isdigit():
        return profile_by_id(model, int(text))
    if text.upper().startswith("MIG "):
        text = text[4:].strip()
    return profile_by_name(model, text)


def profile_order(model, name):
    for position, profile in enumerate(model["profiles"]):
        if profile["name"] == name:
            return position
    return len(model["profiles"])


def ordered_instances(model, gpu):
    """GPU instances the way nvidia-smi lists them: by profile (in -lgip order), then by id."""
    return sorted(gpu["mig"]["gpu_instances"], key=lambda gi: (profile_order(model, gi["profile"]), gi["id"]))


def mig_devices(gpu):
    """[(gpu instance, compute instance)] in MIG device index order (by GI id, then CI id)."""
    devices = []
    for gi in sorted(gpu["mig"]["gpu_instances"], key=lambda item: item["id"]):
        for ci in sorted(gi["compute_instances"], key=lambda item: item["id"]):
            devices.append((gi, ci))
    return devices


def short_version(version):
    """'550.127.05' -> '550.127', as "NVML library version:" prints it."""
    return ".".join(str(version).split(".")[:2])


def cuda_version_for(state):
    driver = state["driver"]
    if driver.get("cuda_version"):
        return driver["cuda_version"]
    try:
        branch = int(str(driver["library_version"]).split(".", 1)[0])
    except (TypeError, ValueError):
        return "N/A"
    for first, cuda in CUDA_BY_BRANCH:
        if branch >= first:
            return cuda
    return "N/A"


# ---------------------------------------------------------------- MIG placement

def ranges_overlap(start_a, size_a, start_b, size_b):
    return start_a < start_b + size_b and start_b < start_a + size_a


def occupied(gpu):
    return [(gi["placement"]["start"], gi["placement"]["size"]) for gi in gpu["mig"]["gpu_instances"]]


def placement_is_free(gpu, start, size):
    return not any(ranges_overlap(start, size, s, z) for s, z in occupied(gpu))


def placement_cost(model, profile, placement):
    """How many placements of the other profiles a placement would block.

    The driver fills the slices that fewest other profiles can use first: this reproduces
    the instance ids and placements of NVIDIA's published transcripts (seven 1g instances
    get ids 13, 11, 12, 7, 8, 9, 10 on an 8-slice GPU; a 3g instance goes to slice 4 first)."""
    cost = 0
    for other in model["profiles"]:
        if other["name"] == profile["name"]:
            continue
        for spot in other["placements"]:
            if ranges_overlap(placement["start"], placement["size"], spot["start"], spot["size"]):
                cost += 1
    return cost


def gpu_instance_id(model, gpu, placement):
    """GPU instance ids follow the slice tree: the whole GPU is 0, its halves 1-2, quarters 3-6,
    eighths 7-14 (A30: quarters 3-6); other shapes take the lowest free id."""
    slices, start, size = model["memory_slices"], placement["start"], placement["size"]
    used = set(gi["id"] for gi in gpu["mig"]["gpu_instances"])
    if size and slices % size == 0 and start % size == 0:
        parts = slices // size
        if parts & (parts - 1) == 0:
            candidate = parts - 1 + start // size
            if candidate not in used:
                return candidate
    candidate = 0
    while candidate in used:
        candidate += 1
    return candidate


def gpu_instance_problem(model, gpu, profile, start=None):
    """(rc, placement): rc is 0 with the placement the driver would use, or an NVML error code."""
    if start is not None:
        spots = [spot for spot in profile["placements"] if spot["start"] == start]
        if not spots:
            return RC_INVALID_ARGUMENT, None
    else:
        spots = list(profile["placements"])
    same = [gi for gi in gpu["mig"]["gpu_instances"] if gi["profile"] == profile["name"]]
    if len(same) >= profile["max_instances"]:
        return RC_INSUFFICIENT_RESOURCES, None
    used_compute = sum(profile_by_name(model, gi["profile"])["compute_slices"] for gi in gpu["mig"]["gpu_instances"])
    if used_compute + profile["compute_slices"] > model["compute_slices"]:
        return RC_INSUFFICIENT_RESOURCES, None
    free = [spot for spot in spots if placement_is_free(gpu, spot["start"], spot["size"])]
    if not free:
        return RC_INSUFFICIENT_RESOURCES, None
    best = min(free, key=lambda spot: (placement_cost(model, profile, spot), spot["start"]))
    return RC_OK, dict(best)


def mig_uuid(state, gpu, gi_id, ci_id):
    """A new MIG device UUID: real ones change each time an instance is created."""
    state["mig_serial"] = state.get("mig_serial", 0) + 1
    digest = hashlib.sha1(("%s/%d/%d/%d" % (gpu["uuid"], gi_id, ci_id, state["mig_serial"])).encode()).hexdigest()
    return "MIG-%s-%s-5%s-%s-%s" % (digest[:8], digest[8:12], digest[13:16], digest[16:20], digest[20:32])


def add_gpu_instance(model, gpu, profile, placement):
    gi = {"id": gpu_instance_id(model, gpu, placement), "profile": profile["name"],
          "placement": {"start": placement["start"], "size": placement["size"]}, "compute_instances": []}
    gpu["mig"]["gpu_instances"].append(gi)
    return gi


def ci_profile_options(model, gi):
    """Compute-instance profiles of a GPU instance: [{id, name, slices, placements, full}]."""
    profile = profile_by_name(model, gi["profile"])
    slices = profile["compute_slices"]
    options = []
    for size in sorted(CI_PROFILE_IDS):
        if size > slices:
            continue
        if size == slices:
            starts = [0]
        elif size == 3 and slices == 7:
            starts = [0, 4]
        else:
            starts = list(range(0, slices - size + 1, size))
        name = gi["profile"] if size == slices else "%dc.%s" % (size, gi["profile"])
        options.append({"id": CI_PROFILE_IDS[size], "name": name, "slices": size, "starts": starts,
                        "full": size == slices})
    return options


def resolve_ci_profile(model, gi, token):
    text = token.strip()
    if text.upper().startswith("MIG "):
        text = text[4:].strip()
    for option in ci_profile_options(model, gi):
        if (text.isdigit() and option["id"] == int(text)) or option["name"] == text:
            return option
    return None


def compute_instance_problem(gi, option):
    """(rc, start) for one more compute instance of this profile in the GPU instance."""
    taken = [(ci["placement"]["start"], ci["placement"]["size"]) for ci in gi["compute_instances"]]
    for start in option["starts"]:
        if not any(ranges_overlap(start, option["slices"], s, z) for s, z in taken):
            return RC_OK, start
    return RC_INSUFFICIENT_RESOURCES, None


def add_compute_instance(state, gpu, gi, option, start):
    used = set(ci["id"] for ci in gi["compute_instances"])
    ci_id = 0
    while ci_id in used:
        ci_id += 1
    ci = {"id": ci_id, "profile_id": option["id"], "profile": option["name"],
          "placement": {"start": start, "size": option["slices"]}, "uuid": mig_uuid(state, gpu, gi["id"], ci_id)}
    gi["compute_instances"].append(ci)
    return ci


def create_gpu_instances(state, gpu, index, tokens, default_ci, out):
    """nvidia-smi mig -cgi on one GPU; stops at the first failure as the real one does."""
    model = mig_model(state, gpu)
    for token in tokens:
        name, _sep, start_text = token.partition(":")
        profile = resolve_profile(model, name)
        rc, placement = RC_INVALID_ARGUMENT, None
        if profile is not None and (not start_text or start_text.strip().isdigit()):
            start = int(start_text) if start_text else None
            rc, placement = gpu_instance_problem(model, gpu, profile, start)
        if rc != RC_OK:
            out.say("Unable to create a GPU instance on GPU %2d using profile %s: %s" % (index, name.strip(), NVML_TEXT[rc]))
            out.say("Failed to create GPU instances: %s" % NVML_TEXT[rc])
            out.fail(rc)
            return
        gi = add_gpu_instance(model, gpu, profile, placement)
        out.say("Successfully created GPU instance ID %2d on GPU %2d using profile MIG %s (ID %2d)"
                % (gi["id"], index, profile["name"], profile["id"]))
        if default_ci:
            option = [item for item in ci_profile_options(model, gi) if item["full"]][0]
            ci = add_compute_instance(state, gpu, gi, option, 0)
            out.say("Successfully created compute instance ID %2d on GPU %2d GPU instance ID %2d using profile MIG %s (ID %2d)"
                    % (ci["id"], index, gi["id"], ci["profile"], ci["profile_id"]))


# ---------------------------------------------------------------- driver and GPU lifecycle

def check_driver(state):
    """Raises what nvidia-smi prints when it cannot talk to the driver."""
    if state is None:
        raise SmiError(NO_DRIVER, RC_DRIVER_NOT_LOADED)
    driver = state["driver"]
    library, kernel = driver.get("library_version"), driver.get("kernel_module_version")
    if not library:
        raise SmiError(NO_LIBRARY, RC_LIBRARY_NOT_FOUND)
    if not kernel:
        raise SmiError(NO_DRIVER, RC_DRIVER_NOT_LOADED)
    if library != kernel:
        append_kernel_log(state, [
            "NVRM: API mismatch: the client has the version %s, but" % library,
            "NVRM: this kernel module has the version %s.  Please" % kernel,
            "NVRM: make sure that this kernel module and all NVIDIA driver",
            "NVRM: components have the same version."])
        raise SmiError("Failed to initialize NVML: Driver/library version mismatch\nNVML library version: %s"
                       % short_version(library), RC_VERSION_MISMATCH)


def reinitialize_gpu(state, gpu, keep_settings):
    """What a GPU looks like after a reset, module reload or reboot."""
    mig = gpu.get("mig")
    if mig:
        mig["current"] = mig["pending"]
        mig["gpu_instances"] = []
    ecc = gpu.get("ecc")
    if ecc:
        ecc["volatile_corrected"] = 0
        ecc["volatile_uncorrected"] = 0
    if not keep_settings:
        gpu["persistence_mode"] = False
        gpu["compute_mode"] = "Default"


def repair_fails(state, step):
    """state["repair"]["reset_fails"] / ["reboot_fails"]: a scenario's GPU that a reset or a reboot does not bring
    back (docs: sim/README.md, "Repairs")."""
    return bool((state.get("repair") or {}).get("%s_fails" % step))


def load_kernel_module(state):
    """The module loads with the installed library's version; GPUs come up fresh (a lost GPU stays lost when the
    state says reboots fail)."""
    driver = state["driver"]
    driver["kernel_module_version"] = driver.get("library_version") or None
    lost = set(driver.get("lost_on_load") or [])
    if repair_fails(state, "reboot"):
        lost |= set(position for position, gpu in enumerate(state["gpus"]) if gpu.get("lost"))
    for position, gpu in enumerate(state["gpus"]):
        gpu["lost"] = position in lost
        reinitialize_gpu(state, gpu, keep_settings=bool(state.get("reboot_keeps_settings")))
    if driver["kernel_module_version"]:
        append_kernel_log(state, ["NVRM: loading NVIDIA UNIX x86_64 Kernel Module  %s  Release Build  (gpufleet-sim)"
                                  % driver["kernel_module_version"]])


# ---------------------------------------------------------------- arguments

TOP_FLAGS = {"-L": "list", "--list-gpus": "list", "-q": "query", "--query": "query", "-x": "xml",
             "--xml-format": "xml", "-r": "reset", "--gpu-reset": "reset", "-h": "help", "--help": "help",
             "--sim-boot": "sim_boot", "--sim-persistenced": "sim_persistenced",
             "--sim-remove-library": "sim_remove_library", "--sim-reload-modules": "sim_reload_modules",
             "--sim-state": "sim_state"}
TOP_VALUES = {"-i": "id", "--id": "id", "-pm": "pm", "--persistence-mode": "pm", "-c": "compute_mode",
              "--compute-mode": "compute_mode", "-mig": "mig", "--multi-instance-gpu": "mig",
              "--sim-install-library": "sim_install_library", "--lost-after-load": "lost_after_load",
              "--query-gpu": "query_gpu", "--query-compute-apps": "query_apps", "--format": "format"}
MIG_FLAGS = {"-lgip": "lgip", "--list-gpu-instance-profiles": "lgip",
             "-lgipp": "lgipp", "--list-gpu-instance-possible-placements": "lgipp",
             "-lgi": "lgi", "--list-gpu-instances": "lgi", "-lci": "lci", "--list-compute-instances": "lci",
             "-lcip": "lcip", "--list-compute-instance-profiles": "lcip",
             "-C": "default_ci", "--default-compute-instance": "default_ci",
             "-dci": "dci", "--destroy-compute-instance": "dci", "-dgi": "dgi", "--destroy-gpu-instance": "dgi",
             "-h": "help", "--help": "help"}
MIG_VALUES = {"-i": "id", "--id": "id", "-cgi": "cgi", "--create-gpu-instance": "cgi",
              "-gi": "gi", "--gpu-instance-id": "gi", "-ci": "ci", "--compute-instance-id": "ci"}
MIG_OPTIONAL_VALUES = {"-cci": "cci", "--create-compute-instance": "cci"}


def parse_options(argv, flags, values, optional_values=None):
    """{name: True or value} from nvidia-smi style arguments ("-i 0", "--id=0")."""
    optional_values = optional_values or {}
    options, position = {}, 0
    while position < len(argv):
        word = argv[position]
        key, inline = (word.split("=", 1) + [None])[:2] if word.startswith("--") else (word, None)
        position += 1
        if key in flags and inline is None:
            options[flags[key]] = True
        elif key in values or key in optional_values:
            name = values.get(key) or optional_values[key]
            if inline is None and position < len(argv) and not argv[position].startswith("-"):
                inline = argv[position]
                position += 1
            if inline is None and key in values:
                raise SmiError(INVALID_COMBINATION, RC_INVALID_ARGUMENT)
            options[name] = inline if inline is not None else True
        else:
            raise SmiError('Option "%s" is not recognized. Please run \'nvidia-smi -h\'.' % word, RC_INVALID_ARGUMENT)
    return options


def id_list(text):
    """'1,2' -> [1, 2]; raises for anything else."""
    try:
        return [int(part) for part in str(text).split(",") if part.strip() != ""]
    except ValueError:
        raise SmiError(INVALID_COMBINATION, RC_INVALID_ARGUMENT)


def selected_gpus(state, id_text):
    """[(index, gpu)] for -i (indexes, PCI bus ids or UUIDs, comma separated); all GPUs without it."""
    gpus = list(enumerate(visible_gpus(state)))
    if id_text is None or id_text is True:
        return gpus
    chosen = []
    for token in str(id_text).split(","):
        token = token.strip()
        match = [(index, gpu) for index, gpu in gpus
                 if (token.isdigit() and index == int(token)) or token.upper() in (gpu["uuid"].upper(), gpu["pci_bus_id"].upper())]
        if not match:
            raise SmiError("No devices were found", RC_NOT_FOUND)
        if match[0] not in chosen:
            chosen.append(match[0])
    return chosen


def on_off(text):
    word = str(text).strip().upper()
    if word in ("1", "ENABLED"):
        return True
    if word in ("0", "DISABLED"):
        return False
    raise SmiError(INVALID_COMBINATION, RC_INVALID_ARGUMENT)


# ---------------------------------------------------------------- device settings

def set_persistence(state, gpus, enable, out):
    word = "Enabled" if enable else "Disabled"
    for _index, gpu in gpus:
        if bool(gpu.get("persistence_mode")) == enable:
            out.say("Persistence mode is already %s for GPU %s." % (word, gpu["pci_bus_id"]))
        else:
            gpu["persistence_mode"] = enable
            out.say("%s persistence mode for GPU %s." % (word, gpu["pci_bus_id"]))
    out.say("All done.")


def set_compute_mode(state, gpus, mode_text, out):
    mode = COMPUTE_MODES.get(str(mode_text).strip().upper())
    if mode is None:
        raise SmiError(INVALID_COMBINATION, RC_INVALID_ARGUMENT)
    for _index, gpu in gpus:
        if gpu.get("compute_mode") == mode:
            out.say("Compute mode is already set to %s for GPU %s." % (mode.upper(), gpu["pci_bus_id"]))
        else:
            gpu["compute_mode"] = mode
            out.say("Set compute mode to %s for GPU %s." % (mode.upper(), gpu["pci_bus_id"]))
    out.say("All done.")


def set_mig_mode(state, gpus, enable, procs, out):
    verb, state_word = ("Enabled", "enable") if enable else ("Disabled", "disable")
    change = state.get("mig_mode_change") or "reset_required"
    for index, gpu in gpus:
        bus = gpu["pci_bus_id"]
        mig = gpu.get("mig")
        if not mig:
            out.say("Unable to %s MIG Mode for GPU %s: Not Supported" % (state_word, bus))
            out.say("Terminating early due to previous errors.")
            out.fail(RC_NOT_SUPPORTED)
            return
        if not enable and mig["gpu_instances"]:
            out.say("Unable to disable MIG Mode for GPU %s: In use by another client" % bus)
            out.say("Terminating early due to previous errors.")
            out.fail(RC_IN_USE)
            return
        mig["pending"] = enable
        if mig["current"] == enable:
            out.say("%s MIG Mode for GPU %s" % (verb, bus))
        elif gpu_processes(procs, index):
            out.say("Warning: MIG mode is in pending %s state for GPU %s:In use by another client" % (state_word, bus))
            out.say(IN_USE_EXPLANATION % bus)
        elif change == "immediate":
            reinitialize_gpu(state, gpu, keep_settings=True)
            out.say("%s MIG Mode for GPU %s" % (verb, bus))
        else:
            out.say("Warning: MIG mode is in pending %s state for GPU %s:Not Supported" % (state_word, bus))
            out.say("Reboot the system or try nvidia-smi --gpu-reset to make MIG mode effective on GPU %s" % bus)
    out.say("All done.")


def reset_targets(state, id_text):
    """[(index, gpu)] that -r resets: -i names visible GPUs by index, PCI bus id or UUID, and a lost GPU by its bus id
    or UUID (index None); without -i, every GPU, lost ones included."""
    visible = list(enumerate(visible_gpus(state)))
    lost = [(None, gpu) for gpu in lost_gpus(state)]
    if id_text is None or id_text is True:
        return visible + lost
    chosen = []
    for token in str(id_text).split(","):
        token = token.strip()
        match = [(index, gpu) for index, gpu in visible if token.isdigit() and index == int(token)]
        match += [(index, gpu) for index, gpu in visible + lost
                  if token.upper() in (gpu["uuid"].upper(), gpu["pci_bus_id"].upper())]
        if not match:
            raise SmiError("No devices were found", RC_NOT_FOUND)
        if match[0] not in chosen:
            chosen.append(match[0])
    return chosen


def reset_failures(state, gpus, out):
    """A state whose resets fail: the real tool's failure text, exit status 15 for a lost GPU, else 255."""
    for _index, gpu in gpus:
        out.say("Unable to reset GPU %s: %s" % (gpu["pci_bus_id"], "GPU is lost" if gpu.get("lost") else "Unknown Error"))
    out.say("Terminating early due to previous errors.")
    out.fail(RC_GPU_LOST if any(gpu.get("lost") for _index, gpu in gpus) else RC_UNKNOWN)


def reset_gpus(state, gpus, procs, out):
    if state.get("mig_mode_change") == "reboot_required":
        for _index, gpu in gpus:
            out.say("Resetting GPU %s is not supported." % gpu["pci_bus_id"])
        out.fail(RC_NOT_SUPPORTED)
        return
    busy = [gpu for index, gpu in gpus if gpu_processes(procs, index)]
    if busy:
        out.say("The following GPUs could not be reset:")
        for gpu in busy:
            out.say("  GPU %s: In use by another client" % gpu["pci_bus_id"])
        out.say("")
        count = "1 device is" if len(busy) == 1 else "%d devices are" % len(busy)
        explanation = RESET_IN_USE_EXPLANATION.replace("this device", "this device" if len(busy) == 1 else "these devices")
        out.say("%s %s" % (count, explanation))
        out.fail(RC_UNKNOWN)
        return
    if repair_fails(state, "reset"):
        reset_failures(state, gpus, out)
        return
    for _index, gpu in gpus:
        reinitialize_gpu(state, gpu, keep_settings=True)
        gpu["lost"] = False
        out.say("GPU %s was successfully reset." % gpu["pci_bus_id"])
    out.say("All done.")


# ---------------------------------------------------------------- listings

def list_gpus(state, gpus, out):
    for index, gpu in gpus:
        out.say("GPU %d: %s (UUID: %s)" % (index, gpu["name"], gpu["uuid"]))
        if mig_enabled(gpu):
            for device, (_gi, ci) in enumerate(mig_devices(gpu)):
                out.say("  MIG %-12sDevice %2d: (UUID: %s)" % (ci["profile"], device, ci["uuid"]))


LGIP_HEADER = (
    "+-----------------------------------------------------------------------------+",
    "| GPU instance profiles:                                                      |",
    "| GPU   Name             ID    Instances   Memory     P2P    SM    DEC   ENC  |",
    "|                              Free/Total   GiB              CE    JPEG  OFA  |",
    "|=============================================================================|",
)
LGIP_RULE = LGIP_HEADER[0]

LGI_HEADER = (
    "+-------------------------------------------------------+",
    "| GPU instances:                                        |",
    "| GPU   Name             Profile  Instance   Placement  |",
    "|                          ID       ID       Start:Size |",
    "|=======================================================|",
)
LGI_RULE = LGI_HEADER[0]

LCI_HEADER = (
    "+--------------------------------------------------------------------+",
    "| Compute instances:                                                 |",
    "| GPU     GPU       Name             Profile   Instance   Placement  |",
    "|       Instance                       ID        ID       Start:Size |",
    "|         ID                                                         |",
    "|====================================================================|",
)
LCI_RULE = LCI_HEADER[0]

LCIP_HEADER = (
    "+--------------------------------------------------------------------------------------+",
    "| Compute instance profiles:                                                           |",
    "| GPU     GPU       Name             Profile  Instances   Exclusive       Shared       |",
    "|       Instance                       ID     Free/Total     SM       DEC   ENC   OFA  |",
    "|         ID                                                          CE    JPEG       |",
    "|======================================================================================|",
)
LCIP_RULE = LCIP_HEADER[0]


def free_instances(model, gpu, profile):
    """How many more instances of a profile fit, placed as the driver would place them."""
    trial = {"mig": {"gpu_instances": [dict(gi) for gi in gpu["mig"]["gpu_instances"]]}}
    count = 0
    while True:
        rc, placement = gpu_instance_problem(model, trial, profile)
        if rc != RC_OK:
            return count
        add_gpu_instance(model, trial, profile, placement)
        count += 1


def list_gpu_instance_profiles(state, gpus, out):
    capable = [(index, gpu) for index, gpu in gpus if gpu.get("mig")]
    if not capable:
        raise SmiError(NO_MIG_DEVICES, RC_NOT_FOUND)
    out.lines.extend(LGIP_HEADER)
    for index, gpu in capable:
        model = mig_model(state, gpu)
        for profile in model["profiles"]:
            free = free_instances(model, gpu, profile) if mig_enabled(gpu) else profile["max_instances"]
            out.say("|%4d  %-16s%4d%8s        %-11s%-7s%-7s%-6s%-4s|" % (
                index, "MIG " + profile["name"], profile["id"], "%d/%d" % (free, profile["max_instances"]),
                "%.2f" % (profile["memory_mib"] / 1024.0), "No", profile["sm"], profile["dec"], profile["enc"]))
            out.say("|%s%2s     %-6s%-4s|" % (" " * 60, profile["ce"], profile["jpeg"], profile["ofa"]))
            out.say(LGIP_RULE)


def list_placements(state, gpus, out):
    capable = [(index, gpu) for index, gpu in gpus if gpu.get("mig")]
    if not capable:
        raise SmiError(NO_MIG_DEVICES, RC_NOT_FOUND)
    for index, gpu in capable:
        for profile in mig_model(state, gpu)["profiles"]:
            starts = ",".join(str(spot["start"]) for spot in profile["placements"])
            label = "Placements:" if len(profile["placements"]) > 1 else "Placement :"
            size = profile["placements"][0]["size"]
            out.say("GPU %2d Profile ID %2d %s {%s}:%d" % (index, profile["id"], label, starts, size))


def mig_targets(gpus):
    targets = [(index, gpu) for index, gpu in gpus if mig_enabled(gpu)]
    if not targets:
        raise SmiError(NO_MIG_DEVICES, RC_NOT_FOUND)
    return targets


def chosen_instances(state, gpu, gi_ids):
    model = mig_model(state, gpu)
    return [gi for gi in ordered_instances(model, gpu) if gi_ids is None or gi["id"] in gi_ids]


def list_gpu_instances(state, gpus, options, out):
    gi_ids = id_list(options["gi"]) if options.get("gi") not in (None, True) else None
    rows = []
    for index, gpu in mig_targets(gpus):
        for gi in chosen_instances(state, gpu, gi_ids):
            profile = profile_by_name(mig_model(state, gpu), gi["profile"])
            rows.append("|%4d  %-16s%6d%9d%13s     |" % (
                index, "MIG " + gi["profile"], profile["id"], gi["id"],
                "%d:%d" % (gi["placement"]["start"], gi["placement"]["size"])))
    if not rows:
        raise SmiError("No GPU instances found: Not Found", RC_NOT_FOUND)
    out.lines.extend(LGI_HEADER)
    for row in rows:
        out.say(row)
        out.say(LGI_RULE)


def list_compute_instances(state, gpus, options, out):
    gi_ids = id_list(options["gi"]) if options.get("gi") not in (None, True) else None
    rows = []
    for index, gpu in mig_targets(gpus):
        for gi in chosen_instances(state, gpu, gi_ids):
            for ci in sorted(gi["compute_instances"], key=lambda item: item["id"]):
                rows.append("|%4d%7d       %-16s%6d%10d%13s     |" % (
                    index, gi["id"], "MIG " + ci["profile"], ci["profile_id"], ci["id"],
                    "%d:%d" % (ci["placement"]["start"], ci["placement"]["size"])))
    if not rows:
        raise SmiError("No compute instances found: Not Found", RC_NOT_FOUND)
    out.lines.extend(LCI_HEADER)
    for row in rows:
        out.say(row)
        out.say(LCI_RULE)


def list_compute_instance_profiles(state, gpus, options, out):
    gi_ids = id_list(options["gi"]) if options.get("gi") not in (None, True) else None
    rows = []
    for index, gpu in mig_targets(gpus):
        model = mig_model(state, gpu)
        for gi in sorted(chosen_instances(state, gpu, gi_ids), key=lambda item: item["id"]):
            profile = profile_by_name(model, gi["profile"])
            for option in ci_profile_options(model, gi):
                taken = [(ci["placement"]["start"], ci["placement"]["size"]) for ci in gi["compute_instances"]]
                free = sum(1 for start in option["starts"]
                           if not any(ranges_overlap(start, option["slices"], s, z) for s, z in taken))
                sms = profile["sm"] * option["slices"] // profile["compute_slices"]
                rows.append(("|%4d%7d       %-21s%-7s%-14s%-10s%-6s%-6s%-4s|" % (
                    index, gi["id"], "MIG " + option["name"], "%d%s" % (option["id"], "*" if option["full"] else ""),
                    "%d/%d" % (free, len(option["starts"])), sms, profile["dec"], profile["enc"], profile["ofa"]),
                    "|%s%-6s%-6s    |" % (" " * 70, profile["ce"], profile["jpeg"])))
    if not rows:
        raise SmiError("No GPU instances found: Not Found", RC_NOT_FOUND)
    out.lines.extend(LCIP_HEADER)
    for first, second in rows:
        out.say(first)
        out.say(second)
        out.say(LCIP_RULE)


# ---------------------------------------------------------------- MIG changes

def compute_instance_in_use(procs, index, gi, ci):
    return any(proc["gpu_instance_id"] == gi["id"] and proc["compute_instance_id"] in (None, ci["id"])
               for proc in gpu_processes(procs, index))


def blocked_instance_ids(procs, index):
    return set(proc["gpu_instance_id"] for proc in gpu_processes(procs, index) if proc["gpu_instance_id"] is not None)


def create_gpu_instances_command(state, gpus, options, procs, out):
    tokens = [token for token in str(options["cgi"]).split(",") if token.strip()]
    if not tokens:
        raise SmiError(INVALID_COMBINATION, RC_INVALID_ARGUMENT)
    for index, gpu in mig_targets(gpus):
        if whole_gpu_processes(procs, index):
            out.say("Unable to create a GPU instance on GPU %2d using profile %s: In use by another client"
                    % (index, tokens[0].partition(":")[0].strip()))
            out.say("Failed to create GPU instances: In use by another client")
            out.fail(RC_IN_USE)
            return
        create_gpu_instances(state, gpu, index, tokens, bool(options.get("default_ci")), out)
        if out.rc != RC_OK:
            return


def create_compute_instances_command(state, gpus, options, procs, out):
    tokens = [] if options["cci"] is True else [t for t in str(options["cci"]).split(",") if t.strip()]
    gi_ids = id_list(options["gi"]) if options.get("gi") not in (None, True) else None
    done_any = False
    for index, gpu in mig_targets(gpus):
        model = mig_model(state, gpu)
        for gi in chosen_instances(state, gpu, gi_ids):
            done_any = True
            for token in tokens or [None]:
                option = ([item for item in ci_profile_options(model, gi) if item["full"]][0] if token is None
                          else resolve_ci_profile(model, gi, token))
                rc, start = (RC_INVALID_ARGUMENT, None) if option is None else compute_instance_problem(gi, option)
                if rc != RC_OK:
                    out.say("Unable to create a compute instance on GPU %2d GPU instance ID %2d using profile %s: %s"
                            % (index, gi["id"], token if token is not None else option["id"], NVML_TEXT[rc]))
                    out.say("Failed to create compute instances: %s" % NVML_TEXT[rc])
                    out.fail(rc)
                    return
                ci = add_compute_instance(state, gpu, gi, option, start)
                out.say("Successfully created compute instance ID %2d on GPU %2d GPU instance ID %2d using profile MIG %s (ID %2d)"
                        % (ci["id"], index, gi["id"], ci["profile"], ci["profile_id"]))
    if not done_any:
        out.say("Failed to create compute instances: Not Found")
        out.fail(RC_NOT_FOUND)


def destroy_compute_instances_command(state, gpus, options, procs, out):
    gi_ids = id_list(options["gi"]) if options.get("gi") not in (None, True) else None
    ci_ids = id_list(options["ci"]) if options.get("ci") not in (None, True) else None
    found, refused = False, False
    for index, gpu in mig_targets(gpus):
        busy_all = bool(whole_gpu_processes(procs, index))
        for gi in chosen_instances(state, gpu, gi_ids):
            for ci in sorted(gi["compute_instances"], key=lambda item: item["id"]):
                if ci_ids is not None and ci["id"] not in ci_ids:
                    continue
                found = True
                if busy_all or compute_instance_in_use(procs, index, gi, ci):
                    refused = True
                    out.say("Unable to destroy compute instance ID %2d from GPU %2d GPU instance ID %2d: In use by another client"
                            % (ci["id"], index, gi["id"]))
                    continue
                gi["compute_instances"].remove(ci)
                out.say("Successfully destroyed compute instance ID %2d from GPU %2d GPU instance ID %2d" % (ci["id"], index, gi["id"]))
    if refused:
        out.say("Failed to destroy compute instances: In use by another client")
        out.fail(RC_IN_USE)
    elif not found:
        out.say("Failed to destroy compute instances: Not Found")
        out.fail(RC_NOT_FOUND)


def destroy_gpu_instances_command(state, gpus, options, procs, out):
    gi_ids = id_list(options["gi"]) if options.get("gi") not in (None, True) else None
    found, refused = False, False
    for index, gpu in mig_targets(gpus):
        busy_all = bool(whole_gpu_processes(procs, index))
        busy = blocked_instance_ids(procs, index)
        for gi in chosen_instances(state, gpu, gi_ids):
            found = True
            if busy_all or gi["id"] in busy or gi["compute_instances"]:
                refused = True
                out.say("Unable to destroy GPU instance ID %2d from GPU %2d: In use by another client" % (gi["id"], index))
                continue
            gpu["mig"]["gpu_instances"].remove(gi)
            out.say("Successfully destroyed GPU instance ID %2d from GPU %2d" % (gi["id"], index))
    if refused:
        out.say("Failed to destroy GPU instances: In use by another client")
        out.fail(RC_IN_USE)
    elif not found:
        out.say("Failed to destroy GPU instances: Not Found")
        out.fail(RC_NOT_FOUND)


# ---------------------------------------------------------------- nvidia-smi -q -x

def _element(tag, content, depth):
    indent = "\t" * depth
    name = tag.split(" ", 1)[0]
    if isinstance(content, list):
        inner = "".join(_element(child, value, depth + 1) for child, value in content)
        return "%s<%s>\n%s%s</%s>\n" % (indent, tag, inner, indent, name)
    return "%s<%s>%s</%s>\n" % (indent, tag, escape("N/A" if content is None else str(content)), name)


def _flag_word(value, yes="Enabled", no="Disabled"):
    if value is None:
        return "N/A"
    return yes if value else no


def _mib(value):
    return "N/A" if value is None else "%d MiB" % value


def _watts(value):
    return "N/A" if value is None else "%.2f W" % value


def _mhz(value):
    return "N/A" if value is None else "%d MHz" % value


def _celsius(value):
    return "N/A" if value is None else "%d C" % value


def _percent(value):
    return "N/A" if value is None else "%d %%" % value


def memory_used(gpu, procs):
    return (gpu["memory"].get("idle_used_mib") or 0) + sum(proc["used_mib"] for proc in procs)


def _memory_block(total, reserved, used):
    free = max(0, total - reserved - used)
    return [("total", _mib(total)), ("reserved", _mib(reserved)), ("used", _mib(used)), ("free", _mib(free))]


def _mig_device_xml(model, gpu, device, gi, ci, procs):
    profile = profile_by_name(model, gi["profile"])
    used = sum(proc["used_mib"] for proc in procs if proc["gpu_instance_id"] == gi["id"])
    sms = profile["sm"] * ci["placement"]["size"] // profile["compute_slices"]
    return ("mig_device", [
        ("index", device), ("gpu_instance_id", gi["id"]), ("compute_instance_id", ci["id"]),
        ("device_attributes", [("shared", [
            ("multiprocessor_count", sms), ("copy_engine_count", profile["ce"]), ("encoder_count", profile["enc"]),
            ("decoder_count", profile["dec"]), ("ofa_count", profile["ofa"]), ("jpg_count", profile["jpeg"])])]),
        ("ecc_error_count", [("volatile_count", [("sram_uncorrectable", 0)])]),
        ("fb_memory_usage", _memory_block(profile["memory_mib"], 0, used)),
        ("bar1_memory_usage", [("total", _mib(32767)), ("used", _mib(0)), ("free", _mib(32767))]),
    ])


def _mig_xml(state, gpu, procs):
    mig = gpu.get("mig")
    if not mig:
        return [("mig_mode", [("current_mig", "N/A"), ("pending_mig", "N/A")]), ("mig_devices", "None")]
    devices = mig_devices(gpu) if mig["current"] else []
    model = mig_model(state, gpu)
    listed = [_mig_device_xml(model, gpu, n, gi, ci, procs) for n, (gi, ci) in enumerate(devices)]
    return [("mig_mode", [("current_mig", _flag_word(mig["current"])), ("pending_mig", _flag_word(mig["pending"]))]),
            ("mig_devices", listed or "None")]


def _pci_xml(gpu):
    bus = gpu["pci_bus_id"]
    pcie = gpu.get("pcie") or {}
    return [
        ("pci_bus", bus[9:11]), ("pci_device", bus[12:14]), ("pci_domain", bus[4:8]),
        ("pci_base_class", 3), ("pci_sub_class", 2), ("pci_device_id", gpu.get("pci_device_id")),
        ("pci_bus_id", bus), ("pci_sub_system_id", gpu.get("pci_sub_system_id")),
        ("pci_gpu_link_info", [
            ("pcie_gen", [("max_link_gen", pcie.get("gen_max")), ("current_link_gen", pcie.get("gen_current")),
                          ("device_current_link_gen", pcie.get("gen_current")),
                          ("max_device_link_gen", pcie.get("gen_max")), ("max_host_link_gen", pcie.get("gen_max"))]),
            ("link_widths", [("max_link_width", "%dx" % pcie["width_max"] if pcie.get("width_max") else None),
                             ("current_link_width", "%dx" % pcie["width_current"] if pcie.get("width_current") else None)]),
        ]),
        ("pci_bridge_chip", [("bridge_chip_type", None), ("bridge_chip_fw", None)]),
        ("replay_counter", pcie.get("replay_counter", 0)), ("replay_rollover_counter", 0),
        ("tx_util", "0 KB/s"), ("rx_util", "0 KB/s"),
        ("atomic_caps_outbound", None), ("atomic_caps_inbound", None),
    ]


def _ecc_counts_xml(corrected, uncorrected, supported):
    if not supported:
        corrected = uncorrected = None
    return [("sram_correctable", 0 if supported else None), ("sram_uncorrectable_parity", 0 if supported else None),
            ("sram_uncorrectable_secded", 0 if supported else None), ("dram_correctable", corrected),
            ("dram_uncorrectable", uncorrected)]


def _ecc_xml(gpu):
    ecc = gpu.get("ecc")
    supported = bool(ecc and ecc.get("enabled"))
    ecc = ecc or {}
    return [
        ("ecc_mode", [("current_ecc", _flag_word(ecc.get("enabled"))), ("pending_ecc", _flag_word(ecc.get("enabled")))]),
        ("ecc_errors", [
            ("volatile", _ecc_counts_xml(ecc.get("volatile_corrected"), ecc.get("volatile_uncorrected"), supported)),
            ("aggregate", _ecc_counts_xml(ecc.get("aggregate_corrected"), ecc.get("aggregate_uncorrected"), supported)),
        ]),
    ]


def _retired_pages_xml(gpu):
    pages = gpu.get("retired_pages") or {}
    return ("retired_pages", [
        ("multiple_single_bit_retirement", [("retired_count", pages.get("single_bit")), ("retired_pagelist", None)]),
        ("double_bit_retirement", [("retired_count", pages.get("double_bit")), ("retired_pagelist", None)]),
        ("pending_blacklist", _flag_word(pages.get("pending"), "Yes", "No") if pages else None),
        ("pending_retirement", _flag_word(pages.get("pending"), "Yes", "No") if pages else None),
    ])


def _remapped_rows_xml(gpu):
    rows = gpu.get("remapped_rows")
    if not rows or mig_enabled(gpu):
        return ("remapped_rows", "N/A")
    return ("remapped_rows", [
        ("remapped_row_corr", rows.get("correctable", 0)), ("remapped_row_unc", rows.get("uncorrectable", 0)),
        ("remapped_row_pending", _flag_word(rows.get("pending"), "Yes", "No")),
        ("remapped_row_failure", _flag_word(rows.get("failure"), "Yes", "No")),
    ])


def _temperature_xml(gpu):
    temps = gpu.get("temperature") or {}
    return [
        ("gpu_temp", _celsius(temps.get("gpu_c"))), ("gpu_temp_tlimit", None),
        ("gpu_temp_max_threshold", _celsius(temps.get("shutdown_c"))),
        ("gpu_temp_slow_threshold", _celsius(temps.get("slowdown_c"))),
        ("gpu_temp_max_gpu_threshold", _celsius(temps.get("max_operating_c"))),
        ("gpu_target_temperature", None), ("memory_temp", _celsius(temps.get("memory_c"))),
        ("gpu_temp_max_mem_threshold", _celsius(temps.get("max_memory_c"))),
    ]


def _power_xml(gpu):
    power = gpu.get("power") or {}
    return [
        ("power_state", gpu.get("performance_state")), ("power_draw", _watts(power.get("draw_w"))),
        ("current_power_limit", _watts(power.get("limit_w"))), ("requested_power_limit", _watts(power.get("limit_w"))),
        ("default_power_limit", _watts(power.get("default_limit_w"))),
        ("min_power_limit", _watts(power.get("min_limit_w"))), ("max_power_limit", _watts(power.get("max_limit_w"))),
    ]


def _clocks_xml(gpu, prefix):
    clocks = gpu.get("clocks") or {}
    return [("graphics_clock", _mhz(clocks.get(prefix + "graphics_mhz"))), ("sm_clock", _mhz(clocks.get(prefix + "sm_mhz"))),
            ("mem_clock", _mhz(clocks.get(prefix + "memory_mhz"))), ("video_clock", _mhz(clocks.get(prefix + "video_mhz")))]


def _process_xml(proc):
    return ("process_info", [
        ("gpu_instance_id", proc["gpu_instance_id"]), ("compute_instance_id", proc["compute_instance_id"]),
        ("pid", proc["pid"]), ("type", proc["type"]), ("process_name", proc["name"]),
        ("used_memory", _mib(proc["used_mib"])),
    ])


def gpu_xml(state, gpu, procs):
    """One <gpu> element, in the order and shape of a DTD v12 report."""
    memory = gpu["memory"]
    utilization = gpu.get("utilization") or {}
    reasons = set(gpu.get("clock_event_reasons") or [])
    in_mig = mig_enabled(gpu)
    fabric = gpu.get("fabric") or {}
    fields = [
        ("product_name", gpu["name"]), ("product_brand", gpu.get("brand", "NVIDIA")),
        ("product_architecture", gpu.get("architecture")), ("display_mode", "Disabled"), ("display_active", "Disabled"),
        ("persistence_mode", _flag_word(gpu.get("persistence_mode"))), ("addressing_mode", "None"),
    ] + _mig_xml(state, gpu, procs) + [
        ("accounting_mode", "Disabled"), ("accounting_mode_buffer_size", 4000),
        ("driver_model", [("current_dm", None), ("pending_dm", None)]),
        ("serial", gpu.get("serial")), ("uuid", gpu["uuid"]), ("minor_number", gpu.get("minor_number", 0)),
        ("vbios_version", gpu.get("vbios_version")), ("multigpu_board", "No"), ("board_id", gpu.get("board_id")),
        ("board_part_number", gpu.get("board_part_number")), ("gpu_part_number", gpu.get("gpu_part_number")),
        ("gpu_module_id", gpu.get("module_id", 1)),
        ("gpu_operation_mode", [("current_gom", None), ("pending_gom", None)]),
        ("gsp_firmware_version", state["driver"]["kernel_module_version"]),
        ("gpu_virtualization_mode", [("virtualization_mode", "None"), ("host_vgpu_mode", None)]),
        ("ibmnpu", [("relaxed_ordering_mode", None)]),
        ("pci", _pci_xml(gpu)),
        ("fan_speed", _percent(gpu.get("fan_speed_pct"))), ("performance_state", gpu.get("performance_state")),
        ("clocks_event_reasons", [("clocks_event_reason_" + reason, "Active" if reason in reasons else "Not Active")
                                  for reason in CLOCK_EVENT_REASONS]),
        ("sparse_operation_mode", None),
        ("fb_memory_usage", _memory_block(memory["total_mib"], memory.get("reserved_mib") or 0, memory_used(gpu, procs))),
        ("bar1_memory_usage", [("total", _mib(memory.get("bar1_total_mib"))), ("used", _mib(1)),
                               ("free", _mib((memory.get("bar1_total_mib") or 1) - 1))]),
        ("cc_protected_memory_usage", [("total", _mib(0)), ("used", _mib(0)), ("free", _mib(0))]),
        ("compute_mode", gpu.get("compute_mode", "Default")),
        ("utilization", [("gpu_util", None if in_mig else _percent(utilization.get("gpu_pct"))),
                         ("memory_util", None if in_mig else _percent(utilization.get("memory_pct"))),
                         ("encoder_util", None if in_mig else _percent(0)),
                         ("decoder_util", None if in_mig else _percent(0))]),
        ("encoder_stats", [("session_count", 0), ("average_fps", 0), ("average_latency", 0)]),
        ("fbc_stats", [("session_count", 0), ("average_fps", 0), ("average_latency", 0)]),
    ] + _ecc_xml(gpu) + [
        _retired_pages_xml(gpu), _remapped_rows_xml(gpu),
        ("temperature", _temperature_xml(gpu)),
        ("supported_gpu_target_temp", [("gpu_target_temp_min", None), ("gpu_target_temp_max", None)]),
        ("gpu_power_readings", _power_xml(gpu)),
        ("clocks", _clocks_xml(gpu, "")),
        ("applications_clocks", [("graphics_clock", _mhz((gpu.get("clocks") or {}).get("max_graphics_mhz"))),
                                 ("mem_clock", _mhz((gpu.get("clocks") or {}).get("max_memory_mhz")))]),
        ("max_clocks", _clocks_xml(gpu, "max_")),
        ("clock_policy", [("auto_boost", None), ("auto_boost_default", None)]),
        ("fabric", [("state", fabric.get("state")), ("status", fabric.get("status")),
                    ("cliqueId", fabric.get("clique_id")), ("clusterUuid", fabric.get("cluster_uuid"))]),
        ("processes", [_process_xml(proc) for proc in procs]),
        ("accounted_processes", []),
    ]
    return _element("gpu id=%s" % quoteattr(gpu["pci_bus_id"]), fields, 1)


def query_xml(state, gpus, procs):
    head = [
        '<?xml version="1.0" ?>',
        '<!DOCTYPE nvidia_smi_log SYSTEM "nvsmi_device_v12.dtd">',
        "<nvidia_smi_log>",
        "\t<timestamp>%s</timestamp>" % time.strftime("%a %b %d %H:%M:%S %Y"),
        "\t<driver_version>%s</driver_version>" % escape(state["driver"]["library_version"]),
        "\t<cuda_version>%s</cuda_version>" % escape(cuda_version_for(state)),
        "\t<attached_gpus>%d</attached_gpus>" % len(visible_gpus(state)),
    ]
    body = "".join(gpu_xml(state, under_load(gpu, gpu_processes(procs, index)), gpu_processes(procs, index))
                   for index, gpu in gpus)
    return "\n".join(head) + "\n" + body + "\n</nvidia_smi_log>"


# ---------------------------------------------------------------- --query-gpu / --query-compute-apps

def _mig_mode_word(gpu, key):
    mig = gpu.get("mig")
    return _flag_word(mig[key]) if mig else None


# field -> (unit, value of one GPU from (state, index, gpu, its processes))
GPU_QUERY_FIELDS = {
    "index": (None, lambda st, i, g, p: i),
    "name": (None, lambda st, i, g, p: g["name"]),
    "uuid": (None, lambda st, i, g, p: g["uuid"]),
    "serial": (None, lambda st, i, g, p: g.get("serial")),
    "pci.bus_id": (None, lambda st, i, g, p: g["pci_bus_id"]),
    "driver_version": (None, lambda st, i, g, p: st["driver"]["library_version"]),
    "vbios_version": (None, lambda st, i, g, p: g.get("vbios_version")),
    "count": (None, lambda st, i, g, p: len(visible_gpus(st))),
    "persistence_mode": (None, lambda st, i, g, p: _flag_word(g.get("persistence_mode"))),
    "compute_mode": (None, lambda st, i, g, p: g.get("compute_mode", "Default")),
    "mig.mode.current": (None, lambda st, i, g, p: _mig_mode_word(g, "current")),
    "mig.mode.pending": (None, lambda st, i, g, p: _mig_mode_word(g, "pending")),
    "memory.total": ("MiB", lambda st, i, g, p: g["memory"]["total_mib"]),
    "memory.reserved": ("MiB", lambda st, i, g, p: g["memory"].get("reserved_mib") or 0),
    "memory.used": ("MiB", lambda st, i, g, p: memory_used(g, p)),
    "memory.free": ("MiB", lambda st, i, g, p: max(0, g["memory"]["total_mib"] - (g["memory"].get("reserved_mib") or 0)
                                                   - memory_used(g, p))),
    "temperature.gpu": (None, lambda st, i, g, p: (g.get("temperature") or {}).get("gpu_c")),
    "power.draw": ("W", lambda st, i, g, p: (g.get("power") or {}).get("draw_w")),
    "power.limit": ("W", lambda st, i, g, p: (g.get("power") or {}).get("limit_w")),
    "utilization.gpu": ("%", lambda st, i, g, p: None if mig_enabled(g) else (g.get("utilization") or {}).get("gpu_pct")),
    "pstate": (None, lambda st, i, g, p: g.get("performance_state")),
    "pcie.link.gen.max": (None, lambda st, i, g, p: (g.get("pcie") or {}).get("gen_max")),
    "pcie.link.gen.current": (None, lambda st, i, g, p: (g.get("pcie") or {}).get("gen_current")),
    "pcie.link.width.max": (None, lambda st, i, g, p: (g.get("pcie") or {}).get("width_max")),
    "pcie.link.width.current": (None, lambda st, i, g, p: (g.get("pcie") or {}).get("width_current")),
}
GPU_QUERY_ALIASES = {"gpu_name": "name", "gpu_uuid": "uuid", "gpu_serial": "serial", "gpu_bus_id": "pci.bus_id",
                     "pcie.link.gen.gpumax": "pcie.link.gen.max"}

APP_QUERY_FIELDS = {
    "pid": (None, lambda st, i, g, p: p["pid"]),
    "process_name": (None, lambda st, i, g, p: p["name"]),
    "name": (None, lambda st, i, g, p: p["name"]),
    "used_gpu_memory": ("MiB", lambda st, i, g, p: p["used_mib"]),
    "used_memory": ("MiB", lambda st, i, g, p: p["used_mib"]),
    "gpu_uuid": (None, lambda st, i, g, p: g["uuid"]),
    "gpu_bus_id": (None, lambda st, i, g, p: g["pci_bus_id"]),
    "gpu_name": (None, lambda st, i, g, p: g["name"]),
    "gpu_serial": (None, lambda st, i, g, p: g.get("serial")),
}


def csv_format(text):
    words = [word.strip() for word in str(text).split(",")]
    if not words or words[0] != "csv" or not set(words[1:]) <= set(["noheader", "nounits"]):
        raise SmiError(INVALID_COMBINATION, RC_INVALID_ARGUMENT)
    return "noheader" not in words, "nounits" not in words


def csv_value(unit, value, units):
    if value is None:
        return "[N/A]"
    if isinstance(value, float):
        value = "%.2f" % value
    return "%s %s" % (value, unit) if unit and units else str(value)


def csv_query(state, rows, fields_text, table, aliases, format_text, out):
    """rows: [(index, gpu, subject)]; prints one CSV line per row as --query-*=... --format=csv does."""
    header, units = csv_format(format_text)
    names = [name.strip() for name in str(fields_text).split(",") if name.strip()]
    fields = []
    for name in names:
        key = aliases.get(name, name)
        if key not in table:
            raise SmiError('Field "%s" is not a valid field to query.' % name, RC_INVALID_ARGUMENT)
        fields.append((name, table[key]))
    if header:
        out.say(", ".join("%s [%s]" % (name, unit) if unit else name for name, (unit, _get) in fields))
    for index, gpu, subject in rows:
        out.say(", ".join(csv_value(unit, get(state, index, gpu, subject), units) for _name, (unit, get) in fields))


# ---------------------------------------------------------------- nvidia-smi (no arguments)

SUMMARY_COMPUTE_MODES = {"Default": "Default", "Exclusive_Process": "E. Process", "Prohibited": "Prohibited"}


def cell(left, right, width):
    """A table cell of exactly width characters: left-aligned and right-aligned text in it."""
    gap = max(1, width - 2 - len(left) - len(right))
    return " %s%s%s " % (left, " " * gap, right)


def _summary_gpu_rows(index, gpu, mine):
    ecc = gpu.get("ecc") or {}
    power = gpu.get("power") or {}
    temps = gpu.get("temperature") or {}
    mig = gpu.get("mig")
    fan = "N/A" if gpu.get("fan_speed_pct") is None else "%d%%" % gpu["fan_speed_pct"]
    temp = "N/A" if temps.get("gpu_c") is None else "%dC" % temps["gpu_c"]
    draw = "N/A" if power.get("draw_w") is None else "%dW" % power["draw_w"]
    cap = "N/A" if power.get("limit_w") is None else "%dW" % power["limit_w"]
    util = "N/A" if mig_enabled(gpu) else "%d%%" % ((gpu.get("utilization") or {}).get("gpu_pct") or 0)
    mig_word = "N/A"
    if mig:
        mig_word = ("Enabled" if mig["current"] else "Disabled") + ("*" if mig["current"] != mig["pending"] else "")
    return [
        "|%s|%s|%s|" % (cell("%3d  %s" % (index, gpu["name"][:28]), "On" if gpu.get("persistence_mode") else "Off", 41),
                        cell(gpu["pci_bus_id"], "Off", 22),
                        cell("", str(ecc.get("volatile_uncorrected", 0)) if ecc.get("enabled") else "N/A", 22)),
        "|%s|%s|%s|" % (cell("%-4s %4s   %-4s" % (fan, temp, gpu.get("performance_state") or "N/A"), "%s / %s" % (draw, cap), 41),
                        cell("", "%dMiB / %dMiB" % (memory_used(gpu, mine), gpu["memory"]["total_mib"]), 22),
                        cell("%6s" % util, SUMMARY_COMPUTE_MODES.get(gpu.get("compute_mode"), "Default"), 22)),
        "|%s|%s|%s|" % (" " * 41, " " * 22, cell("", mig_word, 22)),
    ]


def summary_table(state, gpus, procs, out):
    """What nvidia-smi without arguments prints (the R535 layout)."""
    rule = "+%s+%s+%s+" % ("-" * 41, "-" * 22, "-" * 22)
    out.say(time.strftime("%a %b %d %H:%M:%S %Y"))
    out.say("+" + "-" * 87 + "+")
    version = state["driver"]["library_version"]
    out.say("| %s|" % ("NVIDIA-SMI %-22s Driver Version: %-14s CUDA Version: %s"
                       % (version, version, cuda_version_for(state))).ljust(86))
    out.say("|%s+%s+%s|" % ("-" * 41, "-" * 22, "-" * 22))
    out.say("| GPU  Name                 Persistence-M | Bus-Id        Disp.A | Volatile Uncorr. ECC |")
    out.say("| Fan  Temp   Perf          Pwr:Usage/Cap |         Memory-Usage | GPU-Util  Compute M. |")
    out.say("|                                         |                      |               MIG M. |")
    out.say("|%s+%s+%s|" % ("=" * 41, "=" * 22, "=" * 22))
    for index, gpu in gpus:
        out.lines.extend(_summary_gpu_rows(index, gpu, gpu_processes(procs, index)))
        out.say(rule)
    out.say("")
    out.say("+" + "-" * 87 + "+")
    out.say("|%s|" % cell("Processes:", "", 87))
    out.say("|  GPU   GI   CI        PID   Type   Process name                            GPU Memory |")
    out.say("|        ID   ID                                                             Usage      |")
    out.say("|" + "=" * 87 + "|")
    shown = [proc for index, _gpu in gpus for proc in gpu_processes(procs, index)]
    if not shown:
        out.say("|%s|" % cell(" No running processes found", "", 87))
    for proc in shown:
        out.say("|%s|" % cell(" %4d %4s %4s %10d %6s   %s" % (
            proc["gpu"], "N/A" if proc["gpu_instance_id"] is None else proc["gpu_instance_id"],
            "N/A" if proc["compute_instance_id"] is None else proc["compute_instance_id"],
            proc["pid"], proc["type"], proc["name"][:36]), "%dMiB" % proc["used_mib"], 87))
    out.say("+" + "-" * 87 + "+")


# ---------------------------------------------------------------- simulator-only commands

def sim_boot():
    """At container boot: registrations of dead processes are dropped and, from the second boot
    on (a reboot), the kernel module loads the installed library's version, pending MIG modes
    apply, MIG instances are gone. The first boot is the one the state was written for: a state
    built with a mismatch or with MIG instances keeps them until the host reboots."""
    with StateLock(exclusive=True):
        state = load_state()
        if state is None:
            return RC_OK
        if state.get("boot_count", 0) > 0:
            load_kernel_module(state)
        state["boot_count"] = state.get("boot_count", 0) + 1
        remove_stale_process_files()
        save_state(state)
    return RC_OK


def sim_reload_modules():
    """rmmod + modprobe of the nvidia modules: refused while anything holds the GPUs."""
    with StateLock(exclusive=True):
        state = load_state()
        if state is None:
            raise SmiError("modprobe: FATAL: Module nvidia not found.", 1)
        if live_processes() or persistenced_running():
            raise SmiError("rmmod: ERROR: Module nvidia is in use", 1)
        load_kernel_module(state)
        save_state(state)
    return RC_OK


def sim_install_library(version, lost_after_load):
    """What a driver package's install does: the userspace library changes now, the kernel module
    only when it is loaded again (reboot or module reload)."""
    with StateLock(exclusive=True):
        state = load_state()
        if state is None:
            raise SmiError("no simulator state at %s" % state_path(), 1)
        state["driver"]["library_version"] = version
        state["driver"]["cuda_version"] = None
        state["driver"]["lost_on_load"] = id_list(lost_after_load) if lost_after_load not in (None, True) else []
        save_state(state)
    return RC_OK


def sim_remove_library():
    with StateLock(exclusive=True):
        state = load_state()
        if state is not None:
            state["driver"]["library_version"] = None
            save_state(state)
    return RC_OK


def set_all_persistence(enable):
    with StateLock(exclusive=True):
        state = load_state()
        if state is None:
            return False
        for gpu in state["gpus"]:
            gpu["persistence_mode"] = enable
        save_state(state)
        return True


def sim_persistenced():
    """A stand-in nvidia-persistenced: persistence mode is on while it runs and off once it stops."""
    state = load_state()
    if state is None or not state["driver"].get("kernel_module_version"):
        raise SmiError("nvidia-persistenced failed to initialize. Check syslog for more details.", 1)
    write_pid = persistenced_pid_path()
    if not os.path.isdir(os.path.dirname(write_pid)):
        os.makedirs(os.path.dirname(write_pid))
    with open(write_pid, "w") as handle:
        handle.write("%d\n" % os.getpid())

    def stop(_signum, _frame):
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    set_all_persistence(True)
    try:
        while True:
            time.sleep(3600)
    finally:
        set_all_persistence(False)
        try:
            os.unlink(write_pid)
        except OSError:
            pass


def sim_state():
    state = load_state()
    if state is None:
        raise SmiError("no simulator state at %s" % state_path(), 1)
    state["live_processes"] = live_processes()
    print(json.dumps(state, indent=1, sort_keys=True))
    return RC_OK


def simulator_command(options):
    """The --sim-* commands, or None when options name none."""
    if options.get("sim_boot"):
        return sim_boot()
    if options.get("sim_reload_modules"):
        return sim_reload_modules()
    if options.get("sim_install_library"):
        return sim_install_library(options["sim_install_library"], options.get("lost_after_load"))
    if options.get("sim_remove_library"):
        return sim_remove_library()
    if options.get("sim_persistenced"):
        return sim_persistenced()
    if options.get("sim_state"):
        return sim_state()
    return None


# ---------------------------------------------------------------- dispatch

def mig_command(state, argv, out):
    options = parse_options(argv, MIG_FLAGS, MIG_VALUES, MIG_OPTIONAL_VALUES)
    procs = live_processes()
    gpus = reset_targets(state, options.get("id")) if options.get("reset") else selected_gpus(state, options.get("id"))
    if options.get("lgip"):
        list_gpu_instance_profiles(state, gpus, out)
    elif options.get("lgipp"):
        list_placements(state, gpus, out)
    elif options.get("lgi"):
        list_gpu_instances(state, gpus, options, out)
    elif options.get("lci"):
        list_compute_instances(state, gpus, options, out)
    elif options.get("lcip"):
        list_compute_instance_profiles(state, gpus, options, out)
    elif options.get("cgi"):
        create_gpu_instances_command(state, gpus, options, procs, out)
    elif options.get("cci"):
        create_compute_instances_command(state, gpus, options, procs, out)
    elif options.get("dci"):
        destroy_compute_instances_command(state, gpus, options, procs, out)
    elif options.get("dgi"):
        destroy_gpu_instances_command(state, gpus, options, procs, out)
    else:
        raise SmiError(INVALID_COMBINATION, RC_INVALID_ARGUMENT)


def device_command(state, options, out):
    """The top-level commands; returns the XML text for -q -x, else None."""
    procs = live_processes()
    gpus = reset_targets(state, options.get("id")) if options.get("reset") else selected_gpus(state, options.get("id"))
    if options.get("query"):
        if not options.get("xml"):
            raise SmiError(INVALID_COMBINATION, RC_INVALID_ARGUMENT)
        return query_xml(state, gpus, procs)
    if "query_gpu" in options:
        rows = [(index, gpu, gpu_processes(procs, index)) for index, gpu in gpus]
        csv_query(state, rows, options["query_gpu"], GPU_QUERY_FIELDS, GPU_QUERY_ALIASES, options.get("format"), out)
    elif "query_apps" in options:
        rows = [(index, gpu, proc) for index, gpu in gpus for proc in gpu_processes(procs, index)]
        csv_query(state, rows, options["query_apps"], APP_QUERY_FIELDS, {}, options.get("format"), out)
    elif "pm" in options:
        set_persistence(state, gpus, on_off(options["pm"]), out)
    elif "compute_mode" in options:
        set_compute_mode(state, gpus, options["compute_mode"], out)
    elif "mig" in options:
        set_mig_mode(state, gpus, on_off(options["mig"]), procs, out)
    elif options.get("reset"):
        reset_gpus(state, gpus, procs, out)
    elif options.get("list"):
        list_gpus(state, gpus, out)
    elif set(options) <= set(["id"]):
        summary_table(state, gpus, procs, out)
    else:
        raise SmiError(INVALID_COMBINATION, RC_INVALID_ARGUMENT)
    return None


MIG_CHANGES = ("-cgi", "--create-gpu-instance", "-cci", "--create-compute-instance", "-dci",
               "--destroy-compute-instance", "-dgi", "--destroy-gpu-instance")


def changes_state(argv, options):
    if argv[:1] == ["mig"]:
        return any(word in argv for word in MIG_CHANGES)
    return any(key in options for key in ("pm", "compute_mode", "mig", "reset"))


def report_lost_gpus(state, out):
    for gpu in lost_gpus(state):
        out.errors.append("Unable to determine the device handle for GPU %s: GPU is lost.  "
                          "Reboot the system to recover this GPU" % gpu["pci_bus_id"])
    if out.errors:
        out.fail(RC_GPU_LOST)


TOPOLOGY_LEGEND = """
Legend:

  X    = Self
  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes (e.g., QPI/UPI)
  NODE = Connection traversing PCIe as well as the interconnect between PCIe Host Bridges within a NUMA node
  PHB  = Connection traversing PCIe as well as a PCIe Host Bridge (typically the CPU)
  PXB  = Connection traversing multiple PCIe bridges (without traversing the PCIe Host Bridge)
  PIX  = Connection traversing at most a single PCIe bridge
  NV#  = Connection traversing a bonded set of # NVLinks
"""


def topology_text(state):
    """`nvidia-smi topo -m` of the simulated GPUs, TAB-separated as nvidia-smi prints it: every pair through the
    host bridge (the simulator has no NVLink and no NICs), all on NUMA node 0."""
    names = ["GPU%d" % index for index in range(len(state["gpus"]))]
    cpus = "0-%d" % max(0, (os.cpu_count() or 1) - 1)
    lines = ["\t" + "\t".join(names + ["CPU Affinity", "NUMA Affinity", "GPU NUMA ID"])]
    for row, name in enumerate(names):
        cells = [" X " if column == row else "PHB" for column in range(len(names))]
        lines.append("\t".join([name] + cells + [cpus, "0", "", "N/A"]))
    return "\n".join(lines) + "\n" + TOPOLOGY_LEGEND


def run_nvidia_smi(argv):
    """(stdout text, stderr text, exit status) of one nvidia-smi command."""
    out = Output()
    try:
        if argv[:1] == ["topo"]:
            if argv[1:] != ["-m"]:
                raise SmiError(INVALID_COMBINATION, RC_INVALID_ARGUMENT)
            with StateLock(exclusive=False):
                state = load_state()
                check_driver(state)
            return topology_text(state), "", 0
        options = {} if argv[:1] == ["mig"] else parse_options(argv, TOP_FLAGS, TOP_VALUES)
        sim = simulator_command(options)
        if sim is not None:
            return "", "", sim
        exclusive = changes_state(argv, options)
        with StateLock(exclusive=exclusive):
            state = load_state()
            check_driver(state)
            xml = mig_command(state, argv[1:], out) if argv[:1] == ["mig"] else device_command(state, options, out)
            if exclusive:
                save_state(state)
        report_lost_gpus(state, out)
        if xml is not None:
            return xml + "\n", "\n".join(out.errors) + ("\n" if out.errors else ""), out.rc
    except SmiError as exc:
        out.lines.append(exc.text)
        out.rc = exc.rc
    text = "\n".join(out.lines) + ("\n" if out.lines else "")
    return text, "\n".join(out.errors) + ("\n" if out.errors else ""), out.rc


def main(argv=None):
    stdout, stderr, rc = run_nvidia_smi(list(sys.argv[1:] if argv is None else argv))
    sys.stdout.write(stdout)
    sys.stdout.flush()
    sys.stderr.write(stderr)
    return rc


if __name__ == "__main__":
    sys.exit(main())
