# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Likely causes across hosts: the driver, the GPU firmware, one card, a workload, or how work is packed onto GPUs.

Order matters, each step only looks at what the earlier ones left unexplained:
1. workload: application errors (Xid 13/31/43) or memory-near-full only on hosts that run several
   processes per GPU, while hosts with one process per GPU have none.
2. driver, firmware or a workload: each symptom (an Xid, or a driver-layer finding) is weighed against
   every group of hosts that could explain it: hosts per driver version, per VBIOS version (of the card
   that had it) and per workload (the compute process on that card, or the one the Xid names). A group
   is supported when the symptom is on >= DRIVER_MIN_HOSTS of its hosts, at most half as common
   outside it, and either on >= DRIVER_MIN_SHARE of its hosts or on >= DISTINCT_CARDS_MIN distinct
   cards: the same error on several cards speaks against the cards even when most of the group is
   clean. Its weight is hosts hit x (share in the group - share outside); the strongest names the
   cause, and all of them stay in its evidence["hypotheses"], with one card as the rival hypothesis.
3. card: the same hardware-layer Xid >= CARD_MIN_EVENTS times on one GPU within the window, or application Xids
   repeating on one GPU under different workloads (hardware.xid_app_repeat, with the application-Xid findings of
   that GPU that no earlier step explained).
Each finding a cause covers gets evidence["explained_by"] = the cause id (findings are changed in place).
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import math

from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.diagnose import knowledge_loader
from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.findings import at_or_above, worst_severity
from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.workload import processes_per_device, worker_limit

DRIVER_MIN_HOSTS = 2
DRIVER_MIN_SHARE = 0.3
DISTINCT_CARDS_MIN = 3
CHANCE_MAX = 0.25
HYPOTHESIS_KINDS = ("driver", "firmware", "workload")
MAX_HYPOTHESES = 8
CARD_MIN_EVENTS = 3
CARD_RULES = ("hardware.xid", "hardware.gpu_lost")
APP_REPEAT_RULE = "hardware.xid_app_repeat"
DRIVER_SYMPTOM_RULES = ("driver.kernel_userspace_mismatch", "driver.gpu_unsupported",
                        "driver.cuda_toolkit_unsupported", "driver.xid")
MEMORY_RULE = "workload.memory_near_full"


def correlate(facts_by_host, findings_by_host, policies=None, knowledge_for=None):
    """Likely causes, worst first: [{"id", "kind", "layer", "severity", "summary", "hosts", "evidence", "action"}].

    knowledge_for: policy -> Knowledge (diagnose.knowledge_loader(), the default), for the application Xids."""
    policies = policies or {}
    fleet = FleetGroups(facts_by_host)
    causes = []
    causes.extend(workload_causes(facts_by_host, findings_by_host, policies, knowledge_for or knowledge_loader()))
    causes.extend(driver_causes(facts_by_host, findings_by_host, fleet))
    causes.extend(card_causes(findings_by_host, fleet))
    causes.extend(fabric_causes(facts_by_host, findings_by_host))
    return causes


def _explained(finding):
    return "explained_by" in (finding.get("evidence") or {})


def _mark(findings, cause_id):
    for finding in findings:
        if isinstance(finding.get("evidence"), dict):
            finding["evidence"]["explained_by"] = cause_id


def _xid(finding):
    xid = (finding.get("evidence") or {}).get("xid")
    return xid if isinstance(xid, int) and not isinstance(xid, bool) else None


def _few(items, limit=5):
    """'a, b, c' or 'a, b, c, d, e and 7 more'."""
    if len(items) <= limit:
        return ", ".join(items)
    return "%s and %d more" % (", ".join(items[:limit]), len(items) - limit)


# ---------------------------------------------------------------- workload

def _is_workload_error(finding, application_xids):
    if _xid(finding) in application_xids:
        return True
    return finding.get("rule") == MEMORY_RULE and at_or_above(finding.get("severity"), "warning")


def most_processes_per_gpu(facts):
    """Largest number of compute processes on one GPU or MIG device of a host."""
    most = 0
    for gpu in (facts or {}).get("gpus") or ():
        for processes in processes_per_device(gpu).values():
            most = max(most, len(processes))
    return most


def _crowded(most, policy):
    """most: most_processes_per_gpu of the host."""
    limit, _where = worker_limit(policy) if policy else (None, None)
    return most > limit if limit else most >= 2


def workload_causes(facts_by_host, findings_by_host, policies, knowledge_for):
    errors = {}
    for host, findings in findings_by_host.items():
        application_xids = knowledge_for(policies.get(host)).application_xids()
        hits = [finding for finding in findings
                if _is_workload_error(finding, application_xids) and not _explained(finding)]
        if hits:
            errors[host] = hits
    if not errors:
        return []
    with_gpus = [host for host, facts in facts_by_host.items() if facts and facts.get("gpus")]
    most_by_host = {host: most_processes_per_gpu(facts_by_host[host]) for host in with_gpus}
    crowded = {host for host in with_gpus if _crowded(most_by_host[host], policies.get(host))}
    if not set(errors) <= crowded:
        return []
    calm = [host for host in with_gpus if host not in crowded]
    if len(errors) < 2 and not calm:
        return []
    hosts = sorted(errors)
    cause_id = "workload:concurrency"
    most = {host: most_by_host[host] for host in hosts}
    symptoms = sorted({"Xid %d" % _xid(f) if _xid(f) else "memory near full" for fs in errors.values() for f in fs})
    all_findings = [finding for host in hosts for finding in errors[host]]
    _mark(all_findings, cause_id)
    return [{
        "id": cause_id,
        "kind": "workload",
        "layer": "workload",
        "severity": worst_severity(finding["severity"] for finding in all_findings),
        "summary": "%s only on hosts running several processes per GPU (%s); the %d hosts with one process per GPU "
                   "show none: points at how work is packed onto the GPUs, not at the GPUs"
                   % (", ".join(symptoms), _few(["%s: up to %d" % (host, most[host]) for host in hosts]), len(calm)),
        "hosts": hosts,
        "evidence": {"symptoms": symptoms, "processes_per_gpu": most, "hosts_with_one_process_per_gpu": len(calm),
                     "findings": len(all_findings)},
        "action": "Run fewer workers per GPU (workload.max_processes_per_gpu or the services' workers_per_gpu, "
                  "applied by the worker_limits role), cap each worker's memory, or isolate them with MIG or "
                  "exclusive compute mode.",
    }]


# ---------------------------------------------------------------- driver, firmware, a workload

def driver_version_of(facts):
    driver = (facts or {}).get("driver") or {}
    return driver.get("version") or driver.get("kernel_module_version")


def _symptom(finding):
    xid = _xid(finding)
    if xid is not None:
        return "Xid %d" % xid
    if finding.get("rule") in DRIVER_SYMPTOM_RULES:
        return finding["rule"]
    return None


def _symptom_hosts(findings_by_host):
    """{symptom: {host: [findings]}} over findings no cause explains yet."""
    table = {}
    for host, findings in findings_by_host.items():
        for finding in findings:
            symptom = _symptom(finding)
            if symptom and not _explained(finding):
                table.setdefault(symptom, {}).setdefault(host, []).append(finding)
    return table


def _workload_name(name):
    """'/usr/bin/python3' -> 'python3'."""
    return str(name).strip().rsplit("/", 1)[-1][:64]


class FleetGroups:
    """The groups a symptom is weighed against: hosts per driver version, per VBIOS version and per
    workload (compute process name), and for each card (host, bus id) its VBIOS and workloads, so a hit
    counts for a VBIOS or a workload only when the card that had it runs that VBIOS or that workload."""

    def __init__(self, facts_by_host):
        self.members = {"driver": {}, "firmware": {}, "workload": {}}
        self.universe = {"driver": set(), "firmware": set(), "workload": set()}
        self.driver_of = {}
        self._gpus = {}
        for host, facts in facts_by_host.items():
            version = driver_version_of(facts)
            if version:
                self.driver_of[host] = version
                self.members["driver"].setdefault(version, set()).add(host)
                self.universe["driver"].add(host)
            gpus = (facts or {}).get("gpus") or ()
            if gpus:
                self._gpus[host] = gpus
                self._add_host(host, gpus)

    def _add_host(self, host, gpus):
        self.universe["workload"].add(host)
        for vbios in {gpu.get("vbios_version") for gpu in gpus}:
            if vbios:
                self.universe["firmware"].add(host)
                self.members["firmware"].setdefault(vbios, set()).add(host)
        names = {process.get("name") for gpu in gpus for process in gpu.get("processes") or ()
                 if process.get("type") != "graphics"}
        for name in {_workload_name(name) for name in names if name}:
            self.members["workload"].setdefault(name, set()).add(host)

    def _card(self, host, bus):
        for gpu in self._gpus.get(host, ()):
            if bus and gpu.get("pci_bus_id") == bus:
                return gpu
        return None

    def hit_groups(self, kind, host, findings):
        """The groups of one kind that a host's findings of a symptom count for."""
        if kind == "driver":
            return {self.driver_of[host]} if host in self.driver_of else set()
        groups = set()
        for finding in findings:
            gpu = self._card(host, finding.get("gpu")) or {}
            if kind == "firmware" and gpu.get("vbios_version"):
                groups.add(gpu["vbios_version"])
            if kind == "workload":
                groups.update(_workload_name(process.get("name")) for process in gpu.get("processes") or ()
                              if process.get("type") != "graphics" and process.get("name"))
                groups.update(str(name)[:64] for name in (finding.get("evidence") or {}).get("process_names") or ())
        return groups


def _share(hit, total):
    return round(hit / float(total), 3) if total else None


def _chance(universe, members, symptom_hosts, hits):
    """How likely at least `hits` of the `symptom_hosts` hosts with the symptom fall into a group of `members`
    of `universe` hosts by chance (hypergeometric upper tail): small when the group really concentrates it."""
    def log_comb(n, k):
        return math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)
    total = log_comb(universe, symptom_hosts)
    tail = 0.0
    for inside in range(hits, min(members, symptom_hosts) + 1):
        if symptom_hosts - inside <= universe - members:
            tail += math.exp(log_comb(members, inside) + log_comb(universe - members, symptom_hosts - inside) - total)
    return round(min(1.0, tail), 3)


def _hypothesis(kind, group, hits, host_map, fleet):
    """One hypothesis, its evidence and its weight. hits: the hosts whose symptom counts for the group."""
    # a host counts in the group when its symptom does (an Xid can name a process that has since exited)
    members, universe = fleet.members[kind].get(group, set()), fleet.universe[kind]
    in_group = len(members) + len(hits - members)
    in_universe = len(universe) + len(hits - universe)
    elsewhere_total = in_universe - in_group
    elsewhere_hit = sum(1 for host in host_map if host in universe and host not in members and host not in hits)
    share, share_elsewhere = _share(len(hits), in_group), _share(elsewhere_hit, elsewhere_total)
    cards = {(host, _card_key(host, finding)) for host in hits for finding in host_map[host]}
    entry = {"id": "%s:%s" % (kind, group), "kind": kind, "hosts_hit": len(hits), "hosts_in_group": in_group,
             "share": share, "hosts_hit_elsewhere": elsewhere_hit, "hosts_elsewhere": elsewhere_total,
             "share_elsewhere": share_elsewhere, "distinct_cards": len(cards),
             "chance": _chance(in_universe, in_group, len(hits) + elsewhere_hit, len(hits)) if elsewhere_total else None}
    entry["why"] = _unsupported_reason(kind, entry)
    entry["supported"] = entry["why"] is None
    entry["score"] = round(len(hits) * (share - (share_elsewhere or 0.0)), 3) if entry["supported"] else 0.0
    return entry


def _unsupported_reason(kind, entry):
    """None when the evidence supports the hypothesis, else why not.

    Supported: on >= DRIVER_MIN_HOSTS hosts of the group; at most half as common outside it; and either on
    >= DRIVER_MIN_SHARE of the group's hosts, or on >= DISTINCT_CARDS_MIN distinct cards (several cards with
    the same error speak against the cards, even when most of the group is clean). A group that is the whole
    fleet has nothing to compare with: only the driver keeps its old concentration rule there."""
    if entry["hosts_hit"] < DRIVER_MIN_HOSTS:
        return "on %d host(s) of the group; needs %d" % (entry["hosts_hit"], DRIVER_MIN_HOSTS)
    if not entry["hosts_elsewhere"]:
        if kind == "driver" and entry["share"] >= DRIVER_MIN_SHARE:
            return None
        return "every host is in this group: nothing to compare with"
    if entry["share_elsewhere"] > 0.5 * entry["share"]:
        return "about as common outside the group (%s against %s)" % (entry["share_elsewhere"], entry["share"])
    if entry["chance"] > CHANCE_MAX:
        return "%d of the %d hosts with it would be in a group this large by chance %.0f%% of the time" % (
            entry["hosts_hit"], entry["hosts_hit"] + entry["hosts_hit_elsewhere"], 100 * entry["chance"])
    if entry["share"] < DRIVER_MIN_SHARE and entry["distinct_cards"] < DISTINCT_CARDS_MIN:
        return "on %s of the group's hosts and %d distinct card(s)" % (entry["share"], entry["distinct_cards"])
    return None


def _card_hypothesis(host_map):
    """One card: the symptom again and again on one GPU of one host, and nowhere else."""
    counts = {}
    for host, findings in host_map.items():
        for finding in findings:
            key = (host, _card_key(host, finding))
            counts[key] = counts.get(key, 0) + ((finding.get("evidence") or {}).get("count") or 1)
    most = max(counts.values()) if counts else 0
    supported = len(counts) == 1 and most >= CARD_MIN_EVENTS
    why = None
    if len(counts) > 1:
        why = "%d distinct cards on %d host(s) have it" % (len(counts), len(host_map))
    elif not supported:
        why = "%d event(s) on the one card; needs %d" % (most, CARD_MIN_EVENTS)
    return {"id": "card", "kind": "card", "distinct_cards": len(counts), "hosts_hit": len(host_map),
            "most_events_on_one_card": most, "supported": supported, "score": float(most) if supported else 0.0,
            "why": why}


def weigh_symptom(symptom, host_map, fleet):
    """Every hypothesis for one symptom, strongest first: driver and VBIOS versions, workloads, one card."""
    hypotheses = []
    for kind in HYPOTHESIS_KINDS:
        hits_by_group = {}
        for host, findings in host_map.items():
            for group in fleet.hit_groups(kind, host, findings):
                hits_by_group.setdefault(group, set()).add(host)
        for group, hits in hits_by_group.items():
            hypotheses.append(_hypothesis(kind, group, hits, host_map, fleet))
    hypotheses.append(_card_hypothesis(host_map))
    order = {kind: position for position, kind in enumerate(HYPOTHESIS_KINDS + ("card",))}
    hypotheses.sort(key=lambda h: (not h["supported"], -h["score"], order[h["kind"]], h["id"]))
    for entry in hypotheses:
        entry["symptom"] = symptom
    return hypotheses


def _winner(hypotheses):
    """The strongest supported driver, firmware or workload hypothesis and those it cannot be told apart
    from (the same weight: e.g. every host on the driver also runs the VBIOS)."""
    best = hypotheses[0] if hypotheses and hypotheses[0]["supported"] and hypotheses[0]["kind"] != "card" else None
    if best is None:
        return None, []
    tied = [h["id"] for h in hypotheses[1:] if h["supported"] and h["kind"] != "card"
            and abs(h["score"] - best["score"]) < 1e-9 and h["hosts_hit"] == best["hosts_hit"]]
    return best, tied


def driver_causes(facts_by_host, findings_by_host, fleet=None):
    """Causes where a symptom on several hosts points at a driver version, a VBIOS version or a workload."""
    fleet = fleet or FleetGroups(facts_by_host)
    won = {}
    for symptom, host_map in sorted(_symptom_hosts(findings_by_host).items()):
        hypotheses = weigh_symptom(symptom, host_map, fleet)
        best, tied = _winner(hypotheses)
        if best is None:
            continue
        group = best["id"].split(":", 1)[1]
        hits = sorted(host for host in host_map if group in fleet.hit_groups(best["kind"], host, host_map[host]))
        won.setdefault(best["id"], []).append((symptom, hits, best, tied, hypotheses, host_map))
    return [_group_cause(cause_id, entries) for cause_id, entries in sorted(won.items())]


def _group_cause(cause_id, entries):
    kind, group = cause_id.split(":", 1)
    hosts, covered, details, weighed, tied = set(), [], [], [], []
    for symptom, hits, best, ties, hypotheses, host_map in entries:
        hosts.update(hits)
        covered.extend(finding for host in hits for finding in host_map[host])
        details.append({"symptom": symptom, "hosts": hits, "hosts_on_version": best["hosts_in_group"],
                        "hosts_elsewhere_with_it": best["hosts_hit_elsewhere"], "hosts_elsewhere": best["hosts_elsewhere"],
                        "distinct_cards": best["distinct_cards"]})
        weighed.extend(hypotheses[:MAX_HYPOTHESES])
        tied.extend(tie for tie in ties if tie not in tied)
    _mark(covered, cause_id)
    evidence = {"symptoms": details, "findings": len(covered), "hypotheses": weighed, "indistinguishable_from": tied}
    severity = worst_severity(finding["severity"] for finding in covered)
    return dict(CAUSE_BUILDERS[kind](group, details, tied), id=cause_id, severity=severity, hosts=sorted(hosts),
                evidence=dict(evidence, **{GROUP_EVIDENCE_KEY[kind]: group}))


def _symptom_text(details):
    return "; ".join("%s on %d of %d hosts" % (d["symptom"], len(d["hosts"]), d["hosts_on_version"]) for d in details)


def _tied_text(tied):
    return " (%s goes with it on every affected host: they cannot be told apart here)" % ", ".join(tied) if tied else ""


def _driver_text(version, details, tied):
    return {
        "kind": "driver",
        "layer": "driver",
        "summary": "%s running driver %s (%d of %d hosts on other versions show it): points at the driver, not "
                   "the cards%s" % (_symptom_text(details), version, max(d["hosts_elsewhere_with_it"] for d in details),
                                    max(d["hosts_elsewhere"] for d in details), _tied_text(tied)),
        "action": "Do not send these cards for repair. Check driver %s's release notes and known issues for these "
                  "symptoms; move the hosts to a fixed or known-good version with the driver role "
                  "(driver_rollout.yml) in batches, then audit again.%s"
                  % (version, " If it stays, update the GPU firmware (VBIOS) named here." if tied else ""),
    }


def _firmware_text(vbios, details, tied):
    return {
        "kind": "firmware",
        "layer": "hardware",
        "summary": "%s with VBIOS %s (%d of %d hosts with other VBIOS versions show it), on %d distinct cards: "
                   "points at the GPU firmware, not the cards%s"
                   % (_symptom_text(details), vbios, max(d["hosts_elsewhere_with_it"] for d in details),
                      max(d["hosts_elsewhere"] for d in details), sum(d["distinct_cards"] for d in details),
                      _tied_text(tied)),
        "action": "Do not send these cards for repair. Check the GPU or server vendor's release notes for VBIOS %s "
                  "and these Xids; update the VBIOS of this model fleet-wide in batches with the vendor's firmware "
                  "bundle (drain first), then audit again." % vbios,
    }


def _workload_text(name, details, tied):
    return {
        "kind": "workload",
        "layer": "workload",
        "summary": "%s on GPUs running %s (%d of %d hosts without it show it): points at that workload, not at "
                   "the GPUs or the driver%s"
                   % (_symptom_text(details), name, max(d["hosts_elsewhere_with_it"] for d in details),
                      max(d["hosts_elsewhere"] for d in details), _tied_text(tied)),
        "action": "Look at %s: its logs around the Xid times, its CUDA and framework versions and its memory use; "
                  "run it alone on one GPU (loadstep.yml) to reproduce. The GPUs are not at fault." % name,
    }


CAUSE_BUILDERS = {"driver": _driver_text, "firmware": _firmware_text, "workload": _workload_text}
GROUP_EVIDENCE_KEY = {"driver": "driver_version", "firmware": "vbios_version", "workload": "workload"}


# ---------------------------------------------------------------- card

def _card_key(host, finding):
    evidence = finding.get("evidence") or {}
    serial = evidence.get("gpu_serial")
    if serial and serial.strip("0") and serial.upper() not in ("N/A", "REDACTED"):
        return "serial %s" % serial
    if evidence.get("gpu_uuid"):
        return "uuid %s" % evidence["gpu_uuid"]
    return "%s %s" % (host, finding.get("gpu"))


def card_causes(findings_by_host, fleet=None):
    """fleet (FleetGroups): when given, each card cause keeps the hypotheses its symptoms were weighed on."""
    cards = {}
    for host, findings in sorted(findings_by_host.items()):
        _follow_explained_repeats(findings)
        for finding in findings:
            if _points_at_card(finding):
                cards.setdefault(_card_key(host, finding), []).append((host, finding))
        for repeat, finding in _repeat_riders(findings):
            cards[_card_key(host, repeat)].append((host, finding))
    symptoms = _symptom_hosts(findings_by_host) if fleet is not None and cards else {}
    causes = []
    for key, entries in sorted(cards.items()):
        weighed = [weigh_symptom(symptom, symptoms[symptom], fleet)[:MAX_HYPOTHESES]
                   for symptom in sorted({_symptom(finding) for _host, finding in entries} - {None}) if symptom in symptoms]
        causes.append(_card_cause(key, entries))
        if fleet is not None:
            causes[-1]["evidence"]["hypotheses"] = [entry for group in weighed for entry in group]
    return causes


def _points_at_card(finding):
    """A hardware-layer Xid >= CARD_MIN_EVENTS times on one GPU, or application Xids repeating there under
    different workloads, that no earlier step explained."""
    count = (finding.get("evidence") or {}).get("count") or 0
    if count < CARD_MIN_EVENTS or _explained(finding):
        return False
    return finding.get("rule") == APP_REPEAT_RULE or (finding.get("rule") in CARD_RULES and _xid(finding) is not None)


def _repeated_xid_findings(repeat, findings):
    """The findings of the Xids a hardware.xid_app_repeat finding counts, on its GPU (workload.xid ...)."""
    xids = {entry.get("xid") for entry in repeat["evidence"].get("xids") or ()}
    return [finding for finding in findings if finding.get("rule") not in CARD_RULES + (APP_REPEAT_RULE,)
            and finding.get("gpu") == repeat.get("gpu") and _xid(finding) in xids]


def _follow_explained_repeats(findings):
    """A repeat whose Xids an earlier step explained (a driver version, how work is packed) goes with that cause."""
    for repeat in findings:
        if repeat.get("rule") != APP_REPEAT_RULE or _explained(repeat):
            continue
        counted = _repeated_xid_findings(repeat, findings)
        if counted and all(_explained(finding) for finding in counted):
            _mark([repeat], counted[0]["evidence"]["explained_by"])


def _repeat_riders(findings):
    """[(repeat, finding)]: for each hardware.xid_app_repeat finding that points at its card, the findings of the
    Xids it counts on its GPU (workload.xid ...) that no earlier step explained: the same faults, the same cause."""
    riders, taken = [], set()
    for repeat in findings:
        if repeat.get("rule") == APP_REPEAT_RULE and _points_at_card(repeat):
            for finding in _repeated_xid_findings(repeat, findings):
                if not _explained(finding) and id(finding) not in taken:
                    taken.add(id(finding))
                    riders.append((repeat, finding))
    return riders


def _points_at_card_rule(finding):
    return finding.get("rule") == APP_REPEAT_RULE or finding.get("rule") in CARD_RULES


def _card_symptoms(finding):
    """[(xid, count)] and the text of what a card finding shows."""
    evidence = finding["evidence"]
    if finding.get("rule") == APP_REPEAT_RULE:
        pairs = [(entry["xid"], entry["count"]) for entry in evidence.get("xids") or ()]
        text = "%s from %d processes" % (", ".join("Xid %d x%d" % pair for pair in pairs),
                                         len(evidence.get("processes") or ()))
        return pairs, text
    return [(_xid(finding), evidence["count"])], "Xid %d x%d" % (_xid(finding), evidence["count"])


def _card_cause(key, entries):
    cause_id = "card:%s" % key.split(" ", 1)[1]
    findings = [finding for _host, finding in entries]
    _mark(findings, cause_id)
    host, first = entries[0]
    shown = [_card_symptoms(f) for f in findings if _points_at_card_rule(f)]
    xids = ", ".join(text for _pairs, text in shown)
    return {
        "id": cause_id,
        "kind": "card",
        "layer": "hardware",
        "severity": worst_severity([finding["severity"] for finding in findings] + ["warning"]),
        "summary": "%s on GPU %s (host %s, %s) within one window: the same error again and again on one card "
                   "points at that card" % (xids, key, host, first.get("gpu")),
        "hosts": sorted({host for host, _finding in entries}),
        "evidence": {"gpu": key, "host": host, "pci_bus_id": first.get("gpu"),
                     "xids": [{"xid": xid, "count": count} for pairs, _text in shown for xid, count in pairs]},
        "action": "Drain the GPU, run dcgmi diag -r 3 (or the vendor field diagnostic) and hand the card over for "
                  "repair if it fails; swap it into another slot or host to confirm when in doubt.",
    }


# ---------------------------------------------------------------- fabric

NCCL_NETWORK_RULE = "hardware.nccl_network"
NCCL_RUNTIME_KINDS = ("nccl_timeout", "nccl_error")
FABRIC_FAULT_RULES = ("hardware.fabric_port_down", "hardware.fabric_port_degraded", "hardware.fabric_counter_growth",
                      "hardware.fabric_hca_missing", "hardware.fabric_link_layer")


def _nccl_symptom(finding):
    """An NCCL failure that the network may explain, not explained yet."""
    if _explained(finding):
        return False
    if finding.get("rule") == NCCL_NETWORK_RULE:
        return True
    return finding.get("rule") == "workload.runtime_failure" and \
        (finding.get("evidence") or {}).get("kind") in NCCL_RUNTIME_KINDS


def _peer_of(finding):
    evidence = finding.get("evidence") or {}
    peer = evidence.get("peer") or (evidence.get("message_says") or {}).get("peer")
    return peer if isinstance(peer, str) and peer else None


def _name_forms(name):
    """A host name and its short form (an address stays whole)."""
    name = name.lower()
    return {name} if name.replace(".", "").isdigit() or ":" in name else {name, name.split(".", 1)[0]}


def peer_host(peer, facts_by_host):
    """The audited host an NCCL message's peer names: by inventory name or the host's own hostname, whole or
    short; None when it names none of them (an address the facts do not know)."""
    if not peer:
        return None
    wanted = _name_forms(peer)
    for host in sorted(facts_by_host):
        names = _name_forms(host)
        hostname = ((facts_by_host.get(host) or {}).get("host") or {}).get("hostname")
        if isinstance(hostname, str) and hostname:
            names |= _name_forms(hostname)
        if wanted & names:
            return host
    return None


def _fabric_faults(findings):
    return [finding for finding in findings or () if finding.get("rule") in FABRIC_FAULT_RULES]


def _symptom_entry(finding, facts_by_host):
    peer = _peer_of(finding)
    return {"rule": finding.get("rule"), "service": (finding.get("evidence") or {}).get("service"),
            "severity": finding.get("severity"), "peer": peer, "peer_host": peer_host(peer, facts_by_host)}


def _fault_entry(host, finding):
    evidence = finding.get("evidence") or {}
    return {"host": host, "rule": finding.get("rule"), "link": evidence.get("link"), "summary": finding.get("summary")}


def fabric_causes(facts_by_host, findings_by_host):
    """A cause per host whose NCCL network failures meet fabric faults on it or on the peer hosts they name."""
    causes = []
    for host, findings in sorted(findings_by_host.items()):
        symptoms = [finding for finding in findings or () if _nccl_symptom(finding)]
        if not symptoms:
            continue
        entries = [_symptom_entry(finding, facts_by_host) for finding in symptoms]
        peers = sorted({entry["peer_host"] for entry in entries if entry["peer_host"] not in (None, host)})
        faults = [(where, fault) for where in [host] + peers for fault in _fabric_faults(findings_by_host.get(where))]
        if faults:
            causes.append(_fabric_cause(host, symptoms, entries, faults))
    return causes


def _fabric_cause(host, symptoms, entries, faults):
    cause_id = "fabric:%s" % host
    _mark(symptoms, cause_id)
    _mark([fault for _where, fault in faults if not _explained(fault)], cause_id)
    named = [_fault_entry(where, fault) for where, fault in faults]
    where_text = _few(["%s on %s" % (entry["link"] or entry["rule"].split(".", 1)[1], entry["host"])
                       for entry in named])
    peers = sorted({entry["peer"] for entry in entries if entry["peer"]})
    return {
        "id": cause_id,
        "kind": "fabric",
        "layer": "hardware",
        "severity": worst_severity([finding["severity"] for finding in symptoms]
                                   + [fault["severity"] for _where, fault in faults] + ["warning"]),
        "summary": "NCCL network failures on %s%s meet fabric faults (%s): points at the fabric, not at the GPUs" % (
            host, " with peer %s" % _few(peers) if peers else "", where_text),
        "hosts": sorted({host} | {where for where, _fault in faults}),
        "evidence": {"host": host, "symptoms": entries, "fabric": named},
        "action": "Repair the fabric path first (%s: the port's cable, transceiver and switch port; ibstat, mlxlink, "
                  "the switch's counters), then rerun the job; do not drain or replace the GPUs for these NCCL "
                  "errors." % where_text,
    }
