"""NVSwitch errors (SXid lines of the nvidia-nvswitch driver) and the GPC/TPC/SM of Xid 13 and 31, read from
real kernel lines (the public corpus) and from the project's own lines in the format the driver prints."""

import pytest

from ansible_collections.gpufleet.core.plugins.module_utils.facts_model import new_facts
from ansible_collections.gpufleet.core.plugins.module_utils.host_io import ReplayHost
from ansible_collections.gpufleet.core.plugins.module_utils.kernel_log import (
    EventBounds, UnplacedLines, collect_kernel_log, parse_kernel_log, read_kernel_events)
from tests.support.schema_check import assert_valid_facts
from tests.support.kernel_log_builders import NOW, utc_zone  # noqa: F401  pylint: disable=unused-import

JOURNALCTL = "journalctl _TRANSPORT=kernel -o short-iso --no-pager --since=-72h"

# One fatal error as the driver prints it: the line with Fatal and the link, its severity line, its data line;
# then a non-fatal one (the line quoted in NVIDIA/nvtrust#124) and an Xid 74 on a GPU two seconds later.
FATAL_THEN_NONFATAL = "".join(line + "\n" for line in [
    "2026-11-30T10:00:00+0000 hgx-01 kernel: nvidia-nvswitch2: "
    "SXid (PCI:0000:15:00.0): 20034, Fatal, Link 30 LTSSM Fault Up",
    "2026-11-30T10:00:00+0000 hgx-01 kernel: nvidia-nvswitch2: "
    "SXid (PCI:0000:15:00.0): 20034, Severity 5 Engine instance 30 Sub-engine instance 00",
    "2026-11-30T10:00:00+0000 hgx-01 kernel: nvidia-nvswitch2: "
    "SXid (PCI:0000:15:00.0): 20034, Data {0x50610002, 0x10100030, 0x00000000}",
    "2026-11-30T10:00:01+0000 hgx-01 kernel: nvidia-nvswitch3: "
    "SXid (PCI:0000:04:00.0): 22013, Non-fatal, Link 44 Minion Link DLREQ interrupt",
    "2026-11-30T10:00:02+0000 hgx-01 kernel: "
    "NVRM: Xid (PCI:0000:3b:00): 74, pid='<unknown>', name=<unknown>, NVLink: fatal error detected on link 3(0x0, 0x0, 0x10000, 0x0, 0x0, 0x0, 0x0)",
])


def test_the_lines_of_one_sxid_become_one_event_with_its_fatality_link_and_data():
    xids, kernel, sxids = read_kernel_events(FATAL_THEN_NONFATAL, now=NOW)
    assert [e["xid"] for e in xids] == [74] and kernel == []
    assert sxids == [
        {"sxid": 20034, "device": "nvidia-nvswitch2", "pci_bus_id": "0000:15:00.0", "time": "2026-11-30T10:00:00Z",
         "fatal": True, "link": 30, "data": "{0x50610002, 0x10100030, 0x00000000}",
         "message": "Fatal, Link 30 LTSSM Fault Up; Severity 5 Engine instance 30 Sub-engine instance 00"},
        {"sxid": 22013, "device": "nvidia-nvswitch3", "pci_bus_id": "0000:04:00.0", "time": "2026-11-30T10:00:01Z",
         "fatal": False, "link": 44, "data": None, "message": "Non-fatal, Link 44 Minion Link DLREQ interrupt"}]


def test_parse_kernel_log_keeps_sxids_out_of_the_gpu_events():
    xids, kernel = parse_kernel_log(FATAL_THEN_NONFATAL, now=NOW)
    assert [e["xid"] for e in xids] == [74]
    assert kernel == []


def test_the_same_sxid_again_is_a_second_event():
    twice = "\n".join([FATAL_THEN_NONFATAL.splitlines()[0]] * 2 + [FATAL_THEN_NONFATAL.splitlines()[2]] * 2)
    sxids = read_kernel_events(twice, now=NOW)[2]
    assert [(e["sxid"], e["fatal"], e["data"] is not None) for e in sxids] == [
        (20034, True, False), (20034, True, True), (20034, None, True)]


def test_a_placeholder_address_and_noise_of_the_switch_driver_do_not_break_the_reader():
    text = ("kernel: nvidia-nvswitch1: SXid (PCI:...): 12028, Non-fatal, Link 11 (...)\n"
            "[   13.653383] nvidia-nvswitch: Probing device 0000:80:1d.0, Vendor Id = 0x10de, Device Id = 0x1af1 \n"
            "6,3968,206764317,-;nvidia-nvswitch3: open (major=510)\n")
    sxids = read_kernel_events(text, now=NOW)[2]
    assert [(e["sxid"], e["pci_bus_id"], e["fatal"], e["link"]) for e in sxids] == [(12028, None, False, 11)]


def test_sxid_events_are_collected_bounded_and_valid_in_the_facts():
    lines = FATAL_THEN_NONFATAL.splitlines()[3:4] * 12
    host = ReplayHost({"now": NOW, "bins": {"journalctl": "/usr/bin/journalctl"},
                       "commands": {JOURNALCTL: {"rc": 0, "stdout": "\n".join(lines) + "\n"}}})
    facts = new_facts()
    facts.update(collected_at="2026-11-30T12:00:00Z", source="nvml", nvidia_present=True, gather_subset=["kernel_log"])
    assert collect_kernel_log(host, facts, source="journalctl", window_hours=72) == "journalctl"
    assert len(facts["sxid_events"]) == 10
    group = [g for g in facts["kernel_log"]["groups"] if g["kind"] == "sxid"]
    assert [(g["sxid"], g["xid"], g["pci_bus_id"], g["count"], g["kept"]) for g in group] == [
        (22013, None, "0000:04:00.0", 12, 10)]
    assert facts["kernel_log"]["kept"] == 10 and facts["kernel_log"]["events"] == 12
    assert facts["xid_events"] == [] and facts["kernel_events"] == []
    assert_valid_facts(facts)


def test_event_bounds_keep_sxid_groups_apart_from_kernel_events():
    bounds = EventBounds()
    bounds.add_all(*read_kernel_events(FATAL_THEN_NONFATAL, now=NOW))
    xids, kernel, summary = bounds.result()
    assert [e["xid"] for e in xids] == [74] and kernel == []
    assert [e["sxid"] for e in bounds.sxid_events()] == [20034, 22013]
    assert [g["kind"] for g in summary["groups"]] == ["xid", "sxid", "sxid"]


@pytest.mark.corpus
def test_real_sxid_line_of_gpud_338_is_read(corpus):
    """The line gpud's diagnose quoted (it prefixes the kernel line with 'line '): dmesg --decode, a Data line."""
    text = corpus.read_realdata("kernel-nvswitch-sxid-and-nvlink-xid145-137_issue-quotes.txt")
    quoted = [line[len("line "):] for line in text.splitlines() if line.startswith("line kern")]
    sxids = read_kernel_events("\n".join(quoted), now=NOW)[2]
    assert sxids == [{
        "sxid": 12028, "device": "nvidia-nvswitch1", "pci_bus_id": "0000:84:00.0",
        "time": "2025-01-25T10:34:54.859532Z", "fatal": None, "link": None,
        "data": "{0x000001c0, 0x00bd5c8a, 0x00000500, 0x00000064, 0x00000000, 0x40008000, 0x5a001100, "
                "0x00000000, 0x00000000}",
        "message": "Data {0x000001c0, 0x00bd5c8a, 0x00000500, 0x00000064, 0x00000000, 0x40008000, 0x5a001100, "
                   "0x00000000, 0x00000000}"}]


@pytest.mark.corpus
def test_real_switch_probe_and_open_lines_are_no_sxids(corpus):
    for name in ("kmsg_nvswitch_open_gpud.log", "kernel-nvswitch-sxid-and-nvlink-xid145-137_issue-quotes.txt"):
        xids, kernel, sxids = read_kernel_events(corpus.read_realdata(name), now=NOW)
        assert sxids == [], name


# --- GPC, TPC and SM of Xid 13 and 31 -------------------------------------------------------

@pytest.mark.corpus
def test_real_xid_13_lines_carry_their_gpc_tpc_and_sm(corpus):
    text = corpus.read_realdata("dmesg-decode-iso_xid13-43-and-oom-kill-variants_gpud.log")
    xids = parse_kernel_log(text, now=NOW)[0]
    thirteen = [e for e in xids if e["xid"] == 13]
    located = [(e["gpc"], e["tpc"], e["sm"]) for e in thirteen if e["gpc"] is not None]
    assert located[:3] == [(8, 5, 1), (9, 1, 1), (9, 1, 1)]
    assert len(located) == 10 and len(thirteen) == 16
    esr = [e for e in thirteen if e["message"].startswith("Graphics Exception: ESR")]
    assert esr and all((e["gpc"], e["tpc"], e["sm"]) == (None, None, None) for e in esr)
    forty_three = [e for e in xids if e["xid"] == 43]
    assert forty_three and all("gpc" not in e for e in forty_three)


def test_xid_31_with_an_sm_location_and_an_mmu_fault_without_one():
    text = ("NVRM: Xid (PCI:000d:00:00): 31, pid=3234, Graphics SM Warp Exception on (GPC 2, TPC 2, SM 1): "
            "Out Of Range Address\n"
            "NVRM: Xid (PCI:0000:0a:00): 31, pid=13332, name=cuda_plot_k32_v, Ch 00000010, intr 00000000. MMU Fault: "
            "ENGINE GRAPHICS GPCCLIENT_T1_8 faulted @ 0x7f29_5b8c9000. Fault is of type FAULT_PDE\n")
    xids = parse_kernel_log(text, now=NOW)[0]
    assert [(e["xid"], e["pid"], e["gpc"], e["tpc"], e["sm"]) for e in xids] == [
        (31, 3234, 2, 2, 1), (31, 13332, None, None, None)]


SXID_MESSAGE = "nvidia-nvswitch3: SXid (PCI:0000:04:00.0): 22013, Non-fatal, Link 44 Minion Link DLREQ interrupt"


@pytest.mark.parametrize("line, time_text", [
    ("2026-11-30T10:00:01+0000 hgx-01 kernel: " + SXID_MESSAGE, "2026-11-30T10:00:01Z"),  # journalctl short-iso
    ("Nov 30 10:00:01 hgx-01 kernel: [ 7386.259769] " + SXID_MESSAGE, "2026-11-30T10:00:01Z"),  # syslog
    ("[Mon Nov 30 10:00:01 2026] " + SXID_MESSAGE, "2026-11-30T10:00:01Z"),  # dmesg --ctime
    ("kern  :err   : 2026-11-30T10:00:01,000000+00:00 " + SXID_MESSAGE, "2026-11-30T10:00:01Z"),  # dmesg --decode
    ("<3>1 2026-11-30T10:00:01Z hgx-01 kernel - - - " + SXID_MESSAGE, "2026-11-30T10:00:01Z"),  # RFC 5424
    ("3,4011,7386259769,-;" + SXID_MESSAGE, "7386.259769"),  # /dev/kmsg, no boot time
    (SXID_MESSAGE, None),  # a bare line
])
def test_sxid_lines_are_read_in_every_format_xids_are(line, time_text):
    (event,) = read_kernel_events(line + "\n", now=NOW)[2]
    assert (event["sxid"], event["time"], event["link"], event["fatal"]) == (22013, time_text, 44, False)


def test_an_sxid_quoted_by_another_sender_is_no_event():
    line = "2026-11-30T10:00:01+0000 hgx-01 myscript[42]: " + SXID_MESSAGE
    assert read_kernel_events(line + "\n", now=NOW)[2] == []


def test_numbers_no_integer_field_can_hold_are_not_read_as_sxids_or_locations():
    huge = "9" * 30
    text = ("nvidia-nvswitch1: SXid (PCI:0000:84:00.0): %s, Fatal, Link %s x\n"
            "nvidia-nvswitch1: SXid (PCI:0000:84:00.0): 12028, Fatal, Link %s x\n"
            "NVRM: Xid (PCI:0000:3b:00): 13, pid=1, name=a, Graphics SM Warp Exception on (GPC %s, TPC 1, SM 0): y\n"
            % (huge, huge, huge, huge))
    xids, _kernel, sxids = read_kernel_events(text, now=NOW)
    assert [(e["sxid"], e["link"]) for e in sxids] == [(12028, None)]
    assert [(e["gpc"], e["tpc"], e["sm"]) for e in xids] == [(None, None, None)]


@pytest.mark.corpus
def test_sxid_lines_of_an_unknown_format_are_counted_never_dropped_silently(corpus):
    """gpud#338 quotes the kernel line behind its own 'line ' prefix and in its JSON log record: neither is a
    format the reader knows, so both are counted as unplaced with the first as the example."""
    text = corpus.read_realdata("kernel-nvswitch-sxid-and-nvlink-xid145-137_issue-quotes.txt")
    unplaced = UnplacedLines()
    sxids = read_kernel_events(text, now=NOW, unplaced=unplaced)[2]
    assert sxids == []
    assert unplaced.count == 2
    assert unplaced.example.startswith("line kern  :err   : 2025-01-25T10:34:54,859532+00:00 nvidia-nvswitch1: SXid")
    assert unplaced.describe().startswith("2 lines naming NVRM or SXid are in a format the kernel log reader does not")
