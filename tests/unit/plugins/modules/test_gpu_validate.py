"""Drives the gpu_validate module's main() against the simulated nvidia-smi and diagnostic tools of the test fleet."""

import json
import os
import time

import jsonschema
import pytest
from ansible.module_utils.testing import patch_module_args

from ansible_collections.gpufleet.core.plugins.modules import gpu_validate
from ansible_collections.gpufleet.core.plugins.plugin_utils.audit.facts_validation import facts_problems
from tests.support.demo_fleet import demo_audit
from tests.support.diag_sim import diag_sim_on_path
from tests.support.mig_sim import SIM_STATE
from tests.support.schema_check import FACTS_SCHEMA

H100 = "NVIDIA H100 80GB HBM3"
A100 = "NVIDIA A100-SXM4-80GB"
RESULT_KEYS = {"status", "reason", "command", "duration_s", "tool_version", "output_tail"}
DETAIL_KEYS = {"dcgm_diag": {"level", "tests"}, "nvbandwidth": {"testcases"},
               "nccl_all_reduce": {"gpus", "rows", "peak_busbw_gbs", "avg_busbw_gbs", "error_text"},
               "stress": {"tool", "seconds", "per_gpu"}}
ALL_CHECKS = ["dcgm_diag", "nvbandwidth", "nccl_all_reduce", "stress"]
# flags that change clocks, power, persistence, compute mode or MIG (nvidia-smi and dcgmi spellings)
SETTING_FLAGS = {"-pm", "-pl", "-lgc", "-lmc", "-ac", "-rac", "-mig", "-c", "--power-limit", "--lock-gpu-clocks",
                 "config", "--set"}


@pytest.fixture
def sim(tmp_path, monkeypatch):
    return diag_sim_on_path(tmp_path, monkeypatch)


def run_module(capsys, **args):
    with patch_module_args(args):
        with pytest.raises(SystemExit):
            gpu_validate.main()
    return json.loads(capsys.readouterr().out)


def assert_valid_validation(validation):
    """The module's result against the facts family validation of docs/schema/gpu_facts.schema.json."""
    schema = {"$defs": FACTS_SCHEMA["$defs"], "$ref": "#/$defs/validation"}
    errors = list(jsonschema.Draft202012Validator(schema).iter_errors(validation))
    assert not errors, "\n".join("%s: %s" % ("/".join(map(str, e.absolute_path)), e.message) for e in errors[:10])


def with_diagnostics(state, **injected):
    state["diagnostics"] = injected
    return state


def test_a_healthy_node_passes_every_check_in_the_agreed_shape(capsys, sim):
    sim.write(SIM_STATE.state_for(H100, 2))
    result = run_module(capsys, checks=ALL_CHECKS, stress_tool="gpu_burn", stress_seconds=10)
    assert result["changed"] is False and "failed" not in result
    validation = result["validation"]
    assert set(validation) == {"format", "started_at", "finished_at", "refused", "mig_enabled", "gpus", "checks"}
    assert (validation["format"], validation["refused"], validation["mig_enabled"]) == (1, None, False)
    assert validation["started_at"].endswith("Z") and validation["finished_at"] >= validation["started_at"]
    assert [gpu["index"] for gpu in validation["gpus"]] == [0, 1]
    assert validation["gpus"][1]["pci_bus_id"] == "0000:0f:00.0"
    assert validation["gpus"][0]["uuid"] == sim.gpu(0)["uuid"] and validation["gpus"][0]["name"] == H100
    assert list(validation["checks"]) == ALL_CHECKS
    for name, check in validation["checks"].items():
        assert set(check) == RESULT_KEYS | DETAIL_KEYS[name], name
        assert (check["status"], check["reason"]) == ("passed", ""), (name, check["reason"])
        assert check["duration_s"] >= 0 and check["output_tail"]
    dcgm = validation["checks"]["dcgm_diag"]
    assert dcgm["command"][1:] == ["diag", "-r", "1", "-j"] and dcgm["tool_version"] == "3.3.8"
    assert dcgm["level"] == 1 and [t["name"] for t in dcgm["tests"]][:2] == ["Denylist", "NVML Library"]
    assert dcgm["tests"][0]["gpus"] == {"0": {"status": "pass", "messages": []}, "1": {"status": "pass", "messages": []}}
    bandwidth = validation["checks"]["nvbandwidth"]
    assert [case["name"] for case in bandwidth["testcases"]] == [
        "host_to_device_memcpy_ce", "device_to_host_memcpy_ce", "device_to_device_memcpy_read_ce"]
    assert bandwidth["testcases"][0]["per_gpu"] == {"0": 56.3, "1": 56.3} and bandwidth["testcases"][0]["sum"] == 112.6
    assert bandwidth["testcases"][2]["matrix"] == [[None, 390.0], [390.0, None]]
    nccl = validation["checks"]["nccl_all_reduce"]
    assert nccl["command"][1:] == ["-b", "8", "-e", "128M", "-f", "2", "-g", "2"] and nccl["gpus"] == 2
    assert nccl["rows"][-1]["size_bytes"] == 128 * 1024 * 1024 and 300 < nccl["peak_busbw_gbs"] <= 360
    stress = validation["checks"]["stress"]
    assert (stress["tool"], stress["seconds"]) == ("gpu_burn", 10)
    assert stress["per_gpu"] == {"0": {"result": "ok", "errors": 0}, "1": {"result": "ok", "errors": 0}}
    for command in result["commands"]:
        assert not SETTING_FLAGS & set(command), command
    assert_valid_validation(validation)


def test_gpu_processes_refuse_every_check_before_anything_runs(capsys, sim, tmp_path):
    sim.write(SIM_STATE.state_for(H100, 2))
    pid = sim.use_gpu(1)
    marker = tmp_path / "ran"
    (tmp_path / "bin" / "nvbandwidth").write_text("#!/bin/sh\ntouch '%s'\n" % marker)
    refused = run_module(capsys, checks=["dcgm_diag", "nvbandwidth"])
    validation = refused["validation"]
    assert refused["changed"] is False and "failed" not in refused
    assert validation["refused"]["gpu_processes"] == [{"pid": pid, "name": "python3", "gpu": 1}]
    assert "pid %d (python3) on GPU 1" % pid in validation["refused"]["reason"]
    assert "Drain the node first" in validation["refused"]["how_to_proceed"]
    assert "quarantine" in validation["refused"]["how_to_proceed"]
    assert {name: check["status"] for name, check in validation["checks"].items()} == {
        "dcgm_diag": "refused", "nvbandwidth": "refused"}
    assert refused["commands"] == [] and not marker.exists()
    assert_valid_validation(validation)
    allowed = run_module(capsys, checks=["dcgm_diag", "nvbandwidth"], allow_busy=True)
    assert allowed["validation"]["refused"] is None and marker.exists()
    assert allowed["validation"]["checks"]["dcgm_diag"]["status"] == "passed"


def test_a_node_whose_gpus_cannot_be_read_is_refused(capsys, sim):
    state = SIM_STATE.state_for(H100, 1, driver="550.90.07", kernel_module="550.54.15")
    sim.write(state)
    result = run_module(capsys, allow_busy=True)
    refused = result["validation"]["refused"]
    assert "could not be read" in refused["reason"] and "Driver/library version mismatch" in refused["reason"]
    assert result["validation"]["gpus"] == [] and result["validation"]["checks"]["dcgm_diag"]["status"] == "refused"
    assert_valid_validation(result["validation"])


def test_under_mig_only_dcgm_diag_runs(capsys, sim):
    sim.write(SIM_STATE.state_for(A100, 2, mig=True, mig_layouts={0: ["3g.40gb"]}))
    result = run_module(capsys, checks=ALL_CHECKS)
    validation = result["validation"]
    assert validation["mig_enabled"] is True
    assert validation["checks"]["dcgm_diag"]["status"] == "passed"
    for name in ("nvbandwidth", "nccl_all_reduce", "stress"):
        check = validation["checks"][name]
        assert check["status"] == "skipped" and "GPU 0, 1 in MIG mode" in check["reason"], name
        assert check["command"] == []
    assert [command[1] for command in result["commands"]] == ["diag"]
    assert_valid_validation(validation)


def test_check_mode_runs_nothing_and_says_what_would_run(capsys, sim, tmp_path):
    sim.write(SIM_STATE.state_for(H100, 2))
    marker = tmp_path / "ran"
    (tmp_path / "bin" / "dcgmi").write_text("#!/bin/sh\ntouch '%s'\n" % marker)
    result = run_module(capsys, checks=["dcgm_diag", "nccl_all_reduce"], dcgm_level=3, _ansible_check_mode=True)
    assert result["changed"] is False and not marker.exists()
    checks = result["validation"]["checks"]
    assert checks["dcgm_diag"]["status"] == "skipped" and checks["dcgm_diag"]["reason"] == "check mode: not run"
    assert [command[1:] for command in result["commands"]] == [
        ["diag", "-r", "3", "-j"], ["-b", "8", "-e", "128M", "-f", "2", "-g", "2"]]


def test_a_hanging_tool_is_killed_at_its_bound(capsys, sim):
    sim.write(with_diagnostics(SIM_STATE.state_for(H100, 1), hang=["nvbandwidth"]))
    started = time.monotonic()
    result = run_module(capsys, checks=["nvbandwidth", "nccl_all_reduce"], timeouts={"nvbandwidth": 1})
    assert time.monotonic() - started < 20
    check = result["validation"]["checks"]["nvbandwidth"]
    assert check["status"] == "timeout" and "killed after 1 s" in check["reason"] and "timeouts.nvbandwidth" in check["reason"]
    assert 0.9 <= check["duration_s"] < 10 and "nvbandwidth Version: v0.7" in check["output_tail"]
    assert result["validation"]["checks"]["nccl_all_reduce"]["status"] == "passed"
    assert_valid_validation(result["validation"])


def test_tools_not_found_are_skipped_with_the_reason(capsys, tmp_path, monkeypatch):
    sim = diag_sim_on_path(tmp_path, monkeypatch, tools=())
    sim.write(SIM_STATE.state_for(H100, 1))
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    result = run_module(capsys, checks=ALL_CHECKS, stress_tool="gpu_burn",
                        tool_paths={"nvbandwidth": str(tmp_path / "no" / "nvbandwidth")})
    checks = result["validation"]["checks"]
    assert {name: check["status"] for name, check in checks.items()} == dict.fromkeys(ALL_CHECKS, "skipped")
    assert checks["dcgm_diag"]["reason"].startswith("dcgmi was not found on PATH")
    assert "nvbandwidth was given at %s" % (tmp_path / "no" / "nvbandwidth") in checks["nvbandwidth"]["reason"]
    assert "all_reduce_perf was not found" in checks["nccl_all_reduce"]["reason"]
    assert "gpu_burn or gpu-burn was not found" in checks["stress"]["reason"]
    assert_valid_validation(result["validation"])


def test_injected_faults_fail_their_checks_and_name_the_gpu(capsys, sim):
    sim.write(with_diagnostics(SIM_STATE.state_for(H100, 2), memory_fail_gpus=[1], bandwidth_factor={"1": 0.4},
                               nccl_error="NCCL failure common.cu:1005 'unhandled system error'", burn_faulty_gpus=[0]))
    result = run_module(capsys, checks=ALL_CHECKS, dcgm_level=2, stress_tool="gpu_burn", stress_seconds=10)
    checks = result["validation"]["checks"]
    dcgm = checks["dcgm_diag"]
    assert dcgm["status"] == "failed" and dcgm["reason"] == "DCGM reported failures: GPU Memory (GPU 1)"
    memory = [test for test in dcgm["tests"] if test["name"] == "GPU Memory"][0]
    assert memory["category"] == "Hardware" and memory["gpus"]["0"]["status"] == "pass"
    assert memory["gpus"]["1"]["status"] == "fail" and "12 memory mismatches" in memory["gpus"]["1"]["messages"][0]
    bandwidth = checks["nvbandwidth"]
    assert bandwidth["status"] == "passed"
    assert bandwidth["testcases"][0]["per_gpu"] == {"0": 56.3, "1": 22.52}
    assert bandwidth["testcases"][2]["per_gpu"] == {"0": 156.0, "1": 156.0}
    nccl = checks["nccl_all_reduce"]
    assert nccl["status"] == "failed" and nccl["rows"] == []
    assert nccl["error_text"] == "Test NCCL failure common.cu:1005 'unhandled system error'" == nccl["reason"]
    stress = checks["stress"]
    assert stress["status"] == "failed" and stress["reason"] == "stress test: GPU 0 faulty"
    assert stress["per_gpu"]["0"] == {"result": "faulty", "errors": 12288}
    assert_valid_validation(result["validation"])


def test_dcgm_targeted_stress_reads_per_gpu_results(capsys, sim):
    sim.write(with_diagnostics(SIM_STATE.state_for(H100, 2), burn_faulty_gpus=[1]))
    stress = run_module(capsys, checks=["stress"], stress_seconds=30)["validation"]["checks"]["stress"]
    assert stress["command"][1:] == ["diag", "-r", "targeted_stress", "-p", "targeted_stress.test_duration=30", "-j"]
    assert stress["per_gpu"] == {"0": {"result": "ok", "errors": None}, "1": {"result": "faulty", "errors": None}}
    assert (stress["status"], stress["tool"], stress["tool_version"]) == ("failed", "dcgm_targeted_stress", "3.3.8")


@pytest.mark.parametrize("args, message", [
    ({"stress_seconds": 5}, "stress_seconds must be 10 to 7200, not 5"),
    ({"timeouts": {"dcgm_diag": 99999}}, "timeouts.dcgm_diag must be 1 to 14400 seconds, not 99999"),
    ({"timeouts": {"nvbandwidth": 0}}, "timeouts.nvbandwidth must be 1 to 14400 seconds, not 0"),
    ({"nccl": {"max_bytes": "lots"}}, "nccl.max_bytes must be a positive size such as 8, 64K, 128M or 1G, not 'lots'"),
    ({"nvbandwidth_testcases": ["host; rm -rf /"]}, "nvbandwidth_testcases has names that are not test cases"),
    ({"dcgm_level": 5}, "value of dcgm_level must be one of: 1, 2, 3, 4, got: 5"),
])
def test_bad_options_fail_the_module_and_name_the_option(capsys, sim, args, message):
    sim.write(SIM_STATE.state_for(H100, 1))
    result = run_module(capsys, **args)
    assert result["failed"] is True and message in result["msg"]


def test_output_tail_keeps_the_last_4_kib(capsys, sim, tmp_path):
    sim.write(SIM_STATE.state_for(H100, 1))
    noisy = tmp_path / "bin" / "nvbandwidth"
    noisy.write_text("#!/bin/sh\ni=0\nwhile [ $i -lt 2000 ]; do echo \"line $i of noise\"; i=$((i+1)); done\n"
                     "echo 'CUDA_ERROR_NO_DEVICE: no CUDA-capable device is detected'\nexit 1\n")
    check = run_module(capsys, checks=["nvbandwidth"])["validation"]["checks"]["nvbandwidth"]
    assert check["status"] == "error" and "no test case" in check["reason"] and "exit status 1" in check["reason"]
    assert len(check["output_tail"].encode("utf-8")) == 4096
    assert check["output_tail"].rstrip().endswith("CUDA_ERROR_NO_DEVICE: no CUDA-capable device is detected")
    assert os.path.basename(check["command"][0]) == "nvbandwidth"


def test_facts_carrying_the_validation_family_pass_the_controllers_facts_check(capsys, sim):
    sim.write(with_diagnostics(SIM_STATE.state_for(H100, 2), memory_fail_gpus=[0], nccl_error="NCCL failure x"))
    validation = run_module(capsys, checks=ALL_CHECKS, dcgm_level=2, stress_tool="gpu_burn")["validation"]
    facts = dict(demo_audit()[0]["gpu-h100-nvlink-12"], validation=validation)
    assert facts_problems(facts) == []
    wrong_status = dict(validation["checks"]["dcgm_diag"], status="fine")
    broken = dict(facts, validation=dict(validation, checks={"dcgm_diag": wrong_status}))
    assert any("status" in problem for problem in facts_problems(broken))


def test_the_whole_process_group_is_killed_at_the_bound(capsys, sim, tmp_path):
    sim.write(SIM_STATE.state_for(H100, 1))
    child_pid = tmp_path / "child.pid"
    (tmp_path / "bin" / "all_reduce_perf").write_text(
        "#!/bin/sh\necho '# nThread 1 nGpus 1'\nsleep 300 &\necho $! > '%s'\nwait\n" % child_pid)
    check = run_module(capsys, checks=["nccl_all_reduce"], timeouts={"nccl_all_reduce": 1})["validation"]["checks"][
        "nccl_all_reduce"]
    assert check["status"] == "timeout" and check["output_tail"].startswith("# nThread 1 nGpus 1")
    pid = int(child_pid.read_text())
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and os.path.exists("/proc/%d" % pid) and "Z" not in _proc_state(pid):
        time.sleep(0.05)
    assert not os.path.exists("/proc/%d" % pid) or "Z" in _proc_state(pid), "the tool's child outlived the bound"


def _proc_state(pid):
    try:
        with open("/proc/%d/stat" % pid) as handle:
            return handle.read().rsplit(")", 1)[1].split()[0]
    except (IOError, OSError):
        return "gone"
