#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
---
module: run_folder
short_description: Create an audit's run folder exclusively on the controller, before the hosts are collected
version_added: 1.0.0
description:
  - Creates O(path) exclusively, or O(path)-2, -3, ... when another audit that started in the same second holds the
    name, and returns the folder created as the facts C(gpufleet_run_dir) and C(gpufleet_started_at) (with
    C(delegate_to=localhost) and C(delegate_facts=true) they go to the controller's host variables) and as RV(path).
  - The audit (C(playbooks/tasks/audit_run.yml)) runs it once before the collection, so that
    M(gpufleet.core.gpu_facts) writes each host's facts file into it as the host's result arrives, and then
    M(gpufleet.core.audit_report) writes the reports into it (O(gpufleet.core.audit_report#module:create_run_dir=false)).
  - A folder that cannot be created fails the task, with C(gpufleet_run_dir) naming the folder proposed; the audit
    ignores that failure (C(failed_when=false)) and leaves it to M(gpufleet.core.audit_report), which tries again
    and reports why, so that every host is "not audited" (exit status 4).
  - Creates the folder in check mode too, as the audit writes its reports in check mode.
  - This is an action plugin; it runs on the controller only.
author:
  - gpufleet contributors (!UNKNOWN)
options:
  path:
    description: The run folder proposed, normally C(<report root>/<UTC start time>[suffix]) as the C(gpufleet.core.run_dir)
      filter names it; its parents are created.
    type: path
    required: true
  started_at:
    description: The run's start time, returned as the fact C(gpufleet_started_at).
    type: str
    required: true
extends_documentation_fragment:
  - gpufleet.core.attributes
  - gpufleet.core.attributes.facts
attributes:
  check_mode:
    support: full
    details: Creates the folder in check mode too.
  diff_mode:
    support: none
  facts:
    support: full
    details: C(gpufleet_run_dir) and C(gpufleet_started_at) under C(ansible_facts).
seealso:
  - module: gpufleet.core.audit_report
  - module: gpufleet.core.gpu_facts
"""

EXAMPLES = r"""
- name: Name the run folder by its UTC start time and create it
  gpufleet.core.run_folder:
    path: "{{ '/srv/gpufleet/reports' | gpufleet.core.run_dir('audit') }}"
    started_at: "{{ now(utc=true, fmt='%Y-%m-%dT%H:%M:%SZ') }}"
  register: gpufleet_run
  delegate_to: localhost
  delegate_facts: true
  run_once: true
"""

RETURN = r"""
path:
  description: The folder created (O(path), or O(path)-N when that name was taken).
  returned: success
  type: str
  sample: /srv/gpufleet/reports/20261130T060000Z
"""

from ansible.module_utils.basic import AnsibleModule

# Also the action plugin's argument spec: one definition for both.
ARGUMENT_SPEC = {
    "path": {"type": "path", "required": True},
    "started_at": {"type": "str", "required": True},
}


def main():
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    module.fail_json(msg="gpufleet.core.run_folder runs on the controller as an action plugin; "
                         "it cannot run as a module on a host")


if __name__ == "__main__":
    main()
