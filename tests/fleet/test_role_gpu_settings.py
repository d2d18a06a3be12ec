"""The gpu_settings role on the simulated fleet: persistence mode and compute mode from the policy.

fleet-01 (scenario default) has persistence mode off on both GPUs and an nvidia-persistenced unit
that is not running; the policy wants persistence on. The tests put the host back as they found it.
"""

import base64
import json
import os

import pytest

import fleet as fleet_module
from ansible_collections.gpufleet.core.plugins.plugin_utils.reports.format import expanded

HOST = "fleet-01"
STATE_FILE = "/var/lib/gpufleet-sim/state.json"
PROCS_DIR = "/run/gpufleet-sim/procs"
PERSISTENCED = "nvidia-persistenced.service"
PLAYBOOK = """\
- name: Converge {role}
  hosts: fleet
  gather_facts: false
  roles:
    - role: gpufleet.core.{role}
"""
COMPUTE_POLICY = {"gpufleet_policy_zz_test": {"compute_mode": "exclusive_process"}}


def role_playbook(folder, role):
    path = os.path.join(str(folder), "%s.yml" % role)
    with open(path, "w") as handle:
        handle.write(PLAYBOOK.format(role=role))
    return path


def sim_state(fleet, host):
    return json.loads(fleet.ssh(host, "cat %s" % STATE_FILE, check=True).stdout)


def unit_state(fleet, host, unit):
    """(active, enabled) words of a unit, as systemctl prints them."""
    lines = fleet.ssh(host, "systemctl is-active %s; systemctl is-enabled %s" % (unit, unit)).stdout.split()
    return tuple(lines[:2])


SIM_STATE = fleet_module.simulator_state_module()


def put_state(fleet, host, state_or_text):
    """Replaces the simulated NVIDIA state of a host (a state dict or the JSON text of one)."""
    text = state_or_text if isinstance(state_or_text, str) else json.dumps(state_or_text, indent=1, sort_keys=True)
    encoded = base64.b64encode(text.encode()).decode()
    fleet.ssh(host, "echo %s | base64 -d > %s.new && mv %s.new %s" % (encoded, STATE_FILE, STATE_FILE, STATE_FILE),
              check=True)


class HostSnapshot:
    """The simulated NVIDIA state and the state of some units, put back by restore()."""

    def __init__(self, fleet, host, units=()):
        self.fleet, self.host = fleet, host
        self.state_text = fleet.ssh(host, "cat %s" % STATE_FILE, check=True).stdout
        self.units = dict((unit, unit_state(fleet, host, unit)) for unit in units)

    def restore(self):
        for unit, (active, enabled) in self.units.items():
            if active != "active":
                self.fleet.ssh(self.host, "systemctl stop %s" % unit)
            if enabled != "enabled":
                self.fleet.ssh(self.host, "systemctl disable %s" % unit)
        put_state(self.fleet, self.host, self.state_text)


def start_gpu_process(fleet, host, gpu):
    """A process that the simulated nvidia-smi lists on the GPU; returns its pid."""
    command = ("mkdir -p {dir}; setsid sleep 900 </dev/null >/dev/null 2>&1 & pid=$!; "
               "echo '{{\"gpu\": {gpu}, \"used_mib\": 1024, \"name\": \"fleet-test\"}}' > {dir}/$pid.json; echo $pid")
    return int(fleet.ssh(host, command.format(dir=PROCS_DIR, gpu=gpu), check=True).stdout.split()[-1])


def stop_gpu_process(fleet, host, pid):
    fleet.ssh(host, "kill %d; rm -f %s/%d.json" % (pid, PROCS_DIR, pid))


def audit_rules(fleet, host, report_dir, extra_vars=None):
    """Rule ids of the audit's findings on the host (playbooks/audit.yml, reports under report_dir)."""
    variables = dict(extra_vars or {}, gpufleet_report_dir=str(report_dir))
    run = fleet.playbook("playbooks/audit.yml", limit=host, extra_vars=variables)
    assert run.rc in (0, 2), run.output()
    with open(os.path.join(str(report_dir), "latest-partial", "report.json")) as handle:  # --limit: partial run
        report = expanded(json.load(handle))
    return set(finding["rule"] for finding in report["findings"] if finding["host"] == host)


def task_result(run, host, task):
    return run.result(host, task)


def persistence_modes(state):
    return [gpu["persistence_mode"] for gpu in state["gpus"]]


def compute_modes(state):
    return [gpu["compute_mode"] for gpu in state["gpus"]]


@pytest.fixture(scope="module")
def host(fleet):
    """fleet-01 as the scenario builds it (whatever earlier tests did to it), put back afterwards."""
    snapshot = HostSnapshot(fleet, HOST, units=(PERSISTENCED,))
    fleet.ssh(HOST, "systemctl disable --now %s" % PERSISTENCED, check=True)
    put_state(fleet, HOST, SIM_STATE.state_for("NVIDIA A100-SXM4-80GB", 2, host=HOST))
    yield HOST
    snapshot.restore()


@pytest.fixture(scope="module")
def playbook(tmp_path_factory):
    return role_playbook(tmp_path_factory.mktemp("gpu_settings"), "gpu_settings")


def test_check_mode_reports_the_change_and_leaves_the_host_as_it_was(fleet, host, playbook, tmp_path):
    assert "driver.persistence_mode" in audit_rules(fleet, host, tmp_path / "before")
    before = sim_state(fleet, host)
    assert persistence_modes(before) == [False, False]
    run = fleet.playbook(playbook, limit=host, check=True, diff=True)
    assert run.rc == 0, run.output()
    assert task_result(run, host, "Run nvidia-persistenced so that persistence mode stays on across reboots")["changed"]
    planned = task_result(run, host, "Set persistence mode and compute mode on the GPUs that differ")
    assert planned["changed"] is True and planned["changed_gpus"] == [0, 1]
    assert planned["commands"] == ["nvidia-smi -i 0 -pm 1", "nvidia-smi -i 1 -pm 1"]
    assert "gpu 0: persistence_mode on" in planned["diff"]["after"]
    assert sim_state(fleet, host) == before
    assert unit_state(fleet, host, PERSISTENCED)[0] != "active"


def test_first_run_converges_and_the_second_changes_nothing(fleet, host, playbook, tmp_path):
    first = fleet.playbook(playbook, limit=host)
    assert first.rc == 0, first.output()
    assert first.stats[host]["changed"] > 0
    assert persistence_modes(sim_state(fleet, host)) == [True, True]
    assert unit_state(fleet, host, PERSISTENCED) == ("active", "enabled")
    second = fleet.playbook(playbook, limit=host)
    assert second.rc == 0, second.output()
    assert second.stats[host]["changed"] == 0, second.changed_tasks(host)
    assert "driver.persistence_mode" not in audit_rules(fleet, host, tmp_path / "after")


def test_compute_mode_on_a_busy_gpu_is_refused_until_allowed(fleet, host, playbook, tmp_path):
    pid = start_gpu_process(fleet, host, 0)
    try:
        before = sim_state(fleet, host)
        refused = fleet.playbook(playbook, limit=host, extra_vars=COMPUTE_POLICY)
        assert refused.rc != 0
        message = task_result(refused, host, "Set persistence mode and compute mode on the GPUs that differ")["msg"]
        assert "GPU 0: pids" in message and str(pid) in message and "gpu_settings_allow_busy" in message
        assert compute_modes(sim_state(fleet, host)) == compute_modes(before) == ["Default", "Default"]
        allowed = fleet.playbook(playbook, limit=host, extra_vars=dict(COMPUTE_POLICY, gpu_settings_allow_busy=True))
        assert allowed.rc == 0, allowed.output()
        changed = task_result(allowed, host, "Set persistence mode and compute mode on the GPUs that differ")
        assert changed["commands"] == ["nvidia-smi -i 0 -c EXCLUSIVE_PROCESS", "nvidia-smi -i 1 -c EXCLUSIVE_PROCESS"]
        assert compute_modes(sim_state(fleet, host)) == ["Exclusive_Process", "Exclusive_Process"]
    finally:
        stop_gpu_process(fleet, host, pid)
    again = fleet.playbook(playbook, limit=host, extra_vars=COMPUTE_POLICY)
    assert again.rc == 0 and again.stats[host]["changed"] == 0, again.output()
    assert "scheduling.compute_mode" not in audit_rules(fleet, host, tmp_path / "after", COMPUTE_POLICY)
