#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
---
module: audit_verdict
short_description: Turn one host's audit verdict into its task result, and so into the playbook's exit status
version_added: 1.0.0
description:
  - Runs for each host of the audit after M(gpufleet.core.audit_report) and needs no connection to the host.
  - V(ok) - the host was audited and has nothing at or above the fail severity; the task is ok.
  - V(fail) - the host has findings at or above the fail severity (or was not converged by a remediation); the task
    fails for this host only, so C(ansible-playbook) exits V(2) and the PLAY RECAP names the hosts with findings.
  - V(not_audited) - the audit could not do its job for this host (unreachable, collection failed or timed out,
    invalid policy, no report); the result is marked unreachable, so C(ansible-playbook) exits V(4) (which wins
    over V(2)) and the host leaves the play.
  - This is an action plugin; it runs on the controller only.
author:
  - gpufleet contributors (!UNKNOWN)
options:
  verdict:
    description: The host's verdict, from C(host_verdicts) of M(gpufleet.core.audit_report).
    type: str
    required: true
    choices: [ok, fail, not_audited]
  msg:
    description: Why, shown with the result.
    type: str
    default: ""
extends_documentation_fragment:
  - gpufleet.core.attributes
attributes:
  check_mode:
    support: full
    details: Behaves the same in check mode; it changes nothing.
  diff_mode:
    support: none
seealso:
  - module: gpufleet.core.audit_report
"""

EXAMPLES = r"""
- name: Give each host its verdict
  gpufleet.core.audit_verdict:
    verdict: "{{ gpufleet_audit.host_verdicts[inventory_hostname].verdict | default('not_audited') }}"
    msg: "{{ gpufleet_audit.host_verdicts[inventory_hostname].msg | default('not in the report') }}"
"""

RETURN = r"""
verdict:
  description: The verdict given.
  returned: always
  type: str
  sample: fail
msg:
  description: Why.
  returned: always
  type: str
"""

from ansible.module_utils.basic import AnsibleModule

# Also the action plugin's argument spec: one definition for both.
ARGUMENT_SPEC = {
    "verdict": {"type": "str", "required": True, "choices": ["ok", "fail", "not_audited"]},
    "msg": {"type": "str", "default": ""},
}


def main():
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    module.fail_json(msg="gpufleet.core.audit_verdict runs on the controller as an action plugin; "
                         "it cannot run as a module on a host")


if __name__ == "__main__":
    main()
