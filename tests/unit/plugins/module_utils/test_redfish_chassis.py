"""Redfish documents in the shape of the bmc facts: the project's own documents in the DMTF schemas (legacy Power and
Thermal, PowerSubsystem, ThermalMetrics, EnvironmentMetrics, LeakDetection, Sensors, LogEntry), and every Redfish
chassis document of the corpus read in place."""

import json

import pytest

from ansible_collections.gpufleet.core.plugins.module_utils.redfish_chassis import (
    is_leaking, parse_log_entries, summarize_redfish)
from tests.support.redfish_samples import POWER, THERMAL


def test_own_documents_give_the_faults():
    bmc = summarize_redfish(POWER, THERMAL)
    fans = {fan["name"]: fan for fan in bmc["fans"]}
    assert sorted(fans) == ["Fan 1", "Fan 3", "Fan 4"]
    assert (fans["Fan 1"]["failed"], fans["Fan 1"]["slow"]) == (False, False)
    assert fans["Fan 3"]["failed"] is True and fans["Fan 3"]["rpm"] == 900.0
    assert (fans["Fan 4"]["slow"], fans["Fan 4"]["percent"], fans["Fan 4"]["status"]) == (True, 41.0, "nc")
    supplies = {psu["name"]: psu for psu in bmc["power_supplies"]}
    assert sorted(supplies) == ["PSU (0)", "PSU (1)", "PSU (2)"]
    assert supplies["PSU (1)"]["failed"] is True and supplies["PSU (2)"]["present"] is False
    assert bmc["redundancy"] == [{"name": "PSU Redundancy", "group": "power_supply", "state": "lost",
                                  "text": "Critical, mode N+m"}]
    assert (bmc["inlet_temperature_c"], bmc["exhaust_temperature_c"]) == (37.0, 58.0)
    assert (bmc["power_draw_w"], bmc["power_draw_source"]) == (6120.0, "redfish")
    assert len(bmc["sensors"]) == 9


def test_garbage_documents_give_nothing():
    bmc = summarize_redfish({"PowerSupplies": "nope", "PowerControl": [{"PowerConsumedWatts": True}]}, ["x"])
    assert (bmc["fans"], bmc["power_supplies"], bmc["power_draw_w"], bmc["inlet_temperature_c"]) == ([], [], None, None)


def load(corpus, name):
    return json.loads(corpus.read_realdata(name))


def test_corpus_dell_idrac9(corpus):
    bmc = summarize_redfish(load(corpus, "redfish-chassis-power_dell-idrac9-poweredge_telegraf.json"),
                            load(corpus, "redfish-chassis-thermal_dell-idrac9-poweredge_telegraf.json"))
    assert bmc["power_draw_w"] == 429.0
    assert [(psu["name"], psu["failed"], psu["watts"]) for psu in bmc["power_supplies"]] == [("PS1 Status", False, None)]
    assert len(bmc["fans"]) == 16 and not any(fan["failed"] or fan["slow"] for fan in bmc["fans"])
    assert bmc["fans"][0] == {"name": "System Board Fan1A", "rpm": 17760.0, "percent": None, "status": "ok",
                              "failed": False, "slow": False, "no_reading": False}
    assert bmc["redundancy"] == [{"name": "System Board Fan Redundancy", "group": "fan", "state": "redundant",
                                  "text": "OK, mode N+m"}]
    assert bmc["inlet_temperature_c"] is None  # the trimmed document keeps only CPU1 Temp
    assert bmc["temperatures"] == [{"name": "CPU1 Temp", "celsius": 40.0, "status": "ok"}]


def test_corpus_hpe_ilo5(corpus):
    bmc = summarize_redfish(load(corpus, "redfish-chassis-power_hpe-ilo5-proliant-gen10_telegraf.json"),
                            load(corpus, "redfish-chassis-thermal_hpe-ilo5-proliant-gen10_telegraf.json"))
    assert bmc["power_draw_w"] == 221.0
    assert [(psu["name"], psu["watts"], psu["failed"]) for psu in bmc["power_supplies"]] == [
        ("HpeServerPowerSupply (0)", 0.0, False), ("HpeServerPowerSupply (1)", 90.0, False)]
    assert bmc["redundancy"][0]["group"] == "power_supply" and bmc["redundancy"][0]["state"] == "redundant"
    assert [fan["percent"] for fan in bmc["fans"]] == [23.0, 23.0, 23.0]
    assert bmc["inlet_temperature_c"] == 19.0  # 01-Inlet Ambient, PhysicalContext Intake


def test_corpus_orv3_power_shelf_supplies(corpus):
    bmc = summarize_redfish(power_supplies=load(corpus, "redfish-powersupplies-expanded_orv3-powershelf-delta-6psu_lambda.json"))
    assert [psu["name"] for psu in bmc["power_supplies"]] == ["PowerSupplyUnit %d" % number for number in range(1, 7)]
    assert not any(psu["failed"] or not psu["present"] for psu in bmc["power_supplies"])


# ---------------------------------------------------------------- the newer model, Status semantics, the SEL

def test_corpus_thermal_failed_fan_still_enabled_and_degraded_redundancy(corpus):
    bmc = summarize_redfish(thermal=load(
        corpus, "redfish-thermal_expansion-enclosure_fan2-0rpm-critical_fan-redundancy-warning_dmtf-mockup.json"))
    assert [(fan["name"], fan["rpm"], fan["failed"]) for fan in bmc["fans"] if fan["failed"]] == [("System Fan 2", 0.0, True)]
    assert bmc["redundancy"] == [{"name": "System Fans", "group": "fan", "state": "degraded", "text": "Warning, mode N+m"}]
    assert bmc["inlet_temperature_c"] == 24.0


def test_corpus_thermal_health_ok_decides_over_thresholds(corpus):
    bmc = summarize_redfish(thermal=load(corpus, "redfish-thermal_catfish-ocp_board-temp-above-noncritical-health-ok_dmtf-mockup.json"))
    board = next(item for item in bmc["temperatures"] if item["name"] == "Board Temp")
    assert board == {"name": "Board Temp", "celsius": 35.0, "status": "ok"}  # above its 30 C, yet the BMC says OK
    assert not any(fan["failed"] or fan["slow"] for fan in bmc["fans"])  # fan thresholds of 42 RPM are not read as alarms
    assert bmc["redundancy"][0]["state"] == "redundant"


def test_corpus_power_supply_in_warning_is_degraded(corpus):
    bmc = summarize_redfish(power=load(corpus, "redfish-power_tower_psu-bay1-warning_dmtf-mockup.json"))
    supplies = {psu["name"]: psu for psu in bmc["power_supplies"]}
    assert (supplies["Power Supply Bay 1"]["predictive_failure"], supplies["Power Supply Bay 1"]["failed"]) == (True, False)
    assert supplies["Power Supply Bay 2"]["predictive_failure"] is False
    assert bmc["redundancy"][0]["state"] == "redundant" and bmc["power_draw_w"] == 926.0


def test_corpus_power_subsystem_redundancy_offline_with_health_ok(corpus):
    bmc = summarize_redfish(power_subsystem=load(
        corpus, "redfish-powersubsystem_rackmount-1u_redundancy-unavailableoffline_dmtf-mockup.json"))
    assert bmc["redundancy"] == [{
        "name": "PowerSupplyRedundancy 0", "group": "power_supply", "state": "lost",
        "text": "OK, UnavailableOffline, 1 active of 2 needed for fault tolerance, mode Failover"}]


def test_corpus_thermal_metrics_summary(corpus):
    bmc = summarize_redfish(thermal_metrics=load(corpus, "redfish-thermalmetrics_rackmount-1u_intake-exhaust-summary_dmtf-mockup.json"))
    assert (bmc["inlet_temperature_c"], bmc["exhaust_temperature_c"]) == (24.8, 40.5)


def test_corpus_environment_metrics_power_and_fans(corpus):
    bmc = summarize_redfish(environment_metrics=load(corpus, "redfish-environmentmetrics_rackmount-1u_374w-powerlimit-fans_dmtf-mockup.json"))
    assert (bmc["power_draw_w"], bmc["power_draw_source"]) == (374.0, "redfish")
    assert [(fan["name"], fan["percent"], fan["rpm"], fan["failed"]) for fan in bmc["fans"]] == [
        ("Chassis Fan #1", 45.0, 1900.0, False), ("Chassis Fan #2", 55.0, 2100.0, False)]


def test_corpus_leak_detection_groups_ok(corpus):
    bmc = summarize_redfish(leak_detection=load(corpus, "redfish-leakdetection_cdu-leak-detector-groups-ok_dmtf-mockup.json"))
    assert [(item["name"], item["state"]) for item in bmc["leak_detectors"]] == [
        ("Moisture Leak Detector", "OK"), ("Fluid Level Overflow", "OK")]
    assert not any(is_leaking(item) for item in bmc["leak_detectors"])


def test_corpus_leak_detector_leak_detected(corpus):
    bmc = summarize_redfish(leak_detectors=[load(corpus, "redfish-leakdetector_chassis0-manifold-moisture-leakdetected-critical_lambda.json")])
    assert bmc["leak_detectors"] == [{"name": "Chassis 0 LeakDetector 1 Manifold", "type": "Moisture",
                                      "state": "LeakDetected", "health": "Critical"}]
    assert is_leaking(bmc["leak_detectors"][0])


def test_corpus_power_shelf_all_standby_is_no_failure(corpus):
    bmc = summarize_redfish(power_supplies=load(corpus, "redfish-powersupplies-expanded_liteon-powershelf-6psu-all-standby_lambda.json"))
    assert len(bmc["power_supplies"]) == 6
    assert {(psu["present"], psu["failed"], psu["predictive_failure"], psu["offline"]) for psu in bmc["power_supplies"]} == {
        (True, False, False, False)}
    assert bmc["power_supplies"][0]["states"] == ["Standby", "OK"]


def test_corpus_gpu_headroom_sensor_is_no_temperature(corpus):
    bmc = summarize_redfish(sensors=[load(corpus, "redfish-sensor_hgx-gpu0-temp1-tlimit-headroom_lambda.json")])
    assert bmc["temperatures"] == [] and bmc["inlet_temperature_c"] is None


def test_corpus_sel_log_entries_and_their_next_page(corpus):
    records, next_link = parse_log_entries(load(corpus, "redfish-logentries-sel_catfish-ocp_2x-temperature-upper-critical_dmtf-mockup.json"))
    assert next_link == "/redfish/v1/Systems/1/LogServices/SEL/Entries?$skiptoken=2"
    assert [(record["id"], record["time"], record["severity"], record["asserted"]) for record in records] == [
        ("1", "2012-03-07T14:44:00Z", "critical", True), ("2", "2012-03-07T14:45:00Z", "critical", True)]
    assert records[0]["event"] == "Temperature threshold exceeded" and records[0]["detail"] == "Upper Critical - going high"


def test_supply_states_disabled_unavailable_absent_standby():
    power = {"PowerSupplies": [
        {"Name": "A", "Status": {"State": "Disabled", "Health": "OK"}},
        {"Name": "B", "Status": {"State": "UnavailableOffline"}},
        {"Name": "C", "Status": {"State": "Absent"}},
        {"Name": "D", "Status": {"State": "StandbySpare", "Health": "OK"}},
        {"Name": "E", "Status": {"State": "Enabled", "Health": "Critical"}, "PowerOutputWatts": {"Reading": "12"}},
    ]}
    supplies = {psu["name"]: psu for psu in summarize_redfish(power=power)["power_supplies"]}
    assert [name for name, psu in sorted(supplies.items()) if psu["offline"]] == ["A", "B"]
    assert supplies["C"]["present"] is False and not supplies["C"]["failed"]
    assert not (supplies["D"]["offline"] or supplies["D"]["failed"])
    assert supplies["E"]["failed"] is True and supplies["E"]["watts"] == 12.0  # a number written as a string


def test_redundancy_group_states():
    power = {"Redundancy": [
        {"Name": "standby-offline", "Status": {"State": "StandbyOffline", "Health": "OK"}},
        {"Name": "disabled", "Status": {"State": "Disabled"}},
        {"Name": "critical", "Status": {"State": "Enabled", "Health": "Critical"}},
        {"Name": "absent", "Status": {"State": "Absent"}},
        {"Name": "short", "Status": {"State": "Enabled", "Health": "OK"}, "MinNeededForFaultTolerance": 3,
         "ActiveRedundancyGroup": [{}, {}]},
        {"Name": "fine", "Status": {"State": "Enabled", "Health": "OK"}},
    ]}
    states = {item["name"]: item["state"] for item in summarize_redfish(power=power)["redundancy"]}
    assert states == {"standby-offline": "lost", "disabled": "non_redundant", "critical": "lost",
                      "short": "non_redundant", "fine": "redundant"}


def test_fan_without_reading_and_legacy_values_first():
    thermal = {"Fans": [{"Name": "Fan 7", "Status": {"State": "Enabled", "Health": "OK"}},
                        {"Name": "Fan 8", "Status": {"State": "Disabled"}}],
               "Temperatures": [{"Name": "Front Inlet", "ReadingCelsius": 21, "Status": {"Health": "OK"}}]}
    metrics = {"TemperatureSummaryCelsius": {"Intake": {"Reading": 30}, "Exhaust": {"Reading": 44}}}
    bmc = summarize_redfish(thermal=thermal, thermal_metrics=metrics)
    assert [(fan["name"], fan["no_reading"]) for fan in bmc["fans"]] == [("Fan 7", True), ("Fan 8", False)]
    assert (bmc["inlet_temperature_c"], bmc["exhaust_temperature_c"]) == (21.0, 44.0)


def test_sensor_resources_give_temperatures():
    sensors = [{"Name": "Intake", "ReadingType": "Temperature", "Reading": 23.5, "PhysicalContext": "Intake",
                "Status": {"Health": "Warning"}},
               {"Name": "Delta", "ReadingType": "Temperature", "ReadingBasis": "Delta", "Reading": 9},
               {"Name": "Watts", "ReadingType": "Power", "Reading": 300}]
    bmc = summarize_redfish(sensors=sensors)
    assert bmc["temperatures"] == [{"name": "Intake", "celsius": 23.5, "status": "nc"}]
    assert bmc["inlet_temperature_c"] == 23.5


@pytest.mark.parametrize("entry, expected", [
    ({"Id": "7", "Created": "2024-05-01T10:00:00+02:00", "Severity": "Warning", "Message": "Fan low",
      "EntryCode": "Deassert", "Resolved": True}, ("2024-05-01T08:00:00Z", "warning", False, True)),
    ({"Id": "8", "Created": "2024-05-01T10:00:00.123-05:00", "Severity": "OK", "Message": "Log cleared"},
     ("2024-05-01T15:00:00Z", "info", True, False)),
    ({"Id": "9", "Created": "yesterday", "Severity": "Critical", "Message": "PSU failure"},
     (None, "critical", True, False)),
])
def test_log_entry_wordings(entry, expected):
    (record,), _next = parse_log_entries({"Members": [entry]})
    assert (record["time"], record["severity"], record["asserted"], record["cleared"]) == expected


def test_garbage_log_collection_gives_nothing():
    assert parse_log_entries(["x"]) == ([], None)
    assert parse_log_entries({"Members": "nope", "@odata.nextLink": 5}) == ([], None)
