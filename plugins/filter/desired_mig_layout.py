# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
name: desired_mig_layout
short_description: The MIG layout the policy wants on each GPU of a host, with the profile tables
version_added: 1.0.0
description:
  - Takes a host's C(ansible_facts.gpufleet) (from M(gpufleet.core.gpu_facts)) and its effective policy
    (C(ansible_facts.gpufleet_effective_policy) from M(gpufleet.core.policy_check) with C(facts=true)) and
    returns the arguments of M(gpufleet.core.mig_layout) - the desired MIG layout of every GPU that the selected
    C(nvidia-mig-parted) config covers, and the MIG profile table of the GPU model from the shipped
    knowledge and the policy's C(catalogs.mig_profiles).
  - Returns no GPU when the policy has no C(mig.config) or no C(mig.selected).
options:
  _input:
    description: The host's C(ansible_facts.gpufleet).
    type: dict
    required: true
  policy:
    description: The host's effective policy.
    type: dict
    required: true
"""

EXAMPLES = r"""
- name: Apply the policy's MIG layout
  gpufleet.core.mig_layout:
    gpus: "{{ gpufleet_mig.gpus }}"
    profiles: "{{ gpufleet_mig.profiles }}"
  vars:
    gpufleet_mig: "{{ ansible_facts.gpufleet | gpufleet.core.desired_mig_layout(ansible_facts.gpufleet_effective_policy) }}"
"""

RETURN = r"""
_value:
  description:
    - C(selected) (the config name or null), C(gpus) (C(index), C(mig_enabled), C(devices), and C(profiles) only
      for a GPU whose model differs from the first), C(profiles) (the table of the first GPU with MIG devices
      to create, or null), C(models) (model name by GPU index, null when the model has no known profiles).
  type: dict
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.knowledge import load_knowledge
from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.mig_config import MigConfigError, desired_layout


def desired_mig_layout(facts, policy):
    if not isinstance(facts, dict) or not isinstance(policy, dict):
        raise AnsibleFilterError("desired_mig_layout expects the host's gpufleet facts and its effective policy (mappings)")
    mig = policy.get("mig") or {}
    result = {"selected": mig.get("selected"), "gpus": [], "profiles": None, "models": {}}
    if mig.get("config") is None or (mig.get("selected") is None and len(mig["config"].get("mig-configs") or {}) != 1):
        return result
    gpus = facts.get("gpus") or []
    try:
        layout = desired_layout(mig["config"], mig.get("selected"), gpus)
        knowledge = load_knowledge(policy.get("catalogs"))
    except (MigConfigError, ValueError) as error:
        raise AnsibleFilterError("desired_mig_layout: %s" % error)
    names = dict((gpu.get("index"), gpu.get("name")) for gpu in gpus)
    for index in sorted(layout):
        wanted = layout[index]
        entry = {"index": index, "mig_enabled": wanted["mig_enabled"], "devices": dict(wanted["devices"])}
        model = knowledge.mig_model(names.get(index)) if wanted["mig_enabled"] and wanted["devices"] else None
        result["models"][index] = model["model"] if model else None
        if model is not None:
            if result["profiles"] is None:
                result["profiles"] = model
            elif model["model"] != result["profiles"]["model"]:
                entry["profiles"] = model
        result["gpus"].append(entry)
    return result


class FilterModule:
    def filters(self):
        return {"desired_mig_layout": desired_mig_layout}
