# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The controller's part of an incident, after the audit of the same run wrote its reports: one evidence
bundle per host (evidence/<host>/), timeline.json, fault-log.md, and report.html again with the timeline."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import collections
import datetime
import json
import os

from ansible_collections.gpufleet.core.plugins.plugin_utils.audit.remediation import load_report as load_audit_report
from ansible_collections.gpufleet.core.plugins.plugin_utils.incident.evidence_bundle import write_bundle
from ansible_collections.gpufleet.core.plugins.plugin_utils.incident.fault_log import render_fault_log
from ansible_collections.gpufleet.core.plugins.plugin_utils.reports.html import render_html
from ansible_collections.gpufleet.core.plugins.plugin_utils.run_folder import (
    FAULT_LOG_FILE, TIMELINE_FILE, facts_file_names, write_atomically)
from ansible_collections.gpufleet.core.plugins.plugin_utils.text_safety import json_text
from ansible_collections.gpufleet.core.plugins.plugin_utils.timeline.build import build_timeline
from ansible_collections.gpufleet.core.plugins.plugin_utils.timeline.past_runs import ReportFolderHistory


def _facts_of(result):
    if isinstance(result, dict) and isinstance(result.get("ansible_facts"), dict):
        return result["ansible_facts"].get("gpufleet")
    return None


def run_incident(run_dir, report_root, evidence_results, facts_results=None, history=None, now=None):
    """evidence_results: {host: registered gpu_evidence result}; facts_results: {host: gpu_facts result};
    history: a timeline.past_runs.RunHistory (default: the run folders under report_root).

    Returns {"files": written paths, "timeline": the timeline, "bundles": {host: (folder name, manifest)}}."""
    report = load_audit_report(run_dir)
    facts_results = facts_results or {}
    names = facts_file_names(sorted(evidence_results))
    bundles = {}
    for host in sorted(evidence_results):
        manifest = write_bundle(run_dir, host, names[host], evidence_results[host], _facts_of(facts_results.get(host)))
        bundles[host] = (names[host], manifest)
    history = history if history is not None else ReportFolderHistory(report_root, exclude=run_dir)
    timeline = build_timeline(run_dir, bundles, report.get("findings") or [], history, report["run"].get("id"))
    generated = (now or datetime.datetime.now(datetime.timezone.utc)).strftime("%Y-%m-%dT%H:%M:%SZ")
    timeline["generated_at"] = generated
    paths = [
        write_atomically(os.path.join(run_dir, TIMELINE_FILE),
                         json_text(json.dumps(timeline, indent=1, ensure_ascii=False, default=str)) + "\n"),
        write_atomically(os.path.join(run_dir, FAULT_LOG_FILE), render_fault_log(report, timeline, bundles, generated)),
        write_atomically(os.path.join(run_dir, "report.html"), render_html(report, timeline)),
    ]
    return {"files": paths, "timeline": timeline, "bundles": bundles}


def incident_step(run_dir, report_root, evidence_results, facts_results=None):
    """(the incident_report task's result fields, its summary line): run_incident, then per host its evidence
    bundle's folder, archive, status and files by status."""
    written = run_incident(run_dir, report_root, evidence_results, facts_results)
    evidence = {}
    for host, (folder, manifest) in written["bundles"].items():
        counts = collections.Counter(entry["status"] for entry in manifest.get("files") or ())
        evidence[host] = {"folder": "evidence/%s" % folder, "archive": manifest.get("archive"),
                          "status": manifest.get("status"), "by_status": dict(counts)}
    timeline = written["timeline"]
    fields = {"changed": False, "files": written["files"], "evidence": evidence, "events": len(timeline["events"]),
              "correlations": len(timeline["correlations"]),
              "msg": "incident evidence, timeline.json and fault-log.md in %s" % run_dir}
    summary = "incident: %d events on the timeline, %d pairs close in time; %s" % (
        len(timeline["events"]), len(timeline["correlations"]),
        ", ".join(os.path.basename(path) for path in written["files"]))
    return fields, summary
