"""The plan of loadstep.yml (plugin_utils/loadstep/plan.py): the load definition from the policy, the steps that
fit, and the refusals - not allowed, not drained, critical hardware findings, a service that cannot be started."""

from ansible_collections.gpufleet.core.plugins.module_utils.facts_model import new_facts, new_gpu, new_process
from ansible_collections.gpufleet.core.plugins.plugin_utils.loadstep.plan import describe, plan
from ansible_collections.gpufleet.core.plugins.plugin_utils.policy import PolicyError, validate_policy

import pytest


def policy(allowed=True, **load):
    service = {"workers_env": "WORKERS", "load": dict({"duration_sec": 10, "warmup_sec": 2}, **load)}
    return validate_policy({"loadstep": {"allowed": allowed}, "workload": {"services": {"vllm": service}}})


def idle_facts(pids=()):
    facts = new_facts()
    gpu = new_gpu(0)
    gpu["processes"] = [new_process(pid) for pid in pids]
    facts["gpus"] = [gpu]
    facts["nvidia_present"] = True
    facts["collection"]["status"] = "ok"
    return facts


def test_a_drained_allowed_host_gets_the_default_steps():
    result = plan("gpu-01", policy(), "vllm", facts=idle_facts())
    assert result["refusals"] == []
    assert result["service"] == "vllm.service" and result["mode"] == "service" and result["workers_env"] == "WORKERS"
    assert [step["concurrency"] for step in result["steps"]] == [1, 2, 4, 8]
    assert [step["step"] for step in result["steps"]] == [1, 2, 3, 4]
    lines = describe(result)
    assert lines[1] == "step 0: the idle host for 5s"
    assert lines[2] == "step 1: concurrency 1 for 10s after 2s of warm-up"


def test_each_refusal_is_named():
    findings = [{"host": "gpu-01", "rule": "hardware.xid_critical", "layer": "hardware", "severity": "critical"},
                {"host": "gpu-01", "rule": "driver.pin", "layer": "driver", "severity": "critical"},
                {"host": "gpu-02", "rule": "hardware.ecc", "layer": "hardware", "severity": "critical"}]
    result = plan("gpu-01", policy(allowed=False), "vllm", facts=idle_facts([4242]), findings=findings,
                  service_active=True)
    refusals = result["refusals"]
    assert len(refusals) == 4
    assert "loadstep.allowed" in refusals[0]
    assert "(hardware.xid_critical)" in refusals[1] and "driver.pin" not in refusals[1]
    assert "1 processes use the GPUs (pids 4242)" in refusals[2]
    assert "vllm.service is running" in refusals[3]
    assert describe(result)[0].startswith("gpu-01: refused: the policy does not allow")


def test_a_host_nothing_may_act_on_is_refused_first_and_whatever_else_holds():
    reason = "its facts are replayed from a recorded fixture (gpufleet_facts_source=replay), not read from a machine"
    result = plan("gpu-01", policy(), "vllm", facts=idle_facts(), acting_refusal=reason)
    assert result["refusals"] == [reason] and result["steps"]
    # a load definition the policy check refuses: the acting refusal still comes first
    broken = plan("gpu-01", policy(), "vllm", overrides={"steps": "many"}, acting_refusal=reason)
    assert broken["refusals"][0] == reason and len(broken["refusals"]) == 2
    assert describe(result) == ["gpu-01: refused: " + reason]


def test_unknown_gpu_processes_are_not_drained():
    facts = idle_facts()
    facts["collection"]["status"] = "failed"
    facts["gpus"] = []
    result = plan("gpu-01", policy(), "vllm", facts=facts)
    assert any("could not be read" in reason for reason in result["refusals"])


def test_a_service_without_a_worker_setting_needs_a_load_command():
    bare = validate_policy({"loadstep": {"allowed": True}, "workload": {"services": {"triton": {}}}})
    result = plan("gpu-01", bare, "triton", facts=idle_facts())
    assert result["refusals"] == ["triton.service sets neither workers_env nor workers_arg, so it cannot be "
                                  "started with N workers: set load.command"]
    given = plan("gpu-01", bare, "triton", facts=idle_facts(), overrides={"command": "loadgen -c {concurrency}"})
    assert given["refusals"] == [] and given["mode"] == "command"


def test_steps_are_cut_by_max_concurrency_and_the_total_time():
    result = plan("gpu-01", policy(max_concurrency=4, total_timeout_sec=80), "vllm", facts=idle_facts())
    # 80 s - 5 s idle - 15 s overhead = 60 s: two steps of 10 + 2 + 15 s fit
    assert [step["concurrency"] for step in result["steps"]] == [1, 2]
    assert result["left_out"] == [{"concurrency": 4, "why": "does not fit in load.total_timeout_sec"},
                                  {"concurrency": 8, "why": "above load.max_concurrency"}]


def test_overrides_are_checked_like_the_policy():
    result = plan("gpu-01", policy(), "vllm", facts=idle_facts(), overrides={"steps": "many", "duraton_sec": 3})
    assert result["steps"] == [] and len(result["refusals"]) == 1
    assert "steps: must be a list" in result["refusals"][0]
    assert "duraton_sec: unknown key" in result["refusals"][0]


def test_the_policy_rejects_bad_load_keys():
    with pytest.raises(PolicyError) as error:
        validate_policy({"workload": {"services": {"vllm": {"load": {"steps": [4, 2], "limits": {
            "throttle_reasons": ["sw_power_capp"]}}}}}})
    text = str(error.value)
    assert "did you mean 'sw_power_cap'" in text
    with pytest.raises(PolicyError) as error:
        validate_policy({"workload": {"services": {"vllm": {"load": {"steps": [4, 2]}}}}})
    assert "must rise step by step" in str(error.value)


class LazyLoadDefinition(dict):
    """Stands for ansible's lazy container of a templated policy: deep-copying one copies the templar with it
    (and its plugin loaders: ansible-core 2.21 prints a deprecation warning for each loader copied)."""

    def __deepcopy__(self, memo):
        raise AssertionError("the load definition was deep-copied with its templar")


def test_the_load_definition_is_copied_as_plain_data_not_deep_copied():
    checked = policy()
    entry = checked["workload"]["services"][0]
    entry["load"] = LazyLoadDefinition(entry["load"])
    result = plan("gpu-01", checked, "vllm", facts=idle_facts())
    assert not isinstance(result["definition"], LazyLoadDefinition) and result["definition"] == dict(entry["load"])
    assert result["definition"]["duration_sec"] == 10
