"""Evidence bundles on the controller (manifest, archive, sha256 checks), the timeline built from them (one UTC
axis, the window, events close in time across sources, the earlier runs and first sightings) and the fault log."""

import base64
import hashlib
import json
import os
import tarfile

from ansible_collections.gpufleet.core.plugins.plugin_utils.incident.evidence_bundle import safe_item_name, write_bundle
from ansible_collections.gpufleet.core.plugins.plugin_utils.incident.fault_log import render_fault_log
from ansible_collections.gpufleet.core.plugins.plugin_utils.timeline.build import build_timeline
from ansible_collections.gpufleet.core.plugins.plugin_utils.timeline.past_runs import ReportFolderHistory, RunHistory
from ansible_collections.gpufleet.core.plugins.plugin_utils.timeline.events import epoch_of_iso

SINCE = epoch_of_iso("2026-11-29T06:00:00Z")
UNTIL = epoch_of_iso("2026-11-30T06:00:00Z")
HOST = "gpu-07"


def item(name, content, layer="hardware", command=None, status="ok", encoding="utf-8"):
    data = base64.b64decode(content) if encoding == "base64" else content.encode()
    return {"name": name, "layer": layer, "command": command or name, "status": status, "why": None, "rc": 0,
            "duration_s": 0.1, "cut": None, "size": len(data), "sha256": hashlib.sha256(data).hexdigest(),
            "encoding": encoding, "content": content}


def journal_line(stamp, message, **fields):
    entry = {"__REALTIME_TIMESTAMP": str(int(epoch_of_iso(stamp) * 1000000)), "__CURSOR": stamp, "MESSAGE": message}
    entry.update(fields)
    return json.dumps(entry)


def evidence_result():
    kernel = ("2026-11-28T10:00:00.000000+00:00 gpu-07 kernel: NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.\n"
              "2026-11-29T21:14:07.000000+00:00 gpu-07 kernel: NVRM: Xid (PCI:0000:3b:00): 13, pid=4242, name=python3, "
              "Graphics Exception\n")
    journal = "\n".join([
        journal_line("2026-11-29T21:14:30Z", "trainer.service: Main process exited, code=killed, status=6/ABRT",
                     UNIT="trainer.service", _PID="1"),
        journal_line("2026-11-29T21:24:00Z", "trainer.service: Scheduled restart job, restart counter is at 1.",
                     UNIT="trainer.service", _PID="1"),
    ])
    sel = "   1 | 11/29/2026 | 21:14:01 | Power Supply #0x51 | Power Supply AC lost | Asserted\n"
    return {
        "window": {"since": SINCE, "until": UNTIL},
        "host_clock": {"now": UNTIL, "utc_offset_seconds": 0},
        "kernel_log_source": "auto", "units": ["trainer.service"], "pid_units": {"4242": "trainer.service"},
        "evidence": [
            item("kernel.log", kernel, command="journalctl _TRANSPORT=kernel"),
            item("journal-services.json", journal, layer="workload"),
            item("ipmitool-sel-elist.txt", sel),
            item("ipmitool-sel-time.txt", "11/30/2026 06:00:01\n"),
            item("../../etc/passwd", "not a path"),
            item("nvidia-bug-report.log.gz", base64.b64encode(b"\x1f\x8b binary").decode(), layer="driver",
                 encoding="base64"),
            {"name": "lspci-nvidia.txt", "layer": "hardware", "command": "lspci -vvv -d 10de:", "status": "missing",
             "why": "lspci is not installed", "rc": None, "duration_s": 0.0, "cut": None, "size": 0, "sha256": None,
             "encoding": None, "content": None},
        ],
    }


def test_bundle_writes_every_file_a_manifest_and_one_archive(tmp_path):
    manifest = write_bundle(str(tmp_path), HOST, HOST, evidence_result(), facts={"schema_version": "1.1"})
    folder = tmp_path / "evidence" / HOST
    files = {entry["name"]: entry for entry in manifest["files"] if entry.get("name")}
    assert (folder / "kernel.log").read_text().startswith("2026-11-28T10:00:00")
    assert files["kernel.log"]["sha256"] == hashlib.sha256((folder / "kernel.log").read_bytes()).hexdigest()
    assert (folder / "nvidia-bug-report.log.gz").read_bytes() == b"\x1f\x8b binary"
    assert files["../../etc/passwd"]["file"] == "etc_passwd" and (folder / "etc_passwd").exists()
    assert files["lspci-nvidia.txt"] == dict(files["lspci-nvidia.txt"], file=None, status="missing",
                                             why="lspci is not installed", sha256=None)
    assert manifest["files"][-1]["file"] == "facts.json"
    on_disk = json.loads((folder / "manifest.json").read_text())
    assert on_disk == manifest and manifest["archive"] == "evidence-gpu-07.tar.gz"
    with tarfile.open(str(folder / manifest["archive"])) as archive:
        names = sorted(archive.getnames())
        assert names == sorted("gpu-07/%s" % name for name in (
            "kernel.log", "journal-services.json", "ipmitool-sel-elist.txt", "ipmitool-sel-time.txt", "etc_passwd",
            "nvidia-bug-report.log.gz", "facts.json", "manifest.json"))
        assert archive.extractfile("gpu-07/kernel.log").read() == (folder / "kernel.log").read_bytes()
    assert os.stat(str(folder / "kernel.log")).st_mode & 0o007 == 0


def test_bundle_of_damaged_transfer_and_of_a_host_without_evidence(tmp_path):
    result = evidence_result()
    result["evidence"][0]["sha256"] = "0" * 64
    manifest = write_bundle(str(tmp_path), HOST, HOST, result)
    assert manifest["files"][0]["status"] == "failed" and "damaged in transfer" in manifest["files"][0]["why"]
    unreachable = write_bundle(str(tmp_path), "gpu-08", "gpu-08", {"unreachable": True, "msg": "ssh: timed out"})
    assert unreachable["status"] == "unreachable" and unreachable["why"] == "ssh: timed out"
    assert (tmp_path / "evidence" / "gpu-08" / "manifest.json").exists()


def test_safe_item_names_never_collide():
    taken = set()
    assert [safe_item_name(name, taken) for name in ("a.txt", "a.txt", "manifest.json", "", "x/y")] == [
        "a.txt", "a.txt.2", "manifest.json.2", "item", "x_y"]


def write_run(root, name, started, findings):
    folder = root / name
    folder.mkdir()
    report = {"run": {"id": name, "started_at": started, "status": "complete"},
              "hosts": {HOST: {"status": "ok", "findings": findings}}, "findings": findings}
    (folder / "report.json").write_text(json.dumps(report))


FINDING = {"host": HOST, "rule": "hardware.xid_recent", "gpu": "0000:3b:00.0", "layer": "hardware",
           "severity": "warning", "summary": "Xid 13 on GPU 2", "action": "Look up Xid 13."}


def built(tmp_path, history=None):
    run_dir = tmp_path / "20261130T060000Z-incident"
    run_dir.mkdir()
    manifest = write_bundle(str(run_dir), HOST, HOST, evidence_result())
    return build_timeline(str(run_dir), {HOST: (HOST, manifest)}, [FINDING], history, "20261130T060000Z-incident")


def test_timeline_puts_the_window_on_one_axis_and_marks_close_events(tmp_path):
    timeline = built(tmp_path)
    kinds = [(event["time"], event["source"], event["kind"]) for event in timeline["events"]]
    assert kinds == [("2026-11-29T21:14:01Z", "bmc", "bmc_event"), ("2026-11-29T21:14:07Z", "kernel", "xid"),
                     ("2026-11-29T21:14:30Z", "journal", "service_exit"),
                     ("2026-11-29T21:24:00Z", "journal", "service_restart")]
    bmc, xid, exit_, restart = timeline["events"]
    assert bmc["related"] == [xid["id"], exit_["id"]]
    pairs = {tuple(pair["events"]): pair for pair in timeline["correlations"]}
    assert pairs[(bmc["id"], xid["id"])]["seconds"] == 6.0 and pairs[(bmc["id"], xid["id"])]["link"] == "time"
    # the restart 593 s after the Xid is linked through the Xid's process (pid 4242 ran in trainer.service)
    assert pairs[(xid["id"], restart["id"])]["link"] == "process"
    assert pairs[(xid["id"], restart["id"])]["why"] == "service_restart after Xid 13 of its process 4242"
    assert timeline["hosts"][HOST]["sources"]["kernel"]["events"] == 1
    assert timeline["hosts"][HOST]["sources"]["bmc"]["clock"].startswith("BMC clock, read as UTC (within")
    assert timeline["window"]["since"] == "2026-11-29T06:00:00Z"


class StoreHistory(RunHistory):
    """What the run store provides: the same two methods."""

    def runs(self, hosts, since, until):
        return [{"run_id": "r1", "started_at": "2026-11-29T12:00:00Z", "status": "complete",
                 "hosts": {HOST: {"status": "ok", "findings": 1, "worst": "warning"}}}]

    def first_seen(self, findings):
        return {(HOST, "hardware.xid_recent", "0000:3b:00.0"): "2026-11-29T12:00:00Z"}


def test_earlier_runs_and_first_sightings_from_the_run_folders(tmp_path):
    root = tmp_path
    write_run(root, "20261129T120000Z", "2026-11-29T12:00:00Z", [FINDING])
    write_run(root, "20261125T120000Z", "2026-11-25T12:00:00Z", [FINDING])
    os.symlink("20261129T120000Z", str(root / "latest"))
    timeline = built(tmp_path, ReportFolderHistory(str(root), exclude=str(root / "20261130T060000Z-incident")))
    runs = [event for event in timeline["events"] if event["kind"] == "audit_run"]
    assert [(event["time"], event["summary"]) for event in runs] == [
        ("2026-11-29T12:00:00Z", "gpufleet run 20261129T120000Z (complete): host ok, 1 finding(s), worst warning")]
    assert timeline["first_seen"] == [{"host": HOST, "rule": "hardware.xid_recent", "gpu": "0000:3b:00.0",
                                       "first_seen": "2026-11-25T12:00:00Z"}]
    assert not [event for event in timeline["events"] if event["kind"] == "finding_first_seen"]
    (tmp_path / "store").mkdir()
    stored = built(tmp_path / "store", StoreHistory())
    assert [event["kind"] for event in stored["events"] if event["source"] == "gpufleet"] == [
        "audit_run", "finding_first_seen"]


def test_fault_log_is_the_template_filled_in(tmp_path):
    timeline = built(tmp_path)
    run_dir = tmp_path / "20261130T060000Z-incident"
    manifest = json.loads((run_dir / "evidence" / HOST / "manifest.json").read_text())
    report = {"run": {"id": "20261130T060000Z-incident", "status": "complete", "rules_run": ["hardware.xid_recent"]},
              "hosts": {HOST: {"status": "ok", "findings": [FINDING]}}, "findings": [FINDING], "causes": [],
              "summary": {"by_severity": {"critical": 0, "warning": 1, "info": 0}}}
    text = render_fault_log(report, timeline, {HOST: (HOST, manifest)}, "2026-11-30T06:01:00Z")
    headings = [line for line in text.splitlines() if line.startswith("#")]
    assert headings == [
        "# Fault log: incident 20261130T060000Z-incident", "## Window", "## Symptoms", "## Hosts and GPUs affected",
        "## Layers: what was checked, what was found", "### hardware", "### driver", "### scheduling", "### workload",
        "## Likely causes, ranked", "## Recommended next actions", "## Evidence collected", "## Actions taken",
        "## Result", "## Regression test after the fix"]
    assert "- From **2026-11-29T06:00:00Z** to **2026-11-30T06:00:00Z** (UTC)." in text
    assert "1. **A BMC event (power, fans, temperature) seconds before a GPU error** (hardware, from the timeline)" in text
    assert "2. **A service restarted right after an Xid in its process** (workload, from the timeline)" in text
    assert "`lspci -vvv -d 10de:`, `nothing kept` (missing: lspci is not installed)" in text
    assert "| gpu-07 | ok | 0000:3b:00.0 | 4 | 0/1/0 |" in text
    assert "Look up Xid 13." in text
    assert "_To fill in: what was done" in text
