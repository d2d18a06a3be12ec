# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpufleet.prom: Prometheus text exposition format (0.0.4) for node_exporter's textfile collector.

Labels carry only bounded values (host names, rule ids, layers, severities, GPU identities, cause ids);
summaries and evidence stay in report.json. No sample has a timestamp: the textfile collector
refuses them. Fleet-wide series are written with zeros so that alerts resolve; per-host finding
series exist only while there is something to report. A GPU's series carry the labels dcgm-exporter gives the same
GPU (DCGM_LABELS), so that a query can join them with DCGM's metrics (docs/monitoring.md).

Only a complete run writes the fleet-wide series (the run's timing, threshold, host counts, fleet findings
and likely causes). A partial run (--limit) or a failed one writes its run info and per-host series only,
so that even a file of such a run, once scraped, cannot resolve or change a fleet alert. node_exporter's
textfile collector points at <report_root>/latest, which only a complete run moves.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import datetime
import re

from ansible_collections.gpufleet.core.plugins.module_utils.facts_model import dcgm_pci_bus_id, normalize_pci_bus_id
from ansible_collections.gpufleet.core.plugins.module_utils.vocabulary import LAYERS, SEVERITIES
from ansible_collections.gpufleet.core.plugins.plugin_utils.reports.model import HOST_STATUSES, REPORT_VERSION
from ansible_collections.gpufleet.core.plugins.plugin_utils.reports.service import prometheus_lines as service_families
from ansible_collections.gpufleet.core.plugins.plugin_utils.reports.since_previous import prometheus_lines as history_families

_SURROGATES = re.compile("[\ud800-\udfff]")
_LABEL_ESCAPES = str.maketrans({"\\": "\\\\", '"': '\\"', "\n": "\\n"})


def label_value(value):
    """Escaped per the format; a character UTF-8 cannot carry (a lone surrogate) becomes U+FFFD."""
    text = "" if value is None else str(value)
    if not text.isascii():
        text = _SURROGATES.sub("\ufffd", text)
    return text.translate(_LABEL_ESCAPES)


def sample(name, labels, value):
    """One line: name{label="value",...} value."""
    if labels:
        pairs = ",".join('%s="%s"' % (key, label_value(item)) for key, item in labels)
        return "%s{%s} %s" % (name, pairs, format_value(value))
    return "%s %s" % (name, format_value(value))


def format_value(value):
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int):
        return str(value)
    return repr(float(value))


def family(name, help_text, samples):
    """HELP and TYPE lines followed by the samples of one gauge."""
    return ["# HELP %s %s" % (name, help_text), "# TYPE %s gauge" % name] + list(samples)


def epoch_seconds(iso_time):
    """Unix time of an ISO 8601 string (naive means UTC), None when absent or unreadable."""
    if not iso_time:
        return None
    try:
        moment = datetime.datetime.fromisoformat(str(iso_time).replace("Z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.timezone.utc)
    return moment.timestamp()


def run_status(report):
    return report["run"].get("status") or "complete"


def info_family(report):
    run = report["run"]
    return family("gpufleet_audit_info", "Audit run that wrote this file (always 1); status: complete, partial "
                  "or failed (only a complete run writes the fleet-wide series).", [sample(
                      "gpufleet_audit_info",
                      [("run_id", run.get("id")), ("tool_version", run.get("tool_version")),
                       ("report_version", report.get("report_version", REPORT_VERSION)),
                       ("status", run_status(report))], 1)])


def run_families(report):
    """The fleet-wide series of the run (complete runs only)."""
    run = report["run"]
    summary = report["summary"]
    lines = []
    finished = epoch_seconds(run.get("finished_at")) or epoch_seconds(run.get("started_at"))
    if finished is not None:
        lines += family("gpufleet_audit_last_run_timestamp_seconds", "Unix time the last audit run finished.",
                        [sample("gpufleet_audit_last_run_timestamp_seconds", [], finished)])
    started = epoch_seconds(run.get("started_at"))
    if started is not None and finished is not None and finished >= started:
        lines += family("gpufleet_audit_duration_seconds", "Wall time of the last audit run.",
                        [sample("gpufleet_audit_duration_seconds", [], finished - started)])
    lines += family("gpufleet_audit_failed_threshold",
                    "1 when a finding at or above fail_severity exists (the run exits non-zero).",
                    [sample("gpufleet_audit_failed_threshold", [("fail_severity", summary["fail_severity"])],
                            summary["failed_threshold"])])
    lines += family("gpufleet_audit_hosts", "Hosts in the audit by collection status.", [
        sample("gpufleet_audit_hosts", [("status", status)], summary["hosts"][status]) for status in HOST_STATUSES])
    lines += family("gpufleet_fleet_findings", "Findings in the whole fleet by layer and severity.", [
        sample("gpufleet_fleet_findings", [("layer", layer), ("severity", severity)],
               summary["by_layer"].get(layer, {}).get(severity, 0))
        for layer in LAYERS for severity in SEVERITIES])
    return lines


def label_escaper():
    """label_value with a memory: a fleet's reports repeat the same hosts, rules and bus ids thousands of times."""
    known = {}

    def escaped(value):
        try:
            return known[value]
        except KeyError:
            text = known[value] = label_value(value)
            return text
    return escaped


def host_families(report):
    hosts = report["hosts"]
    escaped = label_escaper()
    up = ['gpufleet_host_up{host="%s",status="%s"} %s' % (
        escaped(host), escaped(entry["status"]), "1" if entry["status"] == "ok" else "0")
        for host, entry in hosts.items()]
    counts = []
    for host, entry in hosts.items():
        if not entry["findings"]:
            continue
        per_layer = {}
        for finding in entry["findings"]:
            key = (finding["layer"], finding["severity"])
            per_layer[key] = per_layer.get(key, 0) + 1
        name = escaped(host)
        counts.extend('gpufleet_findings{host="%s",layer="%s",severity="%s"} %d' % (
            name, escaped(layer), escaped(severity), n) for (layer, severity), n in sorted(per_layer.items()))
    return (family("gpufleet_host_up", "1 when the host's facts were collected, 0 when it was unreachable or failed.", up)
            + family("gpufleet_findings", "Findings per host, layer and severity (only non-zero series).", counts))


# ----------------------------------------------------------------- GPU identity: dcgm-exporter's labels

DCGM_LABELS = ("gpu", "UUID", "pci_bus_id", "Hostname", "modelName")
NO_GPU = ("", "", "")  # gpu, UUID, modelName of a host-wide finding or of a bus id the facts do not list


def host_gpus(facts):
    """(hostname, {normalised bus id: (gpu, UUID, pci_bus_id, modelName, lost)}) of one host's facts or fleet
    view (audit/fleet_view.py), in dcgm-exporter's forms: the index as a string, the bus id as nvidia-smi prints it."""
    host = facts.get("host")
    hostname = (host.get("hostname") or None) if isinstance(host, dict) else None
    gpus = {}
    for gpu in facts.get("gpus") if isinstance(facts.get("gpus"), list) else ():
        bus_id = normalize_pci_bus_id(gpu.get("pci_bus_id")) if isinstance(gpu, dict) else None
        if bus_id is None:
            continue
        index = gpu.get("index")
        gpus[bus_id] = ("" if index is None else str(index), gpu.get("uuid") or "", dcgm_pci_bus_id(bus_id),
                        gpu.get("name") or "", bool(gpu.get("lost")))
    return hostname, gpus


def gpu_inventory(facts_by_host):
    """{host: host_gpus(facts)} of every host whose facts (or fleet view) were read; render_prometheus labels the
    GPU series with it."""
    return {host: host_gpus(facts) for host, facts in (facts_by_host or {}).items() if isinstance(facts, dict)}


class GpuLabels:
    """dcgm-exporter's label values (DCGM_LABELS) of a host's GPU named by its bus id, with a memory."""

    def __init__(self, inventory):
        self.inventory = inventory or {}
        self.known = {}

    def hostname(self, host):
        return (self.inventory.get(host) or (None, {}))[0] or host

    def values(self, host, bus_id):
        key = (host, bus_id)
        if key not in self.known:
            self.known[key] = self._values(host, bus_id)
        return self.known[key]

    def _values(self, host, bus_id):
        if not bus_id:
            gpu, uuid, model = NO_GPU
            return (gpu, uuid, "", self.hostname(host), model)
        listed = (self.inventory.get(host) or (None, {}))[1].get(normalize_pci_bus_id(bus_id))
        if listed is None:
            gpu, uuid, model = NO_GPU
            return (gpu, uuid, dcgm_pci_bus_id(bus_id) or bus_id, self.hostname(host), model)
        index, uuid, pci_bus_id, model, _lost = listed
        return (index, uuid, pci_bus_id, self.hostname(host), model)


def gpu_families(inventory):
    """gpufleet_gpu_info and gpufleet_gpu_lost: one series per GPU the facts list, with dcgm-exporter's labels."""
    labels = GpuLabels(inventory)
    info, lost = [], []
    for host in sorted(labels.inventory):
        for bus_id, entry in sorted(labels.inventory[host][1].items()):
            pairs = [("host", host)] + list(zip(DCGM_LABELS, labels.values(host, bus_id)))
            info.append(sample("gpufleet_gpu_info", pairs, 1))
            lost.append(sample("gpufleet_gpu_lost", pairs, entry[4]))
    return (family("gpufleet_gpu_info", "1 for each GPU of an audited host, labelled as dcgm-exporter labels it "
                   "(gpu index, UUID, pci_bus_id, Hostname, modelName).", info)
            + family("gpufleet_gpu_lost", "1 when the GPU fell off the bus (listed by the driver, no longer "
                     "answering), else 0.", lost))


# ----------------------------------------------------------------- findings

def finding_families(report, inventory):
    """gpufleet_finding: one series per host, rule and GPU; its value counts the findings behind it (usually 1).
    gpufleet_finding_first_seen_timestamp_seconds: when the earliest of them was first seen (first_seen from the
    store; without a store, the run's start)."""
    counts, first_seen, seen_at = {}, {}, {}
    run_start = epoch_seconds(report["run"].get("started_at"))
    for finding in report["findings"]:
        key = (finding["host"], finding["rule"], finding["layer"], finding["severity"], finding.get("gpu") or "")
        counts[key] = counts.get(key, 0) + 1
        since = finding.get("first_seen")
        if since not in seen_at:
            seen_at[since] = epoch_seconds(since) or run_start
        if seen_at[since] is not None:
            first_seen[key] = min(seen_at[since], first_seen.get(key, seen_at[since]))
    escaped = label_escaper()
    labels = GpuLabels(inventory)

    def head(name, key):
        host, rule, layer, severity, bus_id = key
        gpu = ",".join('%s="%s"' % pair for pair in zip(DCGM_LABELS, map(escaped, labels.values(host, bus_id))))
        return '%s{host="%s",rule="%s",layer="%s",severity="%s",%s}' % (
            name, escaped(host), escaped(rule), escaped(layer), escaped(severity), gpu)
    return (family("gpufleet_finding", "Findings by host, rule and GPU, the GPU labelled as dcgm-exporter labels it "
                   "(gpu index, UUID, pci_bus_id, Hostname, modelName; empty for host-wide findings).",
                   ["%s %d" % (head("gpufleet_finding", key), n) for key, n in counts.items()])
            + family("gpufleet_finding_first_seen_timestamp_seconds", "Unix time each open finding was first seen "
                     "(first_seen in report.json; without a run store, the start of this run); labels as "
                     "gpufleet_finding.",
                     ["%s %s" % (head("gpufleet_finding_first_seen_timestamp_seconds", key), format_value(when))
                      for key, when in first_seen.items()]))


def cause_labels(cause):
    return [("cause", cause["id"]), ("kind", cause["kind"]), ("layer", cause["layer"]), ("severity", cause["severity"])]


def cause_families(report):
    causes = report["causes"]
    totals = [sample("gpufleet_cause_hosts", cause_labels(cause), len(cause["hosts"])) for cause in causes]
    members = [sample("gpufleet_cause_host", [("cause", cause["id"]), ("host", host)], 1)
               for cause in causes for host in sorted(set(cause["hosts"]))]
    return (family("gpufleet_cause_hosts", "Hosts behind each likely cause found by fleet correlation.", totals)
            + family("gpufleet_cause_host", "1 for each host behind a likely cause.", members))


def render_prometheus(report, inventory=None):
    """inventory: gpu_inventory of the run's facts (the GPU labels); without it the GPU series carry only the bus id
    and the host's name as Hostname."""
    lines = info_family(report)
    if run_status(report) == "complete":
        lines += run_families(report)
    lines += host_families(report) + gpu_families(inventory) + finding_families(report, inventory)
    if run_status(report) == "complete":
        lines += cause_families(report)
    lines += history_families(report, family, sample)
    lines += service_families(report, family, sample, epoch_seconds)
    return "\n".join(lines) + "\n"
