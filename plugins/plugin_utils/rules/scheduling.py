# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Scheduling-layer rules: MIG mode and layout, compute mode, MPS against the sharing policy, container runtime."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json

from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.findings import gpu_label, rule
from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.mig_config import (
    MigConfigError, actual_layout, check_feasible, desired_layout, layout_diff)

# sharing.mode values under which an MPS daemon contradicts the policy, and those it belongs to.
MPS_CONFLICTS = ("exclusive", "time_slicing")
MPS_EXPECTED = ("mps",)
PENDING_KEYS = ("pending", "mig_enabled_after_reset")


class MigPlan:
    """The policy's desired MIG config, loaded once per policy: config (or None), selected, error."""

    __slots__ = ("config", "selected", "error", "_feasibility")

    def __init__(self, config=None, selected=None, error=None):
        self.config = config
        self.selected = selected
        self.error = error
        self._feasibility = {}

    def infeasible_reasons(self, devices, mig_model):
        """check_feasible(devices, mig_model), searched once per GPU model and layout: a fleet asks the same
        question for each of its GPUs. The entry keeps mig_model, so the id in its key stays that model's."""
        key = (id(mig_model), json.dumps(devices, sort_keys=True))
        if key not in self._feasibility:
            self._feasibility[key] = (mig_model, check_feasible(devices, mig_model))
        return list(self._feasibility[key][1])


def mig_plan(policy):
    """MigPlan for a policy: the document in mig.config, and mig.selected. Policy resolution (policy_check,
    policy.resolve_mig_config) loads mig.config_file into mig.config, once; the rules never read files, and
    desired_layout checks the selected config of a document that was not loaded."""
    mig = policy.get("mig") or {}
    if mig.get("config") is not None:
        return MigPlan(mig["config"], mig.get("selected"))
    if mig.get("config_file") is not None:
        return MigPlan(selected=mig.get("selected"), error="mig.config_file %s was not loaded into the policy "
                                                           "(policy_check loads it)" % mig["config_file"])
    return MigPlan()


def _plan(ctx):
    plan = getattr(ctx.plan, "mig", None) if ctx.plan is not None else None
    return plan if plan is not None else ctx.cached("mig_plan", lambda c: mig_plan(c.policy))


@rule("scheduling.mig_pending", "scheduling", "warning", "MIG mode change waiting for a GPU reset", fix="mig_layout",
      scope="gpu")
def mig_pending(ctx, gpu):
    mig = gpu.get("mig") or {}
    current, pending = mig.get("mode_current"), mig.get("mode_pending")
    if current is None or pending is None or current == pending:
        return ()
    return [ctx.finding(
        gpu,
        "%s MIG mode is %s and becomes %s after a GPU reset"
        % (gpu_label(gpu), "on" if current else "off", "on" if pending else "off"),
        {"mode_current": current, "mode_pending": pending},
        "Drain the GPU and reset it (nvidia-smi -r -i %s) or reboot; the mig_layout role does this and then "
        "creates the desired instances." % gpu.get("index"))]


def _desired(ctx):
    """(plan, {gpu index: desired}, error text) computed once per host."""
    def compute(c):
        plan = _plan(c)
        if plan.config is None:
            return plan, {}, plan.error
        try:
            return plan, desired_layout(plan.config, plan.selected, c.gpus), None
        except MigConfigError as error:
            return plan, {}, str(error)
    return ctx.cached("mig_desired", compute)


def _infeasible_reasons(ctx, gpu, desired):
    """Why the GPU cannot hold the desired layout ([] when it can or when the model is unknown)."""
    if not desired["mig_enabled"]:
        return []
    if (gpu.get("mig") or {}).get("mode_current") is None:
        return ["%s does not support MIG" % (gpu.get("name") or "this GPU")]
    model = ctx.knowledge.mig_model(gpu.get("name")) if ctx.knowledge is not None else None
    if model is None or not desired["devices"]:
        return []
    return _plan(ctx).infeasible_reasons(desired["devices"], model)


def _infeasible(ctx):
    def compute(c):
        _plan_, desired, _error = _desired(c)
        by_index = {gpu.get("index"): gpu for gpu in c.gpus}
        return {index: _infeasible_reasons(c, by_index[index], layout)
                for index, layout in desired.items() if index in by_index}
    return ctx.cached("mig_infeasible", compute)


@rule("scheduling.mig_layout_infeasible", "scheduling", "warning",
      "Desired MIG layout that the GPU model cannot hold (profile, count or placement impossible); the policy "
      "needs fixing, not the host")
def mig_layout_infeasible(ctx):
    plan, desired, _error = _desired(ctx)
    findings = []
    by_index = {gpu.get("index"): gpu for gpu in ctx.gpus}
    for index, reasons in sorted(_infeasible(ctx).items()):
        if not reasons:
            continue
        gpu = by_index[index]
        findings.append(ctx.finding(
            gpu,
            "%s cannot hold MIG config %s: %s" % (gpu_label(gpu), plan.selected, "; ".join(reasons)),
            {"selected": plan.selected, "desired": desired[index], "reasons": reasons},
            "Fix the MIG config in the policy (mig.config or mig.config_file): pick profiles and counts this "
            "model supports (nvidia-smi mig -lgip lists them)."))
    return findings


def _drift_without_pending(diff):
    """layout_diff minus the pending-reset part, which scheduling.mig_pending reports."""
    if not diff:
        return None
    rest = {key: value for key, value in diff.items() if key not in PENDING_KEYS}
    return rest or None


def _describe_diff(diff):
    parts = []
    if "mig_enabled" in diff:
        want, have = diff["mig_enabled"]
        parts.append("MIG %s, wanted %s" % ({True: "on", False: "off", None: "unknown"}[have], "on" if want else "off"))
    for profile, (want, have) in sorted((diff.get("devices") or {}).items()):
        parts.append("%s x%d, wanted x%d" % (profile, have, want))
    if diff.get("empty_gpu_instances"):
        parts.append("empty GPU instances %s" % ", ".join(sorted(diff["empty_gpu_instances"])))
    return "; ".join(parts)


def _want_have(pair):
    return {"want": pair[0], "have": pair[1]}


def _plain_diff(diff):
    """layout_diff with its (want, have) pairs as {"want", "have"} for the report."""
    plain = dict(diff)
    if "mig_enabled" in plain:
        plain["mig_enabled"] = _want_have(plain["mig_enabled"])
    if "devices" in plain:
        plain["devices"] = {profile: _want_have(pair) for profile, pair in plain["devices"].items()}
    return plain


@rule("scheduling.mig_layout_drift", "scheduling", "warning",
      "MIG layout differs from the desired one (policy mig.config / mig.config_file, mig.selected)", fix="mig_layout")
def mig_layout_drift(ctx):
    plan, desired, error = _desired(ctx)
    if error:
        return [ctx.finding(
            None, "Desired MIG layout cannot be read: %s" % error,
            {"selected": plan.selected, "error": error},
            "Fix mig.config / mig.config_file / mig.selected in the policy.")]
    findings = []
    infeasible = _infeasible(ctx)
    for gpu in ctx.gpus:
        index = gpu.get("index")
        if index not in desired or infeasible.get(index):
            continue
        actual = actual_layout(gpu)
        diff = layout_diff(desired[index], actual)
        drift = _drift_without_pending(diff)
        if drift is None:
            continue
        pending = " (a MIG mode change waits for a reset)" if diff.get("pending") else ""
        findings.append(ctx.finding(
            gpu,
            "%s MIG layout differs from %s: %s%s" % (gpu_label(gpu), plan.selected, _describe_diff(drift), pending),
            {"selected": plan.selected, "desired": desired[index],
             "actual": {"mig_enabled": actual.get("mig_enabled"), "devices": actual.get("devices")},
             "diff": _plain_diff(drift)},
            "Drain the GPU and apply the layout with the mig_layout role (remediate.yml), or nvidia-mig-parted apply."))
    return findings


@rule("scheduling.compute_mode", "scheduling", "warning", "Compute mode differs from the policy's compute_mode",
      fix="gpu_settings")
def compute_mode(ctx):
    wanted = ctx.policy.get("compute_mode")
    if wanted is None:
        return ()
    off = [gpu for gpu in ctx.gpus if gpu.get("compute_mode") is not None and gpu.get("compute_mode") != wanted]
    if not off:
        return ()
    modes = sorted({gpu["compute_mode"] for gpu in off})
    return [ctx.finding(
        off[0] if len(off) == 1 else None,
        "Compute mode %s on %d of %d GPUs, policy wants %s" % ("/".join(modes), len(off), len(ctx.gpus), wanted),
        {"wanted": wanted, "gpus": {gpu.get("pci_bus_id"): gpu["compute_mode"] for gpu in off}},
        "Set compute mode %s with the gpu_settings role (nvidia-smi -c %s) while the GPUs are idle." % (wanted, wanted.upper()))]


def mps_running(ctx):
    """True, False or None (unknown), from two fields made for it and nothing else: host.mps_daemon_running
    (the collector matches /proc/<pid>/comm exactly against the MPS daemon names) and the state of the
    unit under the role key "mps" of host.services.

    Never from text that only mentions MPS: a GPU process whose name or command line contains
    nvidia-cuda-mps-server (any program can name itself so, and NVML lists MPS clients by their own
    names), a kernel log line, or a unit that merely has "mps" in its name. Such text is evidence to show,
    not a verdict; with it alone the daemon counts as not running (or unknown), as the collector saw."""
    host = ctx.facts.get("host") or {}
    service = (host.get("services") or {}).get("mps") or {}
    if host.get("mps_daemon_running") or service.get("state") == "running":
        return True
    if host.get("mps_daemon_running") is False:
        return False
    return None


@rule("scheduling.mps_daemon", "scheduling", "warning",
      "MPS daemon running where sharing.mode is exclusive or time_slicing (info when sharing.mode is unset), "
      "or missing where it is mps")
def mps_daemon(ctx):
    mode = (ctx.policy.get("sharing") or {}).get("mode")
    running = mps_running(ctx)
    if not ctx.gpus:
        return ()
    exclusive = sum(1 for gpu in ctx.gpus if gpu.get("compute_mode") == "exclusive_process")
    evidence = {"sharing_mode": mode, "mps_daemon_running": running,
                "mps_service": ((ctx.facts.get("host") or {}).get("services") or {}).get("mps"),
                "exclusive_process_gpus": exclusive}
    if running and mode in MPS_CONFLICTS:
        return [ctx.finding(
            None,
            "MPS daemon is running while the policy wants %s GPUs: processes share all %d GPUs through MPS"
            % (mode.replace("_", " "), len(ctx.gpus)), evidence,
            "Stop and disable the MPS daemon (echo quit | nvidia-cuda-mps-control; systemctl disable --now the "
            "MPS unit) or change sharing.mode to mps if sharing is intended.")]
    if running and mode is None:
        return [ctx.finding(
            None,
            "MPS daemon is running: processes share the %d GPUs through MPS (sharing.mode unset)" % len(ctx.gpus),
            evidence, "Set sharing.mode in the policy (mps if sharing is intended, exclusive if not) so the audit "
                      "can judge it.", severity="info")]
    if running is False and mode in MPS_EXPECTED:
        return [ctx.finding(
            None, "Policy sharing.mode is mps but no MPS daemon runs", evidence,
            "Start the MPS control daemon (nvidia-cuda-mps-control -d, or its systemd unit) before the workers.")]
    return ()


@rule("scheduling.container_runtime", "scheduling", "critical",
      "No NVIDIA container runtime configured for docker or containerd while container_runtime.required")
def container_runtime(ctx):
    if not (ctx.policy.get("container_runtime") or {}).get("required") or not ctx.gpus:
        return ()
    toolkit = (ctx.facts.get("host") or {}).get("container_toolkit")
    if toolkit is None:
        return ()
    if toolkit.get("docker_nvidia_runtime") or toolkit.get("containerd_nvidia_runtime"):
        return ()
    installed = toolkit.get("version") is not None
    return [ctx.finding(
        None,
        "No NVIDIA container runtime in docker or containerd (nvidia-container-toolkit %s)"
        % (toolkit.get("version") if installed else "not installed"),
        dict(toolkit),
        ("Configure it: nvidia-ctk runtime configure --runtime=docker (or containerd), then restart the daemon."
         if installed else "Install nvidia-container-toolkit, then nvidia-ctk runtime configure and restart "
                           "docker or containerd."))]
