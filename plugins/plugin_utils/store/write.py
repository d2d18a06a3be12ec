# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Writes one run (its record, host statuses, facts, findings, causes and GPU counters) on a connection
whose transaction the caller holds (the retention: store/retention.py)."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
import math
import os
import zlib


from ansible_collections.gpufleet.core.plugins.plugin_utils.store.counters import hca_port_counters
from ansible_collections.gpufleet.core.plugins.plugin_utils.store.extract import (
    compressed_facts, extract_blob, fleet_counters)
from ansible_collections.gpufleet.core.plugins.plugin_utils.store.sqla import IntegrityError
from ansible_collections.gpufleet.core.plugins.plugin_utils.store.tables import (
    CAUSES, COUNTER_COLUMNS, FACTS, FINDINGS, GPU_COUNTERS, HCA_COUNTERS, HOSTS, RUNS)

UNSCOPED = "all"


ENCODER = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str, allow_nan=False)


def dumps(value):
    """Compact JSON with sorted keys; one encoder for every document of a run (json.dumps with options
    builds a new one per call). Strict JSON: a NaN or Infinity (which no host's facts hold, facts_validation
    refuses them, but a computed value might) is stored as null, never as text a strict reader refuses."""
    try:
        return ENCODER.encode(value)
    except ValueError:
        return ENCODER.encode(finite_only(value))


def finite_only(value):
    """value with every NaN and Infinity replaced by None, in dicts, lists and tuples at any depth."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: finite_only(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite_only(item) for item in value]
    return value


def scope_key(run):
    return str(((run.get("scope") or {}).get("pattern")) or UNSCOPED)


def facts_blob(facts, run_dir=None, facts_file=None, extract=None):
    """The compressed JSON of a host's facts: from the worker's extract (store/extract.py) when there is one, else
    the facts file the audit just wrote (no second serialisation of every host's facts), else the facts encoded
    here."""
    blob = extract_blob(extract) if extract is not None else None
    if blob is not None:
        return blob
    data = None
    if run_dir and facts_file:
        try:
            with open(os.path.join(run_dir, facts_file), "rb") as stream:
                data = stream.read()  # its newline is whitespace to json.loads: no copy without it
        except OSError:
            data = None
    if data is None:
        data = dumps(facts).encode("utf-8", "backslashreplace")
    return compressed_facts(data)


def facts_from_blob(blob):
    return json.loads(zlib.decompress(bytes(blob)).decode("utf-8", "replace"))


POLICIES_KEY = "stored_policies"  # in the stored run record only, for the aggregate of sliced runs


def policies_record(host_policies):
    """{"policies": [distinct effective policies], "host_policy": {host: index}} of a run's hosts. Hosts of
    one group share one policy object: each object is encoded once to find the equal ones."""
    policies, index, host_policy, by_object = [], {}, {}, {}
    for host, policy in sorted((host_policies or {}).items()):
        if id(policy) not in by_object:
            key = dumps(policy)
            if key not in index:
                index[key] = len(policies)
                policies.append(policy)
            by_object[id(policy)] = index[key]
        host_policy[host] = by_object[id(policy)]
    return {"policies": policies, "host_policy": host_policy}


def stored_policies(record):
    """{host: effective policy} from a stored run record (policies_record's inverse)."""
    stored = record.get(POLICIES_KEY) or {}
    policies = stored.get("policies") or []
    return {host: policies[index] for host, index in (stored.get("host_policy") or {}).items()
            if 0 <= index < len(policies)}


MAX_RUN_ID_ATTEMPTS = 1000


def run_id_candidates(run_id):
    """run_id, then run_id-2, -3, ...: a run of another controller or slice that started in the same second
    (a shared store) holds the first."""
    yield run_id
    for attempt in range(2, MAX_RUN_ID_ATTEMPTS + 1):
        yield "%s-%d" % (run_id, attempt)


def inserted_unless_taken(connection, statement):
    """The inserted row's number, or None when the run id is taken (the transaction goes on: PostgreSQL in a
    savepoint; SQLite aborts only the statement, and a savepoint there would end the driver's transaction)."""
    try:
        if connection.dialect.name == "postgresql":
            with connection.begin_nested():
                return connection.execute(statement).inserted_primary_key[0]
        return connection.execute(statement).inserted_primary_key[0]
    except IntegrityError:
        return None


def insert_run(connection, report, host_policies=None, run_dir=None, status=None):
    """Inserts the run's record under the first free id of run_id_candidates, which becomes report.run.id;
    status: the run's status in the store's runs table when not the report's (store/record.py: unfinished until
    the run folder is complete). Returns the run's row number."""
    run = report["run"]
    stored_policies_record = {POLICIES_KEY: policies_record(host_policies)} if host_policies else {}
    for run_id in run_id_candidates(run["id"]):
        record = dict(run, id=run_id, **stored_policies_record)
        run_pk = inserted_unless_taken(connection, RUNS.insert().values(
            run_id=run_id, scope_key=scope_key(run), status=status or run["status"],
            status_reason=run.get("status_reason"),
            started_at=run.get("started_at"), finished_at=run.get("finished_at"), tool_version=run.get("tool_version"),
            report_version=report.get("report_version"), run_dir=run_dir or run.get("run_dir"),
            hosts_total=len(report["hosts"]), findings_total=len(report["findings"]),
            record=dumps(record), summary=dumps(report["summary"])))
        if run_pk is not None:
            run["id"] = run_id
            return run_pk
    raise ValueError("no free run id in the store after %d tries: %s-N" % (MAX_RUN_ID_ATTEMPTS, run["id"]))


def insert_rows(connection, table, columns, rows):
    """Plain tuples in one executemany (no SQLAlchemy parameter processing per row), or one COPY on
    PostgreSQL, on the connection's transaction: a run's rows are thousands, and building and checking a
    dict for each cost more than the database's own work."""
    if not rows:
        return
    quote = connection.dialect.identifier_preparer.quote
    names = "%s (%s)" % (quote(table.name), ", ".join(quote(column) for column in columns))
    if connection.dialect.driver == "psycopg":  # PostgreSQL: COPY, one stream instead of a statement a row
        with connection.connection.driver_connection.cursor() as cursor:
            with cursor.copy("COPY %s FROM STDIN" % names) as copy:
                for row in rows:
                    copy.write_row(row)
        return
    mark = "?" if connection.dialect.paramstyle == "qmark" else "%s"
    connection.exec_driver_sql("INSERT INTO %s VALUES (%s)" % (names, ", ".join([mark] * len(columns))), rows)


HOST_COLUMNS = ("run_pk", "host", "status", "message", "facts_file")
FACT_COLUMNS = ("run_pk", "host", "collected_at", "data")
FINDING_COLUMNS = ("run_pk", "identity", "host", "rule", "layer", "severity", "gpu", "gpu_key", "rule_key",
                   "first_seen", "runs_open", "data")
CAUSE_COLUMNS = ("run_pk", "cause_id", "severity", "data")
COUNTER_ROW_COLUMNS = ("run_pk", "host", "gpu_key", "observed_at") + COUNTER_COLUMNS


def counter_rows(run_pk, counters_by_host, facts_by_host, observed_at):
    """Rows of gpu_counters (tuples in COUNTER_ROW_COLUMNS order); counters_by_host:
    store.extract.fleet_counters of the run."""
    rows = []
    for host, gpus in counters_by_host.items():
        collected = (facts_by_host.get(host) or {}).get("collected_at") or observed_at
        for key, (_gpu, counters) in gpus.items():
            values = tuple(counters[column] for column in COUNTER_COLUMNS)
            if values.count(None) < len(values):
                rows.append((run_pk, host, key, collected) + values)
    return rows


HCA_COUNTER_COLUMNS = ("run_pk", "host", "hca", "port", "observed_at", "counters")


def hca_counter_rows(run_pk, facts_by_host, observed_at):
    """Rows of hca_counters (tuples in HCA_COUNTER_COLUMNS order): each HCA port's counters of the run's facts."""
    rows = []
    for host, facts in facts_by_host.items():
        ports = hca_port_counters(facts)
        collected = (facts or {}).get("collected_at") or observed_at
        for (hca, port), counters in sorted(ports.items()):
            rows.append((run_pk, host, hca, port, collected, dumps(counters)))
    return rows


def finding_rows(run_pk, identified, history, started):
    rows = []
    for finding, identity, parts in identified:
        first_seen, runs_open = history[identity]
        rows.append((run_pk, identity, str(finding.get("host")), str(finding.get("rule")), finding.get("layer") or "",
                     finding.get("severity") or "", finding.get("gpu"), parts[2] or None, parts[3],
                     first_seen or started or "", runs_open, dumps(finding)))
    return rows


def write_run(connection, report, facts_by_host, identified, history, keep_facts=True, run_dir=None,
              counters_by_host=None, host_policies=None, extracts=None, status=None):
    """Insert the run; identified: [(finding, identity, identity parts)]; history: {identity: (first_seen, runs_open)}.
    run_dir: the run folder, whose facts files (hosts.<host>.facts_file, relative to it) are stored as they
    are; host_policies: {host: effective policy}, kept in the run record (audit/aggregate.py reads them);
    extracts: {host: the worker's store extract} (store/extract.py), whose compressed facts are stored as they are;
    status: insert_run's. Returns the run's row number."""
    run_pk = insert_run(connection, report, host_policies, run_dir, status)
    started = report["run"].get("started_at")
    insert_rows(connection, HOSTS, HOST_COLUMNS, [
        (run_pk, host, entry["status"], entry.get("message"), entry.get("facts_file"))
        for host, entry in report["hosts"].items()])
    if keep_facts:
        extracts = extracts or {}
        insert_rows(connection, FACTS, FACT_COLUMNS, [
            (run_pk, host, facts.get("collected_at"),
             facts_blob(facts, run_dir, (report["hosts"].get(host) or {}).get("facts_file"), extracts.get(host)))
            for host, facts in facts_by_host.items() if facts is not None])
    insert_rows(connection, FINDINGS, FINDING_COLUMNS, finding_rows(run_pk, identified, history, started))
    insert_rows(connection, CAUSES, CAUSE_COLUMNS, [
        (run_pk, str(cause.get("id")), cause.get("severity"), dumps(cause)) for cause in report.get("causes") or ()])
    if counters_by_host is None:
        counters_by_host = fleet_counters(facts_by_host)
    insert_rows(connection, GPU_COUNTERS, COUNTER_ROW_COLUMNS,
                counter_rows(run_pk, counters_by_host, facts_by_host, started or ""))
    insert_rows(connection, HCA_COUNTERS, HCA_COUNTER_COLUMNS, hca_counter_rows(run_pk, facts_by_host, started or ""))
    return run_pk
