"""gpufleet.core.policy_check: helpers of the action plugin, origin tags from a real Ansible inventory, and one
ansible-playbook run that checks a small fleet without contacting it."""

import json
import os
import shutil
import subprocess
import sys

import pytest
from ansible.inventory.manager import InventoryManager
from ansible.parsing.dataloader import DataLoader
from ansible.vars.hostvars import HostVars
from ansible.vars.manager import VariableManager

from ansible_collections.gpufleet.core.plugins.action.policy_check import (
    HostVariables, failure_result, has_template, hosts_to_check, search_dirs)
from ansible_collections.gpufleet.core.plugins.plugin_utils.policy import FleetPolicies
from tests.support.schema_check import ROOT

HOSTS_YML = """\
all:
  vars:
    ansible_host: 203.0.113.9
    ansible_connection: ssh
  children:
    a100:
      hosts:
        a1: {worker_cap: 3}
        a2: {worker_cap: 5}
    h100:
      hosts:
        h1:
    broken:
      hosts:
        b1:
          gpufleet_policy_b1: {compute_mode: exclusive}
        b2:
"""

ALL_YML = """\
gpufleet_policy:
  driver:
    pin: "550.90.07"
  workload:
    services:
      - name: vllm
        workers_per_gpu: 2
        workers_env: NUM_WORKERS
"""

A100_YML = """\
gpufleet_policy_a100:
  workload:
    max_processes_per_gpu: "{{ worker_cap }}"
"""

BROKEN_YML = """\
gpufleet_policy_broken:
  thresholds:
    memory_used_pct: high
"""


@pytest.fixture
def inventory(tmp_path):
    (tmp_path / "group_vars").mkdir()
    (tmp_path / "hosts.yml").write_text(HOSTS_YML)
    (tmp_path / "group_vars" / "all.yml").write_text(ALL_YML)
    (tmp_path / "group_vars" / "a100.yml").write_text(A100_YML)
    (tmp_path / "group_vars" / "broken.yml").write_text(BROKEN_YML)
    return tmp_path


@pytest.fixture
def hostvars(inventory):
    loader = DataLoader()
    manager = InventoryManager(loader=loader, sources=[str(inventory / "hosts.yml")])
    variables = VariableManager(loader=loader, inventory=manager)
    groups = {group.name: [host.name for host in group.get_hosts()] for group in manager.groups.values()}
    return HostVars(inventory=manager, variable_manager=variables, loader=loader), groups


# --- helpers -----------------------------------------------------------------------------------------------

def test_hosts_to_check():
    groups = {"all": ["a", "b", "c"]}
    assert hosts_to_check(None, groups, "localhost", False) == ["a", "b", "c"]
    assert hosts_to_check(["b", "b", "a"], groups, "localhost", False) == ["b", "a"]
    assert hosts_to_check(["b"], groups, "c", True) == ["b", "c"]
    assert hosts_to_check([], groups, "c", False) == []


@pytest.mark.parametrize("value, expected", [
    ("{{ x }}", True), ("{% if a %}b{% endif %}", True), ("plain", False), (3, False), (None, False),
    ({"a": ["b", {"c": "{{ d }}"}]}, True), ({"a": ["b", {"c": "d"}]}, False), ({"{{ k }}": 1}, True),
])
def test_has_template(value, expected):
    assert has_template(value) is expected


def test_search_dirs():
    assert search_dirs({"inventory_dir": "/inv"}, "/play") == ["/inv", "/play"]
    assert search_dirs({"inventory_dir": "/same"}, "/same") == ["/same"]
    assert search_dirs({}, None) == []


def test_failure_result_sorts_hosts():
    fleet = FleetPolicies(lambda host: {"gpufleet_policy": {"report": {"fail_severity": "x"}}}, {}).check(["b", "a"])
    result = failure_result(fleet, 2)
    assert result["failed"] is True
    assert result["failed_hosts"] == ["a", "b"]
    assert result["policy_errors"][0]["hosts"] == ["a", "b"]
    assert result["policy_errors"][0]["path"] == "gpufleet_policy.report.fail_severity"
    assert result["msg"].startswith("Invalid gpufleet policy for 2 of 2 hosts")


# --- real Ansible variables --------------------------------------------------------------------------------

def test_host_variables_render_templates_only_where_needed(hostvars):
    variables, _groups = hostvars
    a1 = HostVariables(variables, "a1")
    assert a1["gpufleet_policy_a100"] == {"workload": {"max_processes_per_gpu": 3}}
    assert a1.raw_value("gpufleet_policy_a100") == {"workload": {"max_processes_per_gpu": "{{ worker_cap }}"}}
    assert a1["gpufleet_policy"]["driver"]["pin"] == "550.90.07"
    assert "gpufleet_policy_a100" in list(a1) and len(a1) == len(list(a1))


def test_errors_name_the_file_and_line_ansible_recorded(hostvars, inventory):
    variables, groups = hostvars
    fleet = FleetPolicies(lambda host: HostVariables(variables, host), groups).check(groups["all"])
    assert sorted(fleet.host_policy) == ["a1", "a2", "h1"]
    assert fleet.policies[fleet.host_policy["a2"]]["workload"]["max_processes_per_gpu"] == 5
    assert fleet.policies[fleet.host_policy["h1"]]["workload"]["services"][0]["name"] == "vllm.service"
    assert fleet.error_lines() == [
        "gpufleet_policy_broken.thresholds.memory_used_pct: must be a number between 1 and 100, got 'high' "
        "(in %s, line 3) - 2 hosts: every host of group broken" % (inventory / "group_vars" / "broken.yml"),
        "gpufleet_policy_b1.compute_mode: must be one of null, 'default', 'exclusive_process', 'prohibited', got "
        "'exclusive' (did you mean 'exclusive_process'?) (in %s, line 16) - 1 host: b1" % (inventory / "hosts.yml"),
    ]


# --- ansible-playbook --------------------------------------------------------------------------------------

PLAYBOOK = """\
- name: A role reads its desired state
  hosts: a100
  gather_facts: false
  tasks:
    - name: Effective policy of this host
      gpufleet.core.policy_check:
        hosts: ["{{ inventory_hostname }}"]
        facts: true

- name: The audit checks before contacting anyone
  hosts: localhost
  gather_facts: false
  tasks:
    - name: Check the valid hosts
      gpufleet.core.policy_check:
        hosts: "{{ groups['a100'] + groups['h100'] }}"
      register: checked

    - name: Keep what was returned
      ansible.builtin.copy:
        content: "{{ {'checked': checked, 'a1': hostvars['a1'].ansible_facts.gpufleet_effective_policy} | to_json }}"
        dest: "{{ out }}"
        mode: "0644"

    - name: Check every host
      gpufleet.core.policy_check:
"""


def test_playbook_checks_without_contacting_hosts(inventory):
    (inventory / "play.yml").write_text(PLAYBOOK)
    (inventory / "ansible.cfg").write_text("[defaults]\n")
    out = inventory / "out.json"
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, "collections"), ANSIBLE_CONFIG=str(inventory / "ansible.cfg"),
               ANSIBLE_NOCOLOR="1", ANSIBLE_HOST_KEY_CHECKING="0")
    # Beside this Python in a virtualenv; on PATH under ansible-test units.
    playbook = shutil.which("ansible-playbook", path=os.path.dirname(sys.executable)) or shutil.which("ansible-playbook")
    run = subprocess.run([playbook, "-i", str(inventory / "hosts.yml"), str(inventory / "play.yml"),
                          "-e", "out=%s" % out], capture_output=True, text=True, env=env, timeout=120, check=False)
    assert run.returncode == 2, run.stdout + run.stderr
    saved = json.loads(out.read_text())
    assert saved["checked"]["policies_checked"] == 3
    assert saved["checked"]["distinct_policies"] == 3
    assert saved["a1"]["workload"]["max_processes_per_gpu"] == 3
    assert saved["a1"]["driver"]["pin"] == "550.90.07"
    assert "unreachable=0" in run.stdout.split("PLAY RECAP")[1]
    assert "Invalid gpufleet policy for 2 of 5 hosts (no host was contacted)" in run.stdout
    assert "- gpufleet_policy_broken.thresholds.memory_used_pct: must be a number between 1 and 100, got 'high' " \
           "(in %s, line 3) - 2 hosts: every host of group broken" % (inventory / "group_vars" / "broken.yml") in run.stdout
