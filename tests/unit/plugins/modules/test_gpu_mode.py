"""Drives the gpu_mode module's main() against the simulated nvidia-smi of the test fleet."""

import json

import pytest
from ansible.module_utils.testing import patch_module_args

from ansible_collections.gpufleet.core.plugins.modules import gpu_mode
from tests.support.mig_sim import A100, SIM_STATE, sim_on_path


@pytest.fixture
def sim(tmp_path, monkeypatch):
    return sim_on_path(tmp_path, monkeypatch)


def run_module(capsys, **args):
    with patch_module_args(args):
        with pytest.raises(SystemExit):
            gpu_mode.main()
    return json.loads(capsys.readouterr().out)


def modes(sim_host):
    return [(gpu["persistence_mode"], gpu["compute_mode"]) for gpu in sim_host.state()["gpus"]]


def test_changes_only_the_gpus_that_differ_then_nothing(capsys, sim):
    state = SIM_STATE.state_for(A100, 3)
    state["gpus"][1]["persistence_mode"] = True
    state["gpus"][1]["compute_mode"] = "Exclusive_Process"
    sim.write(state)
    first = run_module(capsys, persistence_mode=True, compute_mode="exclusive_process")
    assert first["changed"] is True and first["changed_gpus"] == [0, 2]
    assert first["commands"] == ["nvidia-smi -i 0 -pm 1", "nvidia-smi -i 0 -c EXCLUSIVE_PROCESS",
                                 "nvidia-smi -i 2 -pm 1", "nvidia-smi -i 2 -c EXCLUSIVE_PROCESS"]
    assert modes(sim) == [(True, "Exclusive_Process")] * 3
    assert first["gpus"]["after"]["0"] == {"persistence_mode": True, "compute_mode": "exclusive_process"}
    second = run_module(capsys, persistence_mode=True, compute_mode="exclusive_process")
    assert (second["changed"], second["commands"], second["changed_gpus"]) == (False, [], [])


def test_check_mode_reports_and_changes_nothing(capsys, sim):
    sim.write(SIM_STATE.state_for(A100, 2))
    before = sim.raw_state()
    result = run_module(capsys, persistence_mode=True, gpus=[1], _ansible_check_mode=True, _ansible_diff=True)
    assert (result["changed"], result["commands"]) == (True, ["nvidia-smi -i 1 -pm 1"])
    assert result["diff"] == {"before": "gpu 1: persistence_mode off, compute_mode default\n",
                              "after": "gpu 1: persistence_mode on, compute_mode default\n"}
    assert sim.raw_state() == before


def test_compute_mode_change_on_a_busy_gpu_is_refused_before_anything_changes(capsys, sim):
    sim.write(SIM_STATE.state_for(A100, 2))
    pid = sim.use_gpu(1)
    before = sim.raw_state()
    refused = run_module(capsys, persistence_mode=True, compute_mode="exclusive_process")
    assert refused["failed"] is True and refused["commands"] == []
    assert "GPU 1: pids %d" % pid in refused["msg"] and "gpu_settings_allow_busy" in refused["msg"]
    assert sim.raw_state() == before
    persistence_only = run_module(capsys, persistence_mode=True)
    assert persistence_only["changed_gpus"] == [0, 1]
    allowed = run_module(capsys, compute_mode="exclusive_process", allow_busy=True)
    assert allowed["changed_gpus"] == [0, 1] and modes(sim) == [(True, "Exclusive_Process")] * 2


def test_persistence_off_and_prohibited(capsys, sim):
    sim.write(SIM_STATE.state_for(A100, 1, persistence_mode=True))
    result = run_module(capsys, persistence_mode=False, compute_mode="prohibited")
    assert result["commands"] == ["nvidia-smi -i 0 -pm 0", "nvidia-smi -i 0 -c PROHIBITED"]
    assert modes(sim) == [(False, "Prohibited")]


def test_nothing_to_manage_and_a_missing_gpu(capsys, sim):
    sim.write(SIM_STATE.state_for(A100, 1))
    idle = run_module(capsys)
    assert (idle["changed"], idle["commands"]) == (False, [])
    missing = run_module(capsys, persistence_mode=True, gpus=[0, 4])
    assert missing["failed"] is True and "GPU 4 not found on this host (it has 0)" in missing["msg"]
