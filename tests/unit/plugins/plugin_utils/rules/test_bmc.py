"""Hardware rules on the BMC's facts, each with a triggering and a non-triggering case. The facts come from
the real bmc collector reading ipmitool output written for these tests (tests/unit/plugins/module_utils/test_bmc_collect.py)."""

import pytest

from ansible_collections.gpufleet.core.plugins.module_utils.bmc_collect import collect_bmc_in_band, new_bmc
from ansible_collections.gpufleet.core.plugins.module_utils.facts_model import new_facts
from ansible_collections.gpufleet.core.plugins.module_utils.host_io import ReplayHost
from ansible_collections.gpufleet.core.plugins.module_utils.redfish_chassis import summarize_redfish
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
             "hardware.bmc_event_log", "hardware.bmc_leak")


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


def node_with_redfish(**documents):
    facts = healthy_node()
    facts["bmc"] = new_bmc("redfish", "10.0.0.9")
    facts["bmc"].update(summarize_redfish(**documents))
    return facts


def test_lost_redundancy_without_a_failed_supply_is_a_warning():
    sdr = HEALTHY_SDR.replace("Fully Redundant", "Redundancy Lost")
    finding = only(node_with_bmc(sdr, HEALTHY_SEL), "hardware.bmc_power_redundancy")
    assert finding["severity"] == "warning" and finding["summary"] == "Power supplies at risk: PS Redundancy: Redundancy Lost"


@pytest.mark.parametrize("status, expected", [
    ({"State": "Enabled", "Health": "Warning"}, "warning"),
    ({"State": "Disabled", "Health": "OK"}, "warning"),
    ({"State": "UnavailableOffline"}, "warning"),
    ({"State": "Enabled", "Health": "Critical"}, "critical"),
    ({"State": "Absent"}, None),
    ({"State": "StandbyOffline", "Health": "OK"}, None),
    ({"State": "Enabled", "Health": "OK"}, None),
])
def test_redfish_supply_status(status, expected):
    power = {"PowerSupplies": [{"Name": "PSU 1", "Status": {"State": "Enabled", "Health": "OK"}},
                               {"Name": "PSU 2", "Status": status}]}
    found = findings_of(node_with_redfish(power=power), "hardware.bmc_power_redundancy")
    assert [finding["severity"] for finding in found] == ([expected] if expected else [])
    if expected:
        assert "PSU 2: " in found[0]["summary"] and "PSU 1" not in found[0]["summary"]


def test_redfish_redundancy_group_offline_with_health_ok():
    subsystem = {"PowerSupplyRedundancy": [{"RedundancyType": "Failover", "Status": {"State": "UnavailableOffline", "Health": "OK"}}]}
    finding = only(node_with_redfish(power_subsystem=subsystem), "hardware.bmc_power_redundancy")
    assert finding["severity"] == "warning" and "UnavailableOffline" in finding["summary"]


def test_fan_without_a_reading_is_a_warning():
    sdr = HEALTHY_SDR + "FAN3             | 32h | ns  | 29.3 | No Reading\nFAN4             | 33h | ns  | 29.4 | Disabled\n"
    finding = only(node_with_bmc(sdr, HEALTHY_SEL), "hardware.bmc_fan")
    assert finding["severity"] == "warning" and finding["summary"] == "Fans without a reading: FAN3 no reading (ns)"
    assert [fan["name"] for fan in finding["evidence"]["no_reading"]] == ["FAN3"]


def test_fan_redundancy_degraded_is_a_warning():
    thermal = {"Fans": [{"Name": "Fan 1", "Reading": 9000, "Status": {"State": "Enabled", "Health": "OK"}}],
               "Redundancy": [{"Name": "System Fans", "Mode": "N+m", "Status": {"State": "Enabled", "Health": "Warning"}}]}
    finding = only(node_with_redfish(thermal=thermal), "hardware.bmc_fan")
    assert finding["severity"] == "warning" and finding["summary"] == "Fans without redundancy: System Fans: Warning, mode N+m"


@pytest.mark.parametrize("detector, expected", [
    ({"Name": "Manifold", "DetectorState": "LeakDetected", "Status": {"State": "Enabled", "Health": "Critical"}}, "critical"),
    ({"Name": "Tray", "DetectorState": "Critical", "Status": {"State": "Enabled"}}, "critical"),
    ({"Name": "Tray", "DetectorState": "Warning", "Status": {"State": "Enabled", "Health": "Warning"}}, "warning"),
    ({"Name": "Tray", "DetectorState": "OK", "Status": {"State": "Enabled", "Health": "OK"}}, None),
    ({"Name": "Tray", "DetectorState": "Critical", "Status": {"State": "Absent"}}, None),
])
def test_leak_detectors(detector, expected):
    found = findings_of(node_with_redfish(leak_detectors=[detector]), "hardware.bmc_leak")
    assert [finding["severity"] for finding in found] == ([expected] if expected else [])
    if expected == "critical":
        assert found[0]["summary"].startswith("Liquid leak detected: ") and found[0]["layer"] == "hardware"


def test_leak_in_a_detection_group_excerpt():
    leak_detection = {"LeakDetectorGroups": [{"GroupName": "CDU", "Detectors": [
        {"DeviceName": "Moisture", "DetectorState": "OK"}, {"DeviceName": "Overflow", "DetectorState": "Critical"}]}]}
    finding = only(node_with_redfish(leak_detection=leak_detection), "hardware.bmc_leak")
    assert finding["summary"] == "Liquid leak detected: Overflow (Critical)"


OLD_SEL = ("   1 | 01/10/26 | 10:00:00 GMT | Power Supply PSU2 Status | Failure detected | Asserted\n"
           "   2 | 01/10/26 | 10:05:00 GMT | Memory #0x2b | Uncorrectable ECC | Asserted\n"
           "   3 | 11/29/26 | 10:00:00 GMT | Event Logging Disabled #0x07 | Log area reset/cleared | Asserted\n")


def test_a_state_asserted_before_the_window_and_never_deasserted_is_still_open():
    sdr = HEALTHY_SDR.replace("PSU2 Status      | 72h | ok  | 10.2 | Presence detected\n", "")
    finding = only(node_with_bmc(sdr, OLD_SEL), "hardware.bmc_event_log")
    assert finding["severity"] == "critical" and finding["evidence"]["critical_in_window"] == 0
    assert [event["id"] for event in finding["evidence"]["open_before_window"]] == ["1"]  # not the one-time ECC error
    assert finding["summary"] == ("BMC event log: Power Supply PSU2 Status: Failure detected; still asserted since "
                                  "before the window: Power Supply PSU2 Status: Failure detected (2026-01-10T10:00:00Z)")


def test_an_old_open_state_the_sensors_read_healthy_is_no_finding():
    # the SDR's PSU2 Status reads present and healthy: the BMC did not log the deassertion
    assert findings_of(node_with_bmc(HEALTHY_SDR, OLD_SEL), "hardware.bmc_event_log") == []


def test_warning_records_still_asserted_are_a_warning():
    sel = ("   1 | 11/29/26 | 10:00:00 GMT | Memory #0x2b | Correctable ECC logging limit reached | Asserted\n"
           "   2 | 11/29/26 | 11:00:00 GMT | Temperature Inlet Temp | Upper Non-critical going high | Asserted\n"
           "   3 | 11/29/26 | 12:00:00 GMT | Temperature Inlet Temp | Upper Non-critical going high | Deasserted\n")
    finding = only(node_with_bmc(HEALTHY_SDR, sel), "hardware.bmc_event_log")
    assert finding["severity"] == "warning"
    assert finding["summary"] == ("1 warning BMC event-log record(s) still asserted: "
                                  "Memory #0x2b: Correctable ECC logging limit reached")


def test_warning_records_all_deasserted_are_no_finding():
    sel = ("   2 | 11/29/26 | 11:00:00 GMT | Temperature Inlet Temp | Upper Non-critical going high | Asserted\n"
           "   3 | 11/29/26 | 12:00:00 GMT | Temperature Inlet Temp | Upper Non-critical going high | Deasserted\n")
    assert findings_of(node_with_bmc(HEALTHY_SDR, sel), "hardware.bmc_event_log") == []
