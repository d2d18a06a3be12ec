# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The NVML backend: fills the fact schema through pynvml's public wrapper functions.

pynvml is passed in (the module imports it when it is installed), so the same code runs
against the real libnvidia-ml, a recorded fixture or a simulated library. Rules:

- NVML_ERROR_NOT_SUPPORTED leaves the value null and adds no error (nvidia-smi's N/A); so does a
  function that this driver's libnvidia-ml does not have (NVML_ERROR_FUNCTION_NOT_FOUND).
- Any other NVML error leaves the value null and adds an error entry with its code.
- NVML_ERROR_GPU_IS_LOST marks the GPU lost and skips its remaining queries; the other
  GPUs are still collected.
- Newer entry points fall back to older ones when the driver or pynvml lacks them
  (NVML_ERROR_FUNCTION_NOT_FOUND, or a struct version the driver does not know).
- Anything that is not an NVML error (such as a replay FixtureMiss) propagates.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import ctypes
import math
import time
import uuid

from ansible_collections.gpufleet.core.plugins.module_utils.facts_model import (
    COMPUTE_MODES, add_error, bytes_to_mib, cuda_version_from_int, decode_clock_event_reasons,
    new_gpu, new_process, normalize_pci_bus_id)
from ansible_collections.gpufleet.core.plugins.module_utils.vocabulary import RECOVERY_ACTIONS

# nvml.h return codes and enums (ABI-stable values)
NVML_SUCCESS = 0
NVML_ERROR_INVALID_ARGUMENT = 2
NVML_ERROR_NOT_SUPPORTED = 3
NVML_ERROR_FUNCTION_NOT_FOUND = 13
NVML_ERROR_GPU_IS_LOST = 15
NVML_ERROR_LIB_RM_VERSION_MISMATCH = 18
NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25

_TEMPERATURE_GPU = 0
_THRESHOLD_SHUTDOWN = 0
_THRESHOLD_SLOWDOWN = 1
_CLOCK_TYPES = (("graphics", 0), ("sm", 1), ("memory", 2))
_ECC_COUNTERS = (("volatile_corrected", 0, 0), ("volatile_uncorrected", 1, 0),
                 ("aggregate_corrected", 0, 1), ("aggregate_uncorrected", 1, 1))
_RETIREMENT_CAUSES = (("single_bit", 0), ("double_bit", 1))
_NVLINK_COUNTERS = (("replay", 0), ("recovery", 1), ("crc_flit", 2), ("crc_data", 3))
_FEATURE_ENABLED = 1
_PSTATE_MAX = 15
_VALUE_NOT_AVAILABLE_UINT = 0xFFFFFFFF
_ENGINE_PROFILE_SHARED = 0

ARCHITECTURES = {
    2: "kepler", 3: "maxwell", 4: "pascal", 5: "volta", 6: "turing", 7: "ampere",
    8: "ada", 9: "hopper", 10: "blackwell", 13: "rubin",
}
FABRIC_STATES = {0: "not_supported", 1: "not_started", 2: "in_progress", 3: "completed"}
# NVML_FI_DEV_GET_GPU_RECOVERY_ACTION (nvml.h, NVML API 13), for a pynvml too old to name it
_FIELD_GPU_RECOVERY_ACTION = 230

# GPU-instance profile enum -> suffix nvidia-smi adds to the "<n>g.<m>gb" name
# (REV1: media extensions, NO_ME: without them, ALL_ME: all of them, GFX: graphics).
_GI_PROFILE_SUFFIXES = {
    0x7: "+me", 0x8: "+me", 0xA: "+gfx", 0xB: "+gfx", 0xC: "+gfx", 0xD: "-me", 0xE: "-me",
    0xF: "+me.all", 0x10: "+me.all", 0x11: "+gfx",
}
_FALLBACK_CODES = (NVML_ERROR_FUNCTION_NOT_FOUND, NVML_ERROR_ARGUMENT_VERSION_MISMATCH)
_PER_GPU_SUBSETS = frozenset(("gpus", "processes", "mig", "nvlink"))


class _GpuLost(Exception):
    """Raised inside one GPU's collection when NVML answers GPU_IS_LOST."""


def _text(value):
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return value


def userspace_version_from_nvml(nvml_version):
    """NVML's version is the API major plus the library's driver version: '12.550.90.07' -> '550.90.07'."""
    if not nvml_version or "." not in nvml_version:
        return None
    rest = nvml_version.split(".", 1)[1]
    return rest if "." in rest else None


def mig_memory_gb(profile_memory_mib, total_memory_mib):
    """Memory part of a MIG profile name: the profile's share of the GPU rounded up to
    eighths, times the GPU memory in whole GiB (9984 MiB of 81559 MiB -> 10)."""
    if not profile_memory_mib:
        return None
    if not total_memory_mib:
        return int(math.ceil(profile_memory_mib / 1024.0))
    eighths = math.ceil(8.0 * profile_memory_mib / total_memory_mib - 1e-9) / 8.0
    return int(round(eighths * math.ceil(total_memory_mib / 1024.0)))


def gpu_instance_profile_name(profile_enum, slice_count, memory_gb):
    """'1g.10gb', '1g.10gb+me', ... as nvidia-smi prints GPU-instance profiles."""
    if not slice_count or memory_gb is None:
        return None
    return "%dg.%dgb%s" % (slice_count, memory_gb, _GI_PROFILE_SUFFIXES.get(profile_enum, ""))


def compute_instance_profile_name(ci_slices, gi_slices, gi_name):
    """A compute instance that fills its GPU instance has the GPU instance's name, else '1c.3g.40gb'."""
    if gi_name is None or not ci_slices:
        return None
    if ci_slices == gi_slices:
        return gi_name
    return "%dc.%s" % (ci_slices, gi_name)


def _nvml_profile_name(info):
    """The name NVML itself gives in v2 profile info ('MIG 1g.10gb'), without the prefix."""
    name = _text(getattr(info, "name", None))
    if not name:
        return None
    return name[4:] if name.startswith("MIG ") else name


def _pstate_name(value):
    return "P%d" % value if value is not None and 0 <= value <= _PSTATE_MAX else None


def _enabled(value):
    return None if value is None else value == _FEATURE_ENABLED


def _not_available(value):
    return value is None or value == _VALUE_NOT_AVAILABLE_UINT


def _watts(milliwatts):
    return None if milliwatts is None else round(milliwatts / 1000.0, 3)


def _placement(placement):
    return {"start": int(placement.start), "size": int(placement.size)}


class _NvmlCollector:
    """One collection through a pynvml module; see collect_nvml."""

    def __init__(self, pynvml, facts, subsets, deadline):
        self.nvml = pynvml
        self.facts = facts
        self.subsets = set(subsets)
        self.deadline = deadline
        self._error_class = pynvml.NVMLError
        self._mismatch_class = getattr(pynvml, "NVMLLibraryMismatchError", None)

    # ---------------------------------------------------------------- calling

    def _not_found_errors(self):
        return (self._mismatch_class,) if self._mismatch_class is not None else ()

    def call(self, index, calls, quiet=()):
        """Runs the first of `calls` ((wrapper name, args) pairs) that the driver and pynvml have.

        Returns (value, code): code is None on success, else the NVML code, already
        recorded in errors unless it is NOT_SUPPORTED or listed in `quiet`.
        """
        _name, value, code = self.first_answer(index, calls, quiet)
        return value, code

    def first_answer(self, index, calls, quiet=()):
        """As call, and also names the wrapper that answered (or failed last)."""
        last = None
        for name, args in calls:
            function = getattr(self.nvml, name, None)
            if function is None:
                continue
            try:
                return name, function(*args), None
            except self._error_class as err:
                code = getattr(err, "value", None)
                if code not in _FALLBACK_CODES:
                    return name, None, self._failed(index, name, str(err), code, quiet)
                last = (name, str(err), code)
            except self._not_found_errors() as err:
                last = (name, str(err), NVML_ERROR_FUNCTION_NOT_FOUND)
        if last is None:
            add_error(self.facts, index, calls[0][0], "not available in this pynvml version")
            return calls[0][0], None, NVML_ERROR_FUNCTION_NOT_FOUND
        return last[0], None, self._failed(index, last[0], last[1], last[2], quiet)

    def _failed(self, index, name, reason, code, quiet):
        if code in (NVML_ERROR_NOT_SUPPORTED, NVML_ERROR_FUNCTION_NOT_FOUND) or code in quiet:
            return code
        add_error(self.facts, index, name, reason, code)
        if code == NVML_ERROR_GPU_IS_LOST and index is not None:
            raise _GpuLost()
        return code

    def query(self, index, name, *args):
        return self.call(index, [(name, args)])[0]

    # ---------------------------------------------------------------- whole collection

    def run(self):
        if not self._init():
            return False
        self.facts["nvidia_present"] = True
        completed = False
        try:
            if "driver" in self.subsets:
                self._driver()
            if self.subsets & _PER_GPU_SUBSETS:
                self._gpus()
            completed = True
        finally:
            self._shutdown(report=completed)
        return True

    def _init(self):
        try:
            self.nvml.nvmlInit()
        except self._error_class as err:
            code = getattr(err, "value", None)
            add_error(self.facts, None, "nvmlInit", str(err), code)
            if code == NVML_ERROR_LIB_RM_VERSION_MISMATCH:
                self.facts["driver"]["mismatch"] = True
                self.facts["driver"]["mismatch_reason"] = (
                    "nvmlInit: NVML_ERROR_LIB_RM_VERSION_MISMATCH (%s): the loaded kernel module and "
                    "libnvidia-ml differ" % err)
            return False
        return True

    def _shutdown(self, report):
        """When another exception is already on its way out, a failing shutdown must not replace it."""
        try:
            self.nvml.nvmlShutdown()
        except self._error_class as err:
            if report:
                add_error(self.facts, None, "nvmlShutdown", str(err), getattr(err, "value", None))
        except Exception:  # pylint: disable=broad-except
            if report:
                raise

    def _driver(self):
        driver = self.facts["driver"]
        driver["version"] = _text(self.query(None, "nvmlSystemGetDriverVersion"))
        driver["nvml_version"] = _text(self.query(None, "nvmlSystemGetNVMLVersion"))
        driver["userspace_version"] = userspace_version_from_nvml(driver["nvml_version"])
        cuda, _code = self.call(None, [("nvmlSystemGetCudaDriverVersion_v2", ()),
                                       ("nvmlSystemGetCudaDriverVersion", ())])
        driver["cuda_driver_version"] = cuda_version_from_int(cuda)

    def _gpus(self):
        count = self.query(None, "nvmlDeviceGetCount") or 0
        for index in range(count):
            if self.deadline is not None and time.monotonic() > self.deadline:
                add_error(self.facts, index, "collect_nvml", "collection timed out before GPU %d" % index)
                return
            gpu = new_gpu(index)
            try:
                self._gpu(index, gpu)
            except _GpuLost:
                gpu["lost"] = True
            self.facts["gpus"].append(gpu)

    def _gpu(self, index, gpu):
        handle = self.query(index, "nvmlDeviceGetHandleByIndex", index)
        if handle is None:
            return
        self._identity(index, handle, gpu)
        if "gpus" in self.subsets:
            self._inventory(index, handle, gpu)
            self._memory(index, handle, gpu)
            self._thermal_and_power(index, handle, gpu)
            self._clocks(index, handle, gpu)
            self._memory_errors(index, handle, gpu)
            self._pcie(index, handle, gpu)
            self._modes(index, handle, gpu)
            gpu["fabric"] = self._fabric(index, handle)
            gpu["recovery_action"] = self._recovery_action(index, handle)
        if "nvlink" in self.subsets:
            gpu["nvlinks"] = self._nvlinks(index, handle)
        if "mig" in self.subsets:
            self._mig(index, handle, gpu)
        if "processes" in self.subsets:
            gpu["processes"] = self._processes(index, handle)

    # ---------------------------------------------------------------- per GPU

    def _identity(self, index, handle, gpu):
        gpu["name"] = _text(self.query(index, "nvmlDeviceGetName", handle))
        gpu["uuid"] = _text(self.query(index, "nvmlDeviceGetUUID", handle))
        pci = self.query(index, "nvmlDeviceGetPciInfo", handle)
        if pci is not None:
            gpu["pci_bus_id"] = normalize_pci_bus_id(_text(pci.busId) or _text(pci.busIdLegacy))

    def _inventory(self, index, handle, gpu):
        gpu["serial"] = _text(self.query(index, "nvmlDeviceGetSerial", handle))
        gpu["board_part_number"] = _text(self.query(index, "nvmlDeviceGetBoardPartNumber", handle))
        gpu["vbios_version"] = _text(self.query(index, "nvmlDeviceGetVbiosVersion", handle))
        architecture = self.query(index, "nvmlDeviceGetArchitecture", handle)
        gpu["architecture"] = ARCHITECTURES.get(architecture)
        capability = self.query(index, "nvmlDeviceGetCudaComputeCapability", handle)
        if capability is not None:
            gpu["compute_capability"] = "%d.%d" % (capability[0], capability[1])

    def _memory(self, index, handle, gpu):
        memory = gpu["memory"]
        calls = [("nvmlDeviceGetMemoryInfo", (handle,))]
        version = getattr(self.nvml, "nvmlMemory_v2", None)
        if version is not None:
            calls.insert(0, ("nvmlDeviceGetMemoryInfo", (handle, version)))
        info, _code = self.call(index, calls)
        if info is not None:
            memory["total_mib"] = bytes_to_mib(info.total)
            memory["used_mib"] = bytes_to_mib(info.used)
            memory["free_mib"] = bytes_to_mib(info.free)
            memory["reserved_mib"] = bytes_to_mib(getattr(info, "reserved", None))
        bar1 = self.query(index, "nvmlDeviceGetBAR1MemoryInfo", handle)
        if bar1 is not None:
            memory["bar1_total_mib"] = bytes_to_mib(bar1.bar1Total)
            memory["bar1_used_mib"] = bytes_to_mib(bar1.bar1Used)

    def _thermal_and_power(self, index, handle, gpu):
        temperature = gpu["temperature"]
        temperature["gpu_c"] = self.query(index, "nvmlDeviceGetTemperature", handle, _TEMPERATURE_GPU)
        temperature["slowdown_c"] = self.query(index, "nvmlDeviceGetTemperatureThreshold", handle,
                                               _THRESHOLD_SLOWDOWN)
        temperature["shutdown_c"] = self.query(index, "nvmlDeviceGetTemperatureThreshold", handle,
                                               _THRESHOLD_SHUTDOWN)
        power = gpu["power"]
        power["draw_w"] = _watts(self.query(index, "nvmlDeviceGetPowerUsage", handle))
        power["limit_w"] = _watts(self.query(index, "nvmlDeviceGetEnforcedPowerLimit", handle))
        power["default_limit_w"] = _watts(self.query(index, "nvmlDeviceGetPowerManagementDefaultLimit", handle))
        constraints = self.query(index, "nvmlDeviceGetPowerManagementLimitConstraints", handle)
        if constraints is not None:
            power["min_limit_w"], power["max_limit_w"] = _watts(constraints[0]), _watts(constraints[1])
        gpu["fan_speed_pct"] = self.query(index, "nvmlDeviceGetFanSpeed", handle)

    def _clocks(self, index, handle, gpu):
        clocks = gpu["clocks"]
        for key, clock_type in _CLOCK_TYPES:
            clocks["%s_mhz" % key] = self.query(index, "nvmlDeviceGetClockInfo", handle, clock_type)
        for key, clock_type in _CLOCK_TYPES:
            clocks["max_%s_mhz" % key] = self.query(index, "nvmlDeviceGetMaxClockInfo", handle, clock_type)
        mask, _code = self.call(index, [("nvmlDeviceGetCurrentClocksEventReasons", (handle,)),
                                        ("nvmlDeviceGetCurrentClocksThrottleReasons", (handle,))])
        gpu["clock_event_reasons"] = {"mask": mask, "active": decode_clock_event_reasons(mask)}
        gpu["performance_state"] = _pstate_name(self.query(index, "nvmlDeviceGetPerformanceState", handle))
        utilization = self.query(index, "nvmlDeviceGetUtilizationRates", handle)
        if utilization is not None:
            gpu["utilization"] = {"gpu_pct": utilization.gpu, "memory_pct": utilization.memory}

    def _memory_errors(self, index, handle, gpu):
        ecc = gpu["ecc"]
        modes = self.query(index, "nvmlDeviceGetEccMode", handle)
        if modes is not None:
            ecc["mode_current"], ecc["mode_pending"] = _enabled(modes[0]), _enabled(modes[1])
        for key, error_type, counter_type in _ECC_COUNTERS:
            ecc[key] = self.query(index, "nvmlDeviceGetTotalEccErrors", handle, error_type, counter_type)
        retired = gpu["retired_pages"]
        for key, cause in _RETIREMENT_CAUSES:
            pages = self.query(index, "nvmlDeviceGetRetiredPages", handle, cause)
            retired[key] = None if pages is None else len(pages)
        retired["pending"] = _enabled(self.query(index, "nvmlDeviceGetRetiredPagesPendingStatus", handle))
        rows = self.query(index, "nvmlDeviceGetRemappedRows", handle)
        if rows is not None:
            gpu["remapped_rows"] = {"correctable": rows[0], "uncorrectable": rows[1],
                                    "pending": bool(rows[2]), "failure": bool(rows[3])}

    def _pcie(self, index, handle, gpu):
        pcie = gpu["pcie"]
        pcie["gen_current"] = self.query(index, "nvmlDeviceGetCurrPcieLinkGeneration", handle)
        pcie["gen_max"] = self.query(index, "nvmlDeviceGetMaxPcieLinkGeneration", handle)
        pcie["width_current"] = self.query(index, "nvmlDeviceGetCurrPcieLinkWidth", handle)
        pcie["width_max"] = self.query(index, "nvmlDeviceGetMaxPcieLinkWidth", handle)
        pcie["replay_counter"] = self.query(index, "nvmlDeviceGetPcieReplayCounter", handle)

    def _modes(self, index, handle, gpu):
        mode = self.query(index, "nvmlDeviceGetComputeMode", handle)
        gpu["compute_mode"] = COMPUTE_MODES[mode] if mode is not None and 0 <= mode < len(COMPUTE_MODES) else None
        gpu["persistence_mode"] = _enabled(self.query(index, "nvmlDeviceGetPersistenceMode", handle))

    def _fabric(self, index, handle):
        infos = {}
        calls = []
        for name, struct_name in (("nvmlDeviceGetGpuFabricInfoV", "c_nvmlGpuFabricInfo_v2_t"),
                                  ("nvmlDeviceGetGpuFabricInfo", "c_nvmlGpuFabricInfo_t")):
            struct_class = getattr(self.nvml, struct_name, None)
            if struct_class is not None:
                infos[name] = struct_class()
                calls.append((name, (handle, ctypes.byref(infos[name]))))
        if not calls:
            return None
        name, _value, code = self.first_answer(index, calls)
        return self._fabric_facts(infos[name]) if code is None else None

    def _recovery_action(self, index, handle):
        """The driver's GPU recovery action (a field value of newer drivers); None where the pynvml or the driver
        has none. A value beyond the known ones is kept as nvml_<value>, so the audit can name it."""
        if getattr(self.nvml, "nvmlDeviceGetFieldValues", None) is None:
            return None
        field_id = getattr(self.nvml, "NVML_FI_DEV_GET_GPU_RECOVERY_ACTION", _FIELD_GPU_RECOVERY_ACTION)
        values = self.query(index, "nvmlDeviceGetFieldValues", handle, [field_id])
        if not values or getattr(values[0], "nvmlReturn", None) != NVML_SUCCESS:
            return None
        value = int(values[0].value.uiVal)
        return RECOVERY_ACTIONS[value] if 0 <= value < len(RECOVERY_ACTIONS) else "nvml_%d" % value

    def _fabric_facts(self, info):
        raw = bytes(bytearray(info.clusterUuid))
        return {
            "state": FABRIC_STATES.get(info.state),
            "status": "success" if info.status == NVML_SUCCESS else self._error_name(info.status),
            "clique_id": info.cliqueId,
            "cluster_uuid": str(uuid.UUID(bytes=raw)) if any(bytearray(raw)) else None,
        }

    def _error_name(self, code):
        for name in dir(self.nvml):
            if name.startswith("NVML_ERROR_") and getattr(self.nvml, name) == code:
                return name[len("NVML_ERROR_"):].lower()
        return "error_%d" % code

    def _nvlinks(self, index, handle):
        links = []
        for link in range(getattr(self.nvml, "NVML_NVLINK_MAX_LINKS", 18)):
            state, code = self.call(index, [("nvmlDeviceGetNvLinkState", (handle, link))],
                                    quiet=(NVML_ERROR_INVALID_ARGUMENT,))
            if code in (NVML_ERROR_NOT_SUPPORTED, NVML_ERROR_INVALID_ARGUMENT):
                break
            errors = dict((key, self.query(index, "nvmlDeviceGetNvLinkErrorCounter", handle, link, counter))
                          for key, counter in _NVLINK_COUNTERS)
            links.append({"link": link, "active": _enabled(state), "errors": errors})
        return links

    # ---------------------------------------------------------------- MIG

    def _mig(self, index, handle, gpu):
        mig = gpu["mig"]
        modes = self.query(index, "nvmlDeviceGetMigMode", handle)
        if modes is None:
            return
        mig["mode_current"], mig["mode_pending"] = _enabled(modes[0]), _enabled(modes[1])
        if mig["mode_current"]:
            total_mib = gpu["memory"]["total_mib"] or self._total_memory_mib(index, handle)
            mig["gpu_instances"] = self._gpu_instances(index, handle, total_mib)

    def _total_memory_mib(self, index, handle):
        info = self.query(index, "nvmlDeviceGetMemoryInfo", handle)
        return None if info is None else bytes_to_mib(info.total)

    def _gi_profiles(self, index, handle):
        """(profile enum, profile info) for every GPU-instance profile this GPU has."""
        profiles = []
        seen = set()
        for profile in range(getattr(self.nvml, "NVML_GPU_INSTANCE_PROFILE_COUNT", 8)):
            info, _code = self.call(index, [("nvmlDeviceGetGpuInstanceProfileInfo", (handle, profile)),
                                            ("nvmlDeviceGetGpuInstanceProfileInfo", (handle, profile, 1))],
                                    quiet=(NVML_ERROR_INVALID_ARGUMENT,))
            if info is not None and info.id not in seen:
                seen.add(info.id)
                profiles.append((profile, info))
        return profiles

    def _gpu_instances(self, index, handle, total_mib):
        instances = []
        for profile, info in self._gi_profiles(index, handle):
            name = _nvml_profile_name(info) or gpu_instance_profile_name(
                profile, info.sliceCount, mig_memory_gb(info.memorySizeMB, total_mib))
            for gi_handle in self._instance_handles(index, "nvmlDeviceGetGpuInstances", handle, info,
                                                    self.nvml.c_nvmlGpuInstance_t):
                gi_info = self.query(index, "nvmlGpuInstanceGetInfo", gi_handle)
                if gi_info is None:
                    continue
                instances.append({
                    "id": gi_info.id,
                    "profile_id": gi_info.profileId,
                    "profile_name": name,
                    "placement": _placement(gi_info.placement),
                    "memory_mib": int(info.memorySizeMB),
                    "compute_instances": self._compute_instances(index, gi_handle, info.sliceCount, name),
                })
        return sorted(instances, key=lambda instance: instance["id"])

    def _instance_handles(self, index, name, parent, profile_info, handle_type):
        capacity = max(int(profile_info.instanceCount), 1)
        handles = (handle_type * capacity)()
        count = ctypes.c_uint(0)
        if self.query(index, name, parent, profile_info.id, handles, ctypes.byref(count)) is None:
            return []
        return [handles[position] for position in range(min(count.value, capacity))]

    def _compute_instances(self, index, gi_handle, gi_slices, gi_name):
        instances = []
        seen = set()
        for profile in range(getattr(self.nvml, "NVML_COMPUTE_INSTANCE_PROFILE_COUNT", 8)):
            info, _code = self.call(
                index, [("nvmlGpuInstanceGetComputeInstanceProfileInfo", (gi_handle, profile, _ENGINE_PROFILE_SHARED)),
                        ("nvmlGpuInstanceGetComputeInstanceProfileInfo",
                         (gi_handle, profile, _ENGINE_PROFILE_SHARED, 1))],
                quiet=(NVML_ERROR_INVALID_ARGUMENT,))
            if info is None or info.id in seen:
                continue
            seen.add(info.id)
            name = _nvml_profile_name(info) or compute_instance_profile_name(info.sliceCount, gi_slices, gi_name)
            for ci_handle in self._instance_handles(index, "nvmlGpuInstanceGetComputeInstances", gi_handle, info,
                                                    self.nvml.c_nvmlComputeInstance_t):
                ci_info = self.query(index, "nvmlComputeInstanceGetInfo", ci_handle)
                if ci_info is not None:
                    instances.append({"id": ci_info.id, "profile_id": ci_info.profileId, "profile_name": name,
                                      "placement": _placement(ci_info.placement)})
        return sorted(instances, key=lambda instance: instance["id"])

    # ---------------------------------------------------------------- processes

    def _processes(self, index, handle):
        running, _code = self.call(index, [("nvmlDeviceGetComputeRunningProcesses", (handle,)),
                                           ("nvmlDeviceGetComputeRunningProcesses_v2", (handle,))])
        processes = []
        for entry in running or []:
            process = new_process(int(entry.pid))
            process["type"] = "compute"
            process["used_memory_mib"] = bytes_to_mib(entry.usedGpuMemory)
            gi_id, ci_id = getattr(entry, "gpuInstanceId", None), getattr(entry, "computeInstanceId", None)
            process["gpu_instance_id"] = None if _not_available(gi_id) else int(gi_id)
            process["compute_instance_id"] = None if _not_available(ci_id) else int(ci_id)
            process["name"] = _text(self.query(index, "nvmlSystemGetProcessName", process["pid"]))
            processes.append(process)
        return processes


def collect_nvml(pynvml, facts, subsets, deadline=None):
    """Fills `facts` through NVML. Returns False when NVML could not start (no driver or
    library, a driver/library mismatch): the caller then tries nvidia-smi.

    subsets: names among driver, gpus, processes, mig, nvlink; others are ignored.
    deadline: a time.monotonic() value checked between GPUs. Each GPU record is appended
    to facts["gpus"] once complete, so a caller that gives up waiting keeps those.
    """
    return _NvmlCollector(pynvml, facts, subsets, deadline).run()
