"""The catalog of simulated GPU models (gpu_models.json beside this file), read with the standard library
only: tests/fleet/sim/state.py loads it with the system python3 too."""

import json
import os

CATALOG_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "gpu_models.json")


def load_models(path=CATALOG_PATH):
    """{product name: model properties}, as in gpu_models.json."""
    with open(path) as handle:
        return json.load(handle)["models"]


GPU_MODELS = load_models()


def model(name):
    """The catalog entry of one product name (KeyError for a model the simulators do not know)."""
    return GPU_MODELS[name]


def pci_id(name, field="pci_device_id"):
    """A PCI id of the model as the integer NVML returns (device << 16 | vendor)."""
    return int(GPU_MODELS[name][field], 16)
