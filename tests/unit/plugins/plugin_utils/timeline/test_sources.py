"""The timeline's parsers, one per evidence source, on samples written in each program's documented format."""

import json

from ansible_collections.gpufleet.core.plugins.plugin_utils.timeline.bmc import clock_offset, sel_events
from ansible_collections.gpufleet.core.plugins.plugin_utils.timeline.boots import boot_events
from ansible_collections.gpufleet.core.plugins.plugin_utils.timeline.events import epoch_of_iso, iso
from ansible_collections.gpufleet.core.plugins.plugin_utils.timeline.journal import journal_events
from ansible_collections.gpufleet.core.plugins.plugin_utils.timeline.kernel import kernel_events
from ansible_collections.gpufleet.core.plugins.plugin_utils.timeline.packages import dnf_events, dpkg_events

HOST = "gpu-07"
OOM_CONTEXT = ("2026-11-29T21:20:00.000000+00:00 gpu-07 kernel: oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),"
               "cpuset=/,mems_allowed=0,oom_memcg=/system.slice/trainer.service,"
               "task_memcg=/system.slice/trainer.service,task=python3,pid=4343,uid=0\n")
KERNEL_LOG = """2026-11-29T21:13:50.120000+00:00 gpu-07 kernel: pcieport 0000:3a:00.0: AER: Corrected error received: 0000:3b:00.0
2026-11-29T21:13:50.120100+00:00 gpu-07 kernel: nvidia 0000:3b:00.0: PCIe Bus Error: severity=Corrected, type=Physical Layer, (Receiver ID)
2026-11-29T21:14:07.500000+00:00 gpu-07 kernel: NVRM: GPU at PCI:0000:3b:00: GPU-1
2026-11-29T21:14:07.500000+00:00 gpu-07 kernel: NVRM: Xid (PCI:0000:3b:00): 13, pid=4242, name=python3, Graphics Exception: ESR 0x405
2026-11-29T21:20:00.000000+00:00 gpu-07 kernel: python3 invoked oom-killer: gfp_mask=0xcc0(GFP_KERNEL), order=0
{oom}2026-11-29T21:20:00.000000+00:00 gpu-07 kernel: Memory cgroup out of memory: Killed process 4343 (python3) total-vm:100kB, anon-rss:50kB
2026-11-29T22:00:00.000000+00:00 gpu-07 kernel: NVRM: API mismatch: the client has the version 550.90.07, but
2026-11-29T22:00:00.000000+00:00 gpu-07 kernel: NVRM: this kernel module has the version 550.54.15.  Please
""".format(oom=OOM_CONTEXT)


def test_kernel_events_carry_the_line_they_came_from_and_utc_times():
    events = kernel_events(KERNEL_LOG, HOST, "kernel.log", "host clock, UTC")
    by_kind = {event["kind"]: event for event in events}
    xid = by_kind["xid"]
    assert xid["time"] == "2026-11-29T21:14:07.500000Z" and xid["gpu"] == "0000:3b:00.0"
    assert xid["evidence"] == {"file": "kernel.log", "line": 4}
    assert "Xid (PCI:0000:3b:00): 13" in xid["line"]
    assert xid["details"] == {"xid": 13, "pid": 4242, "process_name": "python3"}
    assert xid["layer"] == "hardware" and xid["source"] == "kernel"
    oom = by_kind["oom_kill"]
    assert oom["details"] == {"pid": 4343, "process_name": "python3", "unit": "trainer.service"}
    assert oom["evidence"]["line"] == 7 and oom["layer"] == "workload"
    assert by_kind["api_mismatch"]["layer"] == "driver" and by_kind["api_mismatch"]["evidence"]["line"] == 8
    aer = [event for event in events if event["kind"] == "pcie_aer"]
    assert [event["gpu"] for event in aer] == ["0000:3b:00.0", "0000:3b:00.0"]
    assert aer[0]["summary"] == "PCIe AER corrected error on 0000:3b:00.0"
    assert "Physical Layer" in aer[1]["summary"]


def test_kernel_events_of_empty_or_garbage_text():
    assert kernel_events("", HOST, "kernel.log", "c") == []
    assert kernel_events("\x00\xff garbage NVRM: Xid (\n[", HOST, "kernel.log", "c") == []


SXID_LOG = "".join(line + "\n" for line in [
    "2026-11-29T21:14:05.000000+00:00 gpu-07 kernel: nvidia-nvswitch2: "
    "SXid (PCI:0000:15:00.0): 20034, Fatal, Link 30 LTSSM Fault Up",
    "2026-11-29T21:14:05.000000+00:00 gpu-07 kernel: nvidia-nvswitch2: "
    "SXid (PCI:0000:15:00.0): 20034, Data {0x50610002, 0x10100030}",
    "2026-11-29T21:14:07.500000+00:00 gpu-07 kernel: "
    "NVRM: Xid (PCI:0000:3b:00): 74, pid='<unknown>', name=<unknown>, NVLink: fatal error detected on link 3",
])


def test_nvswitch_errors_are_timeline_events_beside_the_nvlink_xid():
    events = kernel_events(SXID_LOG, HOST, "kernel.log", "host clock, UTC")
    by_kind = {event["kind"]: event for event in events}
    assert sorted(by_kind) == ["sxid", "xid"]
    sxid = by_kind["sxid"]
    assert sxid["time"] == "2026-11-29T21:14:05Z" and sxid["gpu"] is None and sxid["layer"] == "hardware"
    assert sxid["evidence"] == {"file": "kernel.log", "line": 1}
    assert sxid["details"] == {"sxid": 20034, "fatal": True, "link": 30}
    assert sxid["summary"] == ("NVSwitch SXid 20034 on nvidia-nvswitch2 (0000:15:00.0): "
                               "Fatal, Link 30 LTSSM Fault Up")
    assert by_kind["xid"]["evidence"]["line"] == 3


def record(stamp_us, message, **fields):
    entry = {"__REALTIME_TIMESTAMP": str(stamp_us), "__CURSOR": "c%d" % stamp_us, "MESSAGE": message,
             "_BOOT_ID": "b1"}
    entry.update(fields)
    return json.dumps(entry)


def test_journal_service_events_by_message_id_and_by_text():
    base = 1795986000 * 1000000
    text = "\n".join([
        record(base, "trainer.service: A process of this unit has been killed by the OOM killer.", UNIT="trainer.service",
               _PID="1", MESSAGE_ID="fe6faa94e7774663a0da52717891d8ef"),
        record(base + 1, "trainer.service: Failed with result 'oom-kill'.", UNIT="trainer.service", _PID="1",
               MESSAGE_ID="d9b373ed55a64feb8242e02dbe79a49c", UNIT_RESULT="oom-kill"),
        record(base + 2, "trainer.service: Scheduled restart job, restart counter is at 2.", UNIT="trainer.service",
               _PID="1"),
        record(base + 3, "Started trainer.service - Trainer.", UNIT="trainer.service", _PID="1"),
        record(base + 4, "epoch 3 done", _SYSTEMD_UNIT="trainer.service", _PID="4343"),
        record(base + 5, [82, 117, 110, 116, 105, 109, 101, 69, 114, 114, 111, 114, 58, 32, 67, 85, 68, 65, 32, 101,
                          114, 114, 111, 114, 255], _SYSTEMD_UNIT="trainer.service", _PID="4343"),
        "not json",
        json.dumps(["a list"]),
    ])
    events = journal_events(text, HOST, "journal-services.json")
    assert [event["kind"] for event in events] == ["oom_kill", "oom_kill", "service_restart", "service_start",
                                                   "service_log"]
    assert events[0]["time"] == "2026-11-29T21:00:00Z"
    assert events[1]["details"]["result"] == "oom-kill"
    assert events[2]["details"]["unit"] == "trainer.service"
    assert events[4]["details"]["pid"] == 4343 and "CUDA error" in events[4]["summary"]
    assert events[2]["evidence"] == {"file": "journal-services.json", "line": 3}
    assert events[0]["clock"].startswith("host clock, UTC")


def test_journal_records_seen_in_another_file_are_not_repeated():
    text = record(1795986000000000, "Stopped trainer.service.", UNIT="trainer.service", _PID="1")
    seen = set()
    assert len(journal_events(text, HOST, "a.json", seen)) == 1
    assert journal_events(text, HOST, "b.json", seen) == []


SEL = """   1 | 11/29/2026 | 21:13:58 | Power Supply #0x51 | Power Supply AC lost | Asserted
   2 | 11/29/2026 | 21:14:30 | Temperature #0x30 | Upper Critical going high | Asserted
   3 | Pre-Init  |0000000000| System Event #0x83 | Timestamp Clock Sync | Asserted
garbage line
"""


def test_sel_events_read_the_bmc_clock_and_correct_a_visible_skew():
    host_now = epoch_of_iso("2026-11-30T06:00:00Z")
    events = sel_events(SEL, HOST, "ipmitool-sel-elist.txt", clock_offset("11/30/2026 06:00:02", host_now))
    assert [event["time"] for event in events] == ["2026-11-29T21:13:58Z", "2026-11-29T21:14:30Z", None]
    assert events[0]["summary"] == "BMC: Power Supply #0x51: Power Supply AC lost Asserted"
    assert "within 30 s" in events[0]["clock"]
    skewed = sel_events(SEL, HOST, "x", clock_offset("11/30/2026 07:00:00", host_now))
    assert skewed[0]["time"] == "2026-11-29T20:13:58Z" and "moved by -3600 s" in skewed[0]["clock"]
    assert "unknown" in sel_events(SEL, HOST, "x", None)[0]["clock"]


def test_dpkg_log_keeps_gpu_packages_and_applies_the_host_offset():
    text = ("2026-11-29 11:02:44 upgrade tzdata:all 2024a 2024b\n"
            "2026-11-29 12:00:01 upgrade nvidia-driver-550:amd64 550.54.15-0ubuntu1 550.90.07-0ubuntu1\n"
            "2026-11-29 12:00:05 remove libnvidia-compute-535:amd64 535.183.06-0ubuntu1 <none>\n"
            "2026-11-29 12:00:06 status installed nvidia-driver-550:amd64 550.90.07-0ubuntu1\n")
    events = dpkg_events(text, HOST, "dpkg.log", utc_offset_seconds=3600)
    assert [(event["kind"], event["time"]) for event in events] == [
        ("package_upgrade", "2026-11-29T11:00:01Z"), ("package_remove", "2026-11-29T11:00:05Z")]
    assert events[0]["summary"] == "dpkg upgrade nvidia-driver-550:amd64 (550.54.15-0ubuntu1 -> 550.90.07-0ubuntu1)"
    assert events[0]["evidence"]["line"] == 2 and "+3600" in events[0]["clock"]


def test_dnf_rpm_log_with_its_offset():
    text = ("2026-11-29T12:00:01+0100 SUBDEBUG Upgrade: nvidia-driver-3:550.90.07-1.el9.x86_64\n"
            "2026-11-29T12:00:09+0100 SUBDEBUG Installed: vim-2:9.0-1.el9.x86_64\n"
            "2026-11-29T12:01:00+0100 SUBDEBUG Erase: kmod-nvidia-3:550.54.15-1.el9.x86_64\n")
    events = dnf_events(text, HOST, "dnf.rpm.log")
    assert [(event["kind"], event["time"]) for event in events] == [
        ("package_upgrade", "2026-11-29T11:00:01Z"), ("package_remove", "2026-11-29T11:01:00Z")]


def test_boot_list_gives_reboots_with_the_end_of_the_boot_before():
    text = ("IDX BOOT ID                          FIRST ENTRY                 LAST ENTRY\n"
            " -1 9a8b7c6d5e4f40312233445566778899 Sun 2026-11-29 06:00:01 UTC Sun 2026-11-29 21:15:02 UTC\n"
            "  0 5d1c0f3ab6e94f3c9a0e2b7c4d8e1f20 Sun 2026-11-29 21:17:40 UTC Mon 2026-11-30 06:00:00 UTC\n")
    events = boot_events(text, HOST, "boots.txt")
    assert [(event["kind"], event["time"], event["evidence"]["line"]) for event in events] == [
        ("boot", "2026-11-29T06:00:01Z", 2), ("boot_end", "2026-11-29T21:15:02Z", 2),
        ("boot", "2026-11-29T21:17:40Z", 3)]
    assert events[2]["summary"] == "host booted: boot 5d1c0f3a (0) began"
    # systemd before 250: one column "FIRST—LAST"
    old = " -1 9a8b7c6d5e4f40312233445566778899 Sun 2026-11-29 06:00:01 UTC—Sun 2026-11-29 21:15:02 UTC\n"
    assert boot_events(old, HOST, "boots.txt")[0]["time"] == "2026-11-29T06:00:01Z"


def test_iso_round_trip():
    assert iso(epoch_of_iso("2026-11-29T21:14:07.5Z")) == "2026-11-29T21:14:07.500000Z"
    assert epoch_of_iso("2026-11-29 21:14:07") is None and iso(None) is None
