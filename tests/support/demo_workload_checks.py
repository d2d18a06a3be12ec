"""What the demo hosts of the workload and host_pressure subsets must show (tests/unit/plugins/plugin_utils/rules/test_diagnose_demo.py)."""

import json

from tests.support.demo_fleet import demo_audit, found


def check_workload_17():
    host = "gpu-l40s-workload-17"
    (oom,) = found(host, "workload.oom_shared_gpu", "critical")
    assert oom["gpu"] == "0000:01:00.0" and oom["evidence"]["processes"] == 3
    assert (oom["evidence"]["cuda_oom"], oom["evidence"]["kernel_oom_kills"]) == (6, 1)
    (loop,) = found(host, "workload.crash_loop", "warning")
    assert loop["evidence"]["restarts"] == 6 and loop["evidence"]["journal_failures"]["python_traceback"] == 6
    (framework,) = found(host, "workload.framework_cuda_unsupported", "warning")
    assert (framework["evidence"]["cuda"], framework["evidence"]["support"]) == ("12.6", "minor_compat")
    (stray,) = found(host, "workload.wrong_gpus", "warning")
    assert stray["evidence"]["found_gpus"] == [1]
    (alloc,) = found(host, "workload.alloc_conf_missing", "warning")
    assert len(alloc["evidence"]["processes"]) == 4
    assert "hf_demo_not_a_secret" not in json.dumps(demo_audit()[0][host])


def check_dataload_18():
    host = "gpu-h100-dataload-18"
    (starved,) = found(host, "workload.input_bound", "warning")
    assert starved["evidence"]["cpu_pressure_pct"] == 68.4 and starved["evidence"]["io_pressure_pct"] == 31.7
    assert starved["evidence"]["gpu_mean_pct"] == 12.9
    assert [f["rule"] for f in demo_audit()[1][host] if f["severity"] != "info"] == ["workload.input_bound"]


WORKLOAD_CHECKS = {"gpu-l40s-workload-17": check_workload_17, "gpu-h100-dataload-18": check_dataload_18}


def facts_workload_17(facts):
    (service,) = facts["workload"]["services"]
    assert (service["unit"], service["restarts"], service["sources"]) == ("inference.service", 6,
                                                                          ["policy", "gpu_process"])
    assert [process["gpu_index"] for process in service["processes"]] == [0, 0, 0, 1]
    assert service["processes"][3]["environment"] == {"CUDA_VISIBLE_DEVICES": "1", "NCCL_DEBUG": "WARN"}
    assert service["journal"]["matches"]["cuda_oom"]["count"] == 6
    assert service["oom_kills"]["events"][0]["pid"] == 60941
    assert service["frameworks"]["packages"][0]["version"] == "2.6.0+cu126"
    assert facts["host_pressure"]["pressure"]["cpu"]["some_avg10"] == 6.4


def facts_dataload_18(facts):
    pressure = facts["host_pressure"]
    assert (pressure["cpus"], pressure["load"]["per_core_avg1"]) == (192, 1.06)
    assert [sample["mean_pct"] for sample in pressure["gpu_utilization"]] == [12, 13, 14, 12, 13, 14, 12, 13]
    # a replay samples once: its recorded reads cannot change over time
    assert pressure["sample_seconds"] == 0.0 and {sample["samples"] for sample in pressure["gpu_utilization"]} == {1}
    assert pressure["pressure"]["io"]["some_avg10"] == 31.7
    assert facts["workload"]["services"][0]["frameworks"]["packages"][0]["cuda"] == "12.4"


WORKLOAD_FACT_CHECKS = {"gpu-l40s-workload-17": facts_workload_17, "gpu-h100-dataload-18": facts_dataload_18}
