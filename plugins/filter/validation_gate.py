# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
name: validation_gate
short_description: Whether active checks may run on a node, and the result of a node refused
version_added: 1.0.0
description:
  - Used by C(validate.yml) and the verification step of C(remediate.yml) and C(driver_rollout.yml); the logic is in
    C(plugin_utils/rollout/validation_gate.py). Runs on the controller and contacts nothing.
  - The input is a mapping whose keys depend on O(step).
  - V(scheduler) - why the scheduler may still place work on the node, or an empty string. Keys C(method)
    (C(slurm), C(kubernetes); any other asks nothing), C(output) (the stdout of C(scontrol show node --oneliner
    NODE) or C(kubectl get node NODE --output=json), null when the scheduler could not be asked) and C(node).
  - V(refused) - the C(validation) result of a node refused before any check ran. Keys C(reason), C(checks) (the
    requested checks), C(now) (UTC time) and C(dcgm_level).
  - V(verdict) - why the host fails the active checks of a verification step (C(validation.verify_after)), an empty
    list when it passes (every requested check passed and the active-check rules find nothing at warning or above).
    Keys C(host), C(validation) (gpu_validate's result, null when it gave none), C(msg) (gpu_validate's message),
    C(facts) (the host's gpu_facts) and C(policy) (its effective policy).
options:
  _input:
    description: The inputs of the step.
    type: dict
    required: true
  step:
    description: V(scheduler), V(refused) or V(verdict).
    type: str
    required: true
    choices: [scheduler, refused, verdict]
"""

EXAMPLES = r"""
- name: Refuse a node Slurm still places jobs on
  ansible.builtin.set_fact:
    gpufleet_validate_refusal: >-
      {{ {'method': 'slurm', 'output': scontrol_node.stdout, 'node': inventory_hostname_short}
         | gpufleet.core.validation_gate('scheduler') }}
"""

RETURN = r"""
_value:
  description: V(scheduler) - the reason to refuse the node, or an empty string; V(refused) - the validation result;
    V(verdict) - the problems, a list of strings.
  type: raw
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.gpufleet.core.plugins.plugin_utils.rollout.validation_gate import (
    refused_validation, scheduler_refusal, verification_problems)


def validation_gate(data, step):
    if not isinstance(data, dict):
        raise AnsibleFilterError("validation_gate(%s) expects a mapping, got %s" % (step, type(data).__name__))
    try:
        if step == "scheduler":
            return scheduler_refusal(data["method"], data.get("output"), data["node"])
        if step == "refused":
            return refused_validation(data["reason"], data.get("checks"), data["now"], data.get("dcgm_level") or 1)
        if step == "verdict":
            return verification_problems(data["host"], data.get("validation"), data.get("facts"), data["policy"],
                                         data.get("msg") or "")
    except KeyError as error:
        raise AnsibleFilterError("validation_gate(%s): missing input %s" % (step, error))
    raise AnsibleFilterError("validation_gate: step must be scheduler, refused or verdict, got %r" % (step,))


class FilterModule:
    def filters(self):
        return {"validation_gate": validation_gate}
