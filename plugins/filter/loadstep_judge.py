# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
name: loadstep_judge
short_description: Whether the last measured load step broke, why and in which layer
version_added: 1.1.0
description:
  - Takes the steps C(loadstep.yml) measured so far ([{step, concurrency, measurement}], step 0 the idle host)
    and judges the last one against the plan's limits, the idle host and the baseline (step 1); see
    docs/loadstep.md, "When a step breaks".
options:
  _input:
    description: The measured steps, in order.
    type: list
    elements: dict
    required: true
  plan:
    description: The run's plan (M(gpufleet.core.loadstep_plan)).
    type: dict
    required: true
  policy:
    description: The host's effective policy (its Xid catalog overrides and temperature margin).
    type: dict
    required: true
"""

EXAMPLES = r"""
- name: Judge the step
  ansible.builtin.set_fact:
    gpufleet_load_verdict: "{{ gpufleet_load_measured | gpufleet.core.loadstep_judge(gpufleet_load_plan, gpufleet_host_policy) }}"
"""

RETURN = r"""
_value:
  description: broke (bool), reason, layer, detail and reasons (every breaking reason found) of the last step.
  type: dict
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.knowledge import load_knowledge
from ansible_collections.gpufleet.core.plugins.plugin_utils.loadstep.report import analyse_steps


def loadstep_judge(measured, plan, policy):
    if not isinstance(measured, list) or not measured:
        raise AnsibleFilterError("loadstep_judge expects the list of measured steps")
    idle, steps = analyse_steps(measured, plan["definition"], load_knowledge(policy["catalogs"]),
                                policy["thresholds"]["temperature_margin_c"], plan["mode"] == "service")
    last = steps[-1] if steps and measured[-1]["concurrency"] else idle
    return dict(last["verdict"], step=last["step"], concurrency=last["concurrency"])


class FilterModule(object):
    def filters(self):
        return {"loadstep_judge": loadstep_judge}
