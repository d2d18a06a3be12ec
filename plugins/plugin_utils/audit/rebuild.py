# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""`gpufleet report RUN`: a run's report.json, report.html, junit.xml and gpufleet.prom rebuilt from what the
store holds (the run record, host statuses, findings with their first_seen, causes, the changes against the
previous complete run), and its facts files while retention keeps them. The latest links do not move."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
import os

from ansible_collections.gpufleet.core.plugins.plugin_utils.reports.model import build_report
from ansible_collections.gpufleet.core.plugins.plugin_utils.reports.prometheus import gpu_inventory
from ansible_collections.gpufleet.core.plugins.plugin_utils.reports.writer import renderers
from ansible_collections.gpufleet.core.plugins.plugin_utils.run_folder import FACTS_MODE, write_atomically
from ansible_collections.gpufleet.core.plugins.plugin_utils.store import changes as change_set
from ansible_collections.gpufleet.core.plugins.plugin_utils.store.write import POLICIES_KEY
from ansible_collections.gpufleet.core.plugins.plugin_utils.store.queries import (
    find_run, finding_documents, open_findings, previous_complete_run, run_causes, run_facts, run_findings, run_hosts)

REBUILT = "rebuilt"


def stored_report(connection, run_name):
    """The report of a stored run, as the audit built it."""
    row = find_run(connection, run_name)
    findings_by_host = {}
    identified, history = [], {}
    for finding, identity, first_seen, runs_open in run_findings(connection, row.id):
        for key in ("identity", "first_seen", "runs_open"):
            finding.pop(key, None)
        findings_by_host.setdefault(finding["host"], []).append(finding)
        identified.append((finding, identity, None))
        history[identity] = (first_seen, runs_open)
    record = json.loads(row.record)
    record.pop(POLICIES_KEY, None)
    report = build_report(record, run_hosts(connection, row.id), findings_by_host, run_causes(connection, row.id))
    previous_run = previous_complete_run(connection, row.scope_key, before_pk=row.id)
    previous = open_findings(connection, previous_run.id) if previous_run is not None else {}
    audited = {host for host, entry in report["hosts"].items() if entry["status"] == "ok"}
    _history, changes = change_set.compare(
        identified, previous, row.started_at, audited, previous_run.run_id if previous_run is not None else None,
        lambda identities: finding_documents(connection, previous_run.id, identities))
    change_set.annotate(report, identified, history, changes)
    report["store"] = {"status": "written", "url": None, "source": "rebuilt from the store", "error": None,
                       "run": row.id, "previous_run": changes["against"]}
    return row, report


def rebuild_reports(connection, run_name, output=None, report_root="."):
    """Writes the rebuilt reports into output (default <report root>/rebuilt/<run id>); returns (folder, paths)."""
    row, report = stored_report(connection, run_name)
    output = os.path.abspath(output or os.path.join(report_root, REBUILT, row.run_id))
    os.makedirs(output, exist_ok=True)
    facts = run_facts(connection, row.id)
    paths = [write_atomically(os.path.join(output, name), render(report))
             for name, render in renderers(gpu_inventory(facts))]
    if facts:
        folder = os.path.join(output, "facts")
        os.makedirs(folder, exist_ok=True)
        for host, entry in report["hosts"].items():
            if host in facts and entry.get("facts_file"):
                write_atomically(os.path.join(folder, os.path.basename(entry["facts_file"])),
                                 json.dumps(facts[host], sort_keys=True, separators=(",", ":")) + "\n",
                                 durable=False, mode=FACTS_MODE)
    return output, paths
