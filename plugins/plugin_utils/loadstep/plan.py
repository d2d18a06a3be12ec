# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The plan of a loadstep run on one host (docs/loadstep.md, "Safety"): the service's load definition from the
effective policy (with the run's overrides, checked like the policy), the steps that fit the total time
limit, and every reason to refuse the host: not allowed by its policy, not drained, critical hardware findings
in the audit before the run, or a service that cannot be started with N workers."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.gpufleet.core.plugins.plugin_utils.rollout.drain import gpu_processes
from ansible_collections.gpufleet.core.plugins.plugin_utils.policy.merge import deep_merge, to_plain
from ansible_collections.gpufleet.core.plugins.plugin_utils.policy.problems import PolicyError
from ansible_collections.gpufleet.core.plugins.plugin_utils.policy.schema import LOAD_SCHEMA, unit_name
from ansible_collections.gpufleet.core.plugins.plugin_utils.policy.defaults import LOAD_DEFAULTS

# seconds a step costs beyond its duration and warm-up: starting, the end grace, stopping, the round trip
STEP_OVERHEAD_SECONDS = 15


def load_definition(policy, service, overrides=None):
    """(service entry or None, checked load definition): the policy's, with overrides (gpufleet_load_overrides)
    merged on top and checked by the policy's own schema. Raises PolicyError for a bad override."""
    entry = next((item for item in policy["workload"]["services"] if item["name"] == service), None)
    # to_plain, not deepcopy: the policy arrives as ansible's lazy containers, whose deep copy copies the templar
    # (and its plugin loaders: a deprecation warning in ansible-core 2.21)
    definition = to_plain(entry["load"] if entry else LOAD_DEFAULTS)
    if overrides:
        problems = []
        definition = LOAD_SCHEMA(deep_merge(definition, overrides), ("gpufleet_load_overrides",), problems)
        if problems:
            raise PolicyError(problems, "gpufleet_load_overrides")
    return entry, definition


def planned_steps(definition):
    """([{step, concurrency}], [left out]) in order, within max_concurrency and total_timeout_sec."""
    budget = definition["total_timeout_sec"] - definition["idle_sec"] - STEP_OVERHEAD_SECONDS
    step_cost = definition["duration_sec"] + definition["warmup_sec"] + STEP_OVERHEAD_SECONDS
    steps, left_out = [], []
    for concurrency in definition["steps"]:
        if definition["max_concurrency"] is not None and concurrency > definition["max_concurrency"]:
            left_out.append({"concurrency": concurrency, "why": "above load.max_concurrency"})
        elif budget < step_cost:
            left_out.append({"concurrency": concurrency, "why": "does not fit in load.total_timeout_sec"})
        else:
            budget -= step_cost
            steps.append({"step": len(steps) + 1, "concurrency": concurrency})
    return steps, left_out


def _hardware_refusals(host, findings):
    critical = sorted(set(finding["rule"] for finding in findings or []
                          if finding.get("host") == host and finding.get("layer") == "hardware"
                          and finding.get("severity") == "critical"))
    if critical:
        return ["the audit before the run found critical hardware problems (%s): fix the host before putting "
                "load on it" % ", ".join(critical)]
    return []


def _drain_refusals(facts, service, service_active):
    refusals = []
    processes = gpu_processes(facts or {})
    if not processes["known"]:
        refusals.append("the GPU processes of this host could not be read (%s): it cannot be shown to be drained"
                        % processes["unknown"])
    elif processes["pids"]:
        refusals.append("not drained: %d processes use the GPUs (pids %s); stop the workloads first"
                        % (len(processes["pids"]), ", ".join(str(pid) for pid in processes["pids"][:10])))
    if service_active:
        refusals.append("not drained: %s is running; stop it before the load test" % service)
    return refusals


def _definition_refusals(entry, definition, service):
    if definition["command"]:
        return []
    if entry is None:
        return ["%s has no entry in workload.services and no load command was given (load.command, or "
                "gpufleet_load_overrides.command)" % service]
    if not (entry["workers_env"] or entry["workers_arg"]):
        return ["%s sets neither workers_env nor workers_arg, so it cannot be started with N workers: set "
                "load.command" % service]
    return []


def plan(host, policy, service, facts=None, findings=None, service_active=False, overrides=None, audited=True,
         acting_refusal=None):
    """The run's plan for one host: {"host", "service", "mode", "definition", "steps", "left_out", "workers_env",
    "workers_arg", "refusals", "planned_seconds"}. A plan with refusals is not run. acting_refusal: why nothing may
    act on the host at all (plugin_utils/acting_target.py: replayed facts, a local connection to another machine's
    facts), or None."""
    service = unit_name(service)
    refusals = [acting_refusal] if acting_refusal else []
    try:
        entry, definition = load_definition(policy, service, overrides)
    except PolicyError as error:
        return {"host": host, "service": service, "refusals": refusals + [str(error)], "steps": [], "definition": None}
    steps, left_out = planned_steps(definition)
    if not policy["loadstep"]["allowed"]:
        refusals.append("the policy does not allow load tests on this host (set loadstep.allowed: true)")
    if not audited:
        refusals.append("the audit before the run could not read this host")
    refusals += _hardware_refusals(host, findings)
    refusals += _drain_refusals(facts, service, service_active)
    refusals += _definition_refusals(entry, definition, service)
    if not steps:
        refusals.append("no step fits: check load.steps, load.max_concurrency and load.total_timeout_sec")
    return {
        "host": host, "service": service, "mode": "command" if definition["command"] else "service",
        "definition": definition, "steps": steps, "left_out": left_out,
        "workers_env": entry["workers_env"] if entry else None, "workers_arg": entry["workers_arg"] if entry else None,
        "refusals": refusals,
        "planned_seconds": definition["idle_sec"] + STEP_OVERHEAD_SECONDS + len(steps) * (
            definition["duration_sec"] + definition["warmup_sec"] + STEP_OVERHEAD_SECONDS),
    }


def describe(plan_):
    """The plan in a few lines (check mode prints it)."""
    if plan_.get("refusals"):
        return ["%s: refused: %s" % (plan_["host"], reason) for reason in plan_["refusals"]]
    definition = plan_["definition"]
    how = ("load command: %s" % definition["command"]) if plan_["mode"] == "command" else (
        "%s's own ExecStart= with N workers (%s)" % (plan_["service"], plan_["workers_env"] or plan_["workers_arg"]))
    lines = ["%s: %s under load, %s" % (plan_["host"], plan_["service"], how),
             "step 0: the idle host for %ds" % definition["idle_sec"]]
    lines += ["step %d: concurrency %d for %ds after %ds of warm-up" % (
        step["step"], step["concurrency"], definition["duration_sec"], definition["warmup_sec"])
        for step in plan_["steps"]]
    lines += ["left out: concurrency %d (%s)" % (item["concurrency"], item["why"]) for item in plan_["left_out"]]
    lines.append("stops at the first step that breaks; at most %ds in all (load.total_timeout_sec %d)" % (
        plan_["planned_seconds"], definition["total_timeout_sec"]))
    return lines
