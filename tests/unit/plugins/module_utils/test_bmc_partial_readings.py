"""BMC output cut mid-line or printed in another locale is a partial reading that says what was not read: never a
complete reading with values silently missing, and never half a line read as a state."""

import pytest

from ansible_collections.gpufleet.core.plugins.module_utils import bmc_collect
from ansible_collections.gpufleet.core.plugins.module_utils.facts_model import new_facts
from tests.support.bmc_samples import SDR_ELIST, SEL_ELIST, answering_host, key


def collect(overrides):
    facts = new_facts()
    bmc = bmc_collect.collect_bmc_in_band(answering_host(overrides), facts, 72, 10)
    return bmc, facts


def reasons(bmc, call):
    return [error["reason"] for error in bmc["errors"] if error["call"] == call]


def test_a_complete_answer_is_a_complete_reading():
    bmc, facts = collect({})
    assert bmc["status"] == "complete" and bmc["errors"] == [] and facts["errors"] == []


def test_sdr_cut_mid_line_leaves_the_half_line_out_and_says_so():
    cut = SDR_ELIST + "FAN5             | 34h | ok  | 29.5 | Transition"
    bmc, facts = collect({key("sdr", "elist"): {"rc": 0, "stdout": cut}})
    assert bmc["status"] == "partial"
    assert reasons(bmc, "ipmitool sdr elist") == [
        "output cut mid-line: 'FAN5             | 34h | ok  | 29.5 | Transition' not read"]
    assert "FAN5" not in [fan["name"] for fan in bmc["fans"]]
    assert bmc["reasons"] == ["ipmitool sdr elist: " + reasons(bmc, "ipmitool sdr elist")[0]]
    assert [error["call"] for error in facts["errors"]] == ["ipmitool sdr elist"]


def test_sdr_reading_with_a_decimal_comma_is_null_and_said():
    german = SDR_ELIST.replace("| 41 degrees C", "| 41,5 degrees C")
    bmc, _facts = collect({key("sdr", "elist"): {"rc": 0, "stdout": german}})
    assert bmc["status"] == "partial" and bmc["inlet_temperature_c"] is None
    inlet = [sensor for sensor in bmc["sensors"] if sensor["name"] == "Inlet Temp"][0]
    assert (inlet["kind"], inlet["reading"], inlet["unit"], inlet["states"]) == ("temperature", None, "degrees C", [])
    assert reasons(bmc, "ipmitool sdr elist") == [
        "reading '41,5 degrees C' of sensor 'Inlet Temp' has a decimal comma (another locale): not read"]


def test_sdr_lines_of_another_shape_are_counted():
    odd = SDR_ELIST + "FAN6 | 35h | ok | 29.6\n"
    bmc, _facts = collect({key("sdr", "elist"): {"rc": 0, "stdout": odd}})
    assert reasons(bmc, "ipmitool sdr elist") == [
        "1 lines of another shape than ipmitool's sensor listing, not read, for example 'FAN6 | 35h | ok | 29.6'"]


def test_sel_cut_mid_line_and_dates_of_another_locale_are_said():
    german = SEL_ELIST.replace("11/30/26 | 02:00:00 GMT", "30.11.2026 | 02:00:00") + \
        "   8 | 11/30/26 | 03:00:00 GMT | Power Supply PSU1 Status | Failure det"
    bmc, _facts = collect({key("sel", "elist"): {"rc": 0, "stdout": german}})
    assert bmc["status"] == "partial"
    assert reasons(bmc, "ipmitool sel elist") == [
        "output cut mid-line: '8 | 11/30/26 | 03:00:00 GMT | Power Supply PSU1 Status | Failure det' not read",
        "1 records with a date in a form not read (another locale?), kept without a time, for example "
        "'6 | 30.11.2026 | 02:00:00 | Memory #0x2b | Uncorrectable ECC | Asserted'"]
    assert "8" not in [event["id"] for event in bmc["sel"]["events"]]
    record = [event for event in bmc["sel"]["events"] if event["id"] == "6"][0]
    assert (record["time"], record["raw_time"]) == (None, "30.11.2026 02:00:00")


def test_pre_init_records_are_no_locale_problem():
    bmc, _facts = collect({})
    assert bmc["sel"]["untimed"] == 1 and reasons(bmc, "ipmitool sel elist") == []


@pytest.mark.parametrize("call, answer, expected", [
    (("sel", "time", "get"), "30.11.2026 06:00:42\n",
     "clock '30.11.2026 06:00:42' in a form not read (another locale?)"),
    (("dcmi", "power", "reading"), "    Instantaneous power reading:               2710,5 Watts\n"
                                   "    Power reading state is:                   activated\n",
     "power reading '2710,5 Watts' not read"),
])
def test_clock_and_power_in_another_locale_are_said(call, answer, expected):
    bmc, _facts = collect({key(*call): {"rc": 0, "stdout": answer}})
    assert bmc["status"] == "partial"
    assert reasons(bmc, "ipmitool " + " ".join(call)) == [expected]
    assert bmc["clock_offset_s"] is None if call[0] == "sel" else bmc["power_draw_source"] == "sdr:Pwr Consumption"
