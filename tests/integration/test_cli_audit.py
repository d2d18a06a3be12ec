"""`gpufleet audit` end to end: the installed console script runs audit.yml on the demo fleet through
ansible-runner, from outside the checkout, into a temporary report root."""

import json
import os
import subprocess
import sys

import jsonschema
import pytest
from tests.support.demo_fleet import HOSTS as DEMO_FLEET_HOSTS

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GPUFLEET = os.path.join(os.path.dirname(sys.executable), "gpufleet")
DEMO_HOSTS = len(DEMO_FLEET_HOSTS)

pytestmark = pytest.mark.integration


def command_env(**extra):
    env = {name: value for name, value in os.environ.items()
           if not name.startswith(("ANSIBLE_", "GPUFLEET_"))}
    env.update(ANSIBLE_HOST_KEY_CHECKING="False", **extra)
    return env


def gpufleet(cwd, *argv, **env):
    assert os.access(GPUFLEET, os.X_OK), "the gpufleet console script is not installed beside %s (make venv)" % (
        sys.executable)
    return subprocess.run([GPUFLEET] + list(argv), cwd=str(cwd), env=command_env(**env), capture_output=True,
                          text=True, timeout=600, check=False)


def checkout_entries():
    return set(os.listdir(ROOT))


def test_the_demo_fleet_exits_2_with_its_findings(tmp_path):
    report_root = tmp_path / "reports"
    before = checkout_entries()
    # as AWX passes them to a slice job of a sliced job template (docs/awx.md)
    result = gpufleet(tmp_path, "--report-root", str(report_root), "audit", "-e", "awx_job_id=77",
                      "-e", "awx_workflow_job_id=70", "-e", "awx_job_launch_type=workflow")
    output = result.stdout + result.stderr
    assert result.returncode == 2, output
    lines = result.stdout.splitlines()
    progress = [line for line in lines if line.startswith("gpufleet audit: ") and "hosts done" in line]
    assert progress[0].startswith("gpufleet audit: 1/%d hosts done, 0 failed, 0 unreachable, " % DEMO_HOSTS)
    assert progress[-1].startswith("gpufleet audit: %d/%d hosts done, 0 failed, 0 unreachable, " % (
        DEMO_HOSTS, DEMO_HOSTS))
    assert progress[-1].endswith(", finished")
    assert "\r" not in result.stdout
    latest = report_root / "latest"
    report = json.loads((latest / "report.json").read_text())
    assert report["run"]["status"] == "complete"
    assert report["summary"]["hosts"]["total"] == DEMO_HOSTS
    assert report["run"]["orchestration"] == {
        "source": "awx", "run_group": "awx-workflow-job-70", "slice": None,
        "awx": {"job_id": 77, "workflow_job_id": 70, "job_launch_type": "workflow"}}
    with open(os.path.join(ROOT, "docs", "schema", "report.schema.json")) as handle:
        jsonschema.validate(report, json.load(handle))
    assert "gpufleet audit %s: %d hosts (%d ok, 0 unreachable, 0 failed), %d findings" % (
        report["run"]["id"], DEMO_HOSTS, DEMO_HOSTS, len(report["findings"])) in lines
    assert "Run: COMPLETE - every host of the pattern was targeted" in lines
    assert any(line.startswith("Result: FAIL - ") for line in lines)
    assert "  gpu-h100-xid79-02: fail: " in result.stdout
    assert lines[-1] == "gpufleet audit: exit 2 - findings at or above the fail severity"
    artifacts = [line.split(": ", 1)[1] for line in lines if line.startswith("Runner artifacts: ")]
    assert len(artifacts) == 1 and artifacts[0].startswith(str(report_root / "runner" / "artifacts") + os.sep)
    assert (open(os.path.join(artifacts[0], "rc")).read().strip()) == "2"
    assert os.path.isdir(os.path.join(artifacts[0], "job_events"))
    assert os.stat(str(report_root / "runner")).st_mode & 0o777 == 0o700
    assert checkout_entries() == before


def test_no_host_matching_the_limit_exits_4(tmp_path):
    report_root = tmp_path / "from-env"
    result = gpufleet(tmp_path, "audit", "--limit", "no-such-host", "--progress", "bar",
                      GPUFLEET_REPORT_DIR=str(report_root))
    output = result.stdout + result.stderr
    assert result.returncode == 4, output
    assert "No report was written by this run." in result.stdout
    assert "leaves us with no hosts to target" in result.stdout
    assert "\x1b[K[------------------------] 0/? hosts  failed 0  unreachable 0  0:00:" in result.stdout
    assert result.stdout.splitlines()[-1] == "gpufleet audit: exit 4 - the run could not do its job (see above)"
    assert os.listdir(str(report_root)) == ["runner"]


def test_no_host_of_the_pattern_in_the_limit_exits_4(tmp_path):
    result = gpufleet(tmp_path, "--report-root", str(tmp_path), "audit", "-e", "gpufleet_audit_hosts=gpu_nodes",
                      "--limit", "cpu-node-nodriver-13", "--progress", "none")
    assert result.returncode == 4, result.stdout + result.stderr
    assert "cpu-node-nodriver-13: not_audited: not audited: no host matched the pattern gpu_nodes" in result.stdout
    assert "hosts done" not in result.stdout


def test_runner_artifacts_are_rotated(tmp_path):
    runs = [gpufleet(tmp_path, "--report-root", str(tmp_path), "audit", "--limit", "no-such-host",
                     "--keep-artifacts", "1", "--progress", "none") for _round in range(2)]
    assert [run.returncode for run in runs] == [4, 4]
    newest = [line.split(": ", 1)[1] for line in runs[1].stdout.splitlines() if line.startswith("Runner artifacts: ")]
    assert os.listdir(str(tmp_path / "runner" / "artifacts")) == [os.path.basename(newest[0])]
