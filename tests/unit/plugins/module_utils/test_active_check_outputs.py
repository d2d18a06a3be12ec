"""The parsers of the active-diagnostic tools' output: the project's own samples (samples/active/, values of our own
in the documented layouts, failing runs included) and every file of the public corpus's "Active diagnostics" section
(tests marked corpus, with the ground truth of realdata/INDEX.md)."""

import os
import re

import pytest

from ansible_collections.gpufleet.core.plugins.module_utils.active_checks import (
    judge_dcgm, judge_nccl, judge_nvbandwidth, judge_stress)
from ansible_collections.gpufleet.core.plugins.module_utils.dcgm_diag_output import gpu_verdicts, parse_dcgm_diag
from ansible_collections.gpufleet.core.plugins.module_utils.dcgm_health_output import (
    blank_meaning, parse_dcgm_health, parse_nvlink_link_status, parse_nvvs_log)
from ansible_collections.gpufleet.core.plugins.module_utils.gpu_burn_output import parse_gpu_burn
from ansible_collections.gpufleet.core.plugins.module_utils.host_io import CommandResult
from ansible_collections.gpufleet.core.plugins.module_utils.nccl_tests_output import parse_nccl_tests
from ansible_collections.gpufleet.core.plugins.module_utils.nvbandwidth_output import NO_MATRIX, WAIVED, parse_nvbandwidth

SAMPLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "samples", "active")
EXITED_0 = CommandResult(0, "", "")


def sample(name):
    with open(os.path.join(SAMPLES, name)) as handle:
        return handle.read()


def blocks(text):
    """The quoted blocks of a corpus file ("## <source> -- note" then the lines), without the file's header."""
    parts = re.split(r"^## .*$", text, flags=re.M)
    return [part.strip("\n") for part in parts[1:]] if len(parts) > 1 else [text]


def by_name(tests, name):
    return [test for test in tests if test["name"] == name]


def statuses(tests):
    return dict((test["name"], test["status"]) for test in tests)


# ---------------------------------------------------------------- the project's samples: dcgmi diag


def test_dcgm_3x_json_per_gpu_results_warnings_and_info():
    parsed = parse_dcgm_diag(sample("dcgmi-diag-r2-j_dcgm-3.x_2gpu_memory-fail-gpu1.json"))
    assert (parsed["format"], parsed["tool_version"], parsed["error"]) == ("json", "3.3.9", None)
    assert statuses(parsed["tests"]) == {"Denylist": "pass", "Persistence Mode": "warn", "PCIe": "pass",
                                         "GPU Memory": "fail"}
    memory = by_name(parsed["tests"], "GPU Memory")[0]
    assert memory["category"] == "Hardware" and memory["gpus"]["0"] == {"status": "pass", "messages": []}
    assert memory["gpus"]["1"]["messages"] == [
        "GPU 1 had 3 memory mismatches (DCGM_FR_MEMORY_MISMATCH). Drain the GPU and reset it or reboot the node."]
    assert by_name(parsed["tests"], "PCIe")[0]["gpus"]["0"]["messages"][0].endswith("Host to GPU bandwidth:  25.02 GB/s")
    assert gpu_verdicts(parsed["tests"]) == {"0": "warn", "1": "fail"}
    assert judge_dcgm(parsed, EXITED_0) == ("failed", "DCGM reported failures: GPU Memory (GPU 1)")


def test_dcgm_4x_json_entities_summary_and_a_cpu_result_left_out():
    parsed = parse_dcgm_diag(sample("dcgmi-diag-r2-j_dcgm-4.x_4gpu_pcie-internal-error.json"))
    assert (parsed["format"], parsed["tool_version"]) == ("json", "4.2.3")
    assert statuses(parsed["tests"]) == {"software": "pass", "memory": "pass", "pcie": "fail"}
    assert sorted(by_name(parsed["tests"], "memory")[0]["gpus"]) == ["0", "1", "2", "3"]
    pcie = by_name(parsed["tests"], "pcie")[0]
    # the test failed while every GPU passed: an internal error of the test, for the controller to tell apart
    assert set(result["status"] for result in pcie["gpus"].values()) == {"pass"}
    assert pcie["messages"][0].startswith("There was an internal error during the test: 'A child process (2741)")
    assert judge_dcgm(parsed, EXITED_0) == ("failed", "DCGM reported failures: pcie (no GPU named)")


def test_dcgm_4x_runtime_error_is_an_error_not_a_verdict():
    parsed = parse_dcgm_diag(sample("dcgmi-diag-r1-j_dcgm-4.x_runtime-error.json"))
    assert parsed["tests"] == [] and parsed["tool_version"] == "4.1.1"
    status, reason = judge_dcgm(parsed, CommandResult(235, "", ""))
    assert status == "error" and reason.endswith("Return: (-33) This request is serviced by a module of DCGM that "
                                                 "is not currently loaded.")


def test_dcgm_3x_text_results_split_over_lines_and_wrapped_messages():
    parsed = parse_dcgm_diag(sample("dcgmi-diag-r3_dcgm-3.x_text_split-results.txt"))
    assert (parsed["format"], parsed["tool_version"]) == ("text", "3.3.9")
    memory = by_name(parsed["tests"], "GPU Memory")[0]
    assert dict((gpu, r["status"]) for gpu, r in memory["gpus"].items()) == {"0": "pass", "1": "fail", "2": "pass"}
    assert memory["gpus"]["1"]["messages"] == ["GPU 1 Error using CUDA API cuMemAlloc Check DCGM and system logs for "
                                               "errors. Reset GPU. Restart DCGM. Rerun diagnostics."]
    power = by_name(parsed["tests"], "Targeted Power")[0]
    assert power["status"] == "warn" and power["gpus"]["2"]["messages"] == [
        "GPU 2 Max power of 301.2 did not reach desired power minimum targeted_power.target_power_min_ratio of 315.0 "
        "for GPU 2"]
    # "Pass - All" covers the three GPUs of the metadata
    assert sorted(by_name(parsed["tests"], "Denylist")[0]["gpus"]) == ["0", "1", "2"]
    assert by_name(parsed["tests"], "Targeted Stress")[0]["status"] == "skip"
    assert by_name(parsed["tests"], "PCIe")[0]["gpus"]["2"]["messages"] == [
        "GPU 2 GPU to Host bandwidth:  24.10 GB/s, GPU 2 Host to GPU bandwidth:  25.30 GB/s"]


def test_dcgm_4x_text_gpu_lines_after_the_message():
    parsed = parse_dcgm_diag(sample("dcgmi-diag-r2_dcgm-4.x_text_gpu2-memory-fail.txt"))
    assert (parsed["format"], parsed["tool_version"]) == ("text", "4.4.1")
    memory = by_name(parsed["tests"], "memory")[0]
    assert memory["status"] == "fail" and memory["category"] == "Hardware" and memory["messages"] == []
    assert memory["gpus"]["2"] == {"status": "fail", "messages": [
        "GPU 2 Memory test failed: 7 memory mismatches found. Drain the GPU and reset it or reboot the node."]}
    assert gpu_verdicts(parsed["tests"]) == {"0": "pass", "1": "pass", "2": "fail", "3": "pass"}


def test_dcgm_output_that_is_no_diagnostic_reads_as_nothing():
    for text in ("", "Error: unable to establish a connection to the specified host: localhost\n", "{}"):
        parsed = parse_dcgm_diag(text)
        assert parsed["tests"] == [] and parsed["format"] is None
        assert judge_dcgm(parsed, CommandResult(255, text, ""))[0] == "error"


# ---------------------------------------------------------------- the project's samples: nvbandwidth


def test_nvbandwidth_matrices_sums_and_per_gpu_means():
    parsed = parse_nvbandwidth(sample("nvbandwidth_v0.8_4gpu_ce-copies.txt"))
    h2d, d2h, d2d = parsed["testcases"]
    assert parsed["tool_version"] == "v0.8"
    assert (h2d["name"], h2d["unit"], h2d["sum"], h2d["error"]) == ("host_to_device_memcpy_ce", "GB/s", 186.7, None)
    assert h2d["per_gpu"] == {"0": 55.1, "1": 55.2, "2": 21.4, "3": 55.0} and h2d["matrix"] == [[55.1, 55.2, 21.4, 55.0]]
    assert d2h["per_gpu"]["2"] == 22.0
    assert d2d["matrix"][1] == [390.0, None, 388.0, 392.0]
    assert d2d["per_gpu"] == {"0": 390.0, "1": 390.0, "2": 389.0, "3": 391.0} and d2d["sum"] == 4680.0
    wanted = ["host_to_device_memcpy_ce", "device_to_host_memcpy_ce", "device_to_device_memcpy_read_ce"]
    assert judge_nvbandwidth(parsed["testcases"], wanted, EXITED_0) == ("passed", "")


def test_nvbandwidth_waived_case_and_a_cuda_error():
    parsed = parse_nvbandwidth(sample("nvbandwidth_v0.8_1gpu_waived-and-cuda-error.txt"))
    waived, broken = parsed["testcases"]
    assert (waived["error"], waived["matrix"]) == (WAIVED, [])
    assert broken["error"] == "CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access was encountered in memcpy.cpp:88"
    status, reason = judge_nvbandwidth(parsed["testcases"], ["device_to_device_memcpy_read_ce",
                                                             "host_to_device_memcpy_ce"], EXITED_0)
    assert status == "error" and "host_to_device_memcpy_ce: CUDA_ERROR_ILLEGAL_ADDRESS" in reason
    assert "waived" not in reason


# ---------------------------------------------------------------- the project's samples: nccl-tests


def test_all_reduce_perf_header_rows_wrong_and_average():
    parsed = parse_nccl_tests(sample("all-reduce-perf_4gpu_header-rows-avg_wrong-at-64M.txt"))
    assert (parsed["tool_version"], parsed["gpus"], parsed["avg_busbw_gbs"], parsed["out_of_bounds"]) == (
        "2.13.11", 4, 319.1623, 0)
    assert [row["size_bytes"] for row in parsed["rows"]] == [16777216, 33554432, 67108864, 134217728]
    assert parsed["rows"][2] == {"size_bytes": 67108864, "count": 16777216, "type": "float", "redop": "sum",
                                 "time_us": 290.1, "algbw_gbs": 231.33, "busbw_gbs": 347.0, "wrong": 2}
    assert parsed["peak_busbw_gbs"] == 359.32 and parsed["error_text"] is None
    assert judge_nccl(parsed, EXITED_0) == ("failed", "wrong results at 67108864 bytes")


def test_all_reduce_perf_validation_off_then_nccl_failure():
    parsed = parse_nccl_tests(sample("all-reduce-perf_validation-off-and-nccl-failure.txt"))
    assert parsed["gpus"] == 2 and [row["wrong"] for row in parsed["rows"]] == [None, None]
    assert parsed["error_text"] == ("Test NCCL failure common.cu:1005 'unhandled cuda error (run with NCCL_DEBUG=INFO "
                                    "for details) / '")
    assert judge_nccl(parsed, CommandResult(2, "", ""))[0] == "failed"


# ---------------------------------------------------------------- the project's samples: gpu-burn


def test_gpu_burn_faulty_with_a_negative_count_and_a_died_gpu():
    parsed = parse_gpu_burn(sample("gpu-burn_4gpu_faulty-negative-died.txt"))
    assert parsed["per_gpu"] == {"0": {"result": "ok", "errors": 0}, "1": {"result": "faulty", "errors": -16384},
                                 "2": {"result": "ok", "errors": 0}, "3": {"result": "died", "errors": 311}}
    assert (parsed["tested"], parsed["progress_lines"]) == (4, 2)
    assert judge_stress(parsed["per_gpu"], None, EXITED_0) == ("failed", "stress test: GPU 1 faulty, GPU 3 died")


def test_gpu_burn_ok_without_any_progress_is_no_pass():
    parsed = parse_gpu_burn(sample("gpu-burn_ok-without-progress.txt"))
    assert parsed["per_gpu"] == {"0": {"result": "unknown", "errors": None}} and parsed["progress_lines"] == 0
    status, reason = judge_stress(parsed["per_gpu"], None, EXITED_0)
    assert status == "error" and "an OK without any progress line is not a pass" in reason


# ---------------------------------------------------------------- the public corpus: dcgmi diag


def test_corpus_dcgm_338_fail_early_gpu_memory_fail_all_cuinit(corpus):
    text = corpus.read_realdata("dcgmi-diag-r3-fail-early_8x-h100-dcgm-3.3.8_gpu-memory-fail-all-cuinit-system-not-"
                                "yet-initialized_issue-quote.txt")
    nccl, dcgm = blocks(text)
    parsed = parse_dcgm_diag(dcgm)
    assert (parsed["format"], parsed["tool_version"]) == ("text", "3.3.8")
    assert statuses(parsed["tests"])["PCIe"] == "skip" and statuses(parsed["tests"])["Persistence Mode"] == "pass"
    memory = by_name(parsed["tests"], "GPU Memory")[0]
    assert sorted(memory["gpus"]) == [str(n) for n in range(8)]
    for gpu in range(8):
        assert memory["gpus"][str(gpu)]["status"] == "fail"
        message = memory["gpus"][str(gpu)]["messages"][0]
        # DCGM's cut "Restar" / "t DCGM" joined back
        assert message.startswith("GPU %d Error using CUDA API cuInit" % gpu) and "Restart DCGM" in message
        assert "Unable to initialize CUDA library: 'system not yet initialized'" in message
    info = by_name(parsed["tests"], "Persistence Mode")[0]["messages"][0]
    assert info.endswith("Persistence mode for GPU 4 is disabled. Enable pers")
    # "Skip - All" after the failure is not a pass; the node is critical though no GPU is faulty (fabric manager)
    assert judge_dcgm(parsed, EXITED_0) == ("failed", "DCGM reported failures: GPU Memory (GPU 0, 1, 2, 3, 4, 5, 6, 7)")
    nccl_parsed = parse_nccl_tests(nccl)
    assert nccl_parsed["error_text"] == "Test CUDA failure common.cu:941 'system not yet initialized'"
    assert (nccl_parsed["gpus"], nccl_parsed["rows"]) == (8, [])


def test_corpus_dcgm_4x_pcie_internal_error_with_every_gpu_passing(corpus):
    text = corpus.read_realdata("dcgmi-diag-r2_dcgm-4.x-format_pcie-fail-internal-error-per-gpu-pass_l40s-x4-b200-"
                                "x8_issue-quotes.txt")
    l40s, b200, log = blocks(text)
    for block, version, gpus, errors in ((l40s, "4.2.3", 4, 4), (b200, "4.4.1", 8, 1)):
        parsed = parse_dcgm_diag(block)
        assert (parsed["format"], parsed["tool_version"]) == ("text", version)
        assert statuses(parsed["tests"]) == {"software": "pass", "memory": "pass", "pcie": "fail"}
        pcie = by_name(parsed["tests"], "pcie")[0]
        assert pcie["category"] == "Integration" and len(pcie["messages"]) == errors
        assert all(message.startswith("There was an internal error during the test") for message in pcie["messages"])
        # a harness failure: the test fails while every GPU under it passes
        assert pcie["gpus"] == dict((str(n), {"status": "pass", "messages": []}) for n in range(gpus))
    assert "'Output of child process (11167) couldn't be parsed: '* Line 1, Column 1   Syntax error: value, object or " \
           "array expected. '' Check DCGM and system logs" in pcie["messages"][0]
    # the nvvs log around the child's JSON is no diagnostic result
    assert parse_dcgm_diag(log)["tests"] == [] and parse_dcgm_diag(log)["format"] is None


def test_corpus_dcgm_331_t4_gpu0_busy_gpu1_passes_its_own_tests(corpus):
    text = corpus.read_realdata("dcgmi-diag-r2_t4-dcgm-3.3.1_gpu0-cuda-busy-or-unavailable-pass-fail-split-per-gpu_"
                                "issue-quote-fragments.txt")
    first, second = blocks(text)
    head = parse_dcgm_diag(first)
    assert head["tool_version"] == "3.3.1" and set(statuses(head["tests"]).values()) == {"pass"}
    assert sorted(head["tests"][0]["gpus"]) == ["0"]  # "GPU Device IDs Detected | 1eb8": one GPU
    parsed = parse_dcgm_diag(second)
    memory = by_name(parsed["tests"], "GPU Memory")[0]
    assert memory["gpus"]["1"] == {"status": "pass", "messages": ["GPU 1 Allocated 15568304202 bytes (98.3%)"]}
    assert memory["gpus"]["0"]["status"] == "fail"
    assert "Unable to create CUDA context: 'CUDA-capable device(s) is/are busy or unavailable'." in \
        memory["gpus"]["0"]["messages"][0]
    assert statuses(parsed["tests"])["Diagnostic"] == statuses(parsed["tests"])["Targeted Stress"] == "fail"
    # attribute per GPU: only GPU 0 carries a GPU-specific failure message
    failing_messages = [gpu for test in parsed["tests"] for gpu, result in test["gpus"].items()
                        if result["status"] == "fail" and result["messages"]]
    assert set(failing_messages) == {"0"}
    diagnostic = by_name(parsed["tests"], "Diagnostic")[0]
    assert diagnostic["gpus"]["0"]["messages"][0].startswith("GPU 0 API call cuMemGetInfo failed: 'context is destroyed'")


def test_corpus_dcgm_json_3x_every_test_skipped_is_no_result(corpus):
    text = corpus.read_realdata("dcgmi-diag-r3-j_json-3.x-tab-layout_t400-every-test-skip_elided-and-cut_"
                                "issue-quote.txt")
    parsed = parse_dcgm_diag(text)
    assert parsed["format"] == "json_lenient"  # elided ({"..."}) and cut: not valid JSON
    assert [(test["category"], test["name"]) for test in parsed["tests"]] == [
        ("Integration", "PCIe"), ("Hardware", "GPU Memory"), ("Hardware", "Diagnostic"), ("Hardware", "EUD Test"),
        ("Stress", "Targeted Stress")]
    assert all(test["gpus"] == {"0": {"status": "skip", "messages": []}} for test in parsed["tests"])
    assert judge_dcgm(parsed, EXITED_0) == ("error", "DCGM skipped every test: nothing was tested")


def test_corpus_dcgm_nvlink_down_reports(corpus):
    text = corpus.read_realdata("dcgmi_nvlink-down-reports_link-status-all-D-diag-still-passes-and-pcie-gpu-false-"
                                "positives_issue-quotes.txt")
    link_status, diag_head, old_pcie, health = blocks(text)
    links = parse_nvlink_link_status(link_status)
    assert links == {"gpus": {"0": ["D"] * 18, "1": ["D"] * 18}, "nvswitches": {}}
    head = parse_dcgm_diag(diag_head)
    # every link down, yet the diagnostic passes what it printed (the links must be judged from their state)
    assert head["tool_version"] == "3.3.7" and statuses(head["tests"]) == {"Denylist": "pass"}
    assert sorted(head["tests"][0]["gpus"]) == ["0", "1"]
    pcie = by_name(parse_dcgm_diag(old_pcie)["tests"], "PCIe")[0]
    assert pcie["status"] == "fail" and pcie["gpus"] == {}
    assert pcie["messages"][0].startswith("GPU 0GPU 0's NvLink link 0 is currently down Run a field diagnostic")
    assert pcie["messages"][0].count("is currently down") == 5
    report = parse_dcgm_health(health)
    assert report["overall"] == "Failure"
    assert report["systems"] == [{"entity": "0", "system": "NVLINK system", "health": "Failure", "messages": [
        "GPU 0's NvLink link 0 is currently down ...", "GPU 0's NvLink link 1 is currently down ...",
        "... (all 12 links)"]}]


def test_corpus_dcgm_health_healthy_while_gpu1_needs_a_reset(corpus):
    text = corpus.read_realdata("dcgmi-health-c-j_healthy-while-gpu1-recovery-action-reset-xid120_nvidia-smi-csv-"
                                "and-dmon_issue-quote.txt")
    smi_and_dmon, health = blocks(text)
    # DCGM health says Healthy: a false negative, never read as a pass over the recovery action and the Xid
    assert parse_dcgm_health(health) == {"overall": "Healthy", "systems": []}
    assert "1, Reset" in smi_and_dmon and re.search(r"^GPU 1\s+120\s*$", smi_and_dmon, re.M)
    # neither block is a diagnostic result
    assert parse_dcgm_diag(health)["tests"] == [] and parse_dcgm_diag(smi_and_dmon)["tests"] == []


def test_corpus_nvvs_log_nvbandwidth_result_2_and_blank_sentinels(corpus):
    text = corpus.read_realdata("nvvs-debug-log_dcgm-4.5.0-diag-r3_h100x8-nvswitch_nvbandwidth-fail-mcutil-and-"
                                "blank-sentinel-values_issue-quote.txt")
    parsed = parse_nvvs_log(blocks(text)[0])
    assert parsed["results"] == {"NVML Library": 0, "Page Retirement/Row Remap": 0,
                                 "Permissions and OS-related Blocks": 0, "diagnostic": 0, "nvbandwidth": 2}
    assert parsed["errors"] == [{"test": "nvbandwidth", "message": "The memory copy utilization for the GPU: 2 is "
                                 "greater than 10%. This may affect the results of the nvbandwidth test."}]
    # 92233720368547757xx are DCGM's blank sentinels (no space before "for" upstream), never counts
    retired = [blank for blank in parsed["blank_values"] if blank["field"].startswith("DCGM_FI_DEV_RETIRED_")]
    assert len(retired) == 24 and set(blank["gpu"] for blank in retired) == set(range(8))
    assert set(blank["meaning"] for blank in retired) == {"not supported"}
    unrepairable = [blank for blank in parsed["blank_values"] if blank["field"] == "DCGM_FI_DEV_MEMORY_UNREPAIRABLE_FLAG"]
    assert [blank["meaning"] for blank in unrepairable] == ["blank"]
    assert blank_meaning(9223372036854775794) == "not supported" and blank_meaning(12) is None


def test_corpus_nvsentinel_preflight_dcgm_summary_and_nccl_loopback(corpus):
    text = corpus.read_realdata("nvsentinel-preflight-logs_dcgm-diag-l2-summary-pass-and-fail_nccl-loopback-cuda-not-"
                                "initialized_jq_pr-quotes.txt")
    healthy, unhealthy, nccl = blocks(text)
    # NVSentinel's own summary objects are not dcgmi output: no test is invented from them
    for block in (healthy, unhealthy):
        assert parse_dcgm_diag(block)["tests"] == []
    assert re.search(r'"passed": 6,\s+"failed": 0', healthy) and re.search(r'"passed": 0,\s+"failed": 2', unhealthy)
    # all_reduce_perf's stdout embedded as one JSON string (escaped newlines)
    parsed = parse_nccl_tests(nccl)
    assert parsed["error_text"] == "Test CUDA failure common.cu:941 'system not yet initialized'"
    assert (parsed["gpus"], parsed["rows"]) == (8, [])
    assert judge_nccl(parsed, CommandResult(2, "", ""))[0] == "failed"


# ---------------------------------------------------------------- the public corpus: nvbandwidth


def test_corpus_nvbandwidth_pattern_check_failures(corpus):
    text = corpus.read_realdata("nvbandwidth_pattern-check-failures_a100x8-v0.7-read-ce-assert_l40sx8-v0.4-read-sm-"
                                "aborted_issue-quotes.txt")
    a100, l40s = (parse_nvbandwidth(block) for block in blocks(text))
    assert a100["tool_version"] == "v0.7" and l40s["tool_version"] == "v0.4"
    assert [(case["name"], case["matrix"], case["error"]) for case in a100["testcases"]] == [
        ("device_to_device_memcpy_read_ce", [], "Invalid value when checking the pattern at 0x70a640000000")]
    assert [(case["name"], case["error"]) for case in l40s["testcases"]] == [
        ("one_to_all_read_sm", "Invalid value when checking the pattern at <0x7fac6200e480>")]
    status, reason = judge_nvbandwidth(a100["testcases"], ["device_to_device_memcpy_read_ce"], EXITED_0)
    assert status == "failed" and reason == ("nvbandwidth data validation failed: device_to_device_memcpy_read_ce: "
                                             "Invalid value when checking the pattern at 0x70a640000000")


def test_corpus_nvbandwidth_pcie4_and_pcie5_host_device_matrices(corpus):
    text = corpus.read_realdata("nvbandwidth_host-device-ce-matrices_8x-rtx4090-v0.2-pcie4-26gbs_8x-rtx5090-pcie5-"
                                "56gbs_issue-quotes.txt")
    rtx4090, rtx5090 = (parse_nvbandwidth(block) for block in blocks(text))
    assert rtx4090["tool_version"] == "v0.2"
    h2d, d2h, bidirectional = rtx4090["testcases"]
    assert (h2d["sum"], min(h2d["per_gpu"].values()), max(h2d["per_gpu"].values())) == (205.04, 23.9, 26.38)
    assert (d2h["sum"], min(d2h["per_gpu"].values()), max(d2h["per_gpu"].values())) == (214.28, 26.25, 27.11)
    assert (bidirectional["matrix"], bidirectional["error"]) == ([], NO_MATRIX)  # the quote ends at its header
    names = [case["name"] for case in rtx5090["testcases"]]
    assert names == ["host_to_device_memcpy_ce", "device_to_host_memcpy_ce", "host_to_device_bidirectional_memcpy_ce",
                     "device_to_host_bidirectional_memcpy_ce"]
    assert [case["sum"] for case in rtx5090["testcases"][:3]] == [450.84, 458.62, 407.31]
    assert rtx5090["testcases"][0]["per_gpu"]["7"] == 56.41 and rtx5090["testcases"][2]["per_gpu"]["4"] == 50.84
    # healthy: no test case of either box reports a fault (the cut headers only leave those cases unfinished)
    assert judge_nvbandwidth(rtx5090["testcases"][:3], names[:3], EXITED_0) == ("passed", "")


def test_corpus_nvbandwidth_readme_matrices(corpus):
    d2d = parse_nvbandwidth(corpus.read_realdata("nvbandwidth_d2d-memcpy-write-ce-8gpu-matrix-276gbs_nvbandwidth-"
                                                 "readme.txt"))["testcases"][0]
    assert d2d["name"] == "device_to_device_memcpy_write_ce" and len(d2d["matrix"]) == 8
    assert [d2d["matrix"][n][n] for n in range(8)] == [0.0] * 8  # the diagonal is no pair, not a failed one
    assert d2d["matrix"][6][0] == 274.89 and d2d["matrix"][4][3] == 276.76
    assert all(276.0 <= value <= 276.5 for value in d2d["per_gpu"].values())
    h2d = parse_nvbandwidth(corpus.read_realdata("nvbandwidth_h2d-memcpy-ce-8gpu-26gbs_nvbandwidth-readme.txt"))
    assert h2d["testcases"][0]["matrix"] == [[26.03, 25.94, 25.97, 26.0, 26.19, 25.95, 26.0, 25.97]]
    both = parse_nvbandwidth(corpus.read_realdata("nvbandwidth_h2d-bidirectional-memcpy-ce-8gpu-18-19gbs_"
                                                  "nvbandwidth-readme.txt"))["testcases"][0]
    assert both["name"] == "host_to_device_bidirectional_memcpy_ce"
    assert (min(both["per_gpu"].values()), max(both["per_gpu"].values())) == (18.37, 19.59)
    for case in (d2d, h2d["testcases"][0], both):
        assert case["error"] is None and case["sum"] is None  # the README excerpts end before the SUM line


# ---------------------------------------------------------------- the public corpus: nccl-tests


def test_corpus_nccl_rank_tagged_rows_busbw_collapse(corpus):
    parsed = parse_nccl_tests(corpus.read_realdata("nccl-tests-all-reduce-perf_degraded-busbw-collapse-above-32MB_"
                                                   "rank-tagged-output_issue-quote.txt"))
    busbw = dict((row["size_bytes"], row["busbw_gbs"]) for row in parsed["rows"])
    assert len(busbw) == 10 and busbw[33554432] == 29.5 == parsed["peak_busbw_gbs"]
    assert [busbw[2 ** n] for n in range(26, 30)] == [5.27, 5.22, 4.09, 5.31]
    assert all(row["wrong"] == 0 and row["redop"] == "sum" for row in parsed["rows"])
    assert parsed["rows"][1]["time_us"] == 2325.3  # out-of-place; the in-place 416.7 of that row is not taken
    assert parsed["avg_busbw_gbs"] is None and judge_nccl(parsed, EXITED_0) == ("passed", "")


def test_corpus_nccl_rows_only_healthy_300_gbs(corpus):
    parsed = parse_nccl_tests(corpus.read_realdata("nccl-tests-all-reduce-perf_healthy-busbw-300gbs-at-32MB_rows-"
                                                   "only_issue-quote.txt"))
    assert len(parsed["rows"]) == 11 and parsed["rows"][0]["size_bytes"] == 32768
    assert parsed["peak_busbw_gbs"] == 300.51 and parsed["rows"][-1]["algbw_gbs"] == 171.72
    assert (parsed["avg_busbw_gbs"], parsed["gpus"], parsed["error_text"]) == (None, None, None)


def test_corpus_nccl_old_11_column_rows(corpus):
    parsed = parse_nccl_tests(corpus.read_realdata("nccl-tests-all-reduce-perf_nccl-2.6-old-column-format-2gpu-21gbs-"
                                                   "avg-6.7_issue-quote.txt"))
    assert len(parsed["rows"]) == 12 and all(row["redop"] is None and row["wrong"] == 0 for row in parsed["rows"])
    assert parsed["rows"][-2] == {"size_bytes": 67108864, "count": 8388608, "type": "float", "redop": None,
                                  "time_us": 1568.3, "algbw_gbs": 21.4, "busbw_gbs": 21.4, "wrong": 0}
    assert (parsed["peak_busbw_gbs"], parsed["avg_busbw_gbs"], parsed["out_of_bounds"]) == (21.4, 6.6972, 0)


def test_corpus_nccl_all_gather_bf16_rows(corpus):
    parsed = parse_nccl_tests(corpus.read_realdata("nccl-tests-all-gather-perf_2gpu-bf16-busbw-77-to-126gbs_header-"
                                                   "and-rows_issue-quote.txt"))
    assert [row["size_bytes"] for row in parsed["rows"]][2:5] == [50331648, 67108864, 83886080]
    assert all(row["type"] == "bfloat16" and row["redop"] == "none" for row in parsed["rows"])
    assert parsed["rows"][0]["busbw_gbs"] == 77.1 and parsed["peak_busbw_gbs"] == 125.56


# ---------------------------------------------------------------- the public corpus: gpu-burn


def test_corpus_gpu_burn_healthy_runs(corpus):
    gtx1080, a500 = (parse_gpu_burn(block) for block in
                     blocks(corpus.read_realdata("gpu-burn_healthy-runs-errors-0_gtx1080x2-and-rtx-a500_issue-quotes.txt")))
    assert gtx1080["progress_lines"] == 7 and a500["progress_lines"] == 3
    assert gtx1080["per_gpu"] == {"0": {"result": "unknown", "errors": 0}, "1": {"result": "unknown", "errors": 0}}
    assert a500["per_gpu"] == {"0": {"result": "unknown", "errors": 0}}
    # no fault anywhere; the quotes end before gpu-burn's summary, so there is no verdict to call a pass
    assert judge_stress(a500["per_gpu"], None, EXITED_0)[0] == "error"


def test_corpus_gpu_burn_failures_and_false_oks(corpus):
    faulty16, bare_ok, cublas, k80 = (parse_gpu_burn(block) for block in blocks(corpus.read_realdata(
        "gpu-burn_failures-faulty-died-init-error-and-false-ok_issue-quotes.txt")))
    # every GPU FAULTY though `echo $?` printed 0; 8 of 16 with -524288000 (WARNING!)
    assert faulty16["tested"] == 16 and set(r["result"] for r in faulty16["per_gpu"].values()) == {"faulty"}
    assert sorted(int(gpu) for gpu, r in faulty16["per_gpu"].items() if r["errors"] == -524288000) == [
        1, 2, 3, 4, 9, 11, 14]
    assert faulty16["per_gpu"]["0"]["errors"] == 0
    assert judge_stress(faulty16["per_gpu"], None, EXITED_0)[0] == "failed"
    # "GPU 0: OK" without any progress line is no pass
    assert bare_ok["per_gpu"] == {"0": {"result": "unknown", "errors": None}} and bare_ok["progress_lines"] == 0
    assert judge_stress(bare_ok["per_gpu"], bare_ok["init_error"], EXITED_0)[0] == "error"
    assert cublas["init_error"] == "Couldn't init a GPU test: Error in \"init\": CUBLAS_STATUS_NOT_INITIALIZED"
    assert judge_stress(cublas["per_gpu"], cublas["init_error"], EXITED_0) == (
        "error", "the stress tool could not start: Couldn't init a GPU test: Error in \"init\": "
                 "CUBLAS_STATUS_NOT_INITIALIZED")
    assert k80["per_gpu"]["0"] == {"result": "died", "errors": -1903218736}
    assert [k80["per_gpu"][str(n)]["result"] for n in range(1, 4)] == ["unknown"] * 3
    assert judge_stress(k80["per_gpu"], k80["init_error"], EXITED_0) == ("failed", "stress test: GPU 0 died")


@pytest.mark.parametrize("name", ["gpu-burn_4gpu_faulty-negative-died.txt", "gpu-burn_ok-without-progress.txt"])
def test_gpu_burn_exit_status_is_not_trusted(name):
    parsed = parse_gpu_burn(sample(name))
    assert judge_stress(parsed["per_gpu"], parsed["init_error"], EXITED_0)[0] != "passed"


# ---------------------------------------------------------------- bad input never crashes a check


def _cut_versions(text):
    """The text cut at many points, and with its lines shuffled in a fixed way: what a killed or garbled run prints."""
    lines = text.splitlines(True)
    cuts = [text[:size] for size in range(0, len(text), max(1, len(text) // 40))]
    return cuts + ["".join(lines[1::2] + lines[::2]), text.replace(" ", ""), text.replace("|", "")]


@pytest.mark.parametrize("name", sorted(os.listdir(SAMPLES)))
def test_cut_and_garbled_output_reads_without_crashing(name):
    parsers = (parse_dcgm_diag, parse_nvbandwidth, parse_nccl_tests, parse_gpu_burn, parse_dcgm_health,
               parse_nvlink_link_status, parse_nvvs_log)
    for text in _cut_versions(sample(name)) + ["\x00\xff garbage {[", "{\"DCGM GPU Diagnostic\": 5}", "[]"]:
        for parser in parsers:
            parsed = parser(text)
            assert isinstance(parsed, dict)
        failed = CommandResult(1, text, "")
        assert judge_dcgm(parse_dcgm_diag(text), failed)[0] in ("passed", "failed", "error")
        assert judge_nvbandwidth(parse_nvbandwidth(text)["testcases"], ["host_to_device_memcpy_ce"], failed)[0] in (
            "passed", "failed", "error")
        assert judge_nccl(parse_nccl_tests(text), failed)[0] in ("passed", "failed", "error")
        burn = parse_gpu_burn(text)
        assert judge_stress(burn["per_gpu"], burn["init_error"], failed)[0] in ("passed", "failed", "error")
