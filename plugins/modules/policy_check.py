#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
---
module: policy_check
short_description: Validate the gpufleet policy of every host before any host is contacted
version_added: 1.0.0
description:
  - Reads each host's policy from its inventory variables on the controller, merges it over the
    documented defaults and validates it. No host is contacted.
  - The effective policy of a host is the defaults, deep-merged with C(gpufleet_policy), then with every
    variable whose name starts with C(gpufleet_policy_), in sorted name order. See C(docs/policy.md) for
    every key, its default and the merging rules.
  - When a policy is invalid the task fails with one message that lists every bad key, the file and line
    that set it (when Ansible recorded it), what is allowed, and the hosts affected. Hosts that share the
    same bad setting are listed once, with their count and, when they form exactly one inventory group,
    that group.
  - Also reads the file named by C(mig.config_file) (relative paths are taken from the host's inventory
    folder) and checks the MIG document and catalog overrides with the modules that own them.
  - This is an action plugin; it runs on the controller only.
author:
  - gpufleet contributors (!UNKNOWN)
options:
  hosts:
    description:
      - Inventory host names whose policy is checked.
      - When not given, every host of the inventory (group C(all)) is checked.
    type: list
    elements: str
  facts:
    description:
      - Also return the effective policy of the host the task runs on as the fact
        C(gpufleet_effective_policy). That host is checked too, even when not in O(hosts).
      - Roles use this to read their desired state from the policy.
    type: bool
    default: false
  settings:
    description:
      - Also check the documented settings of the playbooks (C(gpufleet_fail_severity), C(gpufleet_store),
        C(gpufleet_collect_timeout), C(gpufleet_facts_source) and the others of C(audit.yml)'s header,
        C(docs/incident.md) and C(docs/awx.md)) in the variables of every host of O(hosts).
      - A bad value fails the task like an invalid policy, in the same message and RV(policy_errors), which name
        the variable, what it allows, the value it got (never the value of a password), the file that set it and
        the hosts affected.
    type: bool
    default: false
extends_documentation_fragment:
  - gpufleet.core.attributes
attributes:
  check_mode:
    support: full
    details: Nothing is changed in any mode.
  diff_mode:
    support: none
notes:
  - Run it once, on the controller, before the play that contacts the hosts, for example in a play on
    C(localhost) with O(hosts) set to the hosts of the audit.
seealso:
  - module: gpufleet.core.gpu_facts
"""

EXAMPLES = r"""
- name: Check the policy of every host of the audit before contacting them
  gpufleet.core.policy_check:
    hosts: "{{ query('ansible.builtin.inventory_hostnames', gpufleet_audit_hosts | default('all')) }}"
  register: gpufleet_checked

- name: Read this host's desired state (in a role)
  gpufleet.core.policy_check:
    hosts: ["{{ inventory_hostname }}"]
    facts: true

- name: Use it
  ansible.builtin.debug:
    msg: "{{ ansible_facts.gpufleet_effective_policy.workload.services | map(attribute='name') }}"
"""

RETURN = r"""
policies_checked:
  description: Number of hosts whose policy was checked.
  returned: always
  type: int
  sample: 10000
distinct_policies:
  description: Number of different effective policies among the valid ones.
  returned: always
  type: int
  sample: 3
policies:
  description: Effective policies by policy id, each with every key of C(docs/policy.md).
  returned: success
  type: dict
  sample: {"p-3f2a9c01d4e5": {"report": {"fail_severity": "critical"}}}
host_policy:
  description: Policy id of each host checked, a key of RV(policies).
  returned: success
  type: dict
  sample: {"gpu-a100-01": "p-3f2a9c01d4e5"}
policy_errors:
  description: One entry per distinct problem of a policy or, with O(settings=true), of a setting, with the hosts it affects.
  returned: failure
  type: list
  elements: dict
  contains:
    message:
      description: Key path, what is wrong and what is allowed.
      type: str
      sample: "gpufleet_policy_a100.thresholds.memory_used_pct: must be a number between 1 and 100, got 'high'"
    variable:
      description: Inventory variable that set the bad value.
      type: str
      sample: gpufleet_policy_a100
    path:
      description: Full key path of the bad value.
      type: str
      sample: gpufleet_policy_a100.thresholds.memory_used_pct
    file:
      description: File (and line) that set it, or null when unknown.
      type: str
      sample: inventories/prod/group_vars/a100.yml, line 3
    hosts:
      description: Hosts affected.
      type: list
      elements: str
failed_hosts:
  description: Hosts whose policy (or, with O(settings=true), a setting) is invalid.
  returned: failure
  type: list
  elements: str
ansible_facts:
  description: The effective policy of the host the task runs on.
  returned: success and O(facts=true)
  type: dict
  contains:
    gpufleet_effective_policy:
      description: Effective policy, as in RV(policies).
      type: dict
"""

from ansible.module_utils.basic import AnsibleModule

# Also the action plugin's argument spec: one definition for both.
ARGUMENT_SPEC = {
    "hosts": {"type": "list", "elements": "str"},
    "facts": {"type": "bool", "default": False},
    "settings": {"type": "bool", "default": False},
}


def main():
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    module.fail_json(msg="gpufleet.core.policy_check runs on the controller as an action plugin; "
                         "it cannot run on a managed host")


if __name__ == "__main__":
    main()
