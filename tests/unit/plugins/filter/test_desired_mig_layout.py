"""The desired_mig_layout filter (controller side): from a host's facts and effective policy, the GPUs and profile
tables the mig_layout module is given (the module itself: tests/unit/plugins/modules/test_mig_layout.py)."""

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.gpufleet.core.plugins.filter.desired_mig_layout import desired_mig_layout
from ansible_collections.gpufleet.core.plugins.module_utils.facts_model import new_gpu
from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.mig_config import load_mig_parted_config
from tests.support.mig_sim import A100


def gpu_fact(index, name, mig_mode):
    gpu = new_gpu(index)
    gpu["name"] = name
    gpu["mig"]["mode_current"] = gpu["mig"]["mode_pending"] = mig_mode
    return gpu


def mig_policy(selected, configs):
    return {"mig": {"config": load_mig_parted_config({"version": "v1", "mig-configs": configs}, "test"),
                    "selected": selected, "allow_drain": False}, "catalogs": {}}


CONFIGS = {"all-3g": [{"devices": "all", "mig-enabled": True, "mig-devices": {"3g.40gb": 2}}],
           "gpu1-off": [{"devices": [1], "mig-enabled": False}]}


def test_desired_mig_layout_gives_the_module_its_gpus_and_profile_tables():
    facts = {"gpus": [gpu_fact(0, A100, False), gpu_fact(1, "NVIDIA H100 80GB HBM3", True), gpu_fact(2, "Tesla T4", None)]}
    wanted = desired_mig_layout(facts, mig_policy("all-3g", CONFIGS))
    assert wanted["selected"] == "all-3g"
    assert [(gpu["index"], gpu["mig_enabled"], gpu["devices"]) for gpu in wanted["gpus"]] == [
        (0, True, {"3g.40gb": 2}), (1, True, {"3g.40gb": 2})]
    assert wanted["profiles"]["model"] == "A100-80GB" and "profiles" not in wanted["gpus"][0]
    assert wanted["gpus"][1]["profiles"]["model"] == "H100-80GB"
    assert wanted["models"] == {0: "A100-80GB", 1: "H100-80GB"}
    off = desired_mig_layout(facts, mig_policy("gpu1-off", CONFIGS))
    assert off["gpus"] == [{"index": 1, "mig_enabled": False, "devices": {}}] and off["profiles"] is None


def test_desired_mig_layout_is_empty_without_a_selected_config_and_names_a_missing_one():
    facts = {"gpus": [gpu_fact(0, A100, False)]}
    assert desired_mig_layout(facts, mig_policy(None, CONFIGS))["gpus"] == []
    assert desired_mig_layout(facts, {"mig": {"config": None, "selected": None}})["gpus"] == []
    with pytest.raises(AnsibleFilterError, match="'all-7g' is not in the config"):
        desired_mig_layout(facts, mig_policy("all-7g", CONFIGS))
