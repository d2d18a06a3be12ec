"""The host side of loadstep.yml (module_utils/load_sampler.py): the load's command line, the contract's
records, and whole steps run for real against the simulated NVIDIA stack (GPUFLEET_SIM_ROOT), with the load
stopped at the end whatever it does."""

import importlib.util
import json
import os
import subprocess
import sys

from ansible_collections.gpufleet.core.plugins.module_utils import load_sampler
from ansible_collections.gpufleet.core.plugins.module_utils.host_io import LiveHost
from tests.support.schema_check import ROOT

SIM_DIR = os.path.join(ROOT, "tests", "fleet", "sim")


def _state_module():
    spec = importlib.util.spec_from_file_location("gpufleet_sim_state_sampler", os.path.join(SIM_DIR, "state.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


sim_state = _state_module()


# --- the load's command line ---------------------------------------------------------------------------------

SHOWN_EXEC = ("{ path=/usr/local/bin/server ; argv[]=/usr/local/bin/server --port 8000 --workers ${GPUFLEET_WORKERS} ; "
              "ignore_errors=no ; start_time=[n/a] ; stop_time=[n/a] ; pid=0 ; code=(null) ; status=0/0 }")


def test_the_units_own_command_and_environment():
    assert load_sampler.unit_exec_start(SHOWN_EXEC) == ["/usr/local/bin/server", "--port", "8000", "--workers",
                                                        "${GPUFLEET_WORKERS}"]
    assert load_sampler.unit_environment('WORKERS=12 "NAME=my worker" CUDA_VISIBLE_DEVICES=0') == {
        "WORKERS": "12", "NAME": "my worker", "CUDA_VISIBLE_DEVICES": "0"}
    try:
        load_sampler.unit_exec_start("")
    except load_sampler.LoadError as error:
        assert "load.command" in str(error)
    else:
        raise AssertionError("a unit without ExecStart= must be refused")


def test_the_service_is_started_with_n_workers():
    argv, env = load_sampler.service_load(["/bin/server", "--workers", "${GPUFLEET_WORKERS}"], {"WORKERS": "12"}, 4,
                                          workers_env="WORKERS")
    assert argv == ["/bin/server", "--workers", "4"] and env["WORKERS"] == "4"
    argv, _env = load_sampler.service_load(["/bin/server", "--workers", "12"], {}, 3, workers_arg="--workers")
    assert argv == ["/bin/server", "--workers", "3"]
    argv, _env = load_sampler.service_load(["/bin/server"], {}, 2, workers_arg="--workers")
    assert argv == ["/bin/server", "--workers", "2"]


def test_a_load_command_gets_its_concurrency_and_seconds():
    argv, _added = load_sampler.command_load("loadgen --c {concurrency} --t {duration}", 8, 35)
    assert argv == ["/bin/sh", "-c", "loadgen --c 8 --t 35"]
    env = load_sampler.load_environment({"PATH": "/bin"}, {}, 8, 35, 4)
    assert (env["GPUFLEET_LOAD_CONCURRENCY"], env["GPUFLEET_LOAD_DURATION_SEC"], env["GPUFLEET_LOAD_STEP"]) == (
        "8", "35", "4")


def test_records_of_the_contract():
    assert load_sampler.parse_record('{"ok": true, "latency_ms": 12.5}', 3.21) == [3.21, True, 12.5, None, 1]
    failed = load_sampler.parse_record('{"ok": false, "error": "HTTP 503", "count": 7}', 1)
    assert failed == [1, False, None, "HTTP 503", 7]
    assert load_sampler.parse_record('{"ok": true, "latency_ms": -1, "count": true}', 0)[2:] == [None, None, 1]
    for line in ("not json", '{"latency_ms": 3}', '{"ok": "yes"}', "[1, 2]"):
        assert load_sampler.parse_record(line, 0) is None


def test_pressure_from_proc():
    texts = {"/proc/pressure/cpu": "some avg10=12.50 avg60=3.00 avg300=1.00 total=1\nfull avg10=0.00 avg60=0 total=0\n",
             "/proc/pressure/io": "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"}
    expected = {"cpu_some_avg10": 12.5, "io_some_avg10": 0.0, "memory_some_avg10": None}
    assert load_sampler.read_pressure(texts.get) == expected


# --- whole steps on the simulated stack ----------------------------------------------------------------------

def sim_root(tmp_path, load_model):
    root = str(tmp_path / "root")
    state = sim_state.state_for("NVIDIA A100-SXM4-80GB", 1, host="sampler-test")
    state["gpus"][0]["load"] = load_model
    sim_state.write_state(state, root)
    os.makedirs(os.path.join(root, "var/log/gpufleet-sim"))
    open(os.path.join(root, "var/log/gpufleet-sim/kern.log"), "w").close()
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, source in (("nvidia-smi", "nvidia_smi.py"), ("gpu-worker", "gpu_worker.py")):
        script = bin_dir / name
        script.write_text("#!/bin/sh\nexec %s %s \"$@\"\n" % (sys.executable, os.path.join(SIM_DIR, source)))
        script.chmod(0o755)
    return root, str(bin_dir)


def plan(tmp_path, root, bin_dir, argv, seconds=2, env=None):
    environment = dict(os.environ, GPUFLEET_SIM_ROOT=root, GPU_WORKER=os.path.join(bin_dir, "gpu-worker"),
                       MEM_PER_WORKER_MIB="10000", GPUFLEET_LOAD_CONCURRENCY="3", GPUFLEET_LOAD_DURATION_SEC=str(seconds))
    environment.update(env or {})
    return {"argv": argv, "environment": environment, "seconds": seconds, "interval": 0.5, "end_grace": 3,
            "hard_limit": seconds + 8, "nvidia_smi": os.path.join(bin_dir, "nvidia-smi"), "sample_timeout": 10,
            "kernel_log_files": [os.path.join(root, "var/log/gpufleet-sim/kern.log")],
            "pid_file": str(tmp_path / "state" / "test.json")}


def live_sim_processes(root):
    procs = os.path.join(root, "run/gpufleet-sim/procs")
    alive = []
    for name in os.listdir(procs) if os.path.isdir(procs) else []:
        pid = int(name.split(".")[0])
        if os.path.exists("/proc/%d" % pid):
            alive.append(pid)
    return alive


def run_step(step_plan, root):
    previous = os.environ.get("GPUFLEET_SIM_ROOT")
    os.environ["GPUFLEET_SIM_ROOT"] = root  # the sampler's nvidia-smi runs with the module's environment
    try:
        return load_sampler.Step(LiveHost(find_bin=lambda name: None), step_plan).run()
    finally:
        if previous is None:
            del os.environ["GPUFLEET_SIM_ROOT"]
        else:
            os.environ["GPUFLEET_SIM_ROOT"] = previous


def test_a_step_samples_the_load_and_leaves_nothing_running(tmp_path):
    root, bin_dir = sim_root(tmp_path, {"power_per_worker_w": 60, "power_cap_w": 200, "xid_at_workers": 3, "xid": 119})
    step = plan(tmp_path, root, bin_dir, [sys.executable, os.path.join(SIM_DIR, "gpu_load.py")])
    result = run_step(step, root)
    load = result["load"]
    assert load["ended"] == "exited" and load["rc"] == 0, load
    assert load["left_running"] == [] and live_sim_processes(root) == []
    assert not os.path.exists(step["pid_file"])
    assert load["records"] and all(record[1] and record[4] == 3 for record in load["records"])
    busy = [sample["gpus"][0] for sample in result["samples"] if sample["gpus"][0]["processes"]]
    assert busy, result["samples"]
    assert max(len(gpu["processes"]) for gpu in busy) == 3
    assert {process["used_mib"] for gpu in busy for process in gpu["processes"]} == {10000}
    # the cap is reached with all three workers on the GPU (the last busy sample may see one already gone)
    full = [gpu for gpu in busy if len(gpu["processes"]) == 3][-1]
    assert "sw_power_cap" in full["throttle_reasons"] and full["power_w"] >= 200
    assert full["sm_clock_mhz"] < full["max_sm_clock_mhz"]
    assert [event["xid"] for event in result["kernel"]["xid"]] == [119]
    assert set(result["samples"][0]["pressure"]) == {"cpu_some_avg10", "io_some_avg10", "memory_some_avg10"}


def test_a_load_that_ignores_sigterm_is_killed_at_the_end_of_its_step(tmp_path):
    root, bin_dir = sim_root(tmp_path, {})
    step = plan(tmp_path, root, bin_dir, ["/bin/sh", "-c", "trap '' TERM; sleep 300 & sleep 300"], seconds=1)
    result = run_step(step, root)
    assert result["load"]["ended"] in ("stopped", "timeout")
    assert result["load"]["left_running"] == []
    assert result["seconds"] < step["hard_limit"] + 5


def test_an_out_of_memory_ends_the_load_early_with_the_cuda_error(tmp_path):
    root, bin_dir = sim_root(tmp_path, {})
    step = plan(tmp_path, root, bin_dir, [os.path.join(bin_dir, "gpu-worker")],
                env={"WORKERS": "9", "MEM_PER_WORKER_MIB": "10000"})
    result = run_step(step, root)
    load = result["load"]
    assert load["ended"] == "exited" and load["rc"] == 1 and load["early_exit_s"] is not None
    assert "torch.OutOfMemoryError: CUDA out of memory" in load["stderr_tail"]
    assert live_sim_processes(root) == []


def test_stop_recorded_stops_a_load_an_interrupted_run_left(tmp_path):
    process = subprocess.Popen(["sleep", "300"], start_new_session=True)
    state_dir = str(tmp_path / "state")
    load_sampler.record_group(load_sampler.pid_file("host-loadstep", state_dir), process.pid)
    stopped = load_sampler.stop_recorded(state_dir)
    process.wait(timeout=10)
    assert stopped == [{"pgid": process.pid, "left": []}]
    assert os.listdir(state_dir) == []
    assert load_sampler.stop_recorded(state_dir) == []


def test_step_zero_starts_nothing(tmp_path):
    root, bin_dir = sim_root(tmp_path, {})
    result = run_step(plan(tmp_path, root, bin_dir, [], seconds=1), root)
    assert result["load"]["ended"] == "not_started"
    assert result["samples"] and result["samples"][0]["gpus"][0]["throttle_reasons"] == ["gpu_idle"]
    assert json.dumps(result)  # what the module returns is plain JSON
