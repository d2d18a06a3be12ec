"""Drives the mig_layout module's main() against the simulated nvidia-smi of the test fleet.

The simulator (tests/fleet/sim/nvidia_smi.py) keeps its state in a temporary root
(GPUFLEET_SIM_ROOT) and enforces what the real nvidia-smi enforces: profiles and placements
per model, MIG mode pending until a reset, refusal while processes use a GPU.
"""

import json

import pytest
from ansible.module_utils.testing import patch_module_args

from ansible_collections.gpufleet.core.plugins.module_utils import mig_plan
from ansible_collections.gpufleet.core.plugins.modules import mig_layout
from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.knowledge import load_knowledge
from tests.support.mig_sim import A100, SIM_STATE, sim_on_path


@pytest.fixture
def sim(tmp_path, monkeypatch):
    return sim_on_path(tmp_path, monkeypatch)


@pytest.fixture(scope="module")
def a100_profiles():
    return load_knowledge().mig_model(A100)


def run_module(capsys, **args):
    with patch_module_args(args):
        with pytest.raises(SystemExit):
            mig_layout.main()
    return json.loads(capsys.readouterr().out)


def apply(capsys, profiles, gpus, **extra):
    return run_module(capsys, gpus=gpus, profiles=profiles, **extra)


def test_enables_mig_resets_and_creates_instances_then_changes_nothing(capsys, sim, a100_profiles):
    sim.write(SIM_STATE.state_for(A100, 2))
    first = apply(capsys, a100_profiles, [{"index": 0, "devices": {"3g.40gb": 2}}], reset=True)
    assert first["changed"] is True
    assert first["commands"] == [
        "nvidia-smi -i 0 -mig 1", "nvidia-smi -r -i 0",
        "nvidia-smi mig -cgi 9:0 -i 0 -C", "nvidia-smi mig -cgi 9:4 -i 0 -C"]
    assert sim.gpu(0)["mig"]["current"] is True
    assert sim.layout(0) == [("3g.40gb", 0, ["3g.40gb"]), ("3g.40gb", 4, ["3g.40gb"])]
    assert sim.gpu(1)["mig"]["current"] is False
    assert first["layout"]["after"]["0"] == {"mig_enabled": True, "mig_enabled_pending": True, "devices": {"3g.40gb": 2}}
    before = sim.raw_state()
    second = apply(capsys, a100_profiles, [{"index": 0, "devices": {"3g.40gb": 2}}], reset=True)
    assert (second["changed"], second["commands"], second["pending_reset"]) == (False, [], [])
    assert sim.raw_state() == before


def test_check_mode_returns_the_plan_and_changes_nothing(capsys, sim, a100_profiles):
    sim.write(SIM_STATE.state_for(A100, 1, mig=True, mig_layouts={0: ["7g.80gb"]}))
    before = sim.raw_state()
    result = apply(capsys, a100_profiles, [{"index": 0, "devices": {"1c.3g.40gb": 3, "3g.40gb": 1}}],
                   _ansible_check_mode=True, _ansible_diff=True)
    assert result["changed"] is True
    assert result["commands"] == [
        "nvidia-smi mig -dci -i 0 -gi 0 -ci 0", "nvidia-smi mig -dgi -i 0 -gi 0",
        "nvidia-smi mig -cgi 9:0 -i 0 -C", "nvidia-smi mig -cgi 9:4 -i 0",
        "nvidia-smi mig -cci 0,0,0 -gi <new GI at 4> -i 0"]
    assert result["diff"] == {"before": "gpu 0: mig on, devices: 7g.80gb x1\n",
                              "after": "gpu 0: mig on, devices: 1c.3g.40gb x3, 3g.40gb x1\n"}
    assert sim.raw_state() == before


def test_shared_compute_instances_are_created_in_their_gpu_instance(capsys, sim, a100_profiles):
    sim.write(SIM_STATE.state_for(A100, 1, mig=True, mig_layouts={0: ["7g.80gb"]}))
    wanted = [{"index": 0, "devices": {"1c.3g.40gb": 3, "3g.40gb": 1}}]
    result = apply(capsys, a100_profiles, wanted)
    new_gi = [gi["id"] for gi in sim.gpu(0)["mig"]["gpu_instances"] if gi["placement"]["start"] == 4][0]
    assert result["commands"][-1] == "nvidia-smi mig -cci 0,0,0 -gi %d -i 0" % new_gi
    assert sim.layout(0) == [("3g.40gb", 0, ["3g.40gb"]), ("3g.40gb", 4, ["1c.3g.40gb"] * 3)]
    assert apply(capsys, a100_profiles, wanted)["changed"] is False


def test_instances_already_in_place_are_kept(capsys, sim, a100_profiles):
    sim.write(SIM_STATE.state_for(A100, 1, mig=True, mig_layouts={0: ["9:4", "14:0", "19:2"]}))
    kept = [gi["id"] for gi in sim.gpu(0)["mig"]["gpu_instances"] if gi["profile"] == "3g.40gb"][0]
    result = apply(capsys, a100_profiles, [{"index": 0, "devices": {"3g.40gb": 2}}])
    assert not any("-gi %d" % kept in command for command in result["commands"])
    assert result["commands"][-1] == "nvidia-smi mig -cgi 9:0 -i 0 -C"
    assert [gi["id"] for gi in sim.gpu(0)["mig"]["gpu_instances"] if gi["placement"]["start"] == 4] == [kept]
    assert sim.layout(0) == [("3g.40gb", 0, ["3g.40gb"]), ("3g.40gb", 4, ["3g.40gb"])]


def test_without_reset_the_gpu_is_reported_pending_until_a_reset_is_allowed(capsys, sim, a100_profiles):
    sim.write(SIM_STATE.state_for(A100, 1))
    wanted = [{"index": 0, "devices": {"7g.80gb": 1}}]
    first = apply(capsys, a100_profiles, wanted)
    assert (first["changed"], first["commands"], first["pending_reset"]) == (True, ["nvidia-smi -i 0 -mig 1"], [0])
    assert "waits for a GPU reset" in first["msg"] and "mig_layout_reset" in first["msg"]
    assert (sim.gpu(0)["mig"]["current"], sim.gpu(0)["mig"]["pending"]) == (False, True)
    again = apply(capsys, a100_profiles, wanted)
    assert (again["changed"], again["pending_reset"]) == (False, [0])
    done = apply(capsys, a100_profiles, wanted, reset=True)
    assert done["commands"] == ["nvidia-smi -r -i 0", "nvidia-smi mig -cgi 0:0 -i 0 -C"]
    assert done["pending_reset"] == [] and sim.layout(0) == [("7g.80gb", 0, ["7g.80gb"])]


def test_a_driver_that_applies_the_mode_at_once_needs_no_reset(capsys, sim, a100_profiles):
    sim.write(SIM_STATE.state_for(A100, 1, mig_mode_change="immediate"))
    result = apply(capsys, a100_profiles, [{"index": 0, "devices": {"4g.40gb": 1}}])
    assert result["commands"] == ["nvidia-smi -i 0 -mig 1", "nvidia-smi mig -cgi 5:0 -i 0 -C"]
    assert result["pending_reset"] == [] and sim.layout(0) == [("4g.40gb", 0, ["4g.40gb"])]


def test_a_gpu_in_use_is_refused_naming_the_pids_and_the_way_out(capsys, sim, a100_profiles):
    sim.write(SIM_STATE.state_for(A100, 2, mig=True, mig_layouts={0: ["7g.80gb"]}))
    pid = sim.use_gpu(0)
    before = sim.raw_state()
    result = apply(capsys, a100_profiles, [{"index": 0, "devices": {"3g.40gb": 2}}, {"index": 1, "devices": {}}])
    assert result["failed"] is True and result["commands"] == []
    assert "GPU 0: pids %d" % pid in result["msg"]
    assert "mig.allow_drain" in result["msg"] and "Drain" in result["msg"]
    assert sim.raw_state() == before


def test_allow_drain_lets_nvidia_smi_decide_and_its_refusal_is_reported(capsys, sim, a100_profiles):
    sim.write(SIM_STATE.state_for(A100, 1, mig=True, mig_layouts={0: ["7g.80gb"]}))
    sim.use_gpu(0)
    result = apply(capsys, a100_profiles, [{"index": 0, "devices": {"3g.40gb": 2}}], allow_drain=True)
    assert result["failed"] is True
    assert result["commands"] == ["nvidia-smi mig -dci -i 0 -gi 0 -ci 0"]
    assert "In use by another client" in result["msg"]


def test_a_gpu_in_use_that_already_matches_is_fine(capsys, sim, a100_profiles):
    sim.write(SIM_STATE.state_for(A100, 1, mig=True, mig_layouts={0: ["3g.40gb", "3g.40gb"]}))
    sim.use_gpu(0)
    result = apply(capsys, a100_profiles, [{"index": 0, "devices": {"3g.40gb": 2}}])
    assert (result["changed"], result["busy_gpus"]) == (False, {})


@pytest.mark.parametrize("devices, reason", [
    ({"3g.40gb": 3}, "allows at most 2 3g.40gb GPU instances"),
    ({"5g.50gb": 1}, "5g.50gb is not a MIG profile of A100-80GB"),
    ({"4g.40gb": 1, "3g.40gb": 2}, "the layout needs 10 compute slices: A100-80GB has 7"),
])
def test_a_layout_that_does_not_fit_fails_before_touching_any_gpu(capsys, sim, a100_profiles, devices, reason):
    sim.write(SIM_STATE.state_for(A100, 2))
    before = sim.raw_state()
    result = apply(capsys, a100_profiles, [{"index": 1, "devices": {"1g.10gb": 7}}, {"index": 0, "devices": devices}],
                   reset=True)
    assert result["failed"] is True and result["commands"] == []
    assert "does not fit, nothing was changed" in result["msg"] and reason in result["msg"]
    assert "GPU 0 (NVIDIA A100-SXM4-80GB)" in result["msg"]
    assert sim.raw_state() == before


def test_mig_off_destroys_the_instances_first(capsys, sim):
    sim.write(SIM_STATE.state_for(A100, 1, mig=True, mig_layouts={0: ["3g.40gb", "3g.40gb"]}))
    ids = sorted(gi["id"] for gi in sim.gpu(0)["mig"]["gpu_instances"])
    result = run_module(capsys, gpus=[{"index": 0, "mig_enabled": False}], reset=True)
    assert sorted(result["commands"][:4]) == sorted(
        ["nvidia-smi mig -dci -i 0 -gi %d -ci 0" % gi for gi in ids] + ["nvidia-smi mig -dgi -i 0 -gi %d" % gi for gi in ids])
    assert result["commands"][-2:] == ["nvidia-smi -i 0 -mig 0", "nvidia-smi -r -i 0"]
    assert (sim.gpu(0)["mig"]["current"], sim.gpu(0)["mig"]["gpu_instances"]) == (False, [])
    assert run_module(capsys, gpus=[{"index": 0, "mig_enabled": False}], reset=True)["changed"] is False


def test_a_gpu_without_mig_and_a_missing_gpu_are_refused(capsys, sim):
    sim.write(SIM_STATE.state_for("Tesla T4", 1))
    no_mig = run_module(capsys, gpus=[{"index": 0, "devices": {"1g.5gb": 1}}])
    assert no_mig["failed"] is True and "GPU 0 (Tesla T4) does not support MIG" in no_mig["msg"]
    missing = run_module(capsys, gpus=[{"index": 3, "devices": {}}])
    assert missing["failed"] is True and "GPU 3 not found on this host (it has 0)" in missing["msg"]
    t4_off = run_module(capsys, gpus=[{"index": 0, "mig_enabled": False}])
    assert (t4_off["changed"], t4_off["commands"]) == (False, [])


@pytest.mark.parametrize("devices, message", [
    ({"3g": 1}, "'3g' is not a MIG profile"),
    ({"3g.40gb": -1}, "count must be an integer >= 0"),
    ({"3g.40gb": "two"}, "count must be an integer >= 0"),
])
def test_bad_devices_are_named(capsys, sim, a100_profiles, devices, message):
    sim.write(SIM_STATE.state_for(A100, 1))
    result = apply(capsys, a100_profiles, [{"index": 0, "devices": devices}])
    assert result["failed"] is True and message in result["msg"]


def test_without_profiles_a_layout_cannot_be_checked(capsys, sim):
    sim.write(SIM_STATE.state_for(A100, 1, mig=True))
    result = run_module(capsys, gpus=[{"index": 0, "devices": {"3g.40gb": 2}}])
    assert result["failed"] is True and "no MIG profile table given" in result["msg"]


def test_instance_steps_plan_only_the_difference(a100_profiles):
    existing = [
        {"id": 2, "profile_name": "3g.40gb", "placement": {"start": 4, "size": 4},
         "compute_instances": [{"id": 0, "profile_name": "1c.3g.40gb"}]},
        {"id": 9, "profile_name": "1g.10gb", "placement": {"start": 2, "size": 1}, "compute_instances": []},
    ]
    steps = mig_plan.instance_steps(0, existing, {"3g.40gb": 2}, a100_profiles)
    assert [mig_plan.step_command(item) for item in steps] == [
        "nvidia-smi mig -dgi -i 0 -gi 9",
        "nvidia-smi mig -dci -i 0 -gi 2 -ci 0",
        "nvidia-smi mig -cgi 9:0 -i 0 -C",
        "nvidia-smi mig -cci 2 -gi 2 -i 0"]


def test_mode_steps_cancel_a_pending_change_without_a_reset():
    steps, needs_reset = mig_plan.mode_steps(1, True, False, True)
    assert [mig_plan.step_command(item) for item in steps] == ["nvidia-smi -i 1 -mig 1"] and needs_reset is False
    assert mig_plan.mode_steps(1, False, True, True) == ([], True)
