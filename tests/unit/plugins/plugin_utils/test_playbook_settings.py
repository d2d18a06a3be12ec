"""The playbooks' documented settings, checked before any host is contacted (issue 25, section 1): each bad value
names the variable, what it allows and what it got; good values, including the strings -e gives, pass."""

import os
import re

import pytest
from ansible.errors import AnsibleValueOmittedError
from ansible.parsing.vault import EncryptedString

from ansible_collections.gpufleet.core.plugins.action.policy_check import HostVariables, failure_result
from ansible_collections.gpufleet.core.plugins.plugin_utils.playbook_settings import SETTINGS, setting_problems
from ansible_collections.gpufleet.core.plugins.plugin_utils.policy import FleetPolicies, PolicyError
from tests.support.schema_check import ROOT
from tests.unit.plugins.action.test_policy_check import hostvars, inventory  # noqa: F401 pylint: disable=unused-import


def lines(variables):
    problems = setting_problems(variables)
    return PolicyError(problems).lines() if problems else []


@pytest.mark.parametrize("name, value, expected", [
    ("gpufleet_fail_severity", "bogus", "must be one of critical, warning, info, none, got 'bogus'"),
    ("gpufleet_audit_fail_severity", "high", "must be one of critical, warning, info, none, got 'high'"),
    ("gpufleet_store", "maybe", "must be true or false, got 'maybe'"),
    ("gpufleet_report_compress", "often", "must be true or false, got 'often'"),
    ("gpufleet_keep_facts", "sometimes", "must be true or false, got 'sometimes'"),
    ("gpufleet_facts_source", "dcgm", "must be one of auto, nvml, nvidia_smi, replay, got 'dcgm'"),
    ("gpufleet_kernel_log_source", "syslog", "must be one of auto, journalctl, dmesg, files, got 'syslog'"),
    ("gpufleet_bmc_protocol", "snmp", "must be one of ipmi, redfish, got 'snmp'"),
    ("gpufleet_bmc_interface", "usb", "must be one of lanplus, lan, got 'usb'"),
    ("gpufleet_collect_timeout", "abc", "must be a whole number of at least 1, got 'abc'"),
    ("gpufleet_collect_timeout", 0, "must be a whole number of at least 1, got 0"),
    ("gpufleet_collect_margin", "-5", "must be a whole number of at least 0, got '-5'"),
    ("gpufleet_kernel_log_window_hours", "abc", "must be a whole number of at least 1, got 'abc'"),
    ("gpufleet_bmc_port", 70000, "must be a whole number from 1 to 65535, got 70000"),
    ("gpufleet_incident_hours", "a day", "must be a number greater than 0, got 'a day'"),
    ("gpufleet_incident_dcgm_diag", "perhaps", "must be true or false, got 'perhaps'"),
    ("gpufleet_incident_validate", "perhaps", "must be true or false, got 'perhaps'"),
    ("gpufleet_incident_since", "yesterday", "must be an ISO 8601 time (2026-11-30T06:00:00Z; no zone: UTC) or "
     "epoch seconds, got 'yesterday'"),
    ("gpufleet_incident_until", "2026-11-31T06:00:00Z", "must be an ISO 8601 time (2026-11-30T06:00:00Z; no zone: "
     "UTC) or epoch seconds, got '2026-11-31T06:00:00Z'"),
    ("gpufleet_services", 5, "must be a list of non-empty strings, got 5"),
    ("gpufleet_kernel_log_files", {"a": 1}, "must be a list of non-empty strings, got a mapping"),
    ("gpufleet_gather_subset", ["all", "!bmcs"], "must be a list of all, min, driver, gpus, processes, mig, nvlink, "
     "host, kernel_log, driver_clients, workload, host_pressure, bmc, kubernetes, fabric (prefix ! to leave one out), "
     "got a list"),
    ("gpufleet_audit_hosts", "", "must be a non-empty string, got ''"),
    ("gpufleet_report_dir", ["reports"], "must be a folder name (a string) or null, got a list"),
    ("gpufleet_slice_number", "first", "must be a whole number of at least 1, got 'first'"),
    ("gpufleet_remediation_batch_size", 0, "must be a whole number of at least 1, got 0"),
])
def test_a_bad_value_names_the_variable_what_it_allows_and_what_it_got(name, value, expected):
    assert lines({name: value}) == ["%s: %s" % (name, expected)]


@pytest.mark.parametrize("variables", [
    {"gpufleet_fail_severity": "none", "gpufleet_audit_fail_severity": "warning"},
    {"gpufleet_store": "false", "gpufleet_keep_facts": True, "gpufleet_incident_bug_report": "yes"},
    {"gpufleet_collect_timeout": "30", "gpufleet_collect_margin": 0, "gpufleet_kernel_log_window_hours": 24},
    {"gpufleet_gather_subset": "all,!bmc", "gpufleet_services": ["vllm"], "gpufleet_kernel_log_files": "/a,/b"},
    {"gpufleet_report_dir": None, "gpufleet_audit_suffix": "-before", "gpufleet_facts_source": "replay"},
    {"gpufleet_store_url": "postgresql://gpufleet:secret@db:5432/gpufleet"},
    {"gpufleet_store_url": "sqlite:////var/lib/gpufleet/store.sqlite"},
    {"gpufleet_slice_number": "2", "gpufleet_slice_count": 4, "gpufleet_run_group": "nightly"},
    # an AWX survey's unanswered question
    {"gpufleet_slice_number": "", "gpufleet_slice_count": "", "gpufleet_run_group": ""},
    {"gpufleet_incident_hours": "1.5", "unrelated_variable": "anything"},
    {"gpufleet_incident_since": "2026-11-30T06:00:00+02:00", "gpufleet_incident_until": 1796018400},
])
def test_good_values_pass(variables):
    assert lines(variables) == []


def test_a_password_is_never_shown_and_a_store_url_only_without_its_password():
    assert lines({"gpufleet_bmc_password": 12345}) == [
        "gpufleet_bmc_password: must be a non-empty string, got a value that is not shown"]
    [line] = lines({"gpufleet_store_url": "mysql://gpufleet:hunter2@db/gpufleet"})
    assert line.startswith("gpufleet_store_url: must be a database URL: postgresql://")
    assert line.endswith("got 'mysql://gpufleet:***@db/gpufleet'") and "hunter2" not in line


@pytest.mark.parametrize("name", ["gpufleet_bmc_password", "gpufleet_bmc_user", "gpufleet_store_url"])
def test_a_vaulted_value_passes_without_being_decrypted(name):
    # an inline !vault value reaches the check as ansible-core's EncryptedString, not a str
    vaulted = EncryptedString(ciphertext="$ANSIBLE_VAULT;1.1;AES256\n6162636465660a")
    assert lines({name: vaulted}) == []
    assert lines({"gpufleet_bmc_password": ""}) == [
        "gpufleet_bmc_password: must be a non-empty string, got a value that is not shown"]


class OmittedOn(dict):
    """Variables whose named ones template to `omit` on this host, as HostVariables reads them."""

    def __init__(self, omitted, **values):
        super().__init__(values, **dict.fromkeys(omitted))
        self.omitted = omitted

    def __getitem__(self, name):
        if name in self.omitted:
            raise AnsibleValueOmittedError("A template was resolved to an Omit scalar.")
        return super().__getitem__(name)


def test_a_setting_that_is_omit_on_this_host_is_unset_here():
    # "{{ '/x.json' if inventory_hostname == 'a' else omit }}": the hosts where it is omit leave the option out
    assert lines(OmittedOn(["gpufleet_facts_fixture"], gpufleet_fail_severity="bogus")) == [
        "gpufleet_fail_severity: must be one of critical, warning, info, none, got 'bogus'"]


def test_a_slice_needs_its_count_and_fits_in_it():
    assert lines({"gpufleet_slice_number": 3, "gpufleet_slice_count": 2}) == [
        "gpufleet_slice_number: must be at most gpufleet_slice_count (2), got 3"]
    assert lines({"gpufleet_slice_count": 2}) == [
        "gpufleet_slice_count: must be set together with gpufleet_slice_number"]


def test_every_bad_setting_is_listed_once():
    assert [line.split(":")[0] for line in lines({
        "gpufleet_store": "maybe", "gpufleet_fail_severity": "x", "gpufleet_collect_timeout": -1})] == [
        "gpufleet_fail_severity", "gpufleet_store", "gpufleet_collect_timeout"]


def test_every_setting_of_audit_yml_header_is_checked():
    with open(os.path.join(ROOT, "playbooks", "audit.yml")) as handle:
        header = handle.read().split("- name:")[0]
    # the policy is policy_check's own; gpufleet_collect is the collection's registered result
    documented = set(re.findall(r"\b(gpufleet_[a-z_]+[a-z])\b", header)) - {"gpufleet_policy", "gpufleet_collect"}
    assert documented - set(SETTINGS) == set()


def test_the_fleet_lists_bad_settings_with_the_hosts_and_the_file(hostvars, inventory):  # noqa: F811
    variables, groups = hostvars
    (inventory / "group_vars" / "a100.yml").write_text("gpufleet_fail_severity: severe\n")
    fleet = FleetPolicies(lambda host: HostVariables(variables, host), groups,
                          settings_check=setting_problems).check(["a1", "a2", "h1"])
    result = failure_result(fleet, 3)
    assert result["msg"].splitlines() == [
        "Invalid gpufleet settings for 2 of 3 hosts (no host was contacted); fix these variables:",
        "- gpufleet_fail_severity: must be one of critical, warning, info, none, got 'severe' (in %s, line 1) - "
        "2 hosts: every host of group a100" % (inventory / "group_vars" / "a100.yml")]
    assert result["failed_hosts"] == ["a1", "a2"]
    assert result["policy_errors"][0]["variable"] == "gpufleet_fail_severity"


def test_bad_settings_and_a_bad_policy_are_one_message():
    variables = {"gpufleet_policy": {"report": {"fail_severity": "x"}}, "gpufleet_store": "maybe"}
    fleet = FleetPolicies(lambda host: variables, {}, settings_check=setting_problems).check(["a"])
    message = failure_result(fleet, 1)["msg"]
    assert message.startswith("Invalid gpufleet settings and policy for 1 of 1 host (no host was contacted); "
                              "fix these variables:")
    assert "- gpufleet_store: must be true or false, got 'maybe'" in message
    assert "- gpufleet_policy.report.fail_severity: " in message


def test_policy_check_documents_its_settings_option():
    import yaml
    from ansible_collections.gpufleet.core.plugins.modules import policy_check
    options = yaml.safe_load(policy_check.DOCUMENTATION)["options"]
    assert sorted(options) == sorted(policy_check.ARGUMENT_SPEC)
    assert (options["settings"]["type"], options["settings"]["default"]) == ("bool", False)
