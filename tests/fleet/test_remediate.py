"""remediate.yml on the simulated fleet: audit, converge, audit again, report what was cleared."""

import json
import os
import subprocess
import sys
import tempfile
import time

import pytest

import fleet as fleet_module
from conftest import ANSIBLE_ENV, ROOT

FIXABLE = {
    ("fleet-01", "driver.persistence_mode"), ("fleet-01", "workload.restart_policy"),
    ("fleet-01", "workload.gpu_oversubscribed"),
    ("fleet-03", "scheduling.mig_layout_drift"), ("fleet-04", "scheduling.mig_pending"),
    ("fleet-04", "scheduling.mig_layout_drift"),
}


def remediate(fleet, report_dir, extra=()):
    argv = [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "remediate.yml", "-i",
            fleet.inventory, "-e", "gpufleet_report_dir=%s" % report_dir] + list(extra)
    return subprocess.Popen(argv, cwd=ROOT, env=dict(os.environ, **ANSIBLE_ENV), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)


def finish(process, timeout=900):
    output = process.communicate(timeout=timeout)[0]
    return process.returncode, output


def latest_record(report_dir):
    with open(os.path.join(report_dir, "latest", "remediation.json")) as handle:
        return json.load(handle)


@pytest.fixture(scope="module")
def fresh_fleet(fleet):
    if fleet.scenario != "default":
        pytest.fail("test_remediate needs the default scenario, not %s" % fleet.scenario)
    fleet.recreate()
    return fleet


def test_remediate_clears_what_a_role_can_fix_and_leaves_the_rest_to_a_person(fresh_fleet):
    report_dir = tempfile.mkdtemp(prefix="remediate-")
    rc, output = finish(remediate(fresh_fleet, report_dir))
    assert rc == 0, output[-4000:]
    record = latest_record(report_dir)
    cleared = {(f["host"], f["rule"]) for f in record["cleared"]}
    assert FIXABLE <= cleared, output[-4000:]
    assert not [f for f in record["remaining"] if f["fix"] in ("gpu_settings", "mig_layout", "restart_policy")]
    (remap,) = [f for f in record["remaining"] if f["rule"] == "hardware.row_remap"]
    assert (remap["host"], remap["gpu"], remap["fix"]) == ("fleet-02", "0000:0f:00.0", None)
    assert remap["why"].startswith("no role fixes this: it needs a person")
    assert record["not_converged"] == [] and record["new"] == []
    assert "Remediation " in output and "finding(s) cleared" in output
    # the MIG hosts now hold the policy's layout, and inference.service has its restart policy
    layout = fresh_fleet.ssh("fleet-03", "nvidia-smi mig -lgi", check=True).stdout
    assert layout.count("MIG 3g.40gb") == 4 and "1g.10gb" not in layout
    restart = fresh_fleet.ssh("fleet-01", "systemctl show -p Restart inference.service", check=True).stdout
    assert restart.strip() == "Restart=on-failure"
    workers = fresh_fleet.ssh("fleet-01", "ls /run/gpufleet-sim/procs | wc -l", check=True).stdout
    assert int(workers) == 4

    # a second run finds nothing left to fix and changes nothing
    rc, output = finish(remediate(fresh_fleet, report_dir))
    assert rc == 0, output[-4000:]
    second = latest_record(report_dir)
    assert second["cleared"] == [] and second["new"] == []
    remediation_play = output.split("PLAY [Remediate in batches]")[1].split("PLAY [Audit after remediation]")[0]
    assert "changed:" not in remediation_play, remediation_play[-3000:]


def test_a_host_lost_mid_run_does_not_stop_the_others_and_is_reported(fresh_fleet):
    fresh_fleet.recreate()
    report_dir = tempfile.mkdtemp(prefix="remediate-")
    process = remediate(fresh_fleet, report_dir, extra=["-e", "gpufleet_remediation_batch_size=1"])
    # once the first audit is written (its run folder exists from the start, report.json comes last), fleet-04
    # goes away before its batch comes
    deadline = time.time() + 300
    while time.time() < deadline and not any(name.endswith("-before") and os.path.exists(os.path.join(report_dir, name, "report.json"))
                                             for name in os.listdir(report_dir)):
        time.sleep(0.2)
    fresh_fleet.ssh("fleet-04", "systemctl poweroff --no-block")
    rc, output = finish(process)
    record = latest_record(report_dir)
    assert "fleet-04" in record["not_converged"], output[-4000:]
    cleared = {(f["host"], f["rule"]) for f in record["cleared"]}
    assert ("fleet-03", "scheduling.mig_layout_drift") in cleared
    assert ("fleet-01", "workload.restart_policy") in cleared
    assert {f["host"] for f in record["remaining"] if f["rule"] == "scheduling.mig_pending"} == {"fleet-04"}
    assert rc != 0  # an unreachable host makes ansible-playbook say so in its exit status
    wait_stopped("fleet-04")
    fresh_fleet.recreate()


def wait_stopped(host, timeout=60):
    """A powered-off host is done once its supervisor has gone; recreating it earlier races the shutdown."""
    deadline = time.time() + timeout
    while time.time() < deadline and fleet_module.supervisor_pid(fleet_module.Host.named(host)) is not None:
        time.sleep(0.2)
