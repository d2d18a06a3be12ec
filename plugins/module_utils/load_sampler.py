# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""One load step on the host (module gpufleet.core.loadstep): start the load in a process group of its own,
bounded by coreutils `timeout` on the host, sample every GPU and process and the host's pressure every
interval, read the kernel log written meanwhile, and stop the whole group at the end, whatever happened.

Target side: standard library only (Python 3.9+). The analysis of a step (did it break, in which layer) is
the controller's (plugin_utils/loadstep/steps.py); this file only measures.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
import os
import re
import shlex
import signal
import subprocess
import threading
import time

from ansible_collections.gpufleet.core.plugins.module_utils.kernel_log import parse_kernel_log
from ansible_collections.gpufleet.core.plugins.module_utils.nvsmi_xml import NvidiaSmiParseError, parse_nvidia_smi_xml

STATE_DIR = "/run/gpufleet-loadstep"
MAX_RECORDS = 100000
MAX_STDERR = 8192
MAX_INVALID_KEPT = 5
MAX_KERNEL_LOG_BYTES = 4 * 1024 * 1024
STOP_GRACE_SECONDS = 5
# beyond the step's own duration, the time a load command has to end by itself before it is stopped
END_GRACE_SECONDS = 3
PRESSURE_FILES = ("cpu", "io", "memory")
_PRESSURE_RE = re.compile(r"^some avg10=(\d+(?:\.\d+)?)")
_ENV_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)")
_EXEC_ARGV = re.compile(r"argv\[\]=(.*?) ;")


class LoadError(Exception):
    """The load cannot be started (a unit without ExecStart=, a command that is not there)."""


# ---------------------------------------------------------------- the load's command line

def unit_exec_start(show_exec_start):
    """argv of the first command of `systemctl show -p ExecStart --value UNIT`."""
    match = _EXEC_ARGV.search(show_exec_start or "")
    if not match:
        raise LoadError("the unit has no ExecStart= to start with N workers (set load.command)")
    return shlex.split(match.group(1))


def unit_environment(show_environment):
    """{name: value} of `systemctl show -p Environment --value UNIT` (space-separated, shell-quoted)."""
    environment = {}
    for item in shlex.split(show_environment or ""):
        name, sep, value = item.partition("=")
        if sep and name:
            environment[name] = value
    return environment


def expand_references(argv, environment):
    """${NAME} and $NAME in the arguments, as systemd expands them from the unit's environment."""
    def value(match):
        return environment.get(match.group(1) or match.group(2), "")
    return [_ENV_REFERENCE.sub(value, argument) for argument in argv]


def service_load(exec_start, environment, concurrency, workers_env=None, workers_arg=None):
    """(argv, environment) that start the service's own command with `concurrency` workers."""
    environment = dict(environment)
    environment["GPUFLEET_WORKERS"] = str(concurrency)
    if workers_env:
        environment[workers_env] = str(concurrency)
    argv = expand_references(exec_start, environment)
    if workers_arg:
        if workers_arg in argv and argv.index(workers_arg) + 1 < len(argv):
            argv[argv.index(workers_arg) + 1] = str(concurrency)
        else:
            argv += [workers_arg, str(concurrency)]
    return argv, environment


def command_load(command, concurrency, seconds):
    """(argv, environment additions) of a load command (docs/loadstep.md, "The load command")."""
    text = command.replace("{concurrency}", str(concurrency)).replace("{duration}", str(seconds))
    return ["/bin/sh", "-c", text], {}


def load_environment(base, additions, concurrency, seconds, step):
    environment = dict(base)
    environment.update(additions)
    environment["GPUFLEET_LOAD_CONCURRENCY"] = str(concurrency)
    environment["GPUFLEET_LOAD_DURATION_SEC"] = str(seconds)
    environment["GPUFLEET_LOAD_STEP"] = str(step)
    return environment


# ---------------------------------------------------------------- what the load prints

def parse_record(line, seconds):
    """One line of the load's output as [t, ok, latency_ms, error, count], or None when it is not a record."""
    try:
        data = json.loads(line)
    except ValueError:
        return None
    if not isinstance(data, dict) or not isinstance(data.get("ok"), bool):
        return None
    latency = data.get("latency_ms")
    if isinstance(latency, bool) or not isinstance(latency, (int, float)) or latency < 0:
        latency = None
    error = data.get("error")
    error = str(error)[:200] if error not in (None, "") else None
    count = data.get("count", 1)
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        count = 1
    return [round(seconds, 3), data["ok"], latency, error, count]


class OutputReader:
    """Reads the load's stdout (records) and stderr (a bounded tail) in threads."""

    def __init__(self, process, started):
        self.records, self.invalid, self.dropped, self.invalid_count = [], [], 0, 0
        self.stderr = b""
        self._started = started
        self._threads = [threading.Thread(target=self._stdout, args=(process.stdout,)),
                         threading.Thread(target=self._stderr, args=(process.stderr,))]
        for thread in self._threads:
            thread.daemon = True
            thread.start()

    def _stdout(self, stream):
        for raw in iter(stream.readline, b""):
            line = raw.decode("utf-8", "replace").strip()
            if not line:
                continue
            record = parse_record(line, time.monotonic() - self._started)
            if record is None:
                self.invalid_count += 1
                if len(self.invalid) < MAX_INVALID_KEPT:
                    self.invalid.append(line[:200])
            elif len(self.records) < MAX_RECORDS:
                self.records.append(record)
            else:
                self.dropped += 1

    def _stderr(self, stream):
        for chunk in iter(lambda: stream.read(4096), b""):
            self.stderr = (self.stderr + chunk)[-MAX_STDERR:]

    def join(self, seconds):
        deadline = time.monotonic() + seconds
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))


# ---------------------------------------------------------------- samples

def read_pressure(read_text):
    """{"cpu_some_avg10", "io_some_avg10", "memory_some_avg10"} from /proc/pressure (None where unreadable)."""
    pressure = {}
    for name in PRESSURE_FILES:
        text = read_text("/proc/pressure/%s" % name)
        match = _PRESSURE_RE.match(text or "")
        pressure["%s_some_avg10" % name] = float(match.group(1)) if match else None
    return pressure


def gpu_sample(gpu):
    """The per-second values of one GPU record of parse_nvidia_smi_xml."""
    memory, power, clocks = gpu["memory"], gpu["power"], gpu["clocks"]
    return {
        "index": gpu["index"], "uuid": gpu["uuid"], "name": gpu["name"], "pci_bus_id": gpu["pci_bus_id"],
        "memory_used_mib": memory["used_mib"], "memory_total_mib": memory["total_mib"],
        "memory_reserved_mib": memory["reserved_mib"],
        "utilization_pct": gpu["utilization"]["gpu_pct"],
        "temperature_c": gpu["temperature"]["gpu_c"], "slowdown_c": gpu["temperature"]["slowdown_c"],
        "power_w": power["draw_w"], "power_limit_w": power["limit_w"],
        "sm_clock_mhz": clocks["sm_mhz"], "max_sm_clock_mhz": clocks["max_sm_mhz"],
        "throttle_reasons": list(gpu["clock_event_reasons"]["active"] or []),
        "ecc_volatile_corrected": gpu["ecc"]["volatile_corrected"],
        "ecc_volatile_uncorrected": gpu["ecc"]["volatile_uncorrected"],
        "processes": [{"pid": process["pid"], "name": process["name"], "used_mib": process["used_memory_mib"]}
                      for process in gpu["processes"]],
    }


def sample_gpus(host, nvidia_smi, timeout):
    """([gpu sample], error text or None) from one `nvidia-smi -q -x`."""
    result = host.run([nvidia_smi, "-q", "-x"], timeout)
    if result.rc != 0:
        return [], "nvidia-smi -q -x: %s" % result.describe_failure()
    try:
        report = parse_nvidia_smi_xml(result.stdout)
    except NvidiaSmiParseError as error:
        return [], "nvidia-smi -q -x: %s" % error
    return [gpu_sample(gpu) for gpu in report["gpus"] if not gpu["lost"]], None


# ---------------------------------------------------------------- the kernel log

def log_sizes(paths):
    sizes = {}
    for path in paths:
        try:
            sizes[path] = os.path.getsize(path)
        except OSError:
            sizes[path] = None
    return sizes


def new_log_text(sizes):
    """What the files gained since sizes were taken (bounded); a file that shrank was rotated: read it all."""
    texts = []
    for path, size in sizes.items():
        try:
            with open(path, "rb") as handle:
                end = os.path.getsize(path)
                start = size if size is not None and size <= end else 0
                handle.seek(max(start, end - MAX_KERNEL_LOG_BYTES))
                texts.append(handle.read(MAX_KERNEL_LOG_BYTES).decode("utf-8", "replace"))
        except (IOError, OSError):
            continue
    return "\n".join(texts)


def kernel_events(text):
    xids, others = parse_kernel_log(text)
    return {"xid": xids, "other": others}


# ---------------------------------------------------------------- the process group

def group_members(pgid, proc="/proc"):
    """Pids of the live processes whose process group is pgid."""
    members = []
    for name in os.listdir(proc):
        if not name.isdigit():
            continue
        try:
            with open(os.path.join(proc, name, "stat")) as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except (IOError, OSError, IndexError):
            continue
        if len(fields) > 2 and fields[0] not in ("Z", "X") and fields[2] == str(pgid):
            members.append(int(name))
    return sorted(members)


def stop_group(pgid, grace=STOP_GRACE_SECONDS):
    """SIGTERM to the group, SIGKILL after grace seconds; returns the pids still alive afterwards."""
    for signum, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 2)):
        try:
            os.killpg(pgid, signum)
        except OSError:
            return group_members(pgid)
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline and group_members(pgid):
            time.sleep(0.1)
        if not group_members(pgid):
            return []
    return group_members(pgid)


def pid_file(run_id, state_dir=STATE_DIR):
    return os.path.join(state_dir, "%s.json" % re.sub(r"[^A-Za-z0-9_.-]", "_", run_id))


def record_group(path, pgid):
    if not os.path.isdir(os.path.dirname(path)):
        os.makedirs(os.path.dirname(path), 0o700)
    with open(path, "w") as handle:
        json.dump({"pgid": pgid, "started": time.time()}, handle)


def stop_recorded(state_dir=STATE_DIR):
    """Stops the load of every recorded run left behind (a play interrupted mid-step); [{pgid, left}]."""
    stopped = []
    try:
        names = sorted(os.listdir(state_dir))
    except OSError:
        return stopped
    for name in names:
        path = os.path.join(state_dir, name)
        try:
            with open(path) as handle:
                pgid = int(json.load(handle)["pgid"])
        except (IOError, OSError, ValueError, KeyError, TypeError):
            pgid = None
        if pgid and group_members(pgid):
            stopped.append({"pgid": pgid, "left": stop_group(pgid)})
        try:
            os.unlink(path)
        except OSError:
            pass
    return stopped


# ---------------------------------------------------------------- one step

class Step:
    """One step: plan (argv, environment, seconds) in, measurements out (run())."""

    def __init__(self, host, plan):
        self.host = host
        self.plan = plan
        self.samples, self.errors = [], []

    def _sample(self, started):
        gpus, error = sample_gpus(self.host, self.plan["nvidia_smi"], self.plan["sample_timeout"])
        if error and len(self.errors) < 20:
            self.errors.append(error)
        self.samples.append({"t": round(time.monotonic() - started, 3), "gpus": gpus,
                             "pressure": read_pressure(self.host.read_text)})

    def _start(self):
        argv = ["timeout", "--kill-after=%d" % STOP_GRACE_SECONDS, str(self.plan["hard_limit"])] + self.plan["argv"]
        try:
            return subprocess.Popen(  # pylint: disable=ansible-bad-function
                argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, close_fds=True,
                start_new_session=True, env=self.plan["environment"], cwd="/")
        except (IOError, OSError, ValueError) as error:
            raise LoadError("the load did not start: %s" % error)

    def run(self):
        """{"load", "samples", "kernel", "sampler_errors"}; the load's group is gone when it returns."""
        sizes = log_sizes(self.plan["kernel_log_files"])
        started = time.monotonic()
        wall_start = time.time()
        process = self._start() if self.plan["argv"] else None
        if process is not None:
            record_group(self.plan["pid_file"], process.pid)
        reader = OutputReader(process, started) if process is not None else None
        load = {"ended": "not_started" if process is None else None, "rc": None, "early_exit_s": None}
        try:
            self._loop(process, started, load)
        finally:
            left = stop_group(process.pid) if process is not None else []
            if process is not None:
                if load["ended"] is None:
                    load["ended"] = "stopped"
                _reap(process)
                reader.join(2)
                _unlink(self.plan["pid_file"])
        load["left_running"] = left
        if reader is not None:
            load.update(records=reader.records, records_dropped=reader.dropped, invalid_lines=reader.invalid_count,
                        invalid_examples=reader.invalid, stderr_tail=reader.stderr.decode("utf-8", "replace"))
        return {"started_at": wall_start, "seconds": round(time.monotonic() - started, 3), "load": load,
                "samples": self.samples, "kernel": kernel_events(new_log_text(sizes)),
                "sampler_errors": self.errors}

    def _loop(self, process, started, load):
        seconds, grace = self.plan["seconds"], self.plan["end_grace"]
        next_sample = started
        while True:
            now = time.monotonic()
            if now >= next_sample:
                self._sample(started)
                next_sample += self.plan["interval"]
            if process is not None and load["ended"] is None and process.poll() is not None:
                load["rc"] = process.returncode
                load["ended"] = "timeout" if process.returncode in (124, 137) else "exited"
                if now - started < seconds:
                    load["early_exit_s"] = round(now - started, 3)
            elapsed = time.monotonic() - started
            if elapsed >= seconds and (process is None or load["ended"] is not None or elapsed >= seconds + grace):
                return
            if elapsed >= self.plan["hard_limit"]:
                return
            time.sleep(max(0.05, min(0.2, next_sample - time.monotonic())))


def _reap(process):
    try:
        process.wait(timeout=2)
    except subprocess.TimeoutExpired:
        pass


def _unlink(path):
    try:
        os.unlink(path)
    except OSError:
        pass
