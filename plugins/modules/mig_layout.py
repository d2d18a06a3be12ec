#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
---
module: mig_layout
short_description: Converge the MIG layout of NVIDIA GPUs with nvidia-smi
version_added: 1.0.0
description:
  - Makes each listed GPU hold exactly the desired MIG devices (GPU instances and their compute instances),
    the way C(nvidia-mig-parted apply) does, with the exact list of C(nvidia-smi) calls known before anything
    runs, so check mode prints the plan.
  - Reads the current state with C(nvidia-smi -q -x) (MIG mode, processes) and C(nvidia-smi mig -lgi) and
    C(-lci) (instances and their placements).
  - Checks that every desired layout fits its GPU model (profiles, counts, slices, non-overlapping
    placements) before touching any GPU, and fails with the reasons when one does not.
  - Keeps the GPU instances that already sit at a planned profile and placement, destroys the compute and
    GPU instances that do not belong, and creates the missing GPU instances at explicit placements
    (C(nvidia-smi mig -cgi <profile id>:<start>)) with their compute instances.
  - Enables or disables MIG mode when needed. The new mode is pending until a GPU reset; the GPU is reset
    only with O(reset=true) and when no process uses it, otherwise the GPU is reported in C(pending_reset)
    and left at that point.
  - Refuses to change a GPU while processes use it unless O(allow_drain=true).
  - Always refuses to change a GPU whose process list is unknown (the C(nvidia-smi -q -x) report has no process
    section for it, or the report is incomplete); an unread process list is never taken as idle, whatever
    O(allow_drain) says.
  - A GPU whose MIG devices already match is not touched, even when its instances are grouped differently
    from the plan; a second run with the same input changes nothing.
  - Never uses a shell.
author:
  - gpufleet contributors (!UNKNOWN)
requirements:
  - Python 3.9 or newer on the target.
  - C(nvidia-smi) of an NVIDIA driver with MIG support, run as root.
options:
  gpus:
    description:
      - The desired layout of each GPU to manage, by NVML index (as C(nvidia-smi) numbers GPUs). GPUs not
        listed are left alone.
      - The C(gpufleet.core.desired_mig_layout) filter computes this list from the policy's C(mig.config) and
        C(mig.selected).
    type: list
    elements: dict
    required: true
    suboptions:
      index:
        description: GPU index.
        type: int
        required: true
      mig_enabled:
        description: Whether MIG mode should be on.
        type: bool
        default: true
      devices:
        description:
          - "MIG devices as C({profile: count}), in the names C(nvidia-mig-parted) uses (V(3g.40gb),
            V(1c.3g.40gb), V(1g.10gb+me)). Ignored when O(gpus[].mig_enabled=false)."
        type: dict
        default: {}
      profiles:
        description:
          - Profile table of this GPU's model, when it differs from O(profiles).
        type: dict
  profiles:
    description:
      - The MIG profile table of the GPU model, as C(knowledge.mig_model) returns it on the controller
        (C(model), C(slices), C(memory_slices), C(profiles) with C(id), C(compute_slices), C(memory_slices),
        C(max_instances) and C(placements)).
      - Required for every GPU that should hold MIG devices, here or in O(gpus[].profiles).
    type: dict
  allow_drain:
    description:
      - Change GPUs even while processes use them. The caller stops those processes first (the
        C(gpufleet.core.mig_layout) role stops the policy's C(workload.services) when the policy's
        C(mig.allow_drain) is true); C(nvidia-smi) still refuses while a process holds an instance, and the
        module then fails with its message.
    type: bool
    default: false
  reset:
    description:
      - Reset a GPU (C(nvidia-smi -r -i N)) whose MIG mode change is pending, when no process uses it, and
        then create its instances. Without it such a GPU is reported in C(pending_reset).
    type: bool
    default: false
  timeout:
    description:
      - Seconds one C(nvidia-smi) call may run before it is killed and the module fails.
    type: int
    default: 300
extends_documentation_fragment:
  - gpufleet.core.nvidia_smi
  - gpufleet.core.attributes
  - gpufleet.core.attributes.platform
attributes:
  check_mode:
    support: full
    details: Reads the state and returns the plan (C(commands)) without running it.
  diff_mode:
    support: full
    details: Shows the layout of the managed GPUs before and after.
  platform:
    platforms: linux
notes:
  - Compute instances are created with the C(nvidia-smi mig -cci) profile ids (0 for one slice, 1 for two,
    2 for three, 3 for four, 4 for seven, 5 for eight, 6 for six), as C(nvidia-smi mig -lcip) lists them.
  - A reset is refused by the driver while any process, including monitoring agents such as DCGM, holds the
    GPU; stop them or reboot the host.
seealso:
  - name: NVIDIA Multi-Instance GPU User Guide
    description: MIG modes, profiles, placements and the nvidia-smi mig commands.
    link: https://docs.nvidia.com/datacenter/tesla/mig-user-guide/
"""

EXAMPLES = r"""
- name: Two 3g.40gb instances on every A100 80GB of the host
  gpufleet.core.mig_layout:
    gpus:
      - {index: 0, devices: {3g.40gb: 2}}
      - {index: 1, devices: {3g.40gb: 2}}
    profiles: "{{ gpufleet_a100_80gb_profiles }}"
    reset: true

- name: Show what would be run
  gpufleet.core.mig_layout:
    gpus: [{index: 0, devices: {1g.10gb: 7}}]
    profiles: "{{ gpufleet_a100_80gb_profiles }}"
  check_mode: true
  register: gpufleet_mig_plan

- name: Turn MIG off on GPU 3 (its instances are destroyed first)
  gpufleet.core.mig_layout:
    gpus: [{index: 3, mig_enabled: false}]
    reset: true
"""

RETURN = r"""
commands:
  description: The nvidia-smi calls run (in check mode, those that would run), in order.
  returned: always
  type: list
  elements: str
  sample: ["nvidia-smi mig -dci -i 0 -gi 1 -ci 0", "nvidia-smi mig -dgi -i 0 -gi 1", "nvidia-smi mig -cgi 9:4 -i 0 -C"]
plan:
  description: Per managed GPU, what was (or would be) done.
  returned: always
  type: list
  elements: dict
  contains:
    index:
      description: GPU index.
      type: int
    steps:
      description: The nvidia-smi calls for this GPU, with what each does.
      type: list
      elements: dict
    pending_reset:
      description: The GPU's MIG mode change waits for a reset that was not done.
      type: bool
pending_reset:
  description: GPUs whose MIG mode change waits for a reset (O(reset=false), or processes use the GPU).
  returned: always
  type: list
  elements: int
  sample: [0]
busy_gpus:
  description: GPUs to change that processes use, with their pids (changed only with O(allow_drain=true)).
  returned: always
  type: dict
  sample: {"0": [4242, 4243]}
layout:
  description: MIG mode and devices of each managed GPU before and after the run (after = planned in check mode).
  returned: always
  type: dict
  contains:
    before:
      description: "{gpu index: {mig_enabled, mig_enabled_pending, devices}}"
      type: dict
    after:
      description: Same shape, after the run.
      type: dict
msg:
  description: What was done, or why a GPU was left as it is.
  returned: always
  type: str
"""

import re

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufleet.core.plugins.module_utils.host_io import nvidia_smi_module_host
from ansible_collections.gpufleet.core.plugins.module_utils.mig_plan import (
    NEW_GI, MigConfigError, actual_layout, canonical_profile_name, feasibility_reasons, gpu_plan, instance_steps,
    layout_matches, parse_profile, step_command)
from ansible_collections.gpufleet.core.plugins.module_utils.args_common import nvidia_smi_spec
from ansible_collections.gpufleet.core.plugins.module_utils.nvsmi_host import (
    NvidiaSmiHostError, busy_among, check_present, diff_text, on_off, pids, processes_known,
    refuse_busy, refuse_unknown, stringify, unknown_among)
from ansible_collections.gpufleet.core.plugins.module_utils.nvsmi_host import read_gpus as read_nvidia_smi

MODE_ACTIONS = ("enable_mig", "disable_mig")
_CREATED_GI = re.compile(r"created GPU instance ID\s+(\d+)", re.IGNORECASE)

ARGUMENT_SPEC = dict(
    gpus=dict(type="list", elements="dict", required=True, options=dict(
        index=dict(type="int", required=True),
        mig_enabled=dict(type="bool", default=True),
        devices=dict(type="dict", default={}),
        profiles=dict(type="dict"),
    )),
    profiles=dict(type="dict"),
    allow_drain=dict(type="bool", default=False),
    reset=dict(type="bool", default=False),
    **nvidia_smi_spec(timeout=300)
)

CHANGE = "MIG layout"


class MigLayoutError(NvidiaSmiHostError):
    """Stops the run: msg for the user, plus what had been run already."""


# ---------------------------------------------------------------- input

def desired_devices(devices, index):
    """{canonical profile: count} of the option, counts as integers; MigLayoutError naming the bad entry."""
    result = {}
    for name, count in (devices or {}).items():
        if parse_profile(name) is None:
            raise MigLayoutError("gpus[index=%d].devices: %r is not a MIG profile such as 3g.40gb or 1c.3g.40gb"
                                 % (index, name))
        if isinstance(count, str) and count.strip().isdigit():
            count = int(count)
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise MigLayoutError("gpus[index=%d].devices.%s: count must be an integer >= 0, got %r" % (index, name, count))
        if count:
            key = canonical_profile_name(name)
            result[key] = result.get(key, 0) + count
    return result


def desired_by_index(params):
    """{index: {"mig_enabled", "devices", "profiles"}} from the gpus option."""
    desired = {}
    for entry in params["gpus"]:
        index = entry["index"]
        if index in desired:
            raise MigLayoutError("gpus: GPU %d is listed twice" % index)
        enabled = entry["mig_enabled"]
        desired[index] = {"mig_enabled": enabled,
                          "devices": desired_devices(entry["devices"], index) if enabled else {},
                          "profiles": entry["profiles"] or params["profiles"]}
    return desired


# ---------------------------------------------------------------- reading the GPUs

def read_gpus(host, timeout):
    """{index: gpus[] fact} from nvidia-smi -q -x, -lgi and -lci; NvidiaSmiHostError when the state is not known."""
    return read_nvidia_smi(host, timeout, "the GPUs' MIG layout", require_complete=True)


def layout_summary(gpu):
    actual = actual_layout(gpu)
    return {"mig_enabled": actual["mig_enabled"], "mig_enabled_pending": actual["mig_enabled_pending"],
            "devices": actual["devices"]}


# ---------------------------------------------------------------- planning

def check_input(desired, gpus):
    """Every listed GPU exists and can take its layout; otherwise MigLayoutError with all the reasons."""
    check_present(gpus, desired)
    reasons = []
    for index in sorted(desired):
        reasons.extend(feasibility_reasons(gpus[index], desired[index], desired[index]["profiles"]))
    if reasons:
        raise MigLayoutError("the desired MIG layout does not fit, nothing was changed: %s" % "; ".join(reasons))


def plan_all(desired, gpus, allow_reset):
    """{index: gpu_plan} for the listed GPUs; a GPU in use is never planned to be reset."""
    plans = {}
    for index in sorted(desired):
        gpu = gpus[index]
        idle = processes_known(gpu) and not pids(gpu)
        plans[index] = gpu_plan(gpu, desired[index], desired[index]["profiles"], allow_reset and idle)
    return plans


def changing(plans):
    return sorted(index for index, plan in plans.items() if plan["steps"])


def refuse_in_use(plans, gpus, allow_drain):
    """Refuses GPUs to change whose processes are unknown, and those in use unless allow_drain; {index: pids} in use."""
    unknown = unknown_among(changing(plans), gpus)
    if unknown:
        refuse_unknown(unknown, CHANGE, ", also with allow_drain: make nvidia-smi -q -x answer completely and run again")
    busy = busy_among(changing(plans), gpus)
    if busy and not allow_drain:
        refuse_busy(busy, CHANGE, "Drain the host (stop the GPU workloads) and run again, or set mig.allow_drain: true "
                    "in the policy so that the mig_layout role stops the services of workload.services around the "
                    "change (module option allow_drain)")
    return busy


def planned_layout(gpu, desired, plan):
    """What layout_summary will say after the plan has run."""
    if plan["pending_reset"]:
        summary = layout_summary(gpu)
        summary["mig_enabled_pending"] = bool(desired["mig_enabled"])
        return summary
    devices = desired["devices"] if desired["mig_enabled"] else {}
    if desired["mig_enabled"] and not plan["steps"]:
        devices = layout_summary(gpu)["devices"]
    return {"mig_enabled": bool(desired["mig_enabled"]), "mig_enabled_pending": bool(desired["mig_enabled"]),
            "devices": dict(devices)}


# ---------------------------------------------------------------- running

class Runner:
    """Runs plan steps with nvidia-smi and keeps the commands that ran."""

    def __init__(self, host, nvidia_smi, timeout):
        self.host = host
        self.nvidia_smi = nvidia_smi
        self.timeout = timeout
        self.commands = []
        self.notes = []
        self.new_gi_ids = {}

    def run(self, item):
        args = [self._resolved(item, arg) for arg in item["args"]]
        result = self.host.run([self.nvidia_smi] + args, self.timeout)
        command = " ".join(["nvidia-smi"] + args)
        self.commands.append(command)
        if result.rc != 0:
            raise MigLayoutError("%s failed (%s) while trying to %s"
                                 % (command, result.describe_failure(), item["description"]))
        if item["action"] == "create_gi":
            self._remember_gi(item, result.stdout or "")
        return result

    def try_run(self, item):
        """Runs a reset; False (and a note saying why) when the driver refuses it."""
        result = self.host.run([self.nvidia_smi] + item["args"], self.timeout)
        command = step_command(item)
        self.commands.append(command)
        if result.rc != 0:
            self.notes.append("GPU %d: %s was refused (%s); the MIG mode change stays pending: stop what uses the "
                              "GPU and run again, or reboot the host." % (item["gpu"], command, result.describe_failure()))
            return False
        return True

    def _resolved(self, item, arg):
        start = item.get("new_gi_start")
        if start is not None and arg == NEW_GI % start:
            gi_id = self.new_gi_ids.get((item["gpu"], start))
            if gi_id is None:
                gi_id = self._find_gi(item["gpu"], start)
            return str(gi_id)
        return arg

    def _remember_gi(self, item, output):
        match = _CREATED_GI.search(output)
        start = int(item["args"][item["args"].index("-cgi") + 1].split(":")[1])
        if match:
            self.new_gi_ids[(item["gpu"], start)] = int(match.group(1))

    def _find_gi(self, index, start):
        for gi in (read_gpus(self.host, self.timeout)[index].get("mig") or {}).get("gpu_instances") or []:
            if (gi.get("placement") or {}).get("start") == start:
                return gi["id"]
        raise MigLayoutError("GPU %d: the GPU instance just created at placement %d is not listed by nvidia-smi mig -lgi"
                             % (index, start))


def apply_plan(runner, index, plan, desired):
    """Runs one GPU's plan; True when the GPU is left waiting for a reset.

    After the -mig call the GPU is read again: a driver that applied the mode at once (it resets an
    idle GPU itself on some models) needs no reset. After a reset the instances are planned again
    from what the GPU then reports.
    """
    want = bool(desired["mig_enabled"])
    for item in plan["steps"]:
        if item["action"] == "reset":
            gpu = read_gpu(runner, index)
            if gpu["mig"]["mode_current"] != want:
                if not runner.try_run(item):
                    return True
                gpu = read_gpu(runner, index)
            return create_after_mode_change(runner, gpu, desired)
        runner.run(item)
        if item["action"] in MODE_ACTIONS and plan["pending_reset"]:
            gpu = read_gpu(runner, index)
            if gpu["mig"]["mode_current"] == want:
                return create_after_mode_change(runner, gpu, desired)
            return True
    return plan["pending_reset"]


def read_gpu(runner, index):
    return read_gpus(runner.host, runner.timeout)[index]


def create_after_mode_change(runner, gpu, desired):
    """Creates the instances on a GPU whose MIG mode just changed; False (not pending)."""
    index, mig = gpu["index"], gpu["mig"]
    if mig["mode_current"] != bool(desired["mig_enabled"]):
        raise MigLayoutError("GPU %d: MIG mode is still %s after the reset" % (index, mig["mode_current"]))
    if desired["mig_enabled"] and not layout_matches(desired, gpu):
        for item in instance_steps(index, mig.get("gpu_instances") or [], desired["devices"], desired["profiles"]):
            runner.run(item)
    return False


def verify(desired, pending, gpus):
    """MigLayoutError when a GPU that was not left pending does not hold its layout now."""
    wrong = [index for index in sorted(desired) if index not in pending and not layout_matches(desired[index], gpus[index])]
    if wrong:
        raise MigLayoutError("GPU %s does not hold the desired MIG layout after the run: %s" % (
            ", ".join(map(str, wrong)), "; ".join("GPU %d has %s" % (i, layout_summary(gpus[i])) for i in wrong)))


# ---------------------------------------------------------------- result

def plan_report(plans, pending):
    return [{"index": index, "pending_reset": index in pending,
             "steps": [{"command": step_command(item), "action": item["action"], "description": item["description"]}
                       for item in plan["steps"]]}
            for index, plan in sorted(plans.items())]


def pending_message(pending):
    if not pending:
        return ""
    return (" GPU %s: the MIG mode change waits for a GPU reset; stop the processes using the GPU and run again "
            "with reset allowed (role variable mig_layout_reset), or reboot the host." % ", ".join(map(str, pending)))


def summary_message(commands, pending, check_mode):
    if not commands:
        done = "MIG layout already as desired."
    else:
        plural = "" if len(commands) == 1 else "s"
        done = "%s %d nvidia-smi call%s." % ("Would run" if check_mode else "Ran", len(commands), plural)
    return done + pending_message(pending)


def describe_layout(layout):
    devices = ", ".join("%s x%d" % (name, count) for name, count in sorted((layout["devices"] or {}).items()))
    pending = layout["mig_enabled_pending"]
    return "mig %s%s, devices: %s" % (
        on_off(layout["mig_enabled"], "unsupported"),
        "" if pending is None or pending == layout["mig_enabled"] else " (%s after reset)" % on_off(pending, ""),
        devices or "none")


def layout_diff(layouts):
    return diff_text(layouts, describe_layout) or "\n"


def run_module(module, host, runner):
    params = module.params
    desired = desired_by_index(params)
    gpus = read_gpus(host, params["timeout"])
    check_input(desired, gpus)
    plans = plan_all(desired, gpus, params["reset"])
    busy = refuse_in_use(plans, gpus, params["allow_drain"])
    before = dict((index, layout_summary(gpus[index])) for index in desired)
    if module.check_mode:
        commands = [step_command(item) for _index, plan in sorted(plans.items()) for item in plan["steps"]]
        after = dict((index, planned_layout(gpus[index], desired[index], plans[index])) for index in desired)
        pending = sorted(index for index, plan in plans.items() if plan["pending_reset"])
    else:
        pending = [index for index in sorted(plans) if apply_plan(runner, index, plans[index], desired[index])]
        commands = runner.commands
        now = read_gpus(host, params["timeout"]) if commands else gpus
        verify(desired, pending, now)
        after = dict((index, layout_summary(now[index])) for index in desired)
    result = dict(changed=bool(commands), commands=commands, plan=plan_report(plans, pending), pending_reset=pending,
                  busy_gpus=dict((str(index), found) for index, found in busy.items()),
                  layout=dict(before=stringify(before), after=stringify(after)),
                  msg=" ".join([summary_message(commands, pending, module.check_mode)] + runner.notes))
    if module._diff:
        result["diff"] = dict(before=layout_diff(before), after=layout_diff(after))
    return result


def main():
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    nvidia_smi, host = nvidia_smi_module_host(module)
    runner = Runner(host, nvidia_smi, module.params["timeout"])
    try:
        result = run_module(module, host, runner)
    except (NvidiaSmiHostError, MigConfigError) as error:
        module.fail_json(msg=str(error), changed=bool(runner.commands), commands=runner.commands)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
