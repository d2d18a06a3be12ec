"""driver_rollout.yml and the driver role on the simulated fleet (scenario `driver`): canary batches,
idempotence, check mode, a failed verification that stops the rollout, rollback, drain hooks, and the
driver/library mismatch repaired by remediate.yml.

The hosts install stub packages of `gpufleet-nvidia-driver` from the local apt repository
(driver_repo.py): 550.90.07 at the start, 550.127.05 the pin, 550.144.03 a package after which GPU 0 does
not come up at the next module load.
"""

import glob
import json
import os
import tempfile

import pytest

START, PIN, BROKEN = "550.90.07", "550.127.05", "550.144.03"


@pytest.fixture(scope="module")
def driver_fleet(fleet):
    """The fleet rebuilt with the driver scenario for this module, then with the one it had before."""
    previous = fleet.scenario
    fleet.use_scenario("driver")
    yield fleet
    fleet.use_scenario(previous)


def hook_policy(log):
    """Drain and undrain hooks that append to a log file on the controller."""
    return {"gpufleet_policy_zz_hooks": {"driver": {"rollout": {"drain": {
        "method": "command", "delegate_to": "localhost",
        "command": "echo drain $GPUFLEET_HOST $GPUFLEET_DRIVER_VERSION >> %s" % log,
        "undrain_command": "echo undrain $GPUFLEET_HOST >> %s" % log}}}}}


def rollout(fleet, extra=None, check=False):
    report_dir = tempfile.mkdtemp(prefix="driver-rollout-")
    run = fleet.playbook("driver_rollout.yml", extra_vars=dict({"gpufleet_report_dir": report_dir}, **(extra or {})),
                         check=check)
    reports = sorted(glob.glob(os.path.join(report_dir, "*-driver-*", "driver-*.json")))
    assert len(reports) == 1, run.output()
    with open(reports[0]) as handle:
        return run, json.load(handle)


def versions(fleet, hosts=None):
    """{host: (package version, driver version nvidia-smi reports or the error)}."""
    found = {}
    for host in hosts or fleet.hosts:
        package = fleet.ssh(host, "dpkg-query -W -f='${Version}' gpufleet-nvidia-driver", check=True).stdout.strip()
        smi = fleet.ssh(host, "nvidia-smi --query-gpu=driver_version --format=csv,noheader | sort -u")
        found[host] = (package, smi.stdout.strip() if smi.returncode == 0 else "rc %d" % smi.returncode)
    return found


def held(fleet, host):
    return fleet.ssh(host, "apt-mark showhold", check=True).stdout.split()


def read_log(path):
    with open(path) as handle:
        return [line.split() for line in handle.read().splitlines()]


def test_check_mode_then_rollout_in_batches_then_nothing_left_to_change(driver_fleet):
    fleet = driver_fleet
    before = versions(fleet)
    assert set(before.values()) == {(START + "-1", START)}

    run, report = rollout(fleet, check=True)
    assert run.rc == 0, run.output()
    assert versions(fleet) == before
    # check mode: a plan, never a report as if it had run (<time>-driver-rollout-check/driver-rollout.json, would_change)
    assert report["check_mode"] is True and report["would_change"] == fleet.hosts and report["changed"] == []
    assert report["failed"] == [] and report["not_acted"] == []
    assert "[check mode] Driver rollout planned, nothing changed: 4 would change" in run.stdout

    log = hook_log()
    run, report = rollout(fleet, hook_policy(log))
    assert run.rc == 0, run.output()
    assert set(versions(fleet).values()) == {(PIN + "-1", PIN)}
    assert report["changed"] == fleet.hosts and report["failed"] == report["untouched"] == []
    assert report["batch_sizes"] == [1, 1, 2]
    assert [report["hosts"][host]["batch"] for host in fleet.hosts] == [1, 2, 3, 3]
    assert "Driver rollout: 4 changed, 0 unchanged, 0 failed, 0 untouched" in run.stdout
    for host in fleet.hosts:
        assert "gpufleet-nvidia-driver" in held(fleet, host)
        record = json.loads(fleet.ssh(host, "cat /var/lib/gpufleet/driver.json", check=True).stdout)
        assert (record["current"], record["previous"], record["gpu_count"]) == (PIN, START, 2)
    # every host drained before and undrained after its change, one host after the other per batch
    entries = read_log(log)
    for host in fleet.hosts:
        mine = [entry[0] for entry in entries if entry[1] == host]
        assert mine == ["drain", "undrain"], entries
    assert [entry[1] for entry in entries[:4]] == ["fleet-01", "fleet-01", "fleet-02", "fleet-02"]
    assert ["drain", "fleet-01", PIN] in entries

    boots = {host: fleet.ssh(host, "cat /proc/sys/kernel/random/boot_id", check=True).stdout for host in fleet.hosts}
    run, report = rollout(fleet)
    assert run.rc == 0, run.output()
    assert report["unchanged"] == fleet.hosts and report["changed"] == []
    assert all(stats["changed"] == 0 for stats in run.stats.values()), run.output()
    assert boots == {host: fleet.ssh(host, "cat /proc/sys/kernel/random/boot_id", check=True).stdout
                     for host in fleet.hosts}


def test_rollback_returns_to_the_recorded_version_with_a_module_reload(driver_fleet):
    fleet = driver_fleet
    if set(versions(fleet).values()) != {(PIN + "-1", PIN)}:
        pytest.fail("needs the fleet rolled out to %s by the test before" % PIN)
    no_reboot = {"gpufleet_policy_zz_reload": {"driver": {"rollout": {"reboot": False}}},
                 "driver_reload_command": ["nvidia-smi", "--sim-reload-modules"], "gpufleet_driver_rollback": True}
    boots = {host: fleet.ssh(host, "cat /proc/sys/kernel/random/boot_id", check=True).stdout for host in fleet.hosts}
    run, report = rollout(fleet, no_reboot)
    assert run.rc == 0, run.output()
    assert report["mode"] == "rollback" and report["changed"] == fleet.hosts
    assert set(versions(fleet).values()) == {(START + "-1", START)}
    assert {host: report["hosts"][host]["load"] for host in fleet.hosts} == dict.fromkeys(fleet.hosts, "reload")
    assert boots == {host: fleet.ssh(host, "cat /proc/sys/kernel/random/boot_id", check=True).stdout
                     for host in fleet.hosts}
    # nvidia-persistenced held the GPUs on fleet-02: stopped for the reload, running again after
    assert fleet.ssh("fleet-02", "systemctl is-active nvidia-persistenced").stdout.strip() == "active"
    record = json.loads(fleet.ssh("fleet-01", "cat /var/lib/gpufleet/driver.json", check=True).stdout)
    assert (record["current"], record["previous"]) == (START, PIN)


def test_mismatch_is_found_by_the_audit_and_repaired_by_remediate(driver_fleet):
    fleet = driver_fleet
    fleet.ssh("fleet-03", "apt-get install -y --allow-change-held-packages gpufleet-nvidia-driver=%s-1" % PIN,
              check=True, timeout=120)
    smi = fleet.ssh("fleet-03", "nvidia-smi")
    assert smi.returncode == 18 and "Driver/library version mismatch" in smi.stdout + smi.stderr
    report_dir = tempfile.mkdtemp(prefix="driver-remediate-")
    run = fleet.playbook("remediate.yml", limit="fleet-03", extra_vars={"gpufleet_report_dir": report_dir})
    assert run.rc == 0, run.output()
    with open(os.path.join(report_dir, "latest-partial", "remediation.json")) as handle:  # --limit: partial run
        record = json.load(handle)
    assert ("fleet-03", "driver.kernel_userspace_mismatch") in {(f["host"], f["rule"]) for f in record["cleared"]}
    assert record["not_converged"] == []
    assert versions(fleet, ["fleet-03"]) == {"fleet-03": (PIN + "-1", PIN)}


def test_a_failed_verification_stops_the_rollout_and_never_undrains(driver_fleet):
    fleet = driver_fleet
    fleet.recreate()
    log = hook_log()
    extra = dict(hook_policy(log), gpufleet_policy_zz_pin={"driver": {"pin": BROKEN}})
    run, report = rollout(fleet, extra)
    assert run.rc != 0
    assert report["failed"] == ["fleet-01"] and report["untouched"] == ["fleet-02", "fleet-03", "fleet-04"]
    assert report["stopped"] is True and report["stopped_after_batch"] == 1
    assert "1 of 2 GPUs present" in report["hosts"]["fleet-01"]["msg"]
    assert run.stats["fleet-01"]["failed"] == 1
    assert read_log(log) == [["drain", "fleet-01", BROKEN]]
    untouched = versions(fleet, ["fleet-02", "fleet-03", "fleet-04"])
    assert set(untouched.values()) == {(START + "-1", START)}
    fleet.recreate()


def hook_log():
    """A fresh, empty file for the drain hooks to append to (they run on the controller)."""
    handle, path = tempfile.mkstemp(prefix="driver-hooks-")
    os.close(handle)
    return path
