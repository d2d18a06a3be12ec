"""Hardware rules on the BMC's facts, each with a triggering and a non-triggering case. The facts come from
the real bmc collector reading ipmitool output written for these tests (tests/unit/plugins/module_utils/test_bmc_collect.py)."""

import pytest

from ansible_collections.gpufleet.core.plugins.module_utils.bmc_collect import collect_bmc_in_band
from ansible_collections.gpufleet.core.plugins.module_utils.facts_model import new_facts
from ansible_collections.gpufleet.core.plugins.module_utils.host_io import ReplayHost
from ansible_collections.gpufleet.core.plugins.plugin_utils.policy import PolicyError
from tests.support.rule_builders import findings_of, healthy_node, only, policy
from tests.support.bmc_samples import answering_host, key

HEALTHY_SDR = """\
Inlet Temp       | 04h | ok  | 55.1 | 24 degrees C
Exhaust Temp     | 05h | ok  | 55.2 | 45 degrees C
FAN1             | 30h | ok  | 29.1 | 9000 RPM
FAN2             | 31h | ok  | 29.2 | 9120 RPM
Pwr Consumption  | 70h | ok  | 21.1 | 5210 Watts
PSU1 Status      | 71h | ok  | 10.1 | Presence detected
PSU2 Status      | 72h | ok  | 10.2 | Presence detected
PS Redundancy    | 73h | ok  | 10.3 | Fully Redundant
"""
HEALTHY_SEL = "   1 | 11/29/26 | 10:00:00 GMT | Event Logging Disabled #0x07 | Log area reset/cleared | Asserted\n"
BMC_RULES = ("hardware.bmc_power_redundancy", "hardware.bmc_fan", "hardware.bmc_inlet_temperature",
             "hardware.bmc_event_log")


def node_with_bmc(sdr=None, sel=None):
    facts = healthy_node()
    overrides = {}
    if sdr is not None:
        overrides[key("sdr", "elist")] = {"rc": 0, "stdout": sdr}
    if sel is not None:
        overrides[key("sel", "elist")] = {"rc": 0, "stdout": sel}
    scratch = new_facts()
    facts["bmc"] = collect_bmc_in_band(answering_host(overrides), scratch, 72, 10)
    facts["gather_subset"].append("bmc")
    return facts


def test_healthy_bmc_has_no_finding():
    found = findings_of(node_with_bmc(HEALTHY_SDR, HEALTHY_SEL))
    assert [finding for finding in found if finding["rule"] in BMC_RULES] == []


def test_no_bmc_device_has_no_finding():
    facts = healthy_node()
    facts["bmc"] = collect_bmc_in_band(ReplayHost({"dirs": {"/dev": ["null"]}}), new_facts(), 72, 10)
    assert [finding for finding in findings_of(facts) if finding["rule"] in BMC_RULES] == []


def test_failed_supply_and_lost_redundancy():
    finding = only(node_with_bmc(), "hardware.bmc_power_redundancy")
    assert finding["severity"] == "critical" and finding["layer"] == "hardware"
    assert "PSU2 Status: Presence detected, Failure detected, Power Supply AC lost" in finding["summary"]
    assert "PS Redundancy: Redundancy Lost" in finding["summary"]
    assert [psu["name"] for psu in finding["evidence"]["failed_supplies"]] == ["PSU2 Status"]


def test_degraded_redundancy_alone_is_a_warning():
    sdr = HEALTHY_SDR.replace("Fully Redundant", "Redundancy Degraded")
    assert only(node_with_bmc(sdr, HEALTHY_SEL), "hardware.bmc_power_redundancy")["severity"] == "warning"


def test_failed_and_slow_fans():
    finding = only(node_with_bmc(), "hardware.bmc_fan")
    assert finding["severity"] == "critical"
    assert [fan["name"] for fan in finding["evidence"]["failed"]] == ["FAN2"]
    assert [fan["name"] for fan in finding["evidence"]["slow"]] == ["FAN3"]
    assert "FAN2 400 RPM (lcr)" in finding["summary"]


def test_slow_fan_alone_is_a_warning():
    sdr = HEALTHY_SDR.replace("FAN2             | 31h | ok  | 29.2 | 9120 RPM", "FAN2 | 31h | lnc | 29.2 | 2100 RPM")
    finding = only(node_with_bmc(sdr, HEALTHY_SEL), "hardware.bmc_fan")
    assert finding["severity"] == "warning" and finding["summary"] == "Slow fans: FAN2 2100 RPM (lnc)"


@pytest.mark.parametrize("limit, expected", [(40, 1), (41, 0), (30, 1)])
def test_inlet_temperature_against_the_policy(limit, expected):
    found = findings_of(node_with_bmc(), "hardware.bmc_inlet_temperature",
                        the_policy=policy(thresholds={"inlet_temperature_c": limit}))
    assert len(found) == expected
    if found:
        assert found[0]["evidence"] == {"inlet_temperature_c": 41.0, "limit_c": limit, "exhaust_temperature_c": 52.0,
                                        "bmc_status": "unc"}
        assert found[0]["severity"] == "warning"


def test_inlet_at_a_critical_threshold_is_critical():
    sdr = HEALTHY_SDR.replace("| ok  | 55.1 | 24 degrees C", "| ucr | 55.1 | 47 degrees C")
    finding = only(node_with_bmc(sdr, HEALTHY_SEL), "hardware.bmc_inlet_temperature")
    assert finding["severity"] == "critical"


def test_default_inlet_limit_is_35():
    assert policy()["thresholds"]["inlet_temperature_c"] == 35
    assert findings_of(node_with_bmc(), "hardware.bmc_inlet_temperature")  # 41 C


def test_critical_event_log_records():
    finding = only(node_with_bmc(), "hardware.bmc_event_log")
    assert finding["severity"] == "critical"
    events = finding["evidence"]["events"]
    assert [event["id"] for event in events] == ["1", "2", "3", "6"]
    assert events[1]["time"] == "2026-11-29T21:13:50Z"
    assert "Memory #0x2b: Uncorrectable ECC" in finding["summary"]


def test_event_log_records_outside_the_window_are_no_finding():
    sel = "   7 | 10/01/26 | 02:00:00 GMT | Critical Interrupt #0x90 | Bus Fatal Error | Asserted\n"
    assert findings_of(node_with_bmc(HEALTHY_SDR, sel), "hardware.bmc_event_log") == []


def test_deasserted_critical_records_are_a_warning():
    sel = ("   1 | 11/29/26 | 21:13:50 GMT | Power Supply PS1 Status | Power Supply AC lost | Asserted\n"
           "   2 | 11/29/26 | 21:14:50 GMT | Power Supply PS1 Status | Power Supply AC lost | Deasserted\n")
    finding = only(node_with_bmc(HEALTHY_SDR, sel), "hardware.bmc_event_log")
    assert finding["severity"] == "warning" and finding["evidence"]["still_asserted"] == 0
    assert "(all deasserted since)" in finding["summary"]


@pytest.mark.parametrize("value", [5, 61, "hot", True, None])
def test_inlet_limit_is_validated(value):
    with pytest.raises(PolicyError) as caught:
        policy(thresholds={"inlet_temperature_c": value})
    assert "thresholds.inlet_temperature_c" in str(caught.value)


def test_inlet_limit_accepts_a_decimal():
    assert policy(thresholds={"inlet_temperature_c": 27.5})["thresholds"]["inlet_temperature_c"] == 27.5
