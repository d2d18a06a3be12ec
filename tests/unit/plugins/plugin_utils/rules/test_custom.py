"""Custom rules: JMESPath over the host facts or over each GPU (with the host's facts under host_facts)."""

from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.diagnose import build_plan, rules_run
from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.custom import HOST_FACTS_KEY, is_truthy
from tests.support.rule_builders import findings_of, healthy_node, policy
from tests.support.rule_builders import custom


def test_host_rule_on_the_driver_version():
    the_policy = policy(custom_rules=[custom("old_driver", "driver.version == '550.54.15'")])
    facts = healthy_node(driver="550.54.15")
    found = findings_of(facts, "custom.old_driver", the_policy)
    assert len(found) == 1 and found[0]["layer"] == "driver" and found[0]["gpu"] is None
    assert found[0]["evidence"]["result"] is True
    assert findings_of(healthy_node(driver="550.90.07"), "custom.old_driver", the_policy) == []


def test_gpu_rule_reads_the_gpu_and_the_host_facts():
    expression = "temperature.gpu_c > `80` && %s.driver.version == '550.90.07'" % HOST_FACTS_KEY
    the_policy = policy(custom_rules=[custom("hot_on_550", expression, scope="gpu", layer="hardware",
                                             severity="critical")])
    facts = healthy_node()
    facts["gpus"][3]["temperature"]["gpu_c"] = 81
    found = findings_of(facts, "custom.hot_on_550", the_policy)
    assert [f["gpu"] for f in found] == ["0000:5d:00.0"] and found[0]["severity"] == "critical"
    assert "GPU 3 (0000:5d:00.0" in found[0]["summary"]
    facts["gpus"][3]["temperature"]["gpu_c"] = 80
    assert findings_of(facts, "custom.hot_on_550", the_policy) == []


def test_rule_result_is_the_evidence():
    the_policy = policy(custom_rules=[custom("busy", "gpus[?utilization.gpu_pct > `90`].pci_bus_id")])
    facts = healthy_node(gpus=2)
    facts["gpus"][1]["utilization"]["gpu_pct"] = 40
    assert findings_of(facts, "custom.busy", the_policy)[0]["evidence"]["result"] == ["0000:18:00.0"]
    facts["gpus"][0]["utilization"]["gpu_pct"] = 40
    assert findings_of(facts, "custom.busy", the_policy) == []


def test_jmespath_truth():
    assert [is_truthy(v) for v in (None, False, "", [], {})] == [False] * 5
    assert [is_truthy(v) for v in (0, "x", [0], {"a": 1}, True)] == [True] * 5


def test_custom_rules_are_compiled_once_per_policy_and_listed():
    the_policy = policy(custom_rules=[custom("one", "driver.version"), custom("two", "gpus[0].name", scope="gpu")])
    plan = build_plan(the_policy)
    assert [c.id for c in plan.custom] == ["custom.one", "custom.two"]
    assert "custom.one" in rules_run([the_policy]) and "hardware.xid" in rules_run([the_policy])


def test_host_rules_run_on_a_host_without_nvidia():
    from tests.support.rule_builders import mismatched_node
    the_policy = policy(custom_rules=[custom("mismatch", "driver.mismatch")])
    assert len(findings_of(mismatched_node(), "custom.mismatch", the_policy)) == 1


def test_expression_failing_at_run_time_is_an_info_finding():
    the_policy = policy(custom_rules=[custom("bad_type", "abs(driver.version)")])
    (finding,) = findings_of(healthy_node(), "custom.bad_type", the_policy)
    assert finding["severity"] == "info" and "abs" in finding["evidence"]["error"]
