# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
name: systemd_dropins
short_description: The systemd files the worker_limits and restart_policy roles write, from the policy
version_added: 1.0.0
description:
  - Takes C(workload.services) of a host's effective gpufleet policy and returns the plan of one role for
    that host - the files to write (with their exact content), the gpufleet files to remove, and what to
    report. The same input gives byte for byte the same files, so a second run changes nothing.
  - V(workers) (role C(worker_limits)) - C(<unit>.d/50-gpufleet-workers.conf) with C(Environment=) lines for
    the worker count, C(CUDA_VISIBLE_DEVICES), C(PYTORCH_CUDA_ALLOC_CONF), the service's extra environment
    and, when O(sharing_mode=mps), the MPS client limits.
  - V(restart) (role C(restart_policy)) - C(<unit>.d/50-gpufleet-restart.conf) with C(Restart=),
    C(RestartSec=), C(StartLimitIntervalSec=), C(StartLimitBurst=), C(TimeoutStopSec=), C(RuntimeMaxSec=),
    and a C(gpufleet-recycle-<unit>.timer) with its oneshot service for C(recycle_calendar).
  - A policy the host cannot satisfy (GPU indexes the host does not have, no GPU to derive a worker count
    from, an extra environment variable that a dedicated key also sets) fails with a message naming the
    service and the key.
options:
  _input:
    description: C(workload.services) of the effective policy (full unit names, every key present).
    type: list
    elements: dict
    required: true
  kind:
    description:
      - Which role's files, V(workers) or V(restart).
      - V(units) returns the units to ask C(systemctl show) about instead - the policy's C(.service) units in
        policy order, then the units of gpufleet drop-ins in O(existing) that the policy no longer names.
    type: str
    choices: [units, workers, restart]
    required: true
  systemctl_show:
    description:
      - Output of C(systemctl show --property=Id,LoadState,ActiveState,UnitFileState,ExecStart -- <units>)
        for the units V(units) returns, in that order. Decides which units are installed, which run and
        which crashed.
    type: str
    default: ''
  existing:
    description: Paths of gpufleet files found on the host (from M(ansible.builtin.find)); those not wanted are removed.
    type: list
    elements: str
    default: []
  gpu_count:
    description: GPUs on the host (C(ansible_facts.gpufleet.gpus | length)); needed for V(workers).
    type: int
    default: 0
  sharing_mode:
    description: C(sharing.mode) of the effective policy; V(mps) adds the MPS client limits.
    type: str
"""

EXAMPLES = r"""
- name: Plan the worker drop-ins of this host
  ansible.builtin.set_fact:
    worker_limits_plan: >-
      {{ policy.workload.services | gpufleet.core.systemd_dropins('workers',
           gpu_count=ansible_facts.gpufleet.gpus | length, sharing_mode=policy.sharing.mode,
           systemctl_show=units.stdout, existing=found.files | map(attribute='path')) }}
"""

RETURN = r"""
_value:
  description:
    - The plan. C(write) - files to write, each with C(unit), C(dir), C(path), C(content) (and C(kind) for
      V(restart) - V(dropin), V(timer) or V(recycle_service)). C(remove) - gpufleet files to delete, each with
      C(unit) and C(path). C(missing) - policy services not installed on the host. C(unsupported) - policy
      units that are not C(.service) units.
    - V(workers) adds C(restart) (units of C(write) and C(remove) that a change restarts - running, or
      failed although enabled), C(failed) (those of them that failed, to C(reset-failed) first) and
      C(workers_arg_unwired) (services with C(workers_arg) whose C(ExecStart=) does not pass
      C(${GPUFLEET_WORKERS})).
    - V(restart) adds C(timers) (recycle timers to enable), C(stale_timers) (recycle timers to stop and
      disable before their files are removed) and C(recover) (services that failed although enabled,
      started again when their restart drop-in changes).
  type: dict
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.gpufleet.core.plugins.plugin_utils.systemd_dropins import (
    restart_policy_plan, unit_states, units_to_show, worker_limits_plan)


def systemd_dropins(services, kind, systemctl_show="", existing=(), gpu_count=0, sharing_mode=None):
    if not isinstance(services, list) or not all(isinstance(service, dict) and "name" in service
                                                 for service in services):
        raise AnsibleFilterError("systemd_dropins expects workload.services of the effective policy (a list "
                                 "of mappings with 'name'), got %r" % (services,))
    units = units_to_show(services, list(existing))
    if kind == "units":
        return units
    states = unit_states(systemctl_show or "", units)
    try:
        if kind == "workers":
            return worker_limits_plan(services, int(gpu_count), sharing_mode, states, list(existing))
        if kind == "restart":
            return restart_policy_plan(services, states, list(existing))
    except ValueError as error:
        raise AnsibleFilterError("gpufleet policy cannot be applied on this host: %s" % error)
    raise AnsibleFilterError("systemd_dropins: kind must be 'units', 'workers' or 'restart', got %r" % (kind,))


class FilterModule:
    def filters(self):
        return {"systemd_dropins": systemd_dropins}
