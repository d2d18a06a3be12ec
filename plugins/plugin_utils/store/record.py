# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The audit's use of the store: compare with the previous complete run of the same scope, then write
the run in ONE transaction, before the reports are written, so each report says what changed.

A store that cannot be opened or written (unwritable path, server down, a newer schema) never stops the
run: report.json says so under "store" (status failed, the error) and "changes" (status unavailable),
every report is still written and the exit status is what the findings make it. An interrupted run
rolls back: the store holds a run completely or not at all.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.gpufleet.core.plugins.plugin_utils.store import changes as change_set
from ansible_collections.gpufleet.core.plugins.plugin_utils.store.engine import StoreError, redacted, resolve_url

DEFAULT_FACTS_DAYS = 30
DEFAULT_RUNS_DAYS = 365


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
                      extracts=None):
    """Opens the store, compares and writes; returns (identified, history, changes, store section).
    extend(connection, report, facts_by_host, previous run row, counters): findings to add before the comparison
    (drift and trends); it may add them to the report itself. extracts: {host: the worker's store extract}
    (store/extract.py)."""
    from ansible_collections.gpufleet.core.plugins.plugin_utils.store.engine import make_engine
    from ansible_collections.gpufleet.core.plugins.plugin_utils.store.identity import identify
    from ansible_collections.gpufleet.core.plugins.plugin_utils.store.queries import (
        finding_documents, open_findings, previous_complete_run)
    from ansible_collections.gpufleet.core.plugins.plugin_utils.store.schema import ensure_schema
    from ansible_collections.gpufleet.core.plugins.plugin_utils.store.retention import apply_retention
    from ansible_collections.gpufleet.core.plugins.plugin_utils.store.write import scope_key, write_run
    from ansible_collections.gpufleet.core.plugins.plugin_utils.store.counters import fleet_counters
    counters = fleet_counters(facts_by_host, extracts)
    engine = make_engine(url)
    try:
        revision = ensure_schema(engine)
        with engine.begin() as connection:
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
                               counters_by_host=counters, host_policies=host_policies, extracts=extracts)
            removed = apply_retention(connection, run_pk, retention_by_host(report["hosts"], host_policies, settings))
    finally:
        engine.dispose()
    skipped = removed.pop("skipped")
    section = {"status": "written", "url": redacted(url), "source": settings.source, "revision": revision,
               "run": run_pk, "previous_run": changes["against"], "error": None,
               "retention": {"facts_days": settings.facts_days, "runs_days": settings.runs_days,
                             "removed": removed, "skipped": skipped}}
    return identified, history, changes, section


def record_run(settings, report, facts_by_host, host_policies=None, extend=None, run_dir=None, extracts=None):
    """Adds "store" and "changes" to the report (and first_seen, runs_open to its findings when the store
    answered), with the drift and trend findings (store/history_findings.py) unless extend says otherwise.
    extracts: {host: the store extract its worker prepared} (store/extract.py), for the hosts whose facts file
    the worker wrote. Never raises for a store problem."""
    if settings is None or not settings.url:
        report["store"] = {"status": "off", "url": None, "source": "off", "error": None}
        report["changes"] = change_set.unavailable("the store is off")
        return report
    if extend is None:
        from ansible_collections.gpufleet.core.plugins.plugin_utils.store.history_findings import extender
        extend = extender(host_policies or {}, settings.groups_of_host)
    try:
        identified, history, changes, section = store_and_compare(settings.url, report, facts_by_host, settings,
                                                                  extend, run_dir, host_policies, extracts)
    except Exception as exc:  # any store failure (driver, server, disk, schema) is reported, never fatal
        message = store_error_text(exc)
        report["store"] = {"status": "failed", "url": redacted(settings.url), "source": settings.source,
                           "error": message}
        report["changes"] = change_set.unavailable("the store could not be used: %s" % message)
        return report
    change_set.annotate(report, identified, history, changes)
    report["store"] = section
    return report


def store_error_text(exc):
    if isinstance(exc, StoreError):
        return str(exc)
    text = " ".join(str(getattr(exc, "orig", None) or exc).split())
    return "%s: %s" % (type(exc).__name__, text[:500])
