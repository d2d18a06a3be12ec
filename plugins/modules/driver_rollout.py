#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
---
module: driver_rollout
short_description: The controller's steps of a driver rollout - plan, batches, report
version_added: 1.0.0
description:
  - Runs on the controller, once for each step of C(driver_rollout.yml) (its tasks delegate to localhost and run
    once); the driver change on each host is the C(driver) role's.
  - O(step=plan) takes the canary batches and the failure limit (C(driver.rollout.batches),
    C(driver.rollout.max_fail_percentage)) from the effective policy of every host, fails when the hosts'
    policies differ on them or when a host's policy lacks what the mode needs (C(driver.pin) for V(rollout),
    C(driver.package) for both) - before any host is contacted -, leaves the hosts of O(refused) out of the
    batches, creates the rollout's run folder C(<report root>/<UTC start time>-driver-<mode>) (C(-check) added in
    check mode; C(-2), C(-3), ... when another rollout that started in the same second holds the name), and starts
    the rollout's state file there.
  - O(step=start_batch) counts the next batch and says whether the rollout has stopped (the hosts of a batch
    after a stop are never touched).
  - O(step=end_batch) records the outcome of each host of the batch and stops the rollout when more than
    C(max_fail_percentage) of the batch failed or was refused.
  - O(step=report) writes the report C(driver-<mode>.json) in the run folder and removes the state file; in check
    mode (a run folder named C(...-check)) it is a plan with C(check_mode) true, the hosts that would change under
    C(would_change) (C(changed) is empty), and every line of its summary starts with C([check mode]).
  - The state file (the batch number, whether the rollout stopped, each host's outcome) is a hidden file in
    the run folder, C(.rollout-state.json), mode 0600; the state file and the
    report are written atomically (a temporary file in the same folder, renamed over the old one), the report
    with mode 0644 less the umask.
options:
  step:
    description: Which step.
    type: str
    required: true
    choices: [plan, start_batch, end_batch, report]
  hosts:
    description:
      - With O(step=plan), the hosts of the rollout, in the order of the batches (C(ansible_play_hosts_all)).
      - With O(step=start_batch), the hosts of the batch (C(ansible_play_batch)).
    type: list
    elements: str
  policies:
    description: With O(step=plan), the C(policies) that M(gpufleet.core.policy_check) returned.
    type: dict
  host_policy:
    description: With O(step=plan), the C(host_policy) that M(gpufleet.core.policy_check) returned.
    type: dict
  mode:
    description:
      - With O(step=plan), V(rollout) (to C(driver.pin)) or V(rollback) (to each host's recorded previous version).
    type: str
    choices: [rollout, rollback]
    default: rollout
  report_root:
    description:
      - With O(step=plan), the report root, the folder the rollout's run folder is made in (default C(reports),
        relative to the current directory), as the C(gpufleet.core.report_root) filter resolves it.
      - O(report_dir) is a deprecated alias, to be removed in 2.0.0.
    type: str
    aliases: [report_dir]
  state_file:
    description: With every step but O(step=plan), the C(state_file) that O(step=plan) returned.
    type: path
  refused:
    description:
      - With O(step=plan), the hosts no role may act on and why (the C(gpufleet.core.acting_refusal) filter with
        O(ignore:part=reason)) - replayed facts, or a local connection to a host that is not the controller. They are
        left out of the batches and reported as not acted on, each with a message giving its plan, why and how to
        proceed.
    type: dict
    default: {}
  outcomes:
    description:
      - With O(step=end_batch), each host of the batch and its outcome, a mapping with C(status) (V(changed),
        V(unchanged), V(failed), V(refused), V(skipped)) and what the report shows of it (C(batch), C(action),
        C(from), C(to), C(msg), ...); V(skipped) (or null) for a host the batch left alone because the rollout
        had stopped.
    type: dict
extends_documentation_fragment:
  - gpufleet.core.attributes
attributes:
  check_mode:
    support: full
    details: The steps do the same in check mode (the report says C(check_mode) true); they change no host.
  diff_mode:
    support: none
author:
  - gpufleet contributors (!UNKNOWN)
seealso:
  - module: gpufleet.core.policy_check
"""

EXAMPLES = r"""
- name: Plan the rollout
  gpufleet.core.driver_rollout:
    step: plan
    hosts: "{{ ansible_play_hosts_all }}"
    policies: "{{ gpufleet_driver_policies.policies }}"
    host_policy: "{{ gpufleet_driver_policies.host_policy }}"
    mode: rollout
    report_root: /srv/gpufleet/reports
  register: gpufleet_driver_rollout
  delegate_to: localhost
  delegate_facts: true
  run_once: true

- name: Record this batch's outcomes
  gpufleet.core.driver_rollout:
    step: end_batch
    state_file: "{{ gpufleet_driver_rollout.state_file }}"
    outcomes: {"gpu-node-01": {"status": "changed", "batch": 1, "action": "install", "from": "550.90.07",
                               "to": "550.127.05"}}
  delegate_to: localhost
  run_once: true

- name: Write the report
  gpufleet.core.driver_rollout:
    step: report
    state_file: "{{ gpufleet_driver_rollout.state_file }}"
  register: gpufleet_driver_report
  delegate_to: localhost
  run_once: true
"""

RETURN = r"""
state_file:
  description: The rollout's state file, for the later steps; null when every host was refused (nothing to roll out).
  returned: O(step=plan)
  type: str
  sample: /srv/gpufleet/reports/20261130T060000Z-driver-rollout/.rollout-state.json
run_dir:
  description: The rollout's run folder, where its state file and its report go; absent when every host was refused.
  returned: O(step=plan) when a host is left to roll out to
  type: str
  sample: /srv/gpufleet/reports/20261130T060000Z-driver-rollout
mode:
  description: V(rollout) or V(rollback).
  returned: O(step=plan)
  type: str
planned:
  description: The hosts of the rollout (those of O(hosts) not in O(refused)).
  returned: O(step=plan)
  type: list
  elements: str
not_acted:
  description: The refused hosts and each one's message (its plan, why it is refused, how to proceed).
  returned: O(step=plan)
  type: dict
settings:
  description: C(batches) and C(max_fail_percentage) shared by the hosts' policies.
  returned: O(step=plan)
  type: dict
  sample: {"batches": [1, "10%", "100%"], "max_fail_percentage": 0}
batches:
  description: The batches, for the play's C(serial) (also set as the fact C(gpufleet_driver_batches)).
  returned: O(step=plan)
  type: list
  elements: raw
  sample: [1, "10%", "100%"]
max_fail_percentage:
  description: The failed share of a batch, in percent, above which the rollout stops.
  returned: O(step=plan)
  type: int
batch_sizes:
  description: The sizes of the batches Ansible makes of the hosts.
  returned: O(step=plan)
  type: list
  elements: int
  sample: [1, 1, 2]
started_at:
  description: When the rollout started (UTC).
  returned: O(step=plan)
  type: str
  sample: "2026-11-30T06:00:00Z"
batch:
  description: The number of the batch, from 1.
  returned: O(step=start_batch), O(step=end_batch)
  type: int
stopped:
  description: Whether the rollout has stopped (a batch failed beyond C(max_fail_percentage)).
  returned: O(step=start_batch), O(step=end_batch)
  type: bool
hosts:
  description: The hosts of the batch.
  returned: O(step=start_batch)
  type: list
  elements: str
failed_hosts:
  description: The hosts of the batch that failed or were refused.
  returned: O(step=end_batch)
  type: list
  elements: str
report:
  description:
    - The report as written - C(mode), C(check_mode), C(started_at), C(finished_at), C(batches), C(batch_sizes),
      C(max_fail_percentage), C(stopped), C(stopped_after_batch), the hosts C(changed) (in check mode
      C(would_change)), C(unchanged), C(failed) (refused included), C(untouched) and C(not_acted), and C(hosts)
      (each host's outcome).
  returned: O(step=report)
  type: dict
path:
  description: The report file written.
  returned: O(step=report)
  type: str
  sample: /srv/gpufleet/reports/20261130T060000Z-driver-rollout/driver-rollout.json
summary:
  description: A few lines for the screen.
  returned: O(step=report)
  type: list
  elements: str
"""

from ansible.module_utils.basic import AnsibleModule

# Also the action plugin's argument spec: one definition for both.
ARGUMENT_SPEC = {
    "step": {"type": "str", "required": True, "choices": ["plan", "start_batch", "end_batch", "report"]},
    "hosts": {"type": "list", "elements": "str"},
    "policies": {"type": "dict"},
    "host_policy": {"type": "dict"},
    "mode": {"type": "str", "choices": ["rollout", "rollback"], "default": "rollout"},
    "report_root": {"type": "str", "aliases": ["report_dir"],
                    "deprecated_aliases": [{"name": "report_dir", "version": "2.0.0",
                                            "collection_name": "gpufleet.core"}]},
    "state_file": {"type": "path"},
    "outcomes": {"type": "dict"},
    "refused": {"type": "dict", "default": {}},
}
REQUIRED_IF = [
    ("step", "plan", ["hosts", "policies", "host_policy"]),
    ("step", "start_batch", ["state_file", "hosts"]),
    ("step", "end_batch", ["state_file", "outcomes"]),
    ("step", "report", ["state_file"]),
]


def main():
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, required_if=REQUIRED_IF, supports_check_mode=True)
    module.fail_json(msg="gpufleet.core.driver_rollout runs on the controller as an action plugin; "
                         "it cannot run as a module on a host")


if __name__ == "__main__":
    main()
