# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
name: driver_plan
short_description: The controller-side decisions of the driver role for one host
version_added: 1.0.0
description:
  - Used by the C(driver) role; the logic is in C(plugin_utils/rollout/plan.py) and C(plugin_utils/rollout/drain.py). The
    rollout's own steps (its batches, the stop rule, the report) are the action M(gpufleet.core.driver_rollout)'s.
  - The input is a mapping whose keys depend on O(step).
  - V(host) - what one host needs. Keys C(mode) (rollout, rollback, repair), C(policy) (the effective policy),
    C(facts) (gpu_facts), C(record) (the host's C(/var/lib/gpufleet/driver.json) or an empty mapping),
    C(installed) (installed package version or null) or C(packages) (C(ansible_facts.packages) of
    M(ansible.builtin.package_facts), read for C(policy.driver.package) when C(installed) is not given),
    C(package_version) (the exact package version to install, empty for the one of the target driver),
    C(force). Returns C(action) (none, install, restart), C(target), C(installed), C(loaded), C(mismatch),
    C(refused) (reasons the compatibility data gives against the version), C(error), C(expected_gpu_count),
    C(gpu_names), C(install_names) (the package names with version that C(ansible.builtin.apt) and
    C(ansible.builtin.dnf) install, as C(apt) and C(dnf); null without a package or a target).
  - V(verify) - problems after the change (an empty list when verified). Keys C(host), C(facts), C(policy),
    C(version), C(gpu_count).
  - V(record) - the host's new record. Keys C(record), C(plan), C(facts), C(now).
  - V(processes) - the GPU processes before a change. Keys C(facts) (gpu_facts) and C(scan) (the registered
    result of the role's scan for processes with C(/dev/nvidia*) open, used only when gpu_facts could not list
    the processes). Returns C(known), C(pids), C(source), C(unknown) (why gpu_facts did not know).
  - V(slurm_node) - C(found), C(state), C(drain), C(busy), C(reason), C(ours) of C(output) (C(scontrol show
    node -o NODE)) for the role's drain C(reason).
  - V(prior_drain) - whether the node was out of service before the role drained it. Keys C(method), C(output)
    (the scheduler's answer, null when it could not be asked) and C(reason) (the role's drain reason). Returns
    C(drained_before), C(reason), C(ours), C(known).
options:
  _input:
    description: The inputs of the step.
    type: dict
    required: true
  step:
    description: Which decision.
    type: str
    required: true
    choices: [host, verify, record, processes, slurm_node, prior_drain]
"""

EXAMPLES = r"""
- name: Decide what this host needs
  ansible.builtin.set_fact:
    driver_host_plan: >-
      {{ {'mode': 'rollout', 'policy': ansible_facts.gpufleet_effective_policy, 'facts': ansible_facts.gpufleet,
          'record': {}, 'packages': ansible_facts.packages, 'package_version': '', 'force': false}
         | gpufleet.core.driver_plan('host') }}
"""

RETURN = r"""
_value:
  description: Depends on O(step) (see the description).
  type: raw
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.gpufleet.core.plugins.plugin_utils.rollout import drain
from ansible_collections.gpufleet.core.plugins.plugin_utils.rollout import plan
from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.diagnose import knowledge_loader


def _knowledge(policy):
    return knowledge_loader()(policy)


def _host(data):
    package = (data["policy"].get("driver") or {}).get("package")
    installed = data.get("installed")
    if installed is None and "packages" in data:
        installed = plan.installed_package_version(data["packages"], package)
    result = plan.plan_host(data["mode"], data["policy"], data.get("facts") or {}, data.get("record") or {},
                            installed, _knowledge(data["policy"]), bool(data.get("force")))
    result["install_names"] = plan.install_names(package, result["target"], data.get("package_version") or None)
    return result


def _verify(data):
    return plan.verify_driver(data["host"], data.get("facts") or {}, data["policy"], data.get("version"),
                              data.get("gpu_count"), _knowledge(data["policy"]))


def _record(data):
    return plan.updated_record(data.get("record") or {}, data["plan"], data.get("facts") or {}, data["now"])


def _processes(data):
    return drain.gpu_processes(data.get("facts"), data.get("scan"))


def _slurm_node(data):
    return drain.slurm_node(data.get("output"), data["reason"])


def _prior_drain(data):
    return drain.prior_drain(data["method"], data.get("output"), data["reason"])


STEPS = {"host": _host, "verify": _verify, "record": _record, "processes": _processes,
         "slurm_node": _slurm_node, "prior_drain": _prior_drain}


def driver_plan(data, step):
    if step not in STEPS:
        raise AnsibleFilterError("driver_plan: step must be one of %s, got %r" % (", ".join(STEPS), step))
    if not isinstance(data, dict):
        raise AnsibleFilterError("driver_plan(%s) expects a mapping, got %s" % (step, type(data).__name__))
    try:
        return STEPS[step](data)
    except KeyError as error:
        raise AnsibleFilterError("driver_plan(%s): missing input %s" % (step, error))
    except ValueError as error:
        raise AnsibleFilterError("driver_plan(%s): %s" % (step, error))


class FilterModule:
    def filters(self):
        return {"driver_plan": driver_plan}
