"""contrib/systemd's timer and service and contrib/cron's line (docs/scheduling.md): systemd-analyze verify
accepts the units, they run the same command with the same settings as the cron line, and exit status 2
(findings) is a success for both while 4 is not. tests/fleet/test_scheduled_audit.py runs them for real."""

import os
import re
import shutil
import subprocess
import sys

import pytest
from tests.support.schema_check import ROOT

SYSTEMD = os.path.join(ROOT, "contrib", "systemd")
CRON = os.path.join(ROOT, "contrib", "cron", "gpufleet-audit")
INSTALLED_COMMAND = "/opt/gpufleet/.venv/bin/gpufleet"
ANALYZE = shutil.which("systemd-analyze")


def read(path):
    with open(path) as handle:
        return handle.read()


def settings(unit_text):
    """{key: [values]} of a unit file (sections merged; the units here use each key in one section)."""
    found = {}
    for line in unit_text.splitlines():
        if "=" in line and not line.startswith(("#", "[")):
            key, value = line.split("=", 1)
            found.setdefault(key.strip(), []).append(value.strip())
    return found


def env_file():
    return dict(line.split("=", 1) for line in read(os.path.join(SYSTEMD, "audit.env")).splitlines()
                if line and not line.startswith("#"))


def cron_entry():
    (line,) = [line for line in read(CRON).splitlines() if line and not line.startswith("#") and "=" not in line[:12]]
    fields = line.split(None, 6)
    return fields[:5], fields[5], fields[6]


@pytest.fixture
def checkable_units(tmp_path):
    """The units with ExecStart pointing at an executable that exists here (verify checks that it does)."""
    command = os.path.realpath(sys.executable)
    paths = []
    for name in ("gpufleet-audit.service", "gpufleet-audit.timer"):
        text = read(os.path.join(SYSTEMD, name)).replace(INSTALLED_COMMAND, command)
        text = text.replace("EnvironmentFile=/", "EnvironmentFile=-/")
        (tmp_path / name).write_text(text)
        paths.append(str(tmp_path / name))
    return paths


def test_systemd_analyze_verify_accepts_the_units(checkable_units):
    assert ANALYZE, "systemd-analyze is missing: tools/ensure_system_packages.sh installs systemd"
    result = subprocess.run([ANALYZE, "verify"] + checkable_units, capture_output=True, text=True, timeout=60,
                            check=False)
    assert (result.returncode, result.stderr, result.stdout) == (0, "", "")


def test_systemd_analyze_verify_would_catch_a_broken_unit(checkable_units, tmp_path):
    broken = tmp_path / "broken.service"
    broken.write_text(read(checkable_units[0]).replace("Type=oneshot", "Type=oneshoot"))
    result = subprocess.run([ANALYZE, "verify", str(broken)], capture_output=True, text=True, timeout=60,
                            check=False)
    assert "Failed to parse service type" in result.stderr


def test_the_timer_runs_the_service_daily_and_catches_up():
    timer = settings(read(os.path.join(SYSTEMD, "gpufleet-audit.timer")))
    assert timer["Unit"] == ["gpufleet-audit.service"]
    assert timer["Persistent"] == ["true"]
    assert timer["WantedBy"] == ["timers.target"]
    result = subprocess.run([ANALYZE, "calendar", timer["OnCalendar"][0]], capture_output=True, text=True,
                            timeout=60, check=False)
    assert result.returncode == 0 and "Normalized form: *-*-* 06:00:00" in result.stdout


def test_the_service_counts_findings_as_success_and_runs_the_installed_command():
    service = settings(read(os.path.join(SYSTEMD, "gpufleet-audit.service")))
    assert service["Type"] == ["oneshot"]
    assert service["SuccessExitStatus"] == ["2"]
    assert service["ExecStart"] == [INSTALLED_COMMAND + " audit -i ${GPUFLEET_INVENTORY} $GPUFLEET_AUDIT_ARGS"]
    assert service["EnvironmentFile"] == ["/etc/gpufleet/audit.env"]
    assert env_file()["GPUFLEET_REPORT_DIR"] == "/var/lib/gpufleet/reports"
    assert env_file()["GPUFLEET_INVENTORY"] == "/etc/gpufleet/inventory.yml"
    assert service["WorkingDirectory"] == ["/var/lib/gpufleet"]


def test_the_cron_line_runs_the_same_audit_and_fails_only_on_other_statuses(tmp_path):
    schedule, user, command = cron_entry()
    assert schedule == ["0", "6", "*", "*", "*"] and user == "gpufleet"
    assert "%s audit -i %s" % (INSTALLED_COMMAND, env_file()["GPUFLEET_INVENTORY"]) in command
    assert "GPUFLEET_REPORT_DIR=%s " % env_file()["GPUFLEET_REPORT_DIR"] in command
    assert subprocess.run(["sh", "-n", "-c", command], timeout=30, check=False).returncode == 0
    # the status handling, with a stand-in for the audit that exits with each status
    for status, expected in ((0, 0), (2, 0), (4, 4), (1, 1)):
        fake = tmp_path / ("gpufleet-%d" % status)
        fake.write_text("#!/bin/sh\necho audit output\nexit %d\n" % status)
        fake.chmod(0o755)
        work = tmp_path / ("work-%d" % status)
        work.mkdir()
        line = re.sub(r"flock -n \S+ ", "", command).replace(INSTALLED_COMMAND, str(fake))
        line = line.replace("/var/lib/gpufleet", str(work))
        result = subprocess.run(["sh", "-c", line], capture_output=True, text=True, timeout=30, check=False)
        assert result.returncode == expected, (status, result.stdout, result.stderr)
        assert ("audit output" in result.stdout) == (expected != 0)
