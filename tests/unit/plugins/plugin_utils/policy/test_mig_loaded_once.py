"""The MIG config is loaded once, by policy resolution: the rules and the desired_mig_layout filter read the document
from the effective policy and never read mig.config_file themselves; the policies policy_check returns stay
plain JSON, one copy per distinct policy."""

import json

import yaml

from ansible_collections.gpufleet.core.plugins.filter.desired_mig_layout import desired_mig_layout
from ansible_collections.gpufleet.core.plugins.plugin_utils.policy import FleetPolicies, validate_policy
from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.scheduling import mig_plan

MIG_FILE = {
    "version": "v1",
    "mig-configs": {
        "whole": [{"devices": "all", "mig-enabled": False}],
        "halves": [{"devices": "all", "mig-enabled": True, "mig-devices": {"3g.40gb": 2}}],
    },
}
A100_FACTS = {"gpus": [{"index": index, "name": "NVIDIA A100-SXM4-80GB", "mig": {"mode_current": True}}
                       for index in range(2)]}


def fleet_with_config_file(tmp_path, hosts):
    (tmp_path / "mig").mkdir()
    (tmp_path / "mig" / "site.yaml").write_text(yaml.safe_dump(MIG_FILE))
    variables = {"gpufleet_policy": {"mig": {"config_file": "mig/site.yaml", "selected": "halves"}},
                 "inventory_dir": str(tmp_path)}
    return FleetPolicies(lambda host: variables, {"all": hosts}).check(hosts)


def test_rules_and_the_filter_read_the_document_the_resolution_loaded(tmp_path):
    fleet = fleet_with_config_file(tmp_path, ["a1"])
    policy = fleet.policies[fleet.host_policy["a1"]]
    (tmp_path / "mig" / "site.yaml").unlink()  # what reads it from now on reads the policy, or fails

    plan = mig_plan(policy)
    assert plan.error is None and plan.selected == "halves"
    assert plan.config["mig-configs"]["halves"][0]["mig-devices"] == {"3g.40gb": 2}
    desired = desired_mig_layout(A100_FACTS, policy)
    assert desired["selected"] == "halves"
    assert [(gpu["index"], gpu["mig_enabled"], gpu["devices"]) for gpu in desired["gpus"]] == [
        (0, True, {"3g.40gb": 2}), (1, True, {"3g.40gb": 2})]


def test_a_config_file_that_was_not_loaded_is_an_error_the_rules_report_without_reading_it(tmp_path):
    path = tmp_path / "site.yaml"
    path.write_text(yaml.safe_dump(MIG_FILE))
    plan = mig_plan(validate_policy({"mig": {"config_file": str(path), "selected": "halves"}}))
    assert plan.config is None and plan.selected == "halves"
    assert plan.error == "mig.config_file %s was not loaded into the policy (policy_check loads it)" % path


def test_policies_of_a_fleet_are_plain_json_one_copy_per_distinct_policy(tmp_path):
    hosts = ["a%03d" % number for number in range(300)]
    fleet = fleet_with_config_file(tmp_path, hosts)
    assert len(fleet.policies) == 1 and len(set(fleet.host_policy.values())) == 1
    encoded = json.dumps({"policies": fleet.policies, "host_policy": fleet.host_policy})
    assert json.loads(encoded)["policies"] == fleet.policies  # nothing but JSON types: it survives a round trip
    one_policy = len(json.dumps(fleet.policies))
    assert one_policy < 4096, one_policy  # the loaded document travels once, not once per host
