"""`gpufleet analyze` end to end (issue 31, done when; docs/offline.md): a captured root of a demo host, the incident
bundle incident.yml wrote for a demo host, and an nvidia-bug-report.log.gz of that host (the project's own sample,
tests/fixtures/captures) give the findings of the live audit of the same host."""

import gzip
import json
import os
import shutil
import subprocess
import sys

import pytest

from ansible_collections.gpufleet.core.plugins.plugin_utils.reports.format import expanded
from tests.integration.test_incident_playbook import fresh_clone, run_incident
from tests.support.capture_roots import root_from_fixture

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GPUFLEET = os.path.join(os.path.dirname(sys.executable), "gpufleet")
FIXTURES = os.path.join(ROOT, "inventories", "demo", "fixtures")
BUG_REPORT = os.path.join(ROOT, "tests", "fixtures", "captures", "nvidia-bug-report-sample.log")
XID79_HOST = "gpu-h100-xid79-02"

pytestmark = pytest.mark.integration


def gpufleet(cwd, report_root, *argv):
    env = {name: value for name, value in os.environ.items() if not name.startswith(("ANSIBLE_", "GPUFLEET_"))}
    env.update(GPUFLEET_PROJECT=ROOT)
    result = subprocess.run([GPUFLEET, "--report-root", str(report_root)] + list(argv) + ["--progress", "none"],
                            cwd=str(cwd), env=env, capture_output=True, text=True, timeout=600, check=False)
    with open(os.path.join(str(report_root), "latest", "report.json")) as handle:
        return result, json.load(handle)


def rules_of(report, host):
    """(rule, gpu, severity) of the host's findings."""
    report = expanded(report)
    return sorted((finding["rule"], finding.get("gpu"), finding["severity"]) for finding in report["hosts"][host]["findings"])


def test_a_captured_root_gives_the_findings_of_the_live_audit_of_the_host(tmp_path):
    name = "gpu-t4-nvsmi-14"
    fixture_path = os.path.join(FIXTURES, name + ".json")
    with open(fixture_path) as handle:
        fixture = json.load(handle)
    root = root_from_fixture(fixture, str(tmp_path / "captures" / name))
    subset = json.dumps({"gpufleet_gather_subset": fixture["gather_subset"]})
    # the live audit of the host: its recorded answers replayed, with the same (default) policy
    inventory = tmp_path / "live.json"
    inventory.write_text(json.dumps({"all": {"hosts": {name: {
        "ansible_connection": "local", "ansible_python_interpreter": sys.executable,
        "gpufleet_facts_source": "replay", "gpufleet_facts_fixture": fixture_path}}}}))
    _live_result, live = gpufleet(tmp_path, tmp_path / "live", "audit", "-i", str(inventory), "-e", subset)
    result, captured = gpufleet(tmp_path, tmp_path / "captured", "analyze", root, "-e", subset)
    assert result.returncode in (0, 2), result.stdout + result.stderr
    assert list(captured["hosts"]) == [name]
    assert rules_of(captured, name) == rules_of(live, name) and rules_of(live, name)
    inputs = captured["hosts"][name]["inputs"]
    assert inputs["capture"] == {"kind": "root", "path": root}
    assert "driver" in inputs["read"] and "kernel_log" in inputs["read"]


@pytest.fixture(scope="module")
def xid79_incident(tmp_path_factory):
    clone = fresh_clone(str(tmp_path_factory.mktemp("clone")))
    result = run_incident(clone, "-l", XID79_HOST)
    assert result.returncode == 2, result.stdout[-3000:]
    latest = os.path.join(clone, "reports", "latest-partial")
    with open(os.path.join(latest, "report.json")) as handle:
        return latest, json.load(handle)


def test_the_incident_bundle_of_a_demo_host_gives_the_findings_of_its_live_audit(xid79_incident, tmp_path):
    latest, live = xid79_incident
    bundle = os.path.join(latest, "evidence", XID79_HOST)
    result, captured = gpufleet(tmp_path, tmp_path / "reports", "analyze", bundle)
    assert result.returncode == 2, result.stdout + result.stderr
    live_findings, captured_findings = rules_of(live, XID79_HOST), rules_of(captured, XID79_HOST)
    # the GPU that fell off the bus, as the live audit found it
    assert ("hardware.gpu_lost", "0000:ab:00.0", "critical") in live_findings
    assert set(live_findings) <= set(captured_findings)
    inputs = captured["hosts"][XID79_HOST]["inputs"]
    live_inputs = live["hosts"][XID79_HOST]["inputs"]
    # beyond the live audit: the BMC event log the bundle holds (the live audit found no BMC device), and the GPUs
    # not read (the bundle's nvidia-smi failed on the lost GPU)
    assert "bmc" in inputs["read"] and "bmc" in live_inputs["absent"]
    assert {rule for rule, _gpu, _severity in set(captured_findings) - set(live_findings)} == {
        "hardware.bmc_event_log", "driver.collection_incomplete"}
    # the archive holds the same
    archive = os.path.join(bundle, "evidence-%s.tar.gz" % XID79_HOST)
    _result, from_archive = gpufleet(tmp_path, tmp_path / "archive", "analyze", archive)
    assert rules_of(from_archive, XID79_HOST) == captured_findings


def test_an_nvidia_bug_report_of_a_demo_host_gives_the_findings_of_its_live_audit(xid79_incident, tmp_path):
    _latest, live = xid79_incident
    report = str(tmp_path / "nvidia-bug-report.log.gz")
    with open(BUG_REPORT, "rb") as source, gzip.open(report, "wb") as target:
        shutil.copyfileobj(source, target)
    result, captured = gpufleet(tmp_path, tmp_path / "reports", "analyze", report)
    assert result.returncode == 2, result.stdout + result.stderr
    # the host is named by the report's uname line
    assert list(captured["hosts"]) == [XID79_HOST]
    captured_findings = rules_of(captured, XID79_HOST)
    assert ("hardware.gpu_lost", "0000:ab:00.0", "critical") in captured_findings
    # the GPUs of its text nvidia-smi --query read and judged: the live audit's findings, no more and no fewer
    assert captured_findings == rules_of(live, XID79_HOST)
    inputs = captured["hosts"][XID79_HOST]["inputs"]
    assert inputs["capture"]["kind"] == "nvidia_bug_report" and "bmc" in inputs["absent"]


def test_a_path_that_is_no_capture_is_a_host_not_audited_with_its_reason_beside_the_others(tmp_path):
    bad = tmp_path / "notes.txt"
    bad.write_text("hello\n")
    result, report = gpufleet(tmp_path, tmp_path / "reports", "analyze", str(bad), BUG_REPORT)
    assert result.returncode == 4, result.stdout
    assert report["hosts"]["notes.txt"]["status"] == "failed"
    assert "notes.txt is neither" in report["hosts"]["notes.txt"]["message"]
    assert report["hosts"][XID79_HOST]["status"] == "ok"
