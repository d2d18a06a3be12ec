"""Rules on the workload and host_pressure facts, each with a case that triggers it and one that does not."""

import copy

from ansible_collections.gpufleet.core.plugins.module_utils.host_pressure import utilization_record
from ansible_collections.gpufleet.core.plugins.module_utils.workload_facts import new_service
from ansible_collections.gpufleet.core.plugins.module_utils.facts_model import new_process
from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.diagnose import diagnose_fleet
from tests.support.rule_builders import KNOWLEDGE, findings_of, healthy_node, only, policy

UNIT = "vllm.service"
OOM = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.10 GiB"


def node_with(service, gpus=2, driver="550.90.07"):
    facts = healthy_node(gpus=gpus, driver=driver)
    facts["gather_subset"] = facts["gather_subset"] + ["workload"]
    facts["workload"] = {"window_hours": 72, "services": [service], "left_out": 0, "oom_kills_elsewhere": 0}
    return facts


def running(unit=UNIT, **changes):
    service = new_service(unit, ["policy", "gpu_process"])
    service.update(load_state="loaded", active_state="active", sub_state="running", result="success", restarts=0,
                   main_pid=40210, user="svc-llm")
    service["journal"].update(status="read", entries=1200)
    service["frameworks"].update(status="read", interpreter="/opt/venv/bin/python3", python="3.10.12", reason=None,
                                 packages=[{"name": "torch", "version": "2.5.1+cu124", "cuda": "12.4",
                                            "cudnn": "9.1.0.70", "nccl": "2.21.5"}])
    service["oom_kills"]["read"] = True
    service.update(changes)
    return service


def process_on(gpu_index, pid, used=20000, environment=None):
    return {"pid": pid, "name": "python3", "gpu_index": gpu_index, "gpu_uuid": None, "used_memory_mib": used,
            "environment": {"CUDA_VISIBLE_DEVICES": str(gpu_index)} if environment is None else environment,
            "environment_unreadable": None}


def share_gpu0(facts, pids=(40210, 40211, 40212)):
    """Several workers of the service on GPU 0, as the GPU facts list them."""
    gpu = facts["gpus"][0]
    gpu["processes"] = []
    for pid in pids:
        process = new_process(pid)
        process.update(name="python3", type="compute", used_memory_mib=24000)
        gpu["processes"].append(process)
    facts["workload"]["services"][0]["processes"] = [process_on(0, pid, 24000) for pid in pids]
    return facts


def with_oom(service, count=3):
    line = {"time": "2026-11-30T05:12:00Z", "pid": 40211, "message": OOM}
    service["journal"]["matches"]["cuda_oom"] = {"count": count, "first": line, "last": line}
    return service


def services_policy(**service):
    return policy(workload={"services": {UNIT: service}})


# ---------------------------------------------------------------- OOM while several processes share the GPU

def test_an_oom_while_three_processes_share_the_gpu():
    facts = share_gpu0(node_with(with_oom(running())))
    finding = only(facts, "workload.oom_shared_gpu")
    assert finding["severity"] == "critical" and finding["gpu"] == "0000:18:00.0"
    assert finding["evidence"]["processes"] == 3 and finding["evidence"]["used_mib"] == 72000
    assert [item["unit"] for item in finding["evidence"]["held"]] == [UNIT] * 3
    assert "3 processes share GPU 0" in finding["summary"] and "40211 24000 MiB" in finding["summary"]


def test_a_kernel_oom_kill_counts_as_well():
    service = running()
    service["oom_kills"] = {"count": 1, "read": True, "events": [
        {"time": "2026-11-30T05:00:00Z", "pid": 40299, "process": "python3", "cgroup": "/system.slice/vllm.service",
         "limit_cgroup": "/system.slice/vllm.service", "constraint": "memcg", "anon_rss_kib": 6000000}]}
    finding = only(share_gpu0(node_with(service)), "workload.oom_shared_gpu")
    assert finding["evidence"]["kernel_oom_kills"] == 1


def test_an_oom_of_a_process_alone_on_its_gpu_is_not_this_rule():
    facts = node_with(with_oom(running(processes=[process_on(0, 40210)])))
    assert findings_of(facts, "workload.oom_shared_gpu") == []


def test_no_oom_no_finding_even_when_shared():
    assert findings_of(share_gpu0(node_with(running())), "workload.oom_shared_gpu") == []


def test_a_crashed_service_is_placed_by_its_policy_gpus():
    facts = node_with(with_oom(running(processes=[])))
    for pid in (50001, 50002):
        process = new_process(pid)
        process.update(name="other", type="compute", used_memory_mib=30000)
        facts["gpus"][1]["processes"].append(process)
    finding = only(facts, "workload.oom_shared_gpu", services_policy(gpus=[1]))
    assert finding["gpu"] == "0000:2a:00.0" and finding["evidence"]["processes"] == 3


# ---------------------------------------------------------------- crash loop

def test_a_crash_loop_while_down_is_critical():
    service = with_oom(running(active_state="activating", sub_state="auto-restart", restarts=7, result="exit-code",
                               last_exit={"code": "exited", "status": 1, "signal": None}))
    finding = only(node_with(service), "workload.crash_loop")
    assert finding["severity"] == "critical"
    assert finding["summary"] == ("vllm.service is in a crash loop: 7 restarts, last exit with status 1, "
                                  "now activating/auto-restart")
    assert finding["evidence"]["journal_failures"]["cuda_oom"] == 3
    assert OOM in finding["evidence"]["last_lines"][0]


def test_a_start_limit_hit_is_a_crash_loop_even_with_few_restarts():
    service = running(active_state="failed", sub_state="failed", restarts=1, result="start-limit-hit",
                      last_exit={"code": "killed", "status": None, "signal": "KILL"})
    finding = only(node_with(service), "workload.crash_loop")
    assert "by signal KILL" in finding["summary"] and "gave up" in finding["summary"]


def test_a_few_restarts_below_the_limit_are_no_crash_loop():
    facts = node_with(running(restarts=2))
    assert findings_of(facts, "workload.crash_loop") == []
    assert only(facts, "workload.crash_loop", policy(workload={"crash_loop_restarts": 2}))["severity"] == "warning"


# ---------------------------------------------------------------- framework CUDA against the driver

def test_a_framework_built_for_a_newer_cuda_major_than_the_driver_runs():
    finding = only(node_with(running(), driver="470.256.02"), "workload.framework_cuda_unsupported")
    assert finding["severity"] == "critical" and finding["fix"] == "driver"
    assert finding["evidence"]["support"] == "unsupported"
    assert finding["evidence"]["min_driver"] == KNOWLEDGE.cuda_min_driver("12.4")
    assert finding["summary"].startswith("vllm.service runs torch 2.5.1+cu124 built for CUDA 12.4: CUDA 12.4 needs")


def test_an_older_driver_of_the_same_major_runs_it_with_minor_version_compatibility():
    service = running()
    service["frameworks"]["packages"][0].update(version="2.4.0+cu118", cuda="11.8")
    finding = only(node_with(service, driver="470.256.02"), "workload.framework_cuda_unsupported")
    assert finding["evidence"]["support"] == "minor_compat" and finding["severity"] == "warning"


def test_a_framework_that_runs_only_with_minor_version_compatibility():
    service = running()
    service["frameworks"]["packages"][0].update(version="2.7.0+cu128", cuda="12.8")
    finding = only(node_with(service, driver="550.90.07"), "workload.framework_cuda_unsupported")
    assert finding["severity"] == "warning" and finding["evidence"]["support"] == "minor_compat"
    assert "minor-version compatibility" in finding["summary"]


def test_a_framework_the_driver_supports_or_a_cpu_build():
    facts = node_with(running(), driver="550.90.07")
    assert findings_of(facts, "workload.framework_cuda_unsupported") == []
    facts["workload"]["services"][0]["frameworks"]["packages"][0]["cuda"] = None
    assert findings_of(facts, "workload.framework_cuda_unsupported", now=None) == []
    assert KNOWLEDGE.cuda_support("550.90.07", "12.4")[0] == "full"


# ---------------------------------------------------------------- framework builds across a group

def test_a_host_whose_framework_differs_from_its_group():
    hosts = {}
    for name, version in (("a", "2.5.1+cu124"), ("b", "2.5.1+cu124"), ("c", "2.3.0+cu121")):
        service = running()
        service["frameworks"]["packages"][0].update(version=version, cuda=version[-3:-1] + "." + version[-1])
        hosts[name] = node_with(service)
    findings = diagnose_fleet(hosts, {}, KNOWLEDGE, groups={"inference": ["a", "b", "c"]})
    skew = [(host, f["summary"]) for host, found in findings.items() for f in found
            if f["rule"] == "workload.framework_skew"]
    assert skew == [("c", "vllm.service runs torch 2.3.0+cu121 (CUDA 12.1); most hosts of inference run "
                          "2.5.1+cu124 (CUDA 12.4)")]


def test_one_build_across_the_group_is_no_skew():
    hosts = dict((name, node_with(running())) for name in ("a", "b"))
    findings = diagnose_fleet(hosts, {}, KNOWLEDGE, groups={"inference": ["a", "b"]})
    assert not [f for found in findings.values() for f in found if f["rule"] == "workload.framework_skew"]


# ---------------------------------------------------------------- GPUs other than the policy's

def test_processes_on_gpus_the_policy_did_not_give_the_service():
    facts = node_with(running(processes=[process_on(0, 40210), process_on(1, 40211)]))
    finding = only(facts, "workload.wrong_gpus", services_policy(gpus=[0]))
    assert finding["summary"] == "vllm.service runs 1 processes on GPU 1; its policy gives it GPU 0"
    assert finding["evidence"]["processes"] == [{"pid": 40211, "gpu": 1, "CUDA_VISIBLE_DEVICES": "1"}]


def test_processes_on_their_policy_gpus_or_all():
    facts = node_with(running(processes=[process_on(0, 40210), process_on(1, 40211)]))
    assert findings_of(facts, "workload.wrong_gpus", services_policy(gpus=[0, 1])) == []
    assert findings_of(facts, "workload.wrong_gpus", services_policy(gpus="all")) == []


# ---------------------------------------------------------------- allocator settings

def test_a_process_without_the_allocator_setting_the_policy_asks_for():
    processes = [process_on(0, 40210, environment={"CUDA_VISIBLE_DEVICES": "0"}),
                 process_on(1, 40211, environment={"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"})]
    facts = node_with(running(processes=processes))
    finding = only(facts, "workload.alloc_conf_missing", services_policy(alloc_conf="expandable_segments:True"))
    assert finding["evidence"]["processes"] == [{"pid": 40210, "missing": ["expandable_segments"], "has": {}}]


def test_processes_with_the_setting_or_unread_environ_are_not_reported():
    processes = [process_on(0, 40210, environment={"PYTORCH_ALLOC_CONF": "max_split_size_mb:512,expandable_segments:true"}),
                 dict(process_on(1, 40211), environment=None, environment_unreadable="not root")]
    facts = node_with(running(processes=processes))
    assert findings_of(facts, "workload.alloc_conf_missing", services_policy(alloc_conf="expandable_segments:True")) == []
    assert findings_of(facts, "workload.alloc_conf_missing") == []


# ---------------------------------------------------------------- GPUs idle while the host is starved

def pressured(facts, cpu_pct, gpu_pcts, io_pct=0.5, measured=True):
    facts = copy.deepcopy(facts)
    facts["gather_subset"] = facts["gather_subset"] + ["host_pressure"]

    def resource(pct):
        return {"some_pct": pct if measured else None, "full_pct": 0.0, "some_avg10": pct, "some_avg60": pct,
                "full_avg10": 0.0, "full_avg60": 0.0}
    facts["host_pressure"] = {
        "sample_seconds": 3.0 if measured else 0.0, "cpus": 96,
        "load": {"avg1": 180.0, "avg5": 170.0, "avg15": 120.0, "per_core_avg1": 1.88},
        "memory": {"total_mib": 2063938.0, "available_mib": 1031969.0, "available_pct": 50.0},
        "swap": {"total_mib": 0.0, "free_mib": 0.0, "pages_in_per_s": 0.0, "pages_out_per_s": 0.0},
        "pressure": {"cpu": resource(cpu_pct), "memory": resource(0.0), "io": resource(io_pct)},
        "gpu_utilization": utilization_record([dict(enumerate(gpu_pcts))]),
        "gpu_utilization_source": "nvidia-smi"}
    return facts


def test_gpus_idle_while_the_cpus_are_starved():
    finding = only(pressured(healthy_node(gpus=2), 71.5, [12, 9]), "workload.input_bound")
    assert finding["summary"] == ("GPUs with work are 10% busy on average while CPU pressure is high (CPU 71.5%, "
                                  "I/O 0.5%): the GPUs wait for input")
    assert finding["layer"] == "workload"


def test_io_pressure_from_the_kernels_average_when_the_sample_measured_nothing():
    finding = only(pressured(healthy_node(gpus=2), 3.0, [5, 8], io_pct=44.0, measured=False), "workload.input_bound")
    assert finding["evidence"]["io_pressure_pct"] == 44.0


def test_busy_gpus_or_a_calm_host_or_gpus_without_work():
    assert findings_of(pressured(healthy_node(gpus=2), 71.5, [96, 97]), "workload.input_bound") == []
    assert findings_of(pressured(healthy_node(gpus=2), 4.0, [10, 10]), "workload.input_bound") == []
    idle = healthy_node(gpus=2)
    for gpu in idle["gpus"]:
        gpu["processes"] = []
    assert findings_of(pressured(idle, 71.5, [0, 0]), "workload.input_bound") == []
    assert only(pressured(healthy_node(gpus=2), 30.0, [10, 10]), "workload.input_bound",
                policy(host_pressure={"cpu_pressure_pct": 30}))
