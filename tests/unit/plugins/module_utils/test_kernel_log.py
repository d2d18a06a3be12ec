"""Kernel log parsing and collection, driven by the real NVRM lines and the example lines of the Xid
catalog in the public corpus (tests marked corpus), and by the project's own lines (here and in
tests/unit/plugins/module_utils/test_kernel_log_samples.py)."""

import functools
import time

import pytest
import yaml
from hypothesis import given, settings, strategies as st

from ansible_collections.gpufleet.core.plugins.module_utils.facts_model import new_facts
from ansible_collections.gpufleet.core.plugins.module_utils.host_io import ReplayHost
from ansible_collections.gpufleet.core.plugins.module_utils.kernel_log import (
    collect_kernel_log, parse_kernel_log)
from tests.support.corpus import read_realdata, read_reference
from tests.support.schema_check import assert_valid_facts
from tests.support.kernel_log_builders import NOW, facts_with_events, utc_epoch, utc_zone  # noqa: F401  pylint: disable=unused-import

NVRM_FILE = "kernel-log_nvrm_lines_part1.txt"
KMSG_FILES = ("kmsg_nvidia-peermem_errors_gpud.log", "kmsg_nvswitch_open_gpud.log")


@functools.lru_cache(maxsize=None)
def _blocks():
    """The realdata file's blocks, keyed by the '## repo#number' header."""
    blocks = {}
    name = None
    for line in read_realdata(NVRM_FILE).splitlines():
        if line.startswith("## "):
            name = line[3:].split(" ")[0]
            blocks[name] = []
        elif name is not None:
            blocks[name].append(line)
    return dict((key, "\n".join(lines)) for key, lines in blocks.items())


def _catalog_examples():
    return yaml.safe_load(read_reference("xid_catalog.yaml"))["log_format"]["examples"]


# --- the realdata blocks, one format each ------------------------------------------------

@pytest.mark.corpus
def test_dmesg_ctime_block_gives_its_four_xids_and_skips_peermem_noise():
    xids, kernel = parse_kernel_log(_blocks()["leptonai/gpud#46"], now=NOW)
    assert [e["xid"] for e in xids] == [13, 13, 13, 109]
    assert kernel == []
    assert set(e["pci_bus_id"] for e in xids) == {"0000:cb:00.0"}
    first, last = xids[0], xids[3]
    assert first["time"] == "2024-08-30T11:43:09Z"
    assert first["pid"] is None and first["process_name"] is None
    assert first["message"] == "Graphics SM Warp Exception on (GPC 7, TPC 7, SM 0): Illegal Instruction Parameter"
    assert xids[2]["message"].startswith("Graphics Exception: ESR 0x57c730=0xc04000b")
    assert last["time"] == "2024-08-30T11:43:14Z"
    assert last["pid"] == 1797828
    assert last["process_name"] == "pt_main_thread"
    assert last["message"] == "Ch 00000008, errorString CTX SWITCH TIMEOUT, Info 0x58005"
    assert_valid_facts(facts_with_events(xids, kernel))


@pytest.mark.corpus
def test_bare_lines_without_prefix_keep_unknown_time():
    xids = parse_kernel_log(_blocks()["leptonai/gpud#1174"], now=NOW, window_seconds=3600)[0]
    assert [(e["pci_bus_id"], e["xid"]) for e in xids] == [
        ("0019:01:00.0", 149), ("0000:00:00.0", 149), ("0018:01:00.0", 145), ("0000:9b:00.0", 94)]
    assert all(e["time"] is None for e in xids)
    assert xids[0]["pid"] is None and xids[0]["message"].startswith("NETIR Fatal XC0 i0 Link -1 (0x000fe406")
    assert (xids[3]["pid"], xids[3]["process_name"], xids[3]["message"]) == (1234, "python3", "Contained ECC error")


@pytest.mark.corpus
def test_kernel_prefix_lines_with_caused_by_suffix():
    xids = parse_kernel_log(_blocks()["NVIDIA/open-gpu-kernel-modules#1150"], now=NOW)[0]
    assert len(xids) == 7
    assert all(e["xid"] == 45 and e["process_name"] == "python3" for e in xids)
    assert [(e["pci_bus_id"], e["pid"]) for e in xids[:4]] == [
        ("0000:dc:00.0", 1818990), ("0000:ed:00.0", 1818992), ("0000:ba:00.0", 1818989), ("0000:97:00.0", 1818987)]
    assert xids[0]["message"] == "Ch 00000001 caused by previous Xid 149"


@pytest.mark.corpus
def test_older_driver_lines_without_name_field():
    xids = parse_kernel_log(_blocks()["facebookresearch/gcm"], now=NOW)[0]
    assert [(e["xid"], e["pid"], e["process_name"]) for e in xids] == [(31, 3234, None), (48, 3234, None)]
    assert xids[0]["pci_bus_id"] == "000d:00:00.0"
    assert xids[0]["time"] == "2022-10-14T14:56:49Z"
    assert xids[0]["message"] == "Graphics SM Warp Exception on (GPC 2, TPC 2, SM 1): Out Of Range Address"


@pytest.mark.corpus
def test_syslog_012_escapes_give_the_api_mismatch_versions():
    now = utc_epoch("2023-07-01T00:00:00")
    xids, kernel = parse_kernel_log(_blocks()["stackhpc/ansible-slurm-appliance#287"], now=now)
    assert xids == []
    assert len(kernel) == 1
    event = kernel[0]
    assert event["kind"] == "api_mismatch"
    assert (event["client_version"], event["kernel_module_version"]) == ("535.54.03", "530.30.02")
    assert event["time"] == "2023-06-30T11:07:05Z"
    assert "#012" not in event["message"] and "NVRM" not in event["message"]
    assert event["message"].endswith("components have the same version.")
    assert_valid_facts(facts_with_events(xids, kernel))


@pytest.mark.corpus
def test_syslog_year_is_the_previous_one_when_the_date_would_be_in_the_future():
    now = utc_epoch("2024-01-02T00:00:00")
    kernel = parse_kernel_log(_blocks()["stackhpc/ansible-slurm-appliance#287"], now=now)[1]
    assert kernel[0]["time"] == "2023-06-30T11:07:05Z"


@pytest.mark.corpus
def test_raw_dmesg_indented_continuation_gives_the_api_mismatch_versions():
    block = _blocks()["saharmor/dalle-playground#104"]
    xids, kernel = parse_kernel_log(block, now=NOW)
    assert xids == []
    assert [(e["client_version"], e["kernel_module_version"]) for e in kernel] == [("515.48.07", "510.73.05")]
    assert kernel[0]["time"] == "7386.259769"
    placed = parse_kernel_log(block, now=NOW, boot_time=utc_epoch("2022-06-01T10:00:00"))[1]
    assert placed[0]["time"] == "2022-06-01T12:03:06.259769Z"


@pytest.mark.corpus
def test_the_whole_realdata_file_parses_without_noise():
    xids, kernel = parse_kernel_log(read_realdata(NVRM_FILE), now=NOW)
    assert len(xids) == 4 + 4 + 7 + 2
    assert [e["kind"] for e in kernel] == ["api_mismatch", "api_mismatch"]
    assert_valid_facts(facts_with_events(xids, kernel))


# --- /dev/kmsg ------------------------------------------------------------------------------

@pytest.mark.corpus
@pytest.mark.parametrize("name", KMSG_FILES)
def test_kmsg_captures_without_nvrm_give_no_events(name):
    assert parse_kernel_log(read_realdata(name), now=NOW) == ([], [])


@pytest.mark.corpus
def test_kmsg_records_carrying_nvrm_lines_get_boot_relative_times():
    # real record prefixes from the gpud kmsg capture, carrying the gpud#1174 kmsg input lines
    prefixes = [line.split(";", 1)[0] + ";" for line in
                read_realdata("kmsg_nvswitch_open_gpud.log").splitlines()[:2]]
    messages = [line for line in _blocks()["leptonai/gpud#1174"].splitlines() if line.startswith("NVRM")][:2]
    text = "\n".join(p + m for p, m in zip(prefixes, messages)) + "\n SUBSYSTEM=pci\n DEVICE=+pci:0000:00:00.0\n"
    xids = parse_kernel_log(text, now=NOW)[0]
    assert [e["time"] for e in xids] == ["206.764307", "206.764310"]
    assert xids[1]["message"].endswith("0x00000000)")  # the KEY=value lines are not message text
    boot = utc_epoch("2026-11-30T11:00:00")
    placed = parse_kernel_log(text, now=NOW, boot_time=boot)[0]
    assert [e["time"] for e in placed] == ["2026-11-30T11:03:26.764307Z", "2026-11-30T11:03:26.764310Z"]
    assert [e["xid"] for e in placed] == [149, 149]


def test_kmsg_escaped_newline_is_joined():
    text = ("3,812,7386259769,-;NVRM: API mismatch: the client has the version 515.48.07, but\\x0a"
            "NVRM: this kernel module has the version 510.73.05.  Please\\x0aNVRM: make sure that this kernel module")
    kernel = parse_kernel_log(text, now=NOW)[1]
    assert (kernel[0]["client_version"], kernel[0]["kernel_module_version"]) == ("515.48.07", "510.73.05")


# --- the catalog's example lines and its format notes --------------------------------------

@pytest.mark.corpus
def test_every_catalog_xid_example_parses_to_its_xid():
    examples = [e for e in _catalog_examples() if e["xid"] is not None]
    assert len(examples) >= 20
    for example in examples:
        xids, kernel = parse_kernel_log(example["line"], now=NOW)
        assert [e["xid"] for e in xids] == [example["xid"]], example["line"]
        assert xids[0]["pci_bus_id"] is not None
        assert kernel == []


@pytest.mark.corpus
def test_catalog_lines_that_are_not_xids_give_nothing():
    for example in _catalog_examples():
        if example["xid"] is None:
            assert parse_kernel_log(example["line"], now=NOW) == ([], []), example["line"]


@pytest.mark.corpus
def test_mig_attributed_xid_and_legacy_format_from_the_catalog():
    lines = dict((e["line"].split("):")[0], e["line"]) for e in _catalog_examples())
    xids = parse_kernel_log(lines["NVRM: Xid (PCI:0000:01:00 GPU-I:05"], now=NOW)[0]
    assert (xids[0]["xid"], xids[0]["gpu_instance_id"], xids[0]["compute_instance_id"]) == (94, 5, None)
    assert (xids[0]["pid"], xids[0]["process_name"]) == (7194, None)
    assert xids[0]["message"] == "Contained: CE User Channel (0x9). RST: No, D-RST: No"
    legacy = parse_kernel_log(lines["NVRM: Xid (0000:03:00"], now=NOW)[0]
    assert (legacy[0]["pci_bus_id"], legacy[0]["xid"], legacy[0]["message"]) == ("0000:03:00.0", 14, "Channel 00000001")


def test_gpu_and_compute_instance_line_in_the_driver_printf_format():
    # kernel_rc.c format 'NVRM: Xid (PCI:%04x:%02x:%02x GPU-I:%02u GPU-CI:%02u): %d, pid=%s, name=%s, %s'
    line = "NVRM: Xid (PCI:0000:01:00 GPU-I:05 GPU-CI:01): 94, pid=7194, name=python3, Contained: CE User Channel (0x9)."
    xids = parse_kernel_log("kernel: " + line, now=NOW)[0]
    assert (xids[0]["gpu_instance_id"], xids[0]["compute_instance_id"], xids[0]["process_name"]) == (5, 1, "python3")
    assert xids[0]["pci_bus_id"] == "0000:01:00.0"


# --- the timestamp formats around one real line ---------------------------------------------

XID_109 = ("NVRM: Xid (PCI:0000:cb:00): 109, pid=1797828, name=pt_main_thread, "
           "Ch 00000008, errorString CTX SWITCH TIMEOUT, Info 0x58005")


@pytest.mark.parametrize("prefix, expected", [
    ("2026-11-30T10:11:12+0000 gpu-0 kernel: ", "2026-11-30T10:11:12Z"),
    ("2026-11-30T10:11:12+00:00 gpu-0 kernel: ", "2026-11-30T10:11:12Z"),
    ("2026-11-30T11:11:12+0100 gpu-0 kernel: ", "2026-11-30T10:11:12Z"),
    ("2026-11-30T10:11:12.123456+0000 gpu-0 kernel: ", "2026-11-30T10:11:12.123456Z"),
    ("Nov 30 10:11:12 gpu-0 kernel: ", "2026-11-30T10:11:12Z"),
    ("Nov 30 10:11:12 gpu-0 kernel: [44643.002804] ", "2026-11-30T10:11:12Z"),
    ("[Mon Nov 30 10:11:12 2026] ", "2026-11-30T10:11:12Z"),
    ("[44643.002804] ", "44643.002804"),
    ("[ 7386.259769] ", "7386.259769"),
    ("kernel: ", None),
    ("", None),
])
def test_timestamp_formats(prefix, expected):
    xids = parse_kernel_log(prefix + XID_109, now=NOW)[0]
    assert len(xids) == 1
    assert xids[0]["time"] == expected
    assert (xids[0]["xid"], xids[0]["pid"], xids[0]["pci_bus_id"]) == (109, 1797828, "0000:cb:00.0")


def test_syslog_local_time_follows_the_host_zone(monkeypatch):
    monkeypatch.setenv("TZ", "CET-1")
    time.tzset()
    xids = parse_kernel_log("Nov 30 11:11:12 gpu-0 kernel: " + XID_109, now=NOW)[0]
    assert xids[0]["time"] == "2026-11-30T10:11:12Z"


# --- fallen off the bus ---------------------------------------------------------------------

# From a public nvidia-bug-report excerpt (4x K80, driver 470.42.01): the Xid 79 line is
# followed by the same news without an Xid.
PYRITE = """\
Jan 16 14:04:39 pyrite kernel: [44643.002792] NVRM: GPU at PCI:0000:05:00: GPU-97363126-e553-8dd4-9ad8-56844b42694a
Jan 16 14:04:39 pyrite kernel: [44643.002803] NVRM: GPU Board Serial Number: 0325015054694
Jan 16 14:04:39 pyrite kernel: [44643.002804] NVRM: Xid (PCI:0000:05:00): 79, pid=1173, GPU has fallen off the bus.
Jan 16 14:04:39 pyrite kernel: [44643.002806] NVRM: GPU 0000:05:00.0: GPU has fallen off the bus.
Jan 16 14:04:39 pyrite kernel: [44643.002828] NVRM: GPU 0000:05:00.0: GPU serial number is 0325015054694.
Jan 16 14:04:39 pyrite kernel: [44643.002840] NVRM: A GPU crash dump has been created. If possible, please run
Jan 16 14:04:39 pyrite kernel: [44643.002840] NVRM: nvidia-bug-report.sh as root to collect this data before
Jan 16 14:04:39 pyrite kernel: [44643.002840] NVRM: the NVIDIA kernel module is unloaded.
Jan 16 14:04:39 pyrite kernel: [44643.002866] NVRM: Xid (PCI:0000:06:00): 79, pid=1173, GPU has fallen off the bus.
Jan 16 14:04:39 pyrite kernel: [44643.002867] NVRM: GPU 0000:06:00.0: GPU has fallen off the bus.
"""


def test_xid_79_is_an_xid_event_without_a_duplicate_fallen_event():
    xids, kernel = parse_kernel_log(PYRITE, now=utc_epoch("2024-01-17T00:00:00"))
    assert [(e["pci_bus_id"], e["xid"], e["pid"]) for e in xids] == [("0000:05:00.0", 79, 1173), ("0000:06:00.0", 79, 1173)]
    assert xids[0]["message"] == "GPU has fallen off the bus."
    assert xids[0]["time"] == "2024-01-16T14:04:39Z"
    assert kernel == []


def test_fallen_off_bus_without_an_xid_line():
    line = "Jan 16 14:04:39 pyrite kernel: [44643.002806] NVRM: GPU 0000:05:00.0: GPU has fallen off the bus."
    xids, kernel = parse_kernel_log(line, now=utc_epoch("2024-01-17T00:00:00"))
    assert xids == []
    assert [(e["kind"], e["pci_bus_id"]) for e in kernel] == [("fallen_off_bus", "0000:05:00.0")]
    assert kernel[0]["message"] == "GPU 0000:05:00.0: GPU has fallen off the bus."


@pytest.mark.parametrize("text, pci", [
    # one record (public troubleshooting note, GTX 1080 passthrough)
    ("NVRM: The NVIDIA GPU 0000:0e:00.0 (PCI ID: 10de:1b06) installed in this system has fallen off the bus "
     "and is not responding to commands.", "0000:0e:00.0"),
    # without the PCI ID (public eGPU write-up)
    ("[Sat Mar  7 09:12:44 2026] NVRM: The NVIDIA GPU 0000:05:00.0 installed in this system has fallen off "
     "the bus and is not responding to commands.", "0000:05:00.0"),
    # two syslog records, each with its own NVRM prefix (public RTX 2080 Ti passthrough notes)
    ("Mar  7 09:12:44 vm kernel: NVRM: The NVIDIA GPU 0000:01:00.0 (PCI ID: 10de:1e07) installed in this\n"
     "Mar  7 09:12:44 vm kernel: NVRM: system has fallen off the bus and is not responding to commands.",
     "0000:01:00.0"),
    # dmesg continuation line (public H100 host notes, RmInitAdapter failure follows)
    ("[  12.345678] NVRM: The NVIDIA GPU 0000:9a:00.0 (PCI ID: 10de:28a0) installed in this system\n"
     "               has fallen off the bus and is not responding to commands.\n"
     "[  12.345900] NVRM: GPU 0000:9a:00.0: RmInitAdapter failed! (0x22:0x40:894)", "0000:9a:00.0"),
])
def test_fallen_off_bus_wordings(text, pci):
    xids, kernel = parse_kernel_log(text, now=NOW)
    assert xids == []
    assert [(e["kind"], e["pci_bus_id"]) for e in kernel] == [("fallen_off_bus", pci)]
    assert kernel[0]["message"].endswith("has fallen off the bus and is not responding to commands.")
    assert_valid_facts(facts_with_events(xids, kernel))


def test_api_mismatch_over_separate_syslog_records():
    text = "\n".join("Jun 30 11:07:05 gpu-0 kernel: " + part for part in (
        "NVRM: API mismatch: the client has the version 535.54.03, but",
        "NVRM: this kernel module has the version 530.30.02.  Please",
        "NVRM: make sure that this kernel module and all NVIDIA driver",
        "NVRM: components have the same version.",
        "NVRM: Xid (PCI:0000:cb:00): 13, pid='<unknown>', name=<unknown>, Graphics Exception"))
    xids, kernel = parse_kernel_log(text, now=utc_epoch("2023-07-01T00:00:00"))
    assert [(e["client_version"], e["kernel_module_version"]) for e in kernel] == [("535.54.03", "530.30.02")]
    assert [e["xid"] for e in xids] == [13]
    assert xids[0]["message"] == "Graphics Exception"


# --- time window ----------------------------------------------------------------------------

def test_window_keeps_recent_and_unknown_time_events():
    text = "\n".join([
        "2026-11-30T10:11:12+0000 gpu-0 kernel: " + XID_109,          # 2 h before NOW
        "2026-11-20T10:11:12+0000 gpu-0 kernel: " + XID_109.replace("109", "31", 1),  # 10 days before
        "[Fri Aug 30 11:43:09 2024] " + XID_109.replace("109", "13", 1),
        "kernel: " + XID_109.replace("109", "45", 1),                   # time unknown
        "[ 7386.259769] " + XID_109.replace("109", "48", 1),            # raw, boot time unknown
    ])
    xids = parse_kernel_log(text, now=NOW, window_seconds=72 * 3600)[0]
    assert [e["xid"] for e in xids] == [109, 45, 48]
    everything = parse_kernel_log(text, now=NOW)[0]
    assert [e["xid"] for e in everything] == [109, 31, 13, 45, 48]


def test_window_applies_to_raw_dmesg_when_boot_time_is_known():
    text = "[ 7386.259769] " + XID_109 + "\n[ 360000.5] " + XID_109.replace("109", "31", 1)
    boot = NOW - 400000
    xids = parse_kernel_log(text, now=NOW, window_seconds=72 * 3600, boot_time=boot)[0]
    assert [e["xid"] for e in xids] == [31]


def test_twenty_thousand_lines_parse():
    noise = "Aug 30 11:43:09 gpu-0 kernel: IPv6: ADDRCONF(NETDEV_CHANGE): eth0: link becomes ready"
    block = "\n".join([noise] * 9 + ["Aug 30 11:43:09 gpu-0 kernel: " + XID_109])
    xids, kernel = parse_kernel_log("\n".join([block] * 2000), now=NOW)
    assert len(xids) == 2000 and kernel == []
    assert xids[-1]["process_name"] == "pt_main_thread"


_PIECES = ["\n", " ", "  NVRM: ", "NVRM: Xid (PCI:", "0000:cb:00", " GPU-I:05", "): ", "79, ", "pid=", "'<unknown>'",
           ", name=", "python3", "#012", "\\x0a", "[", "]", "Fri Aug 30 11:43:09 2024", " 7386.259769",
           "2026-13-30T25:61:61+9999 h kernel: ", "Feb 29 11:07:05 gpu-0 kernel: ", "6,3973,227996636,-;",
           "API mismatch: the client has the version 535.54.03, but", "this kernel module has the version ",
           "The NVIDIA GPU 0000:0e:00.0 installed in this", "has fallen off the bus", "[0000 Jan 01 00:00:00 0000] "]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_PIECES) | st.text(max_size=8), max_size=40),
       st.none() | st.floats(min_value=0, max_value=2e9))
def test_damaged_logs_never_raise_and_stay_in_schema(pieces, boot_time):
    xids, kernel = parse_kernel_log("".join(pieces), now=NOW, window_seconds=72 * 3600, boot_time=boot_time)
    assert_valid_facts(facts_with_events(xids, kernel))


def test_empty_text():
    assert parse_kernel_log("", now=NOW) == ([], [])
    assert parse_kernel_log(None, now=NOW) == ([], [])


# --- collection through the host object ------------------------------------------------------

JOURNAL_CMD = "journalctl _TRANSPORT=kernel -o short-iso --no-pager --since=-72h"
JOURNAL_OUT = "\n".join([
    "-- Journal begins at Mon 2026-11-02 08:00:01 UTC, ends at Mon 2026-11-30 11:59:01 UTC. --",
    "2026-11-30T10:11:12+0000 gpu-0 kernel: " + XID_109,
    "2026-11-30T10:12:00+0000 gpu-0 kernel: NVRM: GPU 0000:3b:00.0: GPU has fallen off the bus.",
])
# own lines in the dmesg --ctime format: a peer-memory message that is not an NVRM line, then four Xids
DMESG_CTIME_OUT = "\n".join([
    "[Tue Nov 24 03:02:41 2026] nvidia-peermem nv_get_p2p_free_callback:127 ERROR detected invalid context, "
    "skipping further processing",
    "[Tue Nov 24 03:17:52 2026] NVRM: Xid (PCI:0000:4e:00): 13, pid='<unknown>', name=<unknown>, "
    "Graphics SM Warp Exception on (GPC 3, TPC 1, SM 0): Illegal Instruction Encoding",
    "[Tue Nov 24 03:17:52 2026] NVRM: Xid (PCI:0000:4e:00): 13, pid='<unknown>', name=<unknown>, "
    "Graphics SM Global Exception on (GPC 3, TPC 1, SM 0): Multiple Warp Errors",
    "[Tue Nov 24 03:17:52 2026] NVRM: Xid (PCI:0000:4e:00): 13, pid='<unknown>', name=<unknown>, "
    "Graphics Exception: ESR 0x51e730=0x2000d 0x51e734=0x0 0x51e728=0xc81eb60 0x51e72c=0x1174",
    "[Tue Nov 24 03:17:58 2026] NVRM: Xid (PCI:0000:4e:00): 109, pid=220417, name=python3, "
    "Ch 00000010, errorString CTX SWITCH TIMEOUT, Info 0x3c009",
])


def _host(commands, bins=("journalctl", "dmesg"), files=None):
    return ReplayHost({
        "now": NOW,
        "bins": dict((name, "/usr/bin/" + name) for name in bins),
        "commands": commands,
        "files": files or {},
    })


def _collect(host, **kwargs):
    facts = new_facts()
    facts["collected_at"] = "2026-11-30T12:00:00Z"
    used = collect_kernel_log(host, facts, **kwargs)
    assert_valid_facts(facts)
    return used, facts


def test_collect_from_journalctl():
    used, facts = _collect(_host({JOURNAL_CMD: {"rc": 0, "stdout": JOURNAL_OUT}}))
    assert used == "journalctl"
    assert [(e["xid"], e["time"]) for e in facts["xid_events"]] == [(109, "2026-11-30T10:11:12Z")]
    assert [(e["kind"], e["pci_bus_id"]) for e in facts["kernel_events"]] == [("fallen_off_bus", "0000:3b:00.0")]
    assert facts["errors"] == []


def test_journalctl_timeout_falls_back_to_dmesg_ctime():
    # no window: these lines of 2026-11-24 fall outside the default window ending on 2026-11-30
    host = _host({"journalctl _TRANSPORT=kernel -o short-iso --no-pager": {"rc": None, "timed_out": True},
                  "dmesg --ctime": {"rc": 0, "stdout": DMESG_CTIME_OUT}})
    used, facts = _collect(host, window_hours=None)
    assert used == "dmesg"
    assert [e["xid"] for e in facts["xid_events"]] == [13, 13, 13, 109]
    assert [(e["call"], e["reason"]) for e in facts["errors"]] == [
        ("journalctl _TRANSPORT=kernel -o short-iso --no-pager", "timed out and was killed")]


def test_dmesg_window_drops_old_events():
    host = _host({"dmesg --ctime": {"rc": 0, "stdout": DMESG_CTIME_OUT}}, bins=("dmesg",))
    used, facts = _collect(host)
    assert used == "dmesg"
    assert facts["xid_events"] == []
    assert [e["call"] for e in facts["errors"]] == ["journalctl"]


def test_dmesg_not_permitted_for_non_root_is_an_error_not_a_failure():
    denied = {"rc": 1, "stderr": "dmesg: read kernel buffer failed: Operation not permitted\n"}
    host = _host({"dmesg --ctime": denied, "dmesg": {"rc": 0, "stdout": "must not be read"}}, bins=("dmesg",))
    used, facts = _collect(host)
    assert used == "none"
    assert facts["xid_events"] == [] and facts["kernel_events"] == []
    assert facts["errors"][-1] == {"gpu": None, "call": "dmesg --ctime", "code": 1,
                                   "reason": "exit status 1: dmesg: read kernel buffer failed: Operation not permitted"}


def test_busybox_dmesg_without_ctime_uses_uptime_for_times():
    host = _host({"dmesg --ctime": {"rc": 1, "stderr": "dmesg: unrecognized option '--ctime'\n"},
                  "dmesg": {"rc": 0, "stdout": "[ 7386.259769] " + XID_109}},
                 bins=("dmesg",), files={"/proc/uptime": "10000.00 75000.00\n"})
    used, facts = _collect(host)
    assert used == "dmesg"
    assert facts["xid_events"][0]["time"] == format_iso(NOW - 10000 + 7386.259769)


def format_iso(epoch):
    whole = int(epoch)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(whole)) + ".%06dZ" % round((epoch - whole) * 1e6)


def test_no_tools_at_all():
    used, facts = _collect(_host({}, bins=()))
    assert used == "none"
    assert [e["call"] for e in facts["errors"]] == ["journalctl", "dmesg"]


def test_explicit_journalctl_does_not_fall_back():
    host = _host({JOURNAL_CMD: {"rc": 1, "stderr": "No journal files were found.\n"},
                  "dmesg --ctime": {"rc": 0, "stdout": DMESG_CTIME_OUT}})
    used, facts = _collect(host, source="journalctl")
    assert used == "none"
    assert facts["errors"][0]["reason"] == "exit status 1: No journal files were found."


def test_files_source_reads_each_file_once_per_event():
    syslog = "Nov 30 10:11:12 gpu-0 kernel: " + XID_109 + "\nNov 30 10:11:13 gpu-0 systemd[1]: Started foo."
    kern = "Nov 30 10:11:12 gpu-0 kernel: " + XID_109 + "\nNov 30 10:11:12 gpu-0 kernel: " + XID_109
    host = _host({}, files={"/var/log/syslog": syslog, "/var/log/kern.log": kern})
    used, facts = _collect(host, source="files",
                           files=["/var/log/syslog", "/var/log/kern.log", "/var/log/missing.log", "/var/log/syslog.2.gz"])
    assert used == "files"
    assert [e["xid"] for e in facts["xid_events"]] == [109, 109]
    assert [e["call"] for e in facts["errors"]] == ["read /var/log/missing.log", "read /var/log/syslog.2.gz"]


def test_files_source_without_files_and_unknown_source():
    used, facts = _collect(_host({}), source="files", files=[])
    assert used == "files" and len(facts["errors"]) == 1
    used, facts = _collect(_host({}), source="syslog")
    assert used == "none" and "unknown source" in facts["errors"][0]["reason"]
