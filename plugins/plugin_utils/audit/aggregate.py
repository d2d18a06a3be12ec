# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""`gpufleet report --aggregate RUN_GROUP`: the fleet report of a sliced run (docs/awx.md).

Each slice (an AWX slice job, or a process given gpufleet_slice_number/count) stored its hosts' statuses,
facts, findings and effective policies under run.orchestration.run_group. The aggregate takes the newest
run of every slice, the union of their hosts, keeps each host's own findings, drops the slices' fleet-rule
findings (a slice saw only its part of the fleet), runs the fleet rules (diagnose.fleet_findings) and the
correlation (correlate.correlate) over the union, writes the four reports into a new run folder and records
that run in the store. A missing or failed slice makes the aggregate partial, said in its status reason.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import datetime
import json
import os

from ansible_collections.gpufleet.core.plugins.plugin_utils.audit.record_step import ReportInputs, build_and_record
from ansible_collections.gpufleet.core.plugins.plugin_utils.audit.run import TOOL_VERSION, run_scope
from ansible_collections.gpufleet.core.plugins.plugin_utils.reports.prometheus import gpu_inventory
from ansible_collections.gpufleet.core.plugins.plugin_utils.reports.writer import write_reports
from ansible_collections.gpufleet.core.plugins.plugin_utils.rules import k8s as rules_k8s
from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.correlate import correlate
from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.diagnose import fleet_findings, rules_run
from ansible_collections.gpufleet.core.plugins.plugin_utils.run_folder import (
    FACTS_MODE, create_run_dir, facts_file_text, proposed_run_dir, write_atomically)
from ansible_collections.gpufleet.core.plugins.plugin_utils.store.engine import StoreError, make_engine
from ansible_collections.gpufleet.core.plugins.plugin_utils.store.queries import (
    run_facts, run_findings, run_hosts)
from ansible_collections.gpufleet.core.plugins.plugin_utils.store.record import UNFINISHED, StoreSettings, finish_run
from ansible_collections.gpufleet.core.plugins.plugin_utils.store.schema import ensure_schema
from ansible_collections.gpufleet.core.plugins.plugin_utils.store.sqla import select
from ansible_collections.gpufleet.core.plugins.plugin_utils.store.tables import RUNS
from ansible_collections.gpufleet.core.plugins.plugin_utils.store.write import stored_policies

# rules over several hosts: a slice ran them on its part only, the aggregate runs them again on the union
FLEET_RULES = ("driver.version_skew", "workload.framework_skew")
STORE_ONLY_KEYS = ("identity", "first_seen", "runs_open")


def utc_now():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def fleet_rule_ids():
    return set(FLEET_RULES) | {rules_k8s.SHARING_SKEW.id}


def is_aggregate(record):
    return bool(((record.get("orchestration") or {}).get("aggregate")))


def group_runs(connection, run_group):
    """[(row, record)] of the slice runs of run_group, oldest first (aggregates left out)."""
    needle = '"run_group":%s' % json.dumps(run_group)
    query = select(RUNS).where(RUNS.c.record.contains(needle)).order_by(RUNS.c.id)
    found = []
    for row in connection.execute(query):
        record = json.loads(row.record)
        if (record.get("orchestration") or {}).get("run_group") == run_group and not is_aggregate(record):
            found.append((row, record))
    return found


def newest_per_slice(runs):
    """{slice key: (row, record)}: the newest run of each slice number (a run without one is its own slice)."""
    chosen = {}
    for row, record in runs:
        number = ((record.get("orchestration") or {}).get("slice") or {}).get("number")
        chosen["slice %d" % number if number else "run %s" % row.run_id] = (row, record)
    return chosen


def slice_count(runs):
    counts = {((record.get("orchestration") or {}).get("slice") or {}).get("count") for _row, record in runs}
    counts.discard(None)
    return max(counts) if counts else None


def clean_finding(finding):
    """The finding as diagnosis made it: without the store's annotations and the slice's correlation mark."""
    clean = {key: value for key, value in finding.items() if key not in STORE_ONLY_KEYS}
    if isinstance(clean.get("evidence"), dict):
        clean["evidence"] = {key: value for key, value in clean["evidence"].items() if key != "explained_by"}
    return clean


class Union:
    """The hosts of every slice together: statuses, facts, own findings and effective policies."""

    def __init__(self):
        self.statuses, self.facts, self.findings, self.policies = {}, {}, {}, {}
        self.slices = []

    def add(self, connection, row, record, fleet_rules):
        hosts = run_hosts(connection, row.id)
        facts = run_facts(connection, row.id)
        policies = stored_policies(record)
        for host, entry in hosts.items():
            self.statuses[host] = entry
            self.facts[host] = facts.get(host) if entry["status"] == "ok" else None
            if host in policies:
                self.policies[host] = policies[host]
            self.findings.setdefault(host, [])
        for finding, _identity, _first, _open in run_findings(connection, row.id):
            if finding.get("rule") not in fleet_rules:
                self.findings.setdefault(finding["host"], []).append(clean_finding(finding))
        missing_facts = sorted(host for host, entry in hosts.items() if entry["status"] == "ok" and host not in facts)
        slice_info = (record.get("orchestration") or {}).get("slice") or {}
        self.slices.append({"run": row.run_id, "status": row.status, "number": slice_info.get("number"),
                            "count": slice_info.get("count"), "hosts": len(hosts),
                            "hosts_without_facts": missing_facts})


def aggregate_status(union, count):
    """(status, reason) of the aggregate."""
    problems = []
    if count:
        present = {entry["number"] for entry in union.slices if entry["number"]}
        missing = [number for number in range(1, count + 1) if number not in present]
        if missing:
            problems.append("slice %s of %d missing from the store" % (", ".join(str(n) for n in missing), count))
    for entry in union.slices:
        if entry["status"] == "failed":
            problems.append("slice run %s failed" % entry["run"])
        if entry["status"] == UNFINISHED:
            problems.append("slice run %s is unfinished (its reports were not all written)" % entry["run"])
        if entry["hosts_without_facts"]:
            problems.append("slice run %s has no stored facts of %d host(s) (retention?)" % (
                entry["run"], len(entry["hosts_without_facts"])))
    if not any(entry["status"] == "ok" for entry in union.statuses.values()):
        return "failed", "; ".join(problems + ["no host's facts could be read in any slice"])
    if problems:
        return "partial", "; ".join(problems)
    return "complete", "every slice of the run group is in the store (%d slice runs)" % len(union.slices)


def diagnose_union(union):
    """(findings by host, causes): each host's own findings plus the fleet rules, correlated over the union."""
    findings = {host: list(items) for host, items in union.findings.items()}
    for host, extra in fleet_findings(union.facts, union.policies).items():
        findings.setdefault(host, []).extend(extra)
    causes = correlate(union.facts, findings, union.policies)
    return findings, causes


def aggregate_record(run_group, slices, union, first_record, run_id, started_at, count):
    pattern = (first_record.get("scope") or {}).get("pattern")
    distinct = list({json.dumps(p, sort_keys=True): p for p in union.policies.values()}.values())
    run = {"id": run_id, "started_at": started_at, "finished_at": utc_now(), "tool_version": TOOL_VERSION,
           "fail_severity": first_record.get("fail_severity") or "critical", "policy_errors": [],
           "rules_run": rules_run(distinct), "scope": run_scope(sorted(union.statuses), None, pattern, None)}
    run["status"], run["status_reason"] = aggregate_status(union, count)
    run["orchestration"] = {"source": "gpufleet", "run_group": run_group, "slice": None, "awx": None,
                            "aggregate": {"slice_count": count, "slices": slices}}
    return run


def build_aggregate(connection, run_group, run_id, started_at):
    """(report inputs, facts by host, host policies) of the run group's aggregate; StoreError when it has no run."""
    runs = group_runs(connection, run_group)
    if not runs:
        raise StoreError("no run of run group %r in the store (run.orchestration.run_group of the slices)" % run_group)
    union = Union()
    fleet_rules = fleet_rule_ids()
    chosen = newest_per_slice(runs)
    for _key, (row, record) in sorted(chosen.items(), key=lambda item: item[1][0].id):
        union.add(connection, row, record, fleet_rules)
    count = slice_count(runs)
    findings, causes = diagnose_union(union)
    run = aggregate_record(run_group, union.slices, union, runs[0][1], run_id, started_at, count)
    return ReportInputs(run, union.statuses, findings, causes), union.facts, union.policies


def write_facts_files(report, facts_by_host, folder):
    """facts/<name>.json of every host whose facts the slices stored, as the slices wrote them."""
    os.makedirs(os.path.join(folder, "facts"), exist_ok=True)
    for host, entry in report["hosts"].items():
        if facts_by_host.get(host) is not None and entry.get("facts_file"):
            write_atomically(os.path.join(folder, "facts", os.path.basename(entry["facts_file"])),
                             facts_file_text(facts_by_host[host]), durable=False, mode=FACTS_MODE)
        elif entry.get("facts_file"):
            entry["facts_file"] = None


def run_aggregate(url, run_group, report_root, run_dir=None, source="given"):
    """Builds, records (store url) and writes the aggregate's reports; returns (report, run folder, paths)."""
    started_at = utc_now()
    proposed = run_dir or proposed_run_dir(report_root, "aggregate", started_at.replace("-", "").replace(":", ""))
    engine = make_engine(url)
    try:
        ensure_schema(engine)
        with engine.connect() as connection:
            probe = group_runs(connection, run_group)
        if not probe:
            raise StoreError("no run of run group %r in the store (run.orchestration.run_group of the slices)"
                             % run_group)
        folder = create_run_dir(proposed)
        with engine.connect() as connection:
            inputs, facts, policies = build_aggregate(connection, run_group, os.path.basename(folder), started_at)
    finally:
        engine.dispose()
    settings = StoreSettings(url, source)
    # the slices already added their drift and trend findings: the aggregate adds none twice
    report = build_and_record(settings, inputs, facts, policies, run_dir=folder, reports_pending=True, history=False)
    write_facts_files(report, facts, folder)
    paths = write_reports(report, folder, report_root, gpu_inventory(facts))
    finish_run(settings, report)
    return report, folder, paths
