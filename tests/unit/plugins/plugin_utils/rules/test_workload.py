"""Workload-layer rules: processes per GPU, memory close to full under concurrency, restart policy."""

from tests.support.rule_builders import findings_of, healthy_node, only, policy, service
from tests.support.rule_builders import crowded_l40s_node, workers


def test_more_processes_than_the_policy_limit():
    facts = crowded_l40s_node()
    finding = only(facts, "workload.gpu_oversubscribed", policy(workload={"max_processes_per_gpu": 4}))
    assert finding["gpu"] == "0000:01:00.0" and finding["fix"] == "worker_limits"
    assert finding["evidence"]["processes"] == 12 and finding["evidence"]["limit"] == 4


def test_limit_from_the_services_workers_per_gpu():
    facts = crowded_l40s_node()
    the_policy = policy(workload={"services": [{"name": "triton", "workers_per_gpu": 2}]})
    finding = only(facts, "workload.gpu_oversubscribed", the_policy)
    assert finding["evidence"]["limit_from"] == "workers_per_gpu of workload.services"


def test_within_the_limit_or_without_one_is_quiet():
    facts = crowded_l40s_node()
    assert findings_of(facts, "workload.gpu_oversubscribed") == []
    assert findings_of(facts, "workload.gpu_oversubscribed", policy(workload={"max_processes_per_gpu": 12})) == []


def test_graphics_processes_do_not_count():
    facts = crowded_l40s_node()
    facts["gpus"][1]["processes"] += workers(3, 12, first_pid=2100, name="/usr/lib/xorg/Xorg", kind="graphics")
    assert findings_of(facts, "workload.gpu_oversubscribed", policy(workload={"max_processes_per_gpu": 2}))[0]["gpu"] \
        == "0000:01:00.0"


def test_memory_near_full_with_12_workers_is_critical():
    finding = only(crowded_l40s_node(), "workload.memory_near_full")
    assert finding["severity"] == "critical" and finding["fix"] == "worker_limits"
    assert finding["evidence"]["used_pct"] == 97.8 and finding["evidence"]["processes"] == 12
    assert "45072 of 46068 MiB" in finding["summary"]


def test_memory_near_full_with_one_process_is_info_and_without_a_process_a_warning():
    facts = healthy_node()
    facts["gpus"][0]["memory"].update(used_mib=79800, free_mib=1759)
    facts["gpus"][1]["memory"].update(used_mib=79800, free_mib=1759)
    facts["gpus"][1]["processes"] = []
    found = {f["gpu"]: f["severity"] for f in findings_of(facts, "workload.memory_near_full")}
    assert found == {"0000:18:00.0": "info", "0000:2a:00.0": "warning"}


def test_memory_below_the_threshold_is_quiet():
    assert findings_of(crowded_l40s_node(), "workload.memory_near_full", policy(thresholds={"memory_used_pct": 98})) == []


def test_gpu_service_without_restart_policy():
    facts = crowded_l40s_node()
    facts["host"]["services"]["triton.service"] = service("triton.service", restart="no")
    the_policy = policy(workload={"services": [{"name": "triton"}]})
    finding = only(facts, "workload.restart_policy", the_policy)
    assert finding["fix"] == "restart_policy" and finding["evidence"]["service"] == "triton.service"
    the_policy = policy(workload={"services": [{"name": "triton"}], "restart_policy_required": False})
    assert findings_of(facts, "workload.restart_policy", the_policy) == []


def test_service_with_restart_policy_or_absent_is_quiet():
    facts = crowded_l40s_node()
    facts["host"]["services"]["triton"] = service("triton", restart="on-failure")
    the_policy = policy(workload={"services": [{"name": "triton"}, {"name": "vllm"}]})
    assert findings_of(facts, "workload.restart_policy", the_policy) == []
