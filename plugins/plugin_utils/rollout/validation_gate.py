# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Whether active checks may run on a node (validate.yml, the verification step of remediate.yml and the driver
rollout): the scheduler must no longer place work on it (Slurm: drained, no job left; Kubernetes: cordoned), read
as the driver role reads it (rollout/drain.py). A refused node gets the `validation` result gpu_validate gives a
busy node, so that the audit reports it (driver.validation_not_run) instead of passing it."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.gpufleet.core.plugins.module_utils.active_checks import check_result
from ansible_collections.gpufleet.core.plugins.plugin_utils.rollout.drain import kubernetes_node, slurm_node
from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.active_checks import host_findings
from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.diagnose import knowledge_loader, make_context
from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.findings import at_or_above

HOW_TO_PROCEED = ("Drain the node first (Slurm: scontrol update nodename=NODE state=drain reason=...; Kubernetes: "
                  "kubectl cordon NODE and kubectl drain NODE), or quarantine it, and run validate.yml again.")


def scheduler_refusal(method, output, node):
    """Why the scheduler (method slurm or kubernetes; others: none asked) may still place work on node, from its
    answer (output: the command's stdout, None when it could not be asked); "" when it may not."""
    if method not in ("slurm", "kubernetes"):
        return ""
    if output is None:
        return "%s did not answer for node %s: the node cannot be shown to be out of service" % (method, node)
    if method == "slurm":
        state = slurm_node(output, None)
        if not state["found"]:
            return "Slurm's answer for node %s names no state" % node
        if not state["drain"]:
            return "Slurm still places jobs on node %s (State=%s): it is not drained" % (node, state["state"])
        if state["busy"]:
            return "jobs still run on node %s (State=%s): wait until it is DRAINED" % (node, state["state"])
        return ""
    state = kubernetes_node(output)
    if not state["found"]:
        return "kubectl's answer for node %s is not a node" % node
    if not state["unschedulable"]:
        return "Kubernetes still schedules pods on node %s: it is not cordoned" % node
    return ""


def refused_validation(reason, checks, now, dcgm_level=1, how_to_proceed=HOW_TO_PROCEED):
    """The `validation` result (as gpu_validate gives it) of a node refused before any check ran: every requested
    check "refused"."""
    params = {"dcgm_level": dcgm_level, "stress_tool": "dcgm_targeted_stress", "stress_seconds": 0}
    return {"format": 1, "started_at": now, "finished_at": now, "mig_enabled": False, "gpus": [],
            "refused": {"reason": reason, "how_to_proceed": how_to_proceed, "gpu_processes": []},
            "checks": dict((name, check_result(name, params, "refused", reason)) for name in checks or ())}


def _check_problem(name, check):
    return "%s %s%s" % (name, check.get("status"), ": %s" % check["reason"] if check.get("reason") else "")


def verification_problems(host, validation, facts, policy, failure=""):
    """Why a host fails the active checks of its verification step (validation.verify_after), [] when it passes:
    every requested check must have passed (nothing passes that did not run) and none of the active-check rules
    may find anything at warning or above. failure: gpu_validate's message when it returned no result."""
    if not isinstance(validation, dict):
        return ["the active checks gave no result%s" % (": %s" % failure if failure else "")]
    checks = validation.get("checks") if isinstance(validation.get("checks"), dict) else {}
    problems = [_check_problem(name, check or {}) for name, check in sorted(checks.items())
                if (check or {}).get("status") != "passed"]
    if not checks:
        problems.append("no check ran")
    ctx = make_context(host, dict(facts or {}, validation=validation), policy, knowledge_loader()(policy))
    problems += ["%s: %s" % (finding["rule"], finding["summary"]) for finding in host_findings(ctx)
                 if at_or_above(finding["severity"], "warning")]
    return problems
