#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
---
module: gpu_reset
short_description: Reset NVIDIA GPUs with nvidia-smi -r on an idle node, and check that they answer again
version_added: 1.1.0
description:
  - The first repair step of quarantine (C(docs/quarantine.md), "GPU reset"). Reads the GPUs and their processes
    with C(nvidia-smi -q -x); refuses, changing nothing, while any GPU process runs on the host or while the process
    list of a GPU to reset cannot be read (RV(outcome=refused), with RV(reason); the task does not fail).
  - Otherwise resets each selected GPU with C(nvidia-smi -r -i <PCI bus id>) and checks that it answers
    C(nvidia-smi -q -x -i <PCI bus id>) again. RV(outcome=passed) when every GPU did, RV(outcome=failed) otherwise;
    the task does not fail on a failed reset, so that the next repair step (a reboot) can follow.
  - GPUs are named to C(nvidia-smi) by their PCI bus id, as nvidia-smi's own indexes of the
    others shift while a GPU is lost. A GPU that fell off the bus (Xid 79) is selected by the audit's index (its position in PCI
    order) or with O(gpus=all).
  - "Caveats of the real tool: the reset needs root and no process holding the GPU, including monitoring agents
    (DCGM's C(nv-hostengine)), C(nvidia-persistenced) on some drivers, and a display server; persistence mode and
    application clocks may return to their defaults. On NVSwitch systems (HGX/DGX A100, H100) a GPU cannot be
    reset alone: the driver resets the GPUs of the baseboard together and the Fabric Manager must be stopped,
    so reset them with O(gpus=all). A GPU that fell off the bus often does not come back from a reset: then a
    reboot, and after that the return-to-vendor packet, are the next steps. A reset does not clear the kernel
    log: an Xid 79 stays in C(dmesg) until the window of the audit's Xid rules passes."
  - Never uses a shell.
author:
  - gpufleet contributors (!UNKNOWN)
requirements:
  - Python 3.9 or newer on the target.
  - C(nvidia-smi), run as root.
options:
  gpus:
    description:
      - V(all), or a list of the GPU indexes to reset (the audit's indexes, lost GPUs included).
    type: raw
    default: all
  timeout:
    description:
      - Seconds one C(nvidia-smi) call (the reading, each reset, each check) may run before it is killed.
    type: int
    default: 120
extends_documentation_fragment:
  - gpufleet.core.nvidia_smi
  - gpufleet.core.attributes
  - gpufleet.core.attributes.platform
attributes:
  check_mode:
    support: full
    details: Reads the GPUs and their processes, runs no reset, and says what it would reset (RV(outcome=would_reset))
      or why it would refuse.
  diff_mode:
    support: none
  platform:
    platforms: linux
seealso:
  - module: gpufleet.core.service_state
  - name: nvidia-smi documentation
    description: The -r (--gpu-reset) option and its requirements.
    link: https://docs.nvidia.com/deploy/nvidia-smi/index.html
"""

EXAMPLES = r"""
- name: Reset every GPU of a drained node
  gpufleet.core.gpu_reset:
    gpus: all
  register: reset

- name: Reset the GPU the audit found lost
  gpufleet.core.gpu_reset:
    gpus: [1]
    timeout: 300
"""

RETURN = r"""
outcome:
  description: V(passed) (every GPU reset and answers again), V(failed) (a reset or its check failed), V(refused)
    (nothing was run, RV(reason) says why), V(would_reset) (check mode).
  returned: always
  type: str
  sample: passed
reason:
  description: Why the reset was refused; null otherwise.
  returned: always
  type: str
  sample: "GPU processes run on this host (GPU 0: pids 4242): drain the node and stop its GPU services first"
gpus:
  description: One entry per selected GPU.
  returned: always
  type: list
  elements: dict
  contains:
    index:
      description: The GPU's index, the audit's (its position in PCI order, lost GPUs included).
      type: int
    pci_bus_id:
      description: Its PCI bus id, by which nvidia-smi was called.
      type: str
    result:
      description: V(passed), V(failed), V(refused) or V(would_reset).
      type: str
    detail:
      description: What happened, with nvidia-smi's own words when it failed.
      type: str
  sample: [{index: 1, pci_bus_id: "00000000:0B:00.0", result: passed, detail: "reset; it answers nvidia-smi -q again"}]
commands:
  description: The reset commands run (in check mode, those that would run).
  returned: always
  type: list
  elements: str
  sample: ["nvidia-smi -r -i 00000000:0B:00.0"]
msg:
  description: What was done.
  returned: always
  type: str
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufleet.core.plugins.module_utils.args_common import nvidia_smi_spec
from ansible_collections.gpufleet.core.plugins.module_utils.gpu_reset import reset_gpus
from ansible_collections.gpufleet.core.plugins.module_utils.host_io import nvidia_smi_module_host
from ansible_collections.gpufleet.core.plugins.module_utils.nvsmi_host import NvidiaSmiHostError

ARGUMENT_SPEC = dict(
    gpus=dict(type="raw", default="all"),
    **nvidia_smi_spec(timeout=120)
)


def main():
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    nvidia_smi, host = nvidia_smi_module_host(module)
    try:
        result = reset_gpus(host, nvidia_smi, module.params["gpus"], module.params["timeout"], module.check_mode)
    except NvidiaSmiHostError as error:
        module.fail_json(msg=str(error), outcome=None, reason=None, gpus=[], commands=[])
    module.exit_json(**result)


if __name__ == "__main__":
    main()
