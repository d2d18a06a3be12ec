"""During a driver/library mismatch gpu_facts cannot list the GPU processes: the driver role then counts the
processes that hold /dev/nvidia* open, and refuses when that scan cannot answer either. Unknown is never
"no process" (scenario `driver`, remediate.yml repairing the mismatch on fleet-03)."""

import json
import os
import tempfile

import pytest

PIN = "550.127.05"
HOST = "fleet-03"


@pytest.fixture(scope="module")
def mismatched(fleet):
    previous = fleet.scenario
    fleet.use_scenario("driver")
    fleet.ssh(HOST, "apt-get install -y --allow-change-held-packages gpufleet-nvidia-driver=%s-1" % PIN,
              check=True, timeout=120)
    assert fleet.ssh(HOST, "nvidia-smi").returncode == 18
    yield fleet
    fleet.use_scenario(previous)


def boot_id(fleet):
    return fleet.ssh(HOST, "cat /proc/sys/kernel/random/boot_id", check=True).stdout


def remediate(fleet, extra=None):
    report_dir = tempfile.mkdtemp(prefix="driver-unknown-")
    run = fleet.playbook("remediate.yml", limit=HOST, extra_vars=dict({"gpufleet_report_dir": report_dir}, **(extra or {})))
    # --limit makes every audit of the run a partial one
    with open(os.path.join(report_dir, "latest-partial", "remediation.json")) as handle:
        return run, json.load(handle)


def refusal(run):
    return run.result(HOST, "Say why the mismatch was not repaired")["msg"]


def test_a_mismatch_host_whose_processes_cannot_be_listed_is_refused_not_rebooted(mismatched):
    fleet = mismatched
    before = boot_id(fleet)
    run, record = remediate(fleet, {"driver_device_scan_command": "exit 3"})
    assert HOST in record["not_converged"], run.output()
    message = refusal(run)
    assert "the processes on the GPUs are unknown" in message and "Driver/library version mismatch" in message
    assert "Nothing was changed" in message or "nothing was changed" in message
    assert boot_id(fleet) == before
    assert fleet.ssh(HOST, "nvidia-smi").returncode == 18


def test_a_process_holding_a_gpu_device_file_is_found_and_refused(mismatched):
    fleet = mismatched
    pid = int(fleet.ssh(HOST, "touch /dev/nvidia0; setsid sleep 900 </dev/nvidia0 >/dev/null 2>&1 & echo $!",
                        check=True).stdout.split()[-1])
    try:
        before = boot_id(fleet)
        run, record = remediate(fleet)
        assert HOST in record["not_converged"], run.output()
        message = refusal(run)
        assert "1 processes use the GPUs (%d, from device files)" % pid in message, message
        assert boot_id(fleet) == before
    finally:
        fleet.ssh(HOST, "kill %d; rm -f /dev/nvidia0" % pid)
    # with nothing holding the GPUs the same mismatch is repaired
    run, record = remediate(fleet)
    assert record["not_converged"] == [], run.output()
    assert fleet.ssh(HOST, "nvidia-smi --query-gpu=driver_version --format=csv,noheader | sort -u").stdout.strip() == PIN
