"""nvidia-smi -q -x backend, driven by the real captures of the public corpus (tests marked corpus) and by
the project's own samples (tests/fixtures/samples, and tests/unit/plugins/module_utils/test_nvsmi_xml_samples.py)."""

import glob
import os
import stat
import time

import pytest

from ansible_collections.gpufleet.core.plugins.module_utils.facts_model import new_facts
from ansible_collections.gpufleet.core.plugins.module_utils.host_io import CommandResult, ReplayHost
from tests.support.live_host import live_host
from ansible_collections.gpufleet.core.plugins.module_utils.nvsmi_xml import (
    NvidiaSmiParseError, collect_nvidia_smi, parse_nvidia_smi_xml)
from tests.support.corpus import NVSMI_XML_CAPTURES, read_realdata
from tests.support.schema_check import ROOT, assert_valid_facts, assert_valid_gpu
from tests.support.nvsmi_samples import SYNTHETIC

OWN_T4 = os.path.join(ROOT, "tests", "fixtures", "samples", "nvsmi-q-x_tesla-t4_515.105.01.xml")

F_2080 = "nvsmi-q-x_2x-rtx-2080_590.44.01_v13_telegraf.xml"
F_A100 = "nvsmi-q-x_a100-sxm4-40gb_mig-2x3g.20gb_510.47.03_v11_netdata.xml"
F_A10G = "nvsmi-q-x_a10g_515.105.01_v11_telegraf.xml"
F_GT1030 = "nvsmi-q-x_gt-1030_470.74_v11_telegraf.xml"
F_P2000 = "nvsmi-q-x_quadro-p2000_525.125.06_v12_telegraf.xml"
F_P400 = "nvsmi-q-x_quadro-p400_418.43_no-doctype_telegraf.xml"
F_3060L = "nvsmi-q-x_rtx-3060-laptop_515.65.01_v11_netdata.xml"
F_3060 = "nvsmi-q-x_rtx-3060_570.124.04_v12_telegraf.xml"
F_3090 = "nvsmi-q-x_rtx-3090_525.147.05_v12_telegraf.xml"
F_4000 = "nvsmi-q-x_rtx-4000-sff-ada_595.84_v13_telegraf.xml"
F_4090 = "nvsmi-q-x_rtx-4090_535.86.05_v12_netdata.xml"
F_T4 = "nvsmi-q-x_tesla-t4_515.105.01_v11_telegraf.xml"

# file: (driver, cuda, [(name, pci_bus_id, total MiB)]) as printed in each capture.
EXPECTED = {
    F_2080: ("590.44.01", "13.1", [("NVIDIA GeForce RTX 2080", "0000:01:00.0", 8192),
                                   ("NVIDIA GeForce RTX 2080", "0000:02:00.0", 8192)]),
    F_A100: ("510.47.03", "11.6", [("NVIDIA A100-SXM4-40GB", "0000:00:04.0", 40960)]),
    F_A10G: ("515.105.01", "11.7", [("NVIDIA A10G", "0000:00:1e.0", 23028)]),
    F_GT1030: ("470.74", "11.4", [("NVIDIA GeForce GT 1030", "0000:2d:00.0", 1998)]),
    F_P2000: ("525.125.06", "12.0", [("Quadro P2000", "0000:17:00.0", 5120)]),
    F_P400: ("418.43", "10.1", [("Quadro P400", "0000:43:00.0", 1998)]),
    F_3060L: ("515.65.01", "11.7", [("NVIDIA GeForce RTX 3060 Laptop GPU", "0000:01:00.0", 6144)]),
    F_3060: ("570.124.04", "12.8", [("NVIDIA GeForce RTX 3060", "0000:2d:00.0", 12288)]),
    F_3090: ("525.147.05", "12.0", [("NVIDIA GeForce RTX 3090", "0000:00:10.0", 24576)]),
    F_4000: ("595.84", "13.2", [("NVIDIA RTX 4000 SFF Ada Generation", "0000:06:00.0", 20475)]),
    F_4090: ("535.86.05", "12.2", [("NVIDIA GeForce RTX 4090", "0000:84:00.0", 24564)]),
    F_T4: ("515.105.01", "11.7", [("Tesla T4", "0000:00:1e.0", 15360)]),
}


def read(name):
    return read_realdata(name)


def own_t4():
    with open(OWN_T4) as handle:
        return handle.read()


def parse(name):
    return parse_nvidia_smi_xml(read(name))


def gpu0(name):
    return parse(name)["gpus"][0]


def replay_host(commands, bins=None):
    return ReplayHost({"bins": bins if bins is not None else {"nvidia-smi": "/usr/bin/nvidia-smi"},
                       "commands": commands})


def smi_host(stdout, rc=0, stderr=""):
    return replay_host({"nvidia-smi -q -x": {"rc": rc, "stdout": stdout, "stderr": stderr}})


def fresh_facts():
    facts = new_facts()
    facts["collected_at"] = "2026-01-01T00:00:00Z"
    return facts


# ---------------------------------------------------------------- every capture

def test_every_capture_has_expectations(corpus):
    found = sorted(os.path.basename(p) for p in glob.glob(corpus.realdata("nvsmi-q-x_*.xml")))
    assert found and set(found) == set(EXPECTED) == set(NVSMI_XML_CAPTURES)


@pytest.mark.corpus
@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_capture_driver_and_gpus(name):
    driver, cuda, gpus = EXPECTED[name]
    report = parse(name)
    assert report["driver"] == {"version": driver, "cuda_driver_version": cuda}
    assert [(g["name"], g["pci_bus_id"], g["memory"]["total_mib"]) for g in report["gpus"]] == gpus
    assert [g["index"] for g in report["gpus"]] == list(range(len(gpus)))
    for gpu in report["gpus"]:
        assert_valid_gpu(gpu)
        assert gpu["uuid"].startswith("GPU-")
        assert gpu["lost"] is False


@pytest.mark.corpus
@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_collect_fills_facts_from_capture(name):
    facts = fresh_facts()
    assert collect_nvidia_smi(smi_host(read(name)), facts, timeout=5) is True
    driver, cuda, gpus = EXPECTED[name]
    assert facts["driver"]["version"] == driver
    assert facts["driver"]["userspace_version"] == driver
    assert facts["driver"]["cuda_driver_version"] == cuda
    assert len(facts["gpus"]) == len(gpus)
    assert_valid_facts(facts)


# ---------------------------------------------------------------- per schema variant

@pytest.mark.corpus
def test_v13_two_gpus_event_reasons_power_and_pcie():
    first, second = parse(F_2080)["gpus"]
    assert first["clock_event_reasons"] == {"mask": 0x1, "active": ["gpu_idle"]}
    assert first["power"] == {"draw_w": 1.0, "limit_w": 215.0, "default_limit_w": 215.0,
                              "min_limit_w": 105.0, "max_limit_w": 240.0}
    assert second["power"]["draw_w"] == 1.62
    assert first["pcie"] == {"gen_current": 1, "gen_max": 3, "width_current": 8, "width_max": 16,
                             "replay_counter": 0, "aer": None}
    assert first["temperature"] == {"gpu_c": 15, "slowdown_c": 97, "shutdown_c": 100, "memory_c": None}
    assert (first["fan_speed_pct"], second["fan_speed_pct"]) == (31, 32)
    assert first["architecture"] == "turing"
    assert first["vbios_version"] == "90.04.0B.00.8F"
    assert first["serial"] is None and first["board_part_number"] is None
    assert first["persistence_mode"] is True
    assert first["mig"] == {"mode_current": None, "mode_pending": None, "gpu_instances": []}
    assert first["fabric"] is None


@pytest.mark.corpus
def test_v13_ada_event_reasons_processes_and_remapped_rows():
    gpu = gpu0(F_4000)
    assert gpu["clock_event_reasons"] == {"mask": 0x1, "active": ["gpu_idle"]}
    assert gpu["power"]["draw_w"] == 8.81  # average_power_draw before instant_power_draw
    assert gpu["board_part_number"] == "900-5G192-1770-000"
    assert gpu["architecture"] == "ada"
    assert gpu["ecc"]["mode_current"] is False
    assert gpu["remapped_rows"] == {"correctable": 0, "uncorrectable": 0, "pending": False, "failure": False}
    assert gpu["utilization"] == {"gpu_pct": 0, "memory_pct": 37}
    assert [(p["pid"], p["name"], p["type"], p["used_memory_mib"]) for p in gpu["processes"]] == [
        (1842, "cosmic-comp", "graphics", 410),
        (3190, "/usr/bin/code", "graphics", 451),
        (4937, "python", "compute", 160),
        (34626, "/usr/lib/chromium/chromium", "compute+graphics", 183),
    ]
    assert all(p["gpu_instance_id"] is None and p["compute_instance_id"] is None for p in gpu["processes"])


@pytest.mark.corpus
def test_t4_processes_ecc_and_retired_pages():
    gpu = gpu0(F_T4)
    assert [(p["pid"], p["name"], p["type"], p["used_memory_mib"]) for p in gpu["processes"]] == [
        (675, "/usr/lib/xorg/Xorg", "graphics", 22), (5762, "python", "compute", 1005)]
    assert gpu["ecc"] == {"mode_current": True, "mode_pending": True, "volatile_corrected": 0,
                          "volatile_uncorrected": 0, "aggregate_corrected": 0, "aggregate_uncorrected": 0}
    assert gpu["retired_pages"] == {"single_bit": 0, "double_bit": 0, "pending": False}
    assert gpu["remapped_rows"] == {"correctable": None, "uncorrectable": None, "pending": None, "failure": None}
    assert gpu["clock_event_reasons"] == {"mask": 0, "active": []}
    assert gpu["performance_state"] == "P0"
    assert gpu["clocks"] == {"graphics_mhz": 585, "sm_mhz": 585, "memory_mhz": 5000,
                             "max_graphics_mhz": 1590, "max_sm_mhz": 1590, "max_memory_mhz": 5001}


@pytest.mark.corpus
def test_a100_mig_enabled_and_instance_memory():
    report = parse(F_A100)
    gpu = report["gpus"][0]
    assert gpu["mig"]["mode_current"] is True and gpu["mig"]["mode_pending"] is True
    assert report["mig_memory_mib"] == {"0000:00:04.0": {1: 19968, 2: 19968}}
    assert gpu["memory"] == {"total_mib": 40960, "used_mib": 38, "free_mib": 40315, "reserved_mib": 605,
                             "bar1_total_mib": 65536, "bar1_used_mib": 1}
    assert gpu["temperature"] == {"gpu_c": 36, "slowdown_c": 89, "shutdown_c": 92, "memory_c": 44}
    assert gpu["ecc"]["volatile_corrected"] is None and gpu["ecc"]["aggregate_uncorrected"] == 0
    assert gpu["remapped_rows"]["correctable"] is None
    assert gpu["power"]["draw_w"] == 66.92 and gpu["power"]["limit_w"] == 400.0
    assert gpu["utilization"] == {"gpu_pct": None, "memory_pct": None}
    assert gpu["serial"] == "1324321002473"


@pytest.mark.corpus
def test_418_oldest_schema_has_no_mig_mode_and_no_power():
    gpu = gpu0(F_P400)
    assert gpu["mig"]["mode_current"] is None and gpu["mig"]["mode_pending"] is None
    assert gpu["architecture"] is None
    assert gpu["memory"]["reserved_mib"] is None
    assert set(gpu["power"].values()) == {None}
    assert set(gpu["ecc"].values()) == {None}  # single_bit/double_bit totals all N/A
    assert gpu["temperature"]["shutdown_c"] == 103 and gpu["temperature"]["slowdown_c"] == 100
    assert gpu["serial"] == "0424418054852"


@pytest.mark.corpus
def test_enforced_limit_below_default_on_3090():
    power = gpu0(F_3090)["power"]
    assert (power["limit_w"], power["default_limit_w"], power["max_limit_w"]) == (200.0, 350.0, 375.0)


@pytest.mark.corpus
def test_r570_average_power_and_no_fabric():
    gpu = gpu0(F_3060)
    assert gpu["power"]["draw_w"] == 11.6
    assert gpu["power"]["limit_w"] == 170.0
    assert gpu["fabric"] is None


@pytest.mark.corpus
def test_4090_tlimit_temperatures_are_not_turned_into_thresholds():
    gpu = gpu0(F_4090)
    assert gpu["temperature"] == {"gpu_c": 40, "slowdown_c": None, "shutdown_c": None, "memory_c": None}
    assert gpu["power"]["draw_w"] == 26.84
    assert gpu["pcie"]["gen_max"] == 3  # max_link_gen, the lower of device (4) and host (3)


@pytest.mark.corpus
def test_gt1030_long_process_names_and_missing_draw():
    gpu = gpu0(F_GT1030)
    assert len(gpu["processes"]) == 10
    assert gpu["processes"][-2]["name"].startswith("/usr/lib/chromium/chromium --type=gpu-process")
    assert gpu["power"]["draw_w"] is None and gpu["power"]["min_limit_w"] == 25.5


# ---------------------------------------------------------------- synthetic values


def test_synthetic_values_cover_newer_fields():
    gpu = parse_nvidia_smi_xml(SYNTHETIC)["gpus"][0]
    assert_valid_gpu(gpu)
    assert gpu["pci_bus_id"] == "0000:3b:00.0"
    assert gpu["architecture"] == "hopper"
    assert gpu["fan_speed_pct"] is None
    assert gpu["compute_mode"] == "exclusive_process"
    assert gpu["mig"] == {"mode_current": False, "mode_pending": True, "gpu_instances": []}
    assert gpu["clock_event_reasons"] == {"mask": 0x44, "active": ["sw_power_cap", "hw_thermal_slowdown"]}
    assert gpu["ecc"]["volatile_corrected"] == 7 and gpu["ecc"]["volatile_uncorrected"] == 4
    assert gpu["ecc"]["aggregate_corrected"] is None
    assert gpu["retired_pages"] == {"single_bit": None, "double_bit": None, "pending": True}
    assert gpu["remapped_rows"] == {"correctable": 0, "uncorrectable": 2, "pending": True, "failure": False}
    assert gpu["fabric"] == {"state": "completed", "status": "success", "clique_id": 4, "cluster_uuid": None}
    assert gpu["processes"] == [{"pid": 4242, "name": "python3", "type": "compute", "used_memory_mib": None,
                                 "gpu_instance_id": 1, "compute_instance_id": 0}]


def test_lost_gpu_values_mark_the_gpu_lost():
    text = SYNTHETIC.replace("NVIDIA H100 80GB HBM3", "GPU is lost").replace(
        "GPU-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee", "[Unknown Error]")
    gpu = parse_nvidia_smi_xml(text)["gpus"][0]
    assert gpu["lost"] is True and gpu["name"] is None and gpu["uuid"] is None
    facts = fresh_facts()
    assert collect_nvidia_smi(smi_host(text), facts, timeout=5) is True
    assert [(e["gpu"], e["call"]) for e in facts["errors"]] == [(0, "nvidia-smi -q -x")]
    assert_valid_facts(facts)


def test_unknown_error_in_one_field_is_not_a_lost_gpu():
    gpu = parse_nvidia_smi_xml(SYNTHETIC.replace("Exclusive_Process", "[Unknown Error]"))["gpus"][0]
    assert gpu["lost"] is False and gpu["compute_mode"] is None


# ---------------------------------------------------------------- malformed input

@pytest.mark.parametrize("text", ["", "   \n", None, b""])
def test_empty_output_is_a_parse_error(text):
    with pytest.raises(NvidiaSmiParseError, match="nothing"):
        parse_nvidia_smi_xml(text)


@pytest.mark.parametrize("text", [
    "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.",
    "No devices were found",
    "\x00\x01\x02 binary",
])
def test_non_xml_is_a_parse_error(text):
    with pytest.raises(NvidiaSmiParseError, match="no nvidia_smi_log XML"):
        parse_nvidia_smi_xml(text)


def test_wrong_root_is_a_parse_error():
    with pytest.raises(NvidiaSmiParseError, match="root <nvidia_smi_log_v2>"):
        parse_nvidia_smi_xml('<?xml version="1.0" ?><nvidia_smi_log_v2><gpu/></nvidia_smi_log_v2>')


def test_entity_declarations_are_refused():
    text = own_t4().replace('"nvsmi_device_v11.dtd">', '"x.dtd" [<!ENTITY e SYSTEM "file:///etc/passwd">]>')
    with pytest.raises(NvidiaSmiParseError, match="entity"):
        parse_nvidia_smi_xml(text)


def test_text_around_the_report_is_ignored():
    text = "Warning: something odd\n" + own_t4() + "\ntrailing words"
    assert parse_nvidia_smi_xml(text)["gpus"][0]["name"] == "Tesla T4"


@pytest.mark.corpus
@pytest.mark.parametrize("name", sorted(EXPECTED))
@pytest.mark.parametrize("fraction", [0.02, 0.3, 0.5, 0.8, 0.995])
def test_truncated_capture_is_a_parse_error(name, fraction):
    text = read(name)
    cut = text[:int(len(text) * fraction)]
    with pytest.raises(NvidiaSmiParseError, match="truncated or malformed"):
        parse_nvidia_smi_xml(cut)
    facts = fresh_facts()
    assert collect_nvidia_smi(smi_host(cut), facts, timeout=5) is False
    assert facts["gpus"] == [] and len(facts["errors"]) == 1
    assert_valid_facts(facts)


# ---------------------------------------------------------------- running nvidia-smi

def test_not_installed_is_quiet():
    facts = fresh_facts()
    assert collect_nvidia_smi(replay_host({}, bins={}), facts, timeout=5) is False
    assert facts["errors"] == [] and facts["gpus"] == []


@pytest.mark.parametrize("stdout, rc, stderr, reason", [
    ("", 0, "", "printed nothing"),
    ("garbage \x07 output", 0, "", "no nvidia_smi_log XML"),
    ("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
     "Make sure that the latest NVIDIA driver is installed and running.\n", 9, "", "exit status 9: NVIDIA-SMI has failed"),
    ("No devices were found\n", 6, "", "exit status 6: No devices were found"),
])
def test_failures_give_one_error_and_no_gpus(stdout, rc, stderr, reason):
    facts = fresh_facts()
    assert collect_nvidia_smi(smi_host(stdout, rc, stderr), facts, timeout=5) is False
    assert facts["gpus"] == []
    assert len(facts["errors"]) == 1 and reason in facts["errors"][0]["reason"]
    assert facts["errors"][0]["call"] == "nvidia-smi -q -x" and facts["errors"][0]["code"] == rc
    assert_valid_facts(facts)


@pytest.mark.parametrize("output, library", [
    ("Failed to initialize NVML: Driver/library version mismatch\n", None),
    ("Failed to initialize NVML: Driver/library version mismatch\nNVML library version: 535.129\n", "535.129"),
])
def test_driver_library_mismatch(output, library):
    facts = fresh_facts()
    assert collect_nvidia_smi(smi_host(output, rc=18), facts, timeout=5) is False
    assert facts["driver"]["mismatch"] is True
    assert "Driver/library version mismatch" in facts["driver"]["mismatch_reason"]
    assert facts["driver"]["userspace_version"] == library
    assert len(facts["errors"]) == 1 and facts["errors"][0]["code"] == 18
    assert_valid_facts(facts)


class HangingHost:
    """nvidia-smi that never answers: the host killed it at the timeout."""

    def __init__(self):
        self.timeouts = []

    def find_bin(self, name):
        return "/usr/bin/" + name

    def run(self, argv, timeout):
        self.timeouts.append(timeout)
        return CommandResult(None, timed_out=True)


def test_hanging_command_is_reported_killed():
    host, facts = HangingHost(), fresh_facts()
    assert collect_nvidia_smi(host, facts, timeout=7) is False
    assert host.timeouts == [7]
    assert len(facts["errors"]) == 1 and "killed" in facts["errors"][0]["reason"]
    assert_valid_facts(facts)


def test_live_hanging_nvidia_smi_is_killed_at_the_timeout(tmp_path):
    script = tmp_path / "nvidia-smi"
    script.write_text("#!/bin/sh\nsleep 30\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    host = live_host(find_bin=lambda name: str(script) if name == "nvidia-smi" else None)
    facts = fresh_facts()
    started = time.monotonic()
    assert collect_nvidia_smi(host, facts, timeout=1) is False
    assert time.monotonic() - started < 5
    assert "killed" in facts["errors"][0]["reason"]


@pytest.mark.corpus
def test_partial_report_with_unreachable_gpu():
    """GPU 0000:03:00.0 could not be opened; nvidia-smi reported the other two and exited non-zero."""
    stderr = "Unable to determine the device handle for GPU0000:03:00.0: Unknown Error\n"
    facts = fresh_facts()
    assert collect_nvidia_smi(smi_host(read(F_2080), rc=15, stderr=stderr), facts, timeout=5) is True
    assert [(g["index"], g["pci_bus_id"], g["lost"]) for g in facts["gpus"]] == [
        (0, "0000:01:00.0", False), (1, "0000:02:00.0", False), (2, "0000:03:00.0", True)]
    assert [(e["gpu"], e["code"]) for e in facts["errors"]] == [(None, 15), (2, None)]
    assert "Unable to determine the device handle" in facts["errors"][1]["reason"]
    assert_valid_facts(facts)


@pytest.mark.corpus
def test_unreachable_gpu_takes_its_place_in_pci_order():
    stderr = "Unable to determine the device handle for GPU 0000:00:05.0: Unknown Error\n"
    facts = fresh_facts()
    assert collect_nvidia_smi(smi_host(read(F_2080), rc=15, stderr=stderr), facts, timeout=5) is True
    assert [(g["index"], g["pci_bus_id"]) for g in facts["gpus"]] == [
        (0, "0000:00:05.0"), (1, "0000:01:00.0"), (2, "0000:02:00.0")]


# ---------------------------------------------------------------- MIG layout through collect

LGI_A100 = """+-------------------------------------------------------+
| GPU instances:                                        |
| GPU   Name             Profile  Instance   Placement  |
|                          ID       ID       Start:Size |
|=======================================================|
|   0  MIG 3g.20gb         9        1          4:4     |
+-------------------------------------------------------+
|   0  MIG 3g.20gb         9        2          0:4     |
+-------------------------------------------------------+
"""

LCI_A100 = """+--------------------------------------------------------------------+
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


@pytest.mark.corpus
def test_mig_layout_is_collected_when_mig_is_enabled():
    host = replay_host({
        "nvidia-smi -q -x": {"rc": 0, "stdout": read(F_A100)},
        "nvidia-smi mig -lgi": {"rc": 0, "stdout": LGI_A100},
        "nvidia-smi mig -lci": {"rc": 0, "stdout": LCI_A100},
    })
    facts = fresh_facts()
    assert collect_nvidia_smi(host, facts, timeout=5) is True
    assert facts["errors"] == []
    instances = facts["gpus"][0]["mig"]["gpu_instances"]
    assert [(gi["id"], gi["profile_id"], gi["profile_name"], gi["placement"], gi["memory_mib"]) for gi in instances] == [
        (1, 9, "3g.20gb", {"start": 4, "size": 4}, 19968), (2, 9, "3g.20gb", {"start": 0, "size": 4}, 19968)]
    assert instances[0]["compute_instances"] == [
        {"id": 0, "profile_id": 2, "profile_name": "3g.20gb", "placement": {"start": 0, "size": 3}}]
    assert_valid_facts(facts)


@pytest.mark.corpus
def test_mig_listing_failure_only_adds_an_error():
    host = replay_host({
        "nvidia-smi -q -x": {"rc": 0, "stdout": read(F_A100)},
        "nvidia-smi mig -lgi": {"rc": 4, "stdout": "Unable to list GPU instances: Insufficient Permissions\n"},
    })
    facts = fresh_facts()
    assert collect_nvidia_smi(host, facts, timeout=5) is True
    assert facts["gpus"][0]["mig"]["gpu_instances"] == []
    assert [(e["call"], e["code"]) for e in facts["errors"]] == [("nvidia-smi mig -lgi", 4)]
    assert_valid_facts(facts)


def test_no_mig_listing_without_mig_mode():
    host = replay_host({"nvidia-smi -q -x": {"rc": 0, "stdout": own_t4()}})
    facts = fresh_facts()
    assert collect_nvidia_smi(host, facts, timeout=5) is True
    assert facts["errors"] == []
