"""Kernel logs in the other common file formats (RFC 5424, "YYYY-MM-DD HH:MM:SS,mmm", ISO 8601 with a zone)
are read; NVRM lines in a format the reader does not know are counted and reported, never dropped silently."""

import pynvml
import pytest

from ansible_collections.gpufleet.core.plugins.module_utils import collector
from ansible_collections.gpufleet.core.plugins.module_utils.facts_model import new_facts
from ansible_collections.gpufleet.core.plugins.module_utils.host_io import ReplayHost
from ansible_collections.gpufleet.core.plugins.module_utils.kernel_log import (
    UnplacedLines, collect_kernel_log, parse_kernel_log)
from tests.support.kernel_log_builders import NOW, utc_zone  # noqa: F401  pylint: disable=unused-import
from simulator.nvml_sim import SimulatedNvmlLibrary, scenario_h100_node
from tests.support.schema_check import assert_valid_facts

XID_109 = ("NVRM: Xid (PCI:0000:cb:00): 109, pid=1797828, name=pt_main_thread, "
           "Ch 00000008, errorString CTX SWITCH TIMEOUT, Info 0x58005")


@pytest.mark.parametrize("prefix, expected", [
    # RFC 5424 as rsyslog's RSYSLOG_SyslogProtocol23Format and syslog-ng write it
    ("<4>1 2026-11-30T11:11:12.123456+01:00 gpu-0 kernel - - - ", "2026-11-30T10:11:12.123456Z"),
    ("<4>1 2026-11-30T10:11:12Z gpu-0 kernel - - [meta sequenceId=\"7\"] ", "2026-11-30T10:11:12Z"),
    ("<4>1 2026-11-30T10:11:12Z gpu-0 kernel - - - \ufeff", "2026-11-30T10:11:12Z"),
    ("<4>1 - gpu-0 kernel - - - ", None),
    # "YYYY-MM-DD HH:MM:SS,mmm", with and without the host name
    ("2026-11-30 10:11:12,345 gpu-0 kernel: ", "2026-11-30T10:11:12.345000Z"),
    ("2026-11-30 10:11:12,345 kernel: ", "2026-11-30T10:11:12.345000Z"),
    ("2026-11-30 10:11:12,345 gpu-0 kernel[-]: ", "2026-11-30T10:11:12.345000Z"),
    # ISO 8601 with a zone of hours only, and dmesg --time-format=iso
    ("2026-11-30T12:11:12+02 gpu-0 kernel: ", "2026-11-30T10:11:12Z"),
    ("2026-11-30T05:11:12-05 gpu-0 kernel: ", "2026-11-30T10:11:12Z"),
    ("2026-11-30T11:11:12,123456+01:00 ", "2026-11-30T10:11:12.123456Z"),
])
def test_other_file_formats_are_read(prefix, expected):
    unplaced = UnplacedLines()
    xids = parse_kernel_log(prefix + XID_109, now=NOW, unplaced=unplaced)[0]
    assert [(xid["xid"], xid["time"], xid["pid"]) for xid in xids] == [(109, expected, 1797828)]
    assert unplaced.count == 0


def test_rfc5424_line_of_another_sender_is_no_event_and_not_unplaced():
    unplaced = UnplacedLines()
    text = "<14>1 2026-11-30T10:11:12Z gpu-0 myjob 4242 - - " + XID_109
    assert parse_kernel_log(text, now=NOW, unplaced=unplaced) == ([], [])
    assert unplaced.count == 0


UNKNOWN_FORMAT = [
    "30.11.2026 10:11:12 gpu-0 kernel: " + XID_109,
    "2026-11-30 10:11:12,345 [kernel] " + XID_109,
    "Nov 30 2026 10:11:12 gpu-0 kernel: " + XID_109,
]


def test_lines_of_an_unknown_format_are_counted_with_an_example():
    unplaced = UnplacedLines()
    text = "\n".join(["Nov 30 10:11:12 gpu-0 kernel: " + XID_109, "Nov 30 10:11:13 gpu-0 systemd[1]: Started."]
                     + UNKNOWN_FORMAT)
    xids = parse_kernel_log(text, now=NOW, unplaced=unplaced)[0]
    assert [xid["time"] for xid in xids] == ["2026-11-30T10:11:12Z"]
    assert (unplaced.count, unplaced.example) == (3, UNKNOWN_FORMAT[0])


def test_collection_reports_unplaced_lines_in_the_facts_and_errors():
    text = "\n".join(["2026-11-30T10:11:12+0000 gpu-0 kernel: " + XID_109] + UNKNOWN_FORMAT)
    host = ReplayHost({"now": NOW, "bins": {"journalctl": "/usr/bin/journalctl"},
                       "commands": {"journalctl _TRANSPORT=kernel -o short-iso --no-pager --since=-72h":
                                    {"rc": 0, "stdout": text}}})
    facts = new_facts()
    facts["collected_at"] = "2026-11-30T12:00:00Z"
    assert collect_kernel_log(host, facts) == "journalctl"
    assert_valid_facts(facts)
    assert [xid["xid"] for xid in facts["xid_events"]] == [109]
    assert facts["kernel_log"]["unplaced_lines"] == 3
    assert [(error["call"], error["reason"]) for error in facts["errors"]] == [
        ("kernel log", "3 lines naming NVRM or SXid are in a format the kernel log reader does not know and were not read, "
                       "for example: " + UNKNOWN_FORMAT[0])]


def test_a_log_without_unknown_lines_reports_none():
    host = ReplayHost({"now": NOW, "bins": {"journalctl": "/usr/bin/journalctl"},
                       "commands": {"journalctl _TRANSPORT=kernel -o short-iso --no-pager --since=-72h":
                                    {"rc": 0, "stdout": "Nov 30 10:11:12 gpu-0 kernel: " + XID_109}}})
    facts = new_facts()
    facts["collected_at"] = "2026-11-30T12:00:00Z"
    collect_kernel_log(host, facts)
    assert facts["kernel_log"]["unplaced_lines"] == 0 and facts["errors"] == []


@pytest.mark.corpus
def test_dmesg_decode_iso_capture_gives_its_seventeen_xids(corpus):
    """`dmesg --decode --time-format=iso` puts "kern  :warn  : " before the time; INDEX.md: 16 Xid 13 and an
    Xid 43 on 0000:38:00."""
    unplaced = UnplacedLines()
    text = corpus.read_realdata("dmesg-decode-iso_xid13-43-and-oom-kill-variants_gpud.log")
    xids = parse_kernel_log(text, now=NOW, unplaced=unplaced)[0]
    assert sorted(set((xid["xid"], xid["pci_bus_id"]) for xid in xids)) == [(13, "0000:38:00.0"), (43, "0000:38:00.0")]
    assert [xid["xid"] for xid in xids].count(13) == 16 and len(xids) == 17
    assert xids[0]["time"] == "2025-01-21T04:41:44.283302Z"
    assert unplaced.count == 0


def test_pstore_priority_before_the_raw_time_is_read():
    xids = parse_kernel_log("<4>[ 1126.635824] " + XID_109, now=NOW, boot_time=NOW - 2000)[0]
    assert [(xid["xid"], xid["time"]) for xid in xids] == [(109, "2026-11-30T11:45:26.635824Z")]


def test_unplaced_lines_make_the_collection_partial_on_a_gpu_host():
    """An Xid among lines of an unknown format would be missed: the host is not a clean bill."""
    text = "\n".join(["2026-11-30T10:11:12+0000 gpu-0 kernel: " + XID_109] + UNKNOWN_FORMAT)
    host = ReplayHost({"now": NOW, "bins": {"journalctl": "/usr/bin/journalctl"},
                       "commands": {"journalctl _TRANSPORT=kernel -o short-iso --no-pager --since=-72h":
                                    {"rc": 0, "stdout": text}}})
    facts = collector.Collection(host=host, source="nvml", gather_subset=["min", "kernel_log"], pynvml=pynvml,
                                 kernel_log_source="journalctl",
                                 nvml_library=SimulatedNvmlLibrary(scenario_h100_node(1))).run()[0]
    assert_valid_facts(facts)
    assert facts["collection"] == {"status": "partial", "reasons": [
        "kernel log: 3 lines naming NVRM or SXid in a format not read (an Xid among them would be missed)"]}
