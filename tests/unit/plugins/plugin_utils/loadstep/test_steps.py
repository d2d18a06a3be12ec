"""The step analysis of loadstep.yml on the project's own sample measurements: percentiles, breaking
detection, layer attribution, memory per added worker, the suggested worker cap and the comparison."""

import copy

import pytest

from ansible_collections.gpufleet.core.plugins.plugin_utils.loadstep import steps as loadstep
from ansible_collections.gpufleet.core.plugins.plugin_utils.loadstep import report as loadstep_report
from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.knowledge import load_knowledge
from ansible_collections.gpufleet.core.plugins.plugin_utils.policy.defaults import LOAD_DEFAULTS

TOTAL_MIB = 81559


def gpu(used, procs=(), temp=40, power=70, reasons=("gpu_idle",), ecc_unc=0, index=0):
    return {"index": index, "uuid": "GPU-%d" % index, "name": "NVIDIA A100-SXM4-80GB", "pci_bus_id": "00000000:07:00.0",
            "memory_used_mib": used, "memory_total_mib": TOTAL_MIB, "memory_reserved_mib": 0,
            "utilization_pct": 0 if not procs else 30 * len(procs), "temperature_c": temp, "slowdown_c": 87,
            "power_w": power, "power_limit_w": 400, "sm_clock_mhz": 1410, "max_sm_clock_mhz": 1410,
            "throttle_reasons": list(reasons), "ecc_volatile_corrected": 0, "ecc_volatile_uncorrected": ecc_unc,
            "processes": [{"pid": pid, "name": "worker", "used_mib": mib} for pid, mib in procs]}


def measurement(workers, mem=6000, seconds=10, records=None, stderr="", rc=None, ended="stopped", early=None,
                reasons=("gpu_idle",), power=70, xids=(), ecc_unc_end=0):
    procs = [(1000 + n, mem) for n in range(workers)]
    if records is None:
        records = [[2.0, True, 10.0, None, 1], [3.0, True, 12.0, None, 1]] if workers else []
    used = 500 + mem * workers
    samples = [{"t": float(t), "gpus": [gpu(used if workers else 500, procs, power=power,
                                            reasons=reasons if workers else ("gpu_idle",),
                                            ecc_unc=ecc_unc_end if t == seconds - 1 else 0)],
                "pressure": {"cpu_some_avg10": 1.5 * t, "io_some_avg10": 0.0, "memory_some_avg10": None}}
               for t in range(seconds)]
    return {"started_at": 1700000000.0, "seconds": float(seconds),
            "load": {"ended": ended if workers else "not_started", "rc": rc, "early_exit_s": early,
                     "records": list(records), "stderr_tail": stderr, "left_running": []},
            "samples": samples, "kernel": {"xid": [{"xid": number, "pci_bus_id": "00000000:07:00.0"} for number in xids],
                                           "other": []},
            "sampler_errors": []}


def records(latencies, warmup_latency=1000.0, errors=0):
    out = [[0.5, True, warmup_latency, None, 1]]  # inside the warm-up: not judged
    out += [[2.0 + n * 0.01, True, float(value), None, 1] for n, value in enumerate(latencies)]
    out += [[3.0, False, None, "HTTP 503", 1]] * errors
    return out


def definition(**limits):
    result = copy.deepcopy(LOAD_DEFAULTS)
    result.update(duration_sec=8, warmup_sec=2, idle_sec=5)
    result["limits"].update(limits)
    return result


def summary(entry, step, concurrency, warmup=2):
    return loadstep.summarize_step(entry, step, concurrency, 8, warmup)


# --- percentiles and request statistics --------------------------------------------------------------------

def test_percentile_is_nearest_rank():
    values = list(range(1, 101))
    assert loadstep.percentile(values, 50) == 50
    assert loadstep.percentile(values, 95) == 95
    assert loadstep.percentile([7.0], 95) == 7.0
    assert loadstep.percentile([3, 1, 2], 50) == 2
    assert loadstep.percentile([], 95) is None


def test_request_stats_leave_out_the_warm_up_and_count_errors():
    load = {"records": records([10, 20, 30, 40], errors=1)}
    stats = loadstep.request_stats(load, warmup=2, seconds=8)
    assert stats["requests"] == 5 and stats["errors"] == 1
    assert stats["error_pct"] == 20.0
    assert stats["p50_ms"] == 20.0 and stats["p95_ms"] == 40.0  # the 1000 ms warm-up request is not counted
    assert stats["throughput_rps"] == 0.625
    assert stats["error_examples"] == ["HTTP 503"]


def test_interval_records_count_their_requests():
    load = {"records": [[3.0, True, 12.0, None, 50], [4.0, False, None, "timeout", 10]]}
    stats = loadstep.request_stats(load, warmup=0, seconds=10)
    assert stats["requests"] == 60 and stats["errors"] == 10 and stats["throughput_rps"] == 6.0


# --- breaking and layers --------------------------------------------------------------------------------------

def test_a_step_within_every_limit_holds():
    step = summary(measurement(2, records=records([10, 11, 12])), 2, 2)
    verdict = loadstep.judge_step(step, definition()["limits"])
    assert verdict == {"broke": False, "reason": None, "layer": None, "detail": None, "reasons": []}
    assert step["gpus"][0]["memory_used_peak_mib"] == 12500
    assert step["processes"][0] == {"pid": 1000, "name": "worker", "gpu": 0, "used_peak_mib": 6000}
    assert step["pressure"]["cpu_some_avg10"] == 13.5


def test_cuda_out_of_memory_breaks_in_the_workload_layer():
    oom = measurement(12, mem=6500, rc=1, ended="exited", early=3.2,
                      stderr="torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 6.84 GiB.")
    verdict = loadstep.judge_step(summary(oom, 4, 12), definition()["limits"], service_mode=True)
    assert verdict["broke"] and verdict["reason"] == "oom" and verdict["layer"] == "workload"
    assert verdict["detail"] == "CUDA out of memory with 12 workers"
    assert [reason["reason"] for reason in verdict["reasons"]] == ["oom", "memory_headroom", "exit"]


def test_a_new_power_cap_throttle_breaks_in_the_hardware_layer_but_an_idle_one_does_not():
    idle = summary(measurement(0), 0, 0)
    hot = summary(measurement(4, reasons=("sw_power_cap",), power=300), 3, 4)
    verdict = loadstep.judge_step(hot, definition()["limits"], idle=idle)
    assert (verdict["reason"], verdict["layer"]) == ("throttle", "hardware")
    assert verdict["reasons"][0]["throttle_reasons"] == ["sw_power_cap"]
    assert "300 W of 400 W" in verdict["detail"]
    idle_capped = summary(measurement(0), 0, 0)
    idle_capped["gpus"][0]["throttle_reasons"] = ["sw_power_cap"]
    assert not loadstep.judge_step(hot, definition()["limits"], idle=idle_capped)["broke"]


def test_an_xid_takes_its_layer_from_the_catalog():
    knowledge = load_knowledge()
    hardware = loadstep.judge_step(summary(measurement(2, xids=(48,)), 2, 2), definition()["limits"],
                                   knowledge=knowledge)
    assert (hardware["reason"], hardware["layer"]) == ("xid", "hardware")
    assert hardware["reasons"][0]["catalog_layer"] == "hardware"
    driver = loadstep.judge_step(summary(measurement(2, xids=(119,)), 2, 2), definition()["limits"],
                                 knowledge=knowledge)
    assert (driver["reason"], driver["layer"]) == ("xid", "driver")
    assert "Xid 119" in driver["detail"]


def test_an_xid_outranks_the_errors_it_causes():
    entry = measurement(2, xids=(79,), records=records([10], errors=5), rc=1, ended="exited")
    verdict = loadstep.judge_step(summary(entry, 2, 2), definition()["limits"], knowledge=load_knowledge())
    assert verdict["reason"] == "xid"
    assert [reason["reason"] for reason in verdict["reasons"]] == ["xid", "exit", "errors"]


def test_new_ecc_errors_break_and_can_be_switched_off():
    entry = summary(measurement(2, ecc_unc_end=3), 2, 2)
    assert loadstep.judge_step(entry, definition()["limits"])["reason"] == "ecc"
    assert not loadstep.judge_step(entry, definition(new_ecc=False)["limits"])["broke"]


def test_errors_and_latency_limits():
    slow = summary(measurement(4, records=records([100, 200, 900])), 3, 4)
    base = summary(measurement(1, records=records([100, 110, 120])), 1, 1)
    assert loadstep.judge_step(slow, definition(p95_latency_ms=500)["limits"])["reason"] == "latency"
    ratio = loadstep.judge_step(slow, definition(p95_latency_ratio=3)["limits"], baseline=base)
    assert ratio["reason"] == "latency" and "baseline's 120.0 ms" in ratio["detail"]
    failing = summary(measurement(4, records=records([10] * 10, errors=1)), 3, 4)
    assert loadstep.judge_step(failing, definition(error_pct=5)["limits"])["reason"] == "errors"
    assert not loadstep.judge_step(failing, definition(error_pct=10)["limits"])["broke"]


def test_a_load_command_that_prints_nothing_breaks_a_service_need_not_print():
    silent = summary(measurement(2, rc=0, ended="exited", records=()), 2, 2)
    verdict = loadstep.judge_step(silent, definition()["limits"])
    assert verdict["reason"] == "errors" and "printed no result line" in verdict["detail"]
    assert not loadstep.judge_step(silent, definition()["limits"], service_mode=True)["broke"]


def test_temperature_limit_defaults_to_slowdown_less_the_margin():
    entry = summary(measurement(2), 2, 2)
    entry["gpus"][0]["temperature_peak_c"] = 83
    assert loadstep.judge_step(entry, definition()["limits"], margin_c=5)["reason"] == "temperature"
    assert not loadstep.judge_step(entry, definition()["limits"], margin_c=3)["broke"]
    assert loadstep.judge_step(entry, definition(temperature_c=80)["limits"], margin_c=3)["layer"] == "hardware"


def test_no_gpu_samples_is_a_broken_step_not_a_healthy_one():
    entry = measurement(1)
    entry["samples"] = []
    entry["sampler_errors"] = ["nvidia-smi -q -x: exit status 9"]
    verdict = loadstep.judge_step(summary(entry, 1, 1), definition()["limits"])
    assert verdict["reason"] == "sampler" and "exit status 9" in verdict["detail"]


# --- across steps: memory per worker, the cap, the comparison --------------------------------------------------

def analysed(workers_list, mem=6000, break_at=None):
    measured = [{"step": 0, "concurrency": 0, "measurement": measurement(0)}]
    for number, workers in enumerate(workers_list, 1):
        if workers == break_at:
            entry = measurement(workers, mem=mem, rc=1, ended="exited", early=2.0,
                                stderr="RuntimeError: CUDA error: out of memory")
        else:
            entry = measurement(workers, mem=mem)
        measured.append({"step": number, "concurrency": workers, "measurement": entry})
    return loadstep_report.analyse_steps(measured, definition(), knowledge=load_knowledge(), service_mode=True)


def test_memory_per_added_worker_and_the_suggested_cap():
    idle, steps = analysed([1, 2, 4, 8, 12], break_at=12)
    assert not idle["verdict"]["broke"]
    assert [step["memory_per_added_worker_mib"] for step in steps] == [6000.0, 6000.0, 6000.0, 6000.0, 6000.0]
    assert loadstep.broken_step(steps) == {"step": 5, "concurrency": 12, "reason": "oom", "layer": "workload",
                                           "detail": "CUDA out of memory with 12 workers"}
    cap = loadstep.suggest_cap(steps, 10, "inference.service")
    # step 4 (8 workers) held; 6000 MiB per worker: 81559 * 0.9 // 6000 = 12 would fit, so 8 stays
    assert cap["workers_per_gpu"] == 8 and cap["held_step"] == 4 and cap["worker_memory_mib"] == 6000
    assert cap["fragment"] == {"gpufleet_policy_loadstep": {"workload": {"services": {
        "inference.service": {"workers_per_gpu": 8}}}}}


def test_the_cap_keeps_the_headroom_below_the_largest_step_that_held():
    _idle, steps = analysed([1, 2, 4, 8], mem=9500)
    assert not any(step["verdict"]["broke"] for step in steps[:3])
    # 8 x 9500 leaves 6.8% free: step 4 breaks on headroom; 4 held, and 4 x 9500 fits in 90%
    assert steps[3]["verdict"]["reason"] == "memory_headroom"
    assert loadstep.suggest_cap(steps, 10, "x.service")["workers_per_gpu"] == 4
    assert loadstep.suggest_cap(steps, 60, "x.service")["workers_per_gpu"] == 3


def test_no_cap_when_even_the_baseline_broke():
    _idle, steps = analysed([1, 2], break_at=1)
    assert loadstep.suggest_cap(steps, 10, "x.service") is None


def test_comparison_with_the_previous_run():
    idle, before_steps = analysed([1, 2, 4, 8, 12], break_at=4)
    before = loadstep_report.run_entry("h", "s", definition(), idle, before_steps, "complete", {}, 1, 2, "service", [])
    idle, after_steps = analysed([1, 2, 4, 8, 12], break_at=12)
    after = loadstep_report.run_entry("h", "s", definition(), idle, after_steps, "complete", {}, 3, 4, "service", [])
    comparison = loadstep_report.compare_runs(before, after, "reports/x-loadstep")
    assert comparison["verdict"] == "improved"
    assert (comparison["held_before"], comparison["held_now"]) == (2, 8)
    assert [item["concurrency"] for item in comparison["steps"]] == [1, 2, 4, 8, 12]
    assert comparison["steps"][2]["broke_before"] and not comparison["steps"][2]["broke_now"]
    assert loadstep_report.compare_runs(after, before, "r")["verdict"] == "regressed"
    assert loadstep_report.compare_runs(after, after, "r")["verdict"] == "unchanged"


@pytest.mark.parametrize("change,verdict", [(1.0, "unchanged"), (0.8, "regressed")])
def test_throughput_drop_is_a_regression(change, verdict):
    def run(factor):
        measured = [{"step": 0, "concurrency": 0, "measurement": measurement(0)},
                    {"step": 1, "concurrency": 1, "measurement": measurement(
                        1, records=[[3.0, True, 10.0, None, int(100 * factor)]])}]
        idle, steps = loadstep_report.analyse_steps(measured, definition())
        return loadstep_report.run_entry("h", "s", definition(), idle, steps, "complete", {}, 1, 2, "command", [])
    assert loadstep_report.compare_runs(run(1.0), run(change), "r")["verdict"] == verdict
