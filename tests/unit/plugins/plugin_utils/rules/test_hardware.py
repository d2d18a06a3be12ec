"""Hardware-layer rules: each one triggered by the fact values it is about, and quiet on a healthy node.

The builders here (healthy_node, findings_of, ...) are shared by the other rule tests.
"""

import copy
import glob
import os

import pytest

from ansible_collections.gpufleet.core.plugins.module_utils.facts_model import new_gpu
from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.diagnose import diagnose_host
from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.findings import (
    RULES, at_or_above, make_finding, severity_rank)
from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.knowledge import load_knowledge
from tests.support.rule_builders import FINDING_KEYS, findings_of, healthy_node, only, policy, xid_event


# ---------------------------------------------------------------- builders (used by the other rule tests)


# ---------------------------------------------------------------- findings module

def test_severities_are_ordered_critical_warning_info():
    assert [severity_rank(s) for s in ("critical", "warning", "info")] == [3, 2, 1]
    assert at_or_above("critical", "warning") and at_or_above("warning", "warning")
    assert not at_or_above("info", "warning")


def test_make_finding_has_every_field():
    finding = make_finding("hardware.xid", "hardware", "critical", "h1", "0000:18:00.0", "s", {"xid": 79}, "a")
    assert set(finding) == FINDING_KEYS and finding["fix"] is None


def test_every_rule_id_starts_with_its_layer():
    for rule_id, info in RULES.items():
        assert rule_id.split(".")[0] == info.layer


def test_healthy_node_has_no_findings():
    assert findings_of(healthy_node()) == []


# ---------------------------------------------------------------- Xid

def test_xid_79_is_reported_once_as_a_lost_gpu():
    facts = healthy_node()
    facts["xid_events"] = [xid_event(79, "0000:ab:00.0", "2026-11-29T21:14:07Z",
                                     message="GPU has fallen off the bus.")]
    lost = only(facts, "hardware.gpu_lost")
    assert lost["gpu"] == "0000:ab:00.0" and lost["severity"] == "critical"
    assert lost["evidence"]["xid"] == 79 and lost["evidence"]["count"] == 1
    assert findings_of(facts, "hardware.xid") == []


def test_xid_48_with_secondary_45_and_154_is_one_critical_finding():
    facts = healthy_node()
    facts["xid_events"] = [
        xid_event(48, "0000:3a:00.0", "2026-11-29T10:00:00Z", 51234, "python3", "An uncorrectable double bit error"),
        xid_event(154, "0000:3a:00.0", "2026-11-29T10:00:01Z", message="GPU recovery action changed ... Reset Required"),
        xid_event(45, "0000:3a:00.0", "2026-11-29T10:00:02Z", 51234, "python3", "Ch 00000010"),
    ]
    xids = findings_of(facts, "hardware.xid") + findings_of(facts, "workload.xid")
    assert len(xids) == 1
    finding = xids[0]
    assert finding["rule"] == "hardware.xid" and finding["severity"] == "critical"
    assert finding["gpu"] == "0000:3a:00.0" and finding["evidence"]["xid"] == 48
    assert sorted(s["xid"] for s in finding["evidence"]["secondary"]) == [45, 154]
    assert finding["evidence"]["pids"] == [51234]
    assert "Xid 48" in finding["summary"] and "0000:3a:00.0" in finding["summary"]


def test_secondary_xid_alone_stands_on_its_own():
    facts = healthy_node()
    facts["xid_events"] = [xid_event(45, "0000:18:00.0", "2026-11-29T10:00:02Z", 51234, "python3", "Ch 00000010")]
    finding = only(facts, "workload.xid")
    assert finding["severity"] == "info" and finding["evidence"]["xid"] == 45


def test_application_xid_13_lands_in_the_workload_layer():
    facts = healthy_node()
    facts["xid_events"] = [xid_event(13, "0000:5d:00.0", "2026-11-29T08:%02d:00Z" % minute, 7781, "python3",
                                     "Graphics SM Warp Exception on (GPC 1, TPC 2, SM 0)") for minute in (1, 2)]
    finding = only(facts, "workload.xid")
    assert finding["layer"] == "workload" and finding["evidence"]["count"] == 2
    assert finding["evidence"]["first_time"] == "2026-11-29T08:01:00Z"


def test_driver_xid_119_has_the_driver_fix():
    facts = healthy_node()
    facts["xid_events"] = [xid_event(119, "0000:9a:00.0", "2026-11-29T08:00:00Z", message="Timeout after 6s of waiting for RPC response from GPU0 GSP!")]
    finding = only(facts, "driver.xid")
    assert finding["severity"] == "critical" and finding["fix"] == "driver"


def test_xid_layer_follows_a_catalog_override():
    facts = healthy_node()
    facts["xid_events"] = [xid_event(13, "0000:5d:00.0", "2026-11-29T08:01:00Z", 7781, "python3")]
    the_policy = policy(catalogs={"xid": {13: {"layer": "scheduling"}}})
    knowledge = load_knowledge(the_policy["catalogs"])
    found = [f for f in diagnose_host("n", facts, the_policy, knowledge) if f["rule"].endswith(".xid")]
    assert [f["rule"] for f in found] == ["scheduling.xid"]


def test_xid_outside_the_window_is_ignored():
    facts = healthy_node()
    facts["xid_events"] = [xid_event(48, "0000:3a:00.0", "2026-11-26T05:59:00Z")]
    assert findings_of(facts, "hardware.xid") == []
    assert len(findings_of(facts, "hardware.xid", policy(thresholds={"xid_window_hours": 100}))) == 1


def test_xid_with_a_raw_timestamp_counts():
    facts = healthy_node()
    facts["xid_events"] = [xid_event(48, "0000:3a:00.0", "[ 8123.456789]")]
    assert len(findings_of(facts, "hardware.xid")) == 1


def test_unknown_xid_is_a_warning():
    facts = healthy_node()
    facts["xid_events"] = [xid_event(999, "0000:3a:00.0", "2026-11-29T08:00:00Z")]
    assert only(facts, "hardware.xid")["severity"] == "warning"


# ---------------------------------------------------------------- lost GPU

def test_lost_gpu_without_bus_id_is_paired_with_the_kernel_log_bus():
    facts = healthy_node()
    lost = new_gpu(5)
    lost["lost"] = True
    facts["gpus"][5] = lost
    facts["kernel_events"] = [{"kind": "fallen_off_bus", "time": "2026-11-29T21:14:07Z", "pci_bus_id": "0000:ab:00.0",
                               "message": "GPU 0000:ab:00.0: GPU has fallen off the bus."}]
    finding = only(facts, "hardware.gpu_lost")
    assert finding["gpu"] == "0000:ab:00.0" and finding["evidence"]["lost"] is True
    assert finding["evidence"]["gpu_index"] == 5
    assert findings_of(facts, "hardware.gpu_count") == []


def test_no_lost_gpu_on_a_healthy_node():
    assert findings_of(healthy_node(), "hardware.gpu_lost") == []


# ---------------------------------------------------------------- memory errors

def test_uncorrected_ecc_is_critical():
    facts = healthy_node()
    facts["gpus"][6]["ecc"].update(volatile_uncorrected=1, aggregate_uncorrected=1)
    finding = only(facts, "hardware.ecc_uncorrected")
    assert finding["gpu"] == "0000:ba:00.0" and finding["evidence"]["volatile_uncorrected"] == 1


def test_only_corrected_ecc_is_quiet():
    facts = healthy_node()
    facts["gpus"][6]["ecc"].update(volatile_corrected=12, aggregate_corrected=40)
    assert findings_of(facts, "hardware.ecc_uncorrected") == []


@pytest.mark.parametrize("single, double, pending, severity", [
    (30, 4, False, "warning"), (58, 3, False, "critical"), (2, 1, True, "warning")])
def test_retired_pages(single, double, pending, severity):
    facts = healthy_node()
    facts["gpus"][1]["retired_pages"].update(single_bit=single, double_bit=double, pending=pending)
    finding = only(facts, "hardware.retired_pages")
    assert finding["severity"] == severity and finding["evidence"]["total"] == single + double


def test_few_retired_pages_are_quiet():
    facts = healthy_node()
    facts["gpus"][1]["retired_pages"].update(single_bit=3, double_bit=1, pending=False)
    assert findings_of(facts, "hardware.retired_pages") == []


def test_row_remap_failure_is_critical_and_pending_a_warning():
    facts = healthy_node()
    facts["gpus"][2]["remapped_rows"].update(uncorrectable=8, failure=True)
    facts["gpus"][6]["remapped_rows"].update(uncorrectable=1, pending=True)
    found = {f["gpu"]: f["severity"] for f in findings_of(facts, "hardware.row_remap")}
    assert found == {"0000:3a:00.0": "critical", "0000:ba:00.0": "warning"}


def test_remapped_rows_without_pending_are_quiet():
    facts = healthy_node()
    facts["gpus"][2]["remapped_rows"].update(correctable=3, uncorrectable=1)
    assert findings_of(facts, "hardware.row_remap") == []


# ---------------------------------------------------------------- heat, clocks, power

def test_temperature_near_and_at_slowdown():
    facts = healthy_node()
    facts["gpus"][2]["temperature"]["gpu_c"] = 87
    facts["gpus"][3]["temperature"]["gpu_c"] = 89
    found = {f["gpu"]: f["severity"] for f in findings_of(facts, "hardware.temperature")}
    assert found == {"0000:3a:00.0": "warning", "0000:5d:00.0": "critical"}


def test_temperature_below_the_margin_is_quiet():
    facts = healthy_node()
    facts["gpus"][2]["temperature"]["gpu_c"] = 83
    assert findings_of(facts, "hardware.temperature") == []


def test_thermal_slowdown_is_critical_and_power_cap_alone_info():
    facts = healthy_node()
    facts["gpus"][2]["clock_event_reasons"] = {"mask": 0x64, "active": ["sw_power_cap", "sw_thermal_slowdown",
                                                                        "hw_thermal_slowdown"]}
    facts["gpus"][4]["clock_event_reasons"] = {"mask": 0x4, "active": ["sw_power_cap"]}
    facts["gpus"][5]["clock_event_reasons"] = {"mask": 0x20, "active": ["sw_thermal_slowdown"]}
    found = {f["gpu"]: f["severity"] for f in findings_of(facts, "hardware.clock_events")}
    assert found == {"0000:3a:00.0": "critical", "0000:9a:00.0": "info", "0000:ab:00.0": "warning"}


def test_idle_clock_event_is_quiet():
    facts = healthy_node()
    facts["gpus"][0]["clock_event_reasons"] = {"mask": 1, "active": ["gpu_idle"]}
    assert findings_of(facts, "hardware.clock_events") == []


def test_power_limit_below_default():
    facts = healthy_node()
    facts["gpus"][0]["power"]["limit_w"] = 500.0
    finding = only(facts, "hardware.power_limit")
    assert finding["evidence"] == {"limit_w": 500.0, "default_limit_w": 700.0, "min_limit_w": 200.0,
                                   "max_limit_w": 700.0}
    assert "500 W" in finding["summary"] and "700 W" in finding["summary"]


def test_power_limit_at_default_is_quiet():
    assert findings_of(healthy_node(), "hardware.power_limit") == []


# ---------------------------------------------------------------- PCIe

def test_pcie_width_below_max_is_a_warning():
    facts = healthy_node()
    facts["gpus"][3]["pcie"]["width_current"] = 8
    finding = only(facts, "hardware.pcie_link")
    assert finding["severity"] == "warning" and "x8 of x16" in finding["summary"]


def test_pcie_gen_below_max_is_info_when_idle_and_warning_when_busy():
    facts = healthy_node()
    facts["gpus"][0]["pcie"]["gen_current"] = 1
    facts["gpus"][0]["clock_event_reasons"] = {"mask": 1, "active": ["gpu_idle"]}
    facts["gpus"][0]["utilization"]["gpu_pct"] = 0
    facts["gpus"][1]["pcie"]["gen_current"] = 3
    found = {f["gpu"]: f["severity"] for f in findings_of(facts, "hardware.pcie_link")}
    assert found == {"0000:18:00.0": "info", "0000:2a:00.0": "warning"}


def test_pcie_at_max_is_quiet():
    assert findings_of(healthy_node(), "hardware.pcie_link") == []


def test_pcie_aer_fatal_is_critical_correctable_over_threshold_warning():
    facts = healthy_node()
    facts["gpus"][3]["pcie"]["aer"].update(correctable=480)
    facts["gpus"][4]["pcie"]["aer"].update(nonfatal=1)
    facts["gpus"][5]["pcie"]["aer"].update(correctable=10)
    found = {f["gpu"]: f["severity"] for f in findings_of(facts, "hardware.pcie_aer")}
    assert found == {"0000:5d:00.0": "warning", "0000:9a:00.0": "critical"}


def test_pcie_replay_above_threshold():
    facts = healthy_node()
    facts["gpus"][3]["pcie"]["replay_counter"] = 4127
    facts["gpus"][4]["pcie"]["replay_counter"] = 100
    finding = only(facts, "hardware.pcie_replay")
    assert finding["gpu"] == "0000:5d:00.0" and finding["evidence"]["replay_counter"] == 4127


# ---------------------------------------------------------------- NVLink

def test_inactive_nvlink_on_an_sxm_gpu_is_critical():
    facts = healthy_node()
    facts["gpus"][2]["nvlinks"][7]["active"] = False
    finding = only(facts, "hardware.nvlink_inactive")
    assert finding["severity"] == "critical" and finding["evidence"]["inactive_links"] == [7]


def test_inactive_links_of_a_pcie_card_without_active_links_are_quiet():
    facts = healthy_node(gpus=1)
    gpu = facts["gpus"][0]
    gpu["name"] = "NVIDIA L40S"
    gpu["nvlinks"] = [{"link": 0, "active": False, "errors": {}}, {"link": 1, "active": False, "errors": {}}]
    assert findings_of(facts, "hardware.nvlink_inactive") == []
    gpu["nvlinks"][1]["active"] = True
    assert only(facts, "hardware.nvlink_inactive")["severity"] == "warning"


def test_nvlink_error_counters():
    facts = healthy_node()
    facts["gpus"][2]["nvlinks"][6]["errors"].update(replay=41, recovery=2)
    facts["gpus"][2]["nvlinks"][8]["errors"].update(crc_flit=73)
    finding = only(facts, "hardware.nvlink_errors")
    assert finding["evidence"]["links"] == {"6": {"replay": 41, "recovery": 2}, "8": {"crc_flit": 73}}
    assert findings_of(facts, "hardware.nvlink_errors", policy(thresholds={"nvlink_errors_warning": 100})) == []


# ---------------------------------------------------------------- host inventory

def test_fewer_gpus_than_the_baseboard_is_a_warning_and_than_the_policy_critical():
    facts = healthy_node(gpus=7)
    finding = only(facts, "hardware.gpu_count")
    assert finding["severity"] == "warning" and finding["evidence"]["expected"] == 8
    finding = only(facts, "hardware.gpu_count", policy(gpus={"expected_count": 8}))
    assert finding["severity"] == "critical" and finding["evidence"]["visible"] == 7


def test_policy_expected_count_overrides_the_baseboard():
    assert findings_of(healthy_node(gpus=4), "hardware.gpu_count", policy(gpus={"expected_count": 4})) == []


def test_vbios_differing_from_the_other_gpus_of_the_model():
    facts = healthy_node()
    facts["gpus"][4]["vbios_version"] = "96.00.74.00.0B"
    finding = only(facts, "hardware.vbios_mismatch")
    assert finding["gpu"] == "0000:9a:00.0" and finding["evidence"]["reference"] == "96.00.89.00.01"
    assert findings_of(facts, "hardware.vbios_mismatch", policy(thresholds={"vbios_mismatch": False})) == []


def test_lost_gpu_skips_per_gpu_rules():
    facts = healthy_node()
    lost = copy.deepcopy(facts["gpus"][3])
    lost.update(lost=True)
    lost["temperature"]["gpu_c"] = 95
    facts["gpus"][3] = lost
    assert [f["rule"] for f in findings_of(facts)] == ["hardware.gpu_lost"]


def test_every_registered_rule_is_exercised_by_a_rule_test():
    folder = os.path.dirname(os.path.abspath(__file__))
    text = ""
    for path in sorted(glob.glob(os.path.join(folder, "test_*.py"))):
        with open(path) as handle:
            text += handle.read()
    missing = [rule_id for rule_id in RULES if '"%s"' % rule_id not in text]
    assert missing == []
