"""The project's own nvidia-smi -q -x samples (tests/fixtures/samples) through diagnose: the findings each
sample's readings call for, and none that are not there."""

import os

import pytest

from ansible_collections.gpufleet.core.plugins.module_utils.facts_model import new_facts
from ansible_collections.gpufleet.core.plugins.module_utils.nvsmi_xml import parse_nvidia_smi_xml
from ansible_collections.gpufleet.core.plugins.plugin_utils.diagnose import diagnose_host
from tests.unit.schema_check import ROOT, assert_valid_facts
from tests.unit.test_rules_hardware import KNOWLEDGE, policy

SAMPLES = os.path.join(ROOT, "tests", "fixtures", "samples")


def sample_facts(name):
    with open(os.path.join(SAMPLES, name), encoding="utf-8") as handle:
        report = parse_nvidia_smi_xml(handle.read())
    facts = new_facts()
    facts.update(source="nvidia_smi", nvidia_present=True, collected_at="2026-11-30T06:00:00Z",
                 gather_subset=["driver", "gpus"])
    facts["driver"].update(version=report["driver"]["version"], cuda_driver_version=report["driver"]["cuda_driver_version"],
                           userspace_version=report["driver"]["version"])
    facts["gpus"] = report["gpus"]
    assert_valid_facts(facts)
    return facts


def rules(name):
    return sorted((f["rule"], f["severity"]) for f in diagnose_host("sample", sample_facts(name), policy(), KNOWLEDGE))


@pytest.mark.parametrize("name", sorted(n for n in os.listdir(SAMPLES) if n.endswith(".xml")))
def test_no_sample_has_a_critical_finding(name):
    assert "critical" not in [severity for _rule, severity in rules(name)]


def test_t4_in_a_vm_persistence_off_and_a_narrow_link_under_load():
    # x8 of x16 while busy; no GPU-count finding: a T4 server has no usual GPU count
    assert rules("nvsmi-q-x_tesla-t4_515.105.01.xml") == [
        ("driver.persistence_mode", "warning"), ("hardware.pcie_link", "warning")]


def test_single_a100_is_a_gpu_count_and_persistence_warning():
    assert rules("nvsmi-q-x_a100-sxm4-40gb_mig-2x3g.20gb_550.90.07.xml") == [
        ("driver.persistence_mode", "warning"), ("hardware.gpu_count", "warning")]


def test_two_idle_a10g_with_persistence_on_are_clean():
    assert rules("nvsmi-q-x_2x-a10g_550.90.07.xml") == []
