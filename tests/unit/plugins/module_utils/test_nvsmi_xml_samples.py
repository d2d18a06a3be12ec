"""nvidia-smi -q -x backend on the project's own samples (tests/fixtures/samples): every field the parser
reads, in the R515 (DTD v11) and R550 (DTD v12) layouts, with and without MIG, one GPU and two."""

import os

import pytest

from ansible_collections.gpufleet.core.plugins.module_utils.facts_model import new_facts
from ansible_collections.gpufleet.core.plugins.module_utils.host_io import ReplayHost
from ansible_collections.gpufleet.core.plugins.module_utils.nvsmi_xml import (
    NvidiaSmiParseError, collect_nvidia_smi, parse_nvidia_smi_xml)
from tests.support.schema_check import ROOT, assert_valid_facts, assert_valid_gpu

SAMPLES = os.path.join(ROOT, "tests", "fixtures", "samples")
T4 = "nvsmi-q-x_tesla-t4_515.105.01.xml"
A100_MIG = "nvsmi-q-x_a100-sxm4-40gb_mig-2x3g.20gb_550.90.07.xml"
TWO_A10G = "nvsmi-q-x_2x-a10g_550.90.07.xml"

# file: (driver, cuda, [(name, pci_bus_id, total MiB, uuid)])
EXPECTED = {
    T4: ("515.105.01", "11.7", [("Tesla T4", "0000:00:1e.0", 15360, "GPU-c325c434-8090-9372-31f0-cfc1d0545b27")]),
    A100_MIG: ("550.90.07", "12.4", [("NVIDIA A100-SXM4-40GB", "0000:00:04.0", 40960,
                                      "GPU-08800952-2204-84c1-9ca0-d0b17bef2f49")]),
    TWO_A10G: ("550.90.07", "12.4", [("NVIDIA A10G", "0000:01:00.0", 23028, "GPU-af09a19b-ef85-bfea-5370-7bfc5df2740d"),
                                     ("NVIDIA A10G", "0000:02:00.0", 23028, "GPU-33252057-5bc7-eefb-5a38-73e92d10d746")]),
}

# nvidia-smi mig -lgi / -lci as R550 prints them for the A100 sample's two 3g.20gb instances
LGI = """+-------------------------------------------------------+
| GPU instances:                                        |
| GPU   Name             Profile  Instance   Placement  |
|                          ID       ID       Start:Size |
|=======================================================|
|   0  MIG 3g.20gb          9        1          0:4     |
+-------------------------------------------------------+
|   0  MIG 3g.20gb          9        2          4:4     |
+-------------------------------------------------------+
"""
LCI = """+--------------------------------------------------------------------+
| Compute instances:                                                 |
| GPU     GPU       Name             Profile   Instance   Placement    |
|       Instance                       ID        ID       Start:Size   |
|         ID                                                           |
|====================================================================|
|   0      1       MIG 3g.20gb          2         0          0:3      |
+--------------------------------------------------------------------+
|   0      2       MIG 3g.20gb          2         0          0:3      |
+--------------------------------------------------------------------+
"""


def sample(name):
    with open(os.path.join(SAMPLES, name)) as handle:
        return handle.read()


def gpus(name):
    return parse_nvidia_smi_xml(sample(name))["gpus"]


def fresh_facts():
    facts = new_facts()
    facts["collected_at"] = "2026-11-30T06:00:00Z"
    return facts


def smi_host(commands):
    return ReplayHost({"bins": {"nvidia-smi": "/usr/bin/nvidia-smi"}, "commands": commands})


def test_every_sample_has_expectations():
    assert sorted(n for n in os.listdir(SAMPLES) if n.endswith(".xml")) == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_sample_driver_and_gpus(name):
    driver, cuda, expected = EXPECTED[name]
    report = parse_nvidia_smi_xml(sample(name))
    assert report["driver"] == {"version": driver, "cuda_driver_version": cuda}
    assert [(g["name"], g["pci_bus_id"], g["memory"]["total_mib"], g["uuid"]) for g in report["gpus"]] == expected
    assert [g["index"] for g in report["gpus"]] == list(range(len(expected)))
    for gpu in report["gpus"]:
        assert_valid_gpu(gpu)
        assert gpu["lost"] is False


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_collect_fills_facts_from_sample(name):
    facts = fresh_facts()
    commands = {"nvidia-smi -q -x": {"rc": 0, "stdout": sample(name)}}
    if name == A100_MIG:
        commands.update({"nvidia-smi mig -lgi": {"rc": 0, "stdout": LGI}, "nvidia-smi mig -lci": {"rc": 0, "stdout": LCI}})
    assert collect_nvidia_smi(smi_host(commands), facts, timeout=5) is True
    driver, cuda, expected = EXPECTED[name]
    assert (facts["driver"]["version"], facts["driver"]["userspace_version"]) == (driver, driver)
    assert facts["driver"]["cuda_driver_version"] == cuda
    assert len(facts["gpus"]) == len(expected) and facts["errors"] == []
    assert_valid_facts(facts)


def test_t4_r515_layout():
    (gpu,) = gpus(T4)
    assert (gpu["architecture"], gpu["serial"], gpu["vbios_version"]) == ("turing", "1837777484182", "90.04.84.00.06")
    assert gpu["memory"] == {"total_mib": 15360, "used_mib": 1630, "free_mib": 13342, "reserved_mib": 388,
                             "bar1_total_mib": 256, "bar1_used_mib": 1}
    assert gpu["temperature"] == {"gpu_c": 47, "slowdown_c": 93, "shutdown_c": 96, "memory_c": None}
    # R515: power_readings with power_limit and enforced_power_limit
    assert gpu["power"] == {"draw_w": 31.42, "limit_w": 70.0, "default_limit_w": 70.0, "min_limit_w": 60.0,
                            "max_limit_w": 70.0}
    # R515: clocks_throttle_reasons, none active under load
    assert gpu["clock_event_reasons"] == {"mask": 0, "active": []}
    assert gpu["clocks"] == {"graphics_mhz": 585, "sm_mhz": 585, "memory_mhz": 5000,
                             "max_graphics_mhz": 1590, "max_sm_mhz": 1590, "max_memory_mhz": 5001}
    assert gpu["utilization"] == {"gpu_pct": 12, "memory_pct": 4}
    assert gpu["ecc"] == {"mode_current": True, "mode_pending": True, "volatile_corrected": 0,
                          "volatile_uncorrected": 0, "aggregate_corrected": 0, "aggregate_uncorrected": 0}
    assert gpu["retired_pages"] == {"single_bit": 0, "double_bit": 0, "pending": False}
    assert gpu["remapped_rows"] == {"correctable": None, "uncorrectable": None, "pending": None, "failure": None}
    assert gpu["pcie"] == {"gen_current": 3, "gen_max": 3, "width_current": 8, "width_max": 16,
                           "replay_counter": 0, "aer": None}
    assert (gpu["persistence_mode"], gpu["compute_mode"], gpu["fan_speed_pct"]) == (False, "default", None)
    assert gpu["mig"] == {"mode_current": None, "mode_pending": None, "gpu_instances": []}
    assert gpu["fabric"] is None and gpu["performance_state"] == "P0"
    assert [(p["pid"], p["name"], p["type"], p["used_memory_mib"]) for p in gpu["processes"]] == [
        (1318, "/usr/lib/xorg/Xorg", "graphics", 26), (48211, "python3", "compute", 1604)]


def test_a100_mig_sample_and_instance_memory():
    report = parse_nvidia_smi_xml(sample(A100_MIG))
    (gpu,) = report["gpus"]
    assert gpu["mig"]["mode_current"] is True and gpu["mig"]["mode_pending"] is True
    assert report["mig_memory_mib"] == {"0000:00:04.0": {1: 19968, 2: 19968}}
    assert gpu["memory"] == {"total_mib": 40960, "used_mib": 0, "free_mib": 40355, "reserved_mib": 605,
                             "bar1_total_mib": 65536, "bar1_used_mib": 1}
    assert gpu["temperature"] == {"gpu_c": 33, "slowdown_c": 89, "shutdown_c": 92, "memory_c": 44}
    assert gpu["power"]["draw_w"] == 58.31 and gpu["power"]["limit_w"] == 400.0
    # R550: clocks_event_reasons; an idle GPU
    assert gpu["clock_event_reasons"] == {"mask": 0x1, "active": ["gpu_idle"]}
    assert gpu["remapped_rows"] == {"correctable": None, "uncorrectable": None, "pending": None, "failure": None}
    assert (gpu["architecture"], gpu["serial"]) == ("ampere", "1383361210740")


def test_mig_layout_is_collected_from_the_sample():
    facts = fresh_facts()
    host = smi_host({"nvidia-smi -q -x": {"rc": 0, "stdout": sample(A100_MIG)},
                     "nvidia-smi mig -lgi": {"rc": 0, "stdout": LGI}, "nvidia-smi mig -lci": {"rc": 0, "stdout": LCI}})
    assert collect_nvidia_smi(host, facts, timeout=5) is True
    instances = facts["gpus"][0]["mig"]["gpu_instances"]
    assert [(gi["id"], gi["profile_id"], gi["profile_name"], gi["placement"], gi["memory_mib"]) for gi in instances] == [
        (1, 9, "3g.20gb", {"start": 0, "size": 4}, 19968), (2, 9, "3g.20gb", {"start": 4, "size": 4}, 19968)]
    assert [ci["profile_name"] for gi in instances for ci in gi["compute_instances"]] == ["3g.20gb", "3g.20gb"]
    assert_valid_facts(facts)


def test_mig_listing_failure_on_the_sample_only_adds_an_error():
    facts = fresh_facts()
    host = smi_host({"nvidia-smi -q -x": {"rc": 0, "stdout": sample(A100_MIG)},
                     "nvidia-smi mig -lgi": {"rc": 4, "stdout": "Unable to list GPU instances: Insufficient Permissions\n"}})
    assert collect_nvidia_smi(host, facts, timeout=5) is True
    assert facts["gpus"][0]["mig"]["gpu_instances"] == []
    assert [(e["call"], e["code"]) for e in facts["errors"]] == [("nvidia-smi mig -lgi", 4)]


def test_two_gpus_persistence_and_processes():
    first, second = gpus(TWO_A10G)
    assert (first["persistence_mode"], second["persistence_mode"]) == (True, True)
    assert (first["fan_speed_pct"], first["remapped_rows"]) == (
        30, {"correctable": 0, "uncorrectable": 0, "pending": False, "failure": False})
    assert first["processes"] == [] and first["memory"]["used_mib"] == 0
    assert [(p["pid"], p["name"], p["type"], p["used_memory_mib"]) for p in second["processes"]] == [
        (30412, "/opt/venv/bin/python3", "compute", 9120)]
    assert second["memory"]["used_mib"] == 9120


def test_partial_report_of_the_two_gpu_sample_with_an_unreachable_gpu():
    stderr = "Unable to determine the device handle for GPU0000:03:00.0: Unknown Error\n"
    facts = fresh_facts()
    host = smi_host({"nvidia-smi -q -x": {"rc": 15, "stdout": sample(TWO_A10G), "stderr": stderr}})
    assert collect_nvidia_smi(host, facts, timeout=5) is True
    assert [(g["index"], g["pci_bus_id"], g["lost"]) for g in facts["gpus"]] == [
        (0, "0000:01:00.0", False), (1, "0000:02:00.0", False), (2, "0000:03:00.0", True)]
    assert [(e["gpu"], e["code"]) for e in facts["errors"]] == [(None, 15), (2, None)]
    assert_valid_facts(facts)


def test_unreachable_gpu_of_the_sample_takes_its_place_in_pci_order():
    stderr = "Unable to determine the device handle for GPU 0000:00:05.0: Unknown Error\n"
    facts = fresh_facts()
    host = smi_host({"nvidia-smi -q -x": {"rc": 15, "stdout": sample(TWO_A10G), "stderr": stderr}})
    assert collect_nvidia_smi(host, facts, timeout=5) is True
    assert [(g["index"], g["pci_bus_id"]) for g in facts["gpus"]] == [
        (0, "0000:00:05.0"), (1, "0000:01:00.0"), (2, "0000:02:00.0")]


@pytest.mark.parametrize("name", sorted(EXPECTED))
@pytest.mark.parametrize("fraction", [0.02, 0.3, 0.5, 0.8, 0.995])
def test_truncated_sample_is_a_parse_error(name, fraction):
    text = sample(name)
    cut = text[:int(len(text) * fraction)]
    with pytest.raises(NvidiaSmiParseError, match="truncated or malformed"):
        parse_nvidia_smi_xml(cut)
    facts = fresh_facts()
    assert collect_nvidia_smi(smi_host({"nvidia-smi -q -x": {"rc": 0, "stdout": cut}}), facts, timeout=5) is False
    assert facts["gpus"] == [] and len(facts["errors"]) == 1
    assert_valid_facts(facts)
