# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Baselines: a known-good run for the whole fleet ("all") or for one inventory group. A host's baseline is
that of the first of its groups (in name order) that has one, else the fleet's."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import datetime

from ansible_collections.gpufleet.core.plugins.plugin_utils.store.sqla import delete
from ansible_collections.gpufleet.core.plugins.plugin_utils.store.engine import StoreError
from ansible_collections.gpufleet.core.plugins.plugin_utils.store.queries import baselines, find_run, run_facts
from ansible_collections.gpufleet.core.plugins.plugin_utils.store.record import UNFINISHED
from ansible_collections.gpufleet.core.plugins.plugin_utils.store.tables import BASELINES

WHOLE_FLEET = "all"


def utc_now():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def set_baseline(connection, run_name, group=WHOLE_FLEET):
    """Makes a run (its id, or latest) the baseline of group; returns the run's row."""
    row = find_run(connection, run_name)
    if row.status == "failed":
        raise StoreError("run %s failed (no host's facts were read); it cannot be a baseline" % row.run_id)
    if row.status == UNFINISHED:
        raise StoreError("run %s is unfinished (its reports were not all written); it cannot be a baseline" % row.run_id)
    connection.execute(delete(BASELINES).where(BASELINES.c.scope_group == group))
    connection.execute(BASELINES.insert().values(scope_group=group, run_pk=row.id, set_at=utc_now()))
    return row


def baseline_for_hosts(connection, hosts, groups_of_host):
    """{host: (baseline run row, group)} for the hosts that have one. groups_of_host: {host: [groups]}."""
    rows = baselines(connection)
    if not rows:
        return {}
    chosen = {}
    for host in hosts:
        for group in sorted(groups_of_host.get(host) or ()):
            if group != WHOLE_FLEET and group in rows:
                chosen[host] = (rows[group], group)
                break
        else:
            if WHOLE_FLEET in rows:
                chosen[host] = (rows[WHOLE_FLEET], WHOLE_FLEET)
    return chosen


def baseline_facts(connection, chosen, view=None):
    """{host: (facts of the host in its baseline run, baseline run row, group)}, each host's facts through view
    (the audit's fleet view: what the drift rules and the baseline templates read); hosts the baseline run did not
    read (or whose facts retention removed) are left out."""
    by_run = {}
    for host, (row, group) in chosen.items():
        by_run.setdefault(row.id, (row, group, []))[2].append(host)
    result = {}
    for _pk, (row, group, hosts) in by_run.items():
        for host, facts in run_facts(connection, row.id, hosts, view).items():
            result[host] = (facts, row, group)
    return result
