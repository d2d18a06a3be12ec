# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The audit's use of the store: compare with the previous complete run of the same scope, then write
the run in ONE transaction, before the reports are written, so each report says what changed. A run whose
reports are still to be written is stored as unfinished; finish_run gives it its status once its folder is
complete, so the store never calls a run complete whose folder is not (a run killed in between stays
unfinished, or is finished by the next run's store transaction when its folder was complete after all).

A store that cannot be opened or written (unwritable path, server down, a newer schema) never stops the
run: report.json says so under "store" (status failed, the error) and "changes" (status unavailable),
every report is still written and the exit status is what the findings make it. An interrupted run
rolls back: the store holds a run completely or not at all.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
import os

from ansible_collections.gpufleet.core.plugins.plugin_utils.store import changes as change_set
from ansible_collections.gpufleet.core.plugins.plugin_utils.store.engine import StoreError, redacted, resolve_url

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
    """groups: Ansible's {group: [hosts]}, for group baselines. Imports nothing beyond the standard library:
    a controller without SQLAlchemy gets a store that fails (and says why), not a failed audit."""
    url, source = resolve_url(report_root, inventory_url, enabled, environ)
    facts_days, runs_days = retention_of(list(policies))
    return StoreSettings(url, source, facts_days, runs_days, invert_groups(groups))


def facts_gpu_keys(facts_by_host):
    from ansible_collections.gpufleet.core.plugins.plugin_utils.store.identity import gpu_keys
    return {host: gpu_keys(facts) for host, facts in facts_by_host.items()}


def store_and_compare(url, report, facts_by_host, settings, extend=None, run_dir=None, host_policies=None,
                      extracts=None, status=None):
    """Opens the store, compares and writes; returns (identified, history, changes, store section).
    extend(connection, report, facts_by_host, previous run row, counters): findings to add before the comparison
    (drift and trends); it may add them to the report itself. extracts: {host: the worker's store extract}
    (store/extract.py); status: the run's status in the store when not the report's (UNFINISHED)."""
    from ansible_collections.gpufleet.core.plugins.plugin_utils.store.engine import make_engine
    from ansible_collections.gpufleet.core.plugins.plugin_utils.store.identity import identify
    from ansible_collections.gpufleet.core.plugins.plugin_utils.store.queries import (
        finding_documents, open_findings, previous_complete_run)
    from ansible_collections.gpufleet.core.plugins.plugin_utils.store.schema import ensure_schema
    from ansible_collections.gpufleet.core.plugins.plugin_utils.store.retention import WholeScope, apply_retention
    from ansible_collections.gpufleet.core.plugins.plugin_utils.store.write import scope_key, write_run
    from ansible_collections.gpufleet.core.plugins.plugin_utils.store.counters import fleet_counters
    counters = fleet_counters(facts_by_host, extracts)
    engine = make_engine(url)
    try:
        revision = ensure_schema(engine)
        with engine.begin() as connection:
            finish_complete_folders(connection)
            previous_run = previous_complete_run(connection, scope_key(report["run"]))
            if extend is not None:
                extend(connection, report, facts_by_host, previous_run, counters)
            identified = identify(report["findings"], facts_gpu_keys(facts_by_host))
            previous = open_findings(connection, previous_run.id) if previous_run is not None else {}
            audited = {host for host, entry in report["hosts"].items() if entry["status"] == "ok"}
            history, changes = change_set.compare(
                identified, previous, report["run"].get("started_at"), audited,
                previous_run.run_id if previous_run is not None else None,
                lambda identities: finding_documents(connection, previous_run.id, identities))
            run_pk = write_run(connection, report, facts_by_host, identified, history, run_dir=run_dir,
                               counters_by_host=counters, host_policies=host_policies, extracts=extracts,
                               status=status)
            whole_scope = WholeScope(scope_key(report["run"]), settings.facts_days, settings.runs_days) \
                if report["run"].get("status") == "complete" else None
            removed = apply_retention(connection, run_pk, retention_by_host(report["hosts"], host_policies, settings),
                                      whole_scope)
    finally:
        engine.dispose()
    skipped = removed.pop("skipped")
    section = {"status": "written", "url": redacted(url), "source": settings.source, "revision": revision,
               "run": run_pk, "previous_run": changes["against"], "error": None,
               "retention": {"facts_days": settings.facts_days, "runs_days": settings.runs_days,
                             "removed": removed, "skipped": skipped}}
    return identified, history, changes, section


def record_run(settings, report, facts_by_host, host_policies=None, extend=None, run_dir=None, extracts=None,
               reports_pending=False):
    """Adds "store" and "changes" to the report (and first_seen, runs_open to its findings when the store
    answered), with the drift and trend findings (store/history_findings.py) unless extend says otherwise.
    extracts: {host: the store extract its worker prepared} (store/extract.py), for the hosts whose facts file
    the worker wrote. reports_pending: the run's report files are written after this (into run_dir): the run is
    stored as UNFINISHED until finish_run. Never raises for a store problem."""
    if settings is None or not settings.url:
        report["store"] = {"status": "off", "url": None, "source": "off", "error": None}
        report["changes"] = change_set.unavailable("the store is off")
        return report
    if extend is None:
        from ansible_collections.gpufleet.core.plugins.plugin_utils.audit.history_step import extender
        extend = extender(host_policies or {}, settings.groups_of_host)
    try:
        identified, history, changes, section = store_and_compare(
            settings.url, report, facts_by_host, settings, extend, run_dir, host_policies, extracts,
            UNFINISHED if reports_pending else None)
    except Exception as exc:  # any store failure (driver, server, disk, schema) is reported, never fatal
        message = store_error_text(exc)
        report["store"] = {"status": "failed", "url": redacted(settings.url), "source": settings.source,
                           "error": message}
        report["changes"] = change_set.unavailable("the store could not be used: %s" % message)
        return report
    change_set.annotate(report, identified, history, changes)
    report["store"] = section
    return report


def folder_complete(run_dir, run_id):
    """True when run_dir holds every report file and its report.json is run run_id's."""
    from ansible_collections.gpufleet.core.plugins.plugin_utils.reports.writer import RENDERERS
    if not run_dir or not all(os.path.isfile(os.path.join(run_dir, name)) for name, _render in RENDERERS):
        return False
    try:
        with open(os.path.join(run_dir, "report.json"), encoding="utf-8") as stream:
            return json.load(stream)["run"]["id"] == run_id
    except (OSError, ValueError, KeyError, TypeError):
        return False


def finish_complete_folders(connection):
    """The unfinished runs whose folder (on this controller) is complete after all get the status their record
    holds: a run killed after writing its reports but before finish_run."""
    from ansible_collections.gpufleet.core.plugins.plugin_utils.store.sqla import select
    from ansible_collections.gpufleet.core.plugins.plugin_utils.store.tables import RUNS
    rows = connection.execute(select(RUNS.c.id, RUNS.c.run_id, RUNS.c.run_dir, RUNS.c.record).where(
        RUNS.c.status == UNFINISHED)).all()
    for row in rows:
        if folder_complete(row.run_dir, row.run_id):
            mark_finished(connection, row.id, json.loads(row.record).get("status") or "complete")


def mark_finished(connection, run_pk, status):
    from ansible_collections.gpufleet.core.plugins.plugin_utils.store.tables import RUNS
    connection.execute(RUNS.update().where(RUNS.c.id == run_pk, RUNS.c.status == UNFINISHED).values(status=status))


def finish_run(settings, report):
    """After the run folder is complete: the run's row gets the report's status (it was UNFINISHED). Returns
    None, or why the store could not be told (the next run's store transaction then finishes it)."""
    if settings is None or not settings.url or (report.get("store") or {}).get("status") != "written":
        return None
    from ansible_collections.gpufleet.core.plugins.plugin_utils.store.engine import make_engine
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
