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


def test_corpus_sel_get_verbose_record(corpus):
    (record,) = ipmi_sel.parse_sel(corpus.read_realdata("ipmitool-sel-get-0_hp-proliant-dl360-ilo_memory-ecc-limit_collegeboreal.txt"))
    assert (record["id"], record["time"], record["sensor"]) == ("0000", "2021-06-29T08:18:06Z", "Memory #0x2b")
    assert (record["event"], record["asserted"], record["severity"]) == ("Correctable ECC logging limit reached", True, "warning")


def test_corpus_supermicro_sel_list_twelve_hour_clock_with_zone(corpus):
    problems = []
    records = ipmi_sel.parse_sel(corpus.read_realdata(
        "ipmitool-sel-list_supermicro-h14shm_psu-presence-failure-ac-lost_issue-quote.txt"), problems)
    assert problems == []
    assert [record["time"] for record in records] == [
        "2025-11-11T13:22:53Z", "2025-11-11T13:22:53Z", "2025-11-11T13:22:54Z", "2025-11-11T13:22:54Z"]  # 01:22 PM WET
    assert [(record["sensor"], record["severity"]) for record in records] == [
        ("Power Supply #0xc0", "info"), ("Power Supply #0xc1", "info"), ("Power Supply #0xc1", "critical"),
        ("Power Supply #0xc1", "critical")]


def test_corpus_supermicro_sensor_thresholds_na(corpus):
    problems = []
    sensors = ipmi_sensors.parse_sdr(corpus.read_realdata(
        "ipmitool-sensor_supermicro-h14shm_fan-thresholds-lower-critical-only_issue-quote.txt"), problems)
    assert problems == []
    fans = ipmi_sensors.summarize_sensors(sensors)["fans"]
    assert [(fan["name"], fan["rpm"], fan["status"]) for fan in fans] == [
        ("FAN1", 8820.0, "ok"), ("FAN2", 8820.0, "ok"), ("FAN3", 8820.0, "ok")]
    assert not any(fan["failed"] or fan["slow"] or fan["no_reading"] for fan in fans)


def _prompted_outputs(text):
    """{command: output} of a capture that holds several commands, each after its "# ipmitool ..." prompt line."""
    outputs, command = {}, None
    for line in text.splitlines(True):
        if line.startswith("# ipmitool"):
            command = line[2:].strip()
            outputs[command] = ""
        elif command:
            outputs[command] += line
    return outputs


def test_corpus_supermicro_x9_sdr_and_sensor_fan_without_reading(corpus):
    outputs = _prompted_outputs(corpus.read_realdata(
        "ipmitool-sdr-and-sensor_supermicro-x9_fan1-no-reading-ns_cpu-temp-discrete_issue-quote.txt"))
    assert sorted(outputs) == ["ipmitool sdr", "ipmitool sensor"]
    for command, status in (("ipmitool sdr", "ns"), ("ipmitool sensor", "na")):
        problems = []
        sensors = ipmi_sensors.parse_sdr(outputs[command], problems)
        assert problems == []
        summary = ipmi_sensors.summarize_sensors(sensors)
        fan1 = by_name(summary["fans"], "FAN 1")
        assert (fan1["status"], fan1["rpm"], fan1["no_reading"], fan1["failed"]) == (status, None, True, False)
        assert by_name(summary["temperatures"], "System Temp")["celsius"] == 0.0  # no sensor wired: no verdict
        assert by_name(sensors, "CPU Temp")["kind"] == "temperature" and by_name(sensors, "CPU Temp")["reading"] is None
    assert len(ipmi_sensors.parse_sdr(outputs["ipmitool sdr"])) == 18


def test_corpus_dell_sdr_elist_all_disabled_sensors(corpus):
    sensors = ipmi_sensors.parse_sdr(corpus.read_realdata(
        "ipmitool-sdr-elist-all_dell-poweredge-model-unstated_many-disabled-ns-sensors_issue-quote.txt"))
    assert len(sensors) == 23
    summary = ipmi_sensors.summarize_sensors(sensors)
    assert summary["inlet_temperature_c"] == 19.0  # the one Ambient Temp that reads
    assert summary["power_supplies"] == [] and summary["fans"] == []  # power-supply temperatures are temperatures
    disabled = [sensor for sensor in sensors if sensor["status"] == "ns"]
    assert len(disabled) == 11 and all(sensor["states"] == ["Disabled"] for sensor in disabled)
    assert by_name(sensors, "CMOS Battery")["reading"] is None


# ---------------------------------------------------------------- formats and wordings of other BMCs

# `ipmitool sensor` as it prints a Supermicro power supply and redundancy sensor: the state is a bit mask
SENSOR_DISCRETE = """\
PS1 Status       | 0x1        | discrete   | 0x0100| na        | na        | na        | na        | na        | na
PS2 Status       | 0xb        | discrete   | 0x0b00| na        | na        | na        | na        | na        | na
PS Redundancy    | 0x2        | discrete   | 0x0200| na        | na        | na        | na        | na        | na
FAN5             | 300.000    | RPM        | cr    | na        | 500.000   | 700.000   | na        | 25300.000 | na
"""


def test_sensor_discrete_masks_are_read_as_states():
    summary = ipmi_sensors.summarize_sensors(ipmi_sensors.parse_sdr(SENSOR_DISCRETE))
    psus = {psu["name"]: psu for psu in summary["power_supplies"]}
    assert psus["PS1 Status"]["states"] == ["Presence detected"] and not psus["PS1 Status"]["failed"]
    assert psus["PS2 Status"]["states"] == ["Presence detected", "Failure detected", "Power Supply AC lost"]
    assert psus["PS2 Status"]["failed"] and psus["PS2 Status"]["ac_lost"]
    assert summary["redundancy"] == [{"name": "PS Redundancy", "group": "power_supply", "state": "lost",
                                      "text": "Redundancy Lost"}]
    assert by_name(summary["fans"], "FAN5")["failed"] is True


def test_redundancy_sensor_reading_ok_with_lost_asserted():
    # status ok, the state only in the text column: the text decides
    (group,) = ipmi_sensors.summarize_sensors(ipmi_sensors.parse_sdr(
        "PS Redundancy    | 77h | ok  | 19.1 | Redundancy Lost\n"))["redundancy"]
    assert group["state"] == "lost"


def test_fan_sensor_disabled_by_the_bmc_is_not_without_reading():
    (fan,) = ipmi_sensors.summarize_sensors(ipmi_sensors.parse_sdr("Fan5             | 34h | ns  | 29.5 | Disabled\n"))["fans"]
    assert (fan["no_reading"], fan["failed"]) == (False, False)


SDR_VERBOSE = """\
Sensor ID              : FAN1 (0x30)
 Entity ID             : 29.1 (Fan Device)
 Sensor Type (Threshold)  : Fan (0x04)
 Sensor Reading        : 6000 (+/- 0) RPM
 Status                : ok
 Lower critical        : 500.000

Sensor ID              : FAN2 (0x31)
 Entity ID             : 29.2 (Fan Device)
 Sensor Type (Threshold)  : Fan (0x04)
 Sensor Reading        : 400 (+/- 0) RPM
 Status                : Lower Critical

Sensor ID              : FAN4 (0x33)
 Entity ID             : 29.4 (Fan Device)
 Sensor Type (Threshold)  : Fan (0x04)
 Sensor Reading        : No Reading

Sensor ID              : PS Redundancy (0x73)
 Entity ID             : 10.1 (Power Supply)
 Sensor Type (Discrete): Power Supply (0x08)
 Sensor Reading        : 0h
 Event Message Control : Per-threshold
 States Asserted       : Redundancy State
                         [Redundancy Lost]
 Assertion Events      : Redundancy State
                         [Redundancy Lost]

Sensor ID              : PSU2 Status (0x72)
 Entity ID             : 10.2 (Power Supply)
 Sensor Type (Discrete): Power Supply (0x08)
 Sensor Reading        : 0h
 States Asserted       : Power Supply
                         [Presence detected]
                         [Failure detected]

Sensor ID              : Inlet Temp (0x04)
 Entity ID             : 55.1 (Front Panel Board)
 Sensor Type (Threshold)  : Temperature (0x01)
 Sensor Reading        : 27 (+/- 1) degrees C
 Status                : Upper Non-Critical
"""


def test_sdr_verbose_blocks():
    sensors = ipmi_sensors.parse_sdr(SDR_VERBOSE)
    assert [(sensor["name"], sensor["id"], sensor["kind"], sensor["status"]) for sensor in sensors] == [
        ("FAN1", "0x30", "fan", "ok"), ("FAN2", "0x31", "fan", "lcr"), ("FAN4", "0x33", "fan", "ns"),
        ("PS Redundancy", "0x73", "redundancy", "ok"), ("PSU2 Status", "0x72", "power_supply", "ok"),
        ("Inlet Temp", "0x04", "temperature", "unc")]
    summary = ipmi_sensors.summarize_sensors(sensors)
    assert [(fan["name"], fan["failed"], fan["no_reading"]) for fan in summary["fans"]] == [
        ("FAN1", False, False), ("FAN2", True, False), ("FAN4", False, True)]
    assert summary["redundancy"][0]["state"] == "lost"
    assert summary["power_supplies"][0]["failed"] is True and summary["power_supplies"][0]["present"] is True
    assert summary["inlet_temperature_c"] == 27.0


SEL_GET = """\
SEL Record ID          : 0042
 Record Type           : 02
 Timestamp             : 11/29/2026 21:13:50
 Generator ID          : 0020
 EvM Revision          : 04
 Sensor Type           : Power Supply
 Sensor Number         : c1
 Event Type            : Sensor-specific Discrete
 Event Direction       : Assertion Event
 Event Data (RAW)      : 01ffff
 Event Interpretation  : Missing
 Description           : Failure detected

Sensor ID              : PS2 Status (0xc1)
 Entity ID             : 10.2
 Sensor Type (Discrete): Power Supply
 States Asserted       : Power Supply
                         [Presence detected]

SEL Record ID          : 0043
 Record Type           : 02
 Timestamp             : 11/29/2026 21:20:00
 Sensor Type           : Power Supply
 Sensor Number         : c1
 Event Direction       : Deassertion Event
 Description           : Failure detected
"""


def test_sel_get_records_and_their_direction():
    records = ipmi_sel.parse_sel(SEL_GET)
    assert [(record["id"], record["time"], record["sensor"], record["asserted"]) for record in records] == [
        ("0042", "2026-11-29T21:13:50Z", "Power Supply #0xc1", True),
        ("0043", "2026-11-29T21:20:00Z", "Power Supply #0xc1", False)]
    assert records[0]["severity"] == "critical" and records[0]["cleared"] is True


@pytest.mark.parametrize("time_text, expected", [
    ("01:22:53 PM WET", "2025-11-11T13:22:53Z"),
    ("12:05:00 AM UTC", "2025-11-11T00:05:00Z"),
    ("12:05:00 PM", "2025-11-11T12:05:00Z"),
    ("09:00:00 CET", "2025-11-11T08:00:00Z"),
    ("09:00:00 PST", "2025-11-11T17:00:00Z"),
    ("09:00:00 +0530", "2025-11-11T03:30:00Z"),
    ("13:00:00 PM", None),
    ("09:00:00 XYZT", None),
])
def test_sel_times_in_other_clocks_and_zones(time_text, expected):
    assert ipmi_sel.record_time("11/11/2025", time_text) == expected


def test_sel_record_in_an_unknown_zone_is_kept_untimed_and_said():
    problems = []
    (record,) = ipmi_sel.parse_sel("   5 | 11/11/2025 | 01:22:53 PM XYZT | Fan #0x30 | Lower Critical going low | Asserted\n",
                                   problems)
    assert record["time"] is None and record["raw_time"] == "11/11/2025 01:22:53 PM XYZT"
    assert problems and "date in a form not read" in problems[0]


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
