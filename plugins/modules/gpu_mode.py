#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
---
module: gpu_mode
short_description: Set persistence mode and compute mode of NVIDIA GPUs with nvidia-smi
version_added: 1.0.0
description:
  - Reads each GPU's persistence mode, compute mode and processes with C(nvidia-smi -q -x) and changes only
    the GPUs that differ, with C(nvidia-smi -i N -pm 0|1) and C(nvidia-smi -i N -c MODE).
  - Refuses to change the compute mode of a GPU that processes use, unless O(allow_busy=true), before changing
    anything.
  - Refuses the same way when a GPU's process list is unknown (the report has no process section for it, or
    C(nvidia-smi) ended with an error after a partial report); an unread process list is never taken as idle.
  - Never uses a shell.
author:
  - gpufleet contributors (!UNKNOWN)
requirements:
  - Python 3.9 or newer on the target.
  - C(nvidia-smi), run as root.
options:
  persistence_mode:
    description:
      - Persistence mode every selected GPU should have; not managed when not given.
      - C(nvidia-smi -pm) does not survive a reboot; hosts with the C(nvidia-persistenced) service should also
        run it (the C(gpufleet.core.gpu_settings) role does).
    type: bool
  compute_mode:
    description:
      - Compute mode every selected GPU should have; not managed when not given.
    type: str
    choices: [default, exclusive_process, prohibited]
  gpus:
    description:
      - GPU indexes to manage; every GPU when not given.
    type: list
    elements: int
  allow_busy:
    description:
      - Change the compute mode of GPUs that processes use, or whose process list could not be read. Running
        processes keep their contexts; the new mode applies to the next ones.
    type: bool
    default: false
extends_documentation_fragment:
  - gpufleet.core.nvidia_smi
  - gpufleet.core.attributes
  - gpufleet.core.attributes.platform
attributes:
  check_mode:
    support: full
    details: Reports the GPUs and commands that would change, and changes nothing.
  diff_mode:
    support: full
    details: Shows the modes of the selected GPUs before and after.
  platform:
    platforms: linux
seealso:
  - name: nvidia-smi documentation
    description: The -pm and -c options.
    link: https://docs.nvidia.com/deploy/nvidia-smi/index.html
"""

EXAMPLES = r"""
- name: Persistence mode on, one process per GPU
  gpufleet.core.gpu_mode:
    persistence_mode: true
    compute_mode: exclusive_process

- name: Only persistence mode, on GPUs 0 and 1
  gpufleet.core.gpu_mode:
    persistence_mode: true
    gpus: [0, 1]
"""

RETURN = r"""
commands:
  description: The nvidia-smi calls run (in check mode, those that would run).
  returned: always
  type: list
  elements: str
  sample: ["nvidia-smi -i 0 -pm 1", "nvidia-smi -i 1 -c EXCLUSIVE_PROCESS"]
changed_gpus:
  description: Indexes of the GPUs that were (or would be) changed.
  returned: always
  type: list
  elements: int
  sample: [0, 1]
gpus:
  description: Persistence mode and compute mode of each selected GPU before and after.
  returned: always
  type: dict
  contains:
    before:
      description: "{gpu index: {persistence_mode, compute_mode}}"
      type: dict
    after:
      description: Same shape, after the run (planned in check mode).
      type: dict
msg:
  description: What was done.
  returned: always
  type: str
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufleet.core.plugins.module_utils.host_io import nvidia_smi_module_host
from ansible_collections.gpufleet.core.plugins.module_utils.args_common import nvidia_smi_spec
from ansible_collections.gpufleet.core.plugins.module_utils.nvsmi_host import (
    NvidiaSmiHostError, busy_among, diff_text, on_off, read_gpus, refuse_busy, refuse_unknown,
    selected, stringify, unknown_among)

COMPUTE_MODE_ARGS = {"default": "DEFAULT", "exclusive_process": "EXCLUSIVE_PROCESS", "prohibited": "PROHIBITED"}

ARGUMENT_SPEC = dict(
    persistence_mode=dict(type="bool"),
    compute_mode=dict(type="str", choices=sorted(COMPUTE_MODE_ARGS)),
    gpus=dict(type="list", elements="int"),
    allow_busy=dict(type="bool", default=False),
    **nvidia_smi_spec(timeout=60)
)

WHAT_IS_READ = "the GPUs' modes"
CHANGE = "compute mode"
ALLOW_BUSY_HINT = "allow the change on busy GPUs (role variable gpu_settings_allow_busy, module option allow_busy)"


class GpuModeError(NvidiaSmiHostError):
    """Stops the run with this message."""


def modes(gpu):
    return {"persistence_mode": gpu.get("persistence_mode"), "compute_mode": gpu.get("compute_mode")}


def gpu_changes(gpu, persistence_mode, compute_mode):
    """[(setting, nvidia-smi args)] that bring one GPU to the wanted modes; a mode that cannot be read is left alone."""
    index = str(gpu["index"])
    current_persistence, current_compute = gpu.get("persistence_mode"), gpu.get("compute_mode")
    changes = []
    if persistence_mode is not None and current_persistence is not None and current_persistence != persistence_mode:
        changes.append(("persistence_mode", ["-i", index, "-pm", "1" if persistence_mode else "0"]))
    if compute_mode is not None and current_compute is not None and current_compute != compute_mode:
        changes.append(("compute_mode", ["-i", index, "-c", COMPUTE_MODE_ARGS[compute_mode]]))
    return changes


def compute_mode_changes(plans):
    """Indexes of the planned GPUs whose compute mode changes: only those are refused when in use."""
    return [index for index, changes in sorted(plans.items()) if any(setting == "compute_mode" for setting, _args in changes)]


def refuse_in_use(plans, gpus):
    changing = compute_mode_changes(plans)
    unknown = unknown_among(changing, gpus)
    if unknown:
        refuse_unknown(unknown, CHANGE, ": make nvidia-smi -q -x answer completely and run again, or, after making "
                       "sure the GPUs are idle, " + ALLOW_BUSY_HINT)
    busy = busy_among(changing, gpus)
    if busy:
        refuse_busy(busy, CHANGE, "Stop the GPU workloads on this host (drain it) and run again, or " + ALLOW_BUSY_HINT)


def planned(gpu, persistence_mode, compute_mode):
    after = modes(gpu)
    if persistence_mode is not None:
        after["persistence_mode"] = persistence_mode
    if compute_mode is not None:
        after["compute_mode"] = compute_mode
    return after


def run_command(host, args, timeout):
    result = host.run([host.find_bin("nvidia-smi")] + args, timeout)
    if result.rc != 0:
        raise GpuModeError("nvidia-smi %s failed: %s" % (" ".join(args), result.describe_failure()))


def describe_modes(values):
    return "persistence_mode %s, compute_mode %s" % (
        on_off(values["persistence_mode"], "unknown"), values["compute_mode"] or "unknown")


def run_module(module, host, done):
    params = module.params
    gpus = read_gpus(host, params["timeout"], WHAT_IS_READ)
    indexes = selected(gpus, params["gpus"])
    plans = dict((index, gpu_changes(gpus[index], params["persistence_mode"], params["compute_mode"]))
                 for index in indexes)
    plans = dict((index, changes) for index, changes in plans.items() if changes)
    if not params["allow_busy"]:
        refuse_in_use(plans, gpus)
    commands = ["nvidia-smi " + " ".join(args) for _index, changes in sorted(plans.items()) for _s, args in changes]
    before = dict((index, modes(gpus[index])) for index in indexes)
    if module.check_mode:
        after = dict((index, planned(gpus[index], params["persistence_mode"], params["compute_mode"]))
                     for index in indexes)
    else:
        for _index, changes in sorted(plans.items()):
            for _setting, args in changes:
                run_command(host, args, params["timeout"])
                done.append("nvidia-smi " + " ".join(args))
        now = read_gpus(host, params["timeout"], WHAT_IS_READ) if plans else gpus
        after = dict((index, modes(now[index])) for index in indexes)
        still = [index for index in plans if gpu_changes(now[index], params["persistence_mode"], params["compute_mode"])]
        if still:
            raise GpuModeError("GPU %s still differ after nvidia-smi reported success: %s" % (
                ", ".join(map(str, sorted(still))), "; ".join("GPU %d: %s" % (i, after[i]) for i in sorted(still))))
    result = dict(changed=bool(plans), commands=commands, changed_gpus=sorted(plans),
                  gpus=dict(before=stringify(before), after=stringify(after)),
                  msg=("%s GPU %s." % ("Would change" if module.check_mode else "Changed", ", ".join(map(str, sorted(plans)))))
                  if plans else "Every selected GPU already has the wanted modes.")
    if module._diff:
        result["diff"] = dict(before=diff_text(before, describe_modes), after=diff_text(after, describe_modes))
    return result


def main():
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    host = nvidia_smi_module_host(module)[1]
    done = []
    try:
        result = run_module(module, host, done)
    except NvidiaSmiHostError as error:
        module.fail_json(msg=str(error), changed=bool(done), commands=done)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
