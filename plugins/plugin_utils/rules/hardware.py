# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Hardware-layer rules: Xid events, lost GPUs, memory errors, heat, power, PCIe, NVLink, GPU count, VBIOS."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import datetime
from collections import Counter

from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.findings import (
    FIX_ROLES, LAYERS, declare_rule, gpu_label, parse_time, rule, severity_rank, worst_severity)
from ansible_collections.gpufleet.core.plugins.plugin_utils.rules import xid_decode


def gpus_by_bus(ctx):
    return ctx.cached("gpus_by_bus", lambda c: {gpu.get("pci_bus_id"): gpu for gpu in c.gpus if gpu.get("pci_bus_id")})


def _clip(text, limit=300):
    text = str(text)
    return text if len(text) <= limit else text[:limit] + "..."


# ---------------------------------------------------------------- Xid events

def _window_start(ctx):
    hours = ctx.thresholds.get("xid_window_hours")
    if ctx.now is None or hours is None:
        return None
    return ctx.now - datetime.timedelta(hours=hours)


def events_in_window(ctx, events):
    """Events newer than xid_window_hours before now; events without a full time always count."""
    start = _window_start(ctx)
    if start is None:
        return list(events)
    kept = []
    for event in events:
        moment = parse_time(event.get("time"))
        if moment is None or moment >= start:
            kept.append(event)
    return kept


def xid_info(knowledge, number):
    """The catalog entry, or a conservative stand-in for an Xid the catalog does not know."""
    entry = knowledge.xid(number) if knowledge is not None else None
    if entry:
        return entry
    return {"xid": number, "name": "unknown Xid", "layer": "hardware", "severity": "warning",
            "action": "Look up Xid %d in NVIDIA's Xid catalog and follow its resolution." % number,
            "fix": None, "secondary": False, "description": None}


def _events_by_gpu_and_xid(events):
    groups = {}
    for event in events:
        groups.setdefault(event.get("pci_bus_id"), {}).setdefault(event["xid"], []).append(event)
    return groups


def _hour_end(hour):
    """End of an hour bucket 'YYYY-MM-DDTHH' of facts.kernel_log, or None when it is not one."""
    moment = parse_time(hour + ":00:00Z") if isinstance(hour, str) else None
    return moment + datetime.timedelta(hours=1) if moment else None


def dropped_in_window(group, start):
    """How many of a kernel_log group's dropped (counted, not kept) events fall in the window from
    start. An hour bucket counts whole when any of it is in the window; events without a time count."""
    dropped = group.get("dropped") or {}
    if start is None:
        return dropped.get("count") or 0
    total = dropped.get("untimed") or 0
    for hour, count in (dropped.get("by_hour") or {}).items():
        end = _hour_end(hour)
        if end is None or end > start:
            total += count
    older_end = _hour_end(dropped.get("older_until_hour"))
    if dropped.get("older") and (older_end is None or older_end > start):
        total += dropped["older"]
    return total


def _dropped_xid_counts(ctx):
    """{(bus, xid): dropped events in the window} from facts.kernel_log (schema 1.1)."""
    start = _window_start(ctx)
    counts = {}
    for group in ((ctx.facts.get("kernel_log") or {}).get("groups") or ()):
        if group.get("kind") == "xid" and isinstance(group.get("xid"), int):
            extra = dropped_in_window(group, start)
            if extra:
                counts[(group.get("pci_bus_id"), group["xid"])] = extra
    return counts


class XidEvents:
    """The kept events of one Xid on one GPU in the window and how many there were in all."""

    __slots__ = ("events", "count")

    def __init__(self, events, dropped=0):
        self.events = events
        self.count = len(events) + dropped


def _worst_primary(primaries, knowledge):
    """The Xid whose finding carries the secondaries: worst severity, then most events, then lowest number."""
    return min(primaries, key=lambda number: (-severity_rank(xid_info(knowledge, number).get("severity")),
                                              -primaries[number].count, number))


def _attach_secondaries(primaries, secondaries, knowledge):
    """{primary xid: [(secondary xid, XidEvents)]}: each secondary rides on the worst primary it is known
    to follow (catalog `follows`), else on the worst primary of the GPU."""
    riders = {}
    for number, events in secondaries:
        follows = set(xid_info(knowledge, number).get("follows") or ())
        candidates = {n: ev for n, ev in primaries.items() if n in follows} or primaries
        riders.setdefault(_worst_primary(candidates, knowledge), []).append((number, events))
    return riders


def xid_groups(ctx):
    """Per GPU bus id (None when the log line names none): [(xid, XidEvents, [(secondary xid, XidEvents)])].

    A secondary Xid (the catalog's `secondary`, e.g. 45 or 154) rides on a primary Xid of the same
    GPU in the window; without a primary it stands alone. Counts include the events the collector
    only counted (facts.kernel_log groups), so a flood of Xids keeps its real count.
    """
    def compute(c):
        result = {}
        window = events_in_window(c, c.facts.get("xid_events") or [])
        by_bus = _events_by_gpu_and_xid(window)
        dropped = _dropped_xid_counts(c)
        for bus, number in dropped:
            by_bus.setdefault(bus, {}).setdefault(number, [])
        for bus, by_xid in by_bus.items():
            counted = {n: XidEvents(ev, dropped.get((bus, n), 0)) for n, ev in by_xid.items()}
            primaries = {n: ev for n, ev in counted.items() if not xid_info(c.knowledge, n).get("secondary")}
            secondaries = sorted((n, ev) for n, ev in counted.items() if n not in primaries)
            if primaries:
                riders = _attach_secondaries(primaries, secondaries, c.knowledge)
                entries = [(number, primaries[number], riders.get(number, [])) for number in sorted(primaries)]
            else:
                entries = [(number, events, []) for number, events in secondaries]
            result[bus] = entries
        return result
    return ctx.cached("xid_groups", compute)


def _xid_evidence(ctx, number, counted, secondaries, gpu):
    info = xid_info(ctx.knowledge, number)
    events = counted.events
    times = [event.get("time") for event in events if event.get("time")]
    evidence = {
        "xid": number,
        "name": info.get("name"),
        "count": counted.count,
        "first_time": times[0] if times else None,
        "last_time": times[-1] if times else None,
        "pids": sorted({event["pid"] for event in events if event.get("pid") is not None})[:10],
        "process_names": sorted({event["process_name"] for event in events if event.get("process_name")})[:10],
        "last_message": _clip(events[-1].get("message") or "") if events else "",
        "window_hours": ctx.thresholds.get("xid_window_hours"),
        "secondary": [{"xid": n, "name": xid_info(ctx.knowledge, n).get("name"), "count": ev.count}
                      for n, ev in secondaries],
    }
    if gpu is not None:
        evidence["gpu_serial"] = gpu.get("serial")
        evidence["gpu_uuid"] = gpu.get("uuid")
    return evidence


def _xid_layer(info):
    layer = info.get("layer")
    return layer if layer in LAYERS else "hardware"


def _xid_summary(ctx, number, counted, secondaries, gpu, bus):
    info = xid_info(ctx.knowledge, number)
    where = gpu_label(gpu) if gpu is not None else ("GPU %s" % bus if bus else "an unnamed GPU")
    text = "Xid %d (%s) x%d on %s within %sh" % (
        number, info.get("name") or "?", counted.count, where, ctx.thresholds.get("xid_window_hours"))
    if secondaries:
        text += "; followed by " + ", ".join("Xid %d x%d" % (n, ev.count) for n, ev in secondaries)
    return text


# the rule of an Xid finding, by the catalog's layer of the Xid (hardware.xid itself is the one @rule below)
_XID_RULES = {layer: declare_rule("%s.xid" % layer, layer, "warning",
                                  "Xid events the catalog puts in the %s layer (emitted by hardware.xid)" % layer)
              for layer in LAYERS if layer != "hardware"}


@rule("hardware.xid", "hardware", "warning",
      "Xid events in the kernel log within thresholds.xid_window_hours, classified by the Xid catalog; "
      "findings carry the catalog's layer (hardware.xid, driver.xid, workload.xid ...)")
def xid_events(ctx):
    findings = []
    by_bus = gpus_by_bus(ctx)
    for bus, entries in xid_groups(ctx).items():
        gpu = by_bus.get(bus)
        for number, events, secondaries in entries:
            if number in ctx.knowledge.gpu_lost_xids():
                continue  # reported by hardware.gpu_lost
            info = xid_info(ctx.knowledge, number)
            fix = info.get("fix") if info.get("fix") in FIX_ROLES else None
            severity = info.get("severity") if severity_rank(info.get("severity")) else "warning"
            action = info.get("action") or "Follow the Xid catalog's resolution for Xid %d." % number
            evidence = _xid_evidence(ctx, number, events, secondaries, gpu)
            decoded = xid_decode.group_verdict(number, events.events, _gpu_architecture(ctx, gpu), info)
            # a severity or action the policy sets for the Xid stands over the decode
            if decoded is not None and not ctx.knowledge.xid_overridden(number) & {"severity", "action"}:
                severity, action = decoded["severity"], decoded["action"]
                evidence.update(decoded=decoded["decoded"], undecoded=decoded["undecoded"],
                                not_kept=events.count - len(events.events))
            findings.append(ctx.finding(
                bus, _xid_summary(ctx, number, events, secondaries, gpu, bus), evidence, action,
                severity=severity, fix=fix, rule=_XID_RULES.get(_xid_layer(info))))
    return findings


def _gpu_architecture(ctx, gpu):
    """The GPU's architecture as collected, else as its model name says; None for a GPU the facts lack."""
    if gpu is None:
        return None
    return gpu.get("architecture") or ctx.knowledge.architecture_for(gpu.get("name"), gpu.get("compute_capability"))


# ---------------------------------------------------------------- the driver's recovery action

def _xid154_actions(ctx):
    """bus id -> (recovery action, event) of the last Xid 154 in the window whose message names one."""
    actions = {}
    for event in events_in_window(ctx, ctx.facts.get("xid_events") or []):
        if event.get("xid") == xid_decode.RECOVERY_ACTION_XID:
            name = xid_decode.xid154_recovery_action(event.get("message"))
            if name is not None:
                actions[event.get("pci_bus_id")] = (name, event)
    return actions


def _recovery_finding(ctx, target, label, name, source, event):
    known = xid_decode.recovery_action(name)
    if known is not None and known["severity"] is None:
        return None
    evidence = {"recovery_action": name, "source": source,
                "xid154_message": _clip(event.get("message") or "") if event else None,
                "xid154_time": event.get("time") if event else None}
    if known is None:
        return ctx.finding(
            target, "%s: the driver reports a recovery action the audit does not know: %r (%s)" % (label, name, source),
            evidence, "Look the value up in NVIDIA's NVML documentation (GPU recovery action) and do what it asks; "
                      "drain the GPU until then.", severity="warning")
    return ctx.finding(target, "%s: the driver asks for recovery action %s (%s)" % (label, name, source),
                       evidence, known["action"], severity=known["severity"])


@rule("hardware.recovery_action", "hardware", "critical",
      "The recovery the driver asks for (GPU reset, node reboot, drain and reset, drain P2P): the GPU's recovery "
      "action field when reported, else the last Xid 154 within thresholds.xid_window_hours")
def recovery_action(ctx):
    from_xid = _xid154_actions(ctx)
    findings = []
    for gpu in ctx.gpus:
        bus = gpu.get("pci_bus_id")
        name, event = from_xid.pop(bus, (None, None)) if bus else (None, None)
        source = "Xid 154"
        if gpu.get("recovery_action") is not None:
            name, source = gpu["recovery_action"], "gpu_recovery_action field"
        if name is not None:
            findings.append(_recovery_finding(ctx, gpu, gpu_label(gpu), name, source, event))
    for bus, (name, event) in sorted(from_xid.items(), key=lambda item: item[0] or ""):
        label = "GPU %s" % bus if bus else "an unnamed GPU"
        findings.append(_recovery_finding(ctx, bus, label, name, "Xid 154", event))
    return [finding for finding in findings if finding is not None]


# ---------------------------------------------------------------- lost GPUs

def _lost_signals(ctx):
    """bus id -> {"lost": bool, "gpu": record, "kernel_events": [...], "lost_xid": (xid, events, secondaries)}"""
    signals = {}
    unnamed = []
    for gpu in ctx.gpus:
        if gpu.get("lost") and gpu.get("pci_bus_id"):
            signals.setdefault(gpu["pci_bus_id"], {}).update(lost=True, gpu=gpu)
        elif gpu.get("lost"):
            unnamed.append(gpu)
    for event in events_in_window(ctx, ctx.facts.get("kernel_events") or []):
        if event.get("kind") == "fallen_off_bus":
            signals.setdefault(event.get("pci_bus_id"), {}).setdefault("kernel_events", []).append(event)
    for bus, entries in xid_groups(ctx).items():
        for number, events, secondaries in entries:
            if number in ctx.knowledge.gpu_lost_xids():
                signals.setdefault(bus, {})["lost_xid"] = (number, events, secondaries)
    _pair_unnamed_lost_gpus(ctx, signals, unnamed)
    return signals


def _pair_unnamed_lost_gpus(ctx, signals, unnamed):
    """A lost GPU often has no bus id left; the kernel log names a bus that no visible GPU has."""
    known = set(gpus_by_bus(ctx))
    orphans = sorted(bus for bus in signals if bus and bus not in known and "gpu" not in signals[bus])
    for gpu in unnamed:
        bus = orphans.pop(0) if orphans else None
        signal = signals.setdefault(bus, {})
        signal.update(lost=True, gpu=gpu)


def _lost_label(gpu, bus):
    if gpu is not None and gpu.get("name"):
        return gpu_label(gpu)
    if gpu is not None:
        return "GPU %s (%s)" % (gpu.get("index"), bus or "bus id unknown")
    return "GPU %s" % bus if bus else "a GPU the log does not name"


@rule("hardware.gpu_lost", "hardware", "critical",
      "A GPU fell off the bus: NVML/nvidia-smi lost it, the kernel logged 'fallen off the bus', or Xid 79")
def gpu_lost(ctx):
    findings = []
    by_bus = gpus_by_bus(ctx)
    for bus, signal in sorted(_lost_signals(ctx).items(), key=lambda item: item[0] or ""):
        gpu = by_bus.get(bus) or signal.get("gpu")
        lost_xid, lost_events, secondaries = signal.get("lost_xid", (None, XidEvents([]), []))
        shown_by = [name for name, present in (("lost to NVML/nvidia-smi", signal.get("lost")),
                                               ("kernel 'fallen off the bus'", signal.get("kernel_events")),
                                               ("Xid %s" % lost_xid, lost_events.count)) if present]
        evidence = {
            "lost": bool(signal.get("lost")),
            "kernel_messages": [_clip(event.get("message") or "") for event in signal.get("kernel_events", [])][:3],
            "gpu_index": gpu.get("index") if gpu else None,
            "gpu_serial": gpu.get("serial") if gpu else None,
        }
        if lost_events.count:
            evidence.update({"xid": lost_xid, "count": lost_events.count,
                             "last_time": lost_events.events[-1].get("time") if lost_events.events else None,
                             "secondary": [{"xid": n, "count": ev.count} for n, ev in secondaries]})
        where = _lost_label(gpu, bus)
        findings.append(ctx.finding(
            bus,
            "%s has fallen off the bus (%s)" % (where, ", ".join(shown_by)), evidence,
            "Drain the host and reboot it; if the GPU falls off again, check seating, PCIe riser and power, "
            "then hand it over for repair."))
    return findings


# ---------------------------------------------------------------- memory errors

@rule("hardware.ecc_uncorrected", "hardware", "critical", "Uncorrected (volatile) ECC errors since the last reset",
      scope="gpu")
def ecc_uncorrected(ctx, gpu):
    ecc = gpu.get("ecc") or {}
    count = ecc.get("volatile_uncorrected")
    if not count:
        return ()
    return [ctx.finding(
        gpu,
        "%s has %d uncorrected ECC errors since the last reset" % (gpu_label(gpu), count),
        {"volatile_uncorrected": count, "aggregate_uncorrected": ecc.get("aggregate_uncorrected"),
         "volatile_corrected": ecc.get("volatile_corrected"), "gpu_serial": gpu.get("serial")},
        "Drain the GPU, reset it (nvidia-smi -r) or reboot so the bad memory is retired or remapped; "
        "if errors return, run dcgmi diag -r 3 and hand the card over for repair.")]


@rule("hardware.retired_pages", "hardware", "warning",
      "Retired memory pages pending a reset, or close to the retirement limit (pre-Ampere)", scope="gpu")
def retired_pages(ctx, gpu):
    pages = gpu.get("retired_pages") or {}
    single, double, pending = pages.get("single_bit"), pages.get("double_bit"), pages.get("pending")
    total = (single or 0) + (double or 0)
    warn_at = ctx.thresholds.get("retired_pages_warning")
    crit_at = ctx.thresholds.get("retired_pages_critical")
    reasons, severities = [], []
    if crit_at is not None and total >= crit_at:
        reasons.append("%d retired pages (limit %d)" % (total, crit_at))
        severities.append("critical")
    elif warn_at is not None and total >= warn_at:
        reasons.append("%d retired pages (warning at %d)" % (total, warn_at))
        severities.append("warning")
    if pending:
        reasons.append("a page retirement waits for a reset")
        severities.append("warning")
    if not reasons:
        return ()
    severity = worst_severity(severities)
    action = ("Hand the card over for repair: it is at the page retirement limit."
              if severity == "critical" else
              "Drain the GPU and reset it (nvidia-smi -r) or reboot to apply the pending retirement; watch the count.")
    return [ctx.finding(
        gpu, "%s: %s" % (gpu_label(gpu), "; ".join(reasons)),
        {"single_bit": single, "double_bit": double, "pending": pending, "total": total,
         "warning_at": warn_at, "critical_at": crit_at, "gpu_serial": gpu.get("serial")}, action, severity=severity)]


@rule("hardware.row_remap", "hardware", "critical",
      "Row remapping failed (repair) or is pending a reset (Ampere and newer)", scope="gpu")
def row_remap(ctx, gpu):
    rows = gpu.get("remapped_rows") or {}
    if not (rows.get("failure") or rows.get("pending")):
        return ()  # the usual case, decided before the evidence is built
    evidence = {"correctable": rows.get("correctable"), "uncorrectable": rows.get("uncorrectable"),
                "pending": rows.get("pending"), "failure": rows.get("failure"), "gpu_serial": gpu.get("serial")}
    if rows.get("failure"):
        return [ctx.finding(
            gpu,
            "%s: row remapping failed (%s uncorrectable rows remapped)" % (gpu_label(gpu), rows.get("uncorrectable")),
            evidence, "Drain the GPU and hand it over for repair: its memory can no longer remap bad rows.")]
    if rows.get("pending"):
        return [ctx.finding(
            gpu,
            "%s: a row remap waits for a GPU reset (%s uncorrectable, %s correctable rows remapped)"
            % (gpu_label(gpu), rows.get("uncorrectable"), rows.get("correctable")),
            evidence, "Drain the GPU and reset it (nvidia-smi -r) or reboot to apply the remap.", severity="warning")]
    return ()


# ---------------------------------------------------------------- heat, clocks, power

@rule("hardware.temperature", "hardware", "warning",
      "GPU temperature within thresholds.temperature_margin_c of its slowdown threshold (critical at or above it)",
      scope="gpu")
def temperature(ctx, gpu):
    temps = gpu.get("temperature") or {}
    now_c, slowdown_c = temps.get("gpu_c"), temps.get("slowdown_c")
    margin = ctx.thresholds.get("temperature_margin_c") or 0
    if now_c is None or slowdown_c is None or now_c < slowdown_c - margin:
        return ()
    severity = "critical" if now_c >= slowdown_c else "warning"
    return [ctx.finding(
        gpu,
        "%s at %d C, slowdown at %d C (shutdown %s C)" % (gpu_label(gpu), now_c, slowdown_c, temps.get("shutdown_c")),
        {"gpu_c": now_c, "slowdown_c": slowdown_c, "shutdown_c": temps.get("shutdown_c"),
         "margin_c": margin, "fan_speed_pct": gpu.get("fan_speed_pct")},
        "Check cooling: fans, airflow, inlet temperature and blocked filters; compare with the other GPUs in the chassis.",
        severity=severity)]


@rule("hardware.clock_events", "hardware", "warning",
      "Active thermal, power-brake or hardware slowdown clock events (sw_power_cap alone: info)", scope="gpu")
def clock_events(ctx, gpu):
    reasons = gpu.get("clock_event_reasons") or {}
    active = reasons.get("active") or []
    if not active:
        return ()  # the usual case, decided before the evidence is built
    bad = [name for name in active if ctx.knowledge.clock_event_severity(name)]
    evidence = {"active": list(active), "mask": reasons.get("mask"),
                "power_draw_w": (gpu.get("power") or {}).get("draw_w"),
                "gpu_c": (gpu.get("temperature") or {}).get("gpu_c")}
    if bad:
        severity = worst_severity(ctx.knowledge.clock_event_severity(name) for name in bad)
        return [ctx.finding(
            gpu, "%s is slowed down: %s" % (gpu_label(gpu), ", ".join(bad)),
            evidence,
            "Thermal slowdown: check cooling. Power brake or hardware slowdown: check the power supplies and "
            "cabling of the chassis (an external power brake signal), then the GPU itself.", severity=severity)]
    if "sw_power_cap" in active:
        return [ctx.finding(
            gpu, "%s is held at its power cap (sw_power_cap)" % gpu_label(gpu),
            evidence, "Nothing to do unless throughput is low: the GPU is drawing its full power limit.",
            severity="info")]
    return ()


@rule("hardware.power_limit", "hardware", "warning", "Enforced power limit below the default limit", scope="gpu")
def power_limit(ctx, gpu):
    power = gpu.get("power") or {}
    limit, default = power.get("limit_w"), power.get("default_limit_w")
    if limit is None or default is None or limit >= default - 0.5:
        return ()
    return [ctx.finding(
        gpu,
        "%s power limit %.0f W is below its default %.0f W" % (gpu_label(gpu), limit, default),
        {"limit_w": limit, "default_limit_w": default, "min_limit_w": power.get("min_limit_w"),
         "max_limit_w": power.get("max_limit_w")},
        "If the cap is not deliberate, restore it: nvidia-smi -i %s -pl %.0f (and find what lowered it)."
        % (gpu.get("index"), default))]


# ---------------------------------------------------------------- PCIe

def _is_idle(gpu):
    if "gpu_idle" in ((gpu.get("clock_event_reasons") or {}).get("active") or ()):
        return True
    return (gpu.get("utilization") or {}).get("gpu_pct") == 0


@rule("hardware.pcie_link", "hardware", "warning",
      "PCIe link width below its maximum, or generation below its maximum while busy (idle downtraining: info)",
      scope="gpu")
def pcie_link(ctx, gpu):
    pcie = gpu.get("pcie") or {}
    gen, gen_max = pcie.get("gen_current"), pcie.get("gen_max")
    width, width_max = pcie.get("width_current"), pcie.get("width_max")
    narrow = width is not None and width_max is not None and width < width_max
    slow = gen is not None and gen_max is not None and gen < gen_max
    if not (narrow or slow):
        return ()  # the usual case, decided before reading whether the GPU is idle
    idle = _is_idle(gpu)
    problems, severities = [], []
    if narrow:
        problems.append("width x%d of x%d" % (width, width_max))
        severities.append("warning")
    if slow:
        problems.append("gen %d of %d%s" % (gen, gen_max, " while idle" if idle else ""))
        severities.append("info" if idle else "warning")
    severity = worst_severity(severities)
    action = ("Reseat the GPU or riser and check the slot and BIOS PCIe settings; a link that trains below its "
              "width loses bandwidth under load." if severity != "info" else
              "Nothing to do: an idle GPU lowers its PCIe generation to save power. Check again under load.")
    return [ctx.finding(
        gpu, "%s PCIe link below maximum: %s" % (gpu_label(gpu), ", ".join(problems)),
        {"gen_current": gen, "gen_max": gen_max, "width_current": width, "width_max": width_max, "idle": idle},
        action, severity=severity)]


@rule("hardware.pcie_aer", "hardware", "critical",
      "PCIe AER errors: fatal or non-fatal uncorrectable (critical), correctable above the threshold (warning)",
      scope="gpu")
def pcie_aer(ctx, gpu):
    aer = (gpu.get("pcie") or {}).get("aer") or {}
    fatal, nonfatal, correctable = aer.get("fatal"), aer.get("nonfatal"), aer.get("correctable")
    limit = ctx.thresholds.get("aer_correctable_warning")
    too_many_correctable = correctable is not None and limit is not None and correctable > limit
    if not (fatal or nonfatal or too_many_correctable):
        return ()  # the usual case, decided before the evidence is built
    evidence = {"fatal": fatal, "nonfatal": nonfatal, "correctable": correctable, "correctable_warning": limit}
    if fatal or nonfatal:
        return [ctx.finding(
            gpu,
            "%s PCIe AER: %s fatal, %s non-fatal uncorrectable errors" % (gpu_label(gpu), fatal or 0, nonfatal or 0),
            evidence, "Drain the host; reseat the GPU and riser, check the slot, then run dcgmi diag -r 3. "
                      "Hand the card or board over for repair if errors return.")]
    return [ctx.finding(
        gpu,
        "%s PCIe AER: %d correctable errors (warning above %d)" % (gpu_label(gpu), correctable, limit),
        evidence, "Watch the count; if it keeps growing, reseat the GPU or riser at the next maintenance.",
        severity="warning")]


@rule("hardware.pcie_replay", "hardware", "warning", "PCIe replay counter above thresholds.pcie_replay_warning",
      scope="gpu")
def pcie_replay(ctx, gpu):
    count = (gpu.get("pcie") or {}).get("replay_counter")
    limit = ctx.thresholds.get("pcie_replay_warning")
    if count is None or limit is None or count <= limit:
        return ()
    return [ctx.finding(
        gpu,
        "%s PCIe replay counter %d (warning above %d)" % (gpu_label(gpu), count, limit),
        {"replay_counter": count, "replay_warning": limit},
        "Signal-integrity trouble on the link: reseat the GPU or riser and check the slot at the next maintenance.")]


# ---------------------------------------------------------------- the kernel log: PCIe and host memory

def kernel_event_groups(ctx, kinds):
    """{(kind, bus id): XidEvents} of the window's kernel_events of these kinds: the kept events, and the count
    with the events kernel_log only counted."""
    start = _window_start(ctx)
    found = {}
    for event in events_in_window(ctx, ctx.facts.get("kernel_events") or ()):
        if event.get("kind") in kinds:
            found.setdefault((event["kind"], event.get("pci_bus_id")), []).append(event)
    dropped = {}
    for group in ((ctx.facts.get("kernel_log") or {}).get("groups") or ()):
        key = (group.get("kind"), group.get("pci_bus_id"))
        if key in found:
            dropped[key] = dropped_in_window(group, start)
    return dict((key, XidEvents(events, dropped.get(key, 0))) for key, events in found.items())


def _device_label(ctx, bus):
    gpu = gpus_by_bus(ctx).get(bus)
    return gpu_label(gpu) if gpu else "PCIe device %s" % (bus or "(not named)")


def _second(moment):
    """The second of an event's time text ('2026-09-19T16:18:02Z', raw '3.499123'), None when it has none."""
    if not moment:
        return None
    return moment[:19] if "T" in moment else moment.split(".")[0]


def _aer_burst(events):
    """The kernel coalesced errors ("AER: Multiple ... received"), or logged two of them in one second."""
    seconds = [_second(event.get("time")) for event in events]
    timed = [second for second in seconds if second is not None]
    return any(event.get("multiple") for event in events) or len(set(timed)) < len(timed)


def _aer_finding(ctx, bus, severity, events):
    names = sorted(set(name for event in events.events for name in event.get("aer_errors") or ()))
    limit = ctx.thresholds.get("aer_correctable_warning")
    evidence = {"pci_bus_id": bus, "aer_severity": severity, "count": events.count, "errors": names,
                "type": events.events[-1].get("aer_type"), "last_time": events.events[-1].get("time"),
                "messages": [_clip(event.get("message") or "") for event in events.events[:3]]}
    label = _device_label(ctx, bus)
    if severity == "fatal":
        return ctx.finding(bus, "%s: %d fatal uncorrectable PCIe AER errors in the kernel log (%s)" % (
            label, events.count, ", ".join(names) or "no error names"), evidence,
            "Drain the host: the link below this port was reset and the devices behind it may be lost until a "
            "reboot. Reseat the GPU and riser, check the slot, then run dcgmi diag -r 3; hand the board or card "
            "over for repair if it returns.")
    if severity == "non_fatal":
        return ctx.finding(bus, "%s: %d non-fatal uncorrectable PCIe AER errors in the kernel log (%s)" % (
            label, events.count, ", ".join(names) or "no error names"), evidence,
            "Watch the device: a transaction was lost and recovered. Check the slot, riser and the port's ACS and "
            "firmware settings; recurring errors need a maintenance window.", severity="warning")
    burst = _aer_burst(events.events)
    flood = burst or (limit is not None and events.count >= limit)
    evidence.update(correctable_warning=limit, burst=burst)
    return ctx.finding(bus, "%s: %d corrected PCIe AER errors in the kernel log (%s)%s" % (
        label, events.count, ", ".join(names) or "no error names",
        ", in a burst" if burst else "" if flood else ", below thresholds.aer_correctable_warning %s" % limit),
        evidence,
        "Link quality is degrading: reseat the card or riser and check the slot at the next maintenance; the rate "
        "matters more than one error." if flood else
        "Nothing to do now; a corrected error was recovered by the link. Watch whether the count grows.",
        severity="warning" if flood else "info")


@rule("hardware.kernel_pcie_aer", "hardware", "critical",
      "PCIe AER errors in the kernel log: fatal (critical), non-fatal uncorrectable (warning), corrected (warning at "
      "thresholds.aer_correctable_warning or in a burst, else info); a GPU whose driver cannot recover from one "
      "(critical)")
def kernel_pcie_aer(ctx):
    groups = kernel_event_groups(ctx, ("pcie_aer", "pcie_aer_unrecovered"))
    findings = []
    for (kind, bus), events in sorted(groups.items(), key=lambda item: (item[0][0], item[0][1] or "")):
        if kind == "pcie_aer_unrecovered":
            findings.append(_unrecovered_finding(ctx, bus, events))
            continue
        by_severity = {}
        for event in events.events:
            by_severity.setdefault(event.get("aer_severity") or "corrected", []).append(event)
        for severity, kept in sorted(by_severity.items()):
            share = XidEvents(kept, (events.count - len(events.events)) if len(by_severity) == 1 else 0)
            findings.append(_aer_finding(ctx, bus, severity, share))
    return findings


def _unrecovered_finding(ctx, bus, events):
    driver = events.events[-1].get("driver")
    nvidia = driver == "nvidia" or bus in gpus_by_bus(ctx)
    return ctx.finding(
        bus, "%s: the %s driver cannot recover from a PCIe error (no error_detected callback), %d times" % (
            _device_label(ctx, bus), driver or "device's", events.count),
        {"pci_bus_id": bus, "driver": driver, "count": events.count, "last_time": events.events[-1].get("time")},
        "Drain the host and reboot it: the GPU stays unusable after an uncorrectable PCIe error until then. Look "
        "for the AER error above it in the log (the port and error names) and reseat or repair that link."
        if nvidia else "Another device of the host stayed in error after a PCIe error; reboot at the next window "
        "and check its slot.", severity=None if nvidia else "warning")


def _link_width(text):
    return int(text.rsplit("x", 1)[1]) if text and "x" in text else None


@rule("hardware.kernel_pcie_link_limited", "hardware", "warning",
      "The kernel found a device's PCIe bandwidth limited by a narrower link on its path (a slower link alone is "
      "info: a GPU trains its speed down while idle)")
def kernel_pcie_link_limited(ctx):
    findings = []
    for (_kind, bus), events in sorted(kernel_event_groups(ctx, ("pcie_link_limited",)).items(),
                                       key=lambda item: item[0][1] or ""):
        event = events.events[-1]
        narrower = (_link_width(event.get("limited_by")) or 0) < (_link_width(event.get("full_link")) or 0)
        findings.append(ctx.finding(
            bus, "%s: %s Gb/s PCIe bandwidth available, limited by a %s link at %s (capable of %s Gb/s with %s)" % (
                _device_label(ctx, bus), event.get("available_gbps"), event.get("limited_by"),
                event.get("limiting_pci_bus_id"), event.get("capable_gbps"), event.get("full_link")),
            {"pci_bus_id": bus, "available_gbps": event.get("available_gbps"),
             "capable_gbps": event.get("capable_gbps"), "limited_by": event.get("limited_by"),
             "limiting_pci_bus_id": event.get("limiting_pci_bus_id"), "full_link": event.get("full_link"),
             "narrower_link": narrower, "count": events.count},
            "Check the slot, riser or bridge at the limiting device (a card in a narrower slot, a riser that trains "
            "fewer lanes) and move or reseat the card." if narrower else
            "Nothing to do if the link speeds up under load (nvidia-smi -q -d PCIE: Link Gen current); a link that "
            "stays slow under load needs its slot and BIOS PCIe settings checked.",
            severity=None if narrower else "info"))
    return findings


@rule("hardware.host_memory_errors", "hardware", "warning",
      "Machine checks or EDAC memory errors in the kernel log: corrected (warning), uncorrected (critical)")
def host_memory_errors(ctx):
    groups = kernel_event_groups(ctx, ("memory_error", "machine_check"))
    events = [event for group in groups.values() for event in group.events]
    if not events:
        return ()
    uncorrected = [event for event in events if event.get("corrected") is False]
    corrected = sum(event.get("count") or 1 for event in events
                    if event.get("kind") == "memory_error" and event.get("corrected"))
    locations = sorted(set(event.get("location") for event in events if event.get("location")))
    evidence = {"uncorrected": len(uncorrected), "corrected_errors": corrected,
                "machine_check_lines": sum(group.count for (kind, _bus), group in groups.items()
                                           if kind == "machine_check"),
                "locations": locations[:8], "last_time": events[-1].get("time"),
                "messages": [_clip(event.get("message") or "") for event in (uncorrected or events)[:3]]}
    if uncorrected:
        return [ctx.finding(None, "%d uncorrected machine check or memory errors in the kernel log%s" % (
            len(uncorrected), " (%s)" % ", ".join(locations[:3]) if locations else ""), evidence,
            "Drain the host: uncorrected CPU or memory errors corrupt data (pinned buffers, NCCL shared memory). "
            "Read mcelog or ras-mc-ctl --errors for the bank and DIMM, and replace it.", severity="critical")]
    what = ("%d corrected memory errors" % corrected if corrected else
            "%d machine check reports (the line does not say what)" % evidence["machine_check_lines"])
    return [ctx.finding(None, "%s in the kernel log%s" % (
        what, " (%s)" % ", ".join(locations[:3]) if locations else ""),
        evidence, "Read ras-mc-ctl --summary or mcelog for the DIMM; corrected errors that recur on one DIMM announce "
        "its failure: replace it at the next maintenance.")]


# ---------------------------------------------------------------- NVLink

@rule("hardware.nvlink_inactive", "hardware", "warning",
      "Inactive NVLinks on a GPU whose other links are up, or on a model built with NVLink (critical)", scope="gpu")
def nvlink_inactive(ctx, gpu):
    links = gpu.get("nvlinks") or []
    down = [link["link"] for link in links if link.get("active") is False]
    if not down:  # the usual case, decided before the other lists are built
        return ()
    up = [link["link"] for link in links if link.get("active")]
    baseboard = ctx.knowledge.is_baseboard_model(gpu.get("name"))
    if not (up or baseboard):
        return ()
    return [ctx.finding(
        gpu,
        "%s: %d of %d NVLinks inactive (links %s)" % (gpu_label(gpu), len(down), len(links), ", ".join(map(str, down))),
        {"inactive_links": down, "active_links": up, "model_has_nvlink": baseboard},
        "Drain the host and reset the GPUs or reboot; if links stay down, check the NVLink bridges or baseboard "
        "and hand it over for repair.", severity="critical" if baseboard else "warning")]


@rule("hardware.nvlink_errors", "hardware", "warning", "NVLink error counters at or above thresholds.nvlink_errors_warning",
      scope="gpu")
def nvlink_errors(ctx, gpu):
    limit = ctx.thresholds.get("nvlink_errors_warning")
    if limit is None:
        return ()
    counting = [link for link in gpu.get("nvlinks") or () if link.get("errors") and any(link["errors"].values())]
    if not counting:
        return ()  # the usual case: every counter 0 or unknown
    per_link = {}
    for link in counting:
        counters = {name: value for name, value in link["errors"].items() if value}
        if sum(counters.values()) >= limit:
            per_link[str(link["link"])] = counters
    if not per_link:
        return ()
    total = sum(sum(counters.values()) for counters in per_link.values())
    return [ctx.finding(
        gpu,
        "%s: %d NVLink errors on %d links" % (gpu_label(gpu), total, len(per_link)),
        {"links": per_link, "errors_warning": limit},
        "Watch the counters; if they grow, reset the GPU at the next maintenance and check the NVLink bridges or baseboard.")]


# ---------------------------------------------------------------- host inventory

@rule("hardware.gpu_count", "hardware", "critical",
      "Fewer GPUs than gpus.expected_count (critical) or than the model's baseboard holds (warning)")
def gpu_count(ctx):
    actual = len(ctx.gpus)
    expected = (ctx.policy.get("gpus") or {}).get("expected_count")
    from_policy = expected is not None
    model = next((gpu.get("name") for gpu in ctx.gpus if gpu.get("name")), None)
    if not from_policy and model and ctx.knowledge is not None:
        expected = ctx.knowledge.expected_gpu_count(model)
    if expected is None or actual >= expected:
        return ()
    source = "policy gpus.expected_count" if from_policy else "what a %s node holds" % model
    return [ctx.finding(
        None,
        "%d GPUs visible, %d expected (%s)" % (actual, expected, source),
        {"visible": actual, "expected": expected, "expected_from": "policy" if from_policy else "knowledge",
         "bus_ids": [gpu.get("pci_bus_id") for gpu in ctx.gpus]},
        "Check lspci -d 10de: for the missing GPUs and the kernel log for 'fallen off the bus'; reboot, then reseat "
        "or hand over for repair. A VM or partial node with fewer GPUs: set gpus.expected_count in the policy.",
        severity="critical" if from_policy else "warning")]


@rule("hardware.vbios_mismatch", "hardware", "warning",
      "VBIOS differing from the other GPUs of the same model on the host (thresholds.vbios_mismatch)")
def vbios_mismatch(ctx):
    if not ctx.thresholds.get("vbios_mismatch", True):
        return ()
    by_model = {}
    for gpu in ctx.gpus:
        if gpu.get("vbios_version") and gpu.get("name"):
            by_model.setdefault(gpu["name"], []).append(gpu)
    findings = []
    for model, gpus in by_model.items():
        if len({gpu["vbios_version"] for gpu in gpus}) < 2:
            continue  # the usual case: one VBIOS, decided before counting
        versions = Counter(gpu["vbios_version"] for gpu in gpus)
        reference = max(versions, key=lambda version: (versions[version], version))
        for gpu in gpus:
            if gpu["vbios_version"] != reference:
                findings.append(ctx.finding(
                    gpu,
                    "%s VBIOS %s differs from %s on the other %s GPUs"
                    % (gpu_label(gpu), gpu["vbios_version"], reference, model),
                    {"vbios_version": gpu["vbios_version"], "host_versions": dict(versions), "reference": reference},
                    "Update the VBIOS to match the other GPUs (vendor firmware bundle) at the next maintenance."))
    return findings


# ---------------------------------------------------------------- what the GPU services' journals say

@rule("hardware.cuda_ecc_reported", "hardware", "critical",
      "A GPU service's CUDA runtime reported an uncorrectable ECC error (code 39), in the job or its NCCL watchdog")
def cuda_ecc_reported(ctx):
    findings = []
    for service in (ctx.facts.get("workload") or {}).get("services") or ():
        match = (((service.get("journal") or {}).get("matches") or {}).get("cuda_ecc")) or {}
        if not match.get("count"):
            continue
        gpus = sorted({process.get("gpu_index") for process in service.get("processes") or ()
                       if process.get("gpu_index") is not None})
        last = match.get("last") or {}
        findings.append(ctx.finding(
            None,
            "%s hit an uncorrectable ECC error on GPU memory (%d messages in the window; the job and its NCCL "
            "watchdog report the same fault)%s" % (
                service.get("unit"), match["count"], ", its GPUs: %s" % ", ".join(map(str, gpus)) if gpus else ""),
            {"service": service.get("unit"), "count": match["count"], "gpus": gpus,
             "last": "%s %s" % (last.get("time") or "", last.get("message") or "")},
            "Drain the host and find the GPU: its Xid 48/63/94/95, volatile uncorrectable ECC counts and row "
            "remapping (nvidia-smi -q -d ECC,ROW_REMAPPER); reset it once idle, RMA it when remapping failed or "
            "the errors come back."))
    return findings
