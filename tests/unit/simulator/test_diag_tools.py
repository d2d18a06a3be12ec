"""The fleet's simulated active-diagnostic tools (tests/fleet/sim/diag_tools.py), run as programs, as the fleet runs
them, and read with the collection's own parsers: the simulated formats and the parsers agree."""

import os
import shutil
import subprocess
import sys

from ansible_collections.gpufleet.core.plugins.module_utils.dcgm_diag_output import gpu_verdicts, parse_dcgm_diag
from ansible_collections.gpufleet.core.plugins.module_utils.gpu_burn_output import parse_gpu_burn
from ansible_collections.gpufleet.core.plugins.module_utils.nccl_tests_output import parse_nccl_tests
from ansible_collections.gpufleet.core.plugins.module_utils.nvbandwidth_output import WAIVED, parse_nvbandwidth
from tests.support.mig_sim import SIM_DIR, SIM_STATE

DIAG_TOOLS = os.path.join(SIM_DIR, "diag_tools.py")
H100 = "NVIDIA H100 80GB HBM3"
A100 = "NVIDIA A100-SXM4-80GB"


def host(tmp_path, model=H100, count=2, **diagnostics):
    root = str(tmp_path / "root")
    state = SIM_STATE.state_for(model, count)
    if diagnostics:
        state["diagnostics"] = diagnostics
    SIM_STATE.write_state(state, root)
    return root


def tool(root, *argv, program=None):
    """(rc, stdout, stderr) of one simulated tool run as a program."""
    result = subprocess.run(program or [sys.executable, "-I", "-S", DIAG_TOOLS] + list(argv),
                            env=dict(os.environ, GPUFLEET_SIM_ROOT=root), capture_output=True, text=True,
                            timeout=30, check=False)
    return result.returncode, result.stdout, result.stderr


def statuses(parsed):
    return [(test["category"], test["name"], test["status"]) for test in parsed["tests"]]


def test_dcgmi_diag_json_and_text_table_say_the_same(tmp_path):
    root = host(tmp_path, memory_fail_gpus=[1], pcie_fail_gpus=[0])
    rc, out, _err = tool(root, "dcgmi", "diag", "-r", "2", "-j")
    as_json = parse_dcgm_diag(out)
    assert rc == 226 and as_json["format"] == "json" and as_json["tool_version"] == "3.3.8"
    rc_text, text, _err = tool(root, "dcgmi", "diag", "-r", "2")
    as_text = parse_dcgm_diag(text)
    assert rc_text == 226 and as_text["format"] == "text" and text.count("Fail - GPU: ") == 2
    assert statuses(as_json) == statuses(as_text)
    assert statuses(as_json)[-2:] == [("Integration", "PCIe", "fail"), ("Hardware", "GPU Memory", "fail")]
    assert gpu_verdicts(as_json["tests"]) == gpu_verdicts(as_text["tests"]) == {"0": "fail", "1": "fail"}
    for parsed in (as_json, as_text):
        memory = parsed["tests"][-1]
        assert memory["gpus"]["0"]["status"] == "pass" and memory["gpus"]["1"]["status"] == "fail"
        assert memory["gpus"]["1"]["messages"] == [
            "GPU 1 Memory test failed: 12 memory mismatches found (DCGM_FR_MEMORY_MISMATCH). Drain the GPU and reset "
            "it or reboot the node."]


def test_dcgmi_levels_run_more_tests_and_targeted_stress_alone(tmp_path):
    root = host(tmp_path, count=1)
    names = {}
    for level in ("1", "2", "3", "4"):
        rc, out, _err = tool(root, "dcgmi", "diag", "-r", level, "-j")
        names[level] = [test["name"] for test in parse_dcgm_diag(out)["tests"]]
        assert rc == 0
    assert len(names["1"]) == 9 and names["2"][9:] == ["PCIe", "GPU Memory"]
    assert "Targeted Stress" in names["3"] and set(names["4"]) - set(names["3"]) == {"Memtest", "Pulse Test", "EUD Test"}
    rc, out, _err = tool(root, "dcgmi", "diag", "-r", "targeted_stress", "-p", "targeted_stress.test_duration=5", "-j")
    assert rc == 0 and statuses(parse_dcgm_diag(out)) == [("Stress", "Targeted Stress", "pass")]
    rc, _out, err = tool(root, "dcgmi", "diag", "-r", "9")
    assert rc == 2 and "Invalid value for --run: '9'" in err


def test_nvbandwidth_matrices_follow_the_model_and_the_injected_factor(tmp_path):
    root = host(tmp_path, count=3, bandwidth_factor={"2": 0.5})
    rc, out, _err = tool(root, "nvbandwidth", "-t", "host_to_device_memcpy_ce", "device_to_host_memcpy_ce",
                         "device_to_device_memcpy_read_ce")
    parsed = parse_nvbandwidth(out)
    assert rc == 0 and parsed["tool_version"] == "v0.7"
    h2d, d2h, d2d = parsed["testcases"]
    assert (h2d["name"], h2d["per_gpu"], h2d["sum"], h2d["error"]) == (
        "host_to_device_memcpy_ce", {"0": 56.3, "1": 56.3, "2": 28.15}, 140.75, None)
    assert d2h["per_gpu"] == {"0": 57.3, "1": 57.3, "2": 28.65}
    assert d2d["matrix"] == [[None, 390.0, 195.0], [390.0, None, 195.0], [195.0, 195.0, None]]
    assert d2d["per_gpu"] == {"0": 292.5, "1": 292.5, "2": 195.0} and d2d["sum"] == 1560.0


def test_nvbandwidth_pcie_generation_waiver_and_pattern_failure(tmp_path):
    root = host(tmp_path, model=A100, count=1, nvbandwidth_pattern_error="device_to_host_memcpy_ce")
    rc, out, _err = tool(root, "nvbandwidth", "-t", "host_to_device_memcpy_ce", "device_to_device_memcpy_read_ce")
    h2d, d2d = parse_nvbandwidth(out)["testcases"]
    assert rc == 0 and h2d["per_gpu"] == {"0": 26.0} and d2d["error"] == WAIVED
    rc, out, _err = tool(root, "nvbandwidth", "-t", "device_to_host_memcpy_ce")
    case = parse_nvbandwidth(out)["testcases"][0]
    assert rc == 134 and case["error"] == "Invalid value when checking the pattern at 0x7f3a40000000"
    assert case["matrix"] == [] and "Aborted (core dumped)" in out
    rc, _out, err = tool(root, "nvbandwidth", "-t", "no_such_case")
    assert rc == 1 and "ERROR: Testcase no_such_case not found!" in err


def test_all_reduce_perf_rows_average_and_injected_failures(tmp_path):
    root = host(tmp_path, count=4)
    rc, out, _err = tool(root, "all_reduce_perf", "-b", "8", "-e", "128M", "-f", "2", "-g", "4")
    parsed = parse_nccl_tests(out)
    assert rc == 0 and parsed["gpus"] == 4 and parsed["tool_version"] == "2.13.10" and parsed["error_text"] is None
    assert len(parsed["rows"]) == 25 and parsed["rows"][0]["size_bytes"] == 8
    assert parsed["rows"][-1]["size_bytes"] == 134217728 and parsed["rows"][-1]["redop"] == "sum"
    assert all(row["wrong"] == 0 for row in parsed["rows"])
    assert 345 < parsed["peak_busbw_gbs"] < 360 and 0 < parsed["avg_busbw_gbs"] < parsed["peak_busbw_gbs"]
    degraded = parse_nccl_tests(tool(host(tmp_path / "slow", nccl_busbw_factor=0.25), "all_reduce_perf", "-b", "1G",
                                     "-e", "1G", "-g", "2")[1])
    assert 85 < degraded["peak_busbw_gbs"] < 90
    rc, out, _err = tool(host(tmp_path / "broken", nccl_error="NCCL failure common.cu:1005 'unhandled system error'"),
                         "all_reduce_perf", "-g", "2")
    parsed = parse_nccl_tests(out)
    assert rc == 2 and parsed["rows"] == []
    assert parsed["error_text"] == "Test NCCL failure common.cu:1005 'unhandled system error'"


def test_gpu_burn_reports_faulty_gpus_and_exits_0_as_the_real_one(tmp_path):
    root = host(tmp_path, count=3, burn_faulty_gpus=[2])
    rc, out, _err = tool(root, "gpu_burn", "30")
    parsed = parse_gpu_burn(out)
    assert rc == 0 and parsed["tested"] == 3 and parsed["progress_lines"] == 3
    assert parsed["per_gpu"] == {"0": {"result": "ok", "errors": 0}, "1": {"result": "ok", "errors": 0},
                                 "2": {"result": "faulty", "errors": 12288}}


def test_a_driver_mismatch_stops_every_tool(tmp_path):
    root = str(tmp_path / "root")
    SIM_STATE.write_state(SIM_STATE.state_for(H100, 1, kernel_module="550.54.15"), root)
    for argv in (["dcgmi", "diag", "-r", "1"], ["nvbandwidth"], ["all_reduce_perf"], ["gpu_burn", "10"]):
        rc, out, err = tool(root, *argv)
        assert rc == 1 and out == "" and "Driver/library version mismatch" in err, argv


def test_install_places_the_tools_as_programs_on_the_path(tmp_path):
    root = str(tmp_path / "upper")
    written = SIM_STATE.install(root, SIM_STATE.state_for(H100, 2))
    for path in ("usr/bin/dcgmi", "usr/local/bin/nvbandwidth", "usr/local/bin/all_reduce_perf",
                 "usr/local/bin/gpu_burn"):
        assert path in written and os.access(os.path.join(root, path), os.X_OK), path
    assert os.path.exists(os.path.join(root, "usr/lib/gpufleet-sim/diag_tools.py"))
    assert os.path.exists(os.path.join(root, "usr/lib/gpufleet-sim/gpu_models.json"))
    # the installed copy runs alone, with the catalog installed beside it (the container has no project)
    installed = str(tmp_path / "alone")
    shutil.copytree(os.path.join(root, "usr/lib/gpufleet-sim"), installed)
    rc, out, _err = tool(root, program=[sys.executable, "-I", "-S", os.path.join(installed, "diag_tools.py"),
                                        "nvbandwidth", "-t", "host_to_device_memcpy_ce"])
    assert rc == 0 and parse_nvbandwidth(out)["testcases"][0]["per_gpu"] == {"0": 56.3, "1": 56.3}
