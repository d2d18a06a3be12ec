# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The findings only the store can make (rules_history.py): drift of each host from its baseline run and
the growth of each GPU's error counters since the previous complete run. They join the report like any
other finding (summary, verdicts, every renderer), before the run is compared and written."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import collections

from ansible_collections.gpufleet.core.plugins.plugin_utils.store.sqla import select
from ansible_collections.gpufleet.core.plugins.module_utils.vocabulary import DEFAULT_FAIL_SEVERITY, NO_FAILURE
from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.history import (
    DRIFT_RULES, TREND_RULES, HistoryContext, run_rules)
from ansible_collections.gpufleet.core.plugins.plugin_utils.store.baseline import baseline_facts, baseline_for_hosts
from ansible_collections.gpufleet.core.plugins.plugin_utils.store.tables import COUNTER_COLUMNS, GPU_COUNTERS


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
    return baseline_facts(connection, baseline_for_hosts(connection, audited, groups_of_host))


def history_findings(connection, facts_by_host, host_policies, groups_of_host, previous_run, current=None,
                     baselines=None):
    """({host: [findings]}, rule ids evaluated). current: store.counters.fleet_counters of this run;
    baselines: audited_baselines (read here when not given)."""
    if current is None:
        from ansible_collections.gpufleet.core.plugins.plugin_utils.store.counters import fleet_counters
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
        if extra:
            found[host] = extra
    return found, sorted(rules)


def add_findings(report, extra, rule_ids):
    """The report rebuilt with the extra findings and rules (summary, order, counts), in place."""
    from ansible_collections.gpufleet.core.plugins.plugin_utils.reports.model import build_report
    if not extra and not rule_ids:
        return report
    if not extra:  # nothing to add (the usual run): the rules that ran are the only change, no rebuild
        report["run"]["rules_run"] = sorted(set(report["run"].get("rules_run") or ()) | set(rule_ids))
        return report
    run = dict(report["run"])
    never = run.get("fail_severity") == NO_FAILURE
    if never:
        run["fail_severity"] = DEFAULT_FAIL_SEVERITY
    if rule_ids:
        run["rules_run"] = sorted(set(run.get("rules_run") or ()) | set(rule_ids))
    hosts = {host: {key: entry.get(key) for key in ("status", "facts_file", "message")}
             for host, entry in report["hosts"].items()}
    findings = {host: list(entry["findings"]) + list(extra.get(host) or ()) for host, entry in report["hosts"].items()}
    rebuilt = build_report(run, hosts, findings, report["causes"])
    if never:
        rebuilt["summary"]["failed_threshold"] = False
        rebuilt["run"]["fail_severity"] = NO_FAILURE
    for key, value in rebuilt.items():
        report[key] = value
    return report


def extender(host_policies, groups_of_host):
    """The hook store.record.record_run calls inside the run's transaction: the history findings, and the
    baseline template of the audited hosts' baselines as report.json's `baselines` (when any is set)."""
    def extend(connection, report, facts_by_host, previous_run, current=None):
        baselines = audited_baselines(connection, facts_by_host, groups_of_host)
        extra, rule_ids = history_findings(connection, facts_by_host, host_policies, groups_of_host, previous_run,
                                           current, baselines)
        add_findings(report, extra, rule_ids)
        if baselines:
            from ansible_collections.gpufleet.core.plugins.plugin_utils.store.baseline_template import templates_for_hosts
            report["baselines"] = templates_for_hosts(connection, baselines)
    return extend
