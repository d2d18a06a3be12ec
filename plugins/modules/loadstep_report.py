#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
---
module: loadstep_report
short_description: Analyse the load steps of a loadstep run and write loadstep.json and loadstep.html
version_added: 1.1.0
description:
  - Runs once on the controller at the end of C(loadstep.yml). For each host of O(hosts) it reads the run the
    playbook recorded in the host variable O(result_var) (the plan, the measured steps, how the run ended and
    whether the host was left as it was), judges every step, finds the step that broke and its layer, the memory
    per added worker and the suggested C(workers_per_gpu), and compares the run with the previous loadstep run of
    the same host and service under O(report_root).
  - Creates the run folder O(run_dir) exclusively and writes C(loadstep.json) (docs/loadstep.md) and
    C(loadstep.html) into it atomically.
  - This is an action plugin; it runs on the controller only.
author:
  - gpufleet contributors (!UNKNOWN)
options:
  result_var:
    description: The host variable that holds each host's recorded run.
    type: str
    default: gpufleet_load_run
extends_documentation_fragment:
  - gpufleet.core.attributes
  - gpufleet.core.run_folder
  - gpufleet.core.run_folder.started_at
attributes:
  check_mode:
    support: full
    details: Writes nothing in check mode.
  diff_mode:
    support: none
seealso:
  - module: gpufleet.core.loadstep
"""

EXAMPLES = r"""
- name: Write loadstep.json and loadstep.html
  gpufleet.core.loadstep_report:
    hosts: "{{ ansible_play_hosts_all }}"
    run_dir: reports/20261202T010000Z-loadstep
    report_root: reports
    started_at: "2026-12-02T01:00:00Z"
  delegate_to: localhost
  run_once: true
"""

RETURN = r"""
summary_text:
  description:
    - One line per host (refused, planned, or the step that broke and the suggestion).
    - For the stdout callback C(gpufleet.core.audit) to print after the playbook's last task; with any other
      stdout callback it is printed when this task runs.
  returned: when the stdout callback is C(gpufleet.core.audit)
  type: str
run_dir:
  description: The run folder written.
  returned: unless in check mode
  type: str
report_dir:
  description: The same as RV(run_dir), under its name before issue 26.
  returned: unless in check mode
  type: str
files:
  description: The files written.
  returned: unless in check mode
  type: list
  elements: str
runs:
  description: Per host - status, broke ({step, concurrency, reason, layer, detail} or null), held, suggestion and
    the comparison's verdict.
  returned: always
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufleet.core.plugins.module_utils.args_common import run_folder_spec

ARGUMENT_SPEC = dict(
    run_folder_spec(),
    result_var=dict(type="str", default="gpufleet_load_run"),
)


def main():
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    module.fail_json(msg="gpufleet.core.loadstep_report runs on the controller as an action plugin; "
                         "it cannot run as a module on a host")


if __name__ == "__main__":
    main()
