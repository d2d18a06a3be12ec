# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
name: loadstep_plan
short_description: The plan of a loadstep run on one host, with every reason to refuse it
version_added: 1.1.0
description:
  - Takes the host's effective policy and returns the plan of C(loadstep.yml) for one service, see docs/loadstep.md -
    the load definition (the service's C(load) keys with O(overrides) merged on top and checked like the policy),
    the steps that fit C(load.total_timeout_sec), and C(refusals), the reasons the host must not be put under load
    (not allowed by C(loadstep.allowed), not drained, critical hardware findings in the audit before the run, a
    service that cannot be started with N workers).
  - C(lines) is the plan in words, as check mode prints it.
options:
  _input:
    description: The host's effective policy (from M(gpufleet.core.policy_check)).
    type: dict
    required: true
  host:
    description: The host's inventory name.
    type: str
    required: true
  service:
    description: The service's systemd unit (C(vllm) means C(vllm.service)).
    type: str
    required: true
  facts:
    description: The host's C(gpufleet) facts from the audit before the run (its GPU processes).
    type: dict
  run_dir:
    description: The run folder of the audit before the run; its C(report.json) has the host's findings.
    type: path
  report_dir:
    description: The same as O(run_dir), under its name before it was renamed (issue 26); O(run_dir) wins.
    type: path
  service_active:
    description: Whether the service's unit is running now.
    type: bool
    default: false
  overrides:
    description: Load keys that replace the policy's for this run (C(gpufleet_load_overrides)).
    type: dict
  audited:
    description: Whether the audit before the run read the host.
    type: bool
    default: true
  acting_refusal:
    description:
      - Why nothing may act on the host at all, from P(gpufleet.core.acting_refusal#filter) with C(part=reason)
        (replayed facts, a local connection to another machine's facts); the first of the plan's C(refusals).
      - Empty or null when nothing speaks against it.
    type: str
"""

EXAMPLES = r"""
- name: Plan the load steps
  ansible.builtin.set_fact:
    gpufleet_load_plan: >-
      {{ gpufleet_host_policy | gpufleet.core.loadstep_plan(host=inventory_hostname, service=gpufleet_load_service,
         facts=gpufleet_collect.ansible_facts.gpufleet, run_dir=gpufleet_audit.run_dir) }}
"""

RETURN = r"""
_value:
  description: The plan - host, service, mode (command or service), definition, steps ([{step, concurrency}]),
    left_out, workers_env, workers_arg, refusals, planned_seconds and lines.
  type: dict
"""

import json
import os

from ansible.errors import AnsibleFilterError

from ansible_collections.gpufleet.core.plugins.plugin_utils.loadstep.plan import describe, plan
from ansible_collections.gpufleet.core.plugins.plugin_utils.reports.format import expanded


def _findings(run_dir):
    if not run_dir:
        return []
    try:
        with open(os.path.join(run_dir, "report.json")) as handle:
            return expanded(json.load(handle)).get("findings") or []  # report.json 1.2+ stores findings compacted
    except (IOError, OSError, ValueError) as error:
        raise AnsibleFilterError("loadstep_plan: cannot read the audit's report in %s: %s" % (run_dir, error))


def loadstep_plan(policy, host, service, facts=None, run_dir=None, service_active=False, overrides=None,
                  audited=True, acting_refusal=None, report_dir=None):
    if not isinstance(policy, dict) or "loadstep" not in policy:
        raise AnsibleFilterError("loadstep_plan expects an effective gpufleet policy (gpufleet.core.policy_check)")
    if not isinstance(service, str) or not service.strip():
        raise AnsibleFilterError("loadstep_plan: name the service (gpufleet_load_service)")
    result = plan(host, policy, service.strip(), facts=facts, findings=_findings(run_dir or report_dir),
                  service_active=bool(service_active), overrides=overrides or None, audited=bool(audited),
                  acting_refusal=acting_refusal or None)
    result["lines"] = describe(result)
    return result


class FilterModule(object):
    def filters(self):
        return {"loadstep_plan": loadstep_plan}
