#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
---
module: quarantine_report
short_description: Add each host's outcome to a quarantine run's quarantine.json and give each host its verdict
version_added: 1.0.0
description:
  - Reads each host's outcome (the host variable C(gpufleet_quarantine_outcome) that C(playbooks/quarantine.yml)
    sets, with C(step), C(failed), C(msg)), adds them to C(quarantine.json) in O(run_dir) and returns each host's
    verdict for M(gpufleet.core.audit_verdict), which turns it into the playbook's exit status
    (0 done, 2 the breaker left nodes in service, 4 a node could not be decided on or a step failed).
  - Returns the service events of what was done, for M(gpufleet.core.service_state).
  - This is an action plugin; it runs on the controller only.
author:
  - gpufleet contributors (!UNKNOWN)
options:
  run_dir:
    description: The quarantine run folder (RV(gpufleet.core.quarantine_plan#module:run_dir)).
    type: path
    required: true
  hosts:
    description: The hosts whose outcome is read.
    type: list
    elements: str
    required: true
extends_documentation_fragment:
  - gpufleet.core.attributes
attributes:
  check_mode:
    support: full
    details: Writes the outcome in check mode too (the run folder is named C(-check)).
  diff_mode:
    support: none
seealso:
  - module: gpufleet.core.quarantine_plan
  - module: gpufleet.core.audit_verdict
"""

EXAMPLES = r"""
- name: Record the outcome
  gpufleet.core.quarantine_report:
    run_dir: "{{ gpufleet_quarantine.run_dir }}"
    hosts: "{{ ansible_play_hosts_all }}"
  register: gpufleet_quarantine_done
  delegate_to: localhost
  run_once: true
"""

RETURN = r"""
host_verdicts:
  description: Each host's verdict (C(ok), C(fail), C(not_audited)) and message.
  returned: success
  type: dict
exit_status:
  description: The exit status the playbook ends with.
  returned: success
  type: int
path:
  description: The quarantine.json written.
  returned: success
  type: str
events:
  description: The service events of what was done (quarantined, left_in_service, operator_out, kept_out, repair,
    returned), for M(gpufleet.core.service_state).
  returned: success
  type: list
  elements: dict
run_id:
  description: The quarantine run's id (its run folder's name).
  returned: success
  type: str
"""

from ansible.module_utils.basic import AnsibleModule

# Also the action plugin's argument spec: one definition for both.
ARGUMENT_SPEC = {
    "run_dir": {"type": "path", "required": True},
    "hosts": {"type": "list", "elements": "str", "required": True},
}


def main():
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    module.fail_json(msg="gpufleet.core.quarantine_report runs on the controller as an action plugin; "
                         "it cannot run as a module on a host")


if __name__ == "__main__":
    main()
