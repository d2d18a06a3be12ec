"""Readings that cannot be true become null with an error naming the field, whichever backend read them."""

import copy

import pynvml

from ansible_collections.gpufleet.core.plugins.module_utils import collector
from ansible_collections.gpufleet.core.plugins.module_utils.facts_model import (
    drop_impossible_readings, new_facts, new_gpu)
from ansible_collections.gpufleet.core.plugins.module_utils.host_io import ReplayHost
from simulator.nvml_sim import SimulatedNvmlLibrary, scenario_h100_node
from tests.support.schema_check import assert_valid_facts
from tests.support.nvsmi_samples import SYNTHETIC


def errors_by_field(facts):
    return {error["call"]: error for error in facts["errors"] if error["call"].startswith("reading ")}


def nvidia_smi_facts(xml):
    host = ReplayHost({"bins": {"nvidia-smi": "/usr/bin/nvidia-smi"},
                       "commands": {"nvidia-smi -q -x": {"rc": 0, "stdout": xml}}})
    facts = collector.Collection(source="nvidia_smi", gather_subset=["min"], host=host).run()[0]
    assert_valid_facts(facts)
    return facts


def test_nvidia_smi_negative_temperature_memory_and_counters_become_null():
    xml = SYNTHETIC.replace("<fan_speed>[Not Supported]</fan_speed>", """<fan_speed>-3 %</fan_speed>
    <fb_memory_usage><total>81559 MiB</total><reserved>328 MiB</reserved><used>90000 MiB</used><free>-8769 MiB</free>
    </fb_memory_usage>
    <temperature><gpu_temp>-12 C</gpu_temp><gpu_temp_slow_threshold>89 C</gpu_temp_slow_threshold>
    </temperature>
    <utilization><gpu_util>250 %</gpu_util><memory_util>3 %</memory_util></utilization>""").replace(
        "<remapped_row_unc>2</remapped_row_unc>", "<remapped_row_unc>-2</remapped_row_unc>")
    facts = nvidia_smi_facts(xml)
    gpu = facts["gpus"][0]
    assert gpu["temperature"]["gpu_c"] is None and gpu["temperature"]["slowdown_c"] == 89
    assert gpu["memory"]["used_mib"] is None and gpu["memory"]["free_mib"] is None
    assert gpu["memory"]["total_mib"] == 81559 and gpu["memory"]["reserved_mib"] == 328
    assert gpu["utilization"] == {"gpu_pct": None, "memory_pct": 3}
    assert gpu["fan_speed_pct"] is None
    assert gpu["remapped_rows"]["uncorrectable"] is None and gpu["remapped_rows"]["correctable"] == 0
    errors = errors_by_field(facts)
    assert set(errors) == {"reading temperature.gpu_c", "reading memory.used_mib", "reading memory.free_mib",
                           "reading utilization.gpu_pct", "reading fan_speed_pct",
                           "reading remapped_rows.uncorrectable"}
    assert errors["reading temperature.gpu_c"]["reason"] == "-12 cannot be true (outside 0..200 C); reported as null"
    assert errors["reading memory.used_mib"]["reason"] == "90000 cannot be true (more than total_mib 81559); reported as null"
    assert errors["reading memory.free_mib"]["reason"].startswith("-8769 cannot be true (negative)")
    assert all(error["gpu"] == 0 for error in errors.values())


def test_nvml_wrapped_unsigned_answers_become_null():
    """NVML answers in unsigned integers: a broken sensor's -5 arrives as 4294967291, memory used beyond
    the total leaves a free size that wrapped around."""
    scenario = scenario_h100_node(2)
    broken = scenario["gpus"][1]
    broken["temperature"]["gpu_c"] = -5
    broken["memory"]["used_mib"] = 90000
    facts = collector.Collection(source="nvml", gather_subset=["min"], pynvml=pynvml, host=ReplayHost({}),
                                 nvml_library=SimulatedNvmlLibrary(scenario)).run()[0]
    assert_valid_facts(facts)
    good, bad = facts["gpus"]
    assert good["temperature"]["gpu_c"] == 31 and good["memory"]["used_mib"] == 0
    assert bad["temperature"]["gpu_c"] is None and bad["temperature"]["shutdown_c"] == 92
    assert bad["memory"]["used_mib"] is None and bad["memory"]["free_mib"] is None
    assert bad["memory"]["total_mib"] == 81559
    errors = errors_by_field(facts)
    assert set(errors) == {"reading temperature.gpu_c", "reading memory.used_mib", "reading memory.free_mib"}
    assert errors["reading temperature.gpu_c"]["reason"].startswith("4294967291 cannot be true")
    assert all(error["gpu"] == 1 for error in errors.values())


def test_plausible_readings_are_kept_untouched():
    facts = new_facts()
    gpu = new_gpu(0)
    gpu["temperature"].update(gpu_c=0, slowdown_c=89, shutdown_c=92, memory_c=200)
    gpu["memory"].update(total_mib=100, used_mib=100, free_mib=0, reserved_mib=0)
    gpu["fan_speed_pct"] = 110  # NVML documents fan speeds above 100 %
    gpu["utilization"].update(gpu_pct=100, memory_pct=0)
    gpu["nvlinks"] = [{"link": 0, "active": True, "errors": {"replay": 0, "recovery": None}}]
    facts["gpus"].append(gpu)
    before = copy.deepcopy(facts)
    assert drop_impossible_readings(facts) == before


def test_negative_link_counters_and_process_memory_become_null():
    facts = new_facts()
    gpu = new_gpu(3)
    gpu["nvlinks"] = [{"link": 5, "active": True, "errors": {"replay": -1, "crc_data": 4}}]
    gpu["processes"] = [{"pid": 77, "name": "python", "type": "compute", "used_memory_mib": -100,
                         "gpu_instance_id": None, "compute_instance_id": None}]
    gpu["power"]["draw_w"] = -40.5
    gpu["pcie"]["replay_counter"] = -9
    facts["gpus"].append(gpu)
    drop_impossible_readings(facts)
    assert gpu["nvlinks"][0]["errors"] == {"replay": None, "crc_data": 4}
    assert gpu["processes"][0]["used_memory_mib"] is None
    assert gpu["power"]["draw_w"] is None and gpu["pcie"]["replay_counter"] is None
    assert sorted(errors_by_field(facts)) == [
        "reading nvlinks[5].errors.replay", "reading pcie.replay_counter", "reading power.draw_w",
        "reading processes[pid 77].used_memory_mib"]
