"""The gpufleet policy: defaults, merging of inventory fragments, every validation error, error locations,
and the fleet check that deduplicates problems."""

import copy
import os
import re

import jmespath
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.gpufleet.core.plugins.module_utils.facts_model import new_facts, new_gpu
from ansible_collections.gpufleet.core.plugins.plugin_utils import policy as P
from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.mig_config import load_mig_parted_config
from ansible_collections.gpufleet.core.plugins.plugin_utils.policy import fleet as policy_fleet
from ansible_collections.gpufleet.core.plugins.plugin_utils.policy import (
    DEFAULT_POLICY, FleetPolicies, PolicyError, Problem, validate_fragments, validate_policy)
from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.custom import compile_custom_rules
from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.workload import worker_limit
from tests.support.corpus import reference_path
from tests.support.schema_check import ROOT

MIG_DOC = {
    "version": "v1",
    "mig-configs": {
        "all-disabled": [{"devices": "all", "mig-enabled": False}],
        "all-3g.40gb": [{"devices": "all", "mig-enabled": True, "mig-devices": {"3g.40gb": 2}}],
    },
}


def problems_of(policy, where="gpufleet_policy"):
    with pytest.raises(PolicyError) as caught:
        validate_policy(policy, where)
    return str(caught.value).splitlines()


def leaf_paths(tree, prefix=()):
    for key, value in tree.items():
        if key == "catalogs":
            continue
        if isinstance(value, dict) and value:
            yield from leaf_paths(value, prefix + (key,))
        else:
            yield prefix + (key,)


# --- defaults ----------------------------------------------------------------------------------------------

def test_no_policy_gives_the_defaults():
    assert validate_policy(None) == validate_policy({})
    effective = validate_policy({})
    assert effective["thresholds"] == DEFAULT_POLICY["thresholds"]
    assert effective["report"] == {"fail_severity": "critical", "accept_unreachable": False}
    assert effective["persistence_mode"] is True
    assert effective["workload"]["services"] == [] and effective["custom_rules"] == []
    assert set(effective) == set(DEFAULT_POLICY)


def test_defaults_pass_their_own_validation_unchanged():
    assert validate_policy(copy.deepcopy(DEFAULT_POLICY)) == validate_policy({})


def test_every_default_key_is_documented():
    doc = open(os.path.join(ROOT, "docs", "policy.md"), encoding="utf-8").read()
    keys = [".".join(path) for path in leaf_paths(DEFAULT_POLICY)]
    keys += ["catalogs." + table for table in P.CATALOG_TABLES]
    keys += [key for key in P.SERVICE_DEFAULTS if key != "mps"] + ["mps." + key for key in P.SERVICE_DEFAULTS["mps"]]
    keys += list(P.CUSTOM_RULE_DEFAULTS) + list(P.CUSTOM_RULE_REQUIRED) + ["name"]
    missing = [key for key in keys if "`%s`" % key not in doc]
    assert missing == []


def test_documented_defaults_match_the_code():
    doc = open(os.path.join(ROOT, "docs", "policy.md"), encoding="utf-8").read()
    rows = dict(re.findall(r"^\| `([a-z_.]+)` \| ([^|]+) \|", doc, re.M))
    assert rows["thresholds.memory_used_pct"].strip() == str(DEFAULT_POLICY["thresholds"]["memory_used_pct"])
    assert rows["thresholds.xid_window_hours"].strip() == str(DEFAULT_POLICY["thresholds"]["xid_window_hours"])
    assert rows["restart_sec"].strip() == str(P.SERVICE_DEFAULTS["restart_sec"])
    assert rows["report.fail_severity"].strip() == "`critical`"
    assert rows["workload.restart_policy_required"].strip() == "true"


# --- merging -----------------------------------------------------------------------------------------------

def test_merge_keeps_defaults_beside_what_is_set_and_never_changes_the_input():
    policy = {"thresholds": {"memory_used_pct": 80}, "driver": {"pin": "550.90.07"}}
    before = copy.deepcopy(policy)
    effective = validate_policy(policy)
    assert policy == before
    assert effective["thresholds"]["memory_used_pct"] == 80
    assert effective["thresholds"]["temperature_margin_c"] == 5
    assert {key: effective["driver"][key] for key in ("pin", "branch", "allow_skew")} == {
        "pin": "550.90.07", "branch": None, "allow_skew": False}
    assert effective["driver"]["rollout"] == DEFAULT_POLICY["driver"]["rollout"]
    effective["thresholds"]["memory_used_pct"] = 1
    assert DEFAULT_POLICY["thresholds"]["memory_used_pct"] == 92


def test_result_is_plain_data():
    class Tagged(str):
        pass
    effective = validate_policy({"driver": {"pin": Tagged("550.90.07")}})
    assert isinstance(effective["driver"]["pin"], str) and not isinstance(effective["driver"]["pin"], Tagged)


def test_fragments_merge_in_sorted_name_order_after_the_base():
    variables = {
        "gpufleet_policy_20_host": {"thresholds": {"memory_used_pct": 70}},
        "gpufleet_policy": {"thresholds": {"memory_used_pct": 90, "temperature_margin_c": 8}},
        "gpufleet_policy_10_a100": {"thresholds": {"memory_used_pct": 80}, "compute_mode": "exclusive_process"},
        "gpufleet_report_dir": "reports",
        "gpufleet_policy_": {"thresholds": {"memory_used_pct": 1}},
    }
    assert [name for name, _value in P.collect_fragments(variables)] == [
        "gpufleet_policy", "gpufleet_policy_10_a100", "gpufleet_policy_20_host"]
    effective = P.policy_from_vars(variables)
    assert effective["thresholds"]["memory_used_pct"] == 70
    assert effective["thresholds"]["temperature_margin_c"] == 8
    assert effective["compute_mode"] == "exclusive_process"


def test_lists_replace_and_null_sections_change_nothing():
    effective = validate_fragments([
        ("gpufleet_policy", {"cuda": {"toolkits_required": ["12.4", "11.8"]}, "thresholds": {"xid_window_hours": 24}}),
        ("gpufleet_policy_b", {"cuda": {"toolkits_required": ["12.6"]}, "thresholds": None}),
    ])
    assert effective["cuda"]["toolkits_required"] == ["12.6"]
    assert effective["thresholds"]["xid_window_hours"] == 24


def test_explicit_null_switches_a_setting_off():
    effective = validate_fragments([
        ("gpufleet_policy", {"persistence_mode": True, "mig": {"config": MIG_DOC, "selected": "all-3g.40gb"}}),
        ("gpufleet_policy_cpu", {"persistence_mode": None, "mig": {"config": None, "selected": None}}),
    ])
    assert effective["persistence_mode"] is None
    assert effective["mig"]["config"] is None and effective["mig"]["selected"] is None


def test_services_merge_by_name_in_list_or_mapping_form():
    effective = validate_fragments([
        ("gpufleet_policy", {"workload": {"services": [
            {"name": "vllm", "workers_per_gpu": 2, "workers_env": "NUM_WORKERS"},
            {"name": "triton.service", "workers_per_gpu": 1}]}}),
        ("gpufleet_policy_h100", {"workload": {"services": {"vllm": {"workers_per_gpu": 4},
                                                            "embedder": {"gpus": [7]}}}}),
    ])
    services = {service["name"]: service for service in effective["workload"]["services"]}
    assert list(services) == ["vllm.service", "triton.service", "embedder.service"]
    assert services["vllm.service"]["workers_per_gpu"] == 4
    assert services["vllm.service"]["workers_env"] == "NUM_WORKERS"
    assert services["embedder.service"]["gpus"] == [7]
    assert services["embedder.service"]["restart"] == "on-failure"
    assert services["triton.service"]["restart_sec"] == 10


def test_an_empty_named_list_clears_the_entries():
    effective = validate_fragments([
        ("gpufleet_policy", {"workload": {"services": {"vllm": {}}}, "custom_rules": {
            "hot": {"layer": "hardware", "expression": "temperature.gpu_c", "summary": "s", "action": "a"}}}),
        ("gpufleet_policy_lab", {"workload": {"services": []}, "custom_rules": None}),
    ])
    assert effective["workload"]["services"] == []
    assert effective["custom_rules"] == []


def test_custom_rule_severity_changed_by_a_group():
    rule = {"name": "hot", "layer": "hardware", "scope": "gpu", "expression": "temperature.gpu_c > `80`",
            "summary": "GPU hot", "action": "Check cooling."}
    effective = validate_fragments([("gpufleet_policy", {"custom_rules": [rule]}),
                                    ("gpufleet_policy_dev", {"custom_rules": {"hot": {"severity": "info"}}})])
    assert effective["custom_rules"] == [dict(rule, severity="info", fix=None)]


def test_validation_is_idempotent():
    policy = {"workload": {"services": {"vllm": {"workers_per_gpu": 2}}},
              "custom_rules": [{"name": "x", "layer": "driver", "expression": "driver.version", "summary": "s",
                                "action": "a"}],
              "mig": {"config": MIG_DOC, "selected": "all-3g.40gb"}, "driver": {"branch": 550}}
    effective = validate_policy(policy)
    assert validate_policy(effective) == effective
    assert effective["driver"]["branch"] == "550"


def test_a_single_mig_config_is_selected_without_naming_it():
    document = {"version": "v1", "mig-configs": {"all-1g.10gb": MIG_DOC["mig-configs"]["all-3g.40gb"]}}
    assert validate_policy({"mig": {"config": document}})["mig"]["selected"] == "all-1g.10gb"
    assert validate_policy({"mig": {"config": MIG_DOC}})["mig"]["selected"] is None


# --- every validation error --------------------------------------------------------------------------------

@pytest.mark.parametrize("policy, expected", [
    ({"thresholds": {"memory_used_pct": "high"}},
     "gpufleet_policy.thresholds.memory_used_pct: must be a number between 1 and 100, got 'high'"),
    ({"thresholds": {"memory_used_pct": 101}}, "must be a number between 1 and 100, got 101"),
    ({"thresholds": {"memory_used_pct": True}}, "must be a number between 1 and 100, got true"),
    ({"thresholds": {"temperature_margin_c": 2.5}},
     "thresholds.temperature_margin_c: must be a whole number between 0 and 60, got 2.5"),
    ({"thresholds": {"pcie_replay_warning": -1}}, "thresholds.pcie_replay_warning: must be a whole number 0 or more"),
    ({"thresholds": {"xid_window_hours": 0}}, "between 1 and 8760, got 0"),
    ({"thresholds": {"vbios_mismatch": "yes please"}},
     "thresholds.vbios_mismatch: must be true or false, got 'yes please'"),
    ({"thresholds": {"retired_pages_warning": 50, "retired_pages_critical": 40}},
     "thresholds.retired_pages_critical: must not be below thresholds.retired_pages_warning (50), got 40"),
    ({"thresholds": {"memory_usedpct": 90}},
     "gpufleet_policy.thresholds.memory_usedpct: unknown key (did you mean 'memory_used_pct'?); allowed keys: "),
    ({"drver": {"pin": "550.90.07"}}, "gpufleet_policy.drver: unknown key (did you mean 'driver'?)"),
    ({"zzz": 1}, "gpufleet_policy.zzz: unknown key; allowed keys: catalogs, compute_mode,"),
    ({"thresholds": [90]}, "gpufleet_policy.thresholds: must be a mapping, got a list"),
    ({"driver": {"pin": "latest"}},
     "driver.pin: must be null or a driver version such as '550.90.07', got 'latest'"),
    ({"driver": {"pin": 550.9}}, "got 550.9 (YAML read it as a number: quote it, e.g. '550.90')"),
    ({"driver": {"branch": "r550"}}, "driver.branch: must be null or a driver branch such as '550', got 'r550'"),
    ({"driver": {"pin": "535.154.05", "branch": "550"}}, "driver.pin: '535.154.05' is not on driver.branch '550'"),
    ({"driver": {"allow_skew": "no"}}, "driver.allow_skew: must be true or false, got 'no'"),
    ({"cuda": {"toolkits_required": [12.4]}},
     "cuda.toolkits_required[0]: must be a CUDA version such as '12.4', got 12.4 (YAML read it as a number"),
    ({"cuda": {"toolkits_required": "12.4"}}, "cuda.toolkits_required: must be a list, got '12.4'"),
    ({"gpus": {"expected_count": 65}}, "gpus.expected_count: must be null or a whole number between 0 and 64"),
    ({"persistence_mode": "on"}, "persistence_mode: must be null or true or false, got 'on'"),
    ({"compute_mode": "exclusive"},
     "compute_mode: must be one of null, 'default', 'exclusive_process', 'prohibited', got 'exclusive' "
     "(did you mean 'exclusive_process'?)"),
    ({"sharing": {"mode": "timeslicing"}}, "sharing.mode: must be one of null, 'exclusive', 'mps', 'time_slicing', "
                                           "'mig', got 'timeslicing' (did you mean 'time_slicing'?)"),
    ({"fabric_manager": {"required": "yes"}}, "fabric_manager.required: must be one of 'auto', true, false, got 'yes'"),
    ({"container_runtime": {"required": 1}}, "container_runtime.required: must be true or false, got 1"),
    ({"mig": {"selected": "all-3g.40gb"}}, "mig.selected: needs mig.config or mig.config_file to select from"),
    ({"mig": {"config": "all-3g.40gb"}}, "mig.config: must be null or a mapping, got 'all-3g.40gb'"),
    ({"mig": {"config": {"version": "v1", "mig-configs": {}}}},
     "mig.config: must be an nvidia-mig-parted document (version: v1) with a non-empty 'mig-configs' mapping"),
    ({"mig": {"config": MIG_DOC, "selected": "all-3g.40g"}},
     "mig.selected: no mig-config named 'all-3g.40g' (did you mean 'all-3g.40gb'?); the config has "
     "all-3g.40gb, all-disabled"),
    ({"mig": {"config_file": ""}}, "mig.config_file: must be null or a non-empty string, got ''"),
    ({"mig": {"allow_drain": None}}, "mig.allow_drain: must be true or false, got null"),
    ({"workload": {"max_processes_per_gpu": 0}}, "workload.max_processes_per_gpu: must be null or a whole number"),
    ({"workload": {"services": "vllm"}},
     "workload.services: must be a list of mappings with a name, or a mapping of name to settings, got 'vllm'"),
    ({"workload": {"services": ["vllm"]}}, "workload.services[0]: must be a mapping, got 'vllm'"),
    ({"workload": {"services": [{"workers_per_gpu": 1}]}},
     "workload.services[0].name: must be a systemd unit name such as 'vllm.service', got null"),
    ({"workload": {"services": [{"name": "a"}, {"name": "a"}]}}, "workload.services[1].name: duplicate name 'a'"),
    ({"workload": {"services": {"bad unit!": {}}}}, "workload.services['bad unit!'].name: must be a systemd unit name"),
    ({"workload": {"services": {"vllm": {"name": "triton"}}}},
     "workload.services.vllm.name: 'triton' differs from the key 'vllm' it is under"),
    ({"workload": {"services": {"vllm": {"workers_env": "NUM_WORKERS", "workers_arg": "--workers"}}}},
     "workload.services['vllm.service'].workers_arg: set either workers_env or workers_arg, not both"),
    ({"workload": {"services": {"vllm": {"workers_env": "NUM-WORKERS"}}}},
     "workload.services.vllm.workers_env: must be null or an environment variable name such as 'NUM_WORKERS'"),
    ({"workload": {"services": {"vllm": {"workers_arg": "workers"}}}},
     "workers_arg: must be null or a command-line option such as '--workers', got 'workers'"),
    ({"workload": {"services": {"vllm": {"gpus": [0, 0]}}}},
     "workload.services.vllm.gpus: must be 'all', null or a list of distinct GPU indexes (0-63), got a list"),
    ({"workload": {"services": {"vllm": {"environment": {"1X": "a"}}}}},
     "workload.services.vllm.environment['1X']: is not an environment variable name"),
    ({"workload": {"services": {"vllm": {"environment": {"HF_HOME": ["a"]}}}}},
     "environment.HF_HOME: must be a string or a number, got a list"),
    ({"workload": {"services": {"vllm": {"environment": "A=1"}}}},
     "environment: must be a mapping of variable name to value, got 'A=1'"),
    ({"workload": {"services": {"vllm": {"mps": {"active_thread_percentage": 150}}}}},
     "mps.active_thread_percentage: must be null or a whole number between 1 and 100, got 150"),
    ({"workload": {"services": {"vllm": {"restart": "on-fail"}}}},
     "workload.services.vllm.restart: must be one of null, 'no', 'on-success', 'on-failure', 'on-abnormal', "
     "'on-watchdog', 'on-abort', 'always', got 'on-fail' (did you mean 'on-failure'?)"),
    ({"workload": {"services": {"vllm": {"runtime_max_sec": 30}}}},
     "runtime_max_sec: must be null or a whole number 60 or more, got 30"),
    ({"workload": {"services": {"vllm": {"restart_sec": "5s"}}}}, "restart_sec: must be a whole number between 0"),
    ({"workload": {"services": {"vllm": {"worker_per_gpu": 2}}}},
     "workload.services.vllm.worker_per_gpu: unknown key (did you mean 'workers_per_gpu'?)"),
    ({"workload": {"services": {"vllm": 3}}}, "workload.services.vllm: must be a mapping, got 3"),
    ({"catalogs": {"xids": {}}}, "catalogs.xids: unknown key (did you mean 'xid'?)"),
    ({"catalogs": {"xid": [79]}}, "catalogs.xid: must be a mapping, got a list"),
    ({"report": {"fail_severity": "error"}},
     "report.fail_severity: must be one of 'critical', 'warning', 'info', 'none', got 'error'"),
    ({"remediation": {"batch_size": 0}},
     "remediation.batch_size: must be a whole number 1 or more, or a percentage such as '25%', got 0"),
    ({"remediation": {"batch_size": "150%"}}, "remediation.batch_size: must be a whole number 1 or more"),
])
def test_validation_error(policy, expected):
    lines = problems_of(policy)
    assert any(expected in line for line in lines), lines


RULE = {"name": "hot", "layer": "hardware", "severity": "warning", "scope": "gpu",
        "expression": "temperature.gpu_c > `80`", "summary": "GPU hot", "action": "Check cooling."}


@pytest.mark.parametrize("change, expected", [
    ({"layer": "hw"}, "custom_rules.hot.layer: must be one of 'hardware', 'driver', 'scheduling', 'workload', got 'hw'"),
    ({"severity": "high"}, "custom_rules.hot.severity: must be one of 'critical', 'warning', 'info', got 'high'"),
    ({"scope": "gpus"}, "custom_rules.hot.scope: must be one of 'host', 'gpu', got 'gpus' (did you mean 'gpu'?)"),
    ({"expression": "gpus[?"},
     "custom_rules.hot.expression: JMESPath expression 'gpus[?' does not compile: the expression is incomplete"),
    ({"expression": "foo bar"},
     "custom_rules.hot.expression: JMESPath expression 'foo bar' does not compile: Unexpected token: bar at position 4"),
    ({"expression": "a ~ b"}, "does not compile: Unknown token ~ at position 2"),
    ({"expression": 5}, "custom_rules.hot.expression: must be a JMESPath expression (string), got 5"),
    ({"summary": " "}, "custom_rules.hot.summary: must be a non-empty string, got ' '"),
    ({"fix": "reboot"}, "custom_rules.hot.fix: must be one of null, 'worker_limits', 'restart_policy', 'gpu_settings', "
                        "'mig_layout', 'driver', got 'reboot'"),
    ({"name": "Hot-GPU"}, "custom_rules['Hot-GPU'].name: must be a rule name of lower-case letters, digits and '_', "
                          "got 'Hot-GPU'"),
    ({"expresion": "x"}, "custom_rules.hot.expresion: unknown key (did you mean 'expression'?)"),
])
def test_custom_rule_errors(change, expected):
    rule = dict(RULE, **change)
    lines = problems_of({"custom_rules": [rule]})
    assert any(expected in line for line in lines), lines


def test_custom_rule_required_fields():
    lines = problems_of({"custom_rules": [{"name": "bare"}]})
    assert lines == ["gpufleet_policy.custom_rules.bare.%s: is required" % key
                     for key in ("layer", "expression", "summary", "action")]


def test_every_problem_is_reported_at_once_under_where():
    lines = problems_of({"thresholds": {"memory_used_pct": "high"}, "compute_mode": "x", "drver": {}},
                        where="gpufleet_policy_a100")
    assert len(lines) == 3
    assert all(line.startswith("gpufleet_policy_a100.") for line in lines)


def test_a_policy_that_is_not_a_mapping():
    assert problems_of(["driver"]) == ["gpufleet_policy: must be a mapping, got a list"]
    with pytest.raises(PolicyError) as caught:
        validate_fragments([("gpufleet_policy", {}), ("gpufleet_policy_a100", "strict")])
    assert str(caught.value) == "gpufleet_policy_a100: must be a mapping, got 'strict'"


def test_policy_error_is_a_value_error_with_problems():
    with pytest.raises(ValueError) as caught:
        validate_policy({"report": {"fail_severity": "error"}})
    assert caught.value.problems[0].path == ("report", "fail_severity")


def test_two_mig_sources_in_the_fragments():
    with pytest.raises(PolicyError) as caught:
        validate_fragments([("gpufleet_policy", {"mig": {"config": MIG_DOC}}),
                            ("gpufleet_policy_a100", {"mig": {"config_file": "mig.yaml"}})])
    assert str(caught.value) == ("gpufleet_policy_a100.mig.config_file: set either mig.config or mig.config_file, "
                                 "not both")


# --- which fragment set a bad value ------------------------------------------------------------------------

def test_problems_name_the_fragment_that_set_the_value():
    fragments = [("gpufleet_policy", {"thresholds": {"memory_used_pct": 90}, "workload": {"services": [
        {"name": "vllm", "restart": "always"}]}}),
        ("gpufleet_policy_a100", {"thresholds": {"memory_used_pct": "high"}}),
        ("gpufleet_policy_b", {"workload": {"services": {"vllm": {"restart": "sometimes"}}}})]
    with pytest.raises(PolicyError) as caught:
        validate_fragments(fragments)
    assert [problem.variable for problem in caught.value.problems] == ["gpufleet_policy_a100", "gpufleet_policy_b"]
    assert str(caught.value).splitlines()[0].startswith("gpufleet_policy_a100.thresholds.memory_used_pct: ")


def test_source_of_a_missing_key_is_the_longest_path_set():
    fragments = [("gpufleet_policy", {"custom_rules": [{"name": "a", "layer": "driver"}]}),
                 ("gpufleet_policy_x", {"thresholds": {}})]
    assert P.source_of(("custom_rules", "a", "expression"), fragments) == ("gpufleet_policy", ("custom_rules", "a"))
    assert P.lookup_path(fragments[0][1], ("custom_rules", "a", "layer")) == (True, "driver")
    assert P.lookup_path(fragments[0][1], ("custom_rules", 0, "name")) == (True, "a")
    assert P.lookup_path(fragments[0][1], ("custom_rules", "b")) == (False, None)


def test_format_path():
    assert P.format_path(("workload", "services", "vllm.service", "restart")) == \
        "gpufleet_policy.workload.services['vllm.service'].restart"
    assert P.format_path(("custom_rules", 2, "name"), "gpufleet_policy_x") == "gpufleet_policy_x.custom_rules[2].name"


# --- files the policy names, checks owned by other modules -------------------------------------------------

def test_mig_config_file_is_read_relative_to_the_inventory(tmp_path):
    (tmp_path / "mig").mkdir()
    (tmp_path / "mig" / "a100.yaml").write_text(yaml.safe_dump(MIG_DOC))
    policy = validate_policy({"mig": {"config_file": "mig/a100.yaml", "selected": "all-3g.40gb"}})
    resolved = P.resolve_mig_config(policy, str(tmp_path))
    assert resolved["mig"]["config"] == load_mig_parted_config(MIG_DOC, "expected")
    assert resolved["mig"]["config"]["mig-configs"]["all-3g.40gb"][0]["mig-devices"] == {"3g.40gb": 2}
    assert resolved["mig"]["config_file"] == str(tmp_path / "mig" / "a100.yaml")
    assert resolved["mig"]["selected"] == "all-3g.40gb"
    assert policy["mig"]["config"] is None
    assert validate_policy(resolved) == resolved
    assert P.resolve_mig_config(validate_policy({})) == validate_policy({})


@pytest.mark.corpus
def test_the_gpu_operator_configmap_is_a_valid_config_file():
    path = reference_path("nvidia-mig-parted-configs/gpu-operator_0400_configmap_default-mig-parted-config.yaml")
    policy = validate_policy({"mig": {"config_file": path, "selected": "all-3g.40gb"}})
    resolved = P.resolve_mig_config(policy)
    configs = resolved["mig"]["config"]["mig-configs"]
    assert [(entry["devices"], entry["mig-enabled"], entry["mig-devices"]) for entry in configs["all-3g.40gb"]] == [
        ("all", True, {"3g.40gb": 2})]
    assert "all-disabled" in configs and "all-1g.10gb" in configs
    with pytest.raises(PolicyError) as caught:
        P.resolve_mig_config(validate_policy({"mig": {"config_file": path, "selected": "all-3g.40"}}))
    assert str(caught.value).startswith("gpufleet_policy.mig.selected: no mig-config named 'all-3g.40' "
                                        "(did you mean 'all-3g.40gb'?)")


@pytest.mark.parametrize("content, selected, expected", [
    (None, None, "gpufleet_policy.mig.config_file: cannot read "),
    ("- a list\n", None, "mig.yaml: expected a mapping with version and mig-configs, got list"),
    ("version: v1\nmig-configs: [\n", None, "mig.yaml: not valid YAML"),
    ("version: v2\nmig-configs: {}\n", None, "mig.yaml: unknown version 'v2' (must be v1)"),
    (yaml.safe_dump(MIG_DOC), "all-1g.5gb", "gpufleet_policy.mig.selected: no mig-config named 'all-1g.5gb'"),
])
def test_mig_config_file_errors(tmp_path, content, selected, expected):
    path = tmp_path / "mig.yaml"
    if content is not None:
        path.write_text(content)
    policy = validate_policy({"mig": {"config_file": str(path), "selected": selected}})
    with pytest.raises(PolicyError) as caught:
        P.resolve_mig_config(policy, None)
    assert expected in str(caught.value)


def test_inline_mig_config_is_checked_by_mig_config():
    entry = {"devices": "all", "mig-enabled": True, "mig-devices": {"3g.41gbx": 1}}
    document = {"version": "v1", "mig-configs": {"a": [entry]}}
    with pytest.raises(PolicyError) as caught:
        P.resolve_mig_config(validate_policy({"mig": {"config": document}}))
    assert str(caught.value).startswith("gpufleet_policy.mig.config: mig-configs.a[0].mig-devices: '3g.41gbx' is not "
                                        "a MIG profile")


def test_an_effective_policy_names_the_fragment_of_a_bad_mig_document():
    fragments = [("gpufleet_policy", {}), ("gpufleet_policy_a100", {"mig": {"config": {"version": "v1"}}})]
    with pytest.raises(PolicyError) as caught:
        P.effective_policy_of(fragments)
    assert str(caught.value).startswith("gpufleet_policy_a100.mig.config: ")


def test_catalog_overrides_are_checked_by_the_knowledge_module():
    with pytest.raises(PolicyError) as caught:
        P.check_catalogs(validate_policy({"catalogs": {"cuda_min_driver": {"12.4": "new"}}}))
    assert str(caught.value).startswith("gpufleet_policy.catalogs: ")
    good = validate_policy({"catalogs": {"cuda_min_driver": {"12.4": "550.54.14"}}})
    assert P.check_catalogs(good) == good


def test_loaders_can_be_injected():
    seen = []

    def mig_loader(document, where):
        seen.append(where)
        raise ValueError("mig.config: mig-configs.all-3g.40gb[0]: unknown profile '3g.41gb'")

    def knowledge_loader(tables):
        seen.append(sorted(key for key, value in tables.items() if value))
        raise ValueError("catalogs.xid[79]: action must be a string")

    policy = validate_policy({"mig": {"config": MIG_DOC}, "catalogs": {"xid": {79: {"action": 1}}}})
    with pytest.raises(PolicyError) as caught:
        P.resolve_mig_config(policy, mig_loader=mig_loader)
    assert str(caught.value) == "gpufleet_policy.mig.config: mig-configs.all-3g.40gb[0]: unknown profile '3g.41gb'"
    with pytest.raises(PolicyError) as caught:
        P.check_catalogs(policy, knowledge_loader=knowledge_loader)
    assert str(caught.value) == "gpufleet_policy.catalogs: xid[79]: action must be a string"
    assert seen == ["mig.config", ["xid"]]
    assert P.check_catalogs(validate_policy({}), knowledge_loader=knowledge_loader)


# --- helpers for the rules ---------------------------------------------------------------------------------

def test_compiled_custom_rules_read_the_facts():
    policy = validate_policy({"custom_rules": [RULE, dict(RULE, name="no_driver", scope="host", layer="driver",
                                                          expression="!(driver.version)")]})
    compiled = compile_custom_rules(policy)  # what the rules use (policy.py had a copy used only by this test)
    assert [rule.name for rule in compiled] == ["hot", "no_driver"]
    gpu = new_gpu(0)
    gpu["temperature"]["gpu_c"] = 84
    assert compiled[0].compiled.search(gpu) is True
    gpu["temperature"]["gpu_c"] = 70
    assert compiled[0].compiled.search(gpu) is False
    assert compiled[1].compiled.search(new_facts()) is True
    assert isinstance(compiled[0].compiled, jmespath.parser.ParsedResult)


@pytest.mark.parametrize("workload, limit", [
    ({}, None),
    ({"max_processes_per_gpu": 3, "services": {"a": {"workers_per_gpu": 8}}}, 3),
    ({"services": {"a": {"workers_per_gpu": 2}, "b": {"workers_per_gpu": 1}, "c": {}}}, 3),
])
def test_process_limit_per_gpu(workload, limit):
    assert worker_limit(validate_policy({"workload": workload}))[0] == limit  # the rule's own reading


def test_policy_id_follows_content():
    first = validate_policy({"driver": {"pin": "550.90.07"}})
    assert P.policy_id(first) == P.policy_id(copy.deepcopy(first))
    assert P.policy_id(first) != P.policy_id(validate_policy({}))
    assert re.match(r"^p-[0-9a-f]{12}$", P.policy_id(first))


# --- locating the file of a bad key without origin tags ----------------------------------------------------

def write_inventory(root):
    (root / "group_vars" / "all").mkdir(parents=True)
    (root / "host_vars").mkdir()
    (root / "group_vars" / "all" / "policy.yml").write_text(
        "gpufleet_policy:\n  thresholds:\n    memory_used_pct: 90\n")
    (root / "group_vars" / "a100.yml").write_text(
        "gpufleet_policy_a100:\n  thresholds:\n    memory_used_pct: high\n")
    (root / "group_vars" / "h100.yaml").write_text("other: 1\n")
    (root / "host_vars" / "gpu1.yaml").write_text(
        "gpufleet_policy_host:\n  workload:\n    services:\n      - name: vllm\n        restart: sometimes\n")
    return root


def test_var_file_candidates_in_precedence_order(tmp_path):
    root = write_inventory(tmp_path)
    candidates = P.var_file_candidates([str(root)], "gpu1", ["a100", "h100"])
    assert candidates == [str(root / "host_vars" / "gpu1.yaml"), str(root / "group_vars" / "h100.yaml"),
                          str(root / "group_vars" / "a100.yml"), str(root / "group_vars" / "all" / "policy.yml")]
    assert P.var_file_candidates([str(root)], "gpu2", []) == [str(root / "group_vars" / "all" / "policy.yml")]


def test_find_var_files_picks_the_file_with_the_key(tmp_path):
    root = write_inventory(tmp_path)
    candidates = P.var_file_candidates([str(root)], "gpu1", ["a100"])
    assert P.find_var_files("gpufleet_policy_a100", ("thresholds", "memory_used_pct"), candidates) == [
        str(root / "group_vars" / "a100.yml")]
    assert P.find_var_files("gpufleet_policy_host", ("workload", "services", "vllm", "restart"), candidates) == [
        str(root / "host_vars" / "gpu1.yaml")]
    assert P.find_var_files("gpufleet_policy", ("driver",), candidates) == [
        str(root / "group_vars" / "all" / "policy.yml")]
    assert P.find_var_files("gpufleet_policy_zz", (), candidates) == []


def test_display_path_is_relative_below_the_current_folder(tmp_path):
    assert P.display_path(str(tmp_path / "a" / "b.yml"), str(tmp_path)) == os.path.join("a", "b.yml")
    assert P.display_path("/elsewhere/b.yml", str(tmp_path)) == "/elsewhere/b.yml"


# --- the fleet check ---------------------------------------------------------------------------------------

def fleet_of(hosts_by_group, variables_by_group, groups_extra=None):
    variables, groups = {}, {"all": []}
    for group, hosts in hosts_by_group.items():
        groups[group] = list(hosts)
        for host in hosts:
            groups["all"].append(host)
            variables[host] = dict(variables_by_group.get(group, {}), group_names=[group])
    groups.update(groups_extra or {})
    return variables, groups


def test_fleet_with_valid_policies_validates_once_per_distinct_policy(monkeypatch):
    calls = []
    real = P.effective_policy_of
    monkeypatch.setattr(policy_fleet, "effective_policy_of", lambda *args: calls.append(1) or real(*args))
    variables, groups = fleet_of(
        {"a100": ["a%04d" % i for i in range(300)], "h100": ["h%04d" % i for i in range(200)]},
        {"a100": {"gpufleet_policy": {"driver": {"pin": "550.90.07"}}},
         "h100": {"gpufleet_policy": {"driver": {"pin": "570.86.15"}}}})
    fleet = FleetPolicies(variables.__getitem__, groups).check(groups["all"])
    assert len(calls) == 2
    assert len(fleet.policies) == 2 and len(fleet.host_policy) == 500 and not fleet.errors
    assert fleet.policies[fleet.host_policy["h0007"]]["driver"]["pin"] == "570.86.15"


def test_fleet_errors_are_deduplicated_per_group():
    bad = {"gpufleet_policy_a100": {"thresholds": {"memory_used_pct": "high"}}}
    variables, groups = fleet_of({"a100": ["a%05d" % i for i in range(10000)], "h100": ["h1", "h2", "h3"]},
                                 {"a100": bad, "h100": {"gpufleet_policy": {"drver": {}}}})
    variables["h3"]["gpufleet_policy"] = {"compute_mode": "exclusive"}
    fleet = FleetPolicies(variables.__getitem__, groups).check(groups["all"])
    lines = fleet.error_lines()
    assert lines == [
        "gpufleet_policy_a100.thresholds.memory_used_pct: must be a number between 1 and 100, got 'high'"
        " - 10000 hosts: every host of group a100",
        "gpufleet_policy.drver: unknown key (did you mean 'driver'?); allowed keys: " + ", ".join(sorted(DEFAULT_POLICY))
        + " - 2 hosts: h1, h2",
        "gpufleet_policy.compute_mode: must be one of null, 'default', 'exclusive_process', 'prohibited', got "
        "'exclusive' (did you mean 'exclusive_process'?) - 1 host: h3",
    ]
    message = fleet.failure_message(10003)
    assert message.splitlines()[0] == ("Invalid gpufleet policy for 10003 of 10003 hosts (no host was contacted); "
                                       "fix these keys:")
    assert len(message.splitlines()) == 4
    assert fleet.failed_hosts()[:2] == ["a00000", "a00001"]


def test_describe_hosts_lists_a_few_then_counts():
    fleet = FleetPolicies(lambda host: {}, {"all": ["a", "b", "c", "d", "e", "f", "g"], "two": ["a", "b"]})
    assert fleet.describe_hosts(["a", "b", "c", "d", "e", "f"]) == "6 hosts: a, b, c, d, e and 1 more"
    assert fleet.describe_hosts(["a", "b"]) == "2 hosts: every host of group two"
    assert fleet.describe_hosts(["c"]) == "1 host: c"
    assert fleet.describe_hosts(list("abcdefg")) == "7 hosts: every host of group all"


def test_fleet_locates_files_by_search_when_no_origin_is_recorded(tmp_path):
    root = write_inventory(tmp_path)
    variables = {
        "gpu1": {"gpufleet_policy": {"thresholds": {"memory_used_pct": 90}},
                 "gpufleet_policy_a100": {"thresholds": {"memory_used_pct": "high"}},
                 "gpufleet_policy_host": {"workload": {"services": [{"name": "vllm", "restart": "sometimes"}]}},
                 "group_names": ["a100"], "inventory_dir": str(root)},
    }
    fleet = FleetPolicies(variables.__getitem__, {"all": ["gpu1"], "a100": ["gpu1"]},
                          base_dirs_of=lambda host: [variables[host]["inventory_dir"]]).check(["gpu1"])
    files = [entry["file"] for entry in fleet.errors.values()]
    assert files == [P.display_path(str(root / "group_vars" / "a100.yml")),
                     P.display_path(str(root / "host_vars" / "gpu1.yaml"))]
    assert "(in %s)" % files[0] in fleet.error_lines()[0]


def test_fleet_reports_fragments_that_cannot_be_read():
    class Variables(dict):
        def __getitem__(self, name):
            if name == "gpufleet_policy_t":
                raise RuntimeError("'undefined_thing' is undefined")
            return dict.__getitem__(self, name)

    variables = Variables(gpufleet_policy={}, gpufleet_policy_t="{{ undefined_thing }}")
    fleet = FleetPolicies(lambda host: variables, {}).check(["h1"])
    assert fleet.error_lines() == ["gpufleet_policy_t: cannot be read: 'undefined_thing' is undefined - 1 host: h1"]


def test_problem_defaults_to_no_variable():
    assert Problem(("a",), "m").variable is None


# --- any input: a PolicyError or an effective policy, input unchanged --------------------------------------

SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-5, 2000), st.floats(allow_nan=False, width=32),
                    st.sampled_from(["", "all", "on-failure", "550.90.07", "12.4", "vllm", "gpus[?", "25%", "mps"]))
KEYS = st.one_of(st.sampled_from(sorted(DEFAULT_POLICY) + [
    "services", "workload", "thresholds", "memory_used_pct", "name", "mig", "config", "selected", "custom_rules",
    "expression", "x"]), st.integers(0, 2))
VALUES = st.recursive(SCALARS, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                       st.dictionaries(KEYS, inner, max_size=4)), max_leaves=12)


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(KEYS, VALUES, max_size=5))
def test_any_policy_is_either_rejected_or_complete(policy):
    before = copy.deepcopy(policy)
    try:
        effective = validate_policy(policy)
    except PolicyError as error:
        assert error.problems and all(line.startswith("gpufleet_policy") for line in str(error).splitlines())
    else:
        assert set(effective) == set(DEFAULT_POLICY)
        assert validate_policy(effective) == effective
    assert policy == before
