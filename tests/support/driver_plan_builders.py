"""Builders for the driver plan tests: a policy with a driver package and facts of a host on a driver."""

from ansible_collections.gpufleet.core.plugins.module_utils.facts_model import new_facts, new_gpu, new_process
from ansible_collections.gpufleet.core.plugins.plugin_utils.policy import validate_policy
from tests.support.schema_check import assert_valid_facts

H100 = "NVIDIA H100 80GB HBM3"
PACKAGE = "gpufleet-nvidia-driver"


def policy(**driver):
    return validate_policy({"driver": dict({"package": PACKAGE}, **driver), "persistence_mode": None})


def facts(version="550.90.07", gpus=2, name=H100, mismatch=False, lost=(), processes=0):
    result = new_facts()
    result["nvidia_present"] = not mismatch
    result["source"] = "nvidia_smi"
    result["collected_at"] = "2026-01-01T00:00:00Z"
    result["gather_subset"] = ["gpus", "processes", "host"]
    driver = result["driver"]
    if mismatch:
        driver.update(mismatch=True, mismatch_reason="nvidia-smi: Driver/library version mismatch",
                      userspace_version=mismatch, kernel_module_version=version)
    else:
        driver.update(version=version, userspace_version=version)
        for index in range(gpus):
            gpu = new_gpu(index)
            gpu.update(name=name, architecture="hopper", pci_bus_id="00000000:%02X:00.0" % (0x18 + index),
                       lost=index in lost)
            if index == 0 and processes:
                gpu["processes"] = [dict(new_process(4000 + n), name="python3") for n in range(processes)]
            result["gpus"].append(gpu)
    assert_valid_facts(result)
    return result
