"""GPU knowledge lives in plugins/plugin_utils/rules/data/ and is read through knowledge.py (issue 9): which Xids
are application errors, which Xid means a lost GPU, which models sit on NVSwitch baseboards, how many GPUs
make an NVSwitch system, and which clock events are findings."""

import glob
import os
import re

import pytest
import yaml

from ansible_collections.gpufleet.core.plugins.module_utils import kernel_log
from ansible_collections.gpufleet.core.plugins.plugin_utils.rules import correlate
from ansible_collections.gpufleet.core.plugins.plugin_utils.rules import custom as rules_custom
from ansible_collections.gpufleet.core.plugins.plugin_utils.rules import drift_trend
from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.diagnose import RULE_MODULES
from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.knowledge import load_knowledge
from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.knowledge_tables import DATA_DIR

KNOWLEDGE = load_knowledge()


def test_the_lost_gpu_xid_is_the_catalogs_and_the_collector_agrees():
    assert KNOWLEDGE.gpu_lost_xids() == frozenset([79])
    assert KNOWLEDGE.gpu_lost_xids() == frozenset([kernel_log.GPU_LOST_XID])
    assert KNOWLEDGE.xid(79)["gpu_lost"] is True and KNOWLEDGE.xid(13)["gpu_lost"] is False


def test_application_error_xids_come_from_the_catalog_and_follow_its_overrides():
    assert KNOWLEDGE.application_xids() == frozenset([13, 31, 43])
    changed = load_knowledge({"xid": {"13": {"application_error": False}, "68": {"application_error": True}}})
    assert changed.application_xids() == frozenset([31, 43, 68])
    with pytest.raises(ValueError, match=r"catalogs.xid\['31'\]: application_error must be true or false"):
        load_knowledge({"xid": {"31": {"application_error": "yes"}}})


@pytest.mark.parametrize("name, baseboard", [
    ("NVIDIA H100 80GB HBM3", True), ("NVIDIA A100-SXM4-80GB", True), ("Tesla V100-SXM2-16GB", True),
    ("NVIDIA H200", True), ("NVIDIA H200 141GB HBM3e", True), ("NVIDIA H20", True), ("NVIDIA B200", True),
    ("NVIDIA H800 80GB HBM3", True),
    ("NVIDIA H200 NVL", False), ("NVIDIA H100 PCIe", False), ("NVIDIA L40S", False), ("NVIDIA A100-PCIE-40GB", False),
    ("", False), (None, False)])
def test_baseboard_models_by_product_name(name, baseboard):
    assert KNOWLEDGE.is_baseboard_model(name) is baseboard


def test_nvswitch_gpu_count_and_clock_event_severities():
    assert KNOWLEDGE.nvswitch_gpu_count == 8
    assert {reason: KNOWLEDGE.clock_event_severity(reason) for reason in (
        "hw_thermal_slowdown", "hw_power_brake_slowdown", "hw_slowdown", "sw_thermal_slowdown", "sw_power_cap", "idle")} \
        == {"hw_thermal_slowdown": "critical", "hw_power_brake_slowdown": "critical", "hw_slowdown": "warning",
            "sw_thermal_slowdown": "warning", "sw_power_cap": None, "idle": None}


@pytest.mark.parametrize("path", sorted(glob.glob(os.path.join(DATA_DIR, "*.yml"))), ids=os.path.basename)
def test_every_data_file_names_its_sources(path):
    with open(path) as handle:
        data = yaml.safe_load(handle)
    assert data.get("sources"), path


def test_the_rules_and_the_correlation_hold_no_gpu_tables_of_their_own():
    paths = [module.__file__ for module in RULE_MODULES + (rules_custom, drift_trend, correlate)]
    assert len(paths) > 10
    for path in paths:
        with open(path) as handle:
            text = handle.read()
        assert not re.search(r"==\s*79\b|\b79\s*[,)]|APP_XIDS|SXM\||_BAD_CLOCK_EVENTS|NVSWITCH_GPU_COUNT", text), path
