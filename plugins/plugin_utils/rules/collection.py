# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A collection that failed is never a healthy host: the rule that reads facts.collection."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.findings import rule

RULE_ID = "driver.collection_incomplete"
MAX_REASONS = 10
MAX_EVIDENCE = 10


def collection_state(facts):
    """(status, reasons) of facts.collection; (None, []) for facts older than schema 1.1."""
    collection = (facts or {}).get("collection") or {}
    return collection.get("status"), [str(reason) for reason in collection.get("reasons") or ()]


def _evidence_lines(facts):
    return ["%s %s" % (item.get("kind"), item.get("path")) for item in (facts.get("nvidia_evidence") or ())][:MAX_EVIDENCE]


@rule(RULE_ID, "driver", "critical",
      "The collector could not read what it was asked for: critical when NVIDIA hardware or software is present "
      "but no GPU facts could be read, warning when the facts are partial")
def collection_incomplete(ctx):
    status, reasons = collection_state(ctx.facts)
    if status not in ("failed", "partial"):
        return ()
    driver = ctx.facts.get("driver") or {}
    if status == "failed" and driver.get("mismatch"):
        return ()  # driver.kernel_userspace_mismatch says why nothing answered, and how to fix it
    evidence = {"status": status, "reasons": reasons[:MAX_REASONS], "nvidia_evidence": _evidence_lines(ctx.facts),
                "gpus_read": len(ctx.gpus)}
    first = reasons[0] if reasons else "no reason recorded"
    if status == "failed":
        return [ctx.finding(
            None,
            "NVIDIA hardware or software is present (%s) but no GPU facts could be read: %s"
            % (", ".join(sorted({line.split(" ", 1)[0] for line in evidence["nvidia_evidence"]})) or "seen", first),
            evidence,
            "Nothing is known about this host's GPUs, so it is not healthy. Run nvidia-smi on it: if it hangs, a GPU "
            "has likely fallen off the bus (check dmesg for Xid %s); if it fails, reinstall or reload the driver; "
            "install nvidia-ml-py for the NVML backend. Then audit the host again."
            % ", ".join(str(xid) for xid in sorted(ctx.knowledge.gpu_lost_xids())))]
    return [ctx.finding(
        None,
        "The collection was partial (%d GPUs read): %s" % (len(ctx.gpus), first), evidence,
        "Findings of this host may be missing for what could not be read. Find why the named command or query "
        "stopped (a hung GPU, a slow journal, a too short gpufleet_collect_timeout) and audit again.",
        severity="warning")]
