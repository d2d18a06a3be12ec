"""nvidia-mig-parted config files on the project's own sample (tests/fixtures/samples/mig-parted_config.yaml,
and the same config inside a GPU Operator ConfigMap): loading, per-model device filters, per-index
entries, feasibility and placement on the shipped MIG models, and the policy's config_file."""

import os

import pytest
from hypothesis import given, settings, strategies as st

from ansible_collections.gpufleet.core.plugins.module_utils.facts_model import new_gpu
from ansible_collections.gpufleet.core.plugins.plugin_utils import policy as P
from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.knowledge import load_knowledge
from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.mig_config import (
    MigConfigError, check_feasible, desired_layout, load_mig_parted_config, load_mig_parted_config_file, plan_layout)
from ansible_collections.gpufleet.core.plugins.plugin_utils.policy import PolicyError, validate_policy
from tests.support.schema_check import ROOT
from tests.support.mig_fit import exhaustive_fit

SAMPLES = os.path.join(ROOT, "tests", "fixtures", "samples")
CONFIG = os.path.join(SAMPLES, "mig-parted_config.yaml")
CONFIGMAP = os.path.join(SAMPLES, "mig-parted_configmap.yaml")


@pytest.fixture(scope="module")
def config():
    return load_mig_parted_config_file(CONFIG)


def gpu_fact(index, name, mode=True):
    gpu = new_gpu(index)
    gpu["name"] = name
    gpu["mig"]["mode_current"] = gpu["mig"]["mode_pending"] = mode
    return gpu


def test_the_sample_loads_and_is_normalised(config):
    configs = config["mig-configs"]
    assert config["version"] == "v1"
    assert sorted(configs) == ["all-disabled", "all-enabled", "half-and-half", "inference-split", "training-halves"]
    assert configs["all-disabled"] == [{"devices": "all", "device-filter": [], "mig-enabled": False, "mig-devices": {}}]
    assert [e["device-filter"] for e in configs["inference-split"]] == [
        ["0x20B210DE", "0x20B510DE"], ["0x233010DE"], ["0x20B710DE"]]   # a string, a list, lower case
    # 3c.3g.40gb is the whole 3g.40gb: the names are canonical and summed
    assert configs["half-and-half"][1] == {"devices": [4, 5, 6, 7], "device-filter": [], "mig-enabled": True,
                                           "mig-devices": {"1c.3g.40gb": 2, "3g.40gb": 1, "1g.10gb+me": 1,
                                                           "2g.20gb": 1}}


def test_the_configmap_carries_the_same_config(config):
    assert load_mig_parted_config_file(CONFIGMAP) == config
    with open(CONFIGMAP) as handle:
        assert load_mig_parted_config(handle.read(), "configmap") == config


def test_device_filters_pick_each_model(config):
    gpus = [gpu_fact(0, "NVIDIA A100-SXM4-80GB"), gpu_fact(1, "NVIDIA H100 80GB HBM3"), gpu_fact(2, "NVIDIA A30"),
            gpu_fact(3, "NVIDIA A100-SXM4-40GB"), gpu_fact(4, "NVIDIA L4", mode=None)]
    assert desired_layout(config, "inference-split", gpus) == {
        0: {"mig_enabled": True, "devices": {"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1}},
        1: {"mig_enabled": True, "devices": {"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1}},
        2: {"mig_enabled": True, "devices": {"1g.6gb": 2, "2g.12gb": 1}},
    }
    assert desired_layout(config, "all-disabled", gpus) == dict(
        (index, {"mig_enabled": False, "devices": {}}) for index in range(4))   # not the L4: it has no MIG


def test_entries_by_gpu_index(config):
    gpus = [gpu_fact(index, "NVIDIA A100-SXM4-80GB") for index in range(8)]
    layout = desired_layout(config, "half-and-half", gpus)
    assert [layout[index]["mig_enabled"] for index in range(8)] == [False] * 4 + [True] * 4
    assert layout[5]["devices"] == {"1c.3g.40gb": 2, "3g.40gb": 1, "1g.10gb+me": 1, "2g.20gb": 1}


def test_an_unknown_config_name_lists_the_known_ones(config):
    with pytest.raises(MigConfigError) as error:
        desired_layout(config, "inference", [gpu_fact(0, "NVIDIA A30")])
    assert "'inference' is not in the config" in str(error.value)
    assert "half-and-half, inference-split" in str(error.value)


def test_layouts_on_the_shipped_models(config):
    knowledge = load_knowledge()
    a100, a30 = knowledge.mig_model("NVIDIA A100-SXM4-80GB"), knowledge.mig_model("NVIDIA A30")
    assert check_feasible({"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1}, a100) == []
    assert check_feasible({"1g.6gb": 2, "2g.12gb": 1}, a30) == []
    assert [(p["profile"], p["placement"]) for p in plan_layout({"1g.6gb": 2, "2g.12gb": 1}, a30)] == [
        ("2g.12gb", {"start": 0, "size": 2}), ("1g.6gb", {"start": 2, "size": 1}), ("1g.6gb", {"start": 3, "size": 1})]
    # half-and-half asks for two 3g.40gb GPU instances (one shared by two 1c compute instances) plus a 1g
    # and a 2g: more compute and memory slices than an A100 80GB has
    devices = config["mig-configs"]["half-and-half"][1]["mig-devices"]
    assert check_feasible(devices, a100) == ["the layout needs 9 compute slices: A100-80GB has 7",
                                             "the layout needs 11 memory slices: A100-80GB has 8"]


def test_the_policy_reads_the_configmap_sample():
    policy = validate_policy({"mig": {"config_file": CONFIGMAP, "selected": "training-halves"}})
    resolved = P.resolve_mig_config(policy)
    assert resolved["mig"]["config"]["mig-configs"]["training-halves"][0]["mig-devices"] == {"3g.40gb": 2}
    with pytest.raises(PolicyError) as caught:
        P.resolve_mig_config(validate_policy({"mig": {"config_file": CONFIGMAP, "selected": "training-halve"}}))
    assert str(caught.value).startswith("gpufleet_policy.mig.selected: no mig-config named 'training-halve' "
                                        "(did you mean 'training-halves'?)")


# ---------------------------------------------------------------- placement on the shipped models

def shipped(name):
    return load_knowledge().mig_model(name)


@pytest.mark.parametrize("devices", [
    {"1g.10gb": 7}, {"4g.40gb": 1, "3g.40gb": 1}, {"3g.40gb": 2}, {"2g.20gb": 3, "1g.10gb": 1}, {"1g.20gb": 4},
    {"7g.80gb": 1}, {"1g.10gb+me": 1, "1g.10gb": 6}, {"1c.3g.40gb": 3, "3g.40gb": 1}, {},
])
def test_layouts_that_fit_the_shipped_a100_80gb(devices):
    assert check_feasible(devices, shipped("NVIDIA A100-SXM4-80GB")) == []


@pytest.mark.parametrize("devices, reasons", [
    ({"3g.40gb": 3}, ["3g.40gb x3 does not fit: A100-80GB allows at most 2 3g.40gb GPU instances",
                      "the layout needs 9 compute slices: A100-80GB has 7",
                      "the layout needs 12 memory slices: A100-80GB has 8"]),
    ({"1g.10gb": 8}, ["1g.10gb x8 does not fit: A100-80GB allows at most 7 1g.10gb GPU instances",
                      "the layout needs 8 compute slices: A100-80GB has 7"]),
    ({"3g.40gb": 1, "2g.20gb": 1, "1g.20gb": 2}, ["the layout needs 10 memory slices: A100-80GB has 8"]),
    ({"1g.6gb": 1}, ["1g.6gb is not a MIG profile of A100-80GB (it has 1g.10gb, 1g.10gb+me, 1g.20gb, 2g.20gb, "
                     "3g.40gb, 4g.40gb, 7g.80gb)"]),
])
def test_layouts_that_do_not_fit_the_shipped_a100_80gb(devices, reasons):
    assert check_feasible(devices, shipped("NVIDIA A100-SXM4-80GB")) == reasons


def test_plans_on_the_shipped_a100_80gb():
    a100 = shipped("NVIDIA A100-SXM4-80GB")
    assert [(p["profile"], p["placement"]["start"]) for p in plan_layout({"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1}, a100)] == [
        ("2g.20gb", 0), ("1g.10gb", 2), ("1g.10gb", 3), ("3g.40gb", 4)]
    # an existing 3g.40gb at 0 blocks the rest (a 1g.10gb cannot start at 7): it moves to 4
    plan = plan_layout({"3g.40gb": 1, "2g.20gb": 1, "1g.10gb": 2}, a100,
                       existing=[{"profile_name": "3g.40gb", "placement": {"start": 0, "size": 4}}])
    assert [(p["profile"], p["placement"]["start"]) for p in plan] == [
        ("2g.20gb", 0), ("1g.10gb", 2), ("1g.10gb", 3), ("3g.40gb", 4)]
    with pytest.raises(MigConfigError, match="3g.40gb x3 does not fit"):
        plan_layout({"3g.40gb": 3}, a100)


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(["NVIDIA A100-SXM4-80GB", "NVIDIA A100-SXM4-40GB", "NVIDIA A30", "NVIDIA H100 NVL",
                        "NVIDIA GB200"]), st.data())
def test_search_on_the_shipped_models_agrees_with_exhaustive_placement(name, data):
    target = shipped(name)
    devices = data.draw(st.dictionaries(st.sampled_from(sorted(target["profiles"])), st.integers(1, 3), max_size=3))
    if sum(devices.values()) > 5:
        devices = dict(list(devices.items())[:1])
    fits = check_feasible(devices, target) == []
    assert fits == exhaustive_fit(devices, target)
    if fits:
        used = [s for p in plan_layout(devices, target)
                for s in range(p["placement"]["start"], p["placement"]["start"] + p["placement"]["size"])]
        assert len(used) == len(set(used))
