"""The project's own nvidia-smi -q -x samples (tests/fixtures/samples) through diagnose: the findings each
sample's readings call for, and none that are not there."""

import os

import pytest

from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.diagnose import diagnose_host
from tests.support.schema_check import ROOT
from tests.support.demo_fleet import nvidia_smi_facts
from tests.support.rule_builders import KNOWLEDGE, policy

SAMPLES = os.path.join(ROOT, "tests", "fixtures", "samples")


def rules(name):
    findings = diagnose_host("sample", nvidia_smi_facts(os.path.join(SAMPLES, name)), policy(), KNOWLEDGE)
    return sorted((f["rule"], f["severity"]) for f in findings)


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
