"""The driver role's drain against a real Slurm cluster (scenario `slurm`: Debian's slurm-wlm and munge,
slurmctld on fleet-01, slurmd on every host): a rollout drains the node, waits while a job runs on it
(the node is DRAINING and the driver untouched until the job ends), installs, reboots, verifies and resumes
the node; a node an operator drained before keeps its drain and its reason, also across the reboot.
"""

import glob
import json
import os
import tempfile
import threading
import time

import pytest

START, PIN = "550.90.07", "550.127.05"
OPERATOR_REASON = "operator: bad fan"


@pytest.fixture(scope="module")
def slurm_fleet(fleet):
    previous = fleet.scenario
    fleet.use_scenario("slurm")
    wait_for(lambda: set(node_states(fleet).values()) == {"IDLE"}, 60, "every slurmd registered and idle")
    yield fleet
    fleet.use_scenario(previous)


def wait_for(condition, timeout, what):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(1)
    raise AssertionError("timed out after %d s waiting until %s" % (timeout, what))


def node_line(fleet, node):
    return fleet.ssh("fleet-01", "scontrol show node --oneliner %s" % node, check=True).stdout


def node_field(line, name):
    """State (the first word) or Reason (without its [user@time] stamp) of an scontrol line."""
    if name == "State":
        return line.split(" State=", 1)[1].split()[0]
    if " Reason=" not in line:
        return None
    return line.split(" Reason=", 1)[1].rsplit(" [", 1)[0].strip()


def node_states(fleet):
    out = fleet.ssh("fleet-01", "sinfo --Node --noheader --format='%N %T'").stdout
    return {name: state.upper() for name, state in (line.split() for line in out.splitlines() if line.strip())}


def package(fleet, host):
    return fleet.ssh(host, "dpkg-query -W -f='${Version}' gpufleet-nvidia-driver", check=True).stdout.strip()


def rollout(fleet, limit):
    report_dir = tempfile.mkdtemp(prefix="slurm-rollout-")
    run = fleet.playbook("driver_rollout.yml", limit=limit, extra_vars={"gpufleet_report_dir": report_dir})
    reports = glob.glob(os.path.join(report_dir, "*-driver-*", "driver-*.json"))
    assert len(reports) == 1, run.output()
    with open(reports[0]) as handle:
        return run, json.load(handle)


def test_rollout_drains_waits_for_the_running_job_then_resumes_the_node(slurm_fleet):
    fleet = slurm_fleet
    job = fleet.ssh("fleet-01", "sbatch --parsable --nodelist=fleet-02 --output=/dev/null --wrap 'sleep 40'",
                    check=True).stdout.strip()
    wait_for(lambda: fleet.ssh("fleet-01", "squeue --noheader --jobs %s --format=%%T" % job).stdout.strip() == "RUNNING",
             30, "job %s runs" % job)
    outcome = {}
    worker = threading.Thread(target=lambda: outcome.update(zip(("run", "report"), rollout(fleet, "fleet-02"))))
    worker.start()
    samples = []  # (job still running, node state, installed package)
    while worker.is_alive():
        running = fleet.ssh("fleet-01", "squeue --noheader --jobs %s --format=%%T" % job).stdout.strip() == "RUNNING"
        state = node_field(node_line(fleet, "fleet-02"), "State") if fleet.ssh("fleet-01", "true").returncode == 0 else ""
        samples.append((running, state, fleet.ssh("fleet-02", "dpkg-query -W -f='${Version}' gpufleet-nvidia-driver").stdout))
        time.sleep(1)
    worker.join()
    run, report = outcome["run"], outcome["report"]
    assert run.rc == 0, run.output()
    assert report["changed"] == ["fleet-02"] and report["failed"] == []
    # drained while the job ran, and the driver changed only after the job ended
    assert any(running and "DRAIN" in state for running, state, _package in samples), samples
    assert all(package_now == START + "-1" for running, _state, package_now in samples if running), samples
    # a healthy host's processes come from gpu_facts itself, not from the device-file fallback
    noted = run.result("fleet-02", "Note the drain hook and the GPU processes gpu_facts listed")
    assert noted["ansible_facts"]["driver_gpu_processes"] == {"known": True, "pids": [], "source": "gpu_facts",
                                                              "unknown": ""}
    waited = run.result("fleet-02", "Wait until no job runs on the node (DRAINING until the jobs end)")
    assert waited["attempts"] > 1, waited
    assert package(fleet, "fleet-02") == PIN + "-1"
    line = node_line(fleet, "fleet-02")
    assert node_field(line, "State") == "IDLE", line
    assert fleet.ssh("fleet-01", "sacct --version >/dev/null 2>&1; squeue --noheader --nodelist=fleet-02").stdout == ""


def test_a_node_an_operator_drained_stays_drained_with_its_reason(slurm_fleet):
    fleet = slurm_fleet
    fleet.ssh("fleet-01", "scontrol update nodename=fleet-03 state=drain reason='%s'" % OPERATOR_REASON, check=True)
    run, report = rollout(fleet, "fleet-01,fleet-03")
    assert run.rc == 0, run.output()
    assert sorted(report["changed"]) == ["fleet-01", "fleet-03"] and report["failed"] == []
    assert package(fleet, "fleet-01") == package(fleet, "fleet-03") == PIN + "-1"
    said = run.result("fleet-03", "Say that the node stays out of service")["msg"]
    assert "fleet-03: Slurm node fleet-03 was out of service before this run (reason: %s)" % OPERATOR_REASON in said
    # fleet-01 runs slurmctld and rebooted with its new driver: the role's own drain is undone after that
    wait_for(lambda: node_states(fleet).get("fleet-01") == "IDLE", 60, "fleet-01 is idle again")
    line = node_line(fleet, "fleet-03")
    assert "DRAIN" in node_field(line, "State").split("+"), line
    assert node_field(line, "Reason") == OPERATOR_REASON, line
    assert run.stats["fleet-03"]["failed"] == 0
    # the operator's drain was never replaced by the role's
    assert not run.results("Drain the node in Slurm").get("fleet-03", {}).get("changed"), run.output()
