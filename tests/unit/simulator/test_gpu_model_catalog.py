"""One catalog of simulated GPU models (simulator/gpu_models.json): the NVML simulator, the demo fleet's
scenarios, the fleet simulator's state and the rule tests' builders all show what it says."""

import json
import os
import subprocess
import sys

import pytest

from simulator import gpu_models
from simulator.nvml_sim import catalog_values, scenario_h100_node
from tests.support.rule_builders import crowded_l40s_node, healthy_node
from tests.support.schema_check import ROOT
from tools import demo_scenarios

STATE_PY = os.path.join(ROOT, "tests", "fleet", "sim", "state.py")
FIELDS = {"architecture", "compute_capability", "memory_total_mib", "bar1_total_mib", "pci_device_id",
          "pci_sub_system_id", "board_part_number", "gpu_part_number", "power_limits_w", "pcie_gen_max", "nvlinks",
          "mig"}
# PCI device ids of the real products (the upper 16 bits of NVML's pciDeviceId)
REAL_DEVICE_IDS = {"NVIDIA A100-SXM4-40GB": 0x20B0, "NVIDIA A100-SXM4-80GB": 0x20B2, "NVIDIA A30": 0x20B7,
                   "NVIDIA H100 80GB HBM3": 0x2330, "NVIDIA H200": 0x2335, "NVIDIA L40S": 0x26B9,
                   "Tesla T4": 0x1EB8, "NVIDIA A10G": 0x2237}


def test_every_model_has_every_field_and_its_real_pci_device_id():
    assert set(gpu_models.GPU_MODELS) == set(REAL_DEVICE_IDS)
    for name, entry in gpu_models.GPU_MODELS.items():
        assert set(entry) == FIELDS, name
        assert gpu_models.pci_id(name) == REAL_DEVICE_IDS[name] << 16 | 0x10DE, name
        limits = entry["power_limits_w"]
        assert limits["min"] <= limits["default"] <= limits["max"], name


def test_mig_support_is_the_real_one():
    supports_mig = sorted(name for name, entry in gpu_models.GPU_MODELS.items() if entry["mig"])
    assert supports_mig == ["NVIDIA A100-SXM4-40GB", "NVIDIA A100-SXM4-80GB", "NVIDIA A30",
                            "NVIDIA H100 80GB HBM3", "NVIDIA H200"]


def assert_nvml_gpu_shows_catalog(gpu):
    expected = catalog_values(gpu["name"])
    assert gpu["pci_device_id"] == expected["pci_device_id"]
    assert gpu["pci_subsystem_id"] == expected["pci_subsystem_id"]
    assert gpu["architecture"] == expected["architecture"]
    assert gpu["compute_capability"] == expected["compute_capability"]
    assert gpu["memory"]["total_mib"] == expected["memory_total_mib"]
    assert gpu["power"]["min_limit_w"] == expected["min_limit_w"]
    assert gpu["power"]["max_limit_w"] == expected["max_limit_w"]
    assert len(gpu["nvlinks"]) == expected["nvlinks"]


def test_nvml_simulator_h100_is_the_catalog_h100():
    gpu = scenario_h100_node(1)["gpus"][0]
    assert_nvml_gpu_shows_catalog(gpu)
    assert gpu["pci_device_id"] == 0x233010DE and len(gpu["nvlinks"]) == 18


@pytest.mark.parametrize("builder", ["a100_gpu", "l40s_gpu"])
def test_demo_scenario_gpus_are_the_catalog_models(builder):
    assert_nvml_gpu_shows_catalog(getattr(demo_scenarios, builder)(0))


def load_state_module():
    import importlib.util  # pylint: disable=import-outside-toplevel
    spec = importlib.util.spec_from_file_location("gpufleet_sim_state_catalog", STATE_PY)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_fleet_simulator_models_are_the_catalog_models():
    state = load_state_module()
    for name, spec in state.GPU_MODELS.items():
        gpu = state.gpu_record(name, 0, "h1", "00000000:18:00.0", None)
        entry = gpu_models.model(name)
        assert gpu["pci_device_id"] == entry["pci_device_id"] and gpu["memory"]["total_mib"] == entry["memory_total_mib"]
        assert gpu["architecture"].lower().split()[0] == entry["architecture"]
        assert gpu["power"]["min_limit_w"] == entry["power_limits_w"]["min"]
        assert gpu["power"]["max_limit_w"] == entry["power_limits_w"]["max"]
        assert gpu["pcie"]["gen_max"] == entry["pcie_gen_max"], spec


def test_fleet_simulator_reads_the_catalog_with_the_standard_library_only():
    """-S: no site-packages (no PyYAML), as for the system python3 that runs state.py without the venv."""
    code = ("import importlib.util, json; spec = importlib.util.spec_from_file_location('s', %r); "
            "m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m); "
            "print(json.dumps(sorted(m.GPU_MODELS)))" % STATE_PY)
    out = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True, check=True, cwd="/")
    assert json.loads(out.stdout) == sorted(set(REAL_DEVICE_IDS) - {"NVIDIA L40S"})


def test_rule_test_gpus_are_the_catalog_models():
    for facts, name in ((healthy_node(), "NVIDIA H100 80GB HBM3"), (crowded_l40s_node(), "NVIDIA L40S")):
        entry = gpu_models.model(name)
        for gpu in facts["gpus"]:
            assert gpu["name"] == name and gpu["architecture"] == entry["architecture"]
            assert gpu["board_part_number"] == entry["board_part_number"]
            assert gpu["memory"]["total_mib"] == entry["memory_total_mib"]
            assert gpu["power"]["min_limit_w"] == entry["power_limits_w"]["min"]
            assert len(gpu["nvlinks"]) == entry["nvlinks"] and gpu["pcie"]["gen_max"] == entry["pcie_gen_max"]
