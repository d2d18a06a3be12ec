"""Hand-written results of gpufleet.core.gpu_validate (facts.validation, the agreed interface of issue 28) for the
tests of the judgement: a healthy 8-GPU H100 node on PCIe Gen5 x16 and NVLink 4, and helpers that break it."""

import copy

from ansible_collections.gpufleet.core.plugins.module_utils.active_checks import check_result

H2D_HEALTHY = 53.2
D2D_HEALTHY = 370.0


def check(status="passed", reason="", **extra):
    result = {"status": status, "reason": reason, "command": ["tool"], "duration_s": 12.5, "tool_version": "1.0",
              "output_tail": ""}
    result.update(extra)
    return result


def bare(name, status, reason):
    """A check that gave no figures (skipped, refused, error, timeout), as gpu_validate gives it."""
    return check_result(name, {"dcgm_level": 1, "stress_tool": "gpu_burn", "stress_seconds": 60}, status, reason)


def dcgm_tests(gpus=8):
    return [{"name": name, "category": category, "status": "pass", "messages": [],
             "gpus": {str(index): {"status": "pass", "messages": []} for index in range(gpus)}}
            for name, category in (("software", "Deployment"), ("memory", "Hardware"), ("pcie", "Integration"))]


def nvbandwidth_cases(gpus=8, h2d=H2D_HEALTHY, d2d=D2D_HEALTHY):
    return [
        {"name": "host_to_device_memcpy_ce", "unit": "GB/s", "per_gpu": {str(i): h2d for i in range(gpus)},
         "matrix": [[h2d] * gpus], "sum": h2d * gpus, "error": None},
        {"name": "device_to_device_memcpy_read_ce", "unit": "GB/s", "per_gpu": {str(i): d2d for i in range(gpus)},
         "matrix": [], "sum": d2d * gpus, "error": None},
    ]


def healthy_validation(gpus=8):
    return {
        "format": 1, "started_at": "2026-11-30T05:50:00Z", "finished_at": "2026-11-30T05:58:00Z", "refused": None,
        "mig_enabled": False,
        "gpus": [{"index": i, "uuid": "GPU-%04d" % i, "name": "NVIDIA H100 80GB HBM3", "pci_bus_id": "bus-%d" % i}
                 for i in range(gpus)],
        "checks": {
            "dcgm_diag": check(level=1, tests=dcgm_tests(gpus)),
            "nvbandwidth": check(testcases=nvbandwidth_cases(gpus)),
            "nccl_all_reduce": check(gpus=gpus, rows=[
                {"size_bytes": 33554432, "count": 8388608, "type": "float", "redop": "sum", "time_us": 250.0,
                 "algbw_gbs": 134.2, "busbw_gbs": 234.9, "wrong": 0}],
                peak_busbw_gbs=234.9, avg_busbw_gbs=120.3, error_text=None),
        },
    }


def with_validation(facts, validation):
    facts = copy.deepcopy(facts)
    facts["validation"] = validation
    return facts


def fail_memory(validation, index, message="Memory test failed: miscompare at 0x1f000"):
    memory = [test for test in validation["checks"]["dcgm_diag"]["tests"] if test["name"] == "memory"][0]
    memory["status"] = "fail"
    memory["gpus"][str(index)] = {"status": "fail", "messages": [message]}
    validation["checks"]["dcgm_diag"]["status"] = "failed"
    return validation


def set_bandwidth(validation, testcase, index, value):
    case = [case for case in validation["checks"]["nvbandwidth"]["testcases"] if case["name"] == testcase][0]
    case["per_gpu"][str(index)] = value
    return validation


def fail_nccl(validation, error_text):
    nccl = validation["checks"]["nccl_all_reduce"]
    nccl.update(status="failed", reason="all_reduce_perf exited with status 2", error_text=error_text, rows=[],
                peak_busbw_gbs=None, avg_busbw_gbs=None)
    return validation
