# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the store answers: runs, the previous complete run of a scope, a run's findings, one finding's
history, baselines. Every function takes an open SQLAlchemy connection."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json


from ansible_collections.gpufleet.core.plugins.plugin_utils.store.sqla import func, select
from ansible_collections.gpufleet.core.plugins.plugin_utils.store.engine import StoreError
from ansible_collections.gpufleet.core.plugins.plugin_utils.store.write import facts_from_blob
from ansible_collections.gpufleet.core.plugins.plugin_utils.store.tables import (
    BASELINES, CAUSES, FACTS, FINDINGS, GPU_COUNTERS, HOSTS, RUNS)

LATEST = "latest"


def previous_complete_run(connection, scope_key, before_pk=None):
    """The newest complete run of scope_key (before run before_pk when given), as a row, or None."""
    query = select(RUNS).where(RUNS.c.scope_key == scope_key, RUNS.c.status == "complete")
    if before_pk is not None:
        query = query.where(RUNS.c.id < before_pk)
    return connection.execute(query.order_by(RUNS.c.id.desc()).limit(1)).first()


def open_findings(connection, run_pk):
    """{identity: (host, first_seen, runs_open)} of a run's findings: what a comparison needs of every
    finding, read from the covering index ix_findings_open (revision 0003) as plain tuples; the documents
    stay in the database (finding_documents reads the cleared ones)."""
    query = select(FINDINGS.c.identity, FINDINGS.c.host, FINDINGS.c.first_seen, FINDINGS.c.runs_open).where(
        FINDINGS.c.run_pk == run_pk)
    return {identity: (host, first_seen, runs_open) for identity, host, first_seen, runs_open in connection.execute(query)}


def finding_documents(connection, run_pk, identities, chunk=500):
    """{identity: finding dict} of some findings of a run."""
    identities = list(identities)
    found = {}
    for start in range(0, len(identities), chunk):
        query = select(FINDINGS.c.identity, FINDINGS.c.data).where(
            FINDINGS.c.run_pk == run_pk, FINDINGS.c.identity.in_(identities[start:start + chunk]))
        found.update((row.identity, json.loads(row.data)) for row in connection.execute(query))
    return found


def list_runs(connection, limit=50):
    query = select(RUNS.c.id, RUNS.c.run_id, RUNS.c.scope_key, RUNS.c.status, RUNS.c.started_at,
                   RUNS.c.finished_at, RUNS.c.hosts_total, RUNS.c.findings_total).order_by(RUNS.c.id.desc())
    if limit:
        query = query.limit(limit)
    return list(connection.execute(query))


def find_run(connection, name):
    """A run row by its id (the run folder's name), 'latest' or its number. latest means what <report root>/latest
    means: the complete run that started last (not the one that finished last: audits overlap)."""
    if name == LATEST:
        row = connection.execute(select(RUNS).where(RUNS.c.status == "complete")
                                 .order_by(RUNS.c.started_at.desc().nulls_last(), RUNS.c.id.desc()).limit(1)).first()
    else:
        row = connection.execute(select(RUNS).where(RUNS.c.run_id == name)).first()
        if row is None and str(name).isdigit():
            row = connection.execute(select(RUNS).where(RUNS.c.id == int(name))).first()
    if row is None:
        raise StoreError("no run %r in the store (gpufleet runs lists them)" % name)
    return row


def run_record(connection, run_pk):
    """The run record as the audit kept it (report.json's run, with the hosts' policies)."""
    return json.loads(connection.execute(select(RUNS.c.record).where(RUNS.c.id == run_pk)).scalar() or "{}")


def run_hosts(connection, run_pk):
    query = select(HOSTS.c.host, HOSTS.c.status, HOSTS.c.message, HOSTS.c.facts_file).where(HOSTS.c.run_pk == run_pk)
    return {row.host: {"status": row.status, "facts_file": row.facts_file, "message": row.message}
            for row in connection.execute(query)}


def run_findings(connection, run_pk):
    """[(finding dict, identity, first_seen, runs_open)]"""
    query = select(FINDINGS.c.data, FINDINGS.c.identity, FINDINGS.c.first_seen, FINDINGS.c.runs_open).where(
        FINDINGS.c.run_pk == run_pk).order_by(FINDINGS.c.id)
    return [(json.loads(row.data), row.identity, row.first_seen, row.runs_open) for row in connection.execute(query)]


def run_causes(connection, run_pk):
    query = select(CAUSES.c.data).where(CAUSES.c.run_pk == run_pk).order_by(CAUSES.c.id)
    return [json.loads(row.data) for row in connection.execute(query)]


def run_facts(connection, run_pk, hosts=None, view=None):
    """{host: facts} kept for a run (retention may have removed them); view: a function applied to each host's
    facts as it is read (fleet_view.fleet_view: only what the drift rules and baseline templates read)."""
    query = select(FACTS.c.host, FACTS.c.data).where(FACTS.c.run_pk == run_pk)
    if hosts is not None:
        query = query.where(FACTS.c.host.in_(list(hosts)))
    view = view or (lambda facts: facts)
    return {row.host: view(facts_from_blob(row.data)) for row in connection.execute(query)}


def host_facts_history(connection, host, limit, view=None):
    """[(run id, facts)] of a host's newest `limit` stored facts, newest first (retention may have removed some);
    view: as in run_facts."""
    query = (select(RUNS.c.run_id, FACTS.c.data).join(RUNS, RUNS.c.id == FACTS.c.run_pk)
             .where(FACTS.c.host == host).order_by(FACTS.c.run_pk.desc()).limit(limit))
    view = view or (lambda facts: facts)
    return [(row.run_id, view(facts_from_blob(row.data))) for row in connection.execute(query)]


def finding_history(connection, identity):
    """Every run that had this finding, oldest first: [(run_id, started_at, severity, runs_open)]."""
    query = (select(RUNS.c.run_id, RUNS.c.started_at, FINDINGS.c.severity, FINDINGS.c.runs_open,
                    FINDINGS.c.first_seen)
             .join(RUNS, RUNS.c.id == FINDINGS.c.run_pk)
             .where(FINDINGS.c.identity == identity).order_by(FINDINGS.c.run_pk))
    return list(connection.execute(query))


def baselines(connection):
    """{group: (run row, set_at)}"""
    query = select(BASELINES.c.scope_group, BASELINES.c.set_at, RUNS.c.id, RUNS.c.run_id, RUNS.c.started_at).join(
        RUNS, RUNS.c.id == BASELINES.c.run_pk).order_by(BASELINES.c.scope_group)
    return {row.scope_group: row for row in connection.execute(query)}


def counters_before(connection, gpu_keys, before_pk):
    """{gpu key: newest counters row of an earlier run} for the given GPUs."""
    if not gpu_keys:
        return {}
    newest = (select(GPU_COUNTERS.c.gpu_key, func.max(GPU_COUNTERS.c.run_pk).label("run_pk"))
              .where(GPU_COUNTERS.c.run_pk < before_pk, GPU_COUNTERS.c.gpu_key.in_(list(gpu_keys)))
              .group_by(GPU_COUNTERS.c.gpu_key).subquery())
    query = select(GPU_COUNTERS).join(newest, (newest.c.gpu_key == GPU_COUNTERS.c.gpu_key)
                                      & (newest.c.run_pk == GPU_COUNTERS.c.run_pk))
    return {row.gpu_key: row for row in connection.execute(query)}


def store_counts(connection):
    """Rows per table, for `gpufleet runs` and the size figures."""
    return {table.name: connection.execute(select(func.count()).select_from(table)).scalar()
            for table in (RUNS, HOSTS, FACTS, FINDINGS, CAUSES, GPU_COUNTERS, BASELINES)}
