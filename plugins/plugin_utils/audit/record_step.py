# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The record step of a run: the findings only the store can make (rules/drift_trend.py), drift of each host from
its baseline run and the growth of each GPU's error counters since the previous complete run, made inside the
run's store transaction (store/record.py, open_run), before the report is built, so they join it like any
other finding (summary, verdicts, every renderer); then the run is compared and written in the same
transaction. build_and_record is the one place where a run's report is built and recorded: by the audit
(audit/run.py) and by the aggregate of a sliced run (audit/aggregate.py, without the history rules)."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import collections

from ansible_collections.gpufleet.core.plugins.plugin_utils.audit.fleet_view import fleet_view
from ansible_collections.gpufleet.core.plugins.plugin_utils.quarantine.service_state import states_on_connection
from ansible_collections.gpufleet.core.plugins.plugin_utils.reports.model import build_report
from ansible_collections.gpufleet.core.plugins.plugin_utils.reports.writer import RENDERERS
from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.active_checks import (
    SINKING, bandwidth_sinking, thresholds, validation_of)
from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.drift_trend import (
    DRIFT_RULES, TREND_RULES, HistoryContext, run_rules)
from ansible_collections.gpufleet.core.plugins.plugin_utils.store.baseline import baseline_facts, baseline_for_hosts
from ansible_collections.gpufleet.core.plugins.plugin_utils.store.baseline_template import templates_for_hosts
from ansible_collections.gpufleet.core.plugins.plugin_utils.store.extract import fleet_counters
from ansible_collections.gpufleet.core.plugins.plugin_utils.store.record import (
    apply_recorded, mark_failed, mark_off, open_run)
from ansible_collections.gpufleet.core.plugins.plugin_utils.store.queries import host_facts_history
from ansible_collections.gpufleet.core.plugins.plugin_utils.store.sqla import select
from ansible_collections.gpufleet.core.plugins.plugin_utils.store.tables import COUNTER_COLUMNS, GPU_COUNTERS

# a complete run folder's report files, by which the store finishes a run killed after writing them
REPORT_FILES = tuple(name for name, _render in RENDERERS)

CounterRow = collections.namedtuple("CounterRow", ("host", "gpu_key", "observed_at") + COUNTER_COLUMNS)


def previous_counters(connection, previous_run):
    """{host: {gpu key: CounterRow}} of the previous complete run (plain tuples: the trend rules read
    thousands of them)."""
    if previous_run is None:
        return {}
    found = {}
    query = select(*[GPU_COUNTERS.c[name] for name in CounterRow._fields]).where(
        GPU_COUNTERS.c.run_pk == previous_run.id)
    for row in connection.execute(query):
        row = CounterRow._make(row)
        found.setdefault(row.host, {})[row.gpu_key] = row
    return found


def audited_baselines(connection, facts_by_host, groups_of_host):
    """{host: (facts in its baseline run, baseline run row, group)} of the hosts audited now."""
    audited = [host for host, facts in facts_by_host.items() if facts is not None]
    return baseline_facts(connection, baseline_for_hosts(connection, audited, groups_of_host), fleet_view)


def history_findings(connection, facts_by_host, host_policies, groups_of_host, previous_run, current=None,
                     baselines=None):
    """({host: [findings]}, rule ids evaluated). current: store.extract.fleet_counters of this run;
    baselines: audited_baselines (read here when not given)."""
    if current is None:
        current = fleet_counters(facts_by_host)
    audited = [host for host, facts in facts_by_host.items() if facts is not None]
    if baselines is None:
        baselines = audited_baselines(connection, facts_by_host, groups_of_host)
    counters = previous_counters(connection, previous_run)
    found, rules = {}, set()
    for host in audited:
        policy = (host_policies or {}).get(host) or {}
        facts = facts_by_host[host]
        extra = []
        if host in baselines:
            before, row, group = baselines[host]
            ctx = HistoryContext(host, facts, before, {"run": row.run_id, "group": group}, policy)
            extra += run_rules(DRIFT_RULES, ctx)
            rules.update(info.id for info in DRIFT_RULES)
        if host in counters:
            extra += run_rules(TREND_RULES, HistoryContext(host, facts, policy=policy, counters=counters[host],
                                                           current=current.get(host) or {}))
            rules.update(info.id for info in TREND_RULES)
        if validation_of(facts):
            earlier = host_facts_history(connection, host, 2 * thresholds(policy)["sinking_runs"])
            extra += bandwidth_sinking(host, facts, earlier, policy)
            rules.add(SINKING.id)
        if extra:
            found[host] = extra
    return found, sorted(rules)


ReportInputs = collections.namedtuple("ReportInputs", ("run", "hosts", "findings_by_host", "causes"))
ReportInputs.__doc__ = "What reports.model.build_report builds a run's report from, before the history step."


def with_history(inputs, extra, rule_ids):
    """The inputs with the history step's findings and the rules it evaluated."""
    run = inputs.run
    if rule_ids:
        run = dict(run, rules_run=sorted(set(run.get("rules_run") or ()) | set(rule_ids)))
    findings = inputs.findings_by_host
    if extra:
        findings = {host: list(findings.get(host) or ()) + list(extra.get(host) or ())
                    for host in set(findings) | set(extra)}
    return ReportInputs(run, inputs.hosts, findings, inputs.causes)


def history_report(transaction, inputs, facts_by_host, host_policies, groups_of_host):
    """The run's report with its history findings, and the baseline template of the audited hosts' baselines as
    report.json's `baselines` (when any is set)."""
    baselines = audited_baselines(transaction.connection, facts_by_host, groups_of_host)
    extra, rule_ids = history_findings(transaction.connection, facts_by_host, host_policies, groups_of_host,
                                       transaction.previous_run, transaction.counters, baselines)
    report = build_report(*with_history(inputs, extra, rule_ids))
    if baselines:
        report["baselines"] = templates_for_hosts(transaction.connection, baselines)
    return report


def with_service_states(report, connection):
    """The report's hosts that the store has service events of get hosts.<host>.service (quarantine/service_state.py)."""
    for host, state in states_on_connection(connection, report["hosts"]).items():
        report["hosts"][host] = dict(report["hosts"][host], service=state)
    return report


def build_and_record(settings, inputs, facts_by_host, host_policies=None, run_dir=None, extracts=None,
                     reports_pending=False, history=True):
    """The run's report (ReportInputs), built once, with its history findings (unless history is false) and its
    "store" and "changes" sections, recorded in the store (settings: store.record.StoreSettings; None: no store,
    and no such sections). extracts: {host: the store extract its worker prepared} (store/extract.py);
    reports_pending: the report files are written after this (store.record.finish_run). Never raises for a
    store problem: the report then says what it was, without the history findings if the store never answered."""
    if settings is None:
        return build_report(*inputs)
    if not settings.url:
        return mark_off(build_report(*inputs))
    report = None
    try:
        with open_run(settings, inputs.run, facts_by_host, REPORT_FILES, extracts) as transaction:
            if history:
                report = history_report(transaction, inputs, facts_by_host, host_policies or {},
                                        settings.groups_of_host)
            else:
                report = build_report(*inputs)
            with_service_states(report, transaction.connection)
            recorded = transaction.write(report, facts_by_host, run_dir, host_policies, extracts, reports_pending)
    except Exception as exc:  # pylint: disable=broad-except  # any store failure is reported, never fatal
        return mark_failed(report if report is not None else build_report(*inputs), settings, exc)
    return apply_recorded(report, recorded)
