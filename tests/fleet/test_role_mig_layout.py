"""The mig_layout role on the simulated fleet: the policy's mig-parted config applied with nvidia-smi.

Scenario default: fleet-03 holds 7x 1g.10gb per A100 instead of the policy's all-3g.40gb (MIG layout
drift); on fleet-04 MIG mode is enabled but waits for a GPU reset (MIG pending). The tests put the
hosts back as they found them.
"""

import base64

import pytest

from test_role_gpu_settings import (
    SIM_STATE, HostSnapshot, audit_rules, put_state, role_playbook, sim_state, start_gpu_process, stop_gpu_process,
    task_result)

A100 = "NVIDIA A100-SXM4-80GB"
DRIFTED, PENDING = "fleet-03", "fleet-04"
HOSTS = [DRIFTED, PENDING]
APPLY = "Apply the MIG layout"
TWO_3G = [("3g.40gb", 0, ["3g.40gb"]), ("3g.40gb", 4, ["3g.40gb"])]
TEST_UNIT = "mig-test-worker.service"
TEST_FILES = {
    "/usr/local/bin/mig-test-worker": (
        "#!/bin/sh\n"
        "mkdir -p /run/gpufleet-sim/procs\n"
        "echo '{\"gpu\": 0, \"used_mib\": 1024, \"name\": \"drain-test\"}' > /run/gpufleet-sim/procs/$$.json\n"
        "exec sleep 900\n"),
    "/etc/systemd/system/" + TEST_UNIT: (
        "[Unit]\nDescription=mig_layout drain test workload\n[Service]\nExecStart=/usr/local/bin/mig-test-worker\n"),
}


def layouts(state):
    """Per GPU: (MIG mode current, pending, [(profile, start, [compute instances])])."""
    return [(gpu["mig"]["current"], gpu["mig"]["pending"],
             sorted((gi["profile"], gi["placement"]["start"], sorted(ci["profile"] for ci in gi["compute_instances"]))
                    for gi in gpu["mig"]["gpu_instances"]))
            for gpu in state["gpus"]]


@pytest.fixture(scope="module")
def hosts(fleet):
    """fleet-03 and fleet-04 as the scenario builds them (whatever earlier tests did), put back afterwards."""
    snapshots = [HostSnapshot(fleet, host) for host in HOSTS]
    seven = ["1g.10gb"] * 7
    put_state(fleet, DRIFTED, SIM_STATE.state_for(A100, 2, host=DRIFTED, persistence_mode=True, mig=True,
                                                  mig_layouts={0: seven, 1: seven}))
    put_state(fleet, PENDING, SIM_STATE.state_for(A100, 2, host=PENDING, persistence_mode=True, mig=False,
                                                  mig_pending=True))
    yield HOSTS
    for snapshot in snapshots:
        snapshot.restore()


@pytest.fixture(scope="module")
def playbook(tmp_path_factory):
    return role_playbook(tmp_path_factory.mktemp("mig_layout"), "mig_layout")


def test_check_mode_prints_the_plan_and_leaves_the_hosts_as_they_were(fleet, hosts, playbook, tmp_path):
    assert "scheduling.mig_layout_drift" in audit_rules(fleet, DRIFTED, tmp_path / "drift")
    assert "scheduling.mig_pending" in audit_rules(fleet, PENDING, tmp_path / "pending")
    before = dict((host, sim_state(fleet, host)) for host in hosts)
    run = fleet.playbook(playbook, limit=",".join(hosts), check=True, diff=True)
    assert run.rc == 0, run.output()
    drift_plan = task_result(run, DRIFTED, APPLY)
    assert drift_plan["changed"] is True
    assert drift_plan["commands"][-2:] == ["nvidia-smi mig -cgi 9:0 -i 1 -C", "nvidia-smi mig -cgi 9:4 -i 1 -C"]
    assert sum(command.startswith("nvidia-smi mig -dgi -i 0 ") for command in drift_plan["commands"]) == 7
    assert drift_plan["diff"]["after"] == ("gpu 0: mig on, devices: 3g.40gb x2\n"
                                           "gpu 1: mig on, devices: 3g.40gb x2\n")
    pending_plan = task_result(run, PENDING, APPLY)
    assert pending_plan["commands"] == [
        "nvidia-smi -r -i 0", "nvidia-smi mig -cgi 9:0 -i 0 -C", "nvidia-smi mig -cgi 9:4 -i 0 -C",
        "nvidia-smi -r -i 1", "nvidia-smi mig -cgi 9:0 -i 1 -C", "nvidia-smi mig -cgi 9:4 -i 1 -C"]
    for host in hosts:
        assert sim_state(fleet, host) == before[host]


def test_first_run_converges_and_the_second_changes_nothing(fleet, hosts, playbook, tmp_path):
    first = fleet.playbook(playbook, limit=",".join(hosts))
    assert first.rc == 0, first.output()
    for host in hosts:
        assert task_result(first, host, APPLY)["changed"] is True
        assert layouts(sim_state(fleet, host)) == [(True, True, TWO_3G)] * 2
    second = fleet.playbook(playbook, limit=",".join(hosts))
    assert second.rc == 0, second.output()
    for host in hosts:
        assert second.stats[host]["changed"] == 0, second.changed_tasks(host)
        rules = audit_rules(fleet, host, tmp_path / host)
        assert not rules & {"scheduling.mig_layout_drift", "scheduling.mig_pending"}, rules


def test_a_busy_gpu_is_refused_unless_the_policy_allows_draining(fleet, hosts, playbook):
    pid = start_gpu_process(fleet, DRIFTED, 0)
    other_layout = {"gpufleet_policy_zz_test": {"mig": {"selected": "all-1g.10gb"}}}
    try:
        before = sim_state(fleet, DRIFTED)
        refused = fleet.playbook(playbook, limit=DRIFTED, extra_vars=other_layout)
        assert refused.rc != 0
        message = task_result(refused, DRIFTED, APPLY)["msg"]
        assert "GPU 0: pids" in message and str(pid) in message and "mig.allow_drain" in message
        assert sim_state(fleet, DRIFTED) == before
    finally:
        stop_gpu_process(fleet, DRIFTED, pid)


def test_allow_drain_stops_the_gpu_services_around_the_change(fleet, hosts, playbook):
    for path, text in TEST_FILES.items():
        fleet.ssh(DRIFTED, "echo %s | base64 -d > %s && chmod 755 %s"
                  % (base64.b64encode(text.encode()).decode(), path, path), check=True)
    fleet.ssh(DRIFTED, "systemctl daemon-reload && systemctl start %s" % TEST_UNIT, check=True)
    drain = {"gpufleet_policy_zz_test": {"mig": {"selected": "all-1g.10gb", "allow_drain": True},
                                         "workload": {"services": [{"name": TEST_UNIT}]}}}
    try:
        run = fleet.playbook(playbook, limit=DRIFTED, extra_vars=drain)
        assert run.rc == 0, run.output()
        assert task_result(run, DRIFTED, "Plan the changes to see whether busy GPUs must be drained")["busy_gpus"]
        assert "Stop the GPU services while their GPUs change (mig.allow_drain)" in run.changed_tasks(DRIFTED)
        assert "Start the GPU services stopped for the change" in run.changed_tasks(DRIFTED)
        assert fleet.ssh(DRIFTED, "systemctl is-active %s" % TEST_UNIT).stdout.strip() == "active"
        gpu0 = layouts(sim_state(fleet, DRIFTED))[0]
        assert [(profile, cis) for profile, _start, cis in gpu0[2]] == [("1g.10gb", ["1g.10gb"])] * 7
    finally:
        fleet.ssh(DRIFTED, "systemctl stop %s; rm -f %s; systemctl daemon-reload" % (TEST_UNIT, " ".join(TEST_FILES)))
