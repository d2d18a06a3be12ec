# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""One node's history in the store, for its return-to-vendor packet (quarantine/rma_packet.py): the runs that
audited it, its findings in them, its kept facts. Every function takes an open SQLAlchemy connection."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json

from ansible_collections.gpufleet.core.plugins.plugin_utils.store.sqla import select
from ansible_collections.gpufleet.core.plugins.plugin_utils.store.tables import FACTS, FINDINGS, HOSTS, RUNS
from ansible_collections.gpufleet.core.plugins.plugin_utils.store.write import facts_from_blob

MAX_RUNS = 50
MAX_FACTS = 10


def host_runs(connection, host, limit=MAX_RUNS):
    """The newest runs that had the host, newest first: [{run_pk, run_id, started_at, run_status, host_status,
    message}]."""
    query = (select(RUNS.c.id, RUNS.c.run_id, RUNS.c.started_at, RUNS.c.status, HOSTS.c.status.label("host_status"),
                    HOSTS.c.message)
             .join(RUNS, RUNS.c.id == HOSTS.c.run_pk).where(HOSTS.c.host == host)
             .order_by(RUNS.c.id.desc()).limit(limit))
    return [{"run_pk": row.id, "run_id": row.run_id, "started_at": row.started_at, "run_status": row.status,
             "host_status": row.host_status, "message": row.message} for row in connection.execute(query)]


def host_findings(connection, host, run_pks):
    """{run_pk: [finding dict with first_seen and runs_open]} of the host in those runs."""
    found = {pk: [] for pk in run_pks}
    if not run_pks:
        return found
    query = (select(FINDINGS.c.run_pk, FINDINGS.c.data, FINDINGS.c.first_seen, FINDINGS.c.runs_open)
             .where(FINDINGS.c.host == host, FINDINGS.c.run_pk.in_(list(run_pks))).order_by(FINDINGS.c.id))
    for row in connection.execute(query):
        found[row.run_pk].append(dict(json.loads(row.data), first_seen=row.first_seen, runs_open=row.runs_open))
    return found


def host_facts(connection, host, limit=MAX_FACTS):
    """[(run_pk, facts)] the store kept of the host (retention removes old ones), newest first."""
    query = (select(FACTS.c.run_pk, FACTS.c.data).where(FACTS.c.host == host)
             .order_by(FACTS.c.run_pk.desc()).limit(limit))
    return [(row.run_pk, facts_from_blob(row.data)) for row in connection.execute(query)]
