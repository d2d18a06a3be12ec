#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
---
module: loadstep
short_description: Run one step of a stepwise load test on a GPU host and sample it every second
version_added: 1.1.0
description:
  - Starts the load for one step (a load command given the step's concurrency, or a systemd service's own
    C(ExecStart=) with N workers), samples every GPU and GPU process (memory, utilization, temperature, power,
    clocks, throttle reasons, ECC counts) with C(nvidia-smi -q -x) and the host's CPU, I/O and memory pressure
    (C(/proc/pressure)) every O(interval) seconds, reads the kernel log written meanwhile, and stops the load's
    whole process group at the end.
  - The load is bounded on the host by itself. It runs under coreutils C(timeout) with a hard limit of
    O(duration) + O(warmup) + a few seconds, in a process group of its own that the module kills at the end, so a
    lost connection or an interrupted play cannot leave it running. O(state=stopped) stops what an interrupted
    run left behind.
  - Never changes a GPU setting. With O(concurrency=0) it starts nothing and samples the idle host (step 0).
  - The analysis (whether the step broke, and in which layer) is done on the controller by C(loadstep.yml); see
    docs/loadstep.md.
author:
  - gpufleet contributors (!UNKNOWN)
options:
  state:
    description:
      - V(measured) runs one step; V(stopped) stops every load a previous step left running (from the records in
        C(/run/gpufleet-loadstep)) and starts nothing.
    type: str
    choices: [measured, stopped]
    default: measured
  run_id:
    description: Names the record of the running load in C(/run/gpufleet-loadstep).
    type: str
    default: loadstep
  step:
    description: The step's number (0 is the idle host), given to the load as C(GPUFLEET_LOAD_STEP).
    type: int
    default: 0
  concurrency:
    description: The step's concurrency (workers or requests in flight); V(0) starts no load.
    type: int
    default: 0
  command:
    description:
      - The load command, run with C(/bin/sh -c); C({concurrency}) and C({duration}) in it are replaced, and
        C(GPUFLEET_LOAD_CONCURRENCY), C(GPUFLEET_LOAD_DURATION_SEC) and C(GPUFLEET_LOAD_STEP) are set.
      - It prints one JSON object per line per request or per interval (C(ok), C(latency_ms), optional C(error)
        and C(count)); its exit status counts too.
      - Mutually exclusive with O(service).
    type: str
  service:
    description:
      - A systemd unit whose own C(ExecStart=) (with the unit's C(Environment=)) is started with O(concurrency)
        workers, through O(workers_env) or O(workers_arg). The unit itself is not started.
    type: str
  workers_env:
    description: Environment variable the service reads its worker count from.
    type: str
  workers_arg:
    description: Command-line option that takes the service's worker count.
    type: str
  duration:
    description: Seconds the step is measured after its warm-up.
    type: int
    default: 30
  warmup:
    description: Seconds of warm-up at the start of the step (sampled; the controller does not judge them).
    type: int
    default: 0
  interval:
    description: Seconds between two samples.
    type: float
    default: 1.0
  kernel_log_files:
    description: Kernel log files to read the step's new lines from (Xid and other GPU kernel events).
    type: list
    elements: path
    default: [/var/log/kern.log]
  nvidia_smi:
    description: Path of C(nvidia-smi); found on the C(PATH) when not given.
    type: path
notes:
  - Service mode runs the unit's first C(ExecStart=) command as the module's user with the unit's C(Environment=)
    (not C(EnvironmentFile=), C(User=) or the unit's cgroup limits); a service that needs those is driven through a
    load command instead.
extends_documentation_fragment:
  - gpufleet.core.attributes
  - gpufleet.core.attributes.platform
attributes:
  check_mode:
    support: full
    details: In check mode it returns the plan (command line, environment, seconds) and starts nothing.
  diff_mode:
    support: none
  platform:
    platforms: linux
seealso:
  - module: gpufleet.core.gpu_facts
"""

EXAMPLES = r"""
- name: Sample the idle host (step 0)
  gpufleet.core.loadstep:
    duration: 5

- name: Four requests in flight against the inference endpoint, for 30 s after 5 s of warm-up
  gpufleet.core.loadstep:
    step: 3
    concurrency: 4
    command: /opt/loadgen/http_load --url http://127.0.0.1:8000/v1/completions --concurrency {concurrency}
    duration: 30
    warmup: 5

- name: Stop whatever an interrupted run left behind
  gpufleet.core.loadstep:
    state: stopped
"""

RETURN = r"""
plan:
  description: What the step runs (argv, the environment variables it adds, seconds, hard limit).
  returned: always
  type: dict
measurement:
  description:
    - The step's measurements; the format is documented in docs/loadstep.md (C(step) objects of loadstep.json are
      built from it).
    - C(load) has C(ended) (exited, stopped, timeout, not_started), C(rc), C(early_exit_s), C(records)
      ([t, ok, latency_ms, error, count]), C(stderr_tail), C(left_running); C(samples) one entry per interval with
      C(gpus) and C(pressure); C(kernel) the new C(xid) and C(other) kernel events; C(sampler_errors).
  returned: when state is measured and not in check mode
  type: dict
stopped:
  description: The process groups a previous run left running that were stopped ([{pgid, left}]).
  returned: when state is stopped
  type: list
  elements: dict
"""

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufleet.core.plugins.module_utils import load_sampler
from ansible_collections.gpufleet.core.plugins.module_utils.host_io import module_host

SAMPLE_TIMEOUT = 5


def _systemctl_show(module, unit, prop):
    rc, out, err = module.run_command(["systemctl", "show", "-p", prop, "--value", "--", unit])
    if rc != 0:
        module.fail_json(msg="systemctl show %s of %s failed: %s" % (prop, unit, err.strip() or rc))
    return out


def load_argv(module, seconds):
    """(argv, environment) of the step's load; ([], {}) for step 0."""
    params = module.params
    if params["concurrency"] == 0:
        return [], {}
    if params["command"]:
        argv, additions = load_sampler.command_load(params["command"], params["concurrency"], seconds)
        return argv, additions
    exec_start = load_sampler.unit_exec_start(_systemctl_show(module, params["service"], "ExecStart"))
    environment = load_sampler.unit_environment(_systemctl_show(module, params["service"], "Environment"))
    return load_sampler.service_load(exec_start, environment, params["concurrency"], params["workers_env"],
                                     params["workers_arg"])


def build_plan(module):
    params = module.params
    seconds = params["duration"] + params["warmup"]
    try:
        argv, additions = load_argv(module, seconds)
    except load_sampler.LoadError as error:
        module.fail_json(msg=str(error))
    environment = load_sampler.load_environment(os.environ, additions, params["concurrency"], seconds, params["step"])
    return {
        "argv": argv, "environment": environment, "seconds": seconds, "interval": params["interval"],
        "end_grace": load_sampler.END_GRACE_SECONDS,
        "hard_limit": seconds + load_sampler.END_GRACE_SECONDS + load_sampler.STOP_GRACE_SECONDS,
        "nvidia_smi": params["nvidia_smi"] or module.get_bin_path("nvidia-smi", required=False) or "nvidia-smi",
        "sample_timeout": SAMPLE_TIMEOUT, "kernel_log_files": params["kernel_log_files"],
        "pid_file": load_sampler.pid_file(params["run_id"]),
    }


def shown_plan(plan):
    added = {key: value for key, value in plan["environment"].items() if os.environ.get(key) != value}
    return {"argv": plan["argv"], "environment": added, "seconds": plan["seconds"], "hard_limit": plan["hard_limit"],
            "interval": plan["interval"], "kernel_log_files": plan["kernel_log_files"]}


def main():
    module = AnsibleModule(
        argument_spec=dict(
            state=dict(type="str", choices=["measured", "stopped"], default="measured"),
            run_id=dict(type="str", default="loadstep"),
            step=dict(type="int", default=0),
            concurrency=dict(type="int", default=0),
            command=dict(type="str"),
            service=dict(type="str"),
            workers_env=dict(type="str"),
            workers_arg=dict(type="str"),
            duration=dict(type="int", default=30),
            warmup=dict(type="int", default=0),
            interval=dict(type="float", default=1.0),
            kernel_log_files=dict(type="list", elements="path", default=["/var/log/kern.log"]),
            nvidia_smi=dict(type="path"),
        ),
        mutually_exclusive=[("command", "service")],
        supports_check_mode=True,
    )
    params = module.params
    if params["state"] == "stopped":
        stopped = [] if module.check_mode else load_sampler.stop_recorded()
        module.exit_json(changed=bool(stopped), stopped=stopped, plan={})
    if params["concurrency"] < 0 or params["duration"] < 1 or params["warmup"] < 0 or params["interval"] <= 0:
        module.fail_json(msg="concurrency and warmup must not be negative, duration and interval must be positive")
    if params["concurrency"] and not (params["command"] or params["service"]):
        module.fail_json(msg="a step with load needs command or service")
    plan = build_plan(module)
    if module.check_mode:
        module.exit_json(changed=False, plan=shown_plan(plan))
    try:
        measurement = load_sampler.Step(module_host(module, plan["nvidia_smi"]), plan).run()
    except load_sampler.LoadError as error:
        module.fail_json(msg=str(error), plan=shown_plan(plan))
    # a load was started and stopped; the host's settings are untouched
    module.exit_json(changed=bool(plan["argv"]), plan=shown_plan(plan), measurement=measurement)


if __name__ == "__main__":
    main()
