# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the driver role needs to know before it drains a host and before it puts it back: whether the
GPU processes are known at all, and what the scheduler said about the node before the role touched it.

A node that was drained or cordoned before the role drained it stays that way afterwards; only the role's
own drain is undone. A Slurm drain whose reason is the role's own reason is the role's (left by a run that
failed after draining), so the next successful run undoes it.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
import re

from ansible_collections.gpufleet.core.plugins.module_utils.gpu_processes import (
    describe_unknown, process_pids, unknown_processes)

# Processes that hold the GPU device files between jobs and are no workload.
DEVICE_HOLDERS_NOT_WORKLOADS = ("nvidia-persistenced",)

_SLURM_STATE = re.compile(r"(?:^|\s)State=(\S+)")
_SLURM_REASON = re.compile(r"(?:^|\s)Reason=(.*?)(?:\s+\[[^\]\s]*@[^\]]*\]|$)")
# Base states of a node with jobs on it (scontrol show node: State=ALLOCATED+DRAIN is "draining").
_SLURM_BUSY = ("ALLOCATED", "MIXED", "COMPLETING")
# States and flags of a node that an operator or Slurm took out of service.
_SLURM_OUT_OF_SERVICE = ("DRAIN", "DRAINING", "DRAINED", "DOWN", "FAIL", "FAILING")


def device_scan_pids(scan_output):
    """Pids of the lines "PID COMM" of the device-file scan (processes with /dev/nvidia* open), without the
    processes that hold the devices between jobs (nvidia-persistenced)."""
    pids = set()
    for line in (scan_output or "").splitlines():
        fields = line.split(None, 1)
        if not fields or not fields[0].isdigit():
            continue
        command = fields[1].strip() if len(fields) > 1 else ""
        if command not in DEVICE_HOLDERS_NOT_WORKLOADS:
            pids.add(int(fields[0]))
    return sorted(pids)


def gpu_processes(facts, scan=None):
    """{"known", "pids", "source", "unknown"}: the GPU processes from gpu_facts, or, where gpu_facts could not
    list them (a driver/library mismatch, a failed collection), from the device-file scan when one ran and
    succeeded (scan: {"rc", "stdout"}). unknown says why the facts did not know; known is false only when
    neither source gave an answer."""
    reasons = unknown_processes(facts)
    if not reasons:
        return {"known": True, "pids": process_pids(facts), "source": "gpu_facts", "unknown": ""}
    unknown = describe_unknown(reasons)
    if isinstance(scan, dict) and scan.get("rc") == 0 and not scan.get("skipped"):
        return {"known": True, "pids": device_scan_pids(scan.get("stdout")), "source": "device files",
                "unknown": unknown}
    return {"known": False, "pids": [], "source": None, "unknown": unknown}


def _slurm_fields(text):
    """{"State": ..., "Reason": ...} of one `scontrol show node -o` line; the reason without its
    "[user@time]" stamp."""
    line = (text or "").strip().splitlines()[0] if (text or "").strip() else ""
    fields = {}
    state = _SLURM_STATE.search(line)
    if state:
        fields["State"] = state.group(1)
    reason = _SLURM_REASON.search(line)
    if reason:
        fields["Reason"] = reason.group(1).strip()
    return fields


def slurm_node(text, own_reason):
    """What `scontrol show node -o NODE` says: {"found", "state", "drain", "busy", "reason", "ours"}.

    drain: out of service before any job can start there (a drain flag, or down or failing); busy: jobs
    still run on it; ours: drained with own_reason, the role's own reason."""
    fields = _slurm_fields(text)
    state = fields.get("State", "")
    parts = [part for part in state.rstrip("*~#!%$@^-").split("+") if part]
    base, flags = (parts[0] if parts else ""), parts[1:]
    reason = fields.get("Reason", "")
    if reason == "none":
        reason = ""
    drain = bool(set(parts) & set(_SLURM_OUT_OF_SERVICE))
    return {"found": bool(state), "state": state, "drain": drain,
            "busy": base in _SLURM_BUSY or "COMPLETING" in flags,
            "reason": reason, "ours": drain and reason == (own_reason or "").strip()}


def kubernetes_node(text):
    """{"found", "unschedulable", "taints"} of `kubectl get node NODE -o json`."""
    try:
        node = json.loads(text or "")
    except ValueError:
        return {"found": False, "unschedulable": False, "taints": []}
    spec = node.get("spec") or {} if isinstance(node, dict) else {}
    taints = ["%s=%s:%s" % (taint.get("key"), taint.get("value", ""), taint.get("effect"))
              for taint in spec.get("taints") or [] if isinstance(taint, dict)]
    return {"found": isinstance(node, dict) and bool(node), "unschedulable": bool(spec.get("unschedulable")),
            "taints": taints}


def prior_drain(method, output, own_reason):
    """{"drained_before", "reason", "ours", "known"}: whether the node was out of service before the role's
    drain, from the scheduler's answer (output: the command's stdout, None when the query failed).

    drained_before means the role must leave the node drained; a Slurm drain with the role's own reason is
    not "before" (a failed run left it). known is false when the scheduler could not be asked."""
    if method == "slurm":
        if output is None:
            return {"drained_before": False, "reason": "", "ours": False, "known": False}
        node = slurm_node(output, own_reason)
        return {"drained_before": node["drain"] and not node["ours"], "reason": node["reason"],
                "ours": node["ours"], "known": node["found"]}
    if method == "kubernetes":
        if output is None:
            return {"drained_before": False, "reason": "", "ours": False, "known": False}
        node = kubernetes_node(output)
        return {"drained_before": node["unschedulable"], "reason": "cordoned (spec.unschedulable)"
                if node["unschedulable"] else "", "ours": False, "known": node["found"]}
    # method command or none: the role cannot ask; the policy's commands decide (docs/policy.md).
    return {"drained_before": False, "reason": "", "ours": False, "known": method == "none"}
