"""incident.yml on demo hosts, as a user runs it in a fresh clone: `ansible-playbook incident.yml -l HOST`
writes evidence/<host>/ with its manifest and archive, timeline.json, fault-log.md and the HTML timeline,
under reports/latest-partial/ (a --limit run is partial, as in audit.yml), from the recorded fixtures alone
(no root, no GPU); with gpufleet_incident_validate the active checks too, replayed from recorded results."""

import json
import os
import shutil
import subprocess
import sys
import tarfile

import pytest

from ansible_collections.gpufleet.core.plugins.plugin_utils.reports.format import expanded

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PLAYBOOK_BIN = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")
FLEET_SERIES = 'gpufleet_audit_hosts{status="ok"} 18\n'


def fresh_clone(target):
    """What a clone of this checkout holds: the tracked files and the new ones git does not ignore."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            capture_output=True, check=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        source, copy = os.path.join(ROOT, name), os.path.join(target, name)
        if not os.path.lexists(source):
            continue
        os.makedirs(os.path.dirname(copy), exist_ok=True)
        if os.path.islink(source):
            os.symlink(os.readlink(source), copy)
        else:
            shutil.copy2(source, copy)
    return target


def run_incident(clone, *arguments):
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(clone, "ansible.cfg"), ANSIBLE_NOCOLOR="1")
    env.pop("ANSIBLE_COLLECTIONS_PATH", None)
    return subprocess.run([PLAYBOOK_BIN, "incident.yml"] + list(arguments), cwd=clone, env=env,
                          capture_output=True, text=True, timeout=600, check=False)


@pytest.fixture(scope="module")
def xid79_incident(tmp_path_factory):
    clone = fresh_clone(str(tmp_path_factory.mktemp("clone")))
    # node_exporter's textfile directory, holding the fleet's file of the last complete audit
    os.makedirs(os.path.join(clone, "textfile"))
    with open(os.path.join(clone, "textfile", "gpufleet.prom"), "w") as stream:
        stream.write(FLEET_SERIES)
    result = run_incident(clone, "-l", "gpu-h100-xid79-02", "-e", "gpufleet_textfile_dir=%s" % os.path.join(clone, "textfile"))
    return os.path.join(clone, "reports", "latest-partial"), result


def test_an_incident_never_replaces_the_published_textfile(xid79_incident):
    latest_partial, result = xid79_incident
    textfile = os.path.join(os.path.dirname(os.path.dirname(latest_partial)), "textfile", "gpufleet.prom")
    assert ("Textfile: %s NOT replaced: a run of kind incident never replaces it (only a complete audit of the whole "
            "scope does)" % textfile) in result.stdout, result.stdout[-3000:]
    with open(textfile) as stream:
        assert stream.read() == FLEET_SERIES


def read_json(path):
    with open(path) as stream:
        return json.load(stream)


def test_incident_on_a_demo_host_writes_bundle_timeline_and_fault_log_under_latest_partial(xid79_incident):
    latest, result = xid79_incident
    # the demo host has a critical finding (its GPU fell off the bus): exit status 2, after every file is written
    assert result.returncode == 2, result.stdout[-3000:] + result.stderr[-3000:]
    assert os.path.islink(latest) and os.readlink(latest).endswith("-incident")
    for name in ("report.json", "report.html", "timeline.json", "fault-log.md", "facts/gpu-h100-xid79-02.json"):
        assert os.path.getsize(os.path.join(latest, name)) > 0, name
    assert read_json(os.path.join(latest, "report.json"))["run"]["status"] == "partial"


def test_a_one_host_incident_is_partial_and_never_the_fleets_latest_or_baseline(xid79_incident):
    latest_partial, _result = xid79_incident
    reports = os.path.dirname(latest_partial)
    # reports/latest (what node_exporter reads) is not moved to a one-host run: no other host's series is dropped
    assert not os.path.lexists(os.path.join(reports, "latest"))
    report = read_json(os.path.join(latest_partial, "report.json"))
    assert report["run"]["scope"]["pattern"] == "all" and report["run"]["scope"]["limit"] == "gpu-h100-xid79-02"
    with open(os.path.join(latest_partial, "gpufleet.prom")) as stream:
        series = stream.read()
    assert 'gpufleet_audit_info{' in series and 'status="partial"' in series
    assert "gpufleet_audit_hosts{" not in series and "gpufleet_fleet_findings{" not in series
    env = dict(os.environ, GPUFLEET_PROJECT=os.path.dirname(reports))
    baseline = subprocess.run([os.path.join(os.path.dirname(sys.executable), "gpufleet"), "--report-root", reports,
                               "baseline", "set", "latest"], env=env, capture_output=True, text=True, timeout=120,
                              check=False)
    assert baseline.returncode == 1 and "no run 'latest' in the store" in baseline.stderr, baseline.stdout


def test_the_bundle_has_its_manifest_its_archive_and_records_what_is_missing(xid79_incident):
    folder = os.path.join(xid79_incident[0], "evidence", "gpu-h100-xid79-02")
    manifest = read_json(os.path.join(folder, "manifest.json"))
    files = {entry["name"]: entry for entry in manifest["files"] if entry.get("name")}
    assert files["ipmitool-sel-elist.txt"]["status"] == "ok"
    assert files["kernel.log"]["command"].startswith("journalctl _TRANSPORT=kernel -o short-iso-precise --utc")
    # nvidia-smi cannot reach the lost GPU: kept with its exit status and why
    assert files["nvidia-smi-q.txt"]["status"] == "failed" and files["nvidia-smi-q.txt"]["rc"] == 15
    assert "Unable to determine the device handle" in files["nvidia-smi-q.txt"]["why"]
    assert files["dnf.rpm.log"] == dict(files["dnf.rpm.log"], status="missing", file=None,
                                        why="/var/log/dnf.rpm.log is absent or not readable")
    assert files["dcgmi-diag.txt"]["why"] == "off (dcgm_diag: false)"
    for entry in manifest["files"]:
        assert entry["status"] in ("ok", "failed", "missing", "skipped", "timed_out")
        assert entry["status"] == "ok" or entry["why"], entry
    with tarfile.open(os.path.join(folder, manifest["archive"])) as archive:
        names = archive.getnames()
    assert "gpu-h100-xid79-02/manifest.json" in names and "gpu-h100-xid79-02/facts.json" in names
    assert "gpu-h100-xid79-02/ipmitool-sel-elist.txt" in names


def test_the_timeline_has_the_power_event_before_the_xid_and_marks_them_close(xid79_incident):
    timeline = read_json(os.path.join(xid79_incident[0], "timeline.json"))
    order = [(event["time"], event["kind"]) for event in timeline["events"]]
    assert order[:4] == [("2026-11-29T21:13:58Z", "bmc_event"), ("2026-11-29T21:13:58Z", "bmc_event"),
                         ("2026-11-29T21:14:07Z", "xid"), ("2026-11-29T21:14:07Z", "fallen_off_bus")]
    power, xid = timeline["events"][0], timeline["events"][2]
    assert "Power Supply AC lost" in power["summary"] and xid["gpu"] == "0000:ab:00.0"
    assert xid["id"] in power["related"]
    assert xid["evidence"] == {"file": "kernel.log", "line": 5}
    assert timeline["window"]["since"] == "2026-11-29T06:00:00Z"
    assert timeline["window"]["until"] == "2026-11-30T06:00:00Z"


def test_the_fault_log_and_the_html_timeline(xid79_incident):
    latest = xid79_incident[0]
    with open(os.path.join(latest, "fault-log.md")) as stream:
        text = stream.read()
    assert "**A BMC event seconds before a GPU fell off the bus** (hardware, from the timeline)" in text
    assert "## Regression test after the fix" in text
    with open(os.path.join(latest, "report.html")) as stream:
        page = stream.read()
    assert '<section id="timeline">' in page and "Power Supply AC lost" in page
    assert "http://" not in page and "https://" not in page


def test_an_oom_killed_and_restarted_service_with_its_own_window(tmp_path):
    clone = fresh_clone(str(tmp_path / "clone"))
    result = run_incident(clone, "-l", "gpu-l40s-crowded-10", "-e", "gpufleet_incident_since=2026-11-30T03:00:00Z",
                          "-e", "gpufleet_incident_until=2026-11-30T06:00:00Z")
    assert result.returncode == 2, result.stdout[-3000:] + result.stderr[-3000:]
    latest = os.path.join(clone, "reports", "latest-partial")
    timeline = read_json(os.path.join(latest, "timeline.json"))
    assert timeline["window"]["since"] == "2026-11-30T03:00:00Z"
    kinds = [event["kind"] for event in timeline["events"] if event["host"] == "gpu-l40s-crowded-10"]
    assert "oom_kill" in kinds and "service_restart" in kinds and "package_install" not in kinds
    assert kinds.index("oom_kill") < kinds.index("service_restart")
    manifest = read_json(os.path.join(latest, "evidence", "gpu-l40s-crowded-10", "manifest.json"))
    files = {entry["name"]: entry for entry in manifest["files"] if entry.get("name")}
    assert "--since=@1796007600 --until=@1796018400" in files["kernel.log"]["command"]
    assert files["ipmitool-sel-elist.txt"]["why"] == "ipmitool is not installed (not found on PATH or in sbin)"


VALIDATION_FIXTURE = os.path.join("tests", "fixtures", "validation", "demo_validation.json")


@pytest.fixture(scope="module")
def validated_incident(tmp_path_factory):
    """incident.yml -e gpufleet_incident_validate=true on a demo host, its active checks replayed from the results
    recorded for validate.yml's test (a failed memory test on GPU 3, its host-to-device bandwidth at 18 GB/s)."""
    clone = fresh_clone(str(tmp_path_factory.mktemp("validated")))
    result = run_incident(clone, "-l", "gpu-h100-pcie-06", "-e", "gpufleet_incident_validate=true",
                          "-e", "gpufleet_validation_fixture=%s" % os.path.join(clone, VALIDATION_FIXTURE))
    return os.path.join(clone, "reports", "latest-partial"), result


def validation_entries(manifest):
    return [entry for entry in manifest["files"] if entry.get("file") == "validation.json"]


def test_the_incidents_active_checks_are_in_the_bundle_the_report_and_the_fault_log(validated_incident, xid79_incident):
    latest, result = validated_incident
    assert result.returncode == 2, result.stdout[-3000:] + result.stderr[-3000:]
    folder = os.path.join(latest, "evidence", "gpu-h100-pcie-06")
    kept = read_json(os.path.join(folder, "validation.json"))
    assert kept["checks"]["nvbandwidth"]["testcases"][0]["per_gpu"]["3"] == 18.0
    assert kept["checks"]["dcgm_diag"]["status"] == "failed"
    [entry] = validation_entries(read_json(os.path.join(folder, "manifest.json")))
    assert (entry["layer"], entry["command"], entry["status"]) == ("hardware", "gpufleet.core.gpu_validate", "ok")
    report = expanded(read_json(os.path.join(latest, "report.json")))
    summary = report["hosts"]["gpu-h100-pcie-06"]["validation"]
    assert summary["checks"]["dcgm_diag"]["tests"][1] == {"name": "memory", "status": "fail", "failed_gpus": [3]}
    [memory] = [f for f in report["findings"] if f["rule"] == "hardware.validation_dcgm_failed"]
    assert (memory["host"], memory["severity"], memory["gpu"]) == ("gpu-h100-pcie-06", "critical", "0000:5d:00.0")
    with open(os.path.join(latest, "fault-log.md")) as stream:
        fault_log = stream.read()
    assert ("- gpu-h100-pcie-06: `dcgm_diag` failed: level 1; software: pass; memory: fail on GPU 3; pcie: pass "
            "(`evidence/gpu-h100-pcie-06/validation.json`)") in fault_log
    # without the variable nothing changes: no checks, no validation.json, no validation in the report
    off = xid79_incident[0]
    assert not validation_entries(read_json(os.path.join(off, "evidence", "gpu-h100-xid79-02", "manifest.json")))
    assert "validation" not in expanded(read_json(os.path.join(off, "report.json")))["hosts"]["gpu-h100-xid79-02"]
    assert "Active checks that failed" not in open(os.path.join(off, "fault-log.md")).read()


def test_a_node_that_cannot_be_validated_keeps_its_refusal_and_check_mode_runs_nothing(tmp_path):
    clone = fresh_clone(str(tmp_path / "clone"))
    # a replayed host without recorded results is refused (its facts describe a recorded machine): not an error
    result = run_incident(clone, "-l", "gpu-h100-ok-01", "-e", "gpufleet_incident_validate=true")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    latest = os.path.join(clone, "reports", "latest-partial")
    [entry] = validation_entries(read_json(os.path.join(latest, "evidence", "gpu-h100-ok-01", "manifest.json")))
    assert entry["status"] == "skipped" and entry["why"].startswith("refused, no check ran: its facts are replayed")
    report = expanded(read_json(os.path.join(latest, "report.json")))
    assert report["hosts"]["gpu-h100-ok-01"]["validation"]["checks"]["dcgm_diag"]["status"] == "refused"
    assert [f["rule"] for f in report["findings"] if "validation" in f["rule"]] == ["driver.validation_not_run"]

    checked = run_incident(clone, "--check", "-l", "gpu-h100-ok-01", "-e", "gpufleet_incident_validate=true",
                           "-e", "gpufleet_report_dir=%s" % os.path.join(clone, "check"))
    assert checked.returncode == 0, checked.stdout[-3000:]
    assert "gpu-h100-ok-01: refused: " in checked.stdout
    assert not [name for _top, _dirs, names in os.walk(os.path.join(clone, "check")) for name in names
                if name == "validation.json"]


def test_without_hosts_named_the_incident_refuses_every_hosts_checks(tmp_path):
    clone = fresh_clone(str(tmp_path / "clone"))
    result = run_incident(clone, "-e", "gpufleet_incident_validate=true",
                          "-e", "gpufleet_validation_fixture=%s" % os.path.join(clone, VALIDATION_FIXTURE))
    assert result.returncode == 2, result.stdout[-3000:] + result.stderr[-3000:]
    evidence = os.path.join(clone, "reports", "latest", "evidence")
    whys = {host: [entry["why"] for entry in validation_entries(read_json(os.path.join(evidence, host, "manifest.json")))]
            for host in os.listdir(evidence)}
    assert len(whys) == 19
    assert set(map(tuple, whys.values())) == {(
        "refused, no check ran: the incident runs the active checks only on the hosts you name (-l HOSTS or "
        "-e gpufleet_audit_hosts=PATTERN)",)}
