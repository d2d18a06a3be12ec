"""The GPU recovery action the driver asks for, read into the facts (issue 27, point 2): nvidia-smi's
gpu_recovery_action and NVML's field value of newer drivers, guarded for older drivers and pynvml."""

import pytest

from ansible_collections.gpufleet.core.plugins.module_utils.nvsmi_xml import parse_nvidia_smi_xml
from simulator.nvml_sim import SimulatedNvmlLibrary, collect_through, scenario_h100_node
from tests.support.corpus import read_realdata
from tests.support.nvsmi_samples import SYNTHETIC
from tests.support.schema_check import assert_valid_facts, assert_valid_gpu

R570 = "nvsmi-q-x_rtx-3060_570.124.04_v12_telegraf.xml"
OLD = "nvsmi-q-x_rtx-3090_525.147.05_v12_telegraf.xml"


def with_recovery_action(text):
    return SYNTHETIC.replace("</fabric>", "</fabric>\n    <gpu_recovery_action>%s</gpu_recovery_action>" % text)


@pytest.mark.corpus
def test_real_r570_report_says_none_and_an_older_one_has_no_field():
    assert parse_nvidia_smi_xml(read_realdata(R570))["gpus"][0]["recovery_action"] == "none"
    assert parse_nvidia_smi_xml(read_realdata(OLD))["gpus"][0]["recovery_action"] is None


@pytest.mark.parametrize("printed, name", [
    ("Reset", "gpu_reset"),                      # as nvidia-smi --query-gpu printed it in NVIDIA/DCGM#263
    ("Node Reboot Required", "node_reboot"),
    ("Drain and Reset", "drain_and_reset"),
    ("Drain P2P", "drain_p2p"),
    ("Wait For Fabric", "wait_for_fabric"),      # a word the audit does not know is kept, to be named
])
def test_nvidia_smi_words_become_the_facts_names(printed, name):
    gpu = parse_nvidia_smi_xml(with_recovery_action(printed))["gpus"][0]
    assert_valid_gpu(gpu)
    assert gpu["recovery_action"] == name


def test_nvml_field_value_is_read_per_gpu():
    scenario = scenario_h100_node(3)
    scenario["gpus"][1]["recovery_action"] = 2
    scenario["gpus"][2]["recovery_action"] = 7
    _answered, facts = collect_through(SimulatedNvmlLibrary(scenario))
    assert_valid_facts(facts)
    assert [gpu["recovery_action"] for gpu in facts["gpus"]] == [None, "node_reboot", "nvml_7"]
    assert facts["errors"] == []


def test_an_old_pynvml_without_field_values_is_quiet(monkeypatch):
    import pynvml
    monkeypatch.delattr(pynvml, "nvmlDeviceGetFieldValues")
    scenario = scenario_h100_node(1)
    scenario["gpus"][0]["recovery_action"] = 1
    _answered, facts = collect_through(SimulatedNvmlLibrary(scenario))
    assert facts["gpus"][0]["recovery_action"] is None and facts["errors"] == []


@pytest.mark.corpus
def test_the_value_nvidia_smi_printed_in_dcgm_263_reads_as_a_gpu_reset():
    """NVIDIA/DCGM#263: `nvidia-smi --query-gpu=index,gpu_recovery_action` printed '1, Reset' for the stuck GPU."""
    text = read_realdata("dcgmi-health-c-j_healthy-while-gpu1-recovery-action-reset-xid120_nvidia-smi-csv-and-dmon"
                         "_issue-quote.txt")
    printed = {line.split(",")[0]: line.split(",")[1].split("<=")[0].strip()
               for line in text.splitlines() if line[:1].isdigit() and "," in line}
    assert printed["1"] == "Reset" and printed["0"] == "None"
    names = {index: parse_nvidia_smi_xml(with_recovery_action(word))["gpus"][0]["recovery_action"]
             for index, word in printed.items()}
    assert names["1"] == "gpu_reset" and set(names.values()) == {"gpu_reset", "none"}
