# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rules on history, which the audit evaluates inside the run's store transaction (audit/record_step.py)
because they need earlier runs: drift of a host's facts from its baseline run, the growth per day of a
GPU's error counters, and the growth since the previous run of an HCA port's error counters.

Each rule is declared once here like the engine's rules (id, layer, default severity, title); its check
takes a HistoryContext and returns findings with "before" and "after" in the evidence. GPUs are matched
across runs by serial (else UUID, else bus id), so a renumbered or moved card is still the same card.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import functools
import json

from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.findings import declare_rule, gpu_label, parse_time
from ansible_collections.gpufleet.core.plugins.plugin_utils.store.counters import hca_port_counters, host_counters
from ansible_collections.gpufleet.core.plugins.plugin_utils.store.identity import gpu_key

# RuleInfo of each history rule, in declaration order; info.check(ctx) runs it
DRIFT_RULES = []
TREND_RULES = []


def history_rule(rule_id, layer, severity, title, kind, fix=None):
    """Declares a store-evaluated rule (scope "emitted": the store emits it, not diagnose) and registers its
    check in DRIFT_RULES or TREND_RULES; the check's findings come from this declaration."""
    def register(check):
        info = declare_rule(rule_id, layer, severity, title, fix=fix, scope="emitted")

        @functools.wraps(check)
        def run(ctx):
            ctx.rule = info
            return check(ctx)
        info.check = run
        (DRIFT_RULES if kind == "drift" else TREND_RULES).append(info)
        return run
    return register


class HistoryContext:
    """One host now and then: its facts, the baseline's facts (drift) or the GPUs' previous counters
    (trends), the policy, and where the baseline came from."""

    __slots__ = ("host", "facts", "before", "baseline", "policy", "counters", "current", "ports_before", "_pairs",
                 "_grown", "rule")

    def __init__(self, host, facts, before=None, baseline=None, policy=None, counters=None, current=None,
                 ports_before=None):
        self.host = host
        self.facts = facts or {}
        self.before = before or {}
        self.baseline = baseline or {}
        self.policy = policy or {}
        self.counters = counters or {}
        self.current = current  # {gpu key: (gpu, counters now)} (store.counters.host_counters)
        self.ports_before = ports_before or {}  # {(hca, port): (observed_at, counters)} of the previous run
        self._pairs = None
        self._grown = None
        self.rule = None

    def counter_pairs(self):
        """[(gpu, counters now, previous counters row, days between)] for the GPUs the previous run had,
        computed once for all the trend rules of the host."""
        if self._pairs is None:
            current = self.current if self.current is not None else host_counters(self.facts)
            now = self.facts.get("collected_at")
            pairs, days_since, by_key = [], {}, None
            for key, (gpu, counters) in current.items():
                previous = self.counters.get(key)
                if previous is None:
                    continue
                if gpu is None:  # counters from the worker's extract: the GPU found by its key
                    if by_key is None:
                        by_key = {gpu_key(each): each for each in gpus(self.facts)}
                    gpu = by_key.get(key) or {}
                if previous.observed_at not in days_since:
                    days_since[previous.observed_at] = elapsed_days(now, previous.observed_at)
                pairs.append((gpu, counters, previous, days_since[previous.observed_at]))
            self._pairs = pairs
        return self._pairs

    def grown(self):
        """The counters that grew on any of the host's GPUs since the previous run (usually none)."""
        if self._grown is None:
            self._grown = {counter for _gpu, counters, previous, _days in self.counter_pairs()
                           for counter, after in counters.items()
                           if after is not None and getattr(previous, counter, None) is not None
                           and after > getattr(previous, counter)}
        return self._grown

    def finding(self, gpu, summary, evidence, action, severity=None):
        return self.rule.finding(self.host, gpu, summary, evidence, action, severity)


def gpus(facts):
    return [gpu for gpu in (facts or {}).get("gpus") or () if not gpu.get("lost")]


def paired_gpus(ctx):
    """[(gpu now, gpu in the baseline)] for the GPUs present in both."""
    before = {gpu_key(gpu): gpu for gpu in gpus(ctx.before)}
    return [(gpu, before[gpu_key(gpu)]) for gpu in gpus(ctx.facts) if gpu_key(gpu) in before]


def drift_evidence(ctx, before, after, **extra):
    evidence = {"before": before, "after": after, "baseline_run": ctx.baseline.get("run"),
                "baseline_group": ctx.baseline.get("group")}
    evidence.update(extra)
    return evidence


def since_baseline(ctx):
    return "baseline run %s" % ctx.baseline.get("run")


BASELINE_ACTION = ("If the change was intended, set a new baseline (gpufleet baseline set latest%s); "
                   "otherwise bring the host back to the baseline.")


def baseline_action(ctx):
    group = ctx.baseline.get("group")
    return BASELINE_ACTION % ("" if group in (None, "all") else " --group %s" % group)


def host_drift(ctx, what, before, after):
    if before == after or before is None:
        return []
    return [ctx.finding(None, "%s changed since the %s: %s -> %s" % (what, since_baseline(ctx), before, after),
                        drift_evidence(ctx, before, after), baseline_action(ctx))]


def gpu_drift(ctx, what, read):
    found = []
    for gpu, old in paired_gpus(ctx):
        before, after = read(old), read(gpu)
        if before != after and before is not None:
            found.append(ctx.finding(gpu, "%s: %s changed since the %s: %s -> %s" % (
                gpu_label(gpu), what, since_baseline(ctx), before, after), drift_evidence(ctx, before, after),
                baseline_action(ctx)))
    return found


# ---------------------------------------------------------------- drift from the baseline

@history_rule("driver.baseline_driver", "driver", "warning", "Driver version moved from the baseline run", "drift")
def driver_version(ctx):
    return host_drift(ctx, "Driver version", driver_of(ctx.before), driver_of(ctx.facts))


def driver_of(facts):
    return ((facts or {}).get("driver") or {}).get("version")


@history_rule("hardware.baseline_gpu_count", "hardware", "warning", "GPU count moved from the baseline run", "drift")
def gpu_count(ctx):
    return host_drift(ctx, "GPU count", len(gpus(ctx.before)) if ctx.before.get("gpus") is not None else None,
                      len(gpus(ctx.facts)))


@history_rule("hardware.baseline_gpu_models", "hardware", "warning", "GPU models moved from the baseline run", "drift")
def gpu_models(ctx):
    return host_drift(ctx, "GPU models", models_of(ctx.before) or None, models_of(ctx.facts))


def models_of(facts):
    return sorted(str(gpu.get("name")) for gpu in gpus(facts))


@history_rule("hardware.baseline_vbios", "hardware", "warning", "VBIOS version moved from the baseline run", "drift")
def vbios(ctx):
    return gpu_drift(ctx, "VBIOS", lambda gpu: gpu.get("vbios_version"))


@history_rule("hardware.baseline_power_limit", "hardware", "warning", "Power limit moved from the baseline run", "drift")
def power_limit(ctx):
    return gpu_drift(ctx, "power limit (W)", lambda gpu: (gpu.get("power") or {}).get("limit_w"))


@history_rule("hardware.baseline_ecc_mode", "hardware", "warning", "ECC mode moved from the baseline run", "drift")
def ecc_mode(ctx):
    return gpu_drift(ctx, "ECC mode", lambda gpu: (gpu.get("ecc") or {}).get("mode_current"))


@history_rule("driver.baseline_persistence_mode", "driver", "warning",
              "Persistence mode moved from the baseline run", "drift")
def persistence_mode(ctx):
    return gpu_drift(ctx, "persistence mode", lambda gpu: gpu.get("persistence_mode"))


@history_rule("scheduling.baseline_compute_mode", "scheduling", "warning",
              "Compute mode moved from the baseline run", "drift")
def compute_mode(ctx):
    return gpu_drift(ctx, "compute mode", lambda gpu: gpu.get("compute_mode"))


def mig_layout_of(gpu):
    mig = gpu.get("mig") or {}
    if mig.get("mode_current") is None and not mig.get("gpu_instances"):
        return None
    profiles = sorted(str(instance.get("profile_name")) for instance in mig.get("gpu_instances") or ())
    return {"mode": mig.get("mode_current"), "gpu_instances": profiles}


@history_rule("scheduling.baseline_mig_layout", "scheduling", "warning", "MIG layout moved from the baseline run", "drift")
def mig_layout(ctx):
    return gpu_drift(ctx, "MIG layout", mig_layout_of)


def service_settings(facts):
    services = (((facts or {}).get("host") or {}).get("services")) or {}
    return {entry.get("name") or key: {"enabled": entry.get("enabled"), "restart": entry.get("restart")}
            for key, entry in services.items() if isinstance(entry, dict) and entry.get("state") != "not_found"}


@history_rule("workload.baseline_service", "workload", "warning", "A service's settings moved from the baseline run",
              "drift")
def services(ctx):
    before, after = service_settings(ctx.before), service_settings(ctx.facts)
    found = []
    for name in sorted(set(before) | set(after)):
        old, new = before.get(name), after.get(name)
        if old != new and ctx.before.get("host") is not None:
            found.append(ctx.finding(None, "Service %s changed since the %s: %s -> %s" % (
                name, since_baseline(ctx), json.dumps(old, sort_keys=True), json.dumps(new, sort_keys=True)),
                drift_evidence(ctx, old, new, service=name), baseline_action(ctx)))
    return found


# ---------------------------------------------------------------- trends across runs

def elapsed_days(now, then):
    now, then = parse_time(now), parse_time(then)
    if now is None or then is None:
        return None
    return (now - then).total_seconds() / 86400.0


def growth(ctx, counter, label, threshold_key, action):
    """Findings for GPUs whose cumulative counter grew faster than trends.<threshold_key> per day."""
    trends = ctx.policy.get("trends") or {}
    limit = trends.get(threshold_key)
    if limit is None or counter not in ctx.grown():
        return []
    found = []
    for gpu, counters, previous, days in ctx.counter_pairs():
        after, before = counters.get(counter), getattr(previous, counter, None)
        if before is None or after is None or after <= before:  # the usual case first: nothing grew
            continue
        if days is None or days <= 0 or days * 24 < (trends.get("min_hours") or 0):
            continue
        rate = (after - before) / days
        if rate > limit:
            found.append(ctx.finding(gpu, "%s: %s grew from %d to %d in %.1f days (%.1f per day, above %s)" % (
                gpu_label(gpu), label, before, after, days, rate, limit),
                {"before": before, "after": after, "days": round(days, 3), "per_day": round(rate, 3),
                 "threshold_per_day": limit, "since": previous.observed_at, "counter": counter}, action))
    return found


@history_rule("hardware.ecc_corrected_growth", "hardware", "warning", "Corrected ECC errors grow fast", "trend")
def ecc_growth(ctx):
    return growth(ctx, "ecc_corrected", "corrected ECC errors", "ecc_corrected_per_day",
                  "Watch the card: fast-growing corrected errors often come before retired pages or remapped rows; "
                  "plan a field diagnostic (dcgmi diag -r 3) at the next drain.")


@history_rule("hardware.retired_pages_growth", "hardware", "warning", "Retired pages grow fast", "trend")
def retired_growth(ctx):
    return growth(ctx, "retired_pages", "retired pages", "retired_pages_per_day",
                  "Drain the GPU and run the field diagnostic; a card that keeps retiring pages needs an RMA.")


@history_rule("hardware.remapped_rows_growth", "hardware", "warning", "Remapped rows grow fast", "trend")
def remapped_growth(ctx):
    return growth(ctx, "remapped_rows", "remapped rows", "remapped_rows_per_day",
                  "Drain the GPU, reset it to apply pending remaps, and run the field diagnostic.")


@history_rule("hardware.pcie_replay_growth", "hardware", "warning", "PCIe replays grow fast", "trend")
def pcie_growth(ctx):
    return growth(ctx, "pcie_replays", "PCIe replays", "pcie_replays_per_day",
                  "Check the riser, the slot and the link (lspci -vv, AER counters); reseat at the next maintenance.")


@history_rule("hardware.nvlink_error_growth", "hardware", "warning", "NVLink errors grow fast", "trend")
def nvlink_growth(ctx):
    return growth(ctx, "nvlink_errors", "NVLink errors", "nvlink_errors_per_day",
                  "Check the NVLink and NVSwitch health (nvidia-smi nvlink -e, fabric manager log).")


@history_rule("hardware.xid_rate", "hardware", "warning", "Xid events come fast", "trend")
def xid_rate(ctx):
    trends = ctx.policy.get("trends") or {}
    limit = trends.get("xid_per_day")
    if limit is None:
        return []
    found = []
    events = (ctx.facts or {}).get("xid_events") or ()
    if not events:
        return []
    for gpu, _counters, previous, days in ctx.counter_pairs():
        since = parse_time(previous.observed_at)
        if days is None or days <= 0 or days * 24 < (trends.get("min_hours") or 0):
            continue
        newer = [event for event in events if event.get("pci_bus_id") == gpu.get("pci_bus_id")
                 and (parse_time(event.get("time")) or since) > since]
        rate = len(newer) / days
        if newer and rate > limit:
            summary = "%s: %d Xid events since the previous run %.1f days ago (%.1f per day, above %s)" % (
                gpu_label(gpu), len(newer), days, rate, limit)
            evidence = {"after": len(newer), "before": 0, "days": round(days, 3), "per_day": round(rate, 3),
                        "threshold_per_day": limit, "since": previous.observed_at,
                        "xids": sorted({event.get("xid") for event in newer if event.get("xid")})}
            found.append(ctx.finding(gpu, summary, evidence, "Look up the Xids in the report; a GPU with a rising "
                                                             "Xid rate should be drained before it takes jobs down."))
    return found


def port_growth(limits, before, after):
    """[{counter, from, to, delta, warning, critical, severity}] of the counters of one port that grew by at least a
    threshold of fabric.counters (a counter that went down was reset: cleared, or the HCA restarted)."""
    grown = []
    for counter, now in sorted(after.items()):
        limit = limits.get(counter) or {}
        then = before.get(counter)
        if then is None or now <= then or not (limit.get("warning") or limit.get("critical")):
            continue
        delta = now - then
        severity = ("critical" if limit.get("critical") and delta >= limit["critical"] else
                    "warning" if limit.get("warning") and delta >= limit["warning"] else None)
        if severity:
            grown.append({"counter": counter, "from": then, "to": now, "delta": delta, "warning": limit.get("warning"),
                          "critical": limit.get("critical"), "severity": severity})
    return grown


@history_rule("hardware.fabric_counter_growth", "hardware", "warning",
              "An HCA port's error counters grew since the previous run by fabric.counters' warning or critical",
              "trend")
def fabric_counter_growth(ctx):
    if not ctx.ports_before:
        return []
    limits = (ctx.policy.get("fabric") or {}).get("counters") or {}
    found = []
    for (hca, port), after in sorted(hca_port_counters(ctx.facts).items()):
        previous = ctx.ports_before.get((hca, port))
        grown = port_growth(limits, previous[1], after) if previous is not None else []
        if not grown:
            continue
        link = "%s/%s" % (hca, port)
        found.append(ctx.finding(None, "HCA port %s: %s since the previous run (%s)" % (
            link, ", ".join("%s %d -> %d (+%d)" % (entry["counter"], entry["from"], entry["to"], entry["delta"])
                            for entry in grown), previous[0]),
            {"link": link, "hca": hca, "port": port, "since": previous[0], "counters": grown},
            "Errors that grow between two audits are a live fault on this link: check the cable, the transceiver "
            "and the switch port (mlxlink, the switch's port counters); link_downed means the link flapped, and each "
            "flap fails the NCCL jobs that use it.",
            severity="critical" if any(entry["severity"] == "critical" for entry in grown) else None))
    return found


def run_rules(infos, ctx):
    found = []
    for info in infos:
        found.extend(info.check(ctx))
    return found
