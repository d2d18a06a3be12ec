"""The host's own kernel messages (kernel_messages): PCIe AER, limited links, machine checks and EDAC, hung tasks,
soft lockups, panics, GPU initialisation failures and crashes in GPU libraries, in every line format, synthetic
variants first, then every real capture of the corpus's kernel log section."""

import calendar

import pytest

from ansible_collections.gpufleet.core.plugins.module_utils.facts_model import new_facts
from ansible_collections.gpufleet.core.plugins.module_utils.host_io import ReplayHost
from ansible_collections.gpufleet.core.plugins.module_utils.kernel_log import collect_kernel_log
from ansible_collections.gpufleet.core.plugins.module_utils.kernel_messages import aer_severity, parse_host_events
from tests.support.schema_check import assert_valid_facts

NOW = calendar.timegm((2026, 11, 30, 12, 0, 0, 0, 0, 0))
BOOT = NOW - 100000


def kinds(events):
    return [event["kind"] for event in events]


# --- synthetic variants: other kernel versions, other line formats ------------------------------------------------

AER_JOURNAL = """\
2026-11-30T10:00:00+0000 gpu-7 kernel: pcieport 0000:b0:02.0: AER: Uncorrectable (Fatal) error message received from 0000:b1:00.0
2026-11-30T10:00:00+0000 gpu-7 kernel: nvidia 0000:b1:00.0: PCIe Bus Error: severity=Uncorrectable (Fatal), type=Transaction Layer, (Receiver ID)
2026-11-30T10:00:00+0000 gpu-7 kernel: nvidia 0000:b1:00.0:   device [10de:2330] error status/mask=00040000/00000000
2026-11-30T10:00:00+0000 gpu-7 kernel: nvidia 0000:b1:00.0:    [18] MalfTLP                (First)
2026-11-30T10:00:00+0000 gpu-7 kernel: nvidia 0000:b1:00.0:    [12] Poisoned TLP
2026-11-30T10:00:01+0000 gpu-7 kernel: nvidia 0000:b1:00.0: AER: can't recover (no error_detected callback)
"""


def test_an_aer_error_takes_the_error_names_of_its_detail_lines():
    aer, unrecovered = parse_host_events(AER_JOURNAL, now=NOW)
    assert (aer["kind"], aer["pci_bus_id"], aer["aer_severity"], aer["aer_type"], aer["aer_errors"], aer["time"]) == (
        "pcie_aer", "0000:b1:00.0", "fatal", "Transaction Layer", ["MalfTLP", "Poisoned TLP"], "2026-11-30T10:00:00Z")
    assert (unrecovered["kind"], unrecovered["pci_bus_id"], unrecovered["driver"]) == (
        "pcie_aer_unrecovered", "0000:b1:00.0", "nvidia")


@pytest.mark.parametrize("text, severity", [
    ("Corrected", "corrected"), ("Correctable", "corrected"), ("Uncorrected (Non-Fatal)", "non_fatal"),
    ("Uncorrectable (Non-Fatal)", "non_fatal"), ("Uncorrected (Fatal)", "fatal"), ("Uncorrectable (Fatal)", "fatal"),
    ("garbage", None),
])
def test_every_wording_of_the_aer_severity(text, severity):
    assert aer_severity(text) == severity


def test_a_gpu_behind_a_narrow_link_in_kmsg_form():
    text = ("6,812,2613000,-;pci 0000:17:00.0: 63.012 Gb/s available PCIe bandwidth, limited by 16.0 GT/s PCIe x4 "
            "link at 0000:16:01.0 (capable of 252.048 Gb/s with 16.0 GT/s PCIe x16 link)\n")
    (event,) = parse_host_events(text, now=NOW, boot_time=BOOT)
    assert (event["kind"], event["pci_bus_id"], event["available_gbps"], event["limited_by"],
            event["limiting_pci_bus_id"], event["full_link"], event["time"]) == (
        "pcie_link_limited", "0000:17:00.0", 63.012, "16.0 GT/s PCIe x4", "0000:16:01.0", "16.0 GT/s PCIe x16",
        "2026-11-29T08:13:22.613000Z")


def test_an_unlimited_link_line_is_no_event():
    text = "[    2.608284] mlx5_core 0000:41:00.1: 63.008 Gb/s available PCIe bandwidth (8.0 GT/s PCIe x8 link)\n"
    assert parse_host_events(text, now=NOW) == []


def test_a_hung_task_in_the_nvidia_driver_on_a_newer_kernel():
    text = """\
Nov 30 11:00:00 gpu-3 kernel: INFO: task nvidia-smi:88123 blocked for more than 245 seconds.
Nov 30 11:00:00 gpu-3 kernel:       Tainted: P           OE      6.8.0-45-generic #45-Ubuntu
Nov 30 11:00:00 gpu-3 kernel: task:nvidia-smi      state:D stack:0     pid:88123 tgid:88123 ppid:1 flags:0x00004006
Nov 30 11:00:00 gpu-3 kernel: Call Trace:
Nov 30 11:00:00 gpu-3 kernel:  <TASK>
Nov 30 11:00:00 gpu-3 kernel:  __schedule+0x27c/0x6b0
Nov 30 11:00:00 gpu-3 kernel:  os_acquire_mutex+0x3c/0x50 [nvidia]
Nov 30 11:00:00 gpu-3 kernel:  _nv044089rm+0x10/0x30 [nvidia]
"""
    (event,) = parse_host_events(text, now=NOW)
    assert (event["kind"], event["process"], event["pid"], event["seconds"], event["nvidia_stack"]) == (
        "hung_task", "nvidia-smi", 88123, 245, True)


def test_a_hung_task_elsewhere_has_no_nvidia_stack():
    text = ("[ 9000.1] INFO: task jbd2/sda1-8:412 blocked for more than 120 seconds.\n"
            "[ 9000.2]  jbd2_journal_commit_transaction+0x1/0x2\n")
    (event,) = parse_host_events(text, now=NOW)
    assert (event["process"], event["pid"], event["nvidia_stack"]) == ("jbd2/sda1-8", 412, False)


def test_soft_lockups_of_old_and_new_kernels():
    text = ("<0>[  812.1] NMI watchdog: BUG: soft lockup - CPU#3 stuck for 23s! [kworker/3:1:211]\n"
            "2026-11-30T10:00:00.123+01:00 gpu-1 kernel: watchdog: BUG: soft lockup - CPU#64 stuck for 26s! "
            "[pt_main_thread:7781]\n")
    first, second = parse_host_events(text, now=NOW)
    assert (first["cpu"], first["seconds"], first["process"], first["pid"]) == (3, 23, "kworker/3:1", 211)
    assert (second["cpu"], second["process"], second["time"]) == (64, "pt_main_thread", "2026-11-30T09:00:00.123000Z")


def test_edac_and_machine_checks_of_other_drivers():
    text = """\
[Mon Nov 30 09:00:00 2026] EDAC skx MC2: HANDLING MCE MEMORY ERROR
[Mon Nov 30 09:00:00 2026] EDAC MC2: 1 UE memory read error on CPU_SrcID#1_MC#2_Chan#0_DIMM#0 (channel:0 slot:0)
[Mon Nov 30 09:00:01 2026] EDAC amd64 MC0: 3 CE on mc#0csrow#2channel#1 (csrow:2 channel:1 page:0x1 offset:0x0)
[Mon Nov 30 09:00:02 2026] mce: [Hardware Error]: CPU 4: Machine Check Exception: 5 Bank 6: be00000000800400
"""
    events = parse_host_events(text, now=NOW)
    assert [(e["kind"], e["corrected"], e.get("count"), e.get("location")) for e in events] == [
        ("memory_error", False, 1, "memory read error on CPU_SrcID#1_MC#2_Chan#0_DIMM#0"),
        ("memory_error", True, 3, "on mc#0csrow#2channel#1"),
        ("machine_check", False, None, None)]


def test_gpu_init_failures_and_crashes_in_gpu_libraries():
    text = ("Nov 30 10:00:00 h kernel: NVRM: GPU 0000:3b:00.0: RmInitAdapter failed! (0x62:0x65:2487)\n"
            "Nov 30 10:00:00 h kernel: NVRM: GPU 0000:3b:00.0: rm_init_adapter failed, device minor number 2\n"
            "Nov 30 10:01:00 h kernel: python3[4242]: segfault at 10 ip 00007f sp 00007e error 4 in "
            "libcudnn_ops.so.9[7f0000+100000] likely on CPU 3 (core 3, socket 0)\n"
            "Nov 30 10:02:00 h kernel: bash[11]: segfault at 0 ip 0000 sp 0000 error 6 in libc.so.6[7f+1]\n")
    init, crash = parse_host_events(text, now=NOW)
    assert (init["kind"], init["pci_bus_id"], init["code"]) == ("init_failed", "0000:3b:00.0", "0x62:0x65:2487")
    assert (crash["kind"], crash["process"], crash["pid"], crash["library"]) == (
        "segfault", "python3", 4242, "libcudnn_ops.so.9")


def test_the_window_leaves_out_old_events_and_garbage_is_nothing():
    text = ("2026-11-20T10:00:00Z h kernel: watchdog: BUG: soft lockup - CPU#1 stuck for 22s! [a:1]\n"
            "2026-11-30T10:00:00Z h kernel: watchdog: BUG: soft lockup - CPU#2 stuck for 22s! [b:2]\n"
            "\x00\xff garbage PCIe Bus Error: severity=\n\n")
    assert [event["cpu"] for event in parse_host_events(text, now=NOW, window_seconds=72 * 3600)] == [2]
    assert parse_host_events("", now=NOW) == [] and parse_host_events(None, now=NOW) == []


# --- the corpus: every real capture of the kernel log section -----------------------------------------------------

def _summary(events):
    return [(e["kind"], e["pci_bus_id"]) for e in events]


@pytest.mark.corpus
def test_corpus_aer_in_four_timestamp_forms(corpus):
    events = parse_host_events(corpus.read_realdata(
        "kernel-pcie-aer_corrected-nonfatal-fatal-with-nvidia-cant-recover_issue-quotes.txt"), now=NOW)
    aer = [(e["pci_bus_id"], e["aer_severity"], e["aer_errors"], e["multiple"]) for e in events
           if e["kind"] == "pcie_aer"]
    assert aer == [("0000:00:03.0", "fatal", ["SDES", "CmpltTO"], True),
                   ("0000:00:03.1", "corrected", ["Timeout"], False), ("0000:00:03.1", "corrected", ["BadTLP"], False),
                   ("0000:00:1d.0", "corrected", ["Receiver Error"], True),
                   ("0000:00:1d.0", "corrected", ["Receiver Error"], True),
                   ("0000:80:1b.4", "non_fatal", ["ACSViol"], False)]
    unrecovered = [(e["pci_bus_id"], e["driver"]) for e in events if e["kind"] == "pcie_aer_unrecovered"]
    assert ("0000:03:00.0", "nvidia") in unrecovered and len(unrecovered) == 7


@pytest.mark.corpus
def test_corpus_link_limited_by_a_narrow_link(corpus):
    (event,) = parse_host_events(corpus.read_realdata(
        "kernel-pcie-link-bandwidth-limited-by_and-lspci-lnksta-downgraded_issue-quotes.txt"), now=NOW)
    assert (event["pci_bus_id"], event["available_gbps"], event["capable_gbps"], event["limited_by"],
            event["full_link"]) == ("0000:01:00.0", 7.876, 126.016, "8.0 GT/s PCIe x1", "8.0 GT/s PCIe x16")


@pytest.mark.corpus
def test_corpus_rminitadapter_failed_in_old_and_new_wording(corpus):
    events = parse_host_events(corpus.read_realdata(
        "kernel-nvrm-rminitadapter-failed-and-fallen-off-the-bus_issue-quotes.txt"), now=NOW)
    assert set(kinds(events)) == {"init_failed"}
    assert [(bus, sum(1 for e in events if e["pci_bus_id"] == bus)) for bus in
            ("0000:0a:00.0", "0000:81:00.0", "0000:01:00.0", None)] == [
        ("0000:0a:00.0", 6), ("0000:81:00.0", 2), ("0000:01:00.0", 2), (None, 2)]


@pytest.mark.corpus
@pytest.mark.parametrize("name, expected", [
    ("kernel-hung-task-blocked-120s_nvidia-uvm-and-after-xid45_dmesg_issue-quotes.txt",
     [("nvc:[driver]", 5403, True), ("cache_mgr_event", 620917, False)]),
    ("kernel-hung-task_docker-blocked-120s_debian-3.16_npd.txt", [("docker", 20744, False)]),
    ("kernel-hung-task_fuse-df-blocked-120s_ubuntu-5.15-tainted-P_syslog_hotsos.txt", [("df", 1177107, False)]),
])
def test_corpus_hung_tasks(corpus, name, expected):
    events = parse_host_events(corpus.read_realdata(name), now=NOW)
    assert [(e["process"], e["pid"], e["nvidia_stack"]) for e in events] == expected
    assert all(e["kind"] == "hung_task" and e["seconds"] == 120 for e in events)


@pytest.mark.corpus
def test_corpus_soft_lockups_in_four_forms(corpus):
    events = parse_host_events(corpus.read_realdata(
        "kernel-soft-lockup-watchdog_dmesg-T-syslog-wall-nmi_issue-quotes.txt"), now=NOW)
    assert [(e["cpu"], e["process"], e["seconds"]) for e in events] == [
        (0, "cuda-EvtHandlr", 27), (18, "python3", 27), (7, "pytest", 23), (2, "chia_plot", 22), (113, "kopald", 22)]


@pytest.mark.corpus
def test_corpus_edac_and_machine_checks(corpus):
    events = parse_host_events(corpus.read_realdata(
        "kernel-mce-edac-memory-errors_and-mcelog-ras-mc-ctl_issue-quotes.txt"), now=NOW)
    memory = [e for e in events if e["kind"] == "memory_error"]
    assert all(e["corrected"] for e in memory) and sum(e["count"] for e in memory) == 17
    assert [e["corrected"] for e in events if e["kind"] == "machine_check"] == [None, None]


@pytest.mark.corpus
def test_corpus_pstore_panic_with_reversed_chunks(corpus):
    events = parse_host_events(corpus.read_realdata("pstore-dmesg_kernel-panic-test_asrockrack-genoa_gpud.txt"),
                               now=NOW)
    assert [(e["kind"], e["reason"]) for e in events] == [
        ("kernel_panic", "Test panic triggered by crash_test module")]


@pytest.mark.corpus
def test_corpus_segfault_in_nccl(corpus):
    events = parse_host_events(corpus.read_realdata("dmesg-decode-iso_libnccl-segfault_gpud.log"), now=NOW)
    assert [(e["process"], e["pid"], e["library"], e["time"]) for e in events] == [
        ("pt_main_thread", 2536443, "libnccl.so.2", "2025-01-21T04:41:44.285060Z"),
        ("pt_main_thread", 2536443, "libnccl.so.2", "2025-01-21T04:42:44.285060Z")]


@pytest.mark.corpus
def test_corpus_gsp_rpc_errors_rate_limited_after_the_xid_119_burst(corpus):
    events = parse_host_events(corpus.read_realdata("dmesg-T_xid119-gsp-rpc-timeout_dell-xe9680-h100_gpud.log"), now=NOW)
    assert [(e["kind"], e["pci_bus_id"], e["time"]) for e in events] == [
        ("gsp_rpc_rate_limited", "0000:9b:00.0", "2025-02-23T16:24:36Z")]


def test_gsp_rate_limiting_of_a_pci_address_with_a_function():
    text = ("<3>[ 812.1] NVRM: Rate limiting GSP RPC error prints for GPU at PCI:0000:18:00.0 (printing 1 of every "
            "30).  The GPU likely needs to be reset.\n")
    assert [e["pci_bus_id"] for e in parse_host_events(text, now=NOW)] == ["0000:18:00.0"]


@pytest.mark.corpus
@pytest.mark.parametrize("name", [
    "kernel-xid119-gsp-rpc-timeout_r525-wording_dmesg-T_issue-quotes.txt",
    "dmesg-decode-iso_xid13-43-and-oom-kill-variants_gpud.log",
    "kernel-oom_global-sysrq-f-with-oom-kill-line_qemu-ubuntu-5.4_kernlog_hotsos.txt",
    "kernel-nvswitch-sxid-and-nvlink-xid145-137_issue-quotes.txt",
])
def test_corpus_logs_of_xids_and_ooms_hold_no_host_event(corpus, name):
    """Their faults are Xids, SXids and OOM kills, read by kernel_log and kernel_oom; no host event is invented."""
    assert parse_host_events(corpus.read_realdata(name), now=NOW) == []


# --- the collector: journalctl and dmesg give the same host events and OOM kills as files -------------------------

JOURNAL = """\
2026-11-30T10:00:00+0000 gpu-7 kernel: NVRM: Xid (PCI:0000:18:00): 79, pid=1, name=x, GPU has fallen off the bus.
2026-11-30T10:00:01+0000 gpu-7 kernel: nvidia 0000:18:00.0: AER: can't recover (no error_detected callback)
2026-11-30T10:00:02+0000 gpu-7 kernel: Out of memory: Killed process 77 (python3) total-vm:1kB, anon-rss:5kB
"""


@pytest.mark.parametrize("fixture, source", [
    ({"bins": {"journalctl": "/usr/bin/journalctl"},
      "commands": {"journalctl _TRANSPORT=kernel -o short-iso --no-pager --since=-72h": {"rc": 0, "stdout": JOURNAL}}},
     "journalctl"),
    ({"bins": {"dmesg": "/usr/bin/dmesg"},
      "commands": {"dmesg --ctime": {"rc": 0, "stdout": JOURNAL.replace("2026-11-30T", "[Mon Nov 30 ").replace(
          "+0000 gpu-7 kernel:", " 2026]")}}}, "dmesg"),
])
def test_the_collector_reads_host_events_and_oom_kills_from_every_source(fixture, source):
    facts = new_facts()
    facts["collected_at"] = "2026-11-30T12:00:00Z"
    assert collect_kernel_log(ReplayHost(dict(fixture, now=NOW)), facts, source=source) == source
    assert [event["kind"] for event in facts["kernel_events"]] == ["pcie_aer_unrecovered"]
    assert [(event["xid"], event["pci_bus_id"]) for event in facts["xid_events"]] == [(79, "0000:18:00.0")]
    oom = facts["kernel_log"]["oom_kills"]
    assert (oom["count"], oom["global"], oom["events"][0]["pid"], oom["events"][0]["unit"]) == (1, 1, 77, None)
    assert_valid_facts(facts)
