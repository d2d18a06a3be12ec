#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
---
module: gpu_validate
short_description: Run active diagnostics (DCGM diag, nvbandwidth, nccl-tests, stress) on an idle GPU host
version_added: 1.1.0
description:
  - Runs the requested checks one after the other, each bounded by its timeout (its whole process group is killed
    at the bound), and returns what each tool reported in RV(validation), the shape of the facts family
    C(validation) (docs/active-checks.md).
  - Before anything runs, reads the GPUs and their processes with C(nvidia-smi -q -x). GPU compute processes, a
    process list that cannot be read, or GPUs that cannot be read at all refuse the run (every requested check
    C(refused)), with the processes and how to proceed (drain or quarantine the node first), unless
    O(allow_busy=true).
  - With a GPU in MIG mode, C(nvbandwidth), C(nccl_all_reduce) and C(stress) are skipped with the reason;
    C(dcgm_diag) runs.
  - A tool that is not found is skipped with the reason. The module fails only on bad options; a check that failed,
    could not run or timed out is reported, and the controller judges it.
  - Never changes clocks, power limits, persistence mode, compute mode or MIG, and never passes a tool such a flag.
    Never uses a shell.
author:
  - gpufleet contributors (!UNKNOWN)
requirements:
  - Python 3.9 or newer on the target.
  - C(nvidia-smi); for each check its tool, C(dcgmi) (DCGM 3.x or 4.x, with nv-hostengine running), C(nvbandwidth),
    C(all_reduce_perf) from nccl-tests, C(gpu_burn) from wilicc/gpu-burn.
notes:
  - Read-only in spirit (it changes no setting) but it B(loads the GPUs) for minutes to hours (DCGM level 3 about
    30 minutes, level 4 one to two hours). Run it on a drained or quarantined node, never beside production work.
  - The checks run on the GPUs the module sees; the tools choose their own GPUs (all of them).
options:
  checks:
    description:
      - The checks to run, in this order whatever the order given. V(dcgm_diag) runs C(dcgmi diag -r LEVEL -j);
        V(nvbandwidth) runs C(nvbandwidth -t TESTCASES); V(nccl_all_reduce) runs C(all_reduce_perf -b MIN -e MAX -f 2
        -g GPUS); V(stress) runs O(stress_tool) for O(stress_seconds).
    type: list
    elements: str
    choices: [dcgm_diag, nvbandwidth, nccl_all_reduce, stress]
    default: [dcgm_diag, nvbandwidth]
  dcgm_level:
    description:
      - The C(dcgmi diag -r) level, 1 (seconds) to 4 (hours).
    type: int
    choices: [1, 2, 3, 4]
    default: 1
  timeouts:
    description:
      - Seconds each check may run before its process group is killed (status C(timeout)); 1 to 14400.
    type: dict
    default: {}
    suboptions:
      dcgm_diag:
        description: Default by level, 300 (1), 900 (2), 3600 (3), 10800 (4).
        type: int
      nvbandwidth:
        description: Default 900.
        type: int
      nccl_all_reduce:
        description: Default 900.
        type: int
      stress:
        description: Default O(stress_seconds) + 300.
        type: int
  nvbandwidth_testcases:
    description:
      - The nvbandwidth test cases to run (C(nvbandwidth -l) lists them).
    type: list
    elements: str
    default: [host_to_device_memcpy_ce, device_to_host_memcpy_ce, device_to_device_memcpy_read_ce]
  nccl:
    description:
      - The nccl-tests C(all_reduce_perf) run.
    type: dict
    default: {}
    suboptions:
      min_bytes:
        description: Smallest message (C(-b)), bytes or with a K, M or G suffix.
        type: str
        default: "8"
      max_bytes:
        description: Largest message (C(-e)).
        type: str
        default: "128M"
      path:
        description: Path of C(all_reduce_perf); found on the C(PATH) when not given.
        type: path
  stress_tool:
    description:
      - The stress check's tool, C(dcgmi diag -r targeted_stress) or gpu-burn's C(gpu_burn).
    type: str
    choices: [dcgm_targeted_stress, gpu_burn]
    default: dcgm_targeted_stress
  stress_seconds:
    description:
      - How long the stress check loads the GPUs, 10 to 7200 seconds.
    type: int
    default: 120
  tool_paths:
    description:
      - Paths of the tools; each is found on the C(PATH) when not given. A given path that is not an executable
        file skips its checks with the reason.
    type: dict
    default: {}
    suboptions:
      dcgmi:
        description: Path of C(dcgmi) (dcgm_diag, and stress with dcgm_targeted_stress).
        type: path
      nvbandwidth:
        description: Path of C(nvbandwidth).
        type: path
      gpu_burn:
        description: Path of C(gpu_burn) (its C(compare.ptx) is used when it lies beside it).
        type: path
  allow_busy:
    description:
      - Run the checks although GPU compute processes run or the process list is unknown. The checks disturb the
        running work and their figures are not comparable.
    type: bool
    default: false
  nvidia_smi:
    description:
      - Path of C(nvidia-smi); found on the C(PATH) when not given.
    type: path
  timeout:
    description:
      - Seconds the C(nvidia-smi) call that reads the GPUs may run; when it cannot answer, the run is refused.
    type: int
    default: 60
extends_documentation_fragment:
  - gpufleet.core.attributes
  - gpufleet.core.attributes.platform
attributes:
  check_mode:
    support: full
    details: Reads the GPUs and their processes, and returns the commands it would run (each check C(skipped) with
      the reason "check mode"); runs no check, so it puts no load on the GPUs. Outside check mode it changes no
      setting either (changed is always false), but the checks load the GPUs (see the notes).
  diff_mode:
    support: none
  platform:
    platforms: linux
seealso:
  - name: DCGM diagnostics
    description: The dcgmi diag run levels and plugins.
    link: https://docs.nvidia.com/datacenter/dcgm/latest/user-guide/dcgm-diagnostics.html
  - name: nvbandwidth
    description: The bandwidth test cases.
    link: https://github.com/NVIDIA/nvbandwidth
  - name: nccl-tests
    description: all_reduce_perf and its columns.
    link: https://github.com/NVIDIA/nccl-tests
"""

EXAMPLES = r"""
- name: Quick check of a drained node (DCGM level 1, host<->device and device-to-device bandwidth)
  gpufleet.core.gpu_validate:
  register: checked

- name: Full validation before a node returns to service
  gpufleet.core.gpu_validate:
    checks: [dcgm_diag, nvbandwidth, nccl_all_reduce, stress]
    dcgm_level: 3
    stress_tool: gpu_burn
    stress_seconds: 300
    nccl:
      max_bytes: 1G
      path: /opt/nccl-tests/build/all_reduce_perf
"""

RETURN = r"""
validation:
  description:
    - What each check reported; the facts family C(validation) of docs/schema/gpu_facts.schema.json, where every field
      is described.
  returned: always
  type: dict
  contains:
    format:
      description: Version of this shape.
      type: int
      sample: 1
    started_at:
      description: When the module started, UTC ISO 8601.
      type: str
    finished_at:
      description: When it finished, UTC ISO 8601.
      type: str
    refused:
      description: Null, or why nothing ran (reason, how_to_proceed, gpu_processes with pid, name and gpu).
      type: dict
    mig_enabled:
      description: A GPU is in MIG mode.
      type: bool
    gpus:
      description: The GPUs the module saw (index, uuid, name, pci_bus_id).
      type: list
      elements: dict
    checks:
      description:
        - The requested checks by name; each result has status (passed, failed, skipped, error, timeout, refused),
          reason, command, duration_s, tool_version, output_tail, and the check's own details.
      type: dict
commands:
  description: The commands run (in check mode, those that would run).
  returned: always
  type: list
  elements: list
msg:
  description: One line per check.
  returned: always
  type: str
"""

import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufleet.core.plugins.module_utils.active_checks import (
    CHECKS, DEFAULT_CHECKS, DEFAULT_TESTCASES, MAX_TIMEOUT_S, STRESS_TOOLS, validate)
from ansible_collections.gpufleet.core.plugins.module_utils.host_io import module_host, run_bounded
from ansible_collections.gpufleet.core.plugins.module_utils.nvsmi_host import NvidiaSmiHostError, read_gpus

ARGUMENT_SPEC = dict(
    checks=dict(type="list", elements="str", choices=list(CHECKS), default=list(DEFAULT_CHECKS)),
    dcgm_level=dict(type="int", choices=[1, 2, 3, 4], default=1),
    timeouts=dict(type="dict", default={}, options=dict((name, dict(type="int")) for name in CHECKS)),
    nvbandwidth_testcases=dict(type="list", elements="str", default=list(DEFAULT_TESTCASES)),
    nccl=dict(type="dict", default={}, options=dict(
        min_bytes=dict(type="str", default="8"), max_bytes=dict(type="str", default="128M"), path=dict(type="path"))),
    stress_tool=dict(type="str", choices=list(STRESS_TOOLS), default="dcgm_targeted_stress"),
    stress_seconds=dict(type="int", default=120),
    tool_paths=dict(type="dict", default={}, options=dict(
        dcgmi=dict(type="path"), nvbandwidth=dict(type="path"), gpu_burn=dict(type="path"))),
    allow_busy=dict(type="bool", default=False),
    nvidia_smi=dict(type="path"),
    timeout=dict(type="int", default=60),
)
STRESS_SECONDS = (10, 7200)


def _size_ok(value):
    value = str(value).strip().upper()
    number = value[:-1] if value and value[-1] in "KMG" else value
    return number.isdigit() and int(number) > 0


def option_problems(params):
    """What is wrong with the options (each names the option and the bad value)."""
    problems = []
    for name, seconds in sorted((params["timeouts"] or {}).items()):
        if seconds is not None and not 1 <= seconds <= MAX_TIMEOUT_S:
            problems.append("timeouts.%s must be 1 to %d seconds, not %s" % (name, MAX_TIMEOUT_S, seconds))
    if not STRESS_SECONDS[0] <= params["stress_seconds"] <= STRESS_SECONDS[1]:
        problems.append("stress_seconds must be %d to %d, not %s" % (STRESS_SECONDS + (params["stress_seconds"],)))
    if params["timeout"] <= 0:
        problems.append("timeout must be a positive number of seconds, not %s" % params["timeout"])
    for key in ("min_bytes", "max_bytes"):
        if not _size_ok(params["nccl"][key]):
            problems.append("nccl.%s must be a positive size such as 8, 64K, 128M or 1G, not %r" % (key, params["nccl"][key]))
    if not params["nvbandwidth_testcases"] and "nvbandwidth" in params["checks"]:
        problems.append("nvbandwidth_testcases is empty: name at least one test case")
    bad = [name for name in params["nvbandwidth_testcases"] if not name.replace("_", "").isalnum()]
    if bad:
        problems.append("nvbandwidth_testcases has names that are not test cases: %s" % ", ".join(map(repr, bad)))
    return problems


def read_host_gpus(host, timeout):
    """({index: gpu}, None) or ({}, why the GPUs could not be read)."""
    if not host.find_bin("nvidia-smi"):
        return {}, "nvidia-smi was not found"
    try:
        return read_gpus(host, timeout, "the GPUs and their processes"), None
    except NvidiaSmiHostError as error:
        return {}, str(error)


def summary(validation):
    if validation["refused"]:
        return "Refused: %s" % validation["refused"]["reason"]
    return "; ".join("%s %s%s" % (name, result["status"], (": " + result["reason"]) if result["reason"] else "")
                     for name, result in validation["checks"].items())


def main():
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    problems = option_problems(module.params)
    if problems:
        module.fail_json(msg="; ".join(problems))
    host = module_host(module, module.params["nvidia_smi"])
    gpus, read_error = read_host_gpus(host, module.params["timeout"])
    validation = validate(module.params, gpus, read_error, host.find_bin, run_bounded,
                          check_mode=module.check_mode, now=time.time)
    commands = [result["command"] for result in validation["checks"].values() if result["command"]]
    module.exit_json(changed=False, validation=validation, commands=commands, msg=summary(validation))


if __name__ == "__main__":
    main()
