"""docs/schema/policy.schema.json: generated from the policy's own definition, current, accepting the demo's
group_vars, refusing what validate_policy refuses key by key (unknown keys, wrong types, values out of range)."""

import glob
import json
import os
import subprocess
import sys

import jsonschema
import pytest
import yaml

from ansible_collections.gpufleet.core.plugins.plugin_utils.policy import PolicyError, json_schema, validate_policy
from tests.support.schema_check import ROOT

SCHEMA_FILE = os.path.join(ROOT, "docs", "schema", "policy.schema.json")
DEMO_GROUP_VARS = sorted(glob.glob(os.path.join(ROOT, "inventories", "demo", "group_vars", "*.yml")))


def validator():
    with open(SCHEMA_FILE) as handle:
        schema = json.load(handle)
    jsonschema.Draft7Validator.check_schema(schema)
    return jsonschema.Draft7Validator(schema)


def errors_of(variables):
    return ["%s: %s" % ("/".join(map(str, error.absolute_path)), error.message)
            for error in validator().iter_errors(variables)]


def test_the_published_schema_is_the_generated_one():
    with open(SCHEMA_FILE) as handle:
        assert json.load(handle) == json_schema()
    check = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "policy_schema.py"), "--check"],
                           capture_output=True, text=True, check=False)
    assert check.returncode == 0, check.stderr


@pytest.mark.parametrize("path", DEMO_GROUP_VARS, ids=os.path.basename)
def test_every_demo_group_vars_file_validates(path):
    with open(path) as handle:
        variables = yaml.safe_load(handle)
    assert errors_of(variables) == []


def test_the_demo_sets_policy_fragments_the_schema_checks():
    names = set()
    for path in DEMO_GROUP_VARS:
        with open(path) as handle:
            names.update(name for name in yaml.safe_load(handle) or {} if name.startswith("gpufleet_policy"))
    assert len(names) >= 3, names
    for name in names:  # each fragment name is one the schema applies to: a bad key in it fails
        assert errors_of({name: {"thresholdz": {}}}) != []


def test_a_bad_key_fails_with_its_path():
    errors = errors_of({"gpufleet_policy_a100": {"thresholds": {"memory_used_pctt": 90}}})
    assert len(errors) == 1 and errors[0].startswith("gpufleet_policy_a100/thresholds: Additional properties")
    assert "memory_used_pctt" in errors[0]


def test_other_variables_are_free():
    assert errors_of({"ansible_user": "root", "gpufleet_report_dir": 3, "gpufleet_policyx": [1]}) == []


@pytest.mark.parametrize("fragment", [
    {"thresholds": {"memory_used_pct": 101}},
    {"thresholds": {"xid_window_hours": 0}},
    {"compute_mode": "exclusive"},
    {"driver": {"pin": 550.9}},
    {"driver": {"branch": "55x"}},
    {"driver": {"rollout": {"batches": []}}},
    {"driver": {"rollout": {"batches": ["0%"]}}},
    {"driver": {"rollout": {"drain": {"method": "cordon"}}}},
    {"persistence_mode": "yes"},
    {"workload": {"services": [{"name": "vllm", "restart": "sometimes"}]}},
    {"workload": {"services": [{"restart": "always"}]}},
    {"workload": {"services": {"vllm": {"workers_per_gpu": 0}}}},
    {"workload": {"services": {"vllm": {"environment": {"1BAD": "x"}}}}},
    {"custom_rules": [{"name": "Bad-Name", "layer": "driver"}]},
    {"custom_rules": [{"name": "r", "layer": "firmware"}]},
    {"report": {"accept_unreachable": "no"}},
    {"mig": {"allow_drain": 1}},
    {"gpus": {"expected_count": 65}},
])
def test_the_schema_and_the_validator_refuse_the_same_values(fragment):
    assert errors_of({"gpufleet_policy": fragment}) != []
    with pytest.raises(PolicyError):
        validate_policy(fragment)


@pytest.mark.parametrize("fragment", [
    {},
    {"thresholds": None, "custom_rules": None},
    {"driver": {"pin": "550.90.07", "branch": 550, "rollout": {"batches": [1, "10%", "100%"]}}},
    {"workload": {"services": {"vllm": {"workers_per_gpu": 2, "gpus": [0, 1], "environment": {"A": 1}}}}},
    {"report": {"fail_severity": "none", "accept_unreachable": True}},
    {"workload": {"max_processes_per_gpu": "{{ worker_cap }}"}},
])
def test_the_schema_and_the_validator_accept_the_same_values(fragment):
    assert errors_of({"gpufleet_policy": fragment}) == []
    if "{{" not in json.dumps(fragment):  # a template is checked once rendered, by policy_check
        validate_policy(fragment)
