"""nvidia-mig-parted configs, desired and actual MIG layouts, and placement on real GPU models.

The configs are NVIDIA's own files (reference/nvidia-mig-parted-configs of the public corpus); the GPU
models are built from the corpus's reference/mig_profiles.yaml so these tests do not depend on
knowledge.py. The tests that read the corpus are marked corpus; tests/unit/plugins/plugin_utils/rules/test_mig_config_samples.py
runs the same loaders and placement on the project's own config and the shipped models.
"""

import functools
import re

import pytest
import yaml
from hypothesis import given, settings, strategies as st

from ansible_collections.gpufleet.core.plugins.module_utils.facts_model import new_gpu
from ansible_collections.gpufleet.core.plugins.module_utils.nvsmi_mig import parse_lgi
from ansible_collections.gpufleet.core.plugins.module_utils.nvsmi_xml import parse_nvidia_smi_xml
from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.knowledge import load_knowledge
from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.mig_config import (
    MigConfigError, actual_layout, canonical_profile_name, check_feasible, desired_layout,
    gpu_instances_needed, layout_diff, load_mig_parted_config, load_mig_parted_config_file, parse_profile,
    plan_layout, product_name_device_ids, selected_entries)
from tests.support.corpus import read_realdata, read_reference, reference_path
from tests.support.schema_check import assert_valid_gpu
from tests.support.mig_fit import exhaustive_fit

CONFIGS = "nvidia-mig-parted-configs/"
OPERATOR_CONFIG = CONFIGS + "gpu-operator_default-mig-parted-config.config.yaml"
OPERATOR_CONFIGMAP = CONFIGS + "gpu-operator_0400_configmap_default-mig-parted-config.yaml"
SYSTEMD_CONFIG = CONFIGS + "mig-parted_deployments_systemd_config-default.yaml"
EXAMPLE_CONFIG = CONFIGS + "mig-parted_examples_config.yaml"
A30_SESSION = "nvsmi-mig-session_a30_lgipp-lgi-L-table-lcip_535.183.01_unresolved-repo.txt"
A100_MIG_XML = "nvsmi-q-x_a100-sxm4-40gb_mig-2x3g.20gb_510.47.03_v11_netdata.xml"
RTX3090_XML = "nvsmi-q-x_rtx-3090_525.147.05_v12_telegraf.xml"


@functools.lru_cache(maxsize=None)
def operator():
    """NVIDIA's GPU Operator default config, loaded once."""
    return load_mig_parted_config_file(reference_path(OPERATOR_CONFIG))


@functools.lru_cache(maxsize=None)
def reference_gpus():
    return yaml.safe_load(read_reference("mig_profiles.yaml"))["gpus"]


def reference_model(gpu):
    """A Knowledge.mig_model-shaped dict from one gpus[] entry of the reference."""
    return {
        "model": gpu["gpu"], "slices": gpu["compute_slices_total"], "memory_slices": gpu["memory_slices_total"],
        "profiles": dict((p["name"], {
            "id": p["gi_profile_id"], "compute_slices": p["compute_slices"], "memory_slices": p["memory_slices"],
            "max_instances": p["max_instances"],
            "placements": [{"start": start, "size": p["placements"]["size"]} for start in p["placements"]["starts"]],
        }) for p in gpu["profiles"]),
    }


def model(prefix):
    (gpu,) = [g for g in reference_gpus() if g["gpu"].startswith(prefix)]
    return reference_model(gpu)


def model_for_filter(device_filter_id):
    """The reference model whose PCI device ids include a device-filter id such as 0x20B210DE."""
    device = device_filter_id[:6].upper().replace("0X", "0x")
    for gpu in reference_gpus():
        if any(re.match(r"0x[0-9A-Fa-f]{4}", pid).group(0).upper().replace("0X", "0x") == device
               for pid in gpu["pci_device_ids"]):
            return reference_model(gpu)
    return None


def a100_80():
    return model("A100-SXM4-80GB")


def a100_40():
    return model("A100-SXM4-40GB")


def h100_80():
    return model("H100 80GB")


def a30():
    return model("A30")


def gpu_fact(index, name, mode=True, pending=None, instances=()):
    gpu = new_gpu(index)
    gpu["name"] = name
    gpu["mig"]["mode_current"] = mode
    gpu["mig"]["mode_pending"] = mode if pending is None else pending
    gpu["mig"]["gpu_instances"] = list(instances)
    return gpu


# ---------------------------------------------------------------- NVIDIA's files load unchanged

@pytest.mark.corpus
def test_operator_default_config_loads():
    configs = operator()["mig-configs"]
    assert operator()["version"] == "v1"
    assert len(configs) == 81
    assert configs["all-disabled"] == [{"devices": "all", "device-filter": [], "mig-enabled": False, "mig-devices": {}}]
    assert configs["all-enabled"] == [{"devices": "all", "device-filter": [], "mig-enabled": True, "mig-devices": {}}]
    assert configs["all-1g.24gb.me.all"][0]["mig-devices"] == {"1g.24gb+me.all": 1}
    assert configs["all-1g.24gb-me"][0]["mig-devices"] == {"1g.24gb-me": 4}
    assert configs["all-4g.96gb.gfx"][0]["mig-devices"] == {"4g.96gb+gfx": 1}
    balanced = configs["all-balanced"]
    assert len(balanced) == 12
    (a100_80,) = [entry for entry in balanced if "0x20B210DE" in entry["device-filter"]]
    assert a100_80["device-filter"] == ["0x233010DE", "0x233110DE", "0x232210DE", "0x20B210DE", "0x20B510DE",
                                        "0x20F310DE", "0x20F510DE", "0x232410DE"]
    assert a100_80["mig-devices"] == {"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1}


@pytest.mark.corpus
def test_operator_config_matches_the_reference_transcription():
    reference = yaml.safe_load(read_reference("mig_parted_config.yaml"))["operator_default_config"]
    expected = dict((config["name"], [{
        "devices": entry["devices"], "device-filter": entry.get("device_filter", []),
        "mig-enabled": entry["mig_enabled"], "mig-devices": entry.get("mig_devices", {}),
    } for entry in config["entries"]]) for config in reference["configs"])
    assert len(expected) == reference["label_count"] == 81
    assert operator()["mig-configs"] == expected


@pytest.mark.corpus
def test_mig_parted_systemd_copy_means_the_same():
    systemd = load_mig_parted_config_file(reference_path(SYSTEMD_CONFIG))["mig-configs"]
    assert sorted(systemd) == sorted(operator()["mig-configs"])
    for name, entries in operator()["mig-configs"].items():
        assert sorted(map(repr, systemd[name])) == sorted(map(repr, entries)), name
    assert systemd["all-balanced"] != operator()["mig-configs"]["all-balanced"]  # only the entry order differs


@pytest.mark.corpus
def test_operator_configmap_loads_as_its_embedded_config():
    assert load_mig_parted_config_file(reference_path(OPERATOR_CONFIGMAP)) == operator()
    assert load_mig_parted_config(yaml.safe_load(read_reference(OPERATOR_CONFIGMAP)), "configmap") == operator()


@pytest.mark.corpus
def test_example_config_loads():
    configs = load_mig_parted_config(read_reference(EXAMPLE_CONFIG).encode(), "examples/config.yaml")["mig-configs"]
    assert sorted(configs) == ["all-1g.10gb", "all-1g.5gb", "all-1g.5gb.me", "all-2g.10gb", "all-3g.20gb",
                               "all-balanced", "all-disabled", "all-enabled", "custom-config"]
    assert [(e["devices"], e["mig-enabled"], e["mig-devices"]) for e in configs["custom-config"]] == [
        ([0, 1, 2, 3], False, {}), ([4], True, {"1g.5gb": 7}), ([5], True, {"2g.10gb": 3}),
        ([6], True, {"3g.20gb": 2}), ([7], True, {"1g.5gb": 2, "2g.10gb": 1, "3g.20gb": 1})]


@pytest.mark.corpus
def test_parsed_document_and_text_load_the_same():
    text = read_reference(EXAMPLE_CONFIG)
    assert load_mig_parted_config(yaml.safe_load(text), "x") == load_mig_parted_config(text, "x")


# ---------------------------------------------------------------- validation

BASE = {"version": "v1", "mig-configs": {"custom": [{"devices": "all", "mig-enabled": True,
                                                     "mig-devices": {"3g.40gb": 2}}]}}

DROP = object()


def with_entry(**changes):
    entry = dict(BASE["mig-configs"]["custom"][0])
    for key, value in changes.items():
        key = key.replace("_", "-")
        if value is DROP:
            entry.pop(key, None)
        else:
            entry[key] = value
    return {"version": "v1", "mig-configs": {"custom": [entry]}}


@pytest.mark.parametrize("document, expected", [
    (dict(BASE, version="v2"), "site.yml: unknown version 'v2' (must be v1)"),
    ({"mig-configs": BASE["mig-configs"]}, "site.yml: missing version"),
    (dict(BASE, hooks={}), "site.yml: unexpected field 'hooks'"),
    ({"version": "v1", "mig-configs": {}}, "site.yml: mig-configs must be a mapping"),
    ({"version": "v1", "mig-configs": {"custom": []}}, "site.yml: mig-configs.custom: must be a list of at least one"),
    (with_entry(devices=DROP), "mig-configs.custom[0]: missing required field devices"),
    (with_entry(mig_enabled=DROP), "mig-configs.custom[0]: missing required field mig-enabled"),
    (with_entry(mig_enabled="yes"), "mig-configs.custom[0].mig-enabled: must be true or false, got 'yes'"),
    (with_entry(devices="some"), "mig-configs.custom[0].devices: must be \"all\" or a list of GPU indexes"),
    (with_entry(devices=[0, -1]), "mig-configs.custom[0].devices: must be \"all\" or a list of GPU indexes"),
    (with_entry(devices=[True]), "mig-configs.custom[0].devices: must be \"all\" or a list of GPU indexes"),
    (with_entry(device_filter="20B010DE"), "mig-configs.custom[0].device-filter: '20B010DE' is not a PCI id"),
    (with_entry(device_filter=["0x20B010DE:0x1:0x2"]), "'0x20B010DE:0x1:0x2' is not a PCI id"),
    (with_entry(device_filter=[0x20B010DE]), "device-filter: must be a PCI id string or a list of them"),
    (with_entry(mig_devices={"3g.40g": 2}), "mig-configs.custom[0].mig-devices: '3g.40g' is not a MIG profile"),
    (with_entry(mig_devices={"4c.3g.40gb": 1}), "'4c.3g.40gb' is not a MIG profile"),
    (with_entry(mig_devices={"1g.10gb+me,me": 1}), "'1g.10gb+me,me' is not a MIG profile"),
    (with_entry(mig_devices={"1g.10gb+": 1}), "'1g.10gb+' is not a MIG profile"),
    (with_entry(mig_devices={"1g.24gb+me-x": 1}), "'1g.24gb+me-x' is not a MIG profile"),
    (with_entry(mig_devices={"1g.24gb+.me": 1}), "'1g.24gb+.me' is not a MIG profile"),
    (with_entry(mig_devices={"3g.40gb": -1}), "mig-devices.3g.40gb: count must be an integer >= 0, got -1"),
    (with_entry(mig_devices={"3g.40gb": "2"}), "mig-devices.3g.40gb: count must be an integer >= 0, got '2'"),
    (with_entry(mig_devices={"3g.40gb": True}), "mig-devices.3g.40gb: count must be an integer >= 0, got True"),
    (with_entry(mig_devices={"3g.40gb": 0, "1g.10gb": 0}), "mig-devices: all counts are 0"),
    (with_entry(mig_devices=[]), "mig-devices: must be a mapping of MIG profile to count"),
    (with_entry(mig_enabled=False), "mig-devices: MIG devices 3g.40gb given while mig-enabled is false"),
    (with_entry(mig_devices=DROP), "missing required field mig-devices when mig-enabled is true"),
    (with_entry(mig_device={}), "mig-configs.custom[0]: unexpected field 'mig-device'"),
])
def test_invalid_configs_name_the_file_config_and_value(document, expected):
    with pytest.raises(MigConfigError) as error:
        load_mig_parted_config(document, "site.yml")
    assert expected in str(error.value)
    assert str(error.value).startswith("site.yml: ")


@pytest.mark.parametrize("text, expected", [
    ("version: v1\nmig-configs: [", "policy.yml: not valid YAML"),
    ("version: v1\n---\nversion: v1\n", "policy.yml: expected one YAML document"),
    ("- a\n", "policy.yml: expected a mapping"),
    ("kind: ConfigMap\ndata: {a.yaml: x, b.yaml: y}\n", "policy.yml: ConfigMap data has no config.yaml (keys: a.yaml, b.yaml)"),
    ("kind: ConfigMap\ndata: {config.yaml: 'version: v9'}\n", "policy.yml data.config.yaml: unknown version 'v9'"),
])
def test_unreadable_documents(text, expected):
    with pytest.raises(MigConfigError) as error:
        load_mig_parted_config(text, "policy.yml")
    assert expected in str(error.value)


def test_missing_file_is_a_config_error(tmp_path):
    with pytest.raises(MigConfigError, match="cannot read the MIG config"):
        load_mig_parted_config_file(str(tmp_path / "absent.yaml"))


def test_device_filter_forms_are_normalised():
    entries = load_mig_parted_config(with_entry(device_filter="0x20b210de"), "x")["mig-configs"]["custom"]
    assert entries[0]["device-filter"] == ["0x20B210DE"]
    entries = load_mig_parted_config(with_entry(device_filter=["0x233010de:0x16c110de"]), "x")["mig-configs"]["custom"]
    assert entries[0]["device-filter"] == ["0x233010DE:0x16C110DE"]


def test_profile_names_are_canonical_and_summed():
    document = with_entry(mig_devices={"3g.40gb": 1, "3c.3g.40gb": 1, "1c.3g.40gb": 0, "1g.10gb+me": 1})
    devices = load_mig_parted_config(document, "x")["mig-configs"]["custom"][0]["mig-devices"]
    assert devices == {"3g.40gb": 2, "1g.10gb+me": 1}


@pytest.mark.parametrize("name, canonical", [
    ("3g.40gb", "3g.40gb"), ("3c.3g.40gb", "3g.40gb"), ("1c.3g.40gb", "1c.3g.40gb"),
    ("1g.10gb+me", "1g.10gb+me"), ("1g.24gb+me.all", "1g.24gb+me.all"), ("1g.24gb-me", "1g.24gb-me"),
    ("2g.48gb+me,gfx", "2g.48gb+gfx,me"), ("MIG 3g.40gb", "MIG 3g.40gb"),
])
def test_canonical_profile_names(name, canonical):
    assert canonical_profile_name(name) == canonical


@pytest.mark.parametrize("name", ["", "3g", "3g.40", "0g.5gb", "1g.0gb", "2c.1g.5gb", "1G.10GB", " 1g.10gb",
                                  "1g.10gb+me+me", "1g.10gb+1me", None, 19])
def test_names_outside_the_grammar(name):
    assert parse_profile(name) is None


# ---------------------------------------------------------------- desired layout

@pytest.mark.corpus
def test_all_balanced_on_eight_h100():
    gpus = [gpu_fact(index, "NVIDIA H100 80GB HBM3", mode=False) for index in range(8)]
    layout = desired_layout(operator(), "all-balanced", gpus)
    assert layout == dict((index, {"mig_enabled": True, "devices": {"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1}})
                          for index in range(8))


@pytest.mark.corpus
def test_device_filter_picks_the_entry_for_each_model():
    gpus = [gpu_fact(0, "NVIDIA A100-SXM4-40GB"), gpu_fact(1, "A100-SXM4-80GB"), gpu_fact(2, "NVIDIA A30"),
            gpu_fact(3, "NVIDIA H200"), gpu_fact(4, "NVIDIA GB200")]
    assert desired_layout(operator(), "all-1g.10gb", gpus) == {
        0: {"mig_enabled": True, "devices": {"1g.10gb": 4}},
        1: {"mig_enabled": True, "devices": {"1g.10gb": 7}},
    }
    assert desired_layout(operator(), "all-balanced", gpus) == {
        0: {"mig_enabled": True, "devices": {"1g.5gb": 2, "2g.10gb": 1, "3g.20gb": 1}},
        1: {"mig_enabled": True, "devices": {"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1}},
        2: {"mig_enabled": True, "devices": {"1g.6gb": 2, "2g.12gb": 1}},
        3: {"mig_enabled": True, "devices": {"1g.18gb": 2, "2g.35gb": 1, "3g.71gb": 1}},
        4: {"mig_enabled": True, "devices": {"1g.23gb": 2, "2g.47gb": 1, "3g.93gb": 1}},
    }


@pytest.mark.corpus
def test_gpus_without_mig_are_skipped_by_all_and_by_disabled_entries():
    gpus = [gpu_fact(0, "NVIDIA L4", mode=None), gpu_fact(1, "NVIDIA A100-SXM4-80GB", mode=False)]
    assert desired_layout(operator(), "all-disabled", gpus) == {1: {"mig_enabled": False, "devices": {}}}
    assert desired_layout(operator(), "all-1g.10gb", gpus) == {1: {"mig_enabled": True, "devices": {"1g.10gb": 7}}}
    explicit = {"version": "v1", "mig-configs": {"one": [{"devices": [0], "mig-enabled": True,
                                                          "mig-devices": {"1g.10gb": 1}}]}}
    assert desired_layout(explicit, None, gpus) == {0: {"mig_enabled": True, "devices": {"1g.10gb": 1}}}


@pytest.mark.corpus
def test_custom_config_by_gpu_index():
    gpus = [gpu_fact(index, "NVIDIA A100-SXM4-40GB") for index in range(8)]
    layout = desired_layout(load_mig_parted_config_file(reference_path(EXAMPLE_CONFIG)), "custom-config", gpus)
    assert [layout[index]["mig_enabled"] for index in range(8)] == [False] * 4 + [True] * 4
    assert layout[7]["devices"] == {"1g.5gb": 2, "2g.10gb": 1, "3g.20gb": 1}
    assert layout[4]["devices"] == {"1g.5gb": 7}


def test_a_later_entry_overrides_an_earlier_one():
    config = {"version": "v1", "mig-configs": {"mixed": [
        {"devices": "all", "mig-enabled": False},
        {"devices": [1], "mig-enabled": True, "mig-devices": {"7g.80gb": 1}}]}}
    gpus = [gpu_fact(index, "NVIDIA A100-SXM4-80GB") for index in range(2)]
    assert desired_layout(config, "mixed", gpus) == {
        0: {"mig_enabled": False, "devices": {}},
        1: {"mig_enabled": True, "devices": {"7g.80gb": 1}}}


def test_subsystem_filters_do_not_match_without_subsystem_ids():
    config = {"version": "v1", "mig-configs": {"sub": [{"device-filter": "0x233010DE:0x16C110DE", "devices": "all",
                                                        "mig-enabled": True, "mig-devices": {"7g.80gb": 1}}]}}
    assert desired_layout(config, "sub", [gpu_fact(0, "NVIDIA H100 80GB HBM3")]) == {}


@pytest.mark.corpus
def test_extra_device_ids_cover_a_gpu_the_table_has_no_name_for():
    gpus = [gpu_fact(0, "NVIDIA H100 96GB")]
    assert desired_layout(operator(), "all-balanced", gpus) == {}
    layout = desired_layout(operator(), "all-balanced", gpus, device_ids={"0x233D10DE": ["NVIDIA H100 96GB"]})
    assert layout == {0: {"mig_enabled": True, "devices": {"1g.12gb": 2, "2g.24gb": 1, "3g.48gb": 1}}}


@pytest.mark.corpus
def test_device_id_table_covers_every_filter_in_the_operator_config():
    names = product_name_device_ids()
    assert names["A100-SXM4-80GB"] == {"0x20B210DE"}
    assert names["A100-PCIE-40GB"] == {"0x20B110DE", "0x20F110DE"}
    known = set().union(*names.values())
    filters = set(f for entries in operator()["mig-configs"].values() for e in entries for f in e["device-filter"])
    assert filters - known == {"0x233D10DE"}


@pytest.mark.corpus
def test_selecting_a_config():
    gpus = [gpu_fact(0, "NVIDIA A100-SXM4-80GB")]
    with pytest.raises(MigConfigError) as error:
        desired_layout(operator(), "all-3g.40gbs", gpus)
    assert str(error.value).startswith("gpufleet_policy.mig.config: MIG config 'all-3g.40gbs' is not in the config")
    assert "all-3g.40gb, all-3g.47gb" in str(error.value)
    with pytest.raises(MigConfigError, match="no MIG config selected .available: all-1g.10gb, "):
        desired_layout(operator(), None, gpus)
    assert desired_layout(BASE, None, gpus) == {0: {"mig_enabled": True, "devices": {"3g.40gb": 2}}}


@pytest.mark.corpus
def test_desired_layout_validates_the_selected_config_of_a_raw_document():
    document = {"version": "v1", "mig-configs": {"good": [{"devices": "all", "mig-enabled": False}],
                                                 "bad": [{"devices": "all", "mig-enabled": True,
                                                          "mig-devices": {"3g.40g": 1}}]}}
    assert desired_layout(document, "good", [gpu_fact(0, "NVIDIA A30")]) == {0: {"mig_enabled": False, "devices": {}}}
    with pytest.raises(MigConfigError, match=r"^group_vars/gpu.yml: mig-configs.bad\[0\].mig-devices: '3g.40g'"):
        desired_layout(document, "bad", [], where="group_vars/gpu.yml")
    assert selected_entries(read_reference(OPERATOR_CONFIGMAP), "all-7g.80gb")[0]["mig-devices"] == {"7g.80gb": 1}


# ---------------------------------------------------------------- feasibility

@pytest.mark.corpus
@pytest.mark.parametrize("devices", [
    {"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1},
    {"1g.10gb": 7},
    {"4g.40gb": 1, "3g.40gb": 1},
    {"3g.40gb": 2},
    {"2g.20gb": 3, "1g.10gb": 1},
    {"1g.20gb": 4},
    {"7g.80gb": 1},
    {"1g.10gb+me": 1, "1g.10gb": 6},
    {"1c.3g.40gb": 3, "3g.40gb": 1},
    {"2c.3g.40gb": 1, "1c.3g.40gb": 1, "4g.40gb": 1},
    {},
])
def test_layouts_that_fit_an_a100_80gb(devices):
    assert check_feasible(devices, a100_80()) == []


@pytest.mark.corpus
@pytest.mark.parametrize("devices, reasons", [
    ({"3g.40gb": 3}, ["3g.40gb x3 does not fit: A100-SXM4-80GB / A100 80GB PCIe allows at most 2 3g.40gb GPU instances",
                      "the layout needs 9 compute slices: A100-SXM4-80GB / A100 80GB PCIe has 7",
                      "the layout needs 12 memory slices: A100-SXM4-80GB / A100 80GB PCIe has 8"]),
    ({"4g.40gb": 2}, ["4g.40gb x2 does not fit: A100-SXM4-80GB / A100 80GB PCIe allows at most 1 4g.40gb GPU instance",
                      "the layout needs 8 compute slices: A100-SXM4-80GB / A100 80GB PCIe has 7"]),
    ({"1g.10gb": 8}, ["1g.10gb x8 does not fit: A100-SXM4-80GB / A100 80GB PCIe allows at most 7 1g.10gb GPU instances",
                      "the layout needs 8 compute slices: A100-SXM4-80GB / A100 80GB PCIe has 7"]),
    ({"4g.40gb": 1, "2g.20gb": 2}, ["the layout needs 8 compute slices: A100-SXM4-80GB / A100 80GB PCIe has 7"]),
    ({"3g.40gb": 1, "2g.20gb": 1, "1g.20gb": 2},
     ["the layout needs 10 memory slices: A100-SXM4-80GB / A100 80GB PCIe has 8"]),
    ({"1c.3g.40gb": 7}, ["1c.3g.40gb x7 does not fit: A100-SXM4-80GB / A100 80GB PCIe allows at most 2 3g.40gb "
                         "GPU instances", "the layout needs 9 compute slices: A100-SXM4-80GB / A100 80GB PCIe has 7",
                         "the layout needs 12 memory slices: A100-SXM4-80GB / A100 80GB PCIe has 8"]),
    ({"1g.5gb": 7, "3g.40gb": 1}, ["1g.5gb is not a MIG profile of A100-SXM4-80GB / A100 80GB PCIe (it has 1g.10gb, "
                                   "1g.10gb+me, 1g.20gb, 2g.20gb, 3g.40gb, 4g.40gb, 7g.80gb)"]),
    ({"3g.40g": 1}, ["'3g.40g' is not a MIG profile (expected [<C>c.]<G>g.<M>gb[+attr[,attr...]|-attr], e.g. "
                     "3g.40gb, 1c.3g.40gb, 1g.10gb+me, 1g.24gb-me)"]),
])
def test_layouts_that_do_not_fit_an_a100_80gb(devices, reasons):
    assert check_feasible(devices, a100_80()) == reasons


@pytest.mark.corpus
def test_h100_and_a100_40gb_and_a30():
    assert check_feasible({"1g.10gb": 7}, h100_80()) == []
    assert check_feasible({"1g.10gb": 4}, a100_40()) == []  # the 2-memory-slice 1g of the 40GB card
    assert check_feasible({"1g.10gb": 5}, a100_40()) == [
        "1g.10gb x5 does not fit: A100-SXM4-40GB / A100-PCIE-40GB allows at most 4 1g.10gb GPU instances",
        "the layout needs 10 memory slices: A100-SXM4-40GB / A100-PCIE-40GB has 8"]
    assert check_feasible({"1g.6gb": 2, "2g.12gb": 1}, a30()) == []
    assert check_feasible({"2g.12gb": 1, "2g.12gb+me": 1}, a30()) == []
    assert check_feasible({"4g.24gb": 1, "1g.6gb": 1}, a30()) == [
        "the layout needs 5 compute slices: A30-24GB has 4", "the layout needs 5 memory slices: A30-24GB has 4"]


@pytest.mark.corpus
def test_overlap_found_only_by_the_placement_search():
    # As `nvidia-smi mig -lgipp` lists it when other instances already use slices 4-7: 3g.40gb only at 0.
    narrowed = dict(a100_80(), profiles=dict(a100_80()["profiles"]))
    narrowed["profiles"]["3g.40gb"] = dict(narrowed["profiles"]["3g.40gb"], placements=[{"start": 0, "size": 4}])
    assert check_feasible({"4g.40gb": 1, "3g.40gb": 1}, narrowed) == [
        "no placement fits 3g.40gb x1, 4g.40gb x1 together on A100-SXM4-80GB / A100 80GB PCIe: "
        "their memory slices overlap in every arrangement"]


@pytest.mark.corpus
def test_every_operator_config_fits_the_models_it_targets():
    checked = 0
    for name, entries in operator()["mig-configs"].items():
        for entry in entries:
            if not entry["mig-enabled"]:
                continue
            targets = [model_for_filter(f) for f in entry["device-filter"]] or [
                reference_model(gpu) for gpu in reference_gpus()]
            for target in targets:
                if target is None or not all(p in target["profiles"] for p in entry["mig-devices"]):
                    continue  # RTX PRO 6000 (no profile table), or a profile another model has
                assert check_feasible(entry["mig-devices"], target) == [], (name, target["model"])
                checked += 1
    assert checked == 129


@pytest.mark.corpus
def test_compute_instances_share_gpu_instances():
    instances = gpu_instances_needed({"1c.3g.40gb": 4, "2c.3g.40gb": 1, "3g.40gb": 1})
    assert sorted((i.profile, sorted(i.compute_instances)) for i in instances) == [
        ("3g.40gb", ["1c.3g.40gb", "1c.3g.40gb", "1c.3g.40gb"]),
        ("3g.40gb", ["1c.3g.40gb", "2c.3g.40gb"]),
        ("3g.40gb", ["3g.40gb"]),
    ]
    assert check_feasible({"1c.3g.40gb": 4, "2c.3g.40gb": 1, "3g.40gb": 1}, a100_80())[0].startswith(
        "1c.3g.40gb x4, 2c.3g.40gb x1, 3g.40gb x1 does not fit: A100-SXM4-80GB / A100 80GB PCIe allows at most 2")


# ---------------------------------------------------------------- placement plans

@pytest.mark.corpus
def test_plan_for_all_balanced_on_a100_80gb():
    assert plan_layout({"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1}, a100_80()) == [
        {"profile": "2g.20gb", "placement": {"start": 0, "size": 2}, "compute_instances": ["2g.20gb"]},
        {"profile": "1g.10gb", "placement": {"start": 2, "size": 1}, "compute_instances": ["1g.10gb"]},
        {"profile": "1g.10gb", "placement": {"start": 3, "size": 1}, "compute_instances": ["1g.10gb"]},
        {"profile": "3g.40gb", "placement": {"start": 4, "size": 4}, "compute_instances": ["3g.40gb"]},
    ]


@pytest.mark.corpus
def test_plan_keeps_existing_placements_when_they_can_stay():
    a30_instances = parse_lgi(a30_session_outputs("nvidia-smi mig -lgi")[-1])
    plan = plan_layout({"1g.6gb": 2, "2g.12gb": 1}, a30(), existing=a30_instances)
    assert [(p["profile"], p["placement"]["start"]) for p in plan] == [("1g.6gb", 0), ("1g.6gb", 1), ("2g.12gb", 2)]
    moved = plan_layout({"1g.6gb": 2, "2g.12gb": 1}, a30(), existing=[{"profile": "2g.12gb",
                                                                      "placement": {"start": 0, "size": 2}}])
    assert [(p["profile"], p["placement"]["start"]) for p in moved] == [("2g.12gb", 0), ("1g.6gb", 2), ("1g.6gb", 3)]


@pytest.mark.corpus
def test_plan_moves_an_existing_instance_that_blocks_the_rest():
    # 3g.40gb at 0 leaves slices 4-7, but a 1g.10gb cannot start at 7: the 3g.40gb must go to 4.
    plan = plan_layout({"3g.40gb": 1, "2g.20gb": 1, "1g.10gb": 2}, a100_80(),
                       existing=[{"profile_name": "3g.40gb", "placement": {"start": 0, "size": 4}}])
    assert [(p["profile"], p["placement"]["start"]) for p in plan] == [
        ("2g.20gb", 0), ("1g.10gb", 2), ("1g.10gb", 3), ("3g.40gb", 4)]


@pytest.mark.corpus
def test_plan_of_a_layout_that_cannot_fit_raises():
    with pytest.raises(MigConfigError, match="3g.40gb x3 does not fit"):
        plan_layout({"3g.40gb": 3}, a100_80())


@pytest.mark.corpus
@settings(max_examples=150, deadline=None)
@given(st.sampled_from(["A100-SXM4-80GB", "A100-SXM4-40GB", "A30", "H100 94GB", "GB200"]), st.data())
def test_search_agrees_with_exhaustive_placement(prefix, data):
    target = model(prefix)
    names = sorted(target["profiles"])
    devices = data.draw(st.dictionaries(st.sampled_from(names), st.integers(1, 3), max_size=3))
    if sum(devices.values()) > 5:
        devices = dict(list(devices.items())[:1])
    fits = check_feasible(devices, target) == []
    assert fits == exhaustive_fit(devices, target)
    if fits:
        plan = plan_layout(devices, target)
        used = [s for p in plan for s in range(p["placement"]["start"], p["placement"]["start"] + p["placement"]["size"])]
        assert len(used) == len(set(used))
        assert all(p["placement"] in target["profiles"][p["profile"]]["placements"] for p in plan)
        assert sorted(c for p in plan for c in p["compute_instances"]) == sorted(
            name for name, count in devices.items() for _i in range(count))


# ---------------------------------------------------------------- actual layout and drift

def a30_session_outputs(command):
    blocks = re.split(r"^\$ ", read_realdata(A30_SESSION), flags=re.MULTILINE)
    return [block.partition("\n")[2] for block in blocks
            if block.partition("\n")[0].replace("sudo ", "").strip() == command]


def a30_gpu(with_compute_instances):
    """The A30 of the real session: -lgi instances; each was created with -C, one full compute instance."""
    instances = []
    for gi in parse_lgi(a30_session_outputs("nvidia-smi mig -lgi")[-1]):
        compute = [{"id": 0, "profile_id": {"1g.6gb": 0, "2g.12gb": 1}[gi["profile_name"]],
                    "profile_name": gi["profile_name"], "placement": None}] if with_compute_instances else []
        instances.append({"id": gi["id"], "profile_id": gi["profile_id"], "profile_name": gi["profile_name"],
                          "placement": gi["placement"], "compute_instances": compute})
    gpu = gpu_fact(0, "NVIDIA A30", instances=instances)
    gpu["pci_bus_id"] = "0000:0b:00.0"
    assert_valid_gpu(gpu)
    return gpu


@pytest.mark.corpus
def test_real_a30_layout_matches_the_operator_all_balanced():
    gpu = a30_gpu(with_compute_instances=True)
    actual = actual_layout(gpu)
    assert actual == {"mig_enabled": True, "mig_enabled_pending": True,
                      "devices": {"1g.6gb": 2, "2g.12gb": 1}, "empty_gpu_instances": {}}
    desired = desired_layout(operator(), "all-balanced", [gpu])[0]
    assert layout_diff(desired, actual) is None
    assert layout_diff(desired_layout(operator(), "all-1g.6gb", [gpu])[0], actual) == {
        "devices": {"1g.6gb": (4, 2), "2g.12gb": (0, 1)}}


@pytest.mark.corpus
def test_gpu_instances_without_compute_instances_are_not_mig_devices():
    actual = actual_layout(a30_gpu(with_compute_instances=False))
    assert actual["devices"] == {} and actual["empty_gpu_instances"] == {"1g.6gb": 2, "2g.12gb": 1}
    assert layout_diff({"mig_enabled": True, "devices": {"1g.6gb": 2, "2g.12gb": 1}}, actual) == {
        "devices": {"1g.6gb": (2, 0), "2g.12gb": (1, 0)}, "empty_gpu_instances": {"1g.6gb": 2, "2g.12gb": 1}}


@pytest.mark.corpus
def test_real_a100_capture_mode_and_non_mig_gpu():
    (a100,) = parse_nvidia_smi_xml(read_realdata(A100_MIG_XML))["gpus"]
    assert a100["name"] == "NVIDIA A100-SXM4-40GB"
    actual = actual_layout(a100)
    assert (actual["mig_enabled"], actual["mig_enabled_pending"]) == (True, True)
    assert layout_diff({"mig_enabled": False, "devices": {}}, actual) == {"mig_enabled": (False, True)}
    (rtx,) = parse_nvidia_smi_xml(read_realdata(RTX3090_XML))["gpus"]
    assert actual_layout(rtx)["mig_enabled"] is None
    assert layout_diff({"mig_enabled": False, "devices": {}}, actual_layout(rtx)) is None
    assert layout_diff({"mig_enabled": True, "devices": {"1g.10gb": 1}}, actual_layout(rtx)) == {
        "mig_enabled": (True, None), "devices": {"1g.10gb": (1, 0)}}


def test_mode_change_pending_a_reset():
    gpu = gpu_fact(0, "NVIDIA A100-SXM4-80GB", mode=False, pending=True)
    diff = layout_diff({"mig_enabled": True, "devices": {"3g.40gb": 2}}, actual_layout(gpu))
    assert diff == {"mig_enabled": (True, False), "devices": {"3g.40gb": (2, 0)}, "pending": True,
                    "mig_enabled_after_reset": True}
    assert layout_diff({"mig_enabled": False, "devices": {}}, actual_layout(gpu)) == {
        "pending": True, "mig_enabled_after_reset": True}


def test_mig_on_where_it_should_be_off_and_names_compared_canonically():
    instance = {"id": 1, "profile_id": 9, "profile_name": "3g.40gb", "placement": {"start": 4, "size": 4},
                "compute_instances": [{"id": 0, "profile_id": 0, "profile_name": "1c.3g.40gb", "placement": None},
                                      {"id": 1, "profile_id": None, "profile_name": None, "placement": None}]}
    gpu = gpu_fact(0, "NVIDIA A100-SXM4-80GB", instances=[instance])
    assert_valid_gpu(gpu)
    actual = actual_layout(gpu)
    assert actual["devices"] == {"1c.3g.40gb": 1, "unknown": 1}
    assert layout_diff({"mig_enabled": False, "devices": {}}, actual) == {
        "mig_enabled": (False, True), "devices": {"1c.3g.40gb": (0, 1), "unknown": (0, 1)}}
    assert layout_diff({"mig_enabled": True, "devices": {"1c.3g.40gb": 1, "3g.40gb": 0}},
                       dict(actual, devices={"1c.3g.40gb": 1})) is None
    assert layout_diff({"mig_enabled": True, "devices": {}}, actual)["devices"] == {
        "1c.3g.40gb": (0, 1), "unknown": (0, 1)}


@pytest.mark.corpus
def test_models_in_the_data_file_form_place_the_same():
    compact = dict(a100_80(), profiles=dict(
        (name, {"compute_slices": p["compute_slices"], "memory_slices": p["memory_slices"],
                "max_instances": p["max_instances"], "starts": [x["start"] for x in p["placements"]],
                "size": p["placements"][0]["size"]}) for name, p in a100_80()["profiles"].items()))
    devices = {"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1}
    assert plan_layout(devices, compact) == plan_layout(devices, a100_80())
    assert check_feasible({"3g.40gb": 3}, compact) == check_feasible({"3g.40gb": 3}, a100_80())


@pytest.mark.corpus
def test_an_absurd_count_is_refused_without_expanding_it():
    assert check_feasible({"1g.10gb": 10 ** 9}, h100_80()) == [
        "the layout asks for 1000000000 MIG devices: H100 80GB (SXM5 and PCIe) holds at most 7"]


# ---------------------------------------------------------------- with the shipped knowledge

@pytest.mark.corpus
def test_knowledge_models_hold_the_operator_layouts_for_every_named_gpu():
    knowledge = load_knowledge()
    a100 = knowledge.mig_model("NVIDIA A100-SXM4-80GB")
    assert check_feasible({"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1}, a100) == []
    assert check_feasible({"4g.40gb": 1, "3g.40gb": 1}, a100) == []
    assert check_feasible({"3g.40gb": 3}, a100)[0] == (
        "3g.40gb x3 does not fit: A100-80GB allows at most 2 3g.40gb GPU instances")
    checked = []
    for product, device_ids in sorted(product_name_device_ids().items()):
        gpu = gpu_fact(0, "NVIDIA " + product, mode=False)
        target = knowledge.mig_model(gpu["name"])
        if target is None:
            checked.append(product)
            continue
        assert all(device_id[:6] in [pid.upper().replace("0X", "0x") for pid in target["pci_device_ids"]]
                   for device_id in device_ids), product
        devices = desired_layout(operator(), "all-balanced", [gpu])[0]["devices"]
        assert check_feasible(devices, target) == [], product
        assert plan_layout(devices, target)
    assert checked == ["RTX PRO 6000 BLACKWELL SERVER EDITION"]
