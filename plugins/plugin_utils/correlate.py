# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Likely causes across hosts: the driver, one card, or how work is packed onto GPUs.

Order matters, each step only looks at what the earlier ones left unexplained:
1. workload: application errors (Xid 13/31/43) or memory-near-full only on hosts that run several
   processes per GPU, while hosts with one process per GPU have none.
2. driver: the same symptom (an Xid, or a driver-layer finding) on >= DRIVER_MIN_HOSTS hosts that
   share a driver version, on >= DRIVER_MIN_SHARE of that version's hosts, and at most half as often
   on other versions. It points at the driver, not the cards.
3. card: the same hardware-layer Xid >= CARD_MIN_EVENTS times on one GPU within the window.
Each finding a cause covers gets evidence["explained_by"] = the cause id (findings are changed in place).
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.gpufleet.core.plugins.plugin_utils.findings import at_or_above, worst_severity
from ansible_collections.gpufleet.core.plugins.plugin_utils.rules_workload import processes_per_device, worker_limit

APP_XIDS = (13, 31, 43)
DRIVER_MIN_HOSTS = 2
DRIVER_MIN_SHARE = 0.3
CARD_MIN_EVENTS = 3
CARD_RULES = ("hardware.xid", "hardware.gpu_lost")
DRIVER_SYMPTOM_RULES = ("driver.kernel_userspace_mismatch", "driver.gpu_unsupported",
                        "driver.cuda_toolkit_unsupported", "driver.xid")
MEMORY_RULE = "workload.memory_near_full"


def correlate(facts_by_host, findings_by_host, policies=None):
    """Likely causes, worst first: [{"id", "kind", "layer", "severity", "summary", "hosts", "evidence", "action"}]."""
    policies = policies or {}
    causes = []
    causes.extend(workload_causes(facts_by_host, findings_by_host, policies))
    causes.extend(driver_causes(facts_by_host, findings_by_host))
    causes.extend(card_causes(findings_by_host))
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

def _is_workload_error(finding):
    if _xid(finding) in APP_XIDS:
        return True
    return finding.get("rule") == MEMORY_RULE and at_or_above(finding.get("severity"), "warning")


def most_processes_per_gpu(facts):
    """Largest number of compute processes on one GPU or MIG device of a host."""
    most = 0
    for gpu in (facts or {}).get("gpus") or ():
        for processes in processes_per_device(gpu).values():
            most = max(most, len(processes))
    return most


def _crowded(facts, policy):
    limit, _where = worker_limit(policy) if policy else (None, None)
    most = most_processes_per_gpu(facts)
    return most > limit if limit else most >= 2


def workload_causes(facts_by_host, findings_by_host, policies):
    errors = {}
    for host, findings in findings_by_host.items():
        hits = [finding for finding in findings if _is_workload_error(finding) and not _explained(finding)]
        if hits:
            errors[host] = hits
    if not errors:
        return []
    with_gpus = [host for host, facts in facts_by_host.items() if facts and facts.get("gpus")]
    crowded = {host for host in with_gpus if _crowded(facts_by_host[host], policies.get(host))}
    if not set(errors) <= crowded:
        return []
    calm = [host for host in with_gpus if host not in crowded]
    if len(errors) < 2 and not calm:
        return []
    hosts = sorted(errors)
    cause_id = "workload:concurrency"
    most = {host: most_processes_per_gpu(facts_by_host.get(host)) for host in hosts}
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


# ---------------------------------------------------------------- driver

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


def _hosts_by_version(facts_by_host):
    table = {}
    for host, facts in facts_by_host.items():
        version = driver_version_of(facts)
        if version:
            table.setdefault(version, []).append(host)
    return table


def _concentrated(hit, on_version, elsewhere_hit, elsewhere_total):
    if len(hit) < DRIVER_MIN_HOSTS or len(hit) < DRIVER_MIN_SHARE * on_version:
        return False
    if not elsewhere_total:
        return True
    return elsewhere_hit / float(elsewhere_total) <= 0.5 * len(hit) / float(on_version)


def driver_causes(facts_by_host, findings_by_host):
    by_version = _hosts_by_version(facts_by_host)
    known = sum(len(hosts) for hosts in by_version.values())
    per_version = {}
    for symptom, host_map in sorted(_symptom_hosts(findings_by_host).items()):
        # hosts with the symptom and a known driver: those not on this version are the ones elsewhere
        versioned_hits = sum(1 for host in host_map if driver_version_of(facts_by_host.get(host)))
        for version, version_hosts in by_version.items():
            hit = sorted(host for host in version_hosts if host in host_map)
            elsewhere_hit = versioned_hits - len(hit)
            if _concentrated(hit, len(version_hosts), elsewhere_hit, known - len(version_hosts)):
                per_version.setdefault(version, []).append((symptom, hit, elsewhere_hit, host_map))
    causes = []
    for version, symptoms in sorted(per_version.items()):
        causes.append(_driver_cause(version, symptoms, len(by_version[version]), known - len(by_version[version])))
    return causes


def _driver_cause(version, symptoms, on_version, elsewhere_total):
    cause_id = "driver:%s" % version
    hosts, covered, details = set(), [], []
    for symptom, hit, elsewhere_hit, host_map in symptoms:
        hosts.update(hit)
        findings = [finding for host in hit for finding in host_map[host]]
        covered.extend(findings)
        details.append({"symptom": symptom, "hosts": hit, "hosts_on_version": on_version,
                        "hosts_elsewhere_with_it": elsewhere_hit, "hosts_elsewhere": elsewhere_total})
    _mark(covered, cause_id)
    text = "; ".join("%s on %d of %d hosts" % (d["symptom"], len(d["hosts"]), on_version) for d in details)
    return {
        "id": cause_id,
        "kind": "driver",
        "layer": "driver",
        "severity": worst_severity(finding["severity"] for finding in covered),
        "summary": "%s running driver %s (%d of %d hosts on other versions show it): points at the driver, not "
                   "the cards" % (text, version, max(d["hosts_elsewhere_with_it"] for d in details), elsewhere_total),
        "hosts": sorted(hosts),
        "evidence": {"driver_version": version, "symptoms": details, "findings": len(covered)},
        "action": "Do not send these cards for repair. Check driver %s's release notes and known issues for these "
                  "symptoms; move the hosts to a fixed or known-good version with the driver role "
                  "(driver_rollout.yml) in batches, then audit again." % version,
    }


# ---------------------------------------------------------------- card

def _card_key(host, finding):
    evidence = finding.get("evidence") or {}
    serial = evidence.get("gpu_serial")
    if serial and serial.strip("0") and serial.upper() not in ("N/A", "REDACTED"):
        return "serial %s" % serial
    if evidence.get("gpu_uuid"):
        return "uuid %s" % evidence["gpu_uuid"]
    return "%s %s" % (host, finding.get("gpu"))


def card_causes(findings_by_host):
    cards = {}
    for host, findings in sorted(findings_by_host.items()):
        for finding in findings:
            count = (finding.get("evidence") or {}).get("count") or 0
            if finding.get("rule") in CARD_RULES and _xid(finding) is not None and count >= CARD_MIN_EVENTS \
                    and not _explained(finding):
                cards.setdefault(_card_key(host, finding), []).append((host, finding))
    return [_card_cause(key, entries) for key, entries in sorted(cards.items())]


def _card_cause(key, entries):
    cause_id = "card:%s" % key.split(" ", 1)[1]
    findings = [finding for _host, finding in entries]
    _mark(findings, cause_id)
    host, first = entries[0]
    xids = ", ".join("Xid %d x%d" % (_xid(f), f["evidence"]["count"]) for f in findings)
    return {
        "id": cause_id,
        "kind": "card",
        "layer": "hardware",
        "severity": worst_severity([finding["severity"] for finding in findings] + ["warning"]),
        "summary": "%s on GPU %s (host %s, %s) within one window: the same error again and again on one card "
                   "points at that card" % (xids, key, host, first.get("gpu")),
        "hosts": sorted({host for host, _finding in entries}),
        "evidence": {"gpu": key, "host": host, "pci_bus_id": first.get("gpu"),
                     "xids": [{"xid": _xid(f), "count": f["evidence"]["count"]} for f in findings]},
        "action": "Drain the GPU, run dcgmi diag -r 3 (or the vendor field diagnostic) and hand the card over for "
                  "repair if it fails; swap it into another slot or host to confirm when in doubt.",
    }
