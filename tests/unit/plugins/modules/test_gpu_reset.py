"""Drives the gpu_reset module's main() against the simulated nvidia-smi of the test fleet (tests/fleet/sim), and a
stub nvidia-smi for what the simulator does not do (a reset that says it worked but leaves the GPU silent)."""

import json
import os
import stat

import pytest
from ansible.module_utils.testing import patch_module_args

from ansible_collections.gpufleet.core.plugins.module_utils.gpu_reset import bus_key
from ansible_collections.gpufleet.core.plugins.modules import gpu_reset
from tests.support.mig_sim import SIM_STATE, sim_on_path

H100 = "NVIDIA H100 80GB HBM3"


@pytest.fixture
def sim(tmp_path, monkeypatch):
    return sim_on_path(tmp_path, monkeypatch)


def run_module(capsys, **args):
    with patch_module_args(args):
        with pytest.raises(SystemExit):
            gpu_reset.main()
    return json.loads(capsys.readouterr().out)


def with_lost_gpu(sim, position=1, count=2, **repair):
    state = SIM_STATE.state_for(H100, count)
    state["gpus"][position]["lost"] = True
    if repair:
        state["repair"] = repair
    sim.write(state)
    return state["gpus"][position]["pci_bus_id"]


def test_a_reset_brings_the_lost_gpu_back_by_its_bus_id(capsys, sim):
    bus = with_lost_gpu(sim)
    result = run_module(capsys, gpus=[1])
    assert (result["outcome"], result["changed"], result["reason"]) == ("passed", True, None)
    assert result["commands"] == ["nvidia-smi -r -i %s" % bus]
    assert result["gpus"] == [{"index": 1, "pci_bus_id": bus, "result": "passed",
                               "detail": "reset; it answers nvidia-smi -q again"}]
    assert sim.gpu(1)["lost"] is False


def test_all_resets_every_gpu_lost_ones_included(capsys, sim):
    with_lost_gpu(sim, position=0, count=3)
    result = run_module(capsys, gpus="all")
    assert result["outcome"] == "passed" and [entry["index"] for entry in result["gpus"]] == [0, 1, 2]
    assert [gpu["lost"] for gpu in sim.state()["gpus"]] == [False, False, False]


def test_a_failing_reset_is_reported_failed_with_the_tools_words(capsys, sim):
    bus = with_lost_gpu(sim, reset_fails=True)
    result = run_module(capsys, gpus=[1])
    assert "failed" not in result or result["failed"] is False  # the loop goes on to a reboot
    assert result["outcome"] == "failed"
    (entry,) = result["gpus"]
    assert entry["result"] == "failed" and "exit status 15" in entry["detail"]
    assert "Unable to reset GPU %s: GPU is lost" % bus in entry["detail"]
    assert sim.gpu(1)["lost"] is True


def test_refused_while_a_gpu_process_runs_and_nothing_is_run(capsys, sim):
    with_lost_gpu(sim)
    pid = sim.use_gpu(0)
    before = sim.raw_state()
    result = run_module(capsys, gpus="all")
    assert (result["outcome"], result["changed"], result["commands"]) == ("refused", False, [])
    assert "GPU 0: pids %d" % pid in result["reason"] and "drain the node" in result["reason"]
    assert [entry["result"] for entry in result["gpus"]] == ["refused", "refused"]
    assert sim.raw_state() == before


def test_check_mode_runs_no_reset_and_says_what_it_would_reset(capsys, sim):
    bus = with_lost_gpu(sim)
    before = sim.raw_state()
    result = run_module(capsys, gpus=[1], _ansible_check_mode=True)
    assert (result["outcome"], result["commands"]) == ("would_reset", ["nvidia-smi -r -i %s" % bus])
    assert result["gpus"][0]["detail"] == "lost" and "would reset GPU 1" in result["msg"]
    assert sim.raw_state() == before


def test_an_index_the_host_does_not_have_or_a_bad_value_fails_naming_it(capsys, sim):
    with_lost_gpu(sim)
    missing = run_module(capsys, gpus=[7])
    assert missing["failed"] is True and "GPU 7 not found on this host (it has 0, 1)" in missing["msg"]
    bad = run_module(capsys, gpus=["gpu0"])
    assert bad["failed"] is True and "gpus must be \"all\" or a list of GPU indexes, not 'gpu0'" in bad["msg"]


def stub_nvidia_smi(tmp_path, monkeypatch, sim_path, reset_rc=0):
    """An nvidia-smi that passes everything to the simulator but -r, which says it worked and changes nothing."""
    folder = tmp_path / "stub"
    folder.mkdir()
    script = folder / "nvidia-smi"
    script.write_text('#!/bin/sh\nif [ "$1" = "-r" ]; then echo "GPU $3 was successfully reset."; exit %d; fi\n'
                      'exec "%s" "$@"\n' % (reset_rc, sim_path))
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", "%s:%s" % (folder, os.environ["PATH"]))


def test_a_reset_that_leaves_the_gpu_silent_fails_its_check(capsys, sim, tmp_path, monkeypatch):
    with_lost_gpu(sim)
    stub_nvidia_smi(tmp_path, monkeypatch, str(tmp_path / "bin" / "nvidia-smi"))
    result = run_module(capsys, gpus=[1])
    assert result["outcome"] == "failed"
    assert result["gpus"][0]["detail"].startswith("reset, but the GPU does not answer nvidia-smi -q -x -i ")
    assert "No devices were found" in result["gpus"][0]["detail"]


def test_bus_ids_compare_in_both_spellings():
    assert bus_key("00000000:07:00.0") == bus_key("0000:07:00.0") == bus_key("07:00.0") == "00000000:07:00.0"


def test_refused_when_a_gpus_process_list_cannot_be_read(capsys, sim, tmp_path, monkeypatch):
    sim.write(SIM_STATE.state_for(H100, 2))
    folder = tmp_path / "no-processes"
    folder.mkdir()
    script = folder / "nvidia-smi"
    script.write_text('#!/bin/bash\n"%s" "$@" > "%s/out"; rc=$?\nsed "/<processes>/,/<\\/processes>/d" "%s/out"\nexit $rc\n'
                      % (tmp_path / "bin" / "nvidia-smi", folder, folder))
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", "%s:%s" % (folder, os.environ["PATH"]))
    before = sim.raw_state()
    result = run_module(capsys, gpus=[0])
    assert (result["outcome"], result["commands"]) == ("refused", [])
    assert result["reason"].startswith("the processes on the GPUs are unknown (GPU 0: the nvidia-smi -q -x report has "
                                       "no process section for it)")
    assert sim.raw_state() == before
