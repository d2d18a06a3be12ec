#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
---
module: quarantine_plan
short_description: Decide which nodes quarantine.yml takes out, repairs, returns or leaves alone
version_added: 1.0.0
description:
  - Reads the audit's C(report.json) in O(audit_dir), what each host's scheduler said about its node (the host
    variable C(gpufleet_quarantine_query) that C(playbooks/quarantine.yml) registers), the nodes' service states
    from the run store (O(service_states)) and each host's policy (its C(quarantine) section).
  - Decides per host C(contain), C(left_in_service) (the circuit breaker refused), C(operator_out) (kept as the
    operator left it), C(repair), C(return), C(hold), C(unverified) (the audit or the scheduler could not back a
    decision) or C(in_service).
  - Writes the plan as C(quarantine.json) in a new run folder of kind C(quarantine) in O(report_root)
    (C(-check) added in check mode). See C(docs/quarantine.md).
  - This is an action plugin; it runs on the controller only.
author:
  - gpufleet contributors (!UNKNOWN)
options:
  audit_dir:
    description: The run folder of the audit the plan is made from.
    type: path
    required: true
  report_root:
    description: Where the quarantine run folder is created.
    type: path
    required: true
  hosts:
    description: The hosts to plan for.
    type: list
    elements: str
    required: true
  fleet:
    description: Every host the breaker's fleet limit counts (default O(hosts)).
    type: list
    elements: str
  groups:
    description: The inventory's groups (C(groups)), for the breaker's group limits.
    type: dict
  policies:
    description: Effective policies by policy id (RV(gpufleet.core.policy_check#module:policies)).
    type: dict
    required: true
  host_policy:
    description: Each host's policy id (RV(gpufleet.core.policy_check#module:host_policy)).
    type: dict
    required: true
  service_states:
    description: The service state of each node the run store knows (C(gpufleet.core.service_state)); empty when
      the store has none.
    type: dict
extends_documentation_fragment:
  - gpufleet.core.attributes
attributes:
  check_mode:
    support: full
    details: Plans and writes its run folder (named C(-check)) in check mode too; it changes no node.
  diff_mode:
    support: none
seealso:
  - module: gpufleet.core.quarantine_report
"""

EXAMPLES = r"""
- name: Plan the quarantine
  gpufleet.core.quarantine_plan:
    audit_dir: "{{ gpufleet_audit.run_dir }}"
    report_root: "{{ gpufleet_report_root }}"
    hosts: "{{ ansible_play_hosts_all }}"
    groups: "{{ groups }}"
    policies: "{{ gpufleet_policies.policies }}"
    host_policy: "{{ gpufleet_policies.host_policy }}"
  register: gpufleet_quarantine
  delegate_to: localhost
  run_once: true
"""

RETURN = r"""
run_dir:
  description: The quarantine run folder created.
  returned: success
  type: str
audit_run:
  description: The id of the audit the plan is made from.
  returned: success
  type: str
hosts:
  description: The decision for each host (C(action), C(why), C(scheduler), C(triggers), C(reason) put on the node
    for C(contain), C(breaker) for C(left_in_service)).
  returned: success
  type: dict
summary:
  description: The hosts of each action.
  returned: success
  type: dict
exit_status:
  description: 0 nothing left undone, 2 the breaker left nodes in service, 4 a node could not be decided on.
  returned: success
  type: int
"""

from ansible.module_utils.basic import AnsibleModule

# Also the action plugin's argument spec: one definition for both.
ARGUMENT_SPEC = {
    "audit_dir": {"type": "path", "required": True},
    "report_root": {"type": "path", "required": True},
    "hosts": {"type": "list", "elements": "str", "required": True},
    "fleet": {"type": "list", "elements": "str"},
    "groups": {"type": "dict"},
    "policies": {"type": "dict", "required": True},
    "host_policy": {"type": "dict", "required": True},
    "service_states": {"type": "dict"},
}


def main():
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    module.fail_json(msg="gpufleet.core.quarantine_plan runs on the controller as an action plugin; "
                         "it cannot run as a module on a host")


if __name__ == "__main__":
    main()
