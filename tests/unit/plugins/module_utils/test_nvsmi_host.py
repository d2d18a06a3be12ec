"""The shared part of gpu_mode and mig_layout: options documented once, selection and refusals."""

import pytest
import yaml

from ansible_collections.gpufleet.core.plugins.module_utils import nvsmi_host
from ansible_collections.gpufleet.core.plugins.modules import gpu_mode, mig_layout


@pytest.mark.parametrize("module, timeout", [(gpu_mode, 60), (mig_layout, 300)])
def test_both_modules_take_the_shared_options(module, timeout):
    doc = yaml.safe_load(module.DOCUMENTATION)
    assert "gpufleet.core.nvidia_smi" in doc["extends_documentation_fragment"]
    assert module.ARGUMENT_SPEC["nvidia_smi"] == {"type": "path"}
    assert module.ARGUMENT_SPEC["timeout"] == {"type": "int", "default": timeout}


def test_selected_names_missing_gpus():
    gpus = {0: {}, 1: {}}
    assert nvsmi_host.selected(gpus, None) == [0, 1]
    assert nvsmi_host.selected(gpus, [1, 1]) == [1]
    with pytest.raises(nvsmi_host.NvidiaSmiHostError, match=r"GPU 3 not found on this host \(it has 0, 1\)"):
        nvsmi_host.selected(gpus, [0, 3])


def test_unknown_and_busy_among_the_changing_gpus():
    gpus = {0: {"processes": None, "processes_unknown": "no section"},
            1: {"processes": [{"pid": 9}, {"pid": 4}]}, 2: {"processes": []}}
    assert nvsmi_host.unknown_among([0, 1, 2], gpus) == {0: "no section"}
    assert nvsmi_host.busy_among([0, 1, 2], gpus) == {1: [4, 9]}
    with pytest.raises(nvsmi_host.NvidiaSmiHostError) as refused:
        nvsmi_host.refuse_busy({1: [4, 9]}, "compute mode", "Drain it.")
    assert str(refused.value) == ("processes use GPUs whose compute mode must change (GPU 1: pids 4, 9); "
                                  "nothing was changed. Drain it.")


def test_diff_text_is_one_line_per_gpu_in_index_order():
    assert nvsmi_host.diff_text({10: "b", 2: "a"}, lambda v: v.upper()) == "gpu 2: A\ngpu 10: B\n"
