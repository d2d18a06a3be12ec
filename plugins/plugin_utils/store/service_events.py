# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The nodes' service events (table service_events, revision 0005): appended, never changed, read back in the
order they were recorded. What they mean (a node's service state) is quarantine/service_state.py's."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.gpufleet.core.plugins.plugin_utils.store.sqla import select
from ansible_collections.gpufleet.core.plugins.plugin_utils.store.tables import SERVICE_EVENTS

EVENT_FIELDS = ("host", "event", "at", "run_id", "scheduler", "rule", "finding", "reason", "step", "result", "detail")


def append_events(connection, events):
    """Appends the events (dicts with EVENT_FIELDS; a missing field is NULL), in their order."""
    rows = [{field: event.get(field) for field in EVENT_FIELDS} for event in events]
    if rows:
        connection.execute(SERVICE_EVENTS.insert(), rows)
    return len(rows)


def read_events(connection, hosts=None, chunk=500):
    """The events of the hosts (None: every host), oldest first, as dicts with EVENT_FIELDS."""
    columns = [SERVICE_EVENTS.c[field] for field in EVENT_FIELDS]
    if hosts is None:
        queries = [select(SERVICE_EVENTS.c.id, *columns)]
    else:
        hosts = sorted(set(hosts))
        queries = [select(SERVICE_EVENTS.c.id, *columns).where(SERVICE_EVENTS.c.host.in_(hosts[start:start + chunk]))
                   for start in range(0, len(hosts), chunk)]
    rows = [row for query in queries for row in connection.execute(query)]
    rows.sort(key=lambda row: row.id)
    return [{field: getattr(row, field) for field in EVENT_FIELDS} for row in rows]
