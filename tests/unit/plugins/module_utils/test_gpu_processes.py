"""An unread GPU process list is never "no process": gpu_mode and mig_layout refuse to change a GPU whose
processes they could not read, and the driver role's process check (plugin_utils/rollout/drain.py) says unknown
where gpu_facts could not list them (that check: tests/unit/plugins/plugin_utils/rollout/test_drain_unknown_processes.py)."""

import json
import os
import stat
import sys

import pytest
from ansible.module_utils.testing import patch_module_args

from ansible_collections.gpufleet.core.plugins.module_utils.gpu_processes import (
    gpus_without_process_section, mark_unknown, unknown_processes)
from ansible_collections.gpufleet.core.plugins.modules import gpu_mode, mig_layout
from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.knowledge import load_knowledge
from tests.support.mig_sim import A100, SIM_DIR, SIM_STATE, Sim

# nvidia-smi: the simulator, but `-q -x` damaged as GPUFLEET_TEST_SMI says: "drop:N" removes GPU N's
# <processes> section, "fail" keeps the whole report and exits 1 (a partial report).
DAMAGING_WRAPPER = r'''
import os, re, subprocess, sys
sim = subprocess.run([sys.executable, "-I", "-S", %r] + sys.argv[1:], capture_output=True, text=True)
mode = os.environ.get("GPUFLEET_TEST_SMI", "")
out, rc = sim.stdout, sim.returncode
if sys.argv[1:3] == ["-q", "-x"] and mode.startswith("drop:"):
    wanted = int(mode.split(":")[1])
    parts = re.split(r"(<gpu id=)", out)
    gpu = -1
    for number, part in enumerate(parts):
        if part == "<gpu id=":
            gpu += 1
        elif gpu == wanted:
            parts[number] = re.sub(r"<processes>.*?</processes>|<processes\s*/>", "", part, flags=re.S)
    out = "".join(parts)
elif sys.argv[1:3] == ["-q", "-x"] and mode == "fail":
    rc = 1
sys.stdout.write(out)
sys.stderr.write(sim.stderr)
sys.exit(rc)
''' % os.path.join(SIM_DIR, "nvidia_smi.py")


@pytest.fixture
def sim(tmp_path, monkeypatch):
    root = tmp_path / "root"
    root.mkdir()
    folder = tmp_path / "bin"
    folder.mkdir()
    script = folder / "nvidia-smi"
    script.write_text("#!%s\n%s" % (sys.executable, DAMAGING_WRAPPER))
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("GPUFLEET_SIM_ROOT", str(root))
    monkeypatch.setenv("PATH", "%s:%s" % (folder, os.environ["PATH"]))
    return Sim(root)


def run(module, capsys, **args):
    with patch_module_args(args):
        with pytest.raises(SystemExit):
            module.main()
    return json.loads(capsys.readouterr().out)


# ---------------------------------------------------------------- what counts as unknown

def gpu(index, processes):
    return {"index": index, "processes": processes}


def test_a_complete_collection_knows_its_processes_even_when_there_are_none():
    facts = {"source": "nvml", "gpus": [gpu(0, []), gpu(1, [{"pid": 7}])], "errors": [
        {"gpu": None, "call": "dmesg", "reason": "not permitted"},
        {"gpu": 0, "call": "nvmlDeviceGetPowerUsage", "reason": "Not Supported"}]}
    assert unknown_processes(facts) == {}


def test_a_backend_given_up_before_the_one_that_answered_does_not_count():
    # source auto on a host without pynvml: NVML is tried first, nvidia-smi answers
    facts = {"source": "nvidia_smi", "gpus": [gpu(0, [])], "errors": [
        {"gpu": None, "call": "import pynvml", "reason": "nvidia-ml-py (pynvml) is not installed on this host"}]}
    assert unknown_processes(facts) == {}
    nothing_answered = dict(facts, source="none", gpus=[], errors=facts["errors"] + [
        {"gpu": None, "call": "nvidia-smi -q -x", "reason": "Driver/library version mismatch"}])
    assert unknown_processes(nothing_answered) == {None: (
        "import pynvml failed: nvidia-ml-py (pynvml) is not installed on this host; "
        "nvidia-smi -q -x failed: Driver/library version mismatch")}


@pytest.mark.parametrize("facts, expected", [
    (None, {None: "no GPU facts were collected"}),
    ({"gpus": None, "errors": []}, {None: "the GPU list is missing"}),
    ({"gpus": [gpu(0, []), {"index": 1}], "errors": []}, {1: "its process list is missing"}),
    ({"gpus": [gpu(0, None)], "errors": []}, {0: "its process list is missing"}),
    ({"gpus": [gpu(0, []), gpu(1, [])], "errors": [
        {"gpu": 1, "call": "nvmlDeviceGetComputeRunningProcesses", "reason": "Unknown Error"}]},
     {1: "nvmlDeviceGetComputeRunningProcesses failed: Unknown Error"}),
    ({"source": "none", "gpus": [], "errors": [{"gpu": None, "call": "nvidia-smi -q -x", "reason": "no answer within 30 s"}]},
     {None: "nvidia-smi -q -x failed: no answer within 30 s"}),
    ({"source": "nvml", "gpus": [gpu(0, [])], "errors": [{"gpu": None, "call": "nvml", "reason": "NVML did not answer"}]},
     {None: "nvml failed: NVML did not answer"}),
    ({"gpus": [gpu(0, [])], "errors": [], "collection": {"status": "partial"}}, {None: "the collection was partial"}),
    ({"gpus": [gpu(0, [])], "errors": [], "collection": "failed"}, {None: "the collection was failed"}),
])
def test_unknown_process_lists(facts, expected):
    assert unknown_processes(facts) == expected


def test_a_report_without_a_process_section_names_that_gpu():
    report = ("<?xml version=\"1.0\"?><nvidia_smi_log><gpu id=\"a\"><processes></processes></gpu>"
              "<gpu id=\"b\"></gpu><gpu id=\"c\"><processes/></gpu></nvidia_smi_log>")
    assert gpus_without_process_section(report) == [1]
    assert gpus_without_process_section("garbage") == []
    facts = mark_unknown({"gpus": [gpu(0, []), gpu(1, []), gpu(2, [])], "errors": []}, report)
    assert [g["processes"] for g in facts["gpus"]] == [[], None, []]
    assert "no process section" in facts["gpus"][1]["processes_unknown"]


# ---------------------------------------------------------------- gpu_mode

def test_gpu_mode_refuses_a_compute_mode_change_where_the_report_lists_no_processes(capsys, sim, monkeypatch):
    sim.write(SIM_STATE.state_for(A100, 2))
    monkeypatch.setenv("GPUFLEET_TEST_SMI", "drop:1")
    before = sim.raw_state()
    refused = run(gpu_mode, capsys, compute_mode="exclusive_process")
    assert refused["failed"] is True and refused["commands"] == []
    assert "GPU 1: the nvidia-smi -q -x report has no process section for it" in refused["msg"]
    assert "GPU 0" not in refused["msg"] and "nothing was changed" in refused["msg"]
    assert sim.raw_state() == before
    # persistence mode never needed idle GPUs; allow_busy is the operator's explicit acceptance
    assert run(gpu_mode, capsys, persistence_mode=True)["changed_gpus"] == [0, 1]
    assert run(gpu_mode, capsys, compute_mode="exclusive_process", allow_busy=True)["changed_gpus"] == [0, 1]


def test_gpu_mode_refuses_on_a_partial_report(capsys, sim, monkeypatch):
    sim.write(SIM_STATE.state_for(A100, 2))
    monkeypatch.setenv("GPUFLEET_TEST_SMI", "fail")
    refused = run(gpu_mode, capsys, compute_mode="prohibited")
    assert refused["failed"] is True and refused["commands"] == []
    for index in (0, 1):
        assert "GPU %d: nvidia-smi -q -x failed: exit status 1 with a partial report" % index in refused["msg"]


# ---------------------------------------------------------------- mig_layout

def test_mig_layout_refuses_a_gpu_with_unknown_processes_even_with_allow_drain(capsys, sim, monkeypatch):
    sim.write(SIM_STATE.state_for(A100, 2))
    monkeypatch.setenv("GPUFLEET_TEST_SMI", "drop:0")
    before = sim.raw_state()
    profiles = load_knowledge().mig_model(A100)
    for allow_drain in (False, True):
        refused = run(mig_layout, capsys, gpus=[{"index": 0, "devices": {"3g.40gb": 2}}], profiles=profiles,
                      allow_drain=allow_drain, reset=True)
        assert refused["failed"] is True and refused["commands"] == []
        assert "processes on GPUs whose MIG layout must change are unknown (GPU 0:" in refused["msg"]
    assert sim.raw_state() == before
    # GPU 1's processes were read: it changes
    changed = run(mig_layout, capsys, gpus=[{"index": 1, "devices": {"3g.40gb": 2}}], profiles=profiles, reset=True)
    assert changed["changed"] is True and sim.layout(1) != []
