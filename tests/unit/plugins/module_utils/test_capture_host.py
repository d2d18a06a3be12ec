"""Captured hosts read through the collectors (issue 31 section 1; docs/offline.md): a captured root laid out like
the host with sos_commands/, this collection's incident bundle, and an nvidia-bug-report.log(.gz); each read with
the capture's clock, and the facts' inputs say what was read, absent or not supported."""

import gzip
import json
import os
import shutil
import tarfile

import pytest

from ansible_collections.gpufleet.core.plugins.module_utils import collector
from ansible_collections.gpufleet.core.plugins.module_utils.capture_host import (
    CaptureError, open_capture, parse_date_output, split_bug_report)
from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.diagnose import diagnose_fleet
from tests.support.capture_roots import root_from_fixture, write_file
from tests.support.schema_check import assert_valid_facts

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
FIXTURES = os.path.join(ROOT, "inventories", "demo", "fixtures")
BUG_REPORT = os.path.join(ROOT, "tests", "fixtures", "captures", "nvidia-bug-report-sample.log")
XID79_LINE = "NVRM: Xid (PCI:0000:41:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus."


def demo_fixture(name):
    with open(os.path.join(FIXTURES, name + ".json")) as handle:
        return json.load(handle)


def collect(capture, subsets=None):
    facts, _recorded = collector.Collection(capture=capture, gather_subset=subsets).run()
    assert_valid_facts(facts)
    return facts


def rule_ids(facts, host="node"):
    return sorted((finding["rule"], finding.get("gpu")) for finding in diagnose_fleet({host: facts}, {})[host])


def inputs_by_step(facts):
    return dict((entry["input"], entry["status"]) for entry in facts["inputs"])


# --- a captured root -------------------------------------------------------------------------------------

def test_a_captured_root_of_a_demo_host_gives_the_facts_and_findings_of_its_live_audit(tmp_path):
    fixture = demo_fixture("gpu-t4-nvsmi-14")
    live, _recorded = collector.Collection(source="replay", fixture=fixture, gather_subset=fixture["gather_subset"]).run()
    captured = collect(open_capture(root_from_fixture(fixture, str(tmp_path))), fixture["gather_subset"])
    for key in ("collected_at", "driver", "gpus", "host", "xid_events", "kernel_events", "kubernetes", "bmc",
                "collection"):
        assert captured[key] == live[key], key
    assert captured["source"] == "nvidia_smi" and captured["capture"]["kind"] == "root"
    assert rule_ids(captured) == rule_ids(live) and rule_ids(live)


def test_the_capture_clock_counts_the_kernel_log_window_not_now(tmp_path):
    root = str(tmp_path)
    write_file(root, "capture.json", json.dumps({"collected_at": "2020-03-02T10:00:00Z"}))
    write_file(root, "var/log/kern.log", "2020-03-01T09:00:00+00:00 node kernel: %s\n"
                                         "2020-02-20T09:00:00+00:00 node kernel: %s\n" % (XID79_LINE, XID79_LINE))
    facts = collect(open_capture(root), ["kernel_log"])
    # the first line is 25 hours before the capture (in the 72-hour window), the second ten days: outside
    assert facts["collected_at"] == "2020-03-02T10:00:00Z"
    assert [event["time"] for event in facts["xid_events"]] == ["2020-03-01T09:00:00Z"]
    assert facts["capture"]["kernel_log_files"] == [os.path.join(root, "var/log/kern.log")]


def test_proc_pressure_and_the_kubernetes_node_are_read_from_a_captured_root(tmp_path):
    root = str(tmp_path)
    write_file(root, "sos_commands/date/date", "Sun Dec  6 19:27:22 UTC 2026\n")
    for name in ("cpu", "memory", "io"):
        write_file(root, "proc/pressure/" + name, "some avg10=61.00 avg60=40.00 avg300=20.00 total=1000\n"
                                                  "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n")
    write_file(root, "proc/meminfo", "MemTotal: 1000000 kB\nMemAvailable: 500000 kB\n")
    write_file(root, "proc/loadavg", "1.00 1.00 1.00 1/100 100\n")
    write_file(root, "sys/devices/system/cpu/online", "0-3\n")
    write_file(root, "proc/vmstat", "pswpin 0\npswpout 0\n")
    write_file(root, "var/lib/kubelet/config.yaml", "kind: KubeletConfiguration\n")
    facts = collect(open_capture(root), ["host_pressure", "kubernetes"])
    assert facts["collected_at"] == "2026-12-06T19:27:22Z"
    assert facts["host_pressure"]["pressure"]["cpu"]["some_avg10"] == 61.0
    assert facts["kubernetes"]["node"] is True
    assert inputs_by_step(facts) == {"driver": "absent", "host_pressure": "read", "kubernetes": "read"}


def test_a_captured_root_without_a_clock_is_refused_by_name(tmp_path):
    with pytest.raises(CaptureError, match="%s has no clock" % tmp_path):
        open_capture(str(tmp_path))


def test_a_path_that_is_no_capture_is_named(tmp_path):
    other = tmp_path / "notes.txt"
    other.write_text("hello\n")
    with pytest.raises(CaptureError, match="notes.txt is neither"):
        open_capture(str(other))
    with pytest.raises(CaptureError, match="missing does not exist"):
        open_capture(str(tmp_path / "missing"))


@pytest.mark.parametrize("text, expected", [
    ("Sun Dec  6 19:27:22 UTC 2026\n", (1796585242, None)),
    ("Date: Fri Dec  4 09:30:00 GMT 2026", (1796376600, None)),
    ("Sun Dec  6 20:27:22 +0100 2026", (1796585242, None)),
    ("Sun Dec  6 19:27:22 CET 2026", (1796585242, "time zone CET taken as UTC")),
])
def test_date_outputs_give_the_capture_clock(text, expected):
    assert parse_date_output(text) == expected


# --- an incident bundle ------------------------------------------------------------------------------

def write_bundle(folder, host_clock, kernel_log, xml=None):
    os.makedirs(folder)
    files = [{"file": "kernel.log", "command": "journalctl _TRANSPORT=kernel", "status": "ok"}]
    write_file(folder, "kernel.log", kernel_log)
    if xml is not None:
        write_file(folder, "nvidia-smi-q.xml", xml)
        files.append({"file": "nvidia-smi-q.xml", "command": "nvidia-smi -q -x", "status": "ok"})
    manifest = {"format": "gpufleet-evidence", "format_version": 1, "host": "h", "status": "ok",
                "window": {"since": host_clock - 86400, "until": host_clock},
                "host_clock": {"now": host_clock, "utc_offset_seconds": 0}, "files": files}
    write_file(folder, "manifest.json", json.dumps(manifest))
    return folder


def test_an_incident_bundle_and_its_archive_give_the_findings_of_the_live_host(tmp_path):
    fixture = demo_fixture("gpu-t4-nvsmi-14")
    commands = fixture["host"]["commands"]
    xml = commands["nvidia-smi -q -x"]["stdout"]
    clock = fixture["host"]["now"]
    stamp = __import__("time").strftime("%Y-%m-%dT%H:%M:%S+0000", __import__("time").gmtime(clock - 3600))
    kernel = "%s node kernel: NVRM: Xid (PCI:0000:00:1e): 48, pid=1, name=python, An uncorrectable double bit error\n" % stamp
    live_fixture = json.loads(json.dumps(fixture))
    live_fixture["host"]["commands"]["journalctl _TRANSPORT=kernel -o short-iso --no-pager --since=-72h"]["stdout"] = kernel
    live, _recorded = collector.Collection(source="replay", fixture=live_fixture,
                                           gather_subset=["driver", "gpus", "kernel_log"]).run()
    folder = write_bundle(str(tmp_path / "evidence" / "h"), clock, kernel, xml)
    bundle = collect(open_capture(folder), ["driver", "gpus", "kernel_log"])
    assert bundle["capture"]["kind"] == "incident_bundle"
    assert bundle["collected_at"] == live["collected_at"]
    assert bundle["gpus"] == live["gpus"] and bundle["xid_events"] == live["xid_events"]
    assert ("hardware.xid", "0000:00:1e.0") in rule_ids(bundle)
    live_rules = [rule for rule, _gpu in rule_ids(live) if rule != "driver.collection_errors"]
    assert [rule for rule, _gpu in rule_ids(bundle) if rule != "driver.collection_errors"] == live_rules
    archive = str(tmp_path / "evidence-h.tar.gz")
    with tarfile.open(archive, "w:gz") as handle:
        handle.add(folder, arcname="h")
    from_archive = collect(open_capture(archive), ["driver", "gpus", "kernel_log"])
    assert from_archive["xid_events"] == bundle["xid_events"] and from_archive["gpus"] == bundle["gpus"]


def test_an_incident_bundle_says_what_it_cannot_hold(tmp_path):
    folder = write_bundle(str(tmp_path / "b"), 1796585242, "")
    facts = collect(open_capture(folder), ["host_pressure", "bmc"])
    steps = inputs_by_step(facts)
    assert steps == {"driver": "absent", "host_pressure": "absent", "bmc": "absent"}
    assert any("/proc and /sys" in item for item in facts["capture"]["lacks"])


# --- an nvidia-bug-report.log ------------------------------------------------------------------------

def test_the_bug_report_sample_is_split_into_its_sections():
    with open(BUG_REPORT) as handle:
        sections = split_bug_report(handle.read())
    heads = [next(line for line in section if line.strip()).strip() for section in sections]
    assert heads[1:] == ["*** /etc/issue", "*** /etc/os-release", "Scanning kernel log files for NVIDIA kernel messages:",
                         "dmesg:", "*** /proc/driver/nvidia/version", "/usr/bin/nvidia-smi --query",
                         "End of NVIDIA bug report log file."]


@pytest.mark.parametrize("compress", [False, True])
def test_an_nvidia_bug_report_gives_its_xid_kernel_module_and_host_with_its_own_clock(tmp_path, compress):
    path = BUG_REPORT
    if compress:
        path = str(tmp_path / "nvidia-bug-report.log.gz")
        with open(BUG_REPORT, "rb") as source, gzip.open(path, "wb") as target:
            shutil.copyfileobj(source, target)
    facts = collect(open_capture(path))
    assert facts["collected_at"] == "2026-11-30T06:00:00Z"
    assert facts["capture"]["kind"] == "nvidia_bug_report"
    # the scan's lines with their wall-clock times, not dmesg's as well: one Xid 79, not two
    assert [(event["xid"], event["pci_bus_id"], event["time"]) for event in facts["xid_events"]] == [
        (79, "0000:ab:00.0", "2026-11-29T21:14:07Z")]
    assert facts["driver"]["kernel_module_version"] == "550.90.07"
    assert facts["host"]["hostname"] == "gpu-h100-xid79-02" and facts["host"]["kernel"] == "5.15.0-119-generic"
    assert facts["host"]["os"]["id"] == "ubuntu"
    steps = inputs_by_step(facts)
    assert steps["kernel_log"] == "read" and steps["bmc"] == "absent" and steps["host_pressure"] == "absent"
    # the GPUs of the report's text nvidia-smi --query: seven read, the one nvidia-smi could not open lost
    assert not any("nvidia-smi" in item for item in facts["capture"]["lacks"])
    assert facts["collection"]["status"] == "complete"
    assert [(gpu["pci_bus_id"], gpu["lost"]) for gpu in facts["gpus"]][4:7] == [
        ("0000:9a:00.0", False), ("0000:ab:00.0", True), ("0000:ba:00.0", False)]
    assert len(facts["gpus"]) == 8 and facts["gpus"][0]["name"] == "NVIDIA H100 80GB HBM3"
    assert facts["driver"]["version"] == "550.90.07"
    assert facts["nvidia_present"] is True
    assert ("hardware.gpu_lost", "0000:ab:00.0") in rule_ids(facts)


def test_a_bug_report_without_its_date_line_is_named(tmp_path):
    path = tmp_path / "nvidia-bug-report.log"
    path.write_text("Start of NVIDIA bug report log file.\n\nuname: Linux h 5.15 x\n")
    with pytest.raises(CaptureError, match="nvidia-bug-report.log: the bug report's header has no Date line"):
        open_capture(str(path))


def test_a_bundles_systemctl_show_answers_the_units_asked_in_their_order(tmp_path):
    folder = write_bundle(str(tmp_path / "b"), 1796585242, "")
    write_file(folder, "systemctl-show.txt", "Id=b.service\nActiveState=failed\n\nId=a.service\nActiveState=active\n")
    manifest = json.loads(open(os.path.join(folder, "manifest.json")).read())
    manifest["files"].append({"file": "systemctl-show.txt", "command": "systemctl show", "status": "ok"})
    write_file(folder, "manifest.json", json.dumps(manifest))
    capture = open_capture(folder)
    answer = capture.run(["/usr/bin/systemctl", "show", "--property=Id,ActiveState", "a.service", "c.service",
                          "b.service"], 5)
    assert answer.rc == 0
    assert answer.stdout == "Id=a.service\nActiveState=active\n\nId=b.service\nActiveState=failed\n"


def test_a_sosreport_root_gives_the_host_name_from_etc_hostname(tmp_path):
    root = str(tmp_path)
    write_file(root, "sos_commands/date/date", "Sun Dec  6 19:27:22 UTC 2026\n")
    write_file(root, "etc/hostname", "node-7\n")
    facts = collect(open_capture(root), ["host"])
    assert facts["host"]["hostname"] == "node-7"


def test_a_capture_without_a_kernel_log_says_the_kernel_log_is_absent(tmp_path):
    root = str(tmp_path)
    write_file(root, "sos_commands/date/date", "Sun Dec  6 19:27:22 UTC 2026\n")
    facts = collect(open_capture(root), ["kernel_log"])
    assert facts["capture"]["kernel_log_files"] == []
    assert [entry for entry in facts["inputs"] if entry["input"] == "kernel_log"] == [
        {"input": "kernel_log", "status": "absent", "sources_read": 0, "sources": [], "sources_left_out": 0}]
