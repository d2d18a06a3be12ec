# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
name: acting_refusal
short_description: Why a playbook that changes hosts must not act on this one, or an empty string
version_added: 1.0.0
description:
  - Used by C(remediate.yml) and C(driver_rollout.yml) before any role acts on a host. Runs on the controller and
    contacts nothing.
  - A host whose facts were replayed from a recorded fixture (C(source) V(replay), or before any facts the inventory's
    C(gpufleet_facts_source=replay), as every host of the demo inventory) is refused - its facts describe a recorded
    machine, not the one its connection reaches.
  - A host whose connection is local (it acts on the controller) while its facts' host name (or, without facts, its
    inventory name) is not one of the controller's names is refused.
  - The message names the host, what would have been done (O(plan)), why it is refused and how to proceed.
options:
  _input:
    description: The host's gpu_facts (C(ansible_facts.gpufleet) of its audit), or null before any facts are read.
    type: dict
    required: true
  host:
    description: The inventory name of the host (C(inventory_hostname)).
    type: str
    required: true
  connection:
    description: The connection its tasks use (C(ansible_connection)).
    type: str
    required: true
  facts_source:
    description: Without facts, the inventory's C(gpufleet_facts_source); the facts' own C(source) wins.
    type: str
  plan:
    description: What the playbook would have done on the host, for the message.
    type: str
  part:
    description: V(message) - the whole message; V(reason) - only why the host is refused (the caller writes the rest).
    type: str
    choices: [message, reason]
    default: message
"""

EXAMPLES = r"""
- name: Leave a replayed host alone
  ansible.builtin.debug:
    msg: "{{ gpufleet_refusal }}"
  when: gpufleet_refusal | length > 0
  vars:
    gpufleet_refusal: >-
      {{ ansible_facts.gpufleet | default(none)
         | gpufleet.core.acting_refusal(inventory_hostname, ansible_connection, plan='gpu_settings') }}
"""

RETURN = r"""
_value:
  description: The refusal message, or an empty string when nothing speaks against acting on the host.
  type: str
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.gpufleet.core.plugins.plugin_utils.acting_target import refusal, refusal_message


def acting_refusal(facts, host, connection, facts_source=None, plan=None, part="message"):
    if facts is not None and not isinstance(facts, dict):
        raise AnsibleFilterError("acting_refusal expects the host's gpu_facts or null, got %s" % type(facts).__name__)
    if part not in ("message", "reason"):
        raise AnsibleFilterError("acting_refusal: part must be message or reason, got %r" % (part,))
    facts = facts or {}
    host_facts = facts.get("host") if isinstance(facts.get("host"), dict) else {}
    reason = refusal(str(host), str(connection), facts.get("source") or facts_source, host_facts.get("hostname"))
    if not reason:
        return ""
    return reason if part == "reason" else refusal_message(str(host), reason, plan)


class FilterModule(object):
    def filters(self):
        return {"acting_refusal": acting_refusal}
