# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""One pass over a host: picks the GPU backend, runs every asked-for collector within
one deadline, and settles the driver facts that need several sources."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import contextlib
import copy
import ctypes
import datetime
import re
import threading
import time

from ansible_collections.gpufleet.core.plugins.module_utils.args_common import WINDOW_HOURS
from ansible_collections.gpufleet.core.plugins.module_utils.bmc_collect import collect_bmc_in_band
from ansible_collections.gpufleet.core.plugins.module_utils.driver_clients import collect_driver_clients
from ansible_collections.gpufleet.core.plugins.module_utils.fabric_collect import collect_fabric
from ansible_collections.gpufleet.core.plugins.module_utils.facts_model import (
    add_error, drop_impossible_readings, new_facts, normalize_pci_bus_id, printable)
from ansible_collections.gpufleet.core.plugins.module_utils.host_facts import (
    collect_host, collect_pcie_aer, read_kernel_module_version)
from ansible_collections.gpufleet.core.plugins.module_utils.host_pressure import sample_host_pressure
from ansible_collections.gpufleet.core.plugins.module_utils.host_io import (
    DeadlineHost, RecordingHost, ReplayHost, command_key)
from ansible_collections.gpufleet.core.plugins.module_utils.input_ledger import (
    ABSENT, FAILED, NOT_SUPPORTED, READ, InputLedger)
from ansible_collections.gpufleet.core.plugins.module_utils.k8s_sharing import KubernetesOptions, collect_kubernetes
from ansible_collections.gpufleet.core.plugins.module_utils.kernel_log import collect_kernel_log
from ansible_collections.gpufleet.core.plugins.module_utils.nvidia_presence import collect_nvidia_evidence
from ansible_collections.gpufleet.core.plugins.module_utils.nvsmi_xml import MISSING_GPUS, collect_nvidia_smi
from ansible_collections.gpufleet.core.plugins.module_utils.workload_facts import collect_workload

# The NVML backend (nvml_collect) and the record/replay machinery (nvml_fixture) are imported where they
# are used: a host collected through nvidia-smi never compiles them (AnsiballZ ships sources, not bytecode,
# so every module the collection imports is compiled again on every host and run). Ansible still ships them.

FIXTURE_FORMAT = "gpufleet-fixture"
FIXTURE_FORMAT_VERSION = 1

ALL_SUBSETS = ("driver", "gpus", "processes", "mig", "nvlink", "host", "kernel_log", "driver_clients",
               "workload", "host_pressure", "bmc", "kubernetes", "fabric")
# Subsets added after fixtures were first recorded: a replay runs them only when its fixture has them.
LATER_SUBSETS = ("driver_clients", "workload", "host_pressure", "bmc", "kubernetes", "fabric")
MIN_SUBSETS = ("driver", "gpus")
# the collection's steps, each reading its inputs (facts `inputs`): driver covers gpus, processes, mig and nvlink
STEPS = ("driver", "host", "kernel_log", "driver_clients", "workload", "host_pressure", "bmc", "kubernetes",
         "fabric")
NVML_LIBRARY = "libnvidia-ml.so.1"
PROC_DRIVER_GPUS = "/proc/driver/nvidia/gpus"
_XML_SERIAL = re.compile(r"<serial>\s*([^<\s][^<]*?)\s*</serial>")
_LOG_SERIAL = re.compile(r"Board Serial Number:\s*(\S+)")


class CollectionError(Exception):
    """Bad input from the user (options, fixture file): the module fails with this message."""


def resolve_gather_subset(requested):
    """setup-style selection: 'all', 'min', names, and '!name' to leave one out."""
    chosen = set()
    excluded = set()
    for item in requested or ["all"]:
        name = str(item).strip()
        negate = name.startswith("!")
        name = name.lstrip("!")
        if name == "all":
            names = set(ALL_SUBSETS)
        elif name == "min":
            names = set(MIN_SUBSETS)
        elif name in ALL_SUBSETS:
            names = {name}
        else:
            raise CollectionError("gather_subset: unknown subset %r; allowed: all, min, %s (prefix ! to exclude)"
                                  % (item, ", ".join(ALL_SUBSETS)))
        (excluded if negate else chosen).update(names)
    if not chosen:
        chosen = set(ALL_SUBSETS)
    result = chosen - excluded
    if "workload" in result:
        result.add("processes")
    if result & {"processes", "mig", "nvlink", "host_pressure"}:
        result.add("gpus")
    if "gpus" in result:
        result.add("driver")
    return [name for name in ALL_SUBSETS if name in result]


def validate_fixture(fixture, path):
    if not isinstance(fixture, dict) or fixture.get("format") != FIXTURE_FORMAT:
        raise CollectionError("%s is not a gpufleet fixture (missing format: %s)" % (path, FIXTURE_FORMAT))
    if fixture.get("format_version") != FIXTURE_FORMAT_VERSION:
        raise CollectionError("%s has fixture format_version %r; this module reads version %d"
                              % (path, fixture.get("format_version"), FIXTURE_FORMAT_VERSION))
    if fixture.get("source") not in ("nvml", "nvidia_smi", "none"):
        raise CollectionError("%s: source must be nvml, nvidia_smi or none, not %r" % (path, fixture.get("source")))
    return fixture


class Collection:
    """Options of one run; `run()` returns (facts, fixture or None)."""

    def __init__(self, source="auto", gather_subset=None, timeout=60, command_timeout=20,
                 kernel_log_source="auto", kernel_log_files=None, kernel_log_window_hours=WINDOW_HOURS,
                 services=None, record=False, scrub=True, fixture=None, pynvml=None, host=None,
                 nvml_library=None, pressure_sample_seconds=0, kubernetes=None, capture=None):
        # capture (capture_host.CapturedHost): a captured host read instead of the live one, through nvidia-smi's
        # captured output (NVML cannot be captured), its kernel log files, and its own clock
        self.capture = capture
        if capture is not None:
            source, kernel_log_source, kernel_log_files = "nvidia_smi", "files", capture.kernel_logs
            pressure_sample_seconds = 0
        self.source = source
        self.subsets = resolve_gather_subset(gather_subset)
        if fixture is not None:
            recorded = fixture.get("gather_subset") or ()
            self.subsets = [name for name in self.subsets if name not in LATER_SUBSETS or name in recorded]
        self.timeout = timeout
        self.command_timeout = command_timeout
        self.kernel_log_source = kernel_log_source
        self.kernel_log_files = kernel_log_files or []
        self.kernel_log_window_hours = kernel_log_window_hours
        self.services = services or []
        self.pressure_sample_seconds = pressure_sample_seconds
        self.kubernetes = kubernetes or KubernetesOptions()
        self.record = record
        self.scrub = scrub
        self.fixture = fixture
        self.pynvml = pynvml
        # host is the LiveHost (or a simulated one); nvml_library stands in for libnvidia-ml
        self.host = host
        self.nvml_library = nvml_library
        self._deadline = None
        self._deadline_reached = False
        self._nvml_recorder = None
        self._ledger = None
        self._scrubber = _nvml_fixture().Scrubber() if record and scrub else None

    def remaining(self):
        return max(0.0, self._deadline - time.monotonic())

    def step_timeout(self):
        return max(1.0, min(self.command_timeout, self.remaining()))

    def run(self):
        started = time.monotonic()
        self._deadline = started + self.timeout
        facts = new_facts()
        recorded_host = self._host()
        ledger = self._ledger = InputLedger(recorded_host)
        host = _WatchedHost(ledger, self._deadline)
        # a replayed host answers with the time it was recorded: the facts describe that moment
        facts["collected_at"] = datetime.datetime.fromtimestamp(
            host.now(), datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        facts["gather_subset"] = list(self.subsets)

        answered = False
        kernel_log_read = None
        ledger.step = "driver"
        if self.capture is not None:
            facts["capture"] = self.capture.describe()
            ledger.note("NVML", NOT_SUPPORTED)
        if "driver" in self.subsets:
            answered = self._collect_gpus(host, facts)
            drop_impossible_readings(facts)
            facts["driver"]["kernel_module_version"] = read_kernel_module_version(host)
            facts["nvidia_evidence"] = collect_nvidia_evidence(host)
            name_lost_gpus(host, facts)
        if "host" in self.subsets:
            ledger.step = "host"
            collect_host(host, facts, extra_services=self.services, timeout=self.step_timeout())
            if facts["gpus"]:
                collect_pcie_aer(host, facts)
        if "kernel_log" in self.subsets:
            ledger.step = "kernel_log"
            kernel_log_read = collect_kernel_log(
                host, facts, source=self.kernel_log_source, files=self.kernel_log_files,
                window_hours=self.kernel_log_window_hours, timeout=self.step_timeout())
        if "driver_clients" in self.subsets:
            ledger.step = "driver_clients"
            collect_driver_clients(host, facts, timeout=self.step_timeout())
        if "workload" in self.subsets:
            ledger.step = "workload"
            collect_workload(host, facts, services=self.services, window_hours=self.kernel_log_window_hours,
                             kernel_log_source=self.kernel_log_source, kernel_log_files=self.kernel_log_files,
                             timeout_for=self.step_timeout)
        if "host_pressure" in self.subsets:
            ledger.step = "host_pressure"
            # a replay answers every read with the recorded text: a sample over time would measure nothing
            sample_host_pressure(host, facts, 0 if self.fixture is not None else self.pressure_sample_seconds,
                                 self.remaining)
        if "bmc" in self.subsets:
            ledger.step = "bmc"
            collect_bmc_in_band(host, facts, self.kernel_log_window_hours, self.step_timeout())
        if "kubernetes" in self.subsets:
            ledger.step = "kubernetes"
            collect_kubernetes(host, facts, self.kubernetes, self.step_timeout())
        if "fabric" in self.subsets:
            ledger.step = "fabric"
            collect_fabric(host, facts, self.step_timeout())
        settle_driver_mismatch(facts)
        prune_unrequested(facts, self.subsets)
        facts["inputs"] = ledger.summary([step for step in STEPS if step in self.subsets])
        facts["collection"] = collection_status(
            facts, self.subsets, answered, kernel_log_read, host.stopped_commands,
            self.timeout if (self._deadline_reached or host.deadline_reached) else None)
        if self.capture is not None:
            settle_capture_status(facts, self.capture)
        if self.fixture is not None:
            facts["replay_of"] = facts["source"] if facts["nvidia_present"] else None
            facts["source"] = "replay"
        facts["collection_seconds"] = round(time.monotonic() - started, 3)
        return facts, (self._fixture_document(recorded_host, facts) if self.record else None)

    def _host(self):
        if self.capture is not None:
            return self.capture
        if self.fixture is not None:
            return ReplayHost(self.fixture.get("host"))
        return RecordingHost(self.host) if self.record else self.host

    def _backends(self):
        if self.fixture is not None:
            # the backends the recording host tried, in the same order, so failures replay too
            tried_nvml = ["nvml"] if self.fixture.get("nvml") else []
            return tried_nvml + ([] if self.fixture.get("source") == "nvml" else ["nvidia_smi"])
        if self.source == "auto":
            return ["nvml", "nvidia_smi"]
        return [self.source]

    def _collect_gpus(self, host, facts):
        """True when a backend answered."""
        for backend in self._backends():
            if self.remaining() <= 0:
                self._deadline_reached = True
                add_error(facts, None, backend, "collection timeout of %ss reached" % self.timeout)
                break
            if backend == "nvml":
                answered = self._collect_nvml(facts)
                self._ledger.note("NVML", READ if answered else (ABSENT if self.pynvml is None else FAILED))
            else:
                answered = collect_nvidia_smi(host, facts, timeout=self.step_timeout())
            if answered:
                facts["source"] = backend
                facts["nvidia_present"] = True
                return True
            if facts["driver"]["mismatch"]:
                facts["nvidia_present"] = True
                return False
        return False

    def _collect_nvml(self, facts):
        pynvml = self.pynvml
        if pynvml is None:
            add_error(facts, None, "import pynvml", "nvidia-ml-py (pynvml) is not installed on this host")
            return False
        with self._nvml_library(pynvml, facts) as ready:
            if not ready:
                return False
            return self._collect_nvml_with_deadline(pynvml, facts)

    @contextlib.contextmanager
    def _nvml_library(self, pynvml, facts):
        if self.fixture is None and not self.record and self.nvml_library is None:
            yield True
            return
        nvml_fixture = _nvml_fixture()
        use_library = nvml_fixture.use_library
        if self.fixture is not None:
            with use_library(pynvml, nvml_fixture.ReplayLibrary(self.fixture.get("nvml", {}).get("calls", []))):
                yield True
            return
        try:
            real = self.nvml_library or _load_library(NVML_LIBRARY)
        except OSError as exc:
            add_error(facts, None, "load %s" % NVML_LIBRARY, exc)
            yield False
            return
        if not self.record:
            with use_library(pynvml, real):
                yield True
            return
        self._nvml_recorder = nvml_fixture.RecordingLibrary(real, scrub=self.scrub, scrubber=self._scrubber)
        with use_library(pynvml, self._nvml_recorder):
            yield True

    def _collect_nvml_with_deadline(self, pynvml, facts):
        """NVML calls can hang on a GPU that fell off the bus. The worker fills its own
        facts; after the deadline it is left behind and a copy of what it finished is kept."""
        # here, not at the top: only a host collected through NVML compiles it (the note at the top)
        from ansible_collections.gpufleet.core.plugins.module_utils.nvml_collect import collect_nvml
        fixture_miss = _nvml_fixture().FixtureMiss
        outcome = {}
        scratch = new_facts()

        def work():
            try:
                outcome["answered"] = collect_nvml(pynvml, scratch, set(self.subsets), deadline=self._deadline)
            except fixture_miss as exc:
                outcome["miss"] = exc
            except Exception as exc:  # pylint: disable=broad-except
                outcome["crash"] = exc

        worker = threading.Thread(target=work, name="gpufleet-nvml")
        worker.daemon = True
        worker.start()
        worker.join(self.remaining() + 0.5)
        hung = worker.is_alive()
        if hung:
            scratch = copy.deepcopy({key: scratch[key] for key in ("driver", "gpus", "errors", "nvidia_present")})
        facts["driver"].update(scratch["driver"])
        facts["gpus"].extend(scratch["gpus"])
        facts["errors"].extend(scratch["errors"])
        if hung:
            self._deadline_reached = True
            add_error(facts, None, "nvml", "NVML did not answer within the %ss collection timeout" % self.timeout)
            return bool(facts["gpus"])
        if "miss" in outcome:
            raise CollectionError("replay fixture: %s" % outcome["miss"])
        if "crash" in outcome:
            add_error(facts, None, "nvml", "unexpected %s: %s" % (type(outcome["crash"]).__name__, outcome["crash"]))
            return bool(facts["gpus"])
        return outcome.get("answered", False)

    def _fixture_document(self, host, facts):
        document = {
            "format": FIXTURE_FORMAT,
            "format_version": FIXTURE_FORMAT_VERSION,
            "recorded_at": facts["collected_at"],
            "source": facts["source"],
            "gather_subset": facts["gather_subset"],
            "nvml": _nvml_fixture().fixture_document(self._nvml_recorder) if self._nvml_recorder else None,
            "host": self._scrubbed(host.to_fixture()) if isinstance(host, RecordingHost) else None,
        }
        return document

    def _scrubbed(self, recorded):
        """Serials and UUIDs in files and command outputs, scrubbed as the NVML answers were."""
        if self._scrubber is None:
            return recorded
        texts = [text for text in recorded["files"].values() if text]
        texts += [result.get("stdout") or "" for result in recorded["commands"].values()]
        for text in texts:
            for serial in _XML_SERIAL.findall(text) + _LOG_SERIAL.findall(text):
                self._scrubber.learn_serial(serial)
        recorded["files"] = {path: self._scrubber.free_text(text) if text else text
                             for path, text in recorded["files"].items()}
        for result in recorded["commands"].values():
            for stream in ("stdout", "stderr"):
                if result.get(stream):
                    result[stream] = self._scrubber.free_text(result[stream])
        return recorded


def _load_library(name):
    return ctypes.CDLL(name)


def _nvml_fixture():
    # here, not at the top: only a recording or a replay compiles it (the note at the top)
    from ansible_collections.gpufleet.core.plugins.module_utils import nvml_fixture
    return nvml_fixture


class _WatchedHost(DeadlineHost):
    """The collection's host: every command shares the collection deadline, and the commands that
    were stopped (timed out, killed, or not started because the time was up) are remembered."""

    def __init__(self, inner, deadline):
        DeadlineHost.__init__(self, inner, deadline)
        self.stopped_commands = []
        self.deadline_reached = False

    def run(self, argv, timeout):
        result = DeadlineHost.run(self, argv, timeout)
        if result.timed_out:
            self.deadline_reached = self.deadline_reached or time.monotonic() >= self._deadline
            self.stopped_commands.append("%s: %s" % (command_key(argv), result.describe_failure()))
        return result


# errors of these calls say why no GPU backend answered
_BACKEND_CALLS = ("import pynvml", "load " + NVML_LIBRARY, "nvmlInit", "nvml", "collect_nvml", "nvidia-smi -q -x")
_PARTIAL_REPORT = "with a partial report"


def collection_status(facts, subsets, answered, kernel_log_read, stopped_commands, timeout_reached):
    """{status, reasons}: complete, partial (some of what was asked for could not be read) or failed
    (NVIDIA hardware or software is present, or a mismatch was seen, but no GPU facts could be read)."""
    reasons = []
    stack_seen = answered or bool(facts.get("nvidia_evidence")) or facts["driver"]["mismatch"]
    failed = "driver" in subsets and stack_seen and not answered
    if failed:
        reasons.extend(_backend_failures(facts))
    elif answered:
        reasons.extend(_partial_gpu_reads(facts))
    if timeout_reached is not None:
        reasons.append("the collection timeout of %ss was reached; what was read until then is kept"
                       % timeout_reached)
    reasons.extend(reason for reason in stopped_commands if reason not in reasons)
    if stack_seen and kernel_log_read == "none":
        reasons.append("kernel log: no source could be read (%s)" % "; ".join(
            _error_text(error) for error in facts["errors"] if _is_kernel_log_error(error)) or "no details")
    unplaced = (facts.get("kernel_log") or {}).get("unplaced_lines")
    if unplaced:
        reasons.append("kernel log: %d lines naming NVRM or SXid in a format not read (an Xid among them would be missed)"
                       % unplaced)
    status = "failed" if failed else ("partial" if reasons else "complete")
    return {"status": status, "reasons": [_clip(reason) for reason in _unique(reasons)]}


NVSMI_XML = ["nvidia-smi", "-q", "-x"]


def settle_capture_status(facts, capture):
    """A capture cannot be asked again: GPU facts it lacks, or a captured nvidia-smi that failed (a GPU off the bus),
    leave the collection partial, not failed, with NVIDIA present (its signs are in the capture), so that the rest of
    the capture (the kernel log, the BMC) is judged."""
    if facts["collection"]["status"] != "failed":
        return
    facts["nvidia_present"] = True
    if capture.command_text(NVSMI_XML) is None:
        reasons = ["GPU facts: the capture holds no nvidia-smi -q -x (%s); the GPUs were not read" % capture.kind]
    else:
        reasons = ["%s (in the capture)" % reason for reason in facts["collection"]["reasons"]]
    facts["collection"] = {"status": "partial", "reasons": reasons}


def _backend_failures(facts):
    driver = facts["driver"]
    if driver["mismatch"]:
        return ["GPU facts: the driver refuses to answer: %s" % driver["mismatch_reason"]]
    failures = ["GPU facts: %s" % _error_text(error) for error in facts["errors"]
                if error["gpu"] is None and error["call"] in _BACKEND_CALLS]
    if not any(item["kind"] == "binary" for item in facts.get("nvidia_evidence") or ()):
        failures.append("GPU facts: nvidia-smi is not on PATH")
    return failures or ["GPU facts: no backend answered"]


# NVML calls that list the GPUs: when one fails, GPUs are missing or known by their index only
_GPU_LISTING_CALLS = ("nvmlDeviceGetCount", "nvmlDeviceGetHandleByIndex")


def _partial_gpu_reads(facts):
    """A backend that answered but stopped early: NVML hung or ran out of time, or could not count the GPUs
    or open one that is not lost (a lost GPU is a finding of its own); nvidia-smi failed half-way through its
    report or listed fewer GPUs than it says are attached."""
    lost = {gpu["index"] for gpu in facts["gpus"] if gpu.get("lost")}
    return ["GPU facts: %s" % _error_text(error) for error in facts["errors"]
            if error["call"] in ("nvml", "collect_nvml")
            or (error["call"] in _GPU_LISTING_CALLS and error["gpu"] not in lost)
            or (error["call"] == "nvidia-smi -q -x"
                and (_PARTIAL_REPORT in error["reason"] or error["reason"].startswith(MISSING_GPUS)))]


def _is_kernel_log_error(error):
    call = error["call"]
    return call.startswith(("journalctl", "dmesg", "read ", "kernel log"))


def _error_text(error):
    return "%s: %s" % (error["call"], error["reason"])


def _clip(text, limit=500):
    text = printable(text)
    return text if len(text) <= limit else text[:limit] + "..."


def _unique(items):
    seen = set()
    return [item for item in items if not (item in seen or seen.add(item))]


def name_lost_gpus(host, facts):
    """NVML cannot give the bus id of a GPU it lost; the kernel module still lists every GPU it
    bound under /proc/driver/nvidia/gpus. When as many GPUs are unnamed as bus ids are unclaimed,
    they pair up in bus order, the order NVML enumerates in."""
    unnamed = [gpu for gpu in facts["gpus"] if gpu["pci_bus_id"] is None]
    if not unnamed:
        return
    listed = [normalize_pci_bus_id(entry) for entry in host.listdir(PROC_DRIVER_GPUS) or []]
    claimed = {gpu["pci_bus_id"] for gpu in facts["gpus"]}
    unclaimed = sorted(bus for bus in listed if bus and bus not in claimed)
    if len(unclaimed) == len(unnamed):
        for gpu, bus in zip(unnamed, unclaimed):
            gpu["pci_bus_id"] = bus


def settle_driver_mismatch(facts):
    """The kernel module and the userspace library must be the same version. NVML and
    nvidia-smi report a mismatch themselves; otherwise compare the two versions, and
    trust a kernel-log 'API mismatch' only while the versions it names are current."""
    driver = facts["driver"]
    kernel, userspace = driver["kernel_module_version"], driver["userspace_version"]
    if driver["mismatch"]:
        fill_versions_from_mismatch_log(facts)
        return
    if kernel and userspace and kernel != userspace:
        driver["mismatch"] = True
        driver["mismatch_reason"] = "kernel module %s, userspace library %s" % (kernel, userspace)
        return
    if facts["source"] in ("nvml", "nvidia_smi"):
        # NVML and nvidia-smi refuse to start during a mismatch: one that answered means it is over,
        # and an 'API mismatch' still in the kernel log is history
        return
    for event in facts["kernel_events"]:
        if event["kind"] != "api_mismatch":
            continue
        still_current = (kernel in (None, event.get("kernel_module_version"))
                         and userspace in (None, event.get("client_version")))
        if still_current:
            driver["mismatch"] = True
            driver["mismatch_reason"] = "kernel log: %s" % event["message"]
            return


def fill_versions_from_mismatch_log(facts):
    """When NVML refused to start over a mismatch, the userspace version is only in the
    kernel's 'API mismatch' message (the client is the userspace library)."""
    driver = facts["driver"]
    for event in reversed(facts["kernel_events"]):
        if event["kind"] != "api_mismatch":
            continue
        if driver["kernel_module_version"] in (None, event.get("kernel_module_version")):
            driver["userspace_version"] = driver["userspace_version"] or event.get("client_version")
            driver["kernel_module_version"] = driver["kernel_module_version"] or event.get("kernel_module_version")
            return


def prune_unrequested(facts, subsets):
    """Backends read some parts together (nvidia-smi -q -x always lists processes)."""
    for gpu in facts["gpus"]:
        if "processes" not in subsets:
            gpu["processes"] = []
        if "mig" not in subsets:
            gpu["mig"]["gpu_instances"] = []
        if "nvlink" not in subsets:
            gpu["nvlinks"] = []
