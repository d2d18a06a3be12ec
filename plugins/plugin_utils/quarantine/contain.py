# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""How quarantine.yml reads and changes a node's place in its scheduler (docs/quarantine.md, "Containment").

The scheduler's answers are parsed by rollout/drain.py (`scontrol show node --oneliner`, `kubectl get node -o
json`); this module decides which scheduler a node has, whether it is out and whose doing that is, and builds the
plain scontrol / kubectl arguments the playbook runs.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
import re

from ansible_collections.gpufleet.core.plugins.plugin_utils.quarantine.plan import REASON_PREFIX, is_own_reason
from ansible_collections.gpufleet.core.plugins.plugin_utils.rollout.drain import kubernetes_node, slurm_node

_NOT_CAMEL = re.compile(r"[^A-Za-z0-9]+")


def _answered(result):
    """stdout of a registered command result that ran and succeeded, else None."""
    if not isinstance(result, dict) or result.get("skipped") or result.get("rc") != 0:
        return None
    return result.get("stdout") or ""


def _error(result, what):
    if not isinstance(result, dict) or result.get("skipped"):
        return "%s did not run" % what
    text = " ".join(str(result.get("stderr") or result.get("msg") or "").split())[:300]
    return "%s exited %s%s" % (what, result.get("rc"), ": %s" % text if text else "")


def _own_condition(node_json, condition_type):
    """The node condition of this type (a dict) in `kubectl get node -o json`, or {}."""
    try:
        node = json.loads(node_json or "")
    except ValueError:
        return {}
    conditions = ((node.get("status") or {}).get("conditions") or []) if isinstance(node, dict) else []
    for condition in conditions:
        if isinstance(condition, dict) and condition.get("type") == condition_type:
            return condition
    return {}


def slurm_state(result, name):
    output = _answered(result)
    if output is None:
        return {"scheduler": "slurm", "name": name, "known": False,
                "error": _error(result, "scontrol show node %s" % name)}
    node = slurm_node(output, None)
    if not node["found"]:
        return {"scheduler": "slurm", "name": name, "known": False, "error": "Slurm does not know node %s" % name}
    return {"scheduler": "slurm", "name": name, "known": True, "out": node["drain"], "reason": node["reason"],
            "busy": node["busy"], "state": node["state"]}


def kubernetes_state(result, name, taint_key, condition_type):
    output = _answered(result)
    node = kubernetes_node(output) if output is not None else {"found": False}
    if not node["found"]:
        return {"scheduler": "kubernetes", "name": name, "known": False,
                "error": _error(result, "kubectl get node %s" % name) if output is None
                else "kubectl get node %s gave no node" % name}
    ours = [taint for taint in node["taints"] if taint.split("=", 1)[0] == taint_key]
    condition = _own_condition(output, condition_type)
    if node["unschedulable"] and ours:
        reason = condition.get("message") if is_own_reason(condition.get("message")) else "%s %s" % (
            REASON_PREFIX, ours[0])
    elif node["unschedulable"]:
        reason = "cordoned (spec.unschedulable)%s" % (
            "; taints: %s" % ", ".join(node["taints"]) if node["taints"] else "")
    else:
        reason = ""
    return {"scheduler": "kubernetes", "name": name, "known": True, "out": node["unschedulable"], "reason": reason,
            "busy": False, "taints": node["taints"], "condition": condition}


def node_state(method, slurm_result, kubectl_result, names, contain):
    """{"scheduler", "name", "known", "out", "reason", "busy", "error"} of a node. method: the policy's
    contain.method; auto takes Slurm when scontrol knows the node, else Kubernetes when kubectl does, else the
    host's own services. names: {"slurm": ..., "kubernetes": ...}; contain: the policy's contain section."""
    taint_key = (contain.get("taint") or {}).get("key")
    condition_type = contain.get("condition_type")
    if method == "slurm":
        return slurm_state(slurm_result, names["slurm"])
    if method == "kubernetes":
        return kubernetes_state(kubectl_result, names["kubernetes"], taint_key, condition_type)
    if method == "auto":
        slurm = slurm_state(slurm_result, names["slurm"])
        if slurm["known"]:
            return slurm
        kubernetes = kubernetes_state(kubectl_result, names["kubernetes"], taint_key, condition_type)
        if kubernetes["known"]:
            return kubernetes
        method = "services"
    return {"scheduler": method, "name": names.get("slurm"), "known": True, "out": False, "reason": "", "busy": False}


# ---------------------------------------------------------------- the commands

def slurm_drain_argv(name, reason):
    return ["scontrol", "update", "NodeName=%s" % name, "State=DRAIN", "Reason=%s" % reason]


def slurm_resume_argv(name):
    return ["scontrol", "update", "NodeName=%s" % name, "State=RESUME"]


def taint_value(rule):
    """A taint value Kubernetes accepts (a label value: 63 characters of [A-Za-z0-9_.-])."""
    value = re.sub(r"[^A-Za-z0-9_.-]+", "-", rule or "quarantined").strip("-_.")[:63].strip("-_.")
    return value or "quarantined"


def taint_argv(name, contain, rule):
    taint = contain["taint"]
    return ["kubectl", "taint", "nodes", name, "%s=%s:%s" % (taint["key"], taint_value(rule), taint["effect"]),
            "--overwrite"]


def untaint_argv(name, contain):
    taint = contain["taint"]
    return ["kubectl", "taint", "nodes", name, "%s:%s-" % (taint["key"], taint["effect"])]


def condition_reason(rule, quarantined):
    """A CamelCase reason for the node condition: hardware.gpu_lost -> HardwareGpuLost; Returned on return."""
    if not quarantined:
        return "ReturnedToService"
    words = [word for word in _NOT_CAMEL.split(rule or "") if word]
    return "".join(word[:1].upper() + word[1:] for word in words) or "Quarantined"


def condition_patch(contain, quarantined, rule, message, now):
    """The strategic merge patch of `kubectl patch node --subresource=status`: node conditions merge by type."""
    condition = {"type": contain["condition_type"], "status": "True" if quarantined else "False",
                 "reason": condition_reason(rule, quarantined), "message": message,
                 "lastHeartbeatTime": now, "lastTransitionTime": now}
    return json.dumps({"status": {"conditions": [condition]}}, sort_keys=True)


def condition_argv(name, contain, quarantined, rule, message, now):
    return ["kubectl", "patch", "node", name, "--subresource=status", "--type=strategic",
            "--patch=%s" % condition_patch(contain, quarantined, rule, message, now)]


def returned_message(rule):
    return "%s returned to service after a clean audit (quarantined for %s)" % (REASON_PREFIX, rule or "a finding")


def commands(decision, contain, names, now):
    """{"contain": [argv], "return": [argv]} for the node's scheduler: plain scontrol and kubectl; a bare host's
    services are stopped and started by the playbook's systemd tasks (contain.services)."""
    scheduler = decision.get("scheduler")
    rule = decision.get("rule") or (decision.get("triggers") or [{}])[0].get("rule")
    if scheduler == "slurm":
        name = names["slurm"]
        return {"contain": [slurm_drain_argv(name, decision.get("reason") or REASON_PREFIX)],
                "return": [slurm_resume_argv(name)]}
    if scheduler == "kubernetes":
        name = names["kubernetes"]
        return {"contain": [["kubectl", "cordon", name], taint_argv(name, contain, rule),
                            condition_argv(name, contain, True, rule, decision.get("reason") or REASON_PREFIX, now)],
                "return": [["kubectl", "uncordon", name], untaint_argv(name, contain),
                           condition_argv(name, contain, False, rule, returned_message(rule), now)]}
    return {"contain": [], "return": []}
