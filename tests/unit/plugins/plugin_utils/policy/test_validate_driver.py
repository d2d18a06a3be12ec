"""Policy keys of driver rollouts: driver.package and driver.rollout (batches, failure limit, reboot, force, drain)."""

import os

import pytest

from ansible_collections.gpufleet.core.plugins.plugin_utils.policy import DEFAULT_POLICY, PolicyError, validate_policy
from tests.support.schema_check import ROOT


def messages(policy):
    with pytest.raises(PolicyError) as caught:
        validate_policy(policy)
    return str(caught.value).splitlines()


def test_rollout_defaults_are_a_canary_then_ten_percent_then_the_rest_stopping_at_the_first_failure():
    rollout = validate_policy({})["driver"]["rollout"]
    assert rollout == {"batches": [1, "10%", "100%"], "max_fail_percentage": 0, "reboot": True, "force": False,
                       "drain": {"method": "none", "command": None, "undrain_command": None, "delegate_to": None}}
    assert validate_policy({})["driver"]["package"] is None


def test_a_fragment_changes_one_rollout_key_and_keeps_the_others():
    driver = validate_policy({"driver": {"pin": "550.127.05", "package": "gpufleet-nvidia-driver",
                                         "rollout": {"drain": {"method": "slurm"}, "batches": [2, "50%"]}}})["driver"]
    assert driver["package"] == "gpufleet-nvidia-driver"
    assert driver["rollout"]["batches"] == [2, "50%"]
    assert driver["rollout"]["drain"] == {"method": "slurm", "command": None, "undrain_command": None,
                                          "delegate_to": None}
    assert driver["rollout"]["reboot"] is True and driver["rollout"]["max_fail_percentage"] == 0


def test_bad_batches_name_the_entry_and_what_is_allowed():
    lines = messages({"driver": {"rollout": {"batches": [1, "0%", "ten"]}}})
    assert lines == [
        "gpufleet_policy.driver.rollout.batches[1]: must be a whole number 1 or more, or a percentage such as "
        "'25%', got '0%'",
        "gpufleet_policy.driver.rollout.batches[2]: must be a whole number 1 or more, or a percentage such as "
        "'25%', got 'ten'"]
    assert messages({"driver": {"rollout": {"batches": []}}}) == [
        "gpufleet_policy.driver.rollout.batches: must be a non-empty list of batch sizes such as "
        "[1, '10%', '100%'], got a list"]


@pytest.mark.parametrize("value", [-1, 101, "5", True])
def test_max_fail_percentage_is_a_number_from_0_to_100(value):
    assert messages({"driver": {"rollout": {"max_fail_percentage": value}}})[0].startswith(
        "gpufleet_policy.driver.rollout.max_fail_percentage: must be a number between 0 and 100")


def test_drain_method_gets_a_did_you_mean():
    assert messages({"driver": {"rollout": {"drain": {"method": "slrum"}}}}) == [
        "gpufleet_policy.driver.rollout.drain.method: must be one of 'none', 'slurm', 'kubernetes', 'command', "
        "got 'slrum' (did you mean 'slurm'?)"]


def test_command_method_needs_a_command_and_kubernetes_a_control_host():
    assert messages({"driver": {"rollout": {"drain": {"method": "command"}}}}) == [
        "gpufleet_policy.driver.rollout.drain.command: is required with method 'command'"]
    assert messages({"driver": {"rollout": {"drain": {"method": "kubernetes"}}}}) == [
        "gpufleet_policy.driver.rollout.drain.delegate_to: is required with method 'kubernetes': the host that "
        "runs kubectl"]
    drain = validate_policy({"driver": {"rollout": {"drain": {
        "method": "command", "command": "drain.sh", "undrain_command": "undrain.sh",
        "delegate_to": "localhost"}}}})["driver"]["rollout"]["drain"]
    assert drain == {"method": "command", "command": "drain.sh", "undrain_command": "undrain.sh",
                     "delegate_to": "localhost"}


def test_a_command_without_the_command_method_is_reported_rather_than_ignored():
    assert messages({"driver": {"rollout": {"drain": {"method": "slurm", "undrain_command": "x"}}}}) == [
        "gpufleet_policy.driver.rollout.drain.undrain_command: is only used with method 'command', not 'slurm'"]


def test_unknown_rollout_key_and_bad_package_name():
    lines = messages({"driver": {"package": "nvidia driver", "rollout": {"reboots": False}}})
    assert lines == [
        "gpufleet_policy.driver.package: must be null or a package name such as 'nvidia-driver', got 'nvidia driver'",
        "gpufleet_policy.driver.rollout.reboots: unknown key (did you mean 'reboot'?); allowed keys: batches, "
        "drain, force, max_fail_percentage, reboot"]


def test_rollout_keys_are_documented_with_their_defaults():
    doc = open(os.path.join(ROOT, "docs", "policy.md"), encoding="utf-8").read()
    for key in ("driver.package", "driver.rollout.batches", "driver.rollout.max_fail_percentage",
                "driver.rollout.reboot", "driver.rollout.force", "driver.rollout.drain.method",
                "driver.rollout.drain.command", "driver.rollout.drain.undrain_command",
                "driver.rollout.drain.delegate_to"):
        assert "| `%s` |" % key in doc
    assert '| `driver.rollout.batches` | [1, "10%", "100%"] |' in doc
    assert DEFAULT_POLICY["driver"]["rollout"]["batches"] == [1, "10%", "100%"]
