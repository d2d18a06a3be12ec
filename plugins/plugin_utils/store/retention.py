# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The store's retention, applied by each run to what it owns: the facts of its own hosts, after their own
policy's store.retention.facts_days, and the runs whose every host it audited, after the longest runs_days of
those hosts. A complete run of its whole scope also owns the earlier runs of that scope (hosts since removed from
the inventory included), after the longest windows of its policies. A --limit run of one group never removes
another group's data, whatever its policy says.

Retention trusts the controller's clock only where the stored history agrees with it: when the newest earlier
run started far after the clock (the clock went back) or longer ago than the longest retention window in play
(a clock that jumped forward would purge every earlier run), nothing is removed and the run's store section
says why. The next run, once the clock and the history agree again, applies it.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import datetime

from ansible_collections.gpufleet.core.plugins.plugin_utils.store.sqla import delete, func, select
from ansible_collections.gpufleet.core.plugins.plugin_utils.store.tables import BASELINES, FACTS, HOSTS, RUN_TABLES, RUNS

TIME_FORMAT = "%Y-%m-%dT%H:%M:%SZ"
# how far after the controller's clock the newest stored run may have started (clocks of two controllers differ)
FUTURE_TOLERANCE = datetime.timedelta(hours=1)
CHUNK = 500


def cutoff(now, days):
    return (now - datetime.timedelta(days=days)).strftime(TIME_FORMAT)


def parse_time(text):
    try:
        return datetime.datetime.strptime(str(text), TIME_FORMAT).replace(tzinfo=datetime.timezone.utc)
    except ValueError:
        return None


def chunks(items, size=CHUNK):
    items = list(items)
    return [items[start:start + size] for start in range(0, len(items), size)]


def clock_disagreement(connection, run_pk, now, windows):
    """Why the clock cannot be trusted to remove anything (a sentence), or None. windows: the retention
    windows in play, in days (0: keep forever)."""
    newest_text = connection.execute(select(func.max(RUNS.c.started_at)).where(RUNS.c.id != run_pk)).scalar()
    newest = parse_time(newest_text) if newest_text else None
    if newest is None:
        return None
    clock = now.strftime(TIME_FORMAT)
    if newest - now > FUTURE_TOLERANCE:
        return ("the newest stored run started at %s, after this controller's clock (%s): the clock may have gone "
                "back; nothing was removed" % (newest_text, clock))
    longest = max((days for days in windows if days), default=0)
    if longest and now - newest > datetime.timedelta(days=longest):
        return ("the newest stored run started at %s, more than the retention's %d days before this controller's "
                "clock (%s): a clock that jumped forward would purge the history; nothing was removed (the next "
                "run applies the retention if the clock is right)" % (newest_text, longest, clock))
    return None


class WholeScope:
    """What a complete run of its whole scope owns besides its hosts: the earlier runs of scope_key, kept
    facts_days and runs_days (the longest of its policies; 0: forever)."""

    __slots__ = ("scope_key", "facts_days", "runs_days")

    def __init__(self, scope_key, facts_days, runs_days):
        self.scope_key, self.facts_days, self.runs_days = scope_key, facts_days, runs_days


def remove_facts(connection, run_pk, retention_by_host, now, scope=None):
    """Each of the run's hosts' facts in earlier runs older than that host's facts_days; with scope (WholeScope),
    every host's facts in the scope's runs older than its facts_days."""
    removed = 0
    if scope is not None and scope.facts_days:
        old = select(RUNS.c.id).where(RUNS.c.started_at < cutoff(now, scope.facts_days), RUNS.c.id != run_pk,
                                      RUNS.c.scope_key == scope.scope_key).scalar_subquery()
        removed += connection.execute(delete(FACTS).where(FACTS.c.run_pk.in_(old))).rowcount
    by_days = {}
    for host, (facts_days, _runs_days) in retention_by_host.items():
        if facts_days:
            by_days.setdefault(facts_days, []).append(host)
    for days, hosts in by_days.items():
        old = select(RUNS.c.id).where(RUNS.c.started_at < cutoff(now, days), RUNS.c.id != run_pk).scalar_subquery()
        for part in chunks(hosts):
            removed += connection.execute(delete(FACTS).where(FACTS.c.run_pk.in_(old), FACTS.c.host.in_(part))).rowcount
    return removed


def hosts_of_runs(connection, run_pks):
    """{run pk: {hosts}} of some runs (a run without host rows has an empty set)."""
    hosts = {pk: set() for pk in run_pks}
    for part in chunks(run_pks):
        for pk, host in connection.execute(select(HOSTS.c.run_pk, HOSTS.c.host).where(HOSTS.c.run_pk.in_(part))):
            hosts[pk].add(host)
    return hosts


def owned_expired(run_hosts, started_at, retention_by_host, now):
    """True when every host of a run is one of this run's, none of them is kept forever and the run is older than
    the longest runs_days of its hosts (a run without hosts: the longest of this run's)."""
    if not run_hosts <= set(retention_by_host):
        return False
    windows = [retention_by_host[host][1] for host in (run_hosts or retention_by_host)]
    if 0 in windows:
        return False
    return started_at < cutoff(now, max(windows))


def scope_expired(row, scope, now):
    """True when a run is one of the whole scope's (WholeScope) and older than its runs_days."""
    return (scope is not None and scope.runs_days and row.scope_key == scope.scope_key
            and row.started_at < cutoff(now, scope.runs_days))


def remove_runs(connection, run_pk, retention_by_host, now, scope=None):
    """The earlier runs this run owns (owned_expired, scope_expired), except those a baseline names."""
    windows = [days for _facts, days in retention_by_host.values() if days]
    if scope is not None and scope.runs_days:
        windows.append(scope.runs_days)
    if not windows:
        return 0
    candidates = {row.id: row for row in connection.execute(
        select(RUNS.c.id, RUNS.c.started_at, RUNS.c.scope_key).where(
            RUNS.c.started_at < cutoff(now, min(windows)), RUNS.c.id != run_pk,
            RUNS.c.id.not_in(select(BASELINES.c.run_pk))))}
    hosts = hosts_of_runs(connection, list(candidates))
    old_runs = [pk for pk, row in candidates.items() if scope_expired(row, scope, now)
                or owned_expired(hosts[pk], row.started_at, retention_by_host, now)]
    removed = 0
    for part in chunks(old_runs):
        for table in RUN_TABLES:
            connection.execute(delete(table).where(table.c.run_pk.in_(part)))
        removed += connection.execute(delete(RUNS).where(RUNS.c.id.in_(part))).rowcount
    return removed


def apply_retention(connection, run_pk, retention_by_host, scope=None, now=None):
    """run_pk: the run just written (never removed); retention_by_host: {host: (facts_days, runs_days)} of the
    run's hosts (0: keep forever); scope: a WholeScope when the run was complete. Returns {"facts": rows,
    "runs": runs removed, "skipped": why or None}."""
    now = now or datetime.datetime.now(datetime.timezone.utc)
    windows = [days for pair in retention_by_host.values() for days in pair]
    if scope is not None:
        windows += [scope.facts_days, scope.runs_days]
    skipped = clock_disagreement(connection, run_pk, now, windows)
    if skipped:
        return {"facts": 0, "runs": 0, "skipped": skipped}
    return {"facts": remove_facts(connection, run_pk, retention_by_host, now, scope),
            "runs": remove_runs(connection, run_pk, retention_by_host, now, scope), "skipped": None}
