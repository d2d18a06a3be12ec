#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
---
module: service_state
short_description: Record what quarantine and repair did to nodes, and return every node's service state
version_added: 1.1.0
description:
  - Appends O(events) (a node quarantined, kept out, left in service by the circuit breaker, a repair tried, a node
    returned to service, a node an operator took out) to the run store's C(service_events) table in one
    transaction, then returns the service state of every node the store has events of, derived from its events in
    the order they were recorded (C(docs/quarantine.md), "Service state").
  - With O(run_folder), writes that state into C(<run_folder>/service.json).
  - Bad events fail the task with a message naming each bad event; none of them is recorded. A store that is off or
    cannot be written fails the task too; a node's service state lives only in the store.
  - With no O(events), only reads (and writes C(service.json)).
  - This is an action plugin; it runs on the controller only.
author:
  - gpufleet contributors (!UNKNOWN)
options:
  report_root:
    description: The report root; the default store is the SQLite file C(gpufleet.sqlite) in it (C(docs/store.md)).
    type: path
    required: true
  store:
    description: The run store switch, as M(gpufleet.core.audit_report) takes it (the inventory's C(gpufleet_store)).
      V(false) turns the store off, and the task fails.
    type: bool
    default: true
  store_url:
    description: Database URL of the run store, as M(gpufleet.core.audit_report) takes it (the inventory variable
      C(gpufleet_store_url)); else C(GPUFLEET_STORE_URL), else the SQLite file under O(report_root).
    type: str
  run_folder:
    description: Folder that gets C(service.json) (created when missing). Omitted, no file is written.
    type: path
  run_id:
    description: The run that records the events (the quarantine run's folder name); stored with each event and
      returned as a state's C(run_id).
    type: str
  events:
    description: The events to record, in order. Each is a mapping with C(host) and C(event), and the optional keys
      below.
    type: list
    elements: dict
    default: []
    suboptions:
      host:
        description: The node (inventory hostname).
        type: str
        required: true
      event:
        description:
          - V(quarantined) the tool took the node out of service; V(kept_out) a quarantined node stays out;
            V(left_in_service) the circuit breaker left the node in service; V(repair) a repair step was tried
            (O(events[].step), O(events[].result)); V(returned) the node is back in service; V(operator_out) an
            operator took the node out (the tool never returns it).
        type: str
        required: true
        choices: [quarantined, kept_out, left_in_service, repair, returned, operator_out]
      at:
        description: When, in ISO 8601 (naive means UTC). Default now.
        type: str
      scheduler:
        description: What took the node out or put it back.
        type: str
        choices: [slurm, kubernetes, services, none]
        default: none
      rule:
        description: The rule of the finding behind the event.
        type: str
      finding:
        description: The finding's one-line summary.
        type: str
      reason:
        description: The text put on the node (the Slurm reason, the taint's or condition's message), or the
          operator's.
        type: str
      step:
        description: For V(repair), the step tried.
        type: str
        choices: [reset, reboot, rma]
      result:
        description: For V(repair), how it went.
        type: str
        choices: [passed, failed]
      detail:
        description: Free text kept with the event.
        type: str
extends_documentation_fragment:
  - gpufleet.core.attributes
attributes:
  check_mode:
    support: full
    details: Records and writes nothing; returns the states as the events would make them.
  diff_mode:
    support: none
seealso:
  - module: gpufleet.core.audit_report
  - module: gpufleet.core.gpu_reset
"""

EXAMPLES = r"""
- name: Record that node-3 was drained for a GPU that fell off the bus
  gpufleet.core.service_state:
    report_root: "{{ gpufleet_report_root }}"
    store: "{{ gpufleet_store | default(true) }}"
    store_url: "{{ gpufleet_store_url | default(omit) }}"
    run_folder: "{{ gpufleet_run_dir }}"
    run_id: "{{ gpufleet_run_dir | basename }}"
    events:
      - host: node-3
        event: quarantined
        scheduler: slurm
        rule: hardware.gpu_lost
        finding: GPU 0000:17:00.0 fell off the bus
        reason: "gpufleet: hardware.gpu_lost (run 20261206T230000Z)"
  delegate_to: localhost
  run_once: true

- name: Read every node's service state
  gpufleet.core.service_state:
    report_root: "{{ gpufleet_report_root }}"
  register: service
  delegate_to: localhost
  run_once: true
"""

RETURN = r"""
states:
  description: The service state of every node the store has events of, by host.
  returned: success
  type: dict
  sample:
    node-3:
      state: quarantined
      since: "2026-12-06T23:00:00Z"
      rule: hardware.gpu_lost
      finding: GPU 0000:17:00.0 fell off the bus
      run_id: 20261206T230000Z
      scheduler: slurm
      reason: "gpufleet: hardware.gpu_lost (run 20261206T230000Z)"
      repairs: [{step: reset, result: failed, at: "2026-12-06T23:05:00Z"}]
      failed_repairs: 1
      last_event: {event: repair, at: "2026-12-06T23:05:00Z", reason: null, detail: null}
recorded:
  description: How many events were recorded (0 in check mode).
  returned: success
  type: int
  sample: 1
events:
  description: The events as stored (times in UTC, texts on one line).
  returned: success
  type: list
  elements: dict
path:
  description: The C(service.json) written, when O(run_folder) is given and not in check mode.
  returned: when written
  type: str
  sample: /srv/gpufleet/reports/quarantine-20261206T230000Z/service.json
"""

from ansible.module_utils.basic import AnsibleModule

# Also the action plugin's argument spec: one definition for both.
ARGUMENT_SPEC = {
    "report_root": {"type": "path", "required": True},
    "store": {"type": "bool", "default": True},
    "store_url": {"type": "str", "no_log": True},
    "run_folder": {"type": "path"},
    "run_id": {"type": "str"},
    "events": {"type": "list", "elements": "dict", "default": [], "options": {
        "host": {"type": "str", "required": True},
        "event": {"type": "str", "required": True,
                  "choices": ["quarantined", "kept_out", "left_in_service", "repair", "returned", "operator_out"]},
        "at": {"type": "str"},
        "scheduler": {"type": "str", "choices": ["slurm", "kubernetes", "services", "none"], "default": "none"},
        "rule": {"type": "str"},
        "finding": {"type": "str"},
        "reason": {"type": "str"},
        "step": {"type": "str", "choices": ["reset", "reboot", "rma"]},
        "result": {"type": "str", "choices": ["passed", "failed"]},
        "detail": {"type": "str"},
    }},
}


def main():
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    module.fail_json(msg="gpufleet.core.service_state runs on the controller as an action plugin; "
                         "it cannot run as a module on a host")


if __name__ == "__main__":
    main()
