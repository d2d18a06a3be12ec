"""remediate.yml and driver_rollout.yml never act on a machine they should not (issue 25, part 4).

The demo inventory's hosts use the local connection and replay fixtures: a role run on them would read and change
this controller. Both playbooks run here on the demo, with and without --check, with a PATH whose first folder
records every call of the programs the roles run (nvidia-smi, systemctl, apt, dnf, modprobe, ...): no role task
runs, no such program is called, nothing under the roles' paths changes, and each host gets its plan and how to
proceed. The rollout checks every policy (driver.pin, driver.package, batches) before contacting any host: a host
reached over ssh on a closed port would say so if it were contacted.
"""

import glob
import json
import os
import re
import subprocess
import sys

import pytest

from ansible_collections.gpufleet.core.plugins.plugin_utils.acting_target import HOW_TO_PROCEED
from ansible_collections.gpufleet.core.plugins.plugin_utils.audit.remediation import fixes_by_host, load_report
from tests.integration.test_exit_status import (
    FIXTURES, local_host, output, playbook_env, recap, unreachable_host, write_inventory)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PLAYBOOK_BIN = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")
DEMO_HOSTS = sorted(name[:-len(".json")] for name in os.listdir(FIXTURES))
PIN = "550.127.05"
PACKAGE = "nvidia-driver-550"
ROLLOUT_POLICY = {"gpufleet_policy_zz_rollout": {"driver": {"pin": PIN, "package": PACKAGE}}}
# What the roles run on a host (roles/*/tasks, the gpu_facts fallback): none may run on this controller.
WATCHED_PROGRAMS = ("nvidia-smi", "nvidia-mig-parted", "systemctl", "apt", "apt-get", "apt-mark", "dpkg",
                    "dpkg-query", "dnf", "yum", "rpm", "modprobe", "rmmod", "reboot", "shutdown", "kubectl",
                    "scontrol", "dcgmi")
# Where the roles write on a host: systemd drop-ins and timers, the driver record.
WATCHED_PATHS = ("/etc/systemd/system/*gpufleet*", "/etc/systemd/system/*.d/*gpufleet*", "/var/lib/gpufleet",
                 "/var/lib/gpufleet/*", "/etc/nvidia-mig-manager/*")


@pytest.fixture
def watched(tmp_path):
    """(environment whose PATH starts with recording stand-ins, the calls they recorded, the roles' paths)."""
    folder = tmp_path / "watched-bin"
    folder.mkdir()
    calls = tmp_path / "calls.log"
    for program in WATCHED_PROGRAMS:
        stand_in = folder / program
        stand_in.write_text('#!/bin/sh\necho "$(basename "$0") $*" >> %s\nexit 1\n' % calls)
        stand_in.chmod(0o755)
    env = playbook_env(PATH="%s:%s" % (folder, os.environ.get("PATH", "")))
    return env, calls, roles_paths()


def roles_paths():
    return {path: os.stat(path).st_mtime_ns for pattern in WATCHED_PATHS for path in glob.glob(pattern)}


def recorded(calls):
    return calls.read_text().splitlines() if calls.exists() else []


def run_playbook(playbook, env, *extra, inventory=None):
    argv = [PLAYBOOK_BIN, playbook] + (["-i", inventory] if inventory else []) + list(extra)
    return subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=400, check=False)


def role_task_hosts(result):
    """{host: [role tasks it ran]} from the output (TASK [gpufleet.core.<role> : ...] and the lines under it)."""
    ran, task = {}, None
    for line in result.stdout.splitlines():
        header = re.match(r"^TASK \[(.*?)\]", line)
        if header:
            name = header.group(1)
            task = name if name.startswith("gpufleet.core.") and " : " in name else None
            continue
        host = re.match(r"^(?:ok|changed|fatal|failed|included): \[([^\]\s]+)", line)
        if task and host:
            ran.setdefault(host.group(1), []).append(task)
    return ran


def messages(result):
    """The msg values Ansible printed, each on one line: those of the YAML result format, and the verdicts the
    project's stdout callback prints as "failed: [host] msg" or "unreachable: [host] msg" (plugins/callback)."""
    found = []
    for match in re.finditer(r"^ +msg: (['\"]?)(.*?)\1\n(?= +\w+:|\S|$)", result.stdout, re.M | re.S):
        found.append(re.sub(r"\s*\n\s*", " ", match.group(2)).replace("''", "'"))
    found += re.findall(r"^(?:failed|unreachable): \[[^\]]+\] (.*)$", result.stdout, re.M)
    return found


def assert_nothing_on_the_controller(result, calls, before, remote=()):
    """No role task ran for a host but those of remote (reached over ssh), no watched program ran, no watched
    path changed."""
    ran = role_task_hosts(result)
    assert sorted(ran) == sorted(host for host in remote if host in ran), output(result)[-4000:]
    assert recorded(calls) == [], recorded(calls)
    assert roles_paths() == before


# ---------------------------------------------------------------- remediate.yml on the demo


@pytest.mark.parametrize("check", [False, True], ids=["run", "check"])
def test_remediate_on_the_demo_shows_plans_and_acts_on_nothing(tmp_path, watched, check):
    env, calls, before = watched
    report_dir = tmp_path / "reports"
    result = run_playbook("remediate.yml", env, "-e", "gpufleet_report_dir=%s" % report_dir,
                          *(["--check"] if check else []))
    # the second audit still finds what the first found (nothing was remediated): findings, exit status 2
    assert result.returncode == 2, output(result)[-4000:]
    assert_nothing_on_the_controller(result, calls, before)
    before_dir = sorted(glob.glob(str(report_dir / "*-before")))[0]
    wanted = fixes_by_host(load_report(before_dir))
    assert "gpu-h100-mismatch-03" in wanted and "gpu-a100-migdrift-08" in wanted
    with open(os.path.join(sorted(glob.glob(str(report_dir / "*-after")))[0], "remediation.json")) as handle:
        record = json.load(handle)
    assert sorted(record["not_acted"]) == sorted(wanted) and record["cleared"] == []
    printed = messages(result)
    mark = "[check mode] " if check else ""
    for host, roles in wanted.items():
        plan = "%s%s: not acted on, plan only: would run %s. Refused because its facts are replayed" % (
            mark, host, ", ".join(roles))
        assert [line for line in printed if line.startswith(plan)] == [mark + record["not_acted"][host]]
        assert record["not_acted"][host].endswith(HOW_TO_PROCEED)
    assert all(finding["why"].startswith("no role acted on this host") for finding in record["remaining"]
               if finding["host"] in wanted)
    # the first audit judges nothing (fail_severity none): it never says PASS under its critical findings
    first = result.stdout.split("Reports: %s" % before_dir)[0]
    assert re.search(r"^  all +[1-9]\d* ", first, re.M), first[-3000:]
    assert "Result: PASS" not in first
    assert "Result: NOT JUDGED - fail_severity is none: findings never fail this run (" in first


# ---------------------------------------------------------------- driver_rollout.yml on the demo


@pytest.mark.parametrize("check", [False, True], ids=["run", "check"])
def test_the_rollout_on_the_demo_is_a_plan_per_host_and_acts_on_nothing(tmp_path, watched, check):
    env, calls, before = watched
    report_dir = tmp_path / "reports"
    result = run_playbook("driver_rollout.yml", env, "-e", "gpufleet_report_dir=%s" % report_dir,
                          "-e", json.dumps(ROLLOUT_POLICY), *(["--check"] if check else []))
    # not one host could be acted on: the run could not do its job
    assert result.returncode == 4, output(result)[-4000:]
    assert_nothing_on_the_controller(result, calls, before)
    assert {host: counts["unreachable"] for host, counts in recap(result).items()} == dict.fromkeys(DEMO_HOSTS, 1)
    mark = "[check mode] " if check else ""
    printed = messages(result)
    for host in DEMO_HOSTS:
        assert "%s%s: not acted on, plan only: would install driver %s (driver.pin) from package %s. Refused " \
               "because its facts are replayed from a recorded fixture (gpufleet_facts_source=replay), not read " \
               "from a machine. %s" % (mark, host, PIN, PACKAGE, HOW_TO_PROCEED) in printed
    if check:
        assert printed and all(line.startswith("[check mode] ") for line in printed), printed
    # nothing was rolled out: no report as if it had run, no state left behind
    assert not report_dir.exists() or os.listdir(str(report_dir)) == []


def test_a_check_mode_rollout_writes_a_plan_never_a_rollout_report_and_says_check_mode(tmp_path, watched):
    env, calls, before = watched
    replayed = "gpu-h100-ok-01"
    inventory = write_inventory(tmp_path / "hosts.yml",
                                {replayed: local_host(replayed), "far-away": unreachable_host()})
    report_dir = tmp_path / "reports"
    result = run_playbook("driver_rollout.yml", env, "-e", "gpufleet_report_dir=%s" % report_dir,
                          "-e", json.dumps(ROLLOUT_POLICY), "--check", inventory=inventory)
    assert result.returncode == 4, output(result)[-4000:]
    # the replayed host never reaches a role; the one behind ssh is tried, and cannot be reached
    assert_nothing_on_the_controller(result, calls, before, remote=["far-away"])
    # a run folder of its own, named as a check (never taken for a rollout), with the plan and nothing else
    folders = sorted(os.listdir(str(report_dir)))
    assert len(folders) == 1 and re.match(r"^\d{8}T\d{6}Z-driver-rollout-check$", folders[0]), folders
    assert os.listdir(str(report_dir / folders[0])) == ["driver-rollout.json"]
    with open(str(report_dir / folders[0] / "driver-rollout.json")) as handle:
        plan = json.load(handle)
    assert plan["check_mode"] is True and plan["changed"] == [] and plan["not_acted"] == [replayed]
    assert plan["hosts"][replayed]["status"] == "not_acted"
    assert plan["failed"] == ["far-away"] and plan["hosts"]["far-away"]["msg"].startswith("unreachable: ")
    # Ansible's own word on the host it could not reach aside, every message is the playbook's, in check mode
    ours = [line for line in messages(result) if not line.startswith("Task failed: Failed to connect")]
    summary = [line for line in result.stdout.splitlines() if "Driver rollout" in line]
    assert summary and all("[check mode] " in line for line in summary), summary
    assert ours and all(line.startswith(("[check mode] ", "- '[check mode] ")) for line in ours), ours


# ---------------------------------------------------------------- the rollout's policy, before any host


@pytest.mark.parametrize("policy, key", [
    ({"driver": {"pin": "abc", "package": PACKAGE}}, "driver.pin"),
    ({"driver": {"package": PACKAGE}}, "driver.pin"),
    ({"driver": {"pin": PIN}}, "driver.package"),
    ({"driver": {"pin": PIN, "package": "nvidia driver; rm -rf /"}}, "driver.package"),
    ({"driver": {"pin": PIN, "package": PACKAGE, "rollout": {"batches": ["ten"]}}}, "driver.rollout.batches"),
], ids=["bad-pin", "no-pin", "no-package", "bad-package", "bad-batches"])
def test_the_rollout_policy_is_checked_before_any_host_is_contacted(tmp_path, watched, policy, key):
    env, calls, before = watched
    inventory = write_inventory(tmp_path / "hosts.yml", {"far-away": unreachable_host()})
    report_dir = tmp_path / "reports"
    result = run_playbook("driver_rollout.yml", env, "-e", "gpufleet_report_dir=%s" % report_dir,
                          "-e", json.dumps({"gpufleet_policy_zz": policy}), inventory=inventory)
    assert result.returncode == 4, output(result)[-4000:]
    text = output(result)
    assert key in text and "no host was contacted" in text, text[-3000:]
    # a contacted host on a closed ssh port would have said so
    assert "Failed to connect" not in text and "ssh:" not in text, text[-3000:]
    assert_nothing_on_the_controller(result, calls, before)
    assert not report_dir.exists() or os.listdir(str(report_dir)) == []


def test_a_refused_host_whose_findings_stay_below_the_fail_severity_still_fails_the_remediation(tmp_path, watched):
    env, calls, before = watched
    host = "gpu-t4-nvsmi-14"  # warnings only; the gpu_settings role would fix one of them
    report_dir = tmp_path / "reports"
    result = run_playbook("remediate.yml", env, "-e", "gpufleet_report_dir=%s" % report_dir, "--limit", host)
    assert result.returncode == 2, output(result)[-4000:]
    assert_nothing_on_the_controller(result, calls, before)
    assert recap(result)[host]["failed"] == 1
    assert ("not acted on: the remediation refused this host (its message above says why and how to proceed)"
            in messages(result)), output(result)[-4000:]


# ---------------------------------------------------------------- loadstep.yml on the demo

# loadstep.yml allowed on the host, with a load command: nothing but the replay speaks against a load test
LOADSTEP_ALLOWED = {"gpufleet_policy_zz_load": {"loadstep": {"allowed": True}, "workload": {"services": {
    "inference.service": {"load": {"command": "/bin/true", "steps": [1, 2]}}}}}}


@pytest.mark.parametrize("check", [False, True], ids=["run", "check"])
def test_a_loadstep_on_the_demo_is_refused_and_touches_nothing_of_the_controller(tmp_path, watched, check):
    env, calls, before = watched
    host = "gpu-l40s-workload-17"
    result = run_playbook("loadstep.yml", env, "--limit", host, "-e", "gpufleet_load_service=inference.service",
                          "-e", "gpufleet_report_dir=%s" % (tmp_path / "reports"), "-e", json.dumps(LOADSTEP_ALLOWED),
                          *(["--check"] if check else []))
    # a refused host is a failed loadstep run (exit status 2), never a measured one
    assert result.returncode == 2, output(result)[-4000:]
    # neither the clean-up of an earlier run nor the service's state was read on this controller
    assert recorded(calls) == [], recorded(calls)
    assert roles_paths() == before
    assert re.search(r"TASK \[Stop what an interrupted earlier run left[^\n]*\n\s*skipping: \[%s\]" % host,
                     result.stdout), output(result)[-4000:]
    assert re.search(r"TASK \[Step 0, the idle host\][^\n]*\n\s*skipping: \[%s\]" % host, result.stdout)
    (verdict,) = [line for line in messages(result) if line.startswith("refused: ")]
    assert verdict.startswith("refused: its facts are replayed from a recorded fixture (gpufleet_facts_source=replay)")
    run_dirs = glob.glob(str(tmp_path / "reports" / "*-loadstep"))
    if check:
        assert run_dirs == []  # check mode prints the plan and writes no loadstep run
        return
    (run_dir,) = run_dirs
    with open(os.path.join(run_dir, "loadstep.json")) as handle:
        (run,) = json.load(handle)["runs"]
    assert run["host"] == host and run["status"] == "refused" and run["steps"] == []
    assert run["refusals"][0].startswith("its facts are replayed from a recorded fixture")
