"""`gpufleet audit` end to end: the installed console script runs audit.yml on the demo fleet through
ansible-runner, from outside the checkout, into a temporary report root."""

import json
import os
import signal
import subprocess
import sys
import time

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
    # this checkout's collection, whichever checkout's virtualenv holds the console script
    env.update(ANSIBLE_HOST_KEY_CHECKING="False", GPUFLEET_PROJECT=ROOT, **extra)
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


def test_an_inventory_without_hosts_exits_4_and_says_why(tmp_path):
    missing = tmp_path / "missing.yml"
    result = gpufleet(tmp_path, "--report-root", str(tmp_path / "reports"), "audit", "-i", str(missing),
                      "--progress", "none")
    assert result.returncode == 4, result.stdout + result.stderr
    assert ("  localhost: not_audited: not audited: the inventory has no host: %s does not exist; nothing was audited"
            % missing) in result.stdout.splitlines()
    assert result.stdout.splitlines()[-1] == "gpufleet audit: exit 4 - the run could not do its job (see above)"


def test_a_usage_error_exits_4_not_2(tmp_path):
    result = gpufleet(tmp_path, "audit", "--no-such-option")
    assert result.returncode == 4, result.stdout + result.stderr
    assert "gpufleet: error: unrecognized arguments: --no-such-option" in result.stderr


def parent_of(pid):
    with open("/proc/%d/stat" % pid) as handle:
        return int(handle.read().rsplit(")", 1)[1].split()[1])


def command_line(pid):
    with open("/proc/%d/cmdline" % pid, "rb") as handle:
        return handle.read().replace(b"\0", b" ").decode(errors="replace")


def end_left_behind(hung_pid):
    """Kills what an interrupted audit left running: the hung host's process and, above it, the ansible-playbook
    worker and main process it belongs to (never anything else). The pid when something was left, else None."""
    try:
        if "sleep" not in command_line(hung_pid):
            return None
        left, pid = [hung_pid], hung_pid
        for _level in ("worker", "main process"):
            pid = parent_of(pid)
            if pid <= 1 or "ansible-playbook" not in command_line(pid):
                break
            left.append(pid)
    except (OSError, ValueError, IndexError):
        return None
    for pid in left:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return hung_pid


def test_ctrl_c_stops_ansible_playbook_and_reports_the_run_as_interrupted(tmp_path):
    pid_file = tmp_path / "hung.pid"
    hung_python = tmp_path / "hung-python"
    hung_python.write_text("#!/bin/sh\necho $$ > %s\nexec sleep 120\n" % pid_file)
    hung_python.chmod(0o755)
    fixtures = os.path.join(ROOT, "inventories", "demo", "fixtures")
    host = {"ansible_connection": "local", "ansible_python_interpreter": "{{ ansible_playbook_python }}",
            "gpufleet_facts_source": "replay", "gpufleet_facts_fixture": os.path.join(fixtures, "gpu-h100-ok-01.json")}
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(json.dumps({"all": {"hosts": {
        "gpu-h100-ok-01": host, "gpu-hung-97": dict(host, ansible_python_interpreter=str(hung_python))}}}))
    report_root = tmp_path / "reports"
    command = subprocess.Popen([GPUFLEET, "--report-root", str(report_root), "audit", "-i", str(inventory),
                                "--progress", "plain"], cwd=str(tmp_path), env=command_env(), stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)
    hung_pid = None
    try:
        first = command.stdout.readline()  # the healthy host's collection is done; the hung one is running
        assert first.startswith("gpufleet audit: 1/2 hosts done"), first
        deadline = time.monotonic() + 60
        while not pid_file.exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        hung_pid = int(pid_file.read_text())
        command.send_signal(signal.SIGINT)
        rest, _errors = command.communicate(timeout=60)
    finally:
        if command.poll() is None:
            command.kill()
        if hung_pid is not None:
            time.sleep(1)
            hung_pid = end_left_behind(hung_pid)
    assert hung_pid is None, "the interrupted audit left ansible-playbook and its hung host running"
    lines = rest.splitlines()
    assert command.returncode == 130, first + rest
    assert lines[0].startswith("gpufleet audit: 1/2 hosts done") and lines[0].endswith(", interrupted")
    assert ", finished" not in rest
    assert "Interrupted (Ctrl-C): the audit did not finish, and no report was written." in lines
    assert lines[-1] == "gpufleet audit: exit 130 - interrupted (Ctrl-C) before the audit finished"
    artifacts = [line.split(": ", 1)[1] for line in lines if line.startswith("Runner artifacts: ")][0]
    # ansible-playbook itself was interrupted (its own 99), not killed
    assert open(os.path.join(artifacts, "rc")).read().strip() == "99"
    assert "User interrupted execution" in open(os.path.join(artifacts, "stdout")).read()
