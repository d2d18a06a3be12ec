"""ipmitool's sensor listings, event logs, SEL clock and DCMI power reading: the project's own samples in
ipmitool's formats, and every ipmitool capture of the public corpus read in place."""

import calendar

import pytest

from ansible_collections.gpufleet.core.plugins.module_utils import ipmi_sel, ipmi_sensors
from tests.support.bmc_samples import SDR_ELIST, SEL_ELIST

NOW = calendar.timegm((2026, 11, 30, 6, 0, 0))


def by_name(records, name):
    return next(record for record in records if record["name"] == name)


def test_sdr_elist_sensors_are_classified():
    sensors = ipmi_sensors.parse_sdr(SDR_ELIST)
    assert len(sensors) == 11
    kinds = {sensor["name"]: sensor["kind"] for sensor in sensors}
    assert kinds == {"Inlet Temp": "temperature", "Exhaust Temp": "temperature", "FAN1": "fan", "FAN2": "fan",
                     "FAN3": "fan", "FAN4": "fan", "Pwr Consumption": "power", "PSU1 Status": "power_supply",
                     "PSU2 Status": "power_supply", "PS Redundancy": "redundancy", "CPU1 VCORE": "voltage"}
    assert by_name(sensors, "FAN2")["reading"] == 400.0 and by_name(sensors, "FAN2")["status"] == "lcr"
    assert by_name(sensors, "FAN4")["reading"] is None


def test_sdr_summary_finds_the_faults():
    summary = ipmi_sensors.summarize_sensors(ipmi_sensors.parse_sdr(SDR_ELIST))
    fans = {fan["name"]: fan for fan in summary["fans"]}
    assert (fans["FAN1"]["failed"], fans["FAN1"]["slow"]) == (False, False)
    assert fans["FAN2"]["failed"] is True and fans["FAN2"]["rpm"] == 400.0
    assert (fans["FAN3"]["failed"], fans["FAN3"]["slow"]) == (False, True)
    assert fans["FAN4"]["failed"] is False  # no reading is not a stopped fan
    psus = {psu["name"]: psu for psu in summary["power_supplies"]}
    assert psus["PSU1 Status"]["failed"] is False and psus["PSU1 Status"]["present"] is True
    assert psus["PSU2 Status"]["failed"] is True and psus["PSU2 Status"]["ac_lost"] is True
    assert summary["redundancy"] == [{"name": "PS Redundancy", "group": "power_supply", "state": "lost",
                                      "text": "Redundancy Lost"}]
    assert summary["inlet_temperature_c"] == 41.0
    assert summary["exhaust_temperature_c"] == 52.0
    assert summary["power_draw_w"] == 2880.0 and summary["power_draw_source"] == "sdr:Pwr Consumption"


def test_healthy_sdr_has_no_fault():
    healthy = "FAN1 | 30h | ok | 29.1 | 6000 RPM\nPSU1 | 71h | ok | 10.1 | Presence detected\n" \
              "PS Redundancy | 73h | ok | 10.3 | Fully Redundant\n"
    summary = ipmi_sensors.summarize_sensors(ipmi_sensors.parse_sdr(healthy))
    assert not any(fan["failed"] or fan["slow"] for fan in summary["fans"])
    assert not any(psu["failed"] for psu in summary["power_supplies"])
    assert summary["redundancy"][0]["state"] == "redundant"


def test_garbage_sdr_gives_no_sensor():
    assert ipmi_sensors.parse_sdr("Error: Unable to establish IPMI v2 / RMCP+ session\n\x00\xff|") == []
    assert ipmi_sensors.parse_sdr(None) == []


def test_sel_elist_times_are_utc_and_severities_set():
    records = ipmi_sel.parse_sel(SEL_ELIST)
    assert [record["id"] for record in records] == ["1", "2", "3", "4", "5", "6", "7"]
    assert records[0]["time"] is None and records[0]["raw_time"] == "Pre-Init 0000011205"
    assert records[1]["time"] == "2026-11-29T21:13:50Z"
    assert records[1]["detail"] == "Reading 400 < Threshold 500 RPM"
    assert [record["severity"] for record in records] == [
        "critical", "critical", "critical", "warning", "warning", "critical", "critical"]
    assert records[3]["cleared"] is True and records[4]["asserted"] is False
    assert records[2]["cleared"] is False


def test_sel_window_keeps_recent_and_untimed_records():
    window = ipmi_sel.window_events(ipmi_sel.parse_sel(SEL_ELIST), NOW, 72)
    assert [event["id"] for event in window["events"]] == ["1", "2", "3", "4", "5", "6"]
    assert window["count"] == 6 and window["untimed"] == 1 and window["total_records"] == 7
    assert window["by_severity"] == {"critical": 4, "warning": 2, "info": 0}


def test_sel_window_bounds_what_it_keeps():
    lines = "".join("%4x | 11/30/26 | 05:%02d:00 GMT | Fan FAN1 | Lower Non-critical going low | Asserted\n"
                    % (number, number % 60) for number in range(1, 151))
    window = ipmi_sel.window_events(ipmi_sel.parse_sel(lines), NOW, 72)
    assert window["count"] == 150 and len(window["events"]) == ipmi_sel.MAX_SEL_EVENTS
    assert window["dropped"] == 50 and window["events"][-1]["id"] == "96"


@pytest.mark.parametrize("text, expected", [
    ("12/02/26 01:10:10 GMT\n", calendar.timegm((2026, 12, 2, 1, 10, 10))),
    ("01/18/2023 14:49:30\n", calendar.timegm((2023, 1, 18, 14, 49, 30))),
    ("S+ 03:10:07\n", None),
    ("", None),
])
def test_sel_clock(text, expected):
    assert ipmi_sel.parse_sel_clock(text) == expected


def test_dcmi_power_reading():
    text = ("    Instantaneous power reading:                  2710 Watts\n"
            "    Minimum during sampling period:                 96 Watts\n"
            "    Power reading state is:                   activated\n")
    assert ipmi_sensors.parse_dcmi_power(text) == 2710.0
    assert ipmi_sensors.parse_dcmi_power(text.replace("activated", "deactivated")) is None
    assert ipmi_sensors.parse_dcmi_power("DCMI request failed because: Invalid command (c1)") is None


# ---------------------------------------------------------------- the public corpus, read in place

def test_corpus_hp_sdr_elist_psu_failure_and_non_redundant(corpus):
    text = corpus.read_realdata("ipmitool-sdr-elist-full_hp-proliant-dl360-ilo_psu1-failed-ecc-limit_collegeboreal.txt")
    sensors = ipmi_sensors.parse_sdr(text)
    summary = ipmi_sensors.summarize_sensors(sensors)
    psus = {psu["name"]: psu for psu in summary["power_supplies"]}
    assert psus["Power Supply 1"]["failed"] is True and psus["Power Supply 1"]["watts"] == 0.0
    assert psus["Power Supply 2"]["failed"] is False and psus["Power Supply 2"]["watts"] == 95.0
    redundancy = {item["name"]: item for item in summary["redundancy"]}
    assert redundancy["Power Supplies"]["state"] == "non_redundant"
    assert redundancy["Power Supplies"]["group"] == "power_supply"
    assert redundancy["Fans"]["state"] == "redundant"
    fans = {fan["name"]: fan for fan in summary["fans"]}
    assert fans["Fan Block 1"]["percent"] == 21.56 and not fans["Fan Block 1"]["failed"]
    assert by_name(sensors, "Temp 4")["status"] == "ns"
    assert by_name(sensors, "Temp 1")["reading"] == 20.0


def test_corpus_planar_sdr_three_columns(corpus):
    sensors = ipmi_sensors.parse_sdr(corpus.read_realdata("ipmitool-sdr_planar-sensors_v1-3col_telegraf.txt"))
    assert len(sensors) == 133
    summary = ipmi_sensors.summarize_sensors(sensors)
    assert summary["inlet_temperature_c"] == 20.0  # "Ambient Temp"
    assert summary["power_draw_w"] == 210.0  # "Avg Power"
    rpm = {fan["name"]: fan["rpm"] for fan in summary["fans"] if fan["rpm"] is not None}
    assert rpm["Fan 1A Tach"] == 2610.0 and len(rpm) == 6
    assert not any(fan["failed"] for fan in summary["fans"])
    assert sum(1 for sensor in sensors if sensor["status"] == "ns") == 2


def test_corpus_sel_bus_fatal_deasserted(corpus):
    records = ipmi_sel.parse_sel(corpus.read_realdata("ipmitool-sel-list_critical-interrupt-bus-fatal-deasserted_gcm.txt"))
    assert [(record["severity"], record["asserted"]) for record in records] == [("warning", True), ("critical", False)]
    assert records[1]["time"] == "2023-01-18T14:49:30Z" and records[1]["event"] == "Bus Fatal Error"


def test_corpus_sel_ecc_logging_limit(corpus):
    records = ipmi_sel.parse_sel(corpus.read_realdata("ipmitool-sel-list_hp-proliant-dl360-ilo_memory-ecc-limit_collegeboreal.txt"))
    assert [record["time"] for record in records] == ["2021-06-29T08:18:06Z", "2021-11-03T15:01:48Z"]
    assert {record["severity"] for record in records} == {"warning"}


def test_corpus_sel_ps2_left_failed(corpus):
    records = ipmi_sel.parse_sel(corpus.read_realdata(
        "ipmitool-sel-elist_qumulo-node_ps-failure-chassis-intrusion_qumulo-snmp-agent.txt"))
    assert len(records) == 21 and records[9]["id"] == "a"
    open_failures = [record for record in records if record["severity"] == "critical" and record["asserted"]
                     and not record["cleared"]]
    assert [(record["id"], record["sensor"]) for record in open_failures] == [("e", "Power Supply PS2 Status")]
    assert records[-1]["event"] == "" and records[-1]["severity"] == "info"  # Session Audit
    intrusions = [record for record in records if "intrusion" in record["event"]]
    assert len(intrusions) == 9 and {record["severity"] for record in intrusions} == {"warning"}


def test_corpus_sel_ac_lost_then_restored(corpus):
    records = ipmi_sel.parse_sel(corpus.read_realdata("ipmitool-sel-elist_qumulo-node_ps1-ac-lost-restored_qumulo-snmp-agent.txt"))
    assert records[0]["severity"] == "info"  # log area reset/cleared
    ac = [record for record in records if record["event"] == "Power Supply AC lost"]
    assert [record["asserted"] for record in ac] == [False, True, False]
    assert ac[1]["cleared"] is True and ac[1]["time"] == "2018-03-01T19:24:21Z"


def test_corpus_sel_flapping_supplies(corpus):
    records = ipmi_sel.parse_sel(corpus.read_realdata("ipmitool-sel-elist_qumulo-node_ps1-ps2-failure-flapping_qumulo-snmp-agent.txt"))
    assert len(records) == 26
    still_open = {record["sensor"] for record in records if record["asserted"] and not record["cleared"]
                  and record["severity"] == "critical"}
    assert still_open == set()  # the last record of each supply is a deassertion, as upstream's test expects
    assert records[2]["sensor"] == "Unknown #0xc4" and records[2]["severity"] == "info"


def test_corpus_sel_get_is_not_an_elist(corpus):
    assert ipmi_sel.parse_sel(corpus.read_realdata("ipmitool-sel-get-0_hp-proliant-dl360-ilo_memory-ecc-limit_collegeboreal.txt")) == []


def test_corpus_dcmi_power_reading(corpus):
    assert ipmi_sensors.parse_dcmi_power(corpus.read_realdata("ipmitool-dcmi-power-reading_telegraf.txt")) == 167.0


def test_component_sensors_are_not_the_room():
    text = ("PSU1 Inlet Temp  | 60h | ok  | 10.1 | 44 degrees C\n"
            "GPU1 Inlet Temp  | 61h | ok  | 41.1 | 51 degrees C\n"
            "Inlet Temp       | 04h | ok  | 55.1 | 23 degrees C\n"
            "PSU1 Fan         | 62h | ok  | 10.1 | 8400 RPM\n"
            "PSU1 Power       | 63h | ok  | 10.1 | 610 Watts\n")
    sensors = ipmi_sensors.parse_sdr(text)
    assert [sensor["kind"] for sensor in sensors] == ["temperature", "temperature", "temperature", "fan", "power_supply"]
    assert ipmi_sensors.summarize_sensors(sensors)["inlet_temperature_c"] == 23.0


def test_hostile_bmc_text_is_data():
    sel = "   1 | 11/29/26 | 21:13:50 GMT | Fan \x1b[31mFAN2 | Lower Critical going low | Asserted | %s\n" % ("x" * 5000)
    (record,) = ipmi_sel.parse_sel(sel)
    assert record["sensor"] == "Fan \\x1b[31mFAN2" and len(record["detail"]) == ipmi_sensors.MAX_FIELD
    (sensor,) = ipmi_sensors.parse_sdr("FAN\x07 | 30h | ok | 29.1 | 6000 RPM\n")
    assert sensor["name"] == "FAN\\x07" and sensor["reading"] == 6000.0
