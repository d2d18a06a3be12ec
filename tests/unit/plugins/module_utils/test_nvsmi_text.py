"""The text `nvidia-smi -q` (nvsmi_text), read as its XML report by nvsmi_xml: the real captures of the public corpus
(tests marked corpus; INDEX.md's ground truth), synthetic variants of other drivers' layouts, and a captured host
that holds only the text (a sosreport's sos_commands, an nvidia-bug-report.log)."""

import json
import os

import pytest

from ansible_collections.gpufleet.core.plugins.module_utils import collector
from ansible_collections.gpufleet.core.plugins.module_utils.capture_host import open_capture
from ansible_collections.gpufleet.core.plugins.module_utils.nvsmi_text import (
    nvidia_smi_text_as_xml, parse_nvidia_smi_text)
from ansible_collections.gpufleet.core.plugins.module_utils.nvsmi_xml import NvidiaSmiParseError, parse_nvidia_smi_xml
from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.diagnose import diagnose_fleet
from tests.support.capture_roots import write_file
from tests.support.demo_fleet import demo_audit
from tests.support.schema_check import assert_valid_facts

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
BUG_REPORT = os.path.join(ROOT, "tests", "fixtures", "captures", "nvidia-bug-report-sample.log")
A10 = "nvsmi-q_a10_550.127.05_gpud.txt"
PAGE_RETIREMENT = "nvsmi-q-d-PAGE_RETIREMENT_8gpu_535.86.10_azure_clean.txt"
BANNER = "==============NVSMI LOG==============\n\n"


def captured_root(root, text):
    write_file(root, "sos_commands/nvidia/nvidia-smi_-q", text)
    write_file(root, "sos_commands/date/date", "Sun Dec  6 19:27:22 UTC 2026\n")
    return root


def collect_text(tmp_path, text):
    capture = open_capture(captured_root(str(tmp_path), text))
    facts, _recorded = collector.Collection(capture=capture, gather_subset=["driver", "gpus"]).run()
    assert_valid_facts(facts)
    return facts


def rules(facts):
    return sorted((finding["rule"], finding.get("gpu")) for finding in diagnose_fleet({"node": facts}, {})["node"])


def report(body, header="Driver Version                            : 470.82.01\nAttached GPUs : 1\n"):
    return BANNER + header + body


# ---------------------------------------------------------------- the corpus

@pytest.mark.corpus
def test_the_a10_text_report_gives_its_gpu_as_the_xml_would(corpus):
    parsed = parse_nvidia_smi_text(corpus.read_realdata(A10))
    # INDEX: `nvidia-smi -q`, 1x A10, 550.127.05
    assert parsed["driver"] == {"version": "550.127.05", "cuda_driver_version": "12.4"}
    assert parsed["attached_gpus"] == 1 and parsed["unreadable"] == []
    gpu, = parsed["gpus"]
    assert (gpu["name"], gpu["pci_bus_id"], gpu["uuid"], gpu["serial"]) == (
        "NVIDIA A10", "0000:06:00.0", "GPU-51ae0086-e1ac-4a20-f062-9caa44e4df6d", "1324722021038")
    assert gpu["architecture"] == "ampere" and gpu["lost"] is False
    assert gpu["memory"] == {"total_mib": 23028, "used_mib": 1, "free_mib": 22503, "reserved_mib": 526,
                             "bar1_total_mib": 32768, "bar1_used_mib": 1}
    assert gpu["temperature"] == {"gpu_c": 33, "slowdown_c": 98, "shutdown_c": 101, "memory_c": None}
    assert gpu["power"] == {"draw_w": 21.3, "limit_w": 150.0, "default_limit_w": 150.0, "min_limit_w": 100.0,
                            "max_limit_w": 150.0}
    assert gpu["clocks"]["memory_mhz"] == 405 and gpu["clocks"]["max_graphics_mhz"] == 1695
    # "Idle : Active", and the reasons printed deeper under "HW Slowdown" read as the others
    assert gpu["clock_event_reasons"] == {"mask": 0x1, "active": ["gpu_idle"]}
    assert gpu["pcie"] == {"gen_current": 1, "gen_max": 4, "width_current": 16, "width_max": 16,
                           "replay_counter": 0, "aer": None}
    assert gpu["ecc"]["mode_current"] is True and gpu["ecc"]["aggregate_uncorrected"] == 0
    assert gpu["remapped_rows"] == {"correctable": 0, "uncorrectable": 0, "pending": False, "failure": False}
    # Retired Pages all N/A on Ampere (row remapping instead); Fabric all N/A: no fabric; "Processes : None"
    assert gpu["retired_pages"] == {"single_bit": None, "double_bit": None, "pending": None}
    assert gpu["fabric"] is None and gpu["processes"] == [] and gpu["persistence_mode"] is True


@pytest.mark.corpus
def test_the_a10_text_report_in_a_captured_root_is_read_and_judged_healthy(corpus, tmp_path):
    facts = collect_text(tmp_path, corpus.read_realdata(A10))
    assert [gpu["name"] for gpu in facts["gpus"]] == ["NVIDIA A10"]
    assert facts["driver"]["version"] == "550.127.05" and facts["errors"] == []
    # a healthy idle A10 (P8): its PCIe link at gen 1 of 4 is the idle downtraining (info), nothing else of the GPU
    found = diagnose_fleet({"node": facts}, {})["node"]
    assert [(finding["rule"], finding["severity"]) for finding in found
            if finding["rule"].startswith(("hardware.", "driver."))] == [("hardware.pcie_link", "info")]


@pytest.mark.corpus
def test_the_page_retirement_text_report_gives_eight_clean_gpus(corpus, tmp_path):
    text = corpus.read_realdata(PAGE_RETIREMENT)
    parsed = parse_nvidia_smi_text(text)
    # INDEX: `nvidia-smi -q -d PAGE_RETIREMENT`, 8 GPUs, 535.86.10; clean: no retired page
    assert parsed["driver"]["version"] == "535.86.10" and parsed["attached_gpus"] == 8
    assert [gpu["pci_bus_id"] for gpu in parsed["gpus"]] == ["%04x:00:00.0" % n for n in range(1, 9)]
    assert [gpu["retired_pages"] for gpu in parsed["gpus"]] == [
        {"single_bit": 0, "double_bit": 0, "pending": False}] * 8
    facts = collect_text(tmp_path, text)
    assert len(facts["gpus"]) == 8
    assert [rule for rule, _gpu in rules(facts) if "retire" in rule] == []


# ---------------------------------------------------------------- the XML and the text of the same GPUs

def test_the_bug_reports_text_gives_the_gpus_the_live_audit_read():
    live = demo_audit()[0]["gpu-h100-xid79-02"]
    facts, _recorded = collector.Collection(capture=open_capture(BUG_REPORT)).run()
    printed = ("name", "uuid", "serial", "pci_bus_id", "board_part_number", "vbios_version", "architecture", "lost",
               "memory", "temperature", "power", "clocks", "clock_event_reasons", "performance_state", "ecc",
               "remapped_rows", "pcie", "persistence_mode", "fabric", "processes")
    live_gpus = [dict((key, gpu[key]) for key in printed) for gpu in live["gpus"] if not gpu["lost"]]
    text_gpus = [dict((key, gpu[key]) for key in printed) for gpu in facts["gpus"] if not gpu["lost"]]
    for gpus in (live_gpus, text_gpus):
        for gpu in gpus:
            # the text prints no AER counters (read from /sys) and the power draw to 0.01 W
            gpu["pcie"] = dict(gpu["pcie"], aer=None)
            gpu["power"] = dict(gpu["power"], draw_w=round(gpu["power"]["draw_w"], 2))
    assert len(text_gpus) == 7 and text_gpus == live_gpus


def test_the_text_as_xml_reads_as_the_text():
    text = report(OLD_DRIVER_GPU)
    assert parse_nvidia_smi_xml(nvidia_smi_text_as_xml(text)) == parse_nvidia_smi_text(text)


# ---------------------------------------------------------------- other drivers' layouts

OLD_DRIVER_GPU = """GPU 0000:3B:00.0
    Product Name                    : Tesla V100-PCIE-32GB
    Persistence Mode                : Disabled
    Serial Number                   : 0323618000123
    GPU UUID                        : GPU-0b4a2c1e-43c4-1f0a-93f4-2b7c1a6e9d10
    PCI
        Bus Id                      : 00000000:3B:00.0
        Replays Since Reset         : 3
    Performance State               : P0
    Clocks Throttle Reasons
        Idle                        : Not Active
        Applications Clocks Setting : Not Active
        SW Power Cap                : Active
        HW Slowdown                 : Not Active
            HW Thermal Slowdown     : N/A
            HW Power Brake Slowdown : N/A
        Sync Boost                  : Not Active
        SW Thermal Slowdown         : Not Active
    FB Memory Usage
        Total                       : 32510 MiB
        Used                        : 30000 MiB
        Free                        : 2510 MiB
    ECC Mode
        Current                     : Enabled
        Pending                     : Enabled
    ECC Errors
        Volatile
            Single Bit
                Device Memory       : 2
                Register File       : 0
                L1 Cache            : N/A
                Total               : 2
            Double Bit
                Device Memory       : 1
                Register File       : 0
                Total               : 1
        Aggregate
            Single Bit
                Device Memory       : 40
                Total               : 40
            Double Bit
                Device Memory       : 3
                Total               : 3
    Retired Pages
        Single Bit ECC              : 12
        Double Bit ECC              : 3
        Pending                     : Yes
    Temperature
        GPU Current Temp            : 61 C
        GPU Shutdown Temp           : 90 C
        GPU Slowdown Temp           : 87 C
    Power Readings
        Power Management            : Supported
        Power Draw                  : 238.51 W
        Power Limit                 : 250.00 W
        Enforced Power Limit        : 250.00 W
        Default Power Limit         : 250.00 W
    Processes
        Process ID                  : 4242
            Type                    : C
            Name                    : /usr/bin/python3 train.py --lr 0.1: warm
            Used GPU Memory         : 29990 MiB
        Process ID                  : 4343
            Type                    : G
            Name                    : Xorg
            Used GPU Memory         : 10 MiB
"""


def test_an_older_drivers_labels_read_as_its_xml_elements():
    gpu, = parse_nvidia_smi_text(report(OLD_DRIVER_GPU))["gpus"]
    assert gpu["pci_bus_id"] == "0000:3b:00.0" and gpu["persistence_mode"] is False
    # "Clocks Throttle Reasons", before R535 renamed them
    assert gpu["clock_event_reasons"]["active"] == ["sw_power_cap"]
    # ECC per memory location (Single Bit / Double Bit with a Total), retired pages with "Pending"
    assert gpu["ecc"] == {"mode_current": True, "mode_pending": True, "volatile_corrected": 2,
                          "volatile_uncorrected": 1, "aggregate_corrected": 40, "aggregate_uncorrected": 3}
    assert gpu["retired_pages"] == {"single_bit": 12, "double_bit": 3, "pending": True}
    # "Power Readings" with "Enforced Power Limit"
    assert (gpu["power"]["draw_w"], gpu["power"]["limit_w"]) == (238.51, 250.0)
    assert gpu["pcie"]["replay_counter"] == 3
    # each "Process ID" opens a process; a colon in its name is part of the name
    assert [(p["pid"], p["type"], p["name"], p["used_memory_mib"]) for p in gpu["processes"]] == [
        (4242, "compute", "/usr/bin/python3 train.py --lr 0.1: warm", 29990), (4343, "graphics", "Xorg", 10)]


def test_an_older_drivers_report_is_judged(tmp_path):
    facts = collect_text(tmp_path, report(OLD_DRIVER_GPU))
    found = rules(facts)
    assert ("hardware.retired_pages", "0000:3b:00.0") in found
    assert ("hardware.ecc_uncorrected", "0000:3b:00.0") in found


MIG_GPU = """GPU 00000000:07:00.0
    Product Name                          : NVIDIA A100-SXM4-40GB
    MIG Mode
        Current                           : Enabled
        Pending                           : Enabled
    MIG Devices
        MIG Device
            GPU Instance ID               : 1
            Compute Instance ID           : 0
            Device Attributes
                Shared
                    Multiprocessor count  : 42
            FB Memory Usage
                Total                     : 19968 MiB
                Used                      : 13 MiB
        MIG Device
            GPU Instance ID               : 2
            Compute Instance ID           : 0
            FB Memory Usage
                Total                     : 19968 MiB
    Remapped Rows                         : N/A
    Processes
        GPU instance ID                   : 1
        Compute instance ID               : 0
        Process ID                        : 777
            Type                          : C
            Name                          : trainer
            Used GPU Memory               : 100 MiB
        GPU instance ID                   : 2
        Compute instance ID               : 0
        Process ID                        : 778
            Type                          : C
            Name                          : infer
            Used GPU Memory               : 50 MiB
"""


def test_mig_sections_give_the_instances_memory_and_the_processes_instances():
    parsed = parse_nvidia_smi_text(report(MIG_GPU))
    gpu, = parsed["gpus"]
    assert (gpu["mig"]["mode_current"], gpu["mig"]["mode_pending"]) == (True, True)
    assert parsed["mig_memory_mib"] == {"0000:07:00.0": {1: 19968, 2: 19968}}
    assert [(p["pid"], p["gpu_instance_id"], p["compute_instance_id"]) for p in gpu["processes"]] == [
        (777, 1, 0), (778, 2, 0)]
    # "Remapped Rows : N/A" under MIG: unknown, not zero
    assert gpu["remapped_rows"]["correctable"] is None


FALLEN_GPU = """GPU 00000000:17:00.0
    Product Name                          : NVIDIA H100 80GB HBM3
    GPU UUID                              : GPU-aaaaaaaa-1111-2222-3333-444444444444
    PCI
        Bus Id                            : 00000000:17:00.0
"""


def test_a_gpu_that_fell_off_the_bus_is_lost_beside_the_ones_read(tmp_path):
    text = (report(FALLEN_GPU, header="Driver Version : 550.90.07\nAttached GPUs : 2\n")
            + "Unable to determine the device handle for GPU0000:2A:00.0: Unknown Error\n")
    facts = collect_text(tmp_path, text)
    assert [(gpu["pci_bus_id"], gpu["lost"]) for gpu in facts["gpus"]] == [
        ("0000:17:00.0", False), ("0000:2a:00.0", True)]
    assert "Unable to determine the device handle for GPU0000:2A:00.0" in facts["errors"][0]["reason"]
    assert ("hardware.gpu_lost", "0000:2a:00.0") in rules(facts)


def test_a_gpu_whose_values_read_gpu_is_lost_is_lost():
    text = report("GPU 00000000:17:00.0\n    Product Name : [GPU is lost]\n    GPU UUID : [GPU is lost]\n"
                  "    Temperature\n        GPU Current Temp : [GPU is lost]\n")
    gpu, = parse_nvidia_smi_text(text)["gpus"]
    assert gpu["lost"] is True and gpu["temperature"]["gpu_c"] is None


def test_a_reading_that_is_no_number_is_named_not_guessed():
    text = report("GPU 00000000:17:00.0\n    Temperature\n        GPU Current Temp : 6,1 C\n")
    assert parse_nvidia_smi_text(text)["unreadable"] == [(0, "temperature.gpu_c", "6,1 C")]


def test_an_incident_bundle_without_its_xml_gives_the_gpus_of_its_text(tmp_path):
    folder = str(tmp_path)
    write_file(folder, "nvidia-smi-q.txt", report(OLD_DRIVER_GPU))
    write_file(folder, "manifest.json", json.dumps({
        "format": "gpufleet-evidence", "format_version": 1, "host": "h", "status": "partial",
        "window": {"since": 1796500000, "until": 1796585242}, "host_clock": {"now": 1796585242},
        "files": [{"file": "nvidia-smi-q.txt", "command": "nvidia-smi -q", "status": "ok"}]}))
    facts, _recorded = collector.Collection(capture=open_capture(folder), gather_subset=["driver", "gpus"]).run()
    assert [(gpu["name"], gpu["retired_pages"]["double_bit"]) for gpu in facts["gpus"]] == [
        ("Tesla V100-PCIE-32GB", 3)]


def test_a_bug_report_without_an_nvidia_smi_section_says_it_lacks_the_gpus(tmp_path):
    path = tmp_path / "nvidia-bug-report.log"
    path.write_text("Start of NVIDIA bug report log file.\n\nDate: Mon Nov 30 06:00:00 UTC 2026\n"
                    "uname: Linux h 5.15.0-119-generic #129 x86_64\n")
    lacks = open_capture(str(path)).describe()["lacks"]
    assert lacks[0] == "nvidia-smi --query (the report holds no nvidia-smi section: no GPU facts)"
    assert not [item for item in open_capture(BUG_REPORT).describe()["lacks"] if "nvidia-smi" in item]


# ---------------------------------------------------------------- what is no report

def test_text_that_is_no_report_is_named():
    with pytest.raises(NvidiaSmiParseError, match="no NVSMI LOG report.*No devices were found"):
        parse_nvidia_smi_text("No devices were found\n")
    with pytest.raises(NvidiaSmiParseError, match="printed nothing"):
        parse_nvidia_smi_text("  \n")


def test_a_captured_nvidia_smi_failure_is_an_error_of_the_collection(tmp_path):
    facts = collect_text(tmp_path, "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n")
    assert facts["gpus"] == []
    assert any(error["call"] == "nvidia-smi -q -x" and "NVIDIA-SMI has failed" in error["reason"]
               for error in facts["errors"])


def test_a_captured_version_mismatch_is_the_drivers_mismatch(tmp_path):
    facts = collect_text(tmp_path, "Failed to initialize NVML: Driver/library version mismatch\n"
                                   "NVML library version: 550.54\n")
    assert facts["driver"]["mismatch"] is True and facts["driver"]["userspace_version"] == "550.54"
