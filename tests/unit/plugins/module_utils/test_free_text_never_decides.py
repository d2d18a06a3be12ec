"""No free text decides a verdict: each parser reads a state from the field that carries it, never from a
substring of a whole document or element. Every trigger word of a verdict is put into every free-text field
of a healthy input (a process's name, a product name, a serial, a sensor's name ...) and the reading stays
healthy."""

import json
import time

import pytest

from ansible_collections.gpufleet.core.plugins.module_utils.facts_model import new_facts
from ansible_collections.gpufleet.core.plugins.module_utils.host_io import ReplayHost
from ansible_collections.gpufleet.core.plugins.module_utils.ipmi_sel import parse_sel
from ansible_collections.gpufleet.core.plugins.module_utils.ipmi_sensors import parse_sdr, summarize_sensors
from ansible_collections.gpufleet.core.plugins.module_utils.journal_scan import scan_journal
from ansible_collections.gpufleet.core.plugins.module_utils.kernel_log import parse_kernel_log
from ansible_collections.gpufleet.core.plugins.module_utils.nvsmi_xml import (
    collect_nvidia_smi, parse_nvidia_smi_xml)
from ansible_collections.gpufleet.core.plugins.module_utils.redfish_chassis import summarize_redfish
from tests.support.nvsmi_samples import SYNTHETIC

# The words that make a verdict somewhere in the project: a lost GPU, a GPU off the bus, an Xid, a failed
# reading, a failed power supply or fan, a critical SEL record.
TRIGGERS = (
    "GPU is lost",
    "[GPU is lost]",
    "Unable to determine the device handle for GPU 0000:3B:00.0: Unknown Error",
    "\nUnable to determine the device handle for GPU 0000:5E:00.0: GPU is lost\n",
    "NVRM: GPU 0000:3b:00.0: GPU has fallen off the bus.",
    "NVRM: Xid (PCI:0000:3b:00): 79, pid=1, name=x, GPU has fallen off the bus.",
    "Unknown Error",
    "ERR!",
    "Failure detected",
    "Redundancy Lost",
    "Uncorrectable ECC | Asserted",
    "Power Supply AC lost",
)

# nvidia-smi -q -x: the texts in the report that a process, the vendor or the owner chose.
NVSMI_FREE_TEXT = {
    "process_name": ("<process_name>python3</process_name>", "<process_name>%s</process_name>"),
    "product_name": ("<product_name>NVIDIA H100 80GB HBM3</product_name>", "<product_name>%s</product_name>"),
    "serial": ("<uuid>", "<serial>%s</serial>\n    <uuid>"),
    "board_part_number": ("<uuid>", "<board_part_number>%s</board_part_number>\n    <uuid>"),
    "vbios_version": ("<uuid>", "<vbios_version>%s</vbios_version>\n    <uuid>"),
}


def _xml_escaped(text):
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _nvsmi_with(field, trigger):
    anchor, replacement = NVSMI_FREE_TEXT[field]
    assert anchor in SYNTHETIC
    return SYNTHETIC.replace(anchor, replacement % _xml_escaped(trigger), 1)


@pytest.mark.parametrize("trigger", TRIGGERS)
@pytest.mark.parametrize("field", sorted(NVSMI_FREE_TEXT))
def test_nvidia_smi_gpu_is_not_lost_by_free_text(field, trigger):
    text = _nvsmi_with(field, trigger)
    assert [gpu["lost"] for gpu in parse_nvidia_smi_xml(text)["gpus"]] == [False]
    facts = new_facts()
    facts["collected_at"] = "2026-01-01T00:00:00Z"
    host = ReplayHost({"bins": {"nvidia-smi": "/usr/bin/nvidia-smi"},
                       "commands": {"nvidia-smi -q -x": {"rc": 0, "stdout": text, "stderr": ""}}})
    assert collect_nvidia_smi(host, facts, timeout=5) is True
    assert [(gpu["pci_bus_id"], gpu["lost"]) for gpu in facts["gpus"]] == [("0000:3b:00.0", False)]
    assert [error for error in facts["errors"] if error["gpu"] is not None] == []


def test_nvidia_smi_lost_value_in_a_state_field_still_marks_the_gpu_lost():
    text = SYNTHETIC.replace("<fan_speed>[Not Supported]</fan_speed>", "<fan_speed>[GPU is lost]</fan_speed>")
    assert [gpu["lost"] for gpu in parse_nvidia_smi_xml(text)["gpus"]] == [True]


def _one_line(triggers):
    """The triggers that fit in a column of a one-line record (no line break, no column separator)."""
    return [trigger for trigger in triggers if "\n" not in trigger and "|" not in trigger]


# ---------------------------------------------------------------- kernel log

KERNEL_TRIGGERS = TRIGGERS + (
    "NVRM: API mismatch: the client has the version 550.90.07, but this kernel module has the version 535.54.03.",
)
# Each free-text field of a kernel log line, around a healthy Xid 13 of a job (the one event expected).
KERNEL_FREE_TEXT = {
    "process name of an Xid": "Nov 30 10:11:12 gpu-0 kernel: NVRM: Xid (PCI:0000:cb:00): 13, pid=4242, name=%s, "
                              "Graphics Exception",
    "message of another sender": "Nov 30 10:11:13 gpu-0 trainer[4242]: %s",
    "unit description quoted by systemd": "Nov 30 10:11:14 gpu-0 systemd[1]: Started %s.",
    "command line quoted by the kernel": "Nov 30 10:11:15 gpu-0 kernel: audit: type=1400 comm=\"python3\" "
                                         "cmdline=\"%s\"",
    "RFC 5424 message of another app": "<14>1 2026-11-30T10:11:16Z gpu-0 trainer 4242 - - %s",
}


@pytest.mark.parametrize("trigger", _one_line(KERNEL_TRIGGERS))
@pytest.mark.parametrize("field", sorted(KERNEL_FREE_TEXT))
def test_kernel_log_events_come_only_from_kernel_messages(field, trigger, monkeypatch):
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    xid_13 = KERNEL_FREE_TEXT["process name of an Xid"] % "python3"
    text = "\n".join([xid_13, KERNEL_FREE_TEXT[field] % trigger.replace(",", ";")
                      if field == "process name of an Xid" else KERNEL_FREE_TEXT[field] % trigger])
    now = 1796032800.0  # 2026-11-30T10:00:00Z
    xids, kernel = parse_kernel_log(text, now=now)
    assert sorted(set(xid["xid"] for xid in xids)) == [13]
    assert kernel == []


# ---------------------------------------------------------------- BMC: sensors and event log

SEL_TRIGGERS = TRIGGERS + ("Uncorrectable ECC", "Bus Fatal Error", "Machine Check", "Thermal Trip", "IERR",
                           "Critical going high", "Non-Recoverable", "Predictive Failure", "Chassis Intrusion")


@pytest.mark.parametrize("trigger", _one_line(SEL_TRIGGERS))
@pytest.mark.parametrize("field", ["sensor", "detail"])
def test_sel_severity_comes_from_the_event_column(field, trigger):
    sensor = "System Event %s" % trigger if field == "sensor" else "System Event #0x01"
    detail = " | %s" % trigger if field == "detail" else ""
    text = "   1 | 11/29/26 | 21:13:50 GMT | %s | Timestamp Clock Sync | Asserted%s\n" % (sensor, detail)
    records = parse_sel(text)
    assert [(record["event"], record["severity"]) for record in records] == [("Timestamp Clock Sync", "info")]


@pytest.mark.parametrize("trigger", _one_line(SEL_TRIGGERS))
def test_sdr_states_come_from_the_reading_column_not_the_sensor_name(trigger):
    name = trigger[:16]
    text = ("FAN1 %s | 30h | ok  | 29.1 | 6000 RPM\n"
            "PSU1 %s | 71h | ok  | 10.1 | Presence detected\n"
            "PS Redundancy %s | 73h | ok  | 10.3 | Fully Redundant\n") % (name, name, name)
    summary = summarize_sensors(parse_sdr(text))
    assert [(fan["failed"], fan["slow"]) for fan in summary["fans"]] == [(False, False)]
    assert [(psu["failed"], psu["ac_lost"], psu["predictive_failure"], psu["present"])
            for psu in summary["power_supplies"]] == [(False, False, False, True)]
    assert [group["state"] for group in summary["redundancy"]] == ["redundant"]


# ---------------------------------------------------------------- a service's journal

JOURNAL_TRIGGERS = TRIGGERS + ("CUDA out of memory", "an illegal memory access was encountered", "NCCL error",
                               "Watchdog caught collective operation timeout", "Traceback (most recent call last)",
                               "killed by the OOM killer", "Failed with result 'oom-kill'")


def _journal_entry(message, pid, comm):
    return json.dumps({"__REALTIME_TIMESTAMP": "1796032800000000", "_PID": str(pid), "_COMM": comm,
                       "SYSLOG_IDENTIFIER": comm, "UNIT": "trainer.service", "_SYSTEMD_UNIT": "trainer.service",
                       "MESSAGE": message})


@pytest.mark.parametrize("trigger", _one_line(JOURNAL_TRIGGERS))
def test_a_unit_description_quoted_by_systemd_counts_no_failure(trigger):
    text = "\n".join([_journal_entry("Started %s." % trigger, 1, "systemd"),
                      _journal_entry("trainer.service: Consumed 2min CPU time, %s." % trigger, 1, "systemd")])
    assert {kind: match["count"] for kind, match in scan_journal(text)["matches"].items() if match["count"]} == {}


@pytest.mark.parametrize("systemds_message", ["trainer.service: A process of this unit has been killed by the OOM "
                                              "killer.", "trainer.service: Failed with result 'oom-kill'."])
def test_a_service_printing_systemds_words_is_no_oom_kill_of_its_unit(systemds_message):
    scan = scan_journal(_journal_entry(systemds_message, 4242, "python3"))
    assert scan["matches"]["oom_killed"]["count"] == 0
    assert scan_journal(_journal_entry(systemds_message, 1, "systemd"))["matches"]["oom_killed"]["count"] == 1


# ---------------------------------------------------------------- Redfish

@pytest.mark.parametrize("trigger", SEL_TRIGGERS)
@pytest.mark.parametrize("field", ["Name", "FanName", "MemberId", "Model", "Manufacturer"])
def test_redfish_states_come_from_status_not_names(field, trigger):
    def item(name, **values):
        return dict({"Status": {"State": "Enabled", "Health": "OK"}, "Name": name}, **dict(values, **{field: trigger}))
    thermal = {"Fans": [item("Fan 1", Reading=9000, ReadingUnits="RPM")]}
    power = {"PowerSupplies": [item("PSU 1", LastPowerOutputWatts=800)],
             "Redundancy": [item("PSU Redundancy", Mode="N+m")]}
    bmc = summarize_redfish(power, thermal)
    assert [(fan["failed"], fan["slow"]) for fan in bmc["fans"]] == [(False, False)]
    assert [(psu["failed"], psu["ac_lost"], psu["predictive_failure"]) for psu in bmc["power_supplies"]] == [
        (False, False, False)]
    assert [group["state"] for group in bmc["redundancy"]] == ["redundant"]
