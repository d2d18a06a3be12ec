#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
---
module: rma_packet
short_description: Write a node's return-to-vendor packet from the run store and its latest incident bundle
version_added: 1.1.0
description:
  - The last step of the repair ladder (C(docs/quarantine.md), "Return-to-vendor packet"), after the policy's number
    of failed repairs. Writes C(<run_folder>/rma/<host>.tar.gz) holding C(manifest.json) (what the packet holds
    with checksums, the failing GPUs' serials, UUIDs and PCI bus ids, the findings of the node's latest audit, its
    service state), C(README.txt) for the vendor, C(history.json) (the node's audits in the run store with their
    findings, its service events), C(facts.json) (its newest facts the store kept) and, when an incident run under
    the report root collected one, the node's newest evidence bundle and that incident's C(fault-log.md).
  - A failing GPU that fell off the bus has no serial in the newest facts; its serial and UUID come from the newest
    kept facts that had them.
  - Fails, writing nothing, when the run store cannot be read or knows nothing of the node. What is not there (no
    incident bundle, no kept facts) is listed under C(missing) in the manifest and the README.
  - This is an action plugin; it runs on the controller only.
author:
  - gpufleet contributors (!UNKNOWN)
options:
  host:
    description: The node (inventory hostname).
    type: str
    required: true
  run_folder:
    description: The run folder that gets C(rma/<host>.tar.gz) (the packet's folder is created).
    type: path
    required: true
  report_root:
    description: The report root; its incident run folders are searched for the node's newest evidence bundle, and
      the default store is the SQLite file C(gpufleet.sqlite) in it.
    type: path
    required: true
  store:
    description: The run store switch, as M(gpufleet.core.audit_report) takes it; V(false) fails the task.
    type: bool
    default: true
  store_url:
    description: Database URL of the run store, as M(gpufleet.core.audit_report) takes it.
    type: str
extends_documentation_fragment:
  - gpufleet.core.attributes
attributes:
  check_mode:
    support: full
    details: Reads the store and the incident folders and writes nothing; returns the manifest it would write.
  diff_mode:
    support: none
seealso:
  - module: gpufleet.core.service_state
  - module: gpufleet.core.gpu_reset
  - module: gpufleet.core.incident_report
"""

EXAMPLES = r"""
- name: Write node-3's return-to-vendor packet
  gpufleet.core.rma_packet:
    host: node-3
    run_folder: "{{ gpufleet_run_dir }}"
    report_root: "{{ gpufleet_report_root }}"
    store: "{{ gpufleet_store | default(true) }}"
    store_url: "{{ gpufleet_store_url | default(omit) }}"
  delegate_to: localhost
"""

RETURN = r"""
path:
  description: The packet (written, or that would be written in check mode).
  returned: success
  type: str
  sample: /srv/gpufleet/reports/20261206T230000Z-quarantine/rma/node-3.tar.gz
manifest:
  description: The packet's C(manifest.json) (C(format) gpufleet-rma, C(format_version) 1).
  returned: success
  type: dict
  contains:
    failing_gpus:
      description: The GPUs the findings name, with index, name, serial, uuid, pci_bus_id, vbios_version, part
        numbers, lost, and the rules that name them.
      type: list
      elements: dict
    findings:
      description: The findings of the node's latest audit in the store.
      type: list
      elements: dict
    files:
      description: What the packet holds, with size and sha256.
      type: list
      elements: dict
    missing:
      description: What could not be included and why.
      type: list
      elements: str
"""

from ansible.module_utils.basic import AnsibleModule

# Also the action plugin's argument spec: one definition for both.
ARGUMENT_SPEC = {
    "host": {"type": "str", "required": True},
    "run_folder": {"type": "path", "required": True},
    "report_root": {"type": "path", "required": True},
    "store": {"type": "bool", "default": True},
    "store_url": {"type": "str", "no_log": True},
}


def main():
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    module.fail_json(msg="gpufleet.core.rma_packet runs on the controller as an action plugin; "
                         "it cannot run as a module on a host")


if __name__ == "__main__":
    main()
