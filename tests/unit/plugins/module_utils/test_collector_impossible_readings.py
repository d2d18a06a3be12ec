"""Readings that cannot be true become null with an error naming the field, whichever backend read them."""

import copy

import pynvml

from ansible_collections.gpufleet.core.plugins.module_utils import collector
from ansible_collections.gpufleet.core.plugins.module_utils.facts_model import (
    drop_impossible_readings, new_facts, new_gpu)
from ansible_collections.gpufleet.core.plugins.module_utils.host_io import ReplayHost
from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.diagnose import diagnose_fleet
from ansible_collections.gpufleet.core.plugins.plugin_utils.audit.facts_validation import facts_problems
from ansible_collections.gpufleet.core.plugins.plugin_utils.policy import validate_policy
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


def test_nvidia_smi_readings_that_are_no_number_become_null_with_an_error():
    """A decimal comma, 10^30 MiB, NaN and Infinity watts, a counter at the top of its unsigned range: each was
    read as null without a word; now each is null with an error naming the field and the text."""
    xml = SYNTHETIC.replace("<fan_speed>[Not Supported]</fan_speed>", """<fan_speed>[Not Supported]</fan_speed>
    <fb_memory_usage><total>1000000000000000000000000000000 MiB</total><used>1024 MiB</used></fb_memory_usage>
    <temperature><gpu_temp>45,5 C</gpu_temp><gpu_temp_slow_threshold>89 C</gpu_temp_slow_threshold></temperature>
    <power_readings><power_draw>NaN W</power_draw><enforced_power_limit>Infinity W</enforced_power_limit>
    <default_power_limit>700.00 W</default_power_limit></power_readings>
    <pci><replay_counter>18446744073709551615</replay_counter></pci>""")
    facts = nvidia_smi_facts(xml)
    gpu = facts["gpus"][0]
    assert gpu["memory"]["total_mib"] is None and gpu["memory"]["used_mib"] == 1024
    assert gpu["temperature"]["gpu_c"] is None and gpu["temperature"]["slowdown_c"] == 89
    assert (gpu["power"]["draw_w"], gpu["power"]["limit_w"], gpu["power"]["default_limit_w"]) == (None, None, 700.0)
    assert gpu["pcie"]["replay_counter"] is None and gpu["remapped_rows"]["uncorrectable"] == 2
    errors = errors_by_field(facts)
    assert {field: error["reason"] for field, error in errors.items()} == {
        "reading memory.total_mib":
            "'1000000000000000000000000000000 MiB' is not a reading of this field; reported as null",
        "reading temperature.gpu_c": "'45,5 C' is not a reading of this field; reported as null",
        "reading power.draw_w": "'NaN W' is not a reading of this field; reported as null",
        "reading power.limit_w": "'Infinity W' is not a reading of this field; reported as null",
        "reading pcie.replay_counter": "'18446744073709551615' is not a reading of this field; reported as null",
    }
    assert all(error["gpu"] == 0 for error in errors.values())
    assert facts_problems(facts) == []  # what the controller then takes


def test_memory_no_gpu_has_and_counters_beyond_64_bits_become_null():
    facts = new_facts()
    gpu = new_gpu(2)
    gpu["memory"].update(total_mib=999999999999999999, bar1_total_mib=65536)
    gpu["ecc"]["aggregate_corrected"] = 2 ** 64 - 1
    gpu["nvlinks"] = [{"link": 1, "active": True, "errors": {"replay": 2 ** 64 - 1, "crc_data": 4}}]
    facts["gpus"].append(gpu)
    drop_impossible_readings(facts)
    assert (gpu["memory"]["total_mib"], gpu["memory"]["bar1_total_mib"]) == (None, 65536)
    assert gpu["ecc"]["aggregate_corrected"] is None and gpu["nvlinks"][0]["errors"] == {"replay": None, "crc_data": 4}
    errors = errors_by_field(facts)
    assert errors["reading memory.total_mib"]["reason"] == (
        "999999999999999999 cannot be true (more than 16777216 MiB, which no GPU has); reported as null")
    assert errors["reading ecc.aggregate_corrected"]["reason"] == (
        "18446744073709551615 cannot be true (beyond 2^63-1: a value that says 'not available', not a reading); "
        "reported as null")
    assert "reading nvlinks[1].errors.replay" in errors


def test_nvml_counters_at_the_top_of_their_range_become_null():
    """NVML's unsigned 64-bit counters say 'not available' with 2^64-1: not a count, and no store column holds it."""
    scenario = scenario_h100_node(2)
    scenario["gpus"][1]["ecc"]["aggregate_corrected"] = 2 ** 64 - 1
    scenario["gpus"][1]["nvlinks"][0]["errors"]["crc_data"] = 2 ** 64 - 1
    facts = collector.Collection(source="nvml", gather_subset=["min", "nvlink"], pynvml=pynvml, host=ReplayHost({}),
                                 nvml_library=SimulatedNvmlLibrary(scenario)).run()[0]
    assert_valid_facts(facts)
    good, bad = facts["gpus"]
    assert good["ecc"]["aggregate_corrected"] == 0 and good["nvlinks"][0]["errors"]["crc_data"] == 0
    assert bad["ecc"]["aggregate_corrected"] is None and bad["nvlinks"][0]["errors"]["crc_data"] is None
    assert set(errors_by_field(facts)) == {"reading ecc.aggregate_corrected", "reading nvlinks[0].errors.crc_data"}
    assert facts_problems(facts) == []


def test_a_report_that_lists_fewer_gpus_than_attached_is_a_partial_collection():
    """nvidia-smi says 8 GPUs are attached and lists none: the host is not a healthy host without GPUs."""
    xml = ("<?xml version=\"1.0\" ?>\n<nvidia_smi_log><driver_version>550.90.07</driver_version>"
           "<cuda_version>12.4</cuda_version><attached_gpus>8</attached_gpus></nvidia_smi_log>\n")
    facts = nvidia_smi_facts(xml)
    assert facts["nvidia_present"] is True and facts["gpus"] == []
    assert facts["collection"] == {"status": "partial", "reasons": [
        "GPU facts: nvidia-smi -q -x: GPUs missing from the report: the report states 8 attached GPU(s) but lists 0"]}
    findings = diagnose_fleet({"gpu-08": facts}, {"gpu-08": validate_policy({})})["gpu-08"]
    [incomplete] = [finding for finding in findings if finding["rule"] == "driver.collection_incomplete"]
    assert incomplete["severity"] == "warning" and "GPUs missing from the report" in incomplete["summary"]


def test_a_report_that_lists_every_attached_gpu_is_complete():
    facts = nvidia_smi_facts(SYNTHETIC.replace("<cuda_version>12.4</cuda_version>",
                                               "<cuda_version>12.4</cuda_version><attached_gpus>1</attached_gpus>"))
    assert len(facts["gpus"]) == 1 and not any("missing" in reason for reason in facts["collection"]["reasons"])


def nvml_facts(scenario):
    facts = collector.Collection(source="nvml", gather_subset=["min"], pynvml=pynvml, host=ReplayHost({}),
                                 nvml_library=SimulatedNvmlLibrary(scenario)).run()[0]
    assert_valid_facts(facts)
    return facts


def test_nvml_that_cannot_count_the_gpus_is_a_partial_collection():
    scenario = scenario_h100_node(8)
    scenario["errors"] = {"nvmlDeviceGetCount_v2": 999}
    facts = nvml_facts(scenario)
    assert facts["nvidia_present"] is True and facts["gpus"] == []
    assert facts["collection"] == {"status": "partial", "reasons": ["GPU facts: nvmlDeviceGetCount: Unknown Error"]}


def test_nvml_gpus_that_cannot_be_opened_make_a_partial_collection_lost_ones_do_not():
    scenario = scenario_h100_node(8)
    for gpu in scenario["gpus"]:
        gpu["errors"] = {"nvmlDeviceGetHandleByIndex_v2": 999}
    facts = nvml_facts(scenario)
    assert [gpu["name"] for gpu in facts["gpus"]] == [None] * 8
    assert facts["collection"]["status"] == "partial"
    assert facts["collection"]["reasons"] == ["GPU facts: nvmlDeviceGetHandleByIndex: Unknown Error"]

    scenario = scenario_h100_node(2)
    scenario["gpus"][1]["lost"] = True
    facts = nvml_facts(scenario)
    assert facts["gpus"][1]["lost"] is True and facts["collection"] == {"status": "complete", "reasons": []}
