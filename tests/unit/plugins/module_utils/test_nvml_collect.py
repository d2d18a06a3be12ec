"""The NVML backend through the real pynvml against the simulated libnvidia-ml."""

import re

import pynvml
import pytest

from ansible_collections.gpufleet.core.plugins.module_utils import nvml_collect
from ansible_collections.gpufleet.core.plugins.module_utils.nvml_collect import (
    compute_instance_profile_name, gpu_instance_profile_name, mig_memory_gb, userspace_version_from_nvml)
from tests.support.corpus import read_realdata
from simulator.nvml_sim import SimulatedNvmlLibrary, collect_through, scenario_h100_node
from tests.support.schema_check import assert_valid_facts, assert_valid_gpu

H100_BUSES = ["0000:18:00.0", "0000:2a:00.0", "0000:3a:00.0", "0000:5d:00.0",
              "0000:9a:00.0", "0000:ab:00.0", "0000:ba:00.0", "0000:db:00.0"]


def collect(scenario, subsets=None, deadline=None):
    library = SimulatedNvmlLibrary(scenario)
    if subsets is None:
        answered, facts = collect_through(library, deadline=deadline)
    else:
        answered, facts = collect_through(library, subsets=subsets, deadline=deadline)
    assert_valid_facts(facts)
    return answered, facts, library


def calls_for(library, index):
    return [name for name, gpu in library.calls if gpu == index]


def test_healthy_h100_node_values_land_where_the_schema_says():
    scenario = scenario_h100_node(8)
    answered, facts, _library = collect(scenario)
    assert answered is True and facts["nvidia_present"] is True
    assert facts["errors"] == []
    assert facts["driver"] == {
        "version": "550.90.07", "nvml_version": "12.550.90.07", "cuda_driver_version": "12.4",
        "kernel_module_version": None, "userspace_version": "550.90.07", "mismatch": False, "mismatch_reason": None}
    assert [gpu["pci_bus_id"] for gpu in facts["gpus"]] == H100_BUSES
    assert [gpu["uuid"] for gpu in facts["gpus"]] == [gpu["uuid"] for gpu in scenario["gpus"]]
    gpu = facts["gpus"][3]
    assert (gpu["index"], gpu["name"], gpu["serial"]) == (3, "NVIDIA H100 80GB HBM3", scenario["gpus"][3]["serial"])
    assert (gpu["architecture"], gpu["compute_capability"]) == ("hopper", "9.0")
    assert (gpu["board_part_number"], gpu["vbios_version"]) == ("692-2G520-0200-000", "96.00.89.00.01")
    assert gpu["memory"] == {"total_mib": 81559, "used_mib": 0, "free_mib": 81231, "reserved_mib": 328,
                             "bar1_total_mib": 131072, "bar1_used_mib": 1}
    assert gpu["temperature"] == {"gpu_c": 31, "slowdown_c": 89, "shutdown_c": 92, "memory_c": None}
    assert gpu["power"] == {"draw_w": 74.234, "limit_w": 700.0, "default_limit_w": 700.0,
                            "min_limit_w": 200.0, "max_limit_w": 700.0}
    assert gpu["fan_speed_pct"] is None
    assert gpu["clocks"] == {"graphics_mhz": 345, "sm_mhz": 345, "memory_mhz": 2619,
                             "max_graphics_mhz": 1980, "max_sm_mhz": 1980, "max_memory_mhz": 2619}
    assert gpu["clock_event_reasons"] == {"mask": 1, "active": ["gpu_idle"]}
    assert (gpu["performance_state"], gpu["utilization"]) == ("P0", {"gpu_pct": 0, "memory_pct": 0})
    assert gpu["ecc"] == {"mode_current": True, "mode_pending": True, "volatile_corrected": 0,
                          "volatile_uncorrected": 0, "aggregate_corrected": 0, "aggregate_uncorrected": 0}
    assert gpu["retired_pages"] == {"single_bit": None, "double_bit": None, "pending": None}
    assert gpu["remapped_rows"] == {"correctable": 0, "uncorrectable": 0, "pending": False, "failure": False}
    assert gpu["pcie"] == {"gen_current": 5, "gen_max": 5, "width_current": 16, "width_max": 16,
                           "replay_counter": 0, "aer": None}
    assert len(gpu["nvlinks"]) == 18 and all(link["active"] for link in gpu["nvlinks"])
    assert gpu["nvlinks"][17] == {"link": 17, "active": True,
                                  "errors": {"replay": 0, "recovery": 0, "crc_flit": 0, "crc_data": 0}}
    assert (gpu["compute_mode"], gpu["persistence_mode"]) == ("default", True)
    assert gpu["mig"] == {"mode_current": False, "mode_pending": False, "gpu_instances": []}
    assert gpu["fabric"] == {"state": "completed", "status": "success", "clique_id": 32766,
                             "cluster_uuid": "f4c3b9f2-6d1e-4c8a-9a57-2b9de0a51c07"}
    assert (gpu["lost"], gpu["processes"]) == (False, [])


def test_the_simulator_answers_like_nvml_for_what_a_board_lacks():
    scenario = scenario_h100_node(1)
    scenario["gpus"][0].update(retired_pages={"single_bit": [0x1000, 0x2000], "double_bit": [0x3000],
                                              "pending": True},
                               remapped_rows=None, fabric=None, mig=None, nvlinks=[])
    _answered, facts, _library = collect(scenario)
    gpu = facts["gpus"][0]
    assert gpu["retired_pages"] == {"single_bit": 2, "double_bit": 1, "pending": True}
    assert gpu["remapped_rows"] == {"correctable": None, "uncorrectable": None, "pending": None, "failure": None}
    assert (gpu["fabric"], gpu["nvlinks"]) == (None, [])
    assert gpu["mig"] == {"mode_current": None, "mode_pending": None, "gpu_instances": []}
    assert facts["errors"] == []


def test_not_supported_fan_is_null_and_other_errors_are_recorded_with_their_code():
    scenario = scenario_h100_node(4)
    scenario["gpus"][2]["errors"] = {"nvmlDeviceGetFanSpeed": pynvml.NVML_ERROR_UNKNOWN,
                                     "nvmlDeviceGetPcieReplayCounter": pynvml.NVML_ERROR_NO_PERMISSION}
    _answered, facts, _library = collect(scenario)
    assert [gpu["fan_speed_pct"] for gpu in facts["gpus"]] == [None] * 4
    assert facts["errors"] == [
        {"gpu": 2, "call": "nvmlDeviceGetFanSpeed", "reason": "Unknown Error", "code": 999},
        {"gpu": 2, "call": "nvmlDeviceGetPcieReplayCounter", "reason": "Insufficient Permissions", "code": 4}]
    assert facts["gpus"][2]["pcie"]["replay_counter"] is None
    assert facts["gpus"][2]["pcie"]["width_current"] == 16


def test_a_gpu_lost_at_its_handle_is_marked_and_the_others_are_collected():
    scenario = scenario_h100_node(8)
    scenario["gpus"][3]["lost"] = True
    answered, facts, library = collect(scenario)
    assert answered is True
    lost = facts["gpus"][3]
    assert (lost["index"], lost["lost"], lost["name"], lost["memory"]["total_mib"]) == (3, True, None, None)
    assert facts["errors"] == [{"gpu": 3, "call": "nvmlDeviceGetHandleByIndex", "reason": "GPU is lost",
                                "code": pynvml.NVML_ERROR_GPU_IS_LOST}]
    assert calls_for(library, 3) == ["nvmlDeviceGetHandleByIndex_v2"]
    assert [gpu["memory"]["total_mib"] for gpu in facts["gpus"] if not gpu["lost"]] == [81559] * 7


def test_a_gpu_lost_midway_skips_its_remaining_calls():
    scenario = scenario_h100_node(3)
    scenario["gpus"][1]["errors"] = {"nvmlDeviceGetTemperature": pynvml.NVML_ERROR_GPU_IS_LOST}
    _answered, facts, library = collect(scenario)
    gpu = facts["gpus"][1]
    assert gpu["lost"] is True
    assert gpu["name"] == "NVIDIA H100 80GB HBM3" and gpu["memory"]["total_mib"] == 81559
    assert gpu["temperature"]["gpu_c"] is None and gpu["power"]["limit_w"] is None
    assert calls_for(library, 1)[-1] == "nvmlDeviceGetTemperature"
    assert facts["errors"] == [{"gpu": 1, "call": "nvmlDeviceGetTemperature", "reason": "GPU is lost",
                                "code": pynvml.NVML_ERROR_GPU_IS_LOST}]
    assert facts["gpus"][2]["power"]["limit_w"] == 700.0
    assert library.calls[-1] == ("nvmlShutdown", None)


@pytest.mark.parametrize("code, reason", [
    (pynvml.NVML_ERROR_DRIVER_NOT_LOADED, "Driver Not Loaded"),
    (pynvml.NVML_ERROR_LIBRARY_NOT_FOUND, "NVML Shared Library Not Found"),
])
def test_no_nvidia_stack_returns_false_with_an_error(code, reason):
    scenario = scenario_h100_node(2)
    scenario["init_error"] = code
    answered, facts, library = collect(scenario)
    assert answered is False and facts["nvidia_present"] is False
    assert facts["errors"] == [{"gpu": None, "call": "nvmlInit", "reason": reason, "code": code}]
    assert facts["gpus"] == [] and facts["driver"]["mismatch"] is False
    assert library.calls == [("nvmlInitWithFlags", None)]


def test_driver_library_mismatch_is_a_driver_fact():
    scenario = scenario_h100_node(2)
    scenario["init_error"] = pynvml.NVML_ERROR_LIB_RM_VERSION_MISMATCH
    answered, facts, _library = collect(scenario)
    assert answered is False
    assert facts["driver"]["mismatch"] is True
    assert "NVML_ERROR_LIB_RM_VERSION_MISMATCH" in facts["driver"]["mismatch_reason"]
    assert facts["errors"][0]["code"] == pynvml.NVML_ERROR_LIB_RM_VERSION_MISMATCH


class _Clock:
    """time.monotonic() that jumps to `later` after `calls` readings."""

    def __init__(self, calls, later):
        self._left = calls
        self._later = later

    def monotonic(self):
        self._left -= 1
        return 0.0 if self._left >= 0 else self._later


def test_deadline_stops_between_gpus_and_keeps_finished_ones(monkeypatch):
    monkeypatch.setattr(nvml_collect, "time", _Clock(calls=2, later=100.0))
    _answered, facts, library = collect(scenario_h100_node(8), deadline=50.0)
    assert [gpu["index"] for gpu in facts["gpus"]] == [0, 1]
    assert facts["errors"] == [{"gpu": 2, "call": "collect_nvml", "reason": "collection timed out before GPU 2",
                                "code": None}]
    assert calls_for(library, 2) == []
    assert library.calls[-1] == ("nvmlShutdown", None)


def test_only_the_asked_subsets_are_queried():
    _answered, facts, library = collect(scenario_h100_node(2), subsets={"driver"})
    assert facts["driver"]["version"] == "550.90.07" and facts["gpus"] == []
    assert not [name for name, _gpu in library.calls if name.startswith("nvmlDevice")]

    scenario = scenario_h100_node(2)
    scenario["gpus"][1]["processes"] = [
        {"pid": 811, "name": "/usr/bin/python3", "used_mib": 1024, "gpu_instance_id": None,
         "compute_instance_id": None}]
    _answered, facts, library = collect(scenario, subsets={"processes"})
    assert facts["driver"]["version"] is None
    gpu = facts["gpus"][1]
    assert (gpu["name"], gpu["pci_bus_id"], gpu["serial"], gpu["nvlinks"]) == (
        "NVIDIA H100 80GB HBM3", "0000:2a:00.0", None, [])
    assert gpu["processes"][0]["name"] == "/usr/bin/python3"
    called = {name for name, _gpu in library.calls}
    assert not called & {"nvmlDeviceGetSerial", "nvmlDeviceGetNvLinkState", "nvmlDeviceGetMigMode"}


def _mig_scenario():
    scenario = scenario_h100_node(2)
    scenario["gpus"][1]["mig"].update(current=1, pending=1, gpu_instances=[
        {"id": 2, "profile_id": 9, "placement": {"start": 4, "size": 4},
         "compute_instances": [{"id": 0, "profile_id": 0, "placement": {"start": 0, "size": 1}},
                               {"id": 1, "profile_id": 1, "placement": {"start": 1, "size": 2}}]},
        {"id": 3, "profile_id": 15, "placement": {"start": 0, "size": 2},
         "compute_instances": [{"id": 0, "profile_id": 0, "placement": {"start": 0, "size": 1}}]},
        {"id": 9, "profile_id": 20, "placement": {"start": 2, "size": 1},
         "compute_instances": [{"id": 0, "profile_id": 0, "placement": {"start": 0, "size": 1}}]},
    ])
    scenario["gpus"][1]["processes"] = [
        {"pid": 3301, "name": "vllm", "used_mib": 30000, "gpu_instance_id": 2, "compute_instance_id": 1},
        {"pid": 3302, "name": None, "used_mib": None, "gpu_instance_id": 3, "compute_instance_id": 0}]
    return scenario


def test_mig_layout_with_profile_names_and_placements():
    _answered, facts, _library = collect(_mig_scenario())
    mig = facts["gpus"][1]["mig"]
    assert (mig["mode_current"], mig["mode_pending"]) == (True, True)
    assert mig["gpu_instances"] == [
        {"id": 2, "profile_id": 9, "profile_name": "3g.40gb", "placement": {"start": 4, "size": 4},
         "memory_mib": 40448, "compute_instances": [
             {"id": 0, "profile_id": 0, "profile_name": "1c.3g.40gb", "placement": {"start": 0, "size": 1}},
             {"id": 1, "profile_id": 1, "profile_name": "2c.3g.40gb", "placement": {"start": 1, "size": 2}}]},
        {"id": 3, "profile_id": 15, "profile_name": "1g.20gb", "placement": {"start": 0, "size": 2},
         "memory_mib": 20096, "compute_instances": [
             {"id": 0, "profile_id": 0, "profile_name": "1g.20gb", "placement": {"start": 0, "size": 1}}]},
        {"id": 9, "profile_id": 20, "profile_name": "1g.10gb+me", "placement": {"start": 2, "size": 1},
         "memory_mib": 9984, "compute_instances": [
             {"id": 0, "profile_id": 0, "profile_name": "1g.10gb+me", "placement": {"start": 0, "size": 1}}]},
    ]


def test_processes_with_mig_instances_memory_and_names():
    _answered, facts, _library = collect(_mig_scenario())
    assert facts["gpus"][1]["processes"] == [
        {"pid": 3301, "name": "vllm", "type": "compute", "used_memory_mib": 30000,
         "gpu_instance_id": 2, "compute_instance_id": 1},
        {"pid": 3302, "name": None, "type": "compute", "used_memory_mib": None,
         "gpu_instance_id": 3, "compute_instance_id": 0}]
    assert facts["errors"] == [{"gpu": 1, "call": "nvmlSystemGetProcessName", "reason": "Not Found",
                                "code": pynvml.NVML_ERROR_NOT_FOUND}]


def test_mig_mode_pending_a_reset_has_no_layout():
    scenario = scenario_h100_node(1)
    scenario["gpus"][0]["mig"].update(current=0, pending=1)
    _answered, facts, _library = collect(scenario)
    assert facts["gpus"][0]["mig"] == {"mode_current": False, "mode_pending": True, "gpu_instances": []}


def test_nvlink_state_and_error_counters_per_link():
    scenario = scenario_h100_node(1)
    links = scenario["gpus"][0]["nvlinks"]
    links[5]["active"] = False
    links[7]["errors"].update(replay=12, crc_flit=3)
    _answered, facts, _library = collect(scenario)
    nvlinks = facts["gpus"][0]["nvlinks"]
    assert [link["link"] for link in nvlinks if not link["active"]] == [5]
    assert nvlinks[7]["errors"] == {"replay": 12, "recovery": 0, "crc_flit": 3, "crc_data": 0}
    assert facts["errors"] == []


def test_an_older_driver_falls_back_to_the_older_entry_points():
    scenario = scenario_h100_node(2)
    scenario["gpus"][0]["processes"] = [
        {"pid": 77, "name": "train.py", "used_mib": 2048, "gpu_instance_id": None, "compute_instance_id": None}]
    scenario["missing_functions"] = [
        "nvmlSystemGetCudaDriverVersion_v2", "nvmlDeviceGetMemoryInfo_v2", "nvmlDeviceGetCurrentClocksEventReasons",
        "nvmlDeviceGetGpuFabricInfoV", "nvmlDeviceGetComputeRunningProcesses_v3"]
    _answered, facts, _library = collect(scenario)
    assert facts["errors"] == []
    assert facts["driver"]["cuda_driver_version"] == "12.4"
    gpu = facts["gpus"][0]
    assert gpu["memory"]["reserved_mib"] is None
    assert (gpu["memory"]["total_mib"], gpu["memory"]["used_mib"]) == (81559, 328)
    assert gpu["clock_event_reasons"]["mask"] == 1
    assert gpu["fabric"]["state"] == "completed"
    assert gpu["processes"][0]["name"] == "train.py"


def test_a_struct_version_the_driver_rejects_falls_back_like_a_missing_function():
    scenario = scenario_h100_node(1)
    scenario["gpus"][0]["errors"] = {"nvmlDeviceGetMemoryInfo_v2": pynvml.NVML_ERROR_ARGUMENT_VERSION_MISMATCH}
    _answered, facts, _library = collect(scenario)
    assert facts["gpus"][0]["memory"]["used_mib"] == 328 and facts["errors"] == []


def test_every_gpu_record_is_schema_valid_on_its_own():
    scenario = _mig_scenario()
    scenario["gpus"][0]["lost"] = True
    _answered, facts, _library = collect(scenario)
    for gpu in facts["gpus"]:
        assert_valid_gpu(gpu)


@pytest.mark.parametrize("nvml_version, expected", [
    ("12.550.90.07", "550.90.07"), ("11.470.74", "470.74"), ("12", None), (None, None)])
def test_userspace_version_is_the_driver_part_of_the_nvml_version(nvml_version, expected):
    assert userspace_version_from_nvml(nvml_version) == expected


# Profile id -> NVML profile enum for the +me profiles in the captures (MIG user guide pairing).
_ME_PROFILE_ENUMS = {20: pynvml.NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV1,
                     21: pynvml.NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV1,
                     6: pynvml.NVML_GPU_INSTANCE_PROFILE_2_SLICE_REV1}
_LGIP_ROW = re.compile(r"^\|\s+0\s+MIG (?P<name>\S+)\s+(?P<id>\d+)\s+\d+/\d+\s+(?P<gib>[\d.]+)\s")


def _lgip_profiles(filename):
    rows = [_LGIP_ROW.match(line) for line in read_realdata(filename).splitlines()]
    return [(row.group("name"), int(row.group("id")), float(row.group("gib"))) for row in rows if row]


@pytest.mark.corpus
@pytest.mark.parametrize("filename, total_mib, count", [
    # total memory: H100 80GB HBM3 as NVML reports it; A30 from the same capture's nvidia-smi table (24576MiB)
    ("nvsmi-mig-lgip_4xh100-sxm5-80gb_stackhpc.txt", 81559, 7),
    ("nvsmi-mig-lgip_a30-24gb_535.183.01_unresolved-repo.txt", 24576, 5),
])
def test_profile_names_derived_from_slices_and_memory_match_nvidia_smi(filename, total_mib, count):
    profiles = _lgip_profiles(filename)
    assert len(profiles) == count
    for name, profile_id, gib in profiles:
        slices = int(name.split("g.")[0])
        memory_gb = mig_memory_gb(int(gib * 1024), total_mib)
        assert gpu_instance_profile_name(_ME_PROFILE_ENUMS.get(profile_id, 0), slices, memory_gb) == name


def test_compute_instance_names_follow_nvidia_smi():
    assert compute_instance_profile_name(2, 2, "2g.12gb") == "2g.12gb"
    assert compute_instance_profile_name(1, 3, "3g.40gb") == "1c.3g.40gb"
    assert compute_instance_profile_name(1, 3, None) is None
