# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The store's tables at the newest revision, for the code that reads and writes them.

The migrations (store/migrations/versions) create the same tables step by step and never import this
file: a revision is frozen once released. Times are ISO 8601 UTC text ("2026-11-30T06:00:00Z"), which
sorts as time in both engines; documents (findings, causes, the run record) are JSON text, facts
zlib-compressed JSON (a host's facts are ~30 KB, a tenth of that compressed).
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.gpufleet.core.plugins.plugin_utils.store.sqla import (
    IMPORT_ERROR, BigInteger, Column, ForeignKey, Index, Integer, LargeBinary, MetaData, String, Table, Text)
from ansible_collections.gpufleet.core.plugins.plugin_utils.store.counters import COUNTER_COLUMNS


def run_reference():
    return Column("run_pk", Integer, ForeignKey("runs.id", ondelete="CASCADE"), nullable=False)


METADATA = RUNS = HOSTS = FACTS = FINDINGS = CAUSES = BASELINES = GPU_COUNTERS = SERVICE_EVENTS = TIME = None
RUN_TABLES = ()
if IMPORT_ERROR is None:  # without SQLAlchemy the module imports, and the store says what is missing
    METADATA = MetaData()
    TIME = String(32)
    RUNS = Table(
        "runs", METADATA,
        Column("id", Integer, primary_key=True, autoincrement=True),
        Column("run_id", String(255), nullable=False, unique=True),
        Column("scope_key", String(500), nullable=False),
        Column("status", String(16), nullable=False),
        Column("status_reason", Text),
        Column("started_at", TIME),
        Column("finished_at", TIME),
        Column("tool_version", String(64)),
        Column("report_version", String(16)),
        Column("run_dir", Text),
        Column("hosts_total", Integer, nullable=False),
        Column("findings_total", Integer, nullable=False),
        Column("record", Text, nullable=False),
        Column("summary", Text, nullable=False),
        Index("ix_runs_scope_status", "scope_key", "status", "id"),
    )

    HOSTS = Table(
        "hosts", METADATA,
        Column("id", Integer, primary_key=True, autoincrement=True),
        run_reference(),
        Column("host", String(255), nullable=False),
        Column("status", String(16), nullable=False),
        Column("message", Text),
        Column("facts_file", Text),
        Index("ix_hosts_run", "run_pk"),
        Index("ix_hosts_host", "host"),
    )

    FACTS = Table(
        "facts", METADATA,
        run_reference(),
        Column("host", String(255), nullable=False),
        Column("collected_at", TIME),
        Column("data", LargeBinary, nullable=False),  # zlib of the facts file's JSON (store/write.py)
        Index("ix_facts_run_host", "run_pk", "host", unique=True),
    )

    FINDINGS = Table(
        "findings", METADATA,
        Column("id", Integer, primary_key=True, autoincrement=True),
        run_reference(),
        Column("identity", String(40), nullable=False),
        Column("host", String(255), nullable=False),
        Column("rule", String(200), nullable=False),
        Column("layer", String(16), nullable=False),
        Column("severity", String(16), nullable=False),
        Column("gpu", String(64)),
        Column("gpu_key", String(128)),
        Column("rule_key", Text),
        Column("first_seen", TIME, nullable=False),
        Column("runs_open", Integer, nullable=False),
        Column("data", Text, nullable=False),
        # revision 0003: covers what a comparison reads of the previous run (store/queries.open_findings)
        Index("ix_findings_open", "run_pk", "identity", "host", "first_seen", "runs_open"),
        Index("ix_findings_identity", "identity", "run_pk"),
    )

    CAUSES = Table(
        "causes", METADATA,
        Column("id", Integer, primary_key=True, autoincrement=True),
        run_reference(),
        Column("cause_id", String(255), nullable=False),
        Column("severity", String(16)),
        Column("data", Text, nullable=False),
        Index("ix_causes_run", "run_pk"),
    )

    # revision 0002
    BASELINES = Table(
        "baselines", METADATA,
        Column("id", Integer, primary_key=True, autoincrement=True),
        Column("scope_group", String(255), nullable=False, unique=True),
        run_reference(),
        Column("set_at", TIME, nullable=False),
    )

    # one row per GPU and run: cumulative error counters (None: not read), for the trends (rules/drift_trend.py)
    GPU_COUNTERS = Table(
        "gpu_counters", METADATA,
        run_reference(),
        Column("host", String(255), nullable=False),
        Column("gpu_key", String(128), nullable=False),
        Column("observed_at", TIME, nullable=False),
        *[Column(name, BigInteger) for name in COUNTER_COLUMNS],
        Index("ix_counters_gpu", "gpu_key", "run_pk"),
        Index("ix_counters_run", "run_pk"),
    )

    # revision 0005: what quarantine and repair did to a node, one row per event, in the order recorded; a node's
    # service state is derived from them (quarantine/service_state.py), never stored. Not a run's table: the
    # events outlive the runs that retention removes.
    SERVICE_EVENTS = Table(
        "service_events", METADATA,
        Column("id", Integer, primary_key=True, autoincrement=True),
        Column("host", String(255), nullable=False),
        Column("event", String(32), nullable=False),
        Column("at", TIME, nullable=False),
        Column("run_id", String(255)),
        Column("scheduler", String(16), nullable=False),
        Column("rule", String(200)),
        Column("finding", Text),
        Column("reason", Text),
        Column("step", String(16)),
        Column("result", String(16)),
        Column("detail", Text),
        Index("ix_service_events_host", "host", "id"),
    )

    # rows of these tables belong to one run; retention and rebuilds go through them
    RUN_TABLES = (HOSTS, FACTS, FINDINGS, CAUSES, GPU_COUNTERS)
