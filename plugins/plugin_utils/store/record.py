# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The audit's use of the store, as one transaction the audit drives (audit/record_step.py): open_run opens
it and settles earlier runs, the audit reads what it needs (the previous complete run of its scope, baselines and
counters for the history rules) and builds its report, RunTransaction.write compares the report with the
previous run and writes it, all before the reports are written, so each report says what changed. A run whose
reports are still to be written is stored as unfinished; finish_run gives it its status once its folder is
complete, so the store never calls a run complete whose folder is not (a run killed in between stays
unfinished, or is finished by the next run's store transaction when its folder was complete after all).

A store that cannot be opened or written (unwritable path, server down, a newer schema) never stops the
run: report.json says so under "store" (status failed, the error) and "changes" (status unavailable),
every report is still written and the exit status is what the findings make it (mark_failed). An
interrupted run rolls back: the store holds a run completely or not at all.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import contextlib
import json
import os

from ansible_collections.gpufleet.core.plugins.plugin_utils.store import changes as change_set
from ansible_collections.gpufleet.core.plugins.plugin_utils.store.engine import (
    StoreError, make_engine, redacted, resolve_url)
from ansible_collections.gpufleet.core.plugins.plugin_utils.store.extract import fleet_counters
from ansible_collections.gpufleet.core.plugins.plugin_utils.store.identity import gpu_keys, identify
from ansible_collections.gpufleet.core.plugins.plugin_utils.store.queries import (
    finding_documents, open_findings, previous_complete_run)
from ansible_collections.gpufleet.core.plugins.plugin_utils.store.retention import WholeScope, apply_retention
from ansible_collections.gpufleet.core.plugins.plugin_utils.store.schema import ensure_schema
from ansible_collections.gpufleet.core.plugins.plugin_utils.store.sqla import select
from ansible_collections.gpufleet.core.plugins.plugin_utils.store.tables import RUNS
from ansible_collections.gpufleet.core.plugins.plugin_utils.store.write import scope_key, write_run

DEFAULT_FACTS_DAYS = 30
DEFAULT_RUNS_DAYS = 365
# the store's status of a run whose report files are not all written yet (runs.status; the record keeps the run's)
UNFINISHED = "unfinished"


class StoreSettings:
    """Which store a run writes to and how long it keeps what."""

    __slots__ = ("url", "source", "facts_days", "runs_days", "groups_of_host")

    def __init__(self, url, source="given", facts_days=DEFAULT_FACTS_DAYS, runs_days=DEFAULT_RUNS_DAYS,
                 groups_of_host=None):
        self.groups_of_host = groups_of_host or {}
        self.url = url
        self.source = source
        self.facts_days = facts_days
        self.runs_days = runs_days


def retention_of(policies):
    """(facts_days, runs_days): the longest any of the policies asks for (0: keep forever)."""
    facts, runs = [], []
    for policy in policies:
        retention = ((policy or {}).get("store") or {}).get("retention") or {}
        facts.append(retention.get("facts_days", DEFAULT_FACTS_DAYS))
        runs.append(retention.get("runs_days", DEFAULT_RUNS_DAYS))

    def longest(values, default):
        if not values:
            return default
        return 0 if 0 in values else max(values)
    return longest(facts, DEFAULT_FACTS_DAYS), longest(runs, DEFAULT_RUNS_DAYS)


def invert_groups(groups):
    """{group: [hosts]} (Ansible's `groups`) -> {host: [groups]}."""
    by_host = {}
    for group, hosts in (groups or {}).items():
        for host in hosts or ():
            by_host.setdefault(host, []).append(group)
    return by_host


def retention_by_host(hosts, host_policies, settings):
    """{host: (facts_days, runs_days)} of a run's hosts: each host's own policy's, else the settings' (a run
    recorded without its hosts' policies)."""
    host_policies = host_policies or {}
    return {host: retention_of([host_policies[host]]) if host in host_policies
            else (settings.facts_days, settings.runs_days) for host in hosts}


def settings_for(report_root, inventory_url=None, enabled=None, policies=(), environ=None, groups=None):
    """groups: Ansible's {group: [hosts]}, for group baselines. A controller without SQLAlchemy gets a store
    that fails (and says why: store/sqla.py), not a failed audit."""
    url, source = resolve_url(report_root, inventory_url, enabled, environ)
    facts_days, runs_days = retention_of(list(policies))
    return StoreSettings(url, source, facts_days, runs_days, invert_groups(groups))


def facts_gpu_keys(facts_by_host):
    return {host: gpu_keys(facts) for host, facts in facts_by_host.items()}


class Recorded:
    """What the store made of a written run: each finding's identity and history, the changes section and the
    report's store section; apply_recorded puts them in the report once the transaction is committed."""

    __slots__ = ("identified", "history", "changes", "section")

    def __init__(self, identified, history, changes, section):
        self.identified = identified
        self.history = history
        self.changes = changes
        self.section = section


class RunTransaction:
    """One run's transaction in the store (open_run). connection: for what the audit reads in it (baselines, the
    history rules' counters); previous_run: the previous complete run of the run's scope (None: the first);
    counters: this run's GPU counters by host (store/counters.py)."""

    def __init__(self, connection, settings, revision, previous_run, counters):
        self.connection = connection
        self.settings = settings
        self.revision = revision
        self.previous_run = previous_run
        self.counters = counters

    def write(self, report, facts_by_host, run_dir=None, host_policies=None, extracts=None, reports_pending=False):
        """Compares the report with the previous run and writes it, with retention; returns Recorded.
        reports_pending: the run's report files are written after this (into run_dir): the run is stored as
        UNFINISHED until finish_run."""
        connection, previous_run, settings = self.connection, self.previous_run, self.settings
        identified = identify(report["findings"], facts_gpu_keys(facts_by_host))
        previous = open_findings(connection, previous_run.id) if previous_run is not None else {}
        audited = {host for host, entry in report["hosts"].items() if entry["status"] == "ok"}
        history, changes = change_set.compare(
            identified, previous, report["run"].get("started_at"), audited,
            previous_run.run_id if previous_run is not None else None,
            lambda identities: finding_documents(connection, previous_run.id, identities))
        run_pk = write_run(connection, report, facts_by_host, identified, history, run_dir=run_dir,
                           counters_by_host=self.counters, host_policies=host_policies, extracts=extracts,
                           status=UNFINISHED if reports_pending else None)
        whole_scope = WholeScope(scope_key(report["run"]), settings.facts_days, settings.runs_days) \
            if report["run"].get("status") == "complete" else None
        removed = apply_retention(connection, run_pk, retention_by_host(report["hosts"], host_policies, settings),
                                  whole_scope)
        skipped = removed.pop("skipped")
        section = {"status": "written", "url": redacted(settings.url), "source": settings.source,
                   "revision": self.revision, "run": run_pk, "previous_run": changes["against"], "error": None,
                   "retention": {"facts_days": settings.facts_days, "runs_days": settings.runs_days,
                                 "removed": removed, "skipped": skipped}}
        return Recorded(identified, history, changes, section)


@contextlib.contextmanager
def open_run(settings, run, facts_by_host, report_files, extracts=None):
    """The run's transaction (RunTransaction), committed when the block ends, rolled back when it raises.
    run: the report's run record (its scope); report_files: the names of a complete run folder's report files,
    by which unfinished runs whose folder is complete after all are finished first (finish_complete_folders);
    extracts: {host: the store extract its worker prepared} (store/extract.py)."""
    counters = fleet_counters(facts_by_host, extracts)
    engine = make_engine(settings.url)
    try:
        revision = ensure_schema(engine)
        with engine.begin() as connection:
            finish_complete_folders(connection, report_files)
            previous_run = previous_complete_run(connection, scope_key(run))
            yield RunTransaction(connection, settings, revision, previous_run, counters)
    finally:
        engine.dispose()


def apply_recorded(report, recorded):
    """The report with "changes", its findings' identity, first_seen and runs_open, and "store"."""
    change_set.annotate(report, recorded.identified, recorded.history, recorded.changes)
    report["store"] = recorded.section
    return report


def mark_off(report):
    report["store"] = {"status": "off", "url": None, "source": "off", "error": None}
    report["changes"] = change_set.unavailable("the store is off")
    return report


def mark_failed(report, settings, exc):
    """The report of a run the store could not take: any store failure (driver, server, disk, schema)."""
    message = store_error_text(exc)
    report["store"] = {"status": "failed", "url": redacted(settings.url), "source": settings.source,
                       "error": message}
    report["changes"] = change_set.unavailable("the store could not be used: %s" % message)
    return report


def folder_complete(run_dir, run_id, report_files):
    """True when run_dir holds every report file and its report.json is run run_id's."""
    if not run_dir or not all(os.path.isfile(os.path.join(run_dir, name)) for name in report_files):
        return False
    try:
        with open(os.path.join(run_dir, "report.json"), encoding="utf-8") as stream:
            return json.load(stream)["run"]["id"] == run_id
    except (OSError, ValueError, KeyError, TypeError):
        return False


def finish_complete_folders(connection, report_files):
    """The unfinished runs whose folder (on this controller) is complete after all get the status their record
    holds: a run killed after writing its reports but before finish_run."""
    rows = connection.execute(select(RUNS.c.id, RUNS.c.run_id, RUNS.c.run_dir, RUNS.c.record).where(
        RUNS.c.status == UNFINISHED)).all()
    for row in rows:
        if folder_complete(row.run_dir, row.run_id, report_files):
            mark_finished(connection, row.id, json.loads(row.record).get("status") or "complete")


def mark_finished(connection, run_pk, status):
    connection.execute(RUNS.update().where(RUNS.c.id == run_pk, RUNS.c.status == UNFINISHED).values(status=status))


def finish_run(settings, report):
    """After the run folder is complete: the run's row gets the report's status (it was UNFINISHED). Returns
    None, or why the store could not be told (the next run's store transaction then finishes it)."""
    if settings is None or not settings.url or (report.get("store") or {}).get("status") != "written":
        return None
    try:
        engine = make_engine(settings.url)
        try:
            with engine.begin() as connection:
                mark_finished(connection, report["store"]["run"], report["run"]["status"])
        finally:
            engine.dispose()
    except Exception as exc:  # the reports are written; the next run finishes the row from its folder
        return store_error_text(exc)
    return None


def store_error_text(exc):
    if isinstance(exc, StoreError):
        return str(exc)
    text = " ".join(str(getattr(exc, "orig", None) or exc).split())
    return "%s: %s" % (type(exc).__name__, text[:500])
