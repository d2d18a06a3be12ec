"""Shipped knowledge (plugins/plugin_utils/rules/data): its answers, and (tests marked corpus) its agreement with
the researched reference and the real captures of the public corpus."""

import functools
import re

import pytest
import yaml
from hypothesis import given, settings, strategies as st

from tests.support.nvsmi_lgip import parse_lgip
from ansible_collections.gpufleet.core.plugins.module_utils.nvsmi_xml import parse_nvidia_smi_xml
from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.findings import FIX_ROLES, LAYERS, SEVERITIES
from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.knowledge import (
    compare_versions, driver_branch, load_knowledge, normalize_architecture, shipped_tables)
from simulator.nvml_sim import h100_gpu
from tests.support.corpus import NVSMI_XML_CAPTURES, read_realdata, read_reference


@functools.lru_cache(maxsize=None)
def reference(name):
    return yaml.load(read_reference(name), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def realdata(name):
    return read_realdata(name)


@pytest.fixture(scope="module")
def knowledge():
    return load_knowledge()


# ---------------------------------------------------------------- versions

@pytest.mark.parametrize("older, newer, expected", [
    ("550.90.07", "550.100.01", -1),
    ("550.54.15", "550.54.14", 1),
    ("570.26", "570.124.06", -1),
    ("570.26", "570.26.0", 0),
    ("580.65.06", "580.65.06", 0),
    ("R580", "575.57.08", 1),
])
def test_compare_versions_is_numeric_part_by_part(older, newer, expected):
    assert compare_versions(older, newer) == expected
    assert -compare_versions(newer, older) == expected


@pytest.mark.parametrize("bad", [None, "", "N/A", "550.x", "latest"])
def test_compare_versions_rejects_what_is_not_a_version(bad):
    with pytest.raises(ValueError, match="not a version"):
        compare_versions(bad, "550.90.07")


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 999), min_size=1, max_size=3), st.lists(st.integers(0, 999), min_size=1, max_size=3))
def test_compare_versions_orders_like_zero_padded_numbers(left, right):
    first, second = ".".join(map(str, left)), ".".join(map(str, right))
    pad = max(len(left), len(right))
    padded_left, padded_right = left + [0] * (pad - len(left)), right + [0] * (pad - len(right))
    expected = (padded_left > padded_right) - (padded_left < padded_right)
    assert compare_versions(first, second) == expected
    assert compare_versions(second, first) == -expected


def test_driver_branch():
    assert driver_branch("550.90.07") == "550"
    assert driver_branch("R580") == "580"
    assert driver_branch("N/A") is None
    assert driver_branch(None) is None


# ---------------------------------------------------------------- CUDA

@pytest.mark.parametrize("toolkit, driver", [
    ("12.4", "550.54.14"),
    ("12.4.0", "550.54.14"),
    ("12.4.1", "550.54.15"),
    ("12.4.131", "550.54.14"),     # nvcc build number, not an update: the GA row
    (12040, "550.54.14"),          # NVML's integer form
    ("12.0", "525.60.13"),
    ("11.8", "520.61.05"),
    ("11.0", "450.51.05"),         # 11.0.2 is the GA; 11.0.1 was the RC
    ("11.0.1", "450.36.06"),
    ("12.8", "570.26"),
    ("13.0", "580.65.06"),
    ("13.3.1", "610.43.02"),
])
def test_cuda_min_driver_from_table_3(knowledge, toolkit, driver):
    assert knowledge.cuda_min_driver(toolkit) == driver


@pytest.mark.corpus
def test_every_toolkit_row_of_the_reference_is_encoded(knowledge):
    rows = reference("cuda_driver_compat.yaml")["toolkit_driver_versions"]
    majors = {row["version"].split(".")[0] for row in rows}
    assert majors == {"11", "12", "13"}
    for row in rows:
        version = row["version"][:-2] if row["version"].endswith(".x") else row["version"]
        assert knowledge.cuda_min_driver(version) == row["linux_x86_64_min_driver"], version


MAINTENANCE_RELEASES = {"12.3.2": "545.23.08", "12.8.2": "570.124.06", "12.9.2": "575.57.08",
                        "13.0.3": "580.95.05", "13.1.2": "590.48.01"}


@pytest.mark.corpus
def test_the_reference_lists_these_maintenance_releases():
    listed = {row["version"] for row in reference("cuda_driver_compat.yaml")["runfile_only_maintenance_releases"]}
    assert listed == set(MAINTENANCE_RELEASES)


def test_maintenance_releases_without_a_row_use_the_previous_row(knowledge):
    for version, driver in MAINTENANCE_RELEASES.items():
        assert knowledge.cuda_min_driver(version) == driver, version


@pytest.mark.parametrize("toolkit", ["13.4", "13.4.1", "13.4.2", "13.5", "13.2.2", "12.7", "10.2", "cuda", None])
def test_unverified_or_unknown_toolkits_have_no_minimum(knowledge, toolkit):
    assert knowledge.cuda_min_driver(toolkit) is None


@pytest.mark.parametrize("major, floor", [
    (11, "450.80.02"), (12, "525.60.13"), (13, "580.65.06"), ("12", "525.60.13"), ("12.4.1", "525.60.13"),
    (12040, "525.60.13"), (14, None),
])
def test_minor_version_compatibility_floor(knowledge, major, floor):
    assert knowledge.cuda_minor_compat_floor(major) == floor


@pytest.mark.parametrize("driver, toolkit, status", [
    ("550.90.07", "12.4.1", "full"),
    ("535.183.06", "12.4.1", "minor_compat"),
    ("515.105.01", "12.4", "unsupported"),
    ("580.95.05", "13.0.2", "full"),
    ("590.44.01", "13.4", "unknown"),
    (None, "12.4", "unknown"),
])
def test_cuda_support(knowledge, driver, toolkit, status):
    assert knowledge.cuda_support(driver, toolkit)[0] == status


# ---------------------------------------------------------------- GPUs and driver branches

@functools.lru_cache(maxsize=1)
def xml_captures():
    """(capture file, driver version, gpu record) for every GPU of the real nvidia-smi -q -x reports."""
    found = []
    for name in NVSMI_XML_CAPTURES:
        report = parse_nvidia_smi_xml(realdata(name))
        found.extend((name, report["driver"]["version"], gpu) for gpu in report["gpus"])
    return tuple(found)


@pytest.mark.corpus
def test_real_product_names_resolve_to_the_architecture_nvidia_smi_printed(knowledge):
    seen = 0
    for capture, _driver, gpu in xml_captures():
        if gpu["architecture"]:
            assert knowledge.architecture_for(gpu["name"]) == gpu["architecture"], capture
            seen += 1
    assert seen >= 10
    # older reports print no product_architecture: the name family decides
    for capture, _driver, gpu in xml_captures():
        if gpu["architecture"] is None:
            assert knowledge.architecture_for(gpu["name"]) == "pascal", capture
    unnamed = {gpu["name"] for _c, _d, gpu in xml_captures() if gpu["architecture"] is None}
    assert unnamed == {"Quadro P400", "NVIDIA GeForce GT 1030"}


@pytest.mark.corpus
def test_every_captured_gpu_is_supported_by_the_driver_it_ran(knowledge):
    for capture, driver, gpu in xml_captures():
        supported, why = knowledge.driver_supports_gpu(driver, gpu["name"], gpu["architecture"])
        assert supported is True, (capture, why)


@pytest.mark.corpus
def test_the_gt1030_capture_has_no_architecture(knowledge):
    (capture, driver, gt1030), = [c for c in xml_captures() if "gt-1030" in c[0]]
    # this 470.74 report carries no product_architecture: the product name decides
    assert (gt1030["name"], driver, gt1030["architecture"]) == ("NVIDIA GeForce GT 1030", "470.74", None)
    assert knowledge.architecture_for(gt1030["name"]) == "pascal"


def test_pascal_is_dropped_after_r580(knowledge):
    name = "NVIDIA GeForce GT 1030"
    assert knowledge.architecture_for(name) == "pascal"
    assert knowledge.driver_supports_gpu("580.95.05", name, None)[0] is True
    supported, why = knowledge.driver_supports_gpu("590.44.01", name, None)
    assert supported is False and "R580" in why and "pascal" in why
    assert knowledge.driver_supports_gpu("590.44.01", name, "Pascal")[0] is False


def test_kepler_is_dropped_after_r470(knowledge):
    assert knowledge.driver_supports_gpu("470.82.01", "Tesla K80", None)[0] is True
    supported, why = knowledge.driver_supports_gpu("550.90.07", "Tesla K80", None)
    assert supported is False and "R470" in why


def test_h100_needs_r525(knowledge):
    name = h100_gpu(0)["name"]
    assert name == "NVIDIA H100 80GB HBM3"
    assert knowledge.driver_supports_gpu("550.90.07", name, "hopper")[0] is True
    supported, why = knowledge.driver_supports_gpu("470.82.01", name, "hopper")
    assert supported is False and "R525" in why
    assert knowledge.driver_supports_gpu("520.61.05", "NVIDIA H100 PCIe", None)[0] is True   # PCIe from R520
    assert knowledge.driver_supports_gpu("520.61.05", name, None)[0] is False


def test_h200_and_b200_first_branches(knowledge):
    assert knowledge.driver_supports_gpu("535.183.06", "NVIDIA H200", "hopper")[0] is False
    assert knowledge.driver_supports_gpu("550.90.07", "NVIDIA H200", "hopper")[0] is True
    assert knowledge.driver_supports_gpu("565.57.01", "NVIDIA B200", "blackwell")[0] is False
    assert knowledge.driver_supports_gpu("570.133.20", "NVIDIA B200", "blackwell")[0] is True


@pytest.mark.corpus
def test_a10_from_the_text_capture(knowledge):
    text = realdata("nvsmi-q_a10_550.127.05_gpud.txt")
    name = re.search(r"Product Name\s+:\s+(.+)", text).group(1).strip()
    arch = re.search(r"Product Architecture\s+:\s+(.+)", text).group(1).strip()
    assert (name, normalize_architecture(arch)) == ("NVIDIA A10", "ampere")
    assert knowledge.model_for(name)["model"] == "A10"
    assert knowledge.driver_supports_gpu("550.127.05", name, arch)[0] is True
    assert knowledge.driver_supports_gpu("450.80.02", name, arch)[0] is False


def test_unknown_driver_or_gpu_is_unknown(knowledge):
    assert knowledge.driver_supports_gpu(None, "NVIDIA H100 80GB HBM3", "hopper")[0] is None
    assert knowledge.driver_supports_gpu("550.90.07", "Mystery Accelerator 9000", None)[0] is None


@pytest.mark.corpus
def test_expected_gpu_count_of_the_real_8x_a100(knowledge):
    text = realdata("nvsmi-nvlink-status_8xa100_gpud.txt")
    names = re.findall(r"^GPU \d+: (.+?) \(UUID", text, flags=re.MULTILINE)
    assert set(names) == {"NVIDIA A100-SXM4-80GB"}
    assert knowledge.expected_gpu_count(names[0]) == len(names) == 8


def test_expected_gpu_count(knowledge):
    assert knowledge.expected_gpu_count("NVIDIA A100-SXM4-80GB") == 8
    assert knowledge.expected_gpu_count("NVIDIA H100 80GB HBM3") == 8
    assert knowledge.expected_gpu_count("NVIDIA L40S") is None      # PCIe: depends on the server
    assert knowledge.expected_gpu_count("Tesla T4") is None
    assert knowledge.expected_gpu_count("Mystery Accelerator 9000") is None


# ---------------------------------------------------------------- Xids

@pytest.mark.corpus
def test_the_whole_reference_catalog_is_encoded(knowledge):
    numbers = [entry["xid"] for entry in reference("xid_catalog.yaml")["xids"]]
    assert set(numbers) <= set(knowledge.xid_numbers())
    # beyond the reference copy only Xids the project classified on its own assumption (173)
    beyond = set(knowledge.xid_numbers()) - set(numbers)
    assert beyond == {173} and {knowledge.xid(n).get("basis") for n in beyond} == {"assumed"}
    for number in knowledge.xid_numbers():
        entry = knowledge.xid(number)
        assert entry["layer"] in LAYERS and entry["severity"] in SEVERITIES, number
        assert entry["fix"] is None or entry["fix"] in FIX_ROLES
        assert " " in entry["action"] and entry["name"] and entry["description"], number


def test_xid_79_fallen_off_the_bus(knowledge):
    entry = knowledge.xid(79)
    assert (entry["name"], entry["layer"], entry["severity"]) == ("GPU has fallen off the bus", "hardware", "critical")
    assert "reboot" in entry["action"] and "drain" in entry["action"].lower() and "repair" in entry["action"]
    assert entry["fix"] is None and entry["secondary"] is False


def test_xid_45_is_secondary(knowledge):
    entry = knowledge.xid("45")
    assert entry["secondary"] is True and entry["follows_any"] is True
    assert {48, 94, 95} <= set(entry["follows"])
    assert entry["severity"] == "info"


@pytest.mark.corpus
def test_xid_154_follows_every_xid_the_catalog_links_to_it(knowledge):
    linked = {e["xid"] for e in reference("xid_catalog.yaml")["xids"] if e.get("xid154_linkage")}
    entry = knowledge.xid(154)
    assert entry["secondary"] is True and set(entry["follows"]) == linked
    assert {48, 79, 95} <= linked


@pytest.mark.parametrize("numbers, layer", [
    ((13, 31, 43, 45), "workload"),
    ((48, 63, 64, 74, 79, 92, 94, 95), "hardware"),
    ((119, 120), "driver"),
])
def test_xid_layers(knowledge, numbers, layer):
    assert {number: knowledge.xid(number)["layer"] for number in numbers} == {number: layer for number in numbers}


@pytest.mark.corpus
def test_the_reference_names_the_device_plugin_application_errors():
    assert "13, 31, 43, 45, 68, 109" in " ".join(reference("xid_catalog.yaml")["notes"])


def test_device_plugin_application_errors_are_workload(knowledge):
    assert {knowledge.xid(n)["layer"] for n in (13, 31, 43, 45, 68, 109)} == {"workload"}


def test_gsp_errors_point_at_the_driver_role(knowledge):
    assert knowledge.xid(119)["fix"] == knowledge.xid(120)["fix"] == "driver"
    assert knowledge.xid(119)["severity"] == "critical"


def test_unknown_xid_and_copies(knowledge):
    assert knowledge.xid(9999) is None and knowledge.xid("abc") is None and knowledge.xid(None) is None
    entry = knowledge.xid(13)
    entry["severity"] = "critical"
    entry["follows"].append(1)
    assert knowledge.xid(13)["severity"] == "warning" and knowledge.xid(13)["follows"] == []


# ---------------------------------------------------------------- MIG

def test_a100_80gb_placements(knowledge):
    model = knowledge.mig_model("NVIDIA A100-SXM4-80GB")
    assert (model["model"], model["slices"], model["memory_slices"]) == ("A100-80GB", 7, 8)
    profile = model["profiles"]["3g.40gb"]
    assert (profile["id"], profile["compute_slices"], profile["memory_slices"], profile["max_instances"]) == (9, 3, 4, 2)
    assert profile["placements"] == [{"start": 0, "size": 4}, {"start": 4, "size": 4}]
    assert model["profiles"]["7g.80gb"]["placements"] == [{"start": 0, "size": 8}]
    assert set(model["profiles"]) == {"1g.10gb", "1g.10gb+me", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"}


@pytest.mark.corpus
def test_a100_40gb_from_the_real_capture(knowledge):
    (gpu,) = [gpu for capture, _d, gpu in xml_captures() if "a100-sxm4-40gb" in capture]
    model = knowledge.mig_model(gpu["name"])
    assert model["model"] == "A100-40GB" and model["placements_verified"] is True
    assert model["profiles"]["3g.20gb"]["max_instances"] == 2   # the capture runs two 3g.20gb


@pytest.mark.corpus
def test_h100_profiles_match_the_real_lgip_listing(knowledge):
    model = knowledge.mig_model(h100_gpu(0)["name"])
    assert model["model"] == "H100-80GB"
    assert model["profiles"]["1g.10gb"]["max_instances"] == 7
    listed = {(p["profile_name"], p["profile_id"], p["instances_total"])
              for p in parse_lgip(realdata("nvsmi-mig-lgip_4xh100-sxm5-80gb_stackhpc.txt")) if p["gpu"] == 0}
    assert listed == {(name, p["id"], p["max_instances"]) for name, p in model["profiles"].items()}


@pytest.mark.corpus
def test_a30_profiles_and_placements_match_the_real_session(knowledge):
    model = knowledge.mig_model("NVIDIA A30")
    listed = {(p["profile_name"], p["profile_id"], p["instances_total"])
              for p in parse_lgip(realdata("nvsmi-mig-lgip_a30-24gb_535.183.01_unresolved-repo.txt"))}
    assert listed == {(name, p["id"], p["max_instances"]) for name, p in model["profiles"].items()}
    session = realdata("nvsmi-mig-session_a30_lgipp-lgi-L-table-lcip_535.183.01_unresolved-repo.txt")
    placements = {int(pid): [{"start": int(s), "size": int(size)} for s in starts.split(",")]
                  for pid, starts, size in re.findall(r"Profile ID\s+(\d+) Placements?\s*: \{([\d,]+)\}:(\d+)", session)}
    assert placements == {p["id"]: p["placements"] for p in model["profiles"].values()}


@pytest.mark.corpus
def test_gpu_operator_default_config_fits_the_models(knowledge):
    """Every per-model entry of NVIDIA's default mig-parted config names profiles of that model."""
    config = reference("nvidia-mig-parted-configs/gpu-operator_default-mig-parted-config.config.yaml")
    by_device = {}
    for model in knowledge.mig_models():
        for device in model["pci_device_ids"]:
            by_device[(device + "10DE").upper()] = model
    unmatched, checked = set(), 0
    for entries in config["mig-configs"].values():
        for entry in entries:
            devices = entry.get("device-filter") or []
            for device in [devices] if isinstance(devices, str) else devices:
                model = by_device.get(device.upper())
                if model is None:
                    unmatched.add(device)
                    continue
                assert set(entry["mig-devices"]) <= set(model["profiles"]), (device, entry["mig-devices"])
                checked += 1
    assert checked >= 20
    assert unmatched == {"0x2BB510DE"}    # RTX PRO 6000 Blackwell: no profiles in the reference


def test_name_families_name_known_architectures():
    tables = shipped_tables()
    assert {arch for arch, _pattern in tables["architecture_by_name"]} <= set(tables["architectures"])
    assert {"kepler", "maxwell", "pascal", "volta", "turing", "ampere", "ada", "hopper", "blackwell"} <= set(
        tables["architectures"])


@pytest.mark.corpus
def test_every_reference_mig_model_is_shipped(knowledge):
    assert len(knowledge.mig_models()) == len(reference("mig_profiles.yaml")["gpus"]) == 12


def test_every_shipped_placement_fits_its_model(knowledge):
    assert len(knowledge.mig_models()) == 12
    for model in knowledge.mig_models():
        assert knowledge.mig_model_named(model["model"]) is model
        for name, profile in model["profiles"].items():
            assert profile["max_instances"] <= len(profile["placements"]), (model["model"], name)
            for placement in profile["placements"]:
                assert placement["size"] == profile["memory_slices"], (model["model"], name)
                assert placement["start"] + placement["size"] <= model["memory_slices"], (model["model"], name)


@pytest.mark.parametrize("name, model", [
    ("NVIDIA A100-SXM4-40GB", "A100-40GB"), ("A100-SXM4-40GB", "A100-40GB"), ("NVIDIA A100-PCIE-40GB", "A100-40GB"),
    ("NVIDIA A100 80GB PCIe", "A100-80GB"), ("NVIDIA A800-SXM4-80GB", "A100-80GB"),
    ("NVIDIA H100 PCIe", "H100-80GB"), ("NVIDIA H800", "H100-80GB"), ("NVIDIA H100 NVL", "H100-94GB"),
    ("NVIDIA GH200 480GB", "H100-96GB"), ("NVIDIA H20", "H100-96GB"), ("NVIDIA GH200 144G HBM3e", "GH200-144GB"),
    ("NVIDIA H200", "H200-141GB"), ("NVIDIA H200 NVL", "H200-141GB"), ("NVIDIA B200", "B200-180GB"),
    ("NVIDIA GB200", "GB200-186GB"), ("NVIDIA B300 SXM6 AC", "B300-288GB"),
])
def test_product_names_map_to_mig_models(knowledge, name, model):
    assert knowledge.mig_model(name)["model"] == model


@pytest.mark.parametrize("name", ["NVIDIA L40S", "Tesla T4", "NVIDIA GeForce RTX 4090", "NVIDIA A10", None, ""])
def test_gpus_without_mig(knowledge, name):
    assert knowledge.mig_model(name) is None


# ---------------------------------------------------------------- overrides

def test_overrides_extend_and_replace():
    custom = load_knowledge({
        "cuda_min_driver": {"13.4": "615.10.01", "12.4.1": None},
        "xid": {13: {"severity": "info"}, "200": {"name": "Site-specific", "layer": "hardware",
                                                  "severity": "warning", "action": "reset_gpu"}},
        "gpu_driver_support": {"models": {"H100-SXM5-80GB": {"gpus_per_node": 4},
                                          "Lab Card": {"names": ["LAB CARD .*"], "architecture": "hopper",
                                                       "first_branch": "560", "gpus_per_node": 2}},
                               "architectures": {"pascal": {"last_branch": "590"}}},
        "mig_profiles": {"A100-80GB": {"profiles": {"1g.10gb+me": None}}, "A30-24GB": None},
    })
    assert custom.cuda_min_driver("13.4.1") == "615.10.01"          # an X.Y override covers its updates
    assert custom.cuda_min_driver("12.4.1") is None and custom.cuda_min_driver("12.4") == "550.54.14"
    assert (custom.xid(13)["severity"], custom.xid(13)["layer"]) == ("info", "workload")
    assert custom.xid(200)["action"] == load_knowledge().xid(46)["action"]    # action keys expand
    assert custom.expected_gpu_count("NVIDIA H100 80GB HBM3") == 4
    assert custom.driver_supports_gpu("550.90.07", "NVIDIA Lab Card X", None) == (
        False, "NVIDIA Lab Card X (hopper) needs driver branch R560 or newer (model Lab Card); driver 550.90.07 is R550")
    assert custom.driver_supports_gpu("590.44.01", "NVIDIA GeForce GT 1030", "pascal")[0] is True
    assert "1g.10gb+me" not in custom.mig_model("NVIDIA A100-SXM4-80GB")["profiles"]
    assert custom.mig_model("NVIDIA A30") is None
    # the shipped knowledge is untouched
    shipped = load_knowledge()
    assert shipped.xid(13)["severity"] == "warning" and shipped.xid(200) is None
    assert shipped.expected_gpu_count("NVIDIA H100 80GB HBM3") == 8
    assert "1g.10gb+me" in shipped.mig_model("NVIDIA A100-SXM4-80GB")["profiles"]


def test_a_new_mig_model():
    custom = load_knowledge({"mig_profiles": {"LAB-2G": {
        "names": ["LAB MIG CARD"], "compute_slices": 2, "memory_slices": 2,
        "profiles": {"1g.8gb": {"id": 1, "compute_slices": 1, "memory_slices": 1, "max_instances": 2,
                                "placements": [{"start": 0, "size": 1}, {"start": 1, "size": 1}]}}}}})
    model = custom.mig_model("NVIDIA Lab MIG Card")
    assert model["model"] == "LAB-2G" and model["profiles"]["1g.8gb"]["placements"][1] == {"start": 1, "size": 1}


def test_knowledge_is_cached_by_the_overrides():
    assert load_knowledge() is load_knowledge(None) is load_knowledge({}) is load_knowledge({"xid": {}})
    first = load_knowledge({"xid": {13: {"severity": "info"}}})
    assert first is load_knowledge({"xid": {"13": {"severity": "info"}}})
    assert first is not load_knowledge({"xid": {13: {"severity": "critical"}}})
    assert shipped_tables.cache_info().misses == 1


@pytest.mark.parametrize("overrides, message", [
    ([], "catalogs: must be a mapping"),
    ({"xids": {}}, "catalogs: unknown table 'xids'"),
    ({"cuda_min_driver": {"twelve": "550.54.14"}}, "catalogs.cuda_min_driver['twelve']: not a CUDA toolkit version"),
    ({"cuda_min_driver": {"12.4": "latest"}}, "catalogs.cuda_min_driver['12.4']: must be a driver version"),
    ({"xid": {"13": {"layer": "gpu"}}}, "catalogs.xid['13']: layer must be one of hardware, driver"),
    ({"xid": {"13": {"severity": "fatal"}}}, "catalogs.xid['13']: severity must be one of critical, warning, info"),
    ({"xid": {"13": {"fix": "reboot"}}}, "catalogs.xid['13']: fix must be null or one of"),
    ({"xid": {"13": {"colour": "red"}}}, "catalogs.xid['13']: unknown key 'colour'"),
    ({"xid": {"300": {"severity": "info"}}}, "catalogs.xid['300']: name is required"),
    ({"xid": {"x13": {"severity": "info"}}}, "catalogs.xid['x13']: not an Xid number"),
    ({"gpu_driver_support": {"model": {}}}, "catalogs.gpu_driver_support: unknown key 'model'"),
    ({"gpu_driver_support": {"models": {"X": {"names": ["X"], "architecture": "tesla"}}}},
     "catalogs.gpu_driver_support.models['X']: architecture must be one of"),
    ({"gpu_driver_support": {"models": {"B200": {"gpus_per_node": 0}}}},
     "catalogs.gpu_driver_support.models['B200']: gpus_per_node must be a positive integer"),
    ({"gpu_driver_support": {"models": {"X": {"names": ["(unclosed"], "architecture": "ada"}}}},
     "catalogs.gpu_driver_support.models['X']: bad name pattern"),
    ({"gpu_driver_support": {"architectures": {"pascal": {"last_branch": "latest"}}}},
     "catalogs.gpu_driver_support.architectures['pascal']: last_branch must be a driver branch"),
    ({"mig_profiles": {"A100-80GB": {"profiles": {"3g.40gb": {"starts": [0, 6]}}}}},
     "catalogs.mig_profiles['A100-80GB'].profiles.3g.40gb: placement {'start': 6, 'size': 4} does not fit 8"),
    ({"mig_profiles": {"A100-80GB": {"profiles": {"big": {"id": 1}}}}},
     "catalogs.mig_profiles['A100-80GB'].profiles.big: not a MIG profile name"),
    ({"mig_profiles": {"NEW": {"names": ["NEW"]}}}, "catalogs.mig_profiles['NEW']: compute_slices must be a positive"),
    ({"xid": {"13": {"severity": {1, 2}}}}, "not plain data"),
    ({"xid": ["13"]}, "catalogs.xid: must be a mapping"),
    ({"gpu_driver_support": {"models": ["B200"]}}, "catalogs.gpu_driver_support.models: must be a mapping"),
    ({"mig_profiles": {"A30-24GB": {"profiles": ["1g.6gb"]}}}, "catalogs.mig_profiles['A30-24GB'].profiles: must be a mapping"),
])
def test_bad_overrides_name_the_table_and_key(overrides, message):
    with pytest.raises(ValueError) as caught:
        load_knowledge(overrides)
    assert message in str(caught.value)
