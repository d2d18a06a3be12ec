# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The raw evidence of an incident window, read from a host without changing it.

collect_evidence() runs a bounded list of read-only commands and file reads through a host object
(host_io: LiveHost, ReplayHost) and returns one item per piece of evidence: its file name, what produced
it, the exit status, the duration, the size and sha256 of what was kept, the cut when it was capped, and
why it is missing when it is. Secrets are redacted before anything leaves the host: the values of
Environment= lines in unit files and of environment properties in `systemctl show`. A missing tool is an
item with status missing, never an error of the collection.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import base64
import hashlib
import re
import time

# What one piece of evidence may keep; a log keeps its end (the newest lines), anything else its start.
DEFAULT_MAX_FILE_BYTES = 4 * 1024 * 1024
DEFAULT_MAX_TOTAL_BYTES = 32 * 1024 * 1024
DEFAULT_WINDOW_HOURS = 24
# units whose journal and unit files are always kept: the NVIDIA stack's own services
NVIDIA_UNITS = ("nvidia-persistenced.service", "nvidia-fabricmanager.service", "nvidia-dcgm.service",
                "dcgm.service", "nvidia-mps.service", "nvidia-cuda-mps-control.service")
MAX_UNITS = 32
MAX_PIDS = 256
PACKAGE_LOGS = ("/var/log/dpkg.log", "/var/log/dnf.rpm.log")
DCGM_DIAG_SECONDS = 300
BUG_REPORT_SECONDS = 600
REDACTED = "<redacted>"

STATUS_OK = "ok"
STATUS_FAILED = "failed"
STATUS_MISSING = "missing"
STATUS_SKIPPED = "skipped"
STATUS_TIMED_OUT = "timed_out"

_SERVICE_RE = re.compile(r"([A-Za-z0-9@_.:\\-]+\.service)")
_ENVIRONMENT_LINE_RE = re.compile(r"^(\s*Environment\s*=\s*)(.*)$", re.M)
_ENV_ASSIGNMENT_RE = re.compile(r"(\"?)([A-Za-z_][A-Za-z0-9_]*)=((?:\\.|[^\s\"\\])*|\"(?:\\.|[^\"\\])*\")")
_SHOW_ENVIRONMENT_RE = re.compile(r"^((?:Environment|PassEnvironment|SetCredential|LoadCredential)=)(.+)$", re.M)
_MIG_ENABLED_RE = re.compile(r"MIG Mode\s*\n\s*Current\s*:\s*Enabled", re.I)


def redact_environment_values(text):
    """Environment=KEY=VALUE KEY2="VALUE 2" -> Environment=KEY=<redacted> KEY2=<redacted>: the names stay
    (they say what was set), the values go (tokens, passwords)."""
    def assignments(match):
        return match.group(1) + _ENV_ASSIGNMENT_RE.sub(lambda m: "%s=%s" % (m.group(2), REDACTED), match.group(2))
    text = _ENVIRONMENT_LINE_RE.sub(assignments, text)
    return _SHOW_ENVIRONMENT_RE.sub(lambda m: m.group(1) + _ENV_ASSIGNMENT_RE.sub(
        lambda a: "%s=%s" % (a.group(2), REDACTED), m.group(2)), text)


def cap(data, limit, keep_end):
    """(kept bytes, cut or None): at most limit bytes, the end of a log or the start of anything else."""
    if len(data) <= limit:
        return data, None
    kept = data[len(data) - limit:] if keep_end else data[:limit]
    return kept, {"original_bytes": len(data), "kept_bytes": len(kept),
                  "kept": "the last %d bytes" % len(kept) if keep_end else "the first %d bytes" % len(kept)}


def unit_of_cgroup(text):
    """The .service a process runs in, from the text of /proc/<pid>/cgroup (v1 or v2), or None."""
    for line in (text or "").splitlines():
        path = line.rsplit(":", 1)[-1]
        units = _SERVICE_RE.findall(path)
        if units:
            return units[-1]
    return None


def window_argv(since, until):
    """journalctl's bounds in epoch seconds ('@N'), which no time zone can misread."""
    return ["--since=@%d" % int(since), "--until=@%d" % int(until)]


def mig_enabled(nvidia_smi_text):
    return bool(_MIG_ENABLED_RE.search(nvidia_smi_text or ""))


class Evidence:
    """Collects the items of one host within a shared deadline and byte budget."""

    def __init__(self, host, since, until, timeout=120, command_timeout=30,
                 max_file_bytes=DEFAULT_MAX_FILE_BYTES, max_total_bytes=DEFAULT_MAX_TOTAL_BYTES):
        self.host = host
        self.since = since
        self.until = until
        self.deadline = time.monotonic() + timeout
        self.command_timeout = command_timeout
        self.max_file_bytes = max_file_bytes
        self.budget = max_total_bytes
        self.items = []

    # ------------------------------------------------------------------ recording

    def _store(self, item, data, keep_end=False, redact=False, binary=False):
        if redact:
            data = redact_environment_values(data.decode("utf-8", "replace")).encode("utf-8")
            item["redacted"] = "environment values"
        limit = max(0, min(self.max_file_bytes, self.budget))
        kept, cut = cap(data, limit, keep_end)
        if cut is not None:
            cut["why"] = ("the per-file limit of %d bytes" % self.max_file_bytes if limit == self.max_file_bytes
                          else "the bundle's limit of total bytes was reached")
        self.budget -= len(kept)
        item.update(size=len(kept), sha256=hashlib.sha256(kept).hexdigest(), cut=cut)
        if binary:
            item.update(encoding="base64", content=base64.b64encode(kept).decode("ascii"))
        else:
            item.update(encoding="utf-8", content=kept.decode("utf-8", "replace"))
        self.items.append(item)
        return item

    def _absent(self, item, status, why):
        item.update(status=status, why=why, size=0, sha256=None, cut=None, content=None, encoding=None)
        self.items.append(item)
        return item

    def skip(self, name, layer, command, why):
        return self._absent({"name": name, "layer": layer, "command": command, "rc": None, "duration_s": 0.0},
                            STATUS_SKIPPED, why)

    # ------------------------------------------------------------------ commands and files

    def command(self, name, layer, program, arguments, keep_end=False, redact=False, timeout=None,
                accept_rc=(0,)):
        """Runs program (found on the host) with arguments; the item records what happened."""
        path = self.host.find_bin(program)
        shown = " ".join([program] + list(arguments))
        item = {"name": name, "layer": layer, "command": shown, "rc": None, "duration_s": 0.0}
        if path is None:
            return self._absent(item, STATUS_MISSING, "%s is not installed (not found on PATH or in sbin)" % program)
        remaining = self.deadline - time.monotonic()
        if remaining <= 0:
            return self._absent(item, STATUS_TIMED_OUT, "not started: the evidence timeout was reached")
        started = time.monotonic()
        result = self.host.run([path] + list(arguments), min(timeout or self.command_timeout, remaining))
        item["duration_s"] = round(time.monotonic() - started, 3)
        item["rc"] = result.rc
        if result.missing:
            return self._absent(item, STATUS_MISSING, result.describe_failure() + (
                ": " + result.stderr.strip()[:300] if result.stderr.strip() else ""))
        output = (result.stdout or "").encode("utf-8", "replace")
        if result.timed_out:
            item.update(status=STATUS_TIMED_OUT, why="timed out after %.0f s and was killed; the output until then "
                        "is kept" % item["duration_s"])
        elif result.rc not in accept_rc:
            item.update(status=STATUS_FAILED, why=result.describe_failure())
        else:
            item.update(status=STATUS_OK, why=None)
        if result.stderr and item["status"] != STATUS_OK:
            item["stderr"] = result.stderr[-2000:]
        return self._store(item, output, keep_end=keep_end, redact=redact)

    def read_file(self, name, layer, path, keep_end=True):
        item = {"name": name, "layer": layer, "command": "read %s" % path, "rc": None, "duration_s": 0.0}
        started = time.monotonic()
        text = self.host.read_text(path)
        item["duration_s"] = round(time.monotonic() - started, 3)
        if text is None:
            return self._absent(item, STATUS_MISSING, "%s is absent or not readable" % path)
        item.update(status=STATUS_OK, why=None)
        return self._store(item, text.encode("utf-8", "replace"), keep_end=keep_end)

    def ok_text(self, name):
        for item in self.items:
            if item["name"] == name and item["status"] == STATUS_OK:
                return item["content"]
        return None


# ---------------------------------------------------------------------- the plan

def units_of_pids(host, pids):
    """{pid: unit} for the GPU processes whose cgroup names a .service."""
    units = {}
    for pid in list(pids)[:MAX_PIDS]:
        unit = unit_of_cgroup(host.read_text("/proc/%d/cgroup" % int(pid)))
        if unit:
            units[int(pid)] = unit
    return units


def service_units(services, pid_units):
    units = []
    for name in list(services) + sorted(set(pid_units.values())) + list(NVIDIA_UNITS):
        name = name if "." in name else name + ".service"
        if name not in units:
            units.append(name)
    return units[:MAX_UNITS]


def collect_gpu(evidence):
    evidence.command("nvidia-smi-q.txt", "hardware", "nvidia-smi", ["-q"])
    evidence.command("nvidia-smi-q.xml", "hardware", "nvidia-smi", ["-q", "-x"])


def collect_kernel_log(evidence, source="auto", files=()):
    """The window's kernel log as the collector reads it: journalctl, else dmesg, or the named files."""
    if source == "files":
        for position, path in enumerate(files or ()):
            evidence.read_file("kernel-log-%d.txt" % (position + 1), "hardware", path)
        if not files:
            evidence.skip("kernel.log", "hardware", "kernel log files", "source is files but no files were named")
        return
    if source in ("auto", "journalctl"):
        item = evidence.command("kernel.log", "hardware", "journalctl",
                                ["_TRANSPORT=kernel", "-o", "short-iso-precise", "--utc", "--no-pager"]
                                + window_argv(evidence.since, evidence.until), keep_end=True)
        if item["status"] == STATUS_OK or source == "journalctl":
            return
        evidence.items.remove(item)
        item["name"] = "kernel-journalctl-failed.txt"
        evidence.items.append(item)
    evidence.command("kernel.log", "hardware", "dmesg", ["--time-format=iso"], keep_end=True)


def collect_services(evidence, units):
    window = window_argv(evidence.since, evidence.until)
    unit_args = []
    for unit in units:
        unit_args.extend(["-u", unit])
    evidence.command("journal-services.json", "workload", "journalctl",
                     ["-o", "json", "--utc", "--no-pager"] + window + unit_args, keep_end=True)
    evidence.command("journal-oom.json", "workload", "journalctl",
                     ["-o", "json", "--utc", "--no-pager", "--grep=oom|Out of memory|killed by the OOM"] + window,
                     keep_end=True, accept_rc=(0, 1))
    evidence.command("systemctl-cat.txt", "workload", "systemctl", ["cat", "--no-pager"] + units, redact=True,
                     accept_rc=(0, 1))
    evidence.command("systemctl-show.txt", "workload", "systemctl",
                     ["show", "--no-pager", "--property=Id,LoadState,ActiveState,SubState,Result,NRestarts,"
                      "ExecMainPID,ExecMainStatus,ExecMainCode,ActiveEnterTimestamp,InactiveEnterTimestamp"] + units,
                     redact=True)


def collect_boots_and_packages(evidence):
    evidence.command("boots.txt", "driver", "journalctl", ["--list-boots", "--utc", "--no-pager"])
    for path in PACKAGE_LOGS:
        evidence.read_file(path.rsplit("/", 1)[-1], "driver", path)


def collect_pci(evidence):
    evidence.command("lspci-nvidia.txt", "hardware", "lspci", ["-vvv", "-d", "10de:"])
    evidence.command("lspci-bridges.txt", "hardware", "lspci", ["-vvv", "-d", "::0604"])
    evidence.command("lspci-tree.txt", "hardware", "lspci", ["-tv"])


def collect_bmc(evidence):
    first = evidence.command("ipmitool-sel-elist.txt", "hardware", "ipmitool", ["sel", "elist"], timeout=60)
    if first["status"] != STATUS_OK:
        for name, command in (("ipmitool-sel-time.txt", "ipmitool sel time get"),
                              ("ipmitool-sdr-elist.txt", "ipmitool sdr elist")):
            evidence.skip(name, "hardware", command, "ipmitool sel elist did not work (%s)" % (first["why"] or ""))
        return
    evidence.command("ipmitool-sel-time.txt", "hardware", "ipmitool", ["sel", "time", "get"])
    evidence.command("ipmitool-sdr-elist.txt", "hardware", "ipmitool", ["sdr", "elist"], timeout=60)


def collect_dcgm_diag(evidence, enabled):
    command = "dcgmi diag -r 1"
    if not enabled:
        return evidence.skip("dcgmi-diag.txt", "hardware", command, "off (dcgm_diag: false)")
    if evidence.host.find_bin("dcgmi") is None:
        return evidence.skip("dcgmi-diag.txt", "hardware", command, "DCGM is not installed (no dcgmi)")
    smi = evidence.ok_text("nvidia-smi-q.txt")
    if smi is None:
        return evidence.skip("dcgmi-diag.txt", "hardware", command, "MIG mode unknown (nvidia-smi -q did not answer)")
    if mig_enabled(smi):
        return evidence.skip("dcgmi-diag.txt", "hardware", command, "MIG is enabled on a GPU")
    return evidence.command("dcgmi-diag.txt", "hardware", "dcgmi", ["diag", "-r", "1"], timeout=DCGM_DIAG_SECONDS)


def collect_bug_report(evidence, enabled, workdir):
    """nvidia-bug-report.sh writes its report into workdir (a temporary folder the module removes)."""
    command = "nvidia-bug-report.sh"
    if not enabled:
        return evidence.skip("nvidia-bug-report.log.gz", "driver", command, "off (bug_report: false)")
    if workdir is None:
        return evidence.skip("nvidia-bug-report.log.gz", "driver", command, "no temporary folder (replay or check)")
    base = workdir + "/nvidia-bug-report.log"
    item = evidence.command("nvidia-bug-report.txt", "driver", "nvidia-bug-report.sh",
                            ["--output-file", base], timeout=BUG_REPORT_SECONDS, keep_end=True)
    if item["status"] == STATUS_MISSING:
        return item
    data = evidence.host.read_bytes(base + ".gz") if hasattr(evidence.host, "read_bytes") else None
    if data is None:
        return evidence.skip("nvidia-bug-report.log.gz", "driver", command, "no report file was written")
    report = {"name": "nvidia-bug-report.log.gz", "layer": "driver", "command": command,
              "rc": item["rc"], "duration_s": item["duration_s"], "status": STATUS_OK, "why": None}
    return evidence._store(report, data, binary=True)  # pylint: disable=protected-access


def collect_evidence(host, since=None, until=None, window_hours=DEFAULT_WINDOW_HOURS, services=(), pids=(),
                     kernel_log_source="auto", kernel_log_files=(), dcgm_diag=False, bug_report=False,
                     workdir=None, timeout=120, command_timeout=30, max_file_bytes=DEFAULT_MAX_FILE_BYTES,
                     max_total_bytes=DEFAULT_MAX_TOTAL_BYTES):
    """{"window", "host_clock", "units", "pid_units", "evidence"}; since/until in epoch seconds (default: the
    window_hours before the host's own now)."""
    now = host.now()
    until = now if until is None else until
    since = until - window_hours * 3600 if since is None else since
    evidence = Evidence(host, since, until, timeout, command_timeout, max_file_bytes, max_total_bytes)
    pid_units = units_of_pids(host, pids)
    units = service_units(services, pid_units)
    collect_gpu(evidence)
    collect_kernel_log(evidence, kernel_log_source, kernel_log_files)
    collect_services(evidence, units)
    collect_boots_and_packages(evidence)
    collect_pci(evidence)
    collect_bmc(evidence)
    collect_dcgm_diag(evidence, dcgm_diag)
    collect_bug_report(evidence, bug_report, workdir)
    return {
        "window": {"since": since, "until": until},
        "host_clock": {"now": now, "utc_offset_seconds": local_utc_offset(now)},
        "kernel_log_source": kernel_log_source,
        "units": units,
        "pid_units": dict((str(pid), unit) for pid, unit in sorted(pid_units.items())),
        "evidence": evidence.items,
    }


def local_utc_offset(now):
    """Seconds the host's local time is ahead of UTC at now (for logs that carry no zone, as dpkg.log)."""
    local = time.localtime(now)
    return int(getattr(local, "tm_gmtoff", 0) or 0)
