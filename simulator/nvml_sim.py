"""A simulated libnvidia-ml: the C functions gpufleet's NVML backend calls, answered from a plain dict.

Put it where pynvml expects the C library (nvml_fixture.use_library) and the unmodified
pynvml code calls it exactly as it would call libnvidia-ml through ctypes: each function
receives the ctypes arguments pynvml builds (byref objects, string buffers, arrays of
structures or handles), writes its answer into them and returns an NVML return code.
Record it with RecordingLibrary(SimulatedNvmlLibrary(scenario)) to make a fixture.

Scenario (every key optional unless noted; sizes in MiB, power in W, as people read them):

    driver_version "550.90.07", nvml_version "12.550.90.07", cuda_driver_version 12040
    init_error         NVML return code of nvmlInitWithFlags (9 = driver not loaded, 18 = mismatch)
    errors             {C function name: return code} for system-wide functions
    missing_functions  C function names the library does not export (an older driver)
    gpus: [
      name, uuid, serial, pci_bus_id ("00000000:18:00.0"), pci_device_id, pci_subsystem_id,
      board_part_number, vbios_version, architecture (NVML enum), compute_capability [9, 0],
      memory {total_mib, reserved_mib, used_mib}, bar1 {total_mib, used_mib},
      temperature {gpu_c, slowdown_c, shutdown_c}, power {draw_w, limit_w, default_limit_w,
      min_limit_w, max_limit_w}, fan_speed_pct, clocks {graphics_mhz, sm_mhz, memory_mhz,
      max_graphics_mhz, max_sm_mhz, max_memory_mhz}, clock_event_mask, performance_state,
      utilization {gpu_pct, memory_pct}, ecc {mode_current, mode_pending, volatile_corrected,
      volatile_uncorrected, aggregate_corrected, aggregate_uncorrected},
      retired_pages {single_bit: [addresses], double_bit: [addresses], pending} or None,
      remapped_rows {correctable, uncorrectable, pending, failure} or None,
      pcie {gen_current, gen_max, width_current, width_max, replay_counter},
      nvlinks [{active, errors {replay, recovery, crc_flit, crc_data}}] (empty: no NVLink),
      compute_mode (NVML enum), persistence_mode,
      mig None (not MIG capable) or {current, pending, profiles (enum -> profile info; default
        H100 80GB), gpu_instances [{id, profile_id, placement {start, size},
        compute_instances [{id, profile_id, placement {start, size}}]}]},
      processes [{pid, name, used_mib, gpu_instance_id, compute_instance_id}] (name None: the
        process is gone, nvmlSystemGetProcessName answers NOT_FOUND),
      fabric None or {state, status, clique_id, cluster_uuid},
      recovery_action  NVML GPU recovery action value (field 230 of nvmlDeviceGetFieldValues); absent or
                  None: the field is not supported (an older driver)
      lost        True: the GPU fell off the bus (nvmlDeviceGetHandleByIndex answers GPU_IS_LOST)
      errors      {C function name: return code} injected for this GPU, e.g. {"nvmlDeviceGetFanSpeed": 3}
    ]

A value of None in a GPU makes its query answer NVML_ERROR_NOT_SUPPORTED, as NVML does
for a feature the board lacks.
"""

import copy
import ctypes
import uuid

import pynvml

from ansible_collections.gpufleet.core.plugins.module_utils.facts_model import new_facts
from ansible_collections.gpufleet.core.plugins.module_utils.nvml_collect import collect_nvml
from ansible_collections.gpufleet.core.plugins.module_utils.nvml_fixture import use_library
from simulator.gpu_models import model, pci_id

SUCCESS = pynvml.NVML_SUCCESS
NOT_SUPPORTED = pynvml.NVML_ERROR_NOT_SUPPORTED
_FIELD_GPU_RECOVERY_ACTION = 230  # NVML_FI_DEV_GET_GPU_RECOVERY_ACTION
_VALUE_TYPE_UNSIGNED_INT = 1
INVALID_ARGUMENT = pynvml.NVML_ERROR_INVALID_ARGUMENT
UNINITIALIZED = pynvml.NVML_ERROR_UNINITIALIZED
NOT_FOUND = pynvml.NVML_ERROR_NOT_FOUND
INSUFFICIENT_SIZE = pynvml.NVML_ERROR_INSUFFICIENT_SIZE
GPU_IS_LOST = pynvml.NVML_ERROR_GPU_IS_LOST
VERSION_MISMATCH = pynvml.NVML_ERROR_ARGUMENT_VERSION_MISMATCH

MIB = 1024 * 1024
NA_UINT = 0xFFFFFFFF
_CARG_TYPE = type(ctypes.byref(ctypes.c_int()))

_ERROR_STRINGS = dict(pynvml.NVMLError._errcode_to_string)
_ERROR_STRINGS.update({
    pynvml.NVML_ERROR_NO_DATA: "No data",
    pynvml.NVML_ERROR_ARGUMENT_VERSION_MISMATCH: "Argument version mismatch",
    pynvml.NVML_ERROR_NOT_READY: "Not ready",
    pynvml.NVML_ERROR_GPU_NOT_FOUND: "GPU not found",
    pynvml.NVML_ERROR_INVALID_STATE: "Invalid state",
})

# GPU-instance profiles of an H100 80GB, from `nvidia-smi mig -lgip` on 4x H100 SXM5 80GB
# (../shared/realdata/nvsmi-mig-lgip_4xh100-sxm5-80gb_stackhpc.txt); keyed by the NVML
# profile enum passed to nvmlDeviceGetGpuInstanceProfileInfo. Memory is the GiB column x 1024.
_H100_GI_PROFILES = {
    pynvml.NVML_GPU_INSTANCE_PROFILE_1_SLICE: dict(id=19, slices=1, instances=7, sm=16, ce=1, dec=1, jpeg=1,
                                                   ofa=0, memory_mb=9984),
    pynvml.NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV1: dict(id=20, slices=1, instances=1, sm=16, ce=1, dec=1, jpeg=1,
                                                        ofa=1, memory_mb=9984),
    pynvml.NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV2: dict(id=15, slices=1, instances=4, sm=26, ce=1, dec=1, jpeg=1,
                                                        ofa=0, memory_mb=20096),
    pynvml.NVML_GPU_INSTANCE_PROFILE_2_SLICE: dict(id=14, slices=2, instances=3, sm=32, ce=2, dec=2, jpeg=2,
                                                   ofa=0, memory_mb=20096),
    pynvml.NVML_GPU_INSTANCE_PROFILE_3_SLICE: dict(id=9, slices=3, instances=2, sm=60, ce=3, dec=3, jpeg=3,
                                                   ofa=0, memory_mb=40448),
    pynvml.NVML_GPU_INSTANCE_PROFILE_4_SLICE: dict(id=5, slices=4, instances=1, sm=64, ce=4, dec=4, jpeg=4,
                                                   ofa=0, memory_mb=40448),
    pynvml.NVML_GPU_INSTANCE_PROFILE_7_SLICE: dict(id=0, slices=7, instances=1, sm=132, ce=8, dec=7, jpeg=7,
                                                   ofa=1, memory_mb=81152),
}
MIG_PROFILES = {"h100_80gb": _H100_GI_PROFILES}

# Compute-instance profile enum -> compute slices; NVML uses the enum as the CI profile id.
_CI_PROFILE_SLICES = {
    pynvml.NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE: 1,
    pynvml.NVML_COMPUTE_INSTANCE_PROFILE_2_SLICE: 2,
    pynvml.NVML_COMPUTE_INSTANCE_PROFILE_3_SLICE: 3,
    pynvml.NVML_COMPUTE_INSTANCE_PROFILE_4_SLICE: 4,
    pynvml.NVML_COMPUTE_INSTANCE_PROFILE_7_SLICE: 7,
}

_NVLINK_COUNTERS = {
    pynvml.NVML_NVLINK_ERROR_DL_REPLAY: "replay",
    pynvml.NVML_NVLINK_ERROR_DL_RECOVERY: "recovery",
    pynvml.NVML_NVLINK_ERROR_DL_CRC_FLIT: "crc_flit",
    pynvml.NVML_NVLINK_ERROR_DL_CRC_DATA: "crc_data",
}
_CLOCK_KEYS = {pynvml.NVML_CLOCK_GRAPHICS: "graphics", pynvml.NVML_CLOCK_SM: "sm", pynvml.NVML_CLOCK_MEM: "memory"}
_THRESHOLD_KEYS = {pynvml.NVML_TEMPERATURE_THRESHOLD_SLOWDOWN: "slowdown_c",
                   pynvml.NVML_TEMPERATURE_THRESHOLD_SHUTDOWN: "shutdown_c"}
_ECC_KEYS = {
    (pynvml.NVML_MEMORY_ERROR_TYPE_CORRECTED, pynvml.NVML_VOLATILE_ECC): "volatile_corrected",
    (pynvml.NVML_MEMORY_ERROR_TYPE_UNCORRECTED, pynvml.NVML_VOLATILE_ECC): "volatile_uncorrected",
    (pynvml.NVML_MEMORY_ERROR_TYPE_CORRECTED, pynvml.NVML_AGGREGATE_ECC): "aggregate_corrected",
    (pynvml.NVML_MEMORY_ERROR_TYPE_UNCORRECTED, pynvml.NVML_AGGREGATE_ECC): "aggregate_uncorrected",
}
_RETIREMENT_KEYS = {pynvml.NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS: "single_bit",
                    pynvml.NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR: "double_bit"}

# 8-GPU HGX H100 baseboard bus numbers (as on DGX H100)
_H100_BUSES = (0x18, 0x2A, 0x3A, 0x5D, 0x9A, 0xAB, 0xBA, 0xDB)


# ---------------------------------------------------------------- scenarios

def catalog_values(name):
    """The fields of an NVML GPU scenario that come from the model catalog (simulator/gpu_models.json)."""
    entry = model(name)
    limits = entry["power_limits_w"]
    return {
        "name": name,
        "pci_device_id": pci_id(name),
        "pci_subsystem_id": pci_id(name, "pci_sub_system_id"),
        "board_part_number": entry["board_part_number"],
        "architecture": getattr(pynvml, "NVML_DEVICE_ARCH_" + entry["architecture"].upper()),
        "compute_capability": [int(part) for part in entry["compute_capability"].split(".")],
        "memory_total_mib": entry["memory_total_mib"],
        "bar1_total_mib": entry["bar1_total_mib"],
        "limit_w": limits["default"], "min_limit_w": limits["min"], "max_limit_w": limits["max"],
        "pcie_gen_max": entry["pcie_gen_max"],
        "nvlinks": entry["nvlinks"],
    }


def h100_gpu(index):
    """One healthy, idle H100 80GB HBM3 SXM5 with ECC on and all 18 NVLinks up."""
    bus = _H100_BUSES[index % len(_H100_BUSES)] + 0x100 * (index // len(_H100_BUSES))
    h100 = catalog_values("NVIDIA H100 80GB HBM3")
    return {
        "name": h100["name"],
        "uuid": "GPU-%s" % uuid.uuid5(uuid.NAMESPACE_DNS, "gpufleet-sim-h100-%d" % index),
        "serial": "16524230%05d" % (17 + index * 311),
        "pci_bus_id": "%08X:%02X:00.0" % (bus >> 8, bus & 0xFF),
        "pci_device_id": h100["pci_device_id"],
        "pci_subsystem_id": h100["pci_subsystem_id"],
        "board_part_number": h100["board_part_number"],
        "vbios_version": "96.00.89.00.01",
        "architecture": h100["architecture"],
        "compute_capability": h100["compute_capability"],
        "memory": {"total_mib": h100["memory_total_mib"], "reserved_mib": 328, "used_mib": 0},
        "bar1": {"total_mib": h100["bar1_total_mib"], "used_mib": 1},
        "temperature": {"gpu_c": 31 + index % 3, "slowdown_c": 89, "shutdown_c": 92},
        "power": {"draw_w": 71.234 + index, "limit_w": h100["limit_w"], "default_limit_w": h100["limit_w"],
                  "min_limit_w": h100["min_limit_w"], "max_limit_w": h100["max_limit_w"]},
        "fan_speed_pct": None,
        "clocks": {"graphics_mhz": 345, "sm_mhz": 345, "memory_mhz": 2619,
                   "max_graphics_mhz": 1980, "max_sm_mhz": 1980, "max_memory_mhz": 2619},
        "clock_event_mask": 0x1,
        "performance_state": 0,
        "utilization": {"gpu_pct": 0, "memory_pct": 0},
        "ecc": {"mode_current": True, "mode_pending": True, "volatile_corrected": 0, "volatile_uncorrected": 0,
                "aggregate_corrected": 0, "aggregate_uncorrected": 0},
        "retired_pages": None,
        "remapped_rows": {"correctable": 0, "uncorrectable": 0, "pending": False, "failure": False},
        "pcie": {"gen_current": h100["pcie_gen_max"], "gen_max": h100["pcie_gen_max"], "width_current": 16,
                 "width_max": 16, "replay_counter": 0},
        "nvlinks": [{"active": True, "errors": {"replay": 0, "recovery": 0, "crc_flit": 0, "crc_data": 0}}
                    for _link in range(h100["nvlinks"])],
        "compute_mode": pynvml.NVML_COMPUTEMODE_DEFAULT,
        "persistence_mode": True,
        "mig": {"current": 0, "pending": 0, "profiles": "h100_80gb", "gpu_instances": []},
        "processes": [],
        "fabric": {"state": pynvml.NVML_GPU_FABRIC_STATE_COMPLETED, "status": SUCCESS, "clique_id": 32766,
                   "cluster_uuid": "f4c3b9f2-6d1e-4c8a-9a57-2b9de0a51c07"},
        "lost": False,
        "errors": {},
    }


def scenario_h100_node(n=8):
    """A healthy n x H100 80GB HBM3 SXM5 node on driver 550.90.07 (CUDA 12.4); derive other scenarios from it."""
    return {
        "driver_version": "550.90.07",
        "nvml_version": "12.550.90.07",
        "cuda_driver_version": 12040,
        "init_error": None,
        "errors": {},
        "missing_functions": [],
        "gpus": [h100_gpu(index) for index in range(n)],
    }


NVML_SUBSETS = frozenset(("driver", "gpus", "processes", "mig", "nvlink"))


def collect_through(library, subsets=NVML_SUBSETS, deadline=None):
    """Runs the real collect_nvml through the real pynvml against `library`; returns (answered, facts)."""
    facts = new_facts()
    facts["collected_at"] = "2026-01-01T00:00:00Z"
    with use_library(pynvml, library):
        answered = collect_nvml(pynvml, facts, set(subsets), deadline=deadline)
    return answered, facts


# ---------------------------------------------------------------- ctypes helpers

def _target(arg):
    return arg._obj if isinstance(arg, _CARG_TYPE) else arg


def _int(arg):
    return int(getattr(arg, "value", arg))


def _address(handle):
    return ctypes.cast(handle, ctypes.c_void_p).value if handle is not None else None


def _store_handle(target, address):
    ctypes.c_void_p.from_address(ctypes.addressof(target)).value = address


def _set(ref, value):
    """Writes one scalar answer; None means the board does not support the query."""
    if value is None:
        return NOT_SUPPORTED
    _target(ref).value = value
    return SUCCESS


def _text(buffer, length, text):
    if text is None:
        return NOT_SUPPORTED
    raw = text.encode()
    if len(raw) + 1 > _int(length):
        return INSUFFICIENT_SIZE
    ctypes.memmove(buffer, raw + b"\0", len(raw) + 1)
    return SUCCESS


def _section(gpu, key, field):
    section = gpu.get(key)
    return None if section is None else section.get(field)


def _mw(watts):
    return None if watts is None else int(round(watts * 1000))


class _SimFunction:
    """A C function as pynvml sees it: callable, with a restype pynvml may set."""

    def __init__(self, method):
        self._method = method
        self.restype = ctypes.c_int

    def __call__(self, *args):
        return self._method(*args)


class SimulatedNvmlLibrary:
    """Fake libnvidia-ml driven by a scenario dict; `calls` lists (function, gpu index or None) in call order."""

    def __init__(self, scenario):
        self._impl = _SimulatedNvml(copy.deepcopy(scenario))
        self._missing = set(scenario.get("missing_functions") or ())

    @property
    def calls(self):
        return self._impl.calls

    def __getattr__(self, name):
        if not name.startswith("nvml") or name in self._missing:
            raise AttributeError(name)
        method = getattr(self._impl, name, None)
        if method is None:
            raise AttributeError(name)
        return _SimFunction(method)


class _SimulatedNvml:
    """The C functions. Device handles, GPU-instance and compute-instance handles are fake addresses."""

    _DEVICE_BASE = 0x10000000
    _DEVICE_STEP = 0x1000

    def __init__(self, scenario):
        self.scenario = scenario
        self.gpus = scenario.get("gpus") or []
        self.initialised = False
        self.calls = []
        self._objects = {}
        for index, gpu in enumerate(self.gpus):
            self._objects[self._device_address(index)] = ("device", index, None, None)
            for gi in (gpu.get("mig") or {}).get("gpu_instances", []):
                self._objects[self._gi_address(index, gi["id"])] = ("gi", index, gi, None)
                for ci in gi.get("compute_instances", []):
                    self._objects[self._ci_address(index, gi["id"], ci["id"])] = ("ci", index, gi, ci)

    def _device_address(self, index):
        return self._DEVICE_BASE + self._DEVICE_STEP * (index + 1)

    def _gi_address(self, index, gi_id):
        return self._device_address(index) + 0x100 + 0x10 * gi_id

    def _ci_address(self, index, gi_id, ci_id):
        return self._device_address(index) + 0x400 + 0x40 * gi_id + ci_id

    # ---------------------------------------------------------------- dispatch

    def _system(self, fn, answer):
        self.calls.append((fn, None))
        if not self.initialised:
            return UNINITIALIZED
        injected = (self.scenario.get("errors") or {}).get(fn)
        return injected if injected is not None else answer()

    def _on(self, fn, handle, kind, answer):
        """Runs answer(gpu, gi, ci) for the object behind `handle`, after the checks NVML makes."""
        found = self._objects.get(_address(handle))
        index = found[1] if found else None
        self.calls.append((fn, index))
        if not self.initialised:
            return UNINITIALIZED
        if found is None or found[0] != kind:
            return INVALID_ARGUMENT
        gpu = self.gpus[index]
        if gpu.get("lost"):
            return GPU_IS_LOST
        injected = (gpu.get("errors") or {}).get(fn)
        if injected is not None:
            return injected
        return answer(gpu, found[2], found[3])

    def _device(self, fn, handle, answer):
        return self._on(fn, handle, "device", lambda gpu, _gi, _ci: answer(gpu))

    # ---------------------------------------------------------------- system

    def nvmlInitWithFlags(self, _flags):
        self.calls.append(("nvmlInitWithFlags", None))
        code = self.scenario.get("init_error") or SUCCESS
        self.initialised = code == SUCCESS
        return code

    def nvmlInit_v2(self):
        return self.nvmlInitWithFlags(0)

    def nvmlShutdown(self):
        self.calls.append(("nvmlShutdown", None))
        if not self.initialised:
            return UNINITIALIZED
        self.initialised = False
        return SUCCESS

    def nvmlErrorString(self, code):
        return _ERROR_STRINGS.get(_int(code), "Unknown Error").encode()

    def nvmlSystemGetDriverVersion(self, buffer, length):
        return self._system("nvmlSystemGetDriverVersion",
                            lambda: _text(buffer, length, self.scenario.get("driver_version")))

    def nvmlSystemGetNVMLVersion(self, buffer, length):
        return self._system("nvmlSystemGetNVMLVersion",
                            lambda: _text(buffer, length, self.scenario.get("nvml_version")))

    def nvmlSystemGetCudaDriverVersion(self, ref):
        return self._system("nvmlSystemGetCudaDriverVersion",
                            lambda: _set(ref, self.scenario.get("cuda_driver_version")))

    def nvmlSystemGetCudaDriverVersion_v2(self, ref):
        return self._system("nvmlSystemGetCudaDriverVersion_v2",
                            lambda: _set(ref, self.scenario.get("cuda_driver_version")))

    def nvmlSystemGetProcessName(self, pid, buffer, length):
        def answer():
            for gpu in self.gpus:
                for process in gpu.get("processes") or []:
                    if process["pid"] == _int(pid) and process.get("name") is not None:
                        return _text(buffer, length, process["name"])
            return NOT_FOUND
        return self._system("nvmlSystemGetProcessName", answer)

    def nvmlDeviceGetCount_v2(self, ref):
        return self._system("nvmlDeviceGetCount_v2", lambda: _set(ref, len(self.gpus)))

    def nvmlDeviceGetHandleByIndex_v2(self, index, ref):
        index = _int(index)
        self.calls.append(("nvmlDeviceGetHandleByIndex_v2", index))
        if not self.initialised:
            return UNINITIALIZED
        if not 0 <= index < len(self.gpus):
            return INVALID_ARGUMENT
        gpu = self.gpus[index]
        if gpu.get("lost"):
            return GPU_IS_LOST
        injected = (gpu.get("errors") or {}).get("nvmlDeviceGetHandleByIndex_v2")
        if injected is not None:
            return injected
        _store_handle(_target(ref), self._device_address(index))
        return SUCCESS

    # ---------------------------------------------------------------- identity

    def nvmlDeviceGetName(self, handle, buffer, length):
        return self._device("nvmlDeviceGetName", handle, lambda gpu: _text(buffer, length, gpu.get("name")))

    def nvmlDeviceGetUUID(self, handle, buffer, length):
        return self._device("nvmlDeviceGetUUID", handle, lambda gpu: _text(buffer, length, gpu.get("uuid")))

    def nvmlDeviceGetSerial(self, handle, buffer, length):
        return self._device("nvmlDeviceGetSerial", handle, lambda gpu: _text(buffer, length, gpu.get("serial")))

    def nvmlDeviceGetBoardPartNumber(self, handle, buffer, length):
        return self._device("nvmlDeviceGetBoardPartNumber", handle,
                            lambda gpu: _text(buffer, length, gpu.get("board_part_number")))

    def nvmlDeviceGetVbiosVersion(self, handle, buffer, length):
        return self._device("nvmlDeviceGetVbiosVersion", handle,
                            lambda gpu: _text(buffer, length, gpu.get("vbios_version")))

    def nvmlDeviceGetPciInfo_v3(self, handle, ref):
        def answer(gpu):
            bus_id = gpu.get("pci_bus_id")
            if bus_id is None:
                return NOT_SUPPORTED
            domain, bus, rest = bus_id.split(":")
            info = _target(ref)
            info.busId = bus_id.encode()
            info.busIdLegacy = ("%04X:%s:%s" % (int(domain, 16) & 0xFFFF, bus, rest)).encode()
            info.domain = int(domain, 16)
            info.bus = int(bus, 16)
            info.device = int(rest.split(".")[0], 16)
            info.pciDeviceId = gpu.get("pci_device_id") or 0
            info.pciSubSystemId = gpu.get("pci_subsystem_id") or 0
            return SUCCESS
        return self._device("nvmlDeviceGetPciInfo_v3", handle, answer)

    def nvmlDeviceGetArchitecture(self, handle, ref):
        return self._device("nvmlDeviceGetArchitecture", handle, lambda gpu: _set(ref, gpu.get("architecture")))

    def nvmlDeviceGetCudaComputeCapability(self, handle, major_ref, minor_ref):
        def answer(gpu):
            capability = gpu.get("compute_capability")
            if capability is None:
                return NOT_SUPPORTED
            _set(major_ref, capability[0])
            return _set(minor_ref, capability[1])
        return self._device("nvmlDeviceGetCudaComputeCapability", handle, answer)

    # ---------------------------------------------------------------- memory

    def _memory_bytes(self, gpu):
        memory = gpu.get("memory")
        if memory is None:
            return None
        total, reserved, used = memory["total_mib"], memory.get("reserved_mib", 0), memory.get("used_mib", 0)
        return total * MIB, reserved * MIB, used * MIB, (total - reserved - used) * MIB

    def nvmlDeviceGetMemoryInfo(self, handle, ref):
        def answer(gpu):
            sizes = self._memory_bytes(gpu)
            if sizes is None:
                return NOT_SUPPORTED
            total, reserved, used, free = sizes
            info = _target(ref)
            info.total, info.used, info.free = total, reserved + used, free
            return SUCCESS
        return self._device("nvmlDeviceGetMemoryInfo", handle, answer)

    def nvmlDeviceGetMemoryInfo_v2(self, handle, ref):
        def answer(gpu):
            info = _target(ref)
            if info.version != pynvml.nvmlMemory_v2:
                return VERSION_MISMATCH
            sizes = self._memory_bytes(gpu)
            if sizes is None:
                return NOT_SUPPORTED
            info.total, info.reserved, info.used, info.free = sizes
            return SUCCESS
        return self._device("nvmlDeviceGetMemoryInfo_v2", handle, answer)

    def nvmlDeviceGetBAR1MemoryInfo(self, handle, ref):
        def answer(gpu):
            bar1 = gpu.get("bar1")
            if bar1 is None:
                return NOT_SUPPORTED
            info = _target(ref)
            info.bar1Total = bar1["total_mib"] * MIB
            info.bar1Used = bar1["used_mib"] * MIB
            info.bar1Free = (bar1["total_mib"] - bar1["used_mib"]) * MIB
            return SUCCESS
        return self._device("nvmlDeviceGetBAR1MemoryInfo", handle, answer)

    # ---------------------------------------------------------------- thermal, power, clocks

    def nvmlDeviceGetTemperature(self, handle, sensor, ref):
        def answer(gpu):
            if _int(sensor) != pynvml.NVML_TEMPERATURE_GPU:
                return INVALID_ARGUMENT
            return _set(ref, _section(gpu, "temperature", "gpu_c"))
        return self._device("nvmlDeviceGetTemperature", handle, answer)

    def nvmlDeviceGetTemperatureThreshold(self, handle, threshold, ref):
        def answer(gpu):
            key = _THRESHOLD_KEYS.get(_int(threshold))
            return _set(ref, _section(gpu, "temperature", key) if key else None)
        return self._device("nvmlDeviceGetTemperatureThreshold", handle, answer)

    def nvmlDeviceGetPowerUsage(self, handle, ref):
        return self._device("nvmlDeviceGetPowerUsage", handle,
                            lambda gpu: _set(ref, _mw(_section(gpu, "power", "draw_w"))))

    def nvmlDeviceGetEnforcedPowerLimit(self, handle, ref):
        return self._device("nvmlDeviceGetEnforcedPowerLimit", handle,
                            lambda gpu: _set(ref, _mw(_section(gpu, "power", "limit_w"))))

    def nvmlDeviceGetPowerManagementDefaultLimit(self, handle, ref):
        return self._device("nvmlDeviceGetPowerManagementDefaultLimit", handle,
                            lambda gpu: _set(ref, _mw(_section(gpu, "power", "default_limit_w"))))

    def nvmlDeviceGetPowerManagementLimitConstraints(self, handle, min_ref, max_ref):
        def answer(gpu):
            low, high = _section(gpu, "power", "min_limit_w"), _section(gpu, "power", "max_limit_w")
            if low is None or high is None:
                return NOT_SUPPORTED
            _set(min_ref, _mw(low))
            return _set(max_ref, _mw(high))
        return self._device("nvmlDeviceGetPowerManagementLimitConstraints", handle, answer)

    def nvmlDeviceGetFanSpeed(self, handle, ref):
        return self._device("nvmlDeviceGetFanSpeed", handle, lambda gpu: _set(ref, gpu.get("fan_speed_pct")))

    def _clock(self, fn, handle, clock_type, ref, prefix):
        def answer(gpu):
            key = _CLOCK_KEYS.get(_int(clock_type))
            return _set(ref, _section(gpu, "clocks", "%s%s_mhz" % (prefix, key)) if key else None)
        return self._device(fn, handle, answer)

    def nvmlDeviceGetClockInfo(self, handle, clock_type, ref):
        return self._clock("nvmlDeviceGetClockInfo", handle, clock_type, ref, "")

    def nvmlDeviceGetMaxClockInfo(self, handle, clock_type, ref):
        return self._clock("nvmlDeviceGetMaxClockInfo", handle, clock_type, ref, "max_")

    def nvmlDeviceGetCurrentClocksEventReasons(self, handle, ref):
        return self._device("nvmlDeviceGetCurrentClocksEventReasons", handle,
                            lambda gpu: _set(ref, gpu.get("clock_event_mask")))

    def nvmlDeviceGetCurrentClocksThrottleReasons(self, handle, ref):
        return self._device("nvmlDeviceGetCurrentClocksThrottleReasons", handle,
                            lambda gpu: _set(ref, gpu.get("clock_event_mask")))

    def nvmlDeviceGetPerformanceState(self, handle, ref):
        return self._device("nvmlDeviceGetPerformanceState", handle,
                            lambda gpu: _set(ref, gpu.get("performance_state")))

    def nvmlDeviceGetUtilizationRates(self, handle, ref):
        def answer(gpu):
            utilization = gpu.get("utilization")
            if utilization is None:
                return NOT_SUPPORTED
            info = _target(ref)
            info.gpu, info.memory = utilization["gpu_pct"], utilization["memory_pct"]
            return SUCCESS
        return self._device("nvmlDeviceGetUtilizationRates", handle, answer)

    # ---------------------------------------------------------------- memory errors

    def nvmlDeviceGetEccMode(self, handle, current_ref, pending_ref):
        def answer(gpu):
            current, pending = _section(gpu, "ecc", "mode_current"), _section(gpu, "ecc", "mode_pending")
            if current is None:
                return NOT_SUPPORTED
            _set(current_ref, int(current))
            return _set(pending_ref, int(current if pending is None else pending))
        return self._device("nvmlDeviceGetEccMode", handle, answer)

    def nvmlDeviceGetTotalEccErrors(self, handle, error_type, counter_type, ref):
        def answer(gpu):
            key = _ECC_KEYS.get((_int(error_type), _int(counter_type)))
            if key is None:
                return INVALID_ARGUMENT
            if not _section(gpu, "ecc", "mode_current"):
                return NOT_SUPPORTED
            return _set(ref, _section(gpu, "ecc", key))
        return self._device("nvmlDeviceGetTotalEccErrors", handle, answer)

    def nvmlDeviceGetRetiredPages(self, handle, cause, count_ref, addresses):
        def answer(gpu):
            key = _RETIREMENT_KEYS.get(_int(cause))
            if gpu.get("retired_pages") is None or key is None:
                return NOT_SUPPORTED
            pages = gpu["retired_pages"].get(key) or []
            count = _target(count_ref)
            room = count.value
            count.value = len(pages)
            if addresses is None:
                return INSUFFICIENT_SIZE if pages else SUCCESS
            if room < len(pages):
                return INSUFFICIENT_SIZE
            for position, page in enumerate(pages):
                addresses[position] = page
            return SUCCESS
        return self._device("nvmlDeviceGetRetiredPages", handle, answer)

    def nvmlDeviceGetRetiredPagesPendingStatus(self, handle, ref):
        def answer(gpu):
            pages = gpu.get("retired_pages")
            return NOT_SUPPORTED if pages is None else _set(ref, int(bool(pages.get("pending"))))
        return self._device("nvmlDeviceGetRetiredPagesPendingStatus", handle, answer)

    def nvmlDeviceGetRemappedRows(self, handle, correctable_ref, uncorrectable_ref, pending_ref, failure_ref):
        def answer(gpu):
            rows = gpu.get("remapped_rows")
            if rows is None:
                return NOT_SUPPORTED
            _set(correctable_ref, rows["correctable"])
            _set(uncorrectable_ref, rows["uncorrectable"])
            _set(pending_ref, int(rows["pending"]))
            return _set(failure_ref, int(rows["failure"]))
        return self._device("nvmlDeviceGetRemappedRows", handle, answer)

    # ---------------------------------------------------------------- PCIe and NVLink

    def _pcie(self, fn, handle, ref, key):
        return self._device(fn, handle, lambda gpu: _set(ref, _section(gpu, "pcie", key)))

    def nvmlDeviceGetCurrPcieLinkGeneration(self, handle, ref):
        return self._pcie("nvmlDeviceGetCurrPcieLinkGeneration", handle, ref, "gen_current")

    def nvmlDeviceGetMaxPcieLinkGeneration(self, handle, ref):
        return self._pcie("nvmlDeviceGetMaxPcieLinkGeneration", handle, ref, "gen_max")

    def nvmlDeviceGetCurrPcieLinkWidth(self, handle, ref):
        return self._pcie("nvmlDeviceGetCurrPcieLinkWidth", handle, ref, "width_current")

    def nvmlDeviceGetMaxPcieLinkWidth(self, handle, ref):
        return self._pcie("nvmlDeviceGetMaxPcieLinkWidth", handle, ref, "width_max")

    def nvmlDeviceGetPcieReplayCounter(self, handle, ref):
        return self._pcie("nvmlDeviceGetPcieReplayCounter", handle, ref, "replay_counter")

    def _nvlink(self, gpu, link):
        links = gpu.get("nvlinks") or []
        if not links:
            return NOT_SUPPORTED, None
        if not 0 <= _int(link) < len(links):
            return INVALID_ARGUMENT, None
        return SUCCESS, links[_int(link)]

    def nvmlDeviceGetNvLinkState(self, handle, link, ref):
        def answer(gpu):
            code, state = self._nvlink(gpu, link)
            return code if state is None else _set(ref, int(bool(state.get("active"))))
        return self._device("nvmlDeviceGetNvLinkState", handle, answer)

    def nvmlDeviceGetNvLinkErrorCounter(self, handle, link, counter, ref):
        def answer(gpu):
            code, state = self._nvlink(gpu, link)
            if state is None:
                return code
            key = _NVLINK_COUNTERS.get(_int(counter))
            return _set(ref, (state.get("errors") or {}).get(key, 0) if key else 0)
        return self._device("nvmlDeviceGetNvLinkErrorCounter", handle, answer)

    # ---------------------------------------------------------------- modes

    def nvmlDeviceGetComputeMode(self, handle, ref):
        return self._device("nvmlDeviceGetComputeMode", handle, lambda gpu: _set(ref, gpu.get("compute_mode")))

    def nvmlDeviceGetPersistenceMode(self, handle, ref):
        def answer(gpu):
            mode = gpu.get("persistence_mode")
            return _set(ref, None if mode is None else int(mode))
        return self._device("nvmlDeviceGetPersistenceMode", handle, answer)

    def nvmlDeviceGetMigMode(self, handle, current_ref, pending_ref):
        def answer(gpu):
            mig = gpu.get("mig")
            if mig is None:
                return NOT_SUPPORTED
            _set(current_ref, int(mig.get("current", 0)))
            return _set(pending_ref, int(mig.get("pending", mig.get("current", 0))))
        return self._device("nvmlDeviceGetMigMode", handle, answer)

    def nvmlDeviceGetFieldValues(self, handle, count, values_ref):
        def answer(gpu):
            values = _target(values_ref)
            for position in range(_int(count)):
                field = values[position]
                value = gpu.get("recovery_action") if field.fieldId == _FIELD_GPU_RECOVERY_ACTION else None
                if value is None:
                    field.nvmlReturn = NOT_SUPPORTED
                    continue
                field.nvmlReturn, field.valueType, field.value.uiVal = SUCCESS, _VALUE_TYPE_UNSIGNED_INT, value
            return SUCCESS
        return self._device("nvmlDeviceGetFieldValues", handle, answer)

    def nvmlDeviceGetGpuFabricInfo(self, handle, ref):
        return self._device("nvmlDeviceGetGpuFabricInfo", handle, lambda gpu: self._fabric(gpu, _target(ref)))

    def nvmlDeviceGetGpuFabricInfoV(self, handle, ref):
        def answer(gpu):
            info = _target(ref)
            if info.version not in (pynvml.nvmlGpuFabricInfo_v2, pynvml.nvmlGpuFabricInfo_v3):
                return VERSION_MISMATCH
            return self._fabric(gpu, info)
        return self._device("nvmlDeviceGetGpuFabricInfoV", handle, answer)

    def _fabric(self, gpu, info):
        fabric = gpu.get("fabric")
        if fabric is None:
            return NOT_SUPPORTED
        raw = uuid.UUID(fabric["cluster_uuid"]).bytes if fabric.get("cluster_uuid") else bytes(16)
        for position, byte in enumerate(raw):
            info.clusterUuid[position] = byte
        info.status = fabric.get("status", SUCCESS)
        info.cliqueId = fabric.get("clique_id", 0)
        info.state = fabric["state"]
        return SUCCESS

    # ---------------------------------------------------------------- MIG

    def _gi_profiles(self, gpu):
        profiles = gpu["mig"].get("profiles") or "h100_80gb"
        return MIG_PROFILES[profiles] if isinstance(profiles, str) else profiles

    def _gi_profile_by_id(self, gpu, profile_id):
        for profile in self._gi_profiles(gpu).values():
            if profile["id"] == profile_id:
                return profile
        return None

    def _fill_gi_profile(self, gpu, profile_enum, info):
        mig = gpu.get("mig")
        if mig is None or not mig.get("current"):
            return NOT_SUPPORTED
        if not 0 <= _int(profile_enum) < pynvml.NVML_GPU_INSTANCE_PROFILE_COUNT:
            return INVALID_ARGUMENT
        profile = self._gi_profiles(gpu).get(_int(profile_enum))
        if profile is None:
            return NOT_SUPPORTED
        info.id, info.isP2pSupported, info.sliceCount = profile["id"], 0, profile["slices"]
        info.instanceCount, info.multiprocessorCount = profile["instances"], profile["sm"]
        info.copyEngineCount, info.decoderCount, info.encoderCount = profile["ce"], profile["dec"], 0
        info.jpegCount, info.ofaCount, info.memorySizeMB = profile["jpeg"], profile["ofa"], profile["memory_mb"]
        if hasattr(info, "name") and profile.get("name"):
            info.name = profile["name"].encode()
        return SUCCESS

    def nvmlDeviceGetGpuInstanceProfileInfo(self, handle, profile_enum, ref):
        return self._device("nvmlDeviceGetGpuInstanceProfileInfo", handle,
                            lambda gpu: self._fill_gi_profile(gpu, profile_enum, _target(ref)))

    def nvmlDeviceGetGpuInstanceProfileInfoV(self, handle, profile_enum, ref):
        def answer(gpu):
            info = _target(ref)
            if info.version != pynvml.nvmlGpuInstanceProfileInfo_v2:
                return VERSION_MISMATCH
            return self._fill_gi_profile(gpu, profile_enum, info)
        return self._device("nvmlDeviceGetGpuInstanceProfileInfoV", handle, answer)

    def nvmlDeviceGetGpuInstances(self, handle, profile_id, handles, count_ref):
        def answer(gpu):
            mig = gpu.get("mig")
            if mig is None or not mig.get("current"):
                return NOT_SUPPORTED
            index = self._objects[_address(handle)][1]
            found = [gi for gi in mig.get("gpu_instances", []) if gi["profile_id"] == _int(profile_id)]
            if len(found) > len(handles):
                return INSUFFICIENT_SIZE
            for position, gi in enumerate(found):
                _store_handle(handles[position], self._gi_address(index, gi["id"]))
            _target(count_ref).value = len(found)
            return SUCCESS
        return self._device("nvmlDeviceGetGpuInstances", handle, answer)

    def nvmlGpuInstanceGetInfo(self, gi_handle, ref):
        def answer(gpu, gi, _ci):
            info = _target(ref)
            index = self._objects[_address(gi_handle)][1]
            _store_handle(info.device, self._device_address(index))
            info.id, info.profileId = gi["id"], gi["profile_id"]
            info.placement.start, info.placement.size = gi["placement"]["start"], gi["placement"]["size"]
            return SUCCESS
        return self._on("nvmlGpuInstanceGetInfo", gi_handle, "gi", answer)

    def _fill_ci_profile(self, gpu, gi, profile_enum, info):
        slices = _CI_PROFILE_SLICES.get(_int(profile_enum))
        gi_profile = self._gi_profile_by_id(gpu, gi["profile_id"])
        if slices is None or gi_profile is None or slices > gi_profile["slices"]:
            return NOT_SUPPORTED
        info.id, info.sliceCount = _int(profile_enum), slices
        info.instanceCount = gi_profile["slices"] // slices
        info.multiprocessorCount = gi_profile["sm"] * slices // gi_profile["slices"]
        info.sharedCopyEngineCount, info.sharedDecoderCount = gi_profile["ce"], gi_profile["dec"]
        info.sharedEncoderCount, info.sharedJpegCount, info.sharedOfaCount = 0, gi_profile["jpeg"], gi_profile["ofa"]
        return SUCCESS

    def nvmlGpuInstanceGetComputeInstanceProfileInfo(self, gi_handle, profile_enum, _engine, ref):
        return self._on("nvmlGpuInstanceGetComputeInstanceProfileInfo", gi_handle, "gi",
                        lambda gpu, gi, _ci: self._fill_ci_profile(gpu, gi, profile_enum, _target(ref)))

    def nvmlGpuInstanceGetComputeInstanceProfileInfoV(self, gi_handle, profile_enum, _engine, ref):
        def answer(gpu, gi, _ci):
            info = _target(ref)
            if info.version != pynvml.nvmlComputeInstanceProfileInfo_v2:
                return VERSION_MISMATCH
            return self._fill_ci_profile(gpu, gi, profile_enum, info)
        return self._on("nvmlGpuInstanceGetComputeInstanceProfileInfoV", gi_handle, "gi", answer)

    def nvmlGpuInstanceGetComputeInstances(self, gi_handle, profile_id, handles, count_ref):
        def answer(_gpu, gi, _ci):
            index = self._objects[_address(gi_handle)][1]
            found = [ci for ci in gi.get("compute_instances", []) if ci["profile_id"] == _int(profile_id)]
            if len(found) > len(handles):
                return INSUFFICIENT_SIZE
            for position, ci in enumerate(found):
                _store_handle(handles[position], self._ci_address(index, gi["id"], ci["id"]))
            _target(count_ref).value = len(found)
            return SUCCESS
        return self._on("nvmlGpuInstanceGetComputeInstances", gi_handle, "gi", answer)

    def nvmlComputeInstanceGetInfo_v2(self, ci_handle, ref):
        def answer(_gpu, gi, ci):
            info = _target(ref)
            index = self._objects[_address(ci_handle)][1]
            _store_handle(info.device, self._device_address(index))
            _store_handle(info.gpuInstance, self._gi_address(index, gi["id"]))
            info.id, info.profileId = ci["id"], ci["profile_id"]
            info.placement.start, info.placement.size = ci["placement"]["start"], ci["placement"]["size"]
            return SUCCESS
        return self._on("nvmlComputeInstanceGetInfo_v2", ci_handle, "ci", answer)

    # ---------------------------------------------------------------- processes

    def _processes(self, fn, handle, count_ref, infos):
        def answer(gpu):
            processes = gpu.get("processes") or []
            count = _target(count_ref)
            room = count.value
            count.value = len(processes)
            if infos is None:
                return INSUFFICIENT_SIZE if processes else SUCCESS
            if room < len(processes):
                return INSUFFICIENT_SIZE
            for position, process in enumerate(processes):
                entry = infos[position]
                entry.pid = process["pid"]
                used = process.get("used_mib")
                entry.usedGpuMemory = 0xFFFFFFFFFFFFFFFF if used is None else used * MIB
                gi_id, ci_id = process.get("gpu_instance_id"), process.get("compute_instance_id")
                entry.gpuInstanceId = NA_UINT if gi_id is None else gi_id
                entry.computeInstanceId = NA_UINT if ci_id is None else ci_id
            return SUCCESS
        return self._device(fn, handle, answer)

    def nvmlDeviceGetComputeRunningProcesses_v3(self, handle, count_ref, infos):
        return self._processes("nvmlDeviceGetComputeRunningProcesses_v3", handle, count_ref, infos)

    def nvmlDeviceGetComputeRunningProcesses_v2(self, handle, count_ref, infos):
        return self._processes("nvmlDeviceGetComputeRunningProcesses_v2", handle, count_ref, infos)
