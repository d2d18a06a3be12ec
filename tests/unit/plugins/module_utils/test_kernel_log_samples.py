"""Kernel log parsing on the project's own lines, one per format the collector meets: dmesg --ctime,
bare NVRM lines, journald's "kernel:" prefix, drivers that print no name=, syslog #012 escapes, raw
dmesg continuation lines, /dev/kmsg records, MIG-attributed and legacy Xid lines. The values (bus ids,
pids, versions, times) are our own; the shapes are those the NVIDIA driver prints."""

from ansible_collections.gpufleet.core.plugins.module_utils.kernel_log import parse_kernel_log
from tests.support.schema_check import assert_valid_facts
from tests.support.kernel_log_builders import NOW, facts_with_events, utc_epoch, utc_zone  # noqa: F401  pylint: disable=unused-import


def valid(xids, kernel):
    assert_valid_facts(facts_with_events(xids, kernel))


DMESG_CTIME = "".join(line + "\n" for line in [
    "[Tue Nov 24 03:02:41 2026] nvidia-peermem nv_get_p2p_free_callback:127 ERROR detected invalid context, "
    "skipping further processing",
    "[Tue Nov 24 03:17:52 2026] NVRM: Xid (PCI:0000:4e:00): 13, pid='<unknown>', name=<unknown>, "
    "Graphics SM Warp Exception on (GPC 3, TPC 1, SM 0): Illegal Instruction Encoding",
    "[Tue Nov 24 03:17:52 2026] NVRM: Xid (PCI:0000:4e:00): 13, pid='<unknown>', name=<unknown>, "
    "Graphics Exception: ESR 0x51e730=0x2000d 0x51e734=0x0",
    "[Tue Nov 24 03:17:58 2026] NVRM: Xid (PCI:0000:4e:00): 109, pid=220417, name=python3, "
    "Ch 00000010, errorString CTX SWITCH TIMEOUT, Info 0x3c009",
])

BARE = """\
NVRM: Xid (PCI:0021:01:00): 149, NETIR Fatal XC0 i0 Link -1 (0x000fe406 0x00000000 0x00000000 0x00000000 0x00000000 0x00000000)
NVRM: Xid (PCI:0020:01:00): 145, RLW_RXPIPE Nonfatal XC0 i0 Link 07 (0x0409a0c2 0x00000008 0x00000001 0x00000000 0x00100000 0x00000004)
NVRM: Xid (PCI:0000:b7:00): 94, pid=77120, name=torchrun, Contained ECC error
"""

JOURNAL_KERNEL_PREFIX = """\
kernel: NVRM: Xid (PCI:0000:87:00): 45, pid=301877, name=python3, Ch 00000004 caused by previous Xid 149
kernel: NVRM: Xid (PCI:0000:90:00): 45, pid=301879, name=python3, Ch 0000000a caused by previous Xid 145
"""

NO_NAME_FIELD = "".join(line + "\n" for line in [
    "[Wed Mar  4 09:20:15 2026] NVRM: Xid (PCI:0000:3b:00): 31, pid=5120, Ch 00000008, intr 10000000. "
    "MMU Fault: ENGINE GRAPHICS GPCCLIENT_T1_3 faulted @ 0x7f3a_51e00000",
    "[Wed Mar  4 09:20:15 2026] NVRM: Xid (PCI:0000:3b:00): 43, pid=5120, Ch 00000008",
])

SYSLOG_012 = ("Oct  2 08:14:37 node-17 kernel: NVRM: API mismatch: the client has the version 550.90.07, but#012"
              "NVRM: this kernel module has the version 550.54.15.  Please#012NVRM: make sure that this kernel "
              "module and all NVIDIA driver#012NVRM: components have the same version.")

RAW_DMESG_CONTINUATION = """\
[  912.004411] NVRM: API mismatch: the client has the version 535.183.06, but
               NVRM: this kernel module has the version 535.161.08.  Please
               NVRM: make sure that this kernel module and all NVIDIA driver
               NVRM: components have the same version.
"""

KMSG = "".join(line + "\n" for line in [
    "6,1204,143118502,-;NVRM: Xid (PCI:0000:4e:00): 48, pid=9044, name=python3, An uncorrectable double bit "
    "error (DBE) has been detected on GPU in the framebuffer at partition 3, subpartition 0.",
    " SUBSYSTEM=pci",
    " DEVICE=+pci:0000:4e:00.0",
    "4,1205,143118530,-;NVRM: Xid (PCI:0000:4e:00): 63, pid=9044, name=python3, Row Remapper: New row marked "
    "for remapping, reset gpu to activate.",
    "6,1206,150000000,-;e1000e 0000:00:1f.6 eth0: NIC Link is Up 1000 Mbps Full Duplex",
])


def test_dmesg_ctime_lines():
    xids, kernel = parse_kernel_log(DMESG_CTIME, now=NOW)
    assert [(e["xid"], e["time"], e["pid"], e["process_name"]) for e in xids] == [
        (13, "2026-11-24T03:17:52Z", None, None), (13, "2026-11-24T03:17:52Z", None, None),
        (109, "2026-11-24T03:17:58Z", 220417, "python3")]
    assert set(e["pci_bus_id"] for e in xids) == {"0000:4e:00.0"} and kernel == []
    assert xids[0]["message"] == "Graphics SM Warp Exception on (GPC 3, TPC 1, SM 0): Illegal Instruction Encoding"
    assert xids[2]["message"] == "Ch 00000010, errorString CTX SWITCH TIMEOUT, Info 0x3c009"
    valid(xids, kernel)


def test_dmesg_ctime_window():
    assert parse_kernel_log(DMESG_CTIME, now=NOW, window_seconds=72 * 3600) == ([], [])


def test_bare_lines_with_pci_domains_and_no_time():
    xids = parse_kernel_log(BARE, now=NOW, window_seconds=3600)[0]
    assert [(e["pci_bus_id"], e["xid"], e["pid"], e["time"]) for e in xids] == [
        ("0021:01:00.0", 149, None, None), ("0020:01:00.0", 145, None, None), ("0000:b7:00.0", 94, 77120, None)]
    assert xids[0]["message"].startswith("NETIR Fatal XC0 i0 Link -1 (0x000fe406")
    assert (xids[2]["process_name"], xids[2]["message"]) == ("torchrun", "Contained ECC error")


def test_kernel_prefix_and_caused_by_suffix():
    xids = parse_kernel_log(JOURNAL_KERNEL_PREFIX, now=NOW)[0]
    assert [(e["pci_bus_id"], e["xid"], e["pid"], e["process_name"]) for e in xids] == [
        ("0000:87:00.0", 45, 301877, "python3"), ("0000:90:00.0", 45, 301879, "python3")]
    assert [e["message"] for e in xids] == ["Ch 00000004 caused by previous Xid 149",
                                            "Ch 0000000a caused by previous Xid 145"]


def test_lines_without_a_name_field():
    xids = parse_kernel_log(NO_NAME_FIELD, now=NOW)[0]
    assert [(e["xid"], e["pid"], e["process_name"], e["time"]) for e in xids] == [
        (31, 5120, None, "2026-03-04T09:20:15Z"), (43, 5120, None, "2026-03-04T09:20:15Z")]
    assert xids[0]["message"].startswith("Ch 00000008, intr 10000000. MMU Fault: ENGINE GRAPHICS")
    assert xids[1]["message"] == "Ch 00000008"


def test_syslog_012_escapes_give_the_api_mismatch_versions():
    xids, kernel = parse_kernel_log(SYSLOG_012, now=NOW)
    assert xids == [] and len(kernel) == 1
    event = kernel[0]
    assert (event["kind"], event["client_version"], event["kernel_module_version"]) == (
        "api_mismatch", "550.90.07", "550.54.15")
    assert event["time"] == "2026-10-02T08:14:37Z"
    assert "#012" not in event["message"] and "NVRM" not in event["message"]
    assert event["message"].endswith("components have the same version.")
    valid(xids, kernel)


def test_syslog_date_after_now_is_last_year():
    kernel = parse_kernel_log(SYSLOG_012, now=utc_epoch("2027-01-10T00:00:00"))[1]
    assert kernel[0]["time"] == "2026-10-02T08:14:37Z"
    kernel = parse_kernel_log(SYSLOG_012, now=utc_epoch("2026-09-01T00:00:00"))[1]
    assert kernel[0]["time"] == "2025-10-02T08:14:37Z"


def test_raw_dmesg_continuation_lines():
    xids, kernel = parse_kernel_log(RAW_DMESG_CONTINUATION, now=NOW)
    assert xids == []
    assert [(e["client_version"], e["kernel_module_version"], e["time"]) for e in kernel] == [
        ("535.183.06", "535.161.08", "912.004411")]
    placed = parse_kernel_log(RAW_DMESG_CONTINUATION, now=NOW, boot_time=utc_epoch("2026-11-30T10:00:00"))[1]
    assert placed[0]["time"] == "2026-11-30T10:15:12.004411Z"


def test_kmsg_records_with_key_value_lines():
    xids, kernel = parse_kernel_log(KMSG, now=NOW)
    assert [(e["xid"], e["time"], e["pid"]) for e in xids] == [(48, "143.118502", 9044), (63, "143.118530", 9044)]
    assert xids[0]["message"].endswith("at partition 3, subpartition 0.")  # not the KEY=value lines
    assert kernel == []
    placed = parse_kernel_log(KMSG, now=NOW, boot_time=utc_epoch("2026-11-30T11:00:00"))[0]
    assert [e["time"] for e in placed] == ["2026-11-30T11:02:23.118502Z", "2026-11-30T11:02:23.118530Z"]
    valid(xids, kernel)


def test_kmsg_without_nvrm_records_gives_nothing():
    assert parse_kernel_log(KMSG.splitlines()[-1], now=NOW) == ([], [])


def test_mig_attributed_and_legacy_xid_lines():
    mig = "NVRM: Xid (PCI:0000:c1:00 GPU-I:03): 94, pid=40021, Contained: SM (0x1). RST: No, D-RST: No"
    xids = parse_kernel_log(mig, now=NOW)[0]
    assert (xids[0]["pci_bus_id"], xids[0]["xid"], xids[0]["gpu_instance_id"], xids[0]["compute_instance_id"]) == (
        "0000:c1:00.0", 94, 3, None)
    assert (xids[0]["pid"], xids[0]["process_name"], xids[0]["message"]) == (
        40021, None, "Contained: SM (0x1). RST: No, D-RST: No")
    legacy = parse_kernel_log("NVRM: Xid (0000:06:00): 31, Ch 00000002, engmask 00000101", now=NOW)[0]
    assert (legacy[0]["pci_bus_id"], legacy[0]["xid"], legacy[0]["message"]) == (
        "0000:06:00.0", 31, "Ch 00000002, engmask 00000101")


def test_all_formats_together():
    text = "\n".join([DMESG_CTIME, BARE, JOURNAL_KERNEL_PREFIX, NO_NAME_FIELD, SYSLOG_012, RAW_DMESG_CONTINUATION])
    xids, kernel = parse_kernel_log(text, now=NOW)
    assert len(xids) == 3 + 3 + 2 + 2
    assert [e["kind"] for e in kernel] == ["api_mismatch", "api_mismatch"]
    valid(xids, kernel)
