"""The bmc subset on simulated hosts: a host without an IPMI device, one without ipmitool, one where ipmitool
may not open the device, one whose BMC answers; and the LAN arguments, which never carry the password."""

from ansible_collections.gpufleet.core.plugins.module_utils import bmc_collect
from ansible_collections.gpufleet.core.plugins.module_utils.collector import Collection
from ansible_collections.gpufleet.core.plugins.module_utils.facts_model import new_facts
from ansible_collections.gpufleet.core.plugins.module_utils.host_io import ReplayHost, command_key
from tests.support.bmc_samples import IPMITOOL, answering_host, key

PERMISSION = "Could not open device at /dev/ipmi0 or /dev/ipmi/0 or /dev/ipmidev/0: Permission denied"


def test_host_without_ipmi_device_has_no_bmc_and_no_error():
    facts = new_facts()
    bmc = bmc_collect.collect_bmc_in_band(ReplayHost({"dirs": {"/dev": ["null"]}}), facts, 72, 10)
    assert bmc["status"] == "no_device" and bmc["errors"] == [] and facts["errors"] == []


def test_device_without_ipmitool_is_an_error_entry():
    facts = new_facts()
    host = ReplayHost({"dirs": {"/dev/ipmi": ["0"]}, "bins": {}})
    bmc = bmc_collect.collect_bmc_in_band(host, facts, 72, 10)
    assert bmc["status"] == "failed"
    assert facts["errors"] == [{"gpu": None, "call": "ipmitool", "code": None,
                                "reason": "ipmitool is not installed, though /dev/ipmi/0 is there"}]


def test_permission_denied_is_an_error_entry_not_a_failure():
    denied = {"rc": 1, "stdout": "", "stderr": PERMISSION}
    facts = new_facts()
    host = answering_host({key("sdr", "elist"): denied, key("sel", "elist"): denied})
    bmc = bmc_collect.collect_bmc_in_band(host, facts, 72, 10)
    assert bmc["status"] == "failed" and bmc["sel"] is None and bmc["fans"] == []
    assert [error["call"] for error in facts["errors"]] == ["ipmitool sdr elist", "ipmitool sel elist"]
    assert PERMISSION in facts["errors"][0]["reason"]


def test_answering_bmc_fills_sensors_event_log_and_clock():
    facts = new_facts()
    bmc = bmc_collect.collect_bmc_in_band(answering_host(), facts, 72, 10)
    assert bmc["status"] == "complete" and facts["errors"] == []
    assert bmc["clock_offset_s"] == 42
    assert bmc["power_draw_w"] == 2880.0 and bmc["power_draw_source"] == "sdr:Pwr Consumption"
    assert [fan["name"] for fan in bmc["fans"] if fan["failed"]] == ["FAN2"]
    assert bmc["sel"]["count"] == 6 and bmc["sel"]["window_hours"] == 72
    assert bmc["sel"]["events"][1]["time"] == "2026-11-29T21:13:50Z"
    assert len(bmc["sensors"]) == 11 and bmc["sensors_left_out"] == 0


def test_sel_unreadable_alone_is_partial():
    facts = new_facts()
    host = answering_host({key("sel", "elist"): {"rc": None, "stdout": "", "timed_out": True}})
    bmc = bmc_collect.collect_bmc_in_band(host, facts, 72, 10)
    assert bmc["status"] == "partial" and bmc["inlet_temperature_c"] == 41.0
    assert bmc["reasons"] == ["ipmitool sel elist: timed out and was killed"]


def test_dcmi_reading_wins_over_the_sensor():
    facts = new_facts()
    dcmi = {"rc": 0, "stdout": "Instantaneous power reading: 2710 Watts\nPower reading state is: activated\n"}
    bmc = bmc_collect.collect_bmc_in_band(answering_host({key("dcmi", "power", "reading"): dcmi}), facts, 72, 10)
    assert (bmc["power_draw_w"], bmc["power_draw_source"]) == (2710.0, "dcmi")


def test_lan_arguments_name_the_password_file_never_the_password():
    argv = bmc_collect.lan_arguments("10.0.0.7", "admin", "/tmp/pw-file", port=6230, cipher_suite=17)
    assert argv == ["-I", "lanplus", "-H", "10.0.0.7", "-p", "6230", "-U", "admin", "-f", "/tmp/pw-file", "-C", "17"]


def test_reader_scrubs_secrets_from_error_texts():
    host = ReplayHost({"commands": {command_key([IPMITOOL, "-Z", "sdr", "elist"]): {
        "rc": 1, "stdout": "", "stderr": "bad password hunter2"}}})
    _text, reason = bmc_collect.BmcReader(host, IPMITOOL, secrets=["hunter2"]).run(["sdr", "elist"])
    assert "hunter2" not in reason and "********" in reason


def test_bmc_subset_through_the_collection():
    facts, _recorded = Collection(source="nvidia_smi", gather_subset=["bmc"], host=answering_host()).run()
    assert facts["gather_subset"] == ["bmc"]
    assert facts["bmc"]["source"] == "in_band" and facts["bmc"]["redundancy"][0]["state"] == "lost"
    assert facts["kubernetes"] is None


def test_a_hung_bmc_is_asked_nothing_more():
    facts = new_facts()
    hung = {"rc": None, "stdout": "", "timed_out": True}
    host = answering_host({key("sdr", "elist"): hung})
    bmc = bmc_collect.collect_bmc_in_band(host, facts, 72, 10)
    assert bmc["status"] == "failed"
    assert [error["reason"] for error in bmc["errors"]] == [
        "timed out and was killed", "not asked: an earlier ipmitool command timed out"]


def test_the_sel_window_ends_at_the_bmcs_own_clock():
    """The BMC's clock is 10 h behind the host's: its record of 11/29 21:13:50 is 8 h 46 min old on the BMC's clock,
    inside a 12 h window, though 18 h 46 min before the host's now."""
    behind = {key("sel", "time", "get"): {"rc": 0, "stdout": "11/29/26 20:00:00 GMT\n"}}
    facts = new_facts()
    bmc = bmc_collect.collect_bmc_in_band(answering_host(behind), facts, 12, 10)
    assert bmc["clock_offset_s"] == -36000
    assert [event["id"] for event in bmc["sel"]["events"]] == ["1", "2", "3", "4", "5", "6"]
    # a BMC 10 h ahead (16:00 on its clock): its records of 02:00 and before are more than 12 h old
    ahead = {key("sel", "time", "get"): {"rc": 0, "stdout": "11/30/26 16:00:00 GMT\n"}}
    bmc = bmc_collect.collect_bmc_in_band(answering_host(ahead), new_facts(), 12, 10)
    assert [event["id"] for event in bmc["sel"]["events"]] == ["1"]
