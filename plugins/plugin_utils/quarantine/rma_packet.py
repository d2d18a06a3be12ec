# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The return-to-vendor packet of a node (docs/quarantine.md, "Return-to-vendor packet"): <run folder>/rma/<host>.tar.gz
with manifest.json (what is in it, the failing GPUs' serials, UUIDs and PCI bus ids, the findings), README.txt for
the vendor, the node's history from the store (runs, findings, service events), its newest kept facts and, when
an incident run collected one, its newest evidence bundle and that incident's fault log."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import datetime
import hashlib
import io
import json
import os
import tarfile

from ansible_collections.gpufleet.core.plugins.plugin_utils.incident.evidence_bundle import MANIFEST as EVIDENCE_MANIFEST
from ansible_collections.gpufleet.core.plugins.plugin_utils.incident.evidence_bundle import write_binary
from ansible_collections.gpufleet.core.plugins.plugin_utils.quarantine.service_state import (
    derive_states, open_store)
from ansible_collections.gpufleet.core.plugins.plugin_utils.run_folder import (
    FACTS_MODE, FAULT_LOG_FILE, RUN_KINDS, RUN_NAME_START, facts_file_name)
from ansible_collections.gpufleet.core.plugins.plugin_utils.store.node_history import (
    host_facts, host_findings, host_runs)
from ansible_collections.gpufleet.core.plugins.plugin_utils.store.record import settings_for, store_error_text
from ansible_collections.gpufleet.core.plugins.plugin_utils.store.service_events import read_events
from ansible_collections.gpufleet.core.plugins.plugin_utils.text_safety import safe_line

PACKET_FORMAT = "gpufleet-rma"
PACKET_VERSION = 1
RMA_FOLDER = "rma"
GPU_IDENTITY = ("index", "name", "serial", "uuid", "pci_bus_id", "vbios_version", "board_part_number",
                "gpu_part_number", "module_id")
FINDING_KEYS = ("rule", "layer", "severity", "gpu", "summary", "evidence", "first_seen", "runs_open")


class RmaPacketError(Exception):
    """The packet cannot be made; the message says why."""


# ---------------------------------------------------------------- what goes in


def incident_folders(report_root):
    """The incident run folders under the report root, newest first (their names start with their UTC start)."""
    try:
        names = os.listdir(report_root)
    except OSError:
        return []
    return sorted((name for name in names if RUN_NAME_START.match(name) and RUN_KINDS["incident"] in name
                   and os.path.isdir(os.path.join(report_root, name, "evidence"))), reverse=True)


def read_json(path):
    try:
        with open(path, encoding="utf-8") as stream:
            return json.load(stream)
    except (OSError, ValueError):
        return None


def read_bytes(path):
    try:
        with open(path, "rb") as stream:
            return stream.read()
    except OSError:
        return None


def latest_incident_bundle(report_root, host):
    """{run, folder, manifest, archive: bytes, fault_log: bytes or None} of the newest incident run that holds an
    evidence bundle of the host with its archive, or None."""
    for name in incident_folders(report_root):
        evidence = os.path.join(report_root, name, "evidence")
        for bundle in sorted(os.listdir(evidence)):
            manifest = read_json(os.path.join(evidence, bundle, EVIDENCE_MANIFEST))
            if not isinstance(manifest, dict) or manifest.get("host") != host or not manifest.get("archive"):
                continue
            archive = read_bytes(os.path.join(evidence, bundle, os.path.basename(manifest["archive"])))
            if archive is not None:
                return {"run": name, "folder": bundle, "manifest": manifest, "archive": archive,
                        "fault_log": read_bytes(os.path.join(report_root, name, FAULT_LOG_FILE))}
    return None


def node_history(settings, host):
    """{runs: [...with the host's findings], facts: [(run_pk, facts)], events: [...]} from the store."""
    engine = open_store(settings)
    try:
        with engine.connect() as connection:
            runs = host_runs(connection, host)
            findings = host_findings(connection, host, [run["run_pk"] for run in runs])
            facts = host_facts(connection, host)
            events = read_events(connection, [host])
    finally:
        engine.dispose()
    for run in runs:
        run["findings"] = [shown_finding(finding) for finding in findings.get(run["run_pk"], [])]
    return {"runs": runs, "facts": facts, "events": events}


def shown_finding(finding):
    return {key: finding.get(key) for key in FINDING_KEYS}


def latest_audited(runs):
    """The newest run that collected the host's facts, or None."""
    return next((run for run in runs if run["host_status"] == "ok"), None)


def gpu_identity(bus, facts_newest_first):
    """The GPU on bus as the newest kept facts that name it with a serial or UUID knew it (a lost GPU has neither
    now), with lost from the newest facts."""
    found = None
    for _run_pk, facts in facts_newest_first:
        for gpu in (facts or {}).get("gpus") or []:
            if str(gpu.get("pci_bus_id") or "").lower() != bus.lower():
                continue
            if found is None:
                found = dict({key: gpu.get(key) for key in GPU_IDENTITY}, lost=bool(gpu.get("lost")))
            if gpu.get("serial") or gpu.get("uuid"):
                return dict(found, **{key: gpu.get(key) for key in GPU_IDENTITY if gpu.get(key) is not None})
    return found or dict({key: None for key in GPU_IDENTITY}, pci_bus_id=bus, lost=None)


def failing_gpus(findings, facts_newest_first):
    """One entry per GPU the findings name: its identity and the rules that name it."""
    rules_by_bus = {}
    for finding in findings:
        if finding.get("gpu"):
            rules_by_bus.setdefault(finding["gpu"], []).append(finding["rule"])
    return [dict(gpu_identity(bus, facts_newest_first), rules=sorted(set(rules)))
            for bus, rules in sorted(rules_by_bus.items())]


# ---------------------------------------------------------------- the packet


def utc_now():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def json_bytes(value):
    return (json.dumps(value, indent=1, sort_keys=True, default=str) + "\n").encode("utf-8")


def readme_text(manifest):
    state = manifest["service_state"] or {}
    lines = ["Return-to-vendor packet for node %s" % manifest["host"],
             "Written by gpufleet at %s (UTC)." % manifest["generated_at"], "",
             "Failing GPUs:"]
    for gpu in manifest["failing_gpus"] or [{}]:
        if not gpu:
            lines.append("  none named by a finding (see findings below)")
            continue
        lines.append("  - %s, serial %s, UUID %s, PCI %s%s: %s" % (
            gpu.get("name") or "GPU", gpu.get("serial") or "unknown", gpu.get("uuid") or "unknown", gpu.get("pci_bus_id"),
            " (lost: fell off the bus)" if gpu.get("lost") else "", ", ".join(gpu.get("rules") or ())))
    lines += ["", "Findings of the node's latest audit (%s):" % (manifest["latest_run"] or "none in the store")]
    lines += ["  - [%s] %s: %s" % (finding["severity"], finding["rule"], safe_line(finding.get("summary") or "", 300))
              for finding in manifest["findings"]] or ["  none"]
    lines += ["", "Service state: %s since %s (%s)" % (state.get("state", "unknown"), state.get("since") or "?",
                                                       safe_line(state.get("reason") or state.get("finding") or "", 300)),
              "Repairs tried: %s" % (", ".join("%s %s at %s" % (r["step"], r["result"], r["at"])
                                               for r in state.get("repairs") or ()) or "none"),
              "", "Files:"]
    lines += ["  %-34s %s" % (entry["file"], entry["what"]) for entry in manifest["files"]]
    if manifest["missing"]:
        lines += ["", "Not included:"] + ["  %s" % why for why in manifest["missing"]]
    return "\n".join(lines) + "\n"


def packet_contents(host, history, incident, generated_at):
    """(manifest, {file name: bytes}) of the packet."""
    runs, facts = history["runs"], history["facts"]
    latest = latest_audited(runs)
    findings = latest["findings"] if latest else []
    state = derive_states(history["events"]).get(host)
    payloads, described, missing = {}, [], []
    payloads["history.json"] = json_bytes({"runs": [{key: value for key, value in run.items() if key != "run_pk"}
                                                    for run in runs],
                                           "service_events": history["events"], "service_state": state})
    described.append(("history.json", "the node's audits in the store (newest %d) with their findings, and its "
                                      "service events and state" % len(runs)))
    if facts:
        payloads["facts.json"] = json_bytes(facts[0][1])
        described.append(("facts.json", "the node's newest facts the store kept (gpufleet facts schema)"))
    else:
        missing.append("facts.json: the store keeps no facts of %s (retention, or never audited with a store)" % host)
    if incident is not None:
        archive = "incident/%s" % os.path.basename(incident["manifest"]["archive"])
        payloads[archive] = incident["archive"]
        payloads["incident/evidence-manifest.json"] = json_bytes(incident["manifest"])
        described += [(archive, "the evidence bundle of incident run %s" % incident["run"]),
                      ("incident/evidence-manifest.json", "what the evidence bundle holds, with checksums")]
        if incident["fault_log"] is not None:
            payloads["incident/%s" % FAULT_LOG_FILE] = incident["fault_log"]
            described.append(("incident/%s" % FAULT_LOG_FILE, "the fault log of incident run %s" % incident["run"]))
        else:
            missing.append("fault-log.md: incident run %s has none" % incident["run"])
    else:
        missing.append("evidence bundle and fault log: no incident run under the report root collected one of %s "
                       "(run incident.yml --limit %s first)" % (host, host))
    files = [{"file": name, "what": what, "size": len(payloads[name]),
              "sha256": hashlib.sha256(payloads[name]).hexdigest()} for name, what in described]
    manifest = {"format": PACKET_FORMAT, "format_version": PACKET_VERSION, "host": host, "generated_at": generated_at,
                "latest_run": latest["run_id"] if latest else None, "service_state": state,
                "failing_gpus": failing_gpus(findings, facts), "findings": findings,
                "incident": {"run": incident["run"], "bundle": incident["folder"]} if incident else None,
                "files": files + [{"file": "README.txt", "what": "this packet explained, for the vendor"}],
                "missing": missing}
    payloads["README.txt"] = readme_text(manifest).encode("utf-8")
    payloads["manifest.json"] = json_bytes(manifest)
    return manifest, payloads


def pack(folder, payloads, moment):
    """A gzip'd tar of the payloads under <folder>/, manifest.json and README.txt first."""
    first = [name for name in ("manifest.json", "README.txt") if name in payloads]
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name in first + sorted(set(payloads) - set(first)):
            info = tarfile.TarInfo("%s/%s" % (folder, name))
            info.size, info.mtime, info.mode = len(payloads[name]), moment, 0o640
            archive.addfile(info, io.BytesIO(payloads[name]))
    return buffer.getvalue()


def packet_name(host):
    """The packet's file name: the host's name when it is a safe file name, else a hashed one (as its facts file's)."""
    return "%s.tar.gz" % facts_file_name(host, [host])


def build_rma_packet(settings, host, run_folder, report_root, check_mode=False, now=None):
    """The rma_packet task's result: writes <run_folder>/rma/<host>.tar.gz (nothing in check mode). RmaPacketError
    when the store cannot be read or the packet cannot be written."""
    if not isinstance(host, str) or not host.strip():
        raise RmaPacketError("rma_packet: host must name a node, not %r" % (host,))
    try:
        history = node_history(settings, host)
    except Exception as exc:  # pylint: disable=broad-except  # any store failure is the task's message
        raise RmaPacketError("rma_packet: cannot read the history of %s from the run store: %s" % (
            host, store_error_text(exc)))
    if not history["runs"] and not history["events"]:
        raise RmaPacketError("rma_packet: the run store knows nothing of %s (no audit, no service event); "
                             "nothing to send" % host)
    generated_at = now or utc_now()
    manifest, payloads = packet_contents(host, history, latest_incident_bundle(report_root, host), generated_at)
    path = os.path.join(run_folder, RMA_FOLDER, packet_name(host))
    result = {"changed": True, "path": path, "manifest": manifest}
    if check_mode:
        result["msg"] = "would write %s (%d files)" % (path, len(payloads))
        return result
    moment = int(datetime.datetime.strptime(generated_at, "%Y-%m-%dT%H:%M:%SZ").replace(
        tzinfo=datetime.timezone.utc).timestamp())
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        write_binary(path, pack("rma-%s" % facts_file_name(host, [host]), payloads, moment), FACTS_MODE)
    except OSError as exc:
        raise RmaPacketError("rma_packet: cannot write %s: %s" % (path, exc))
    result["msg"] = "return-to-vendor packet of %s: %s" % (host, path)
    return result


def rma_packet_task(args, check_mode=False):
    """The gpufleet.core.rma_packet task's result for its arguments (plugins/modules/rma_packet.py)."""
    settings = settings_for(args["report_root"], args.get("store_url"), args.get("store", True))
    try:
        return build_rma_packet(settings, args["host"], args["run_folder"], args["report_root"], check_mode)
    except RmaPacketError as exc:
        return {"failed": True, "changed": False, "msg": str(exc)}
