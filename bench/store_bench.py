# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Figure 5 of `make bench`: the run store (bench/README.md, section 8). Run alone with
`bench/run.py --only store [--store-parts overhead queries size] [--store-rounds N]`.

a) overhead: the controller's side of an audit (plugin_utils.audit.run.run_audit, as figure 4 times it) at
   1,000 hosts of 8 GPUs without the store, with a SQLite store and with a PostgreSQL store (a server the
   bench starts like the tests do, tests/support/postgres.py), interleaved, each store already holding one
   run so the comparison and the trends have something to read. Ratio: with / without, per round, in wall
   and in CPU time (this process), and the store's own step (build_and_record less the report's build in it;
   named record_run in the results, as before) in CPU time against the audit without a store.
b) queries at 10,000 hosts: a store of 30 complete runs of 10,000 hosts (4 findings each); the time of
   "what changed since the previous run" (the previous complete run's findings, compared with a run's)
   and of one finding's history over the 30 runs.
c) size: bytes per host and run of a store of 30 daily runs of 100 hosts of 8 GPUs with the default
   retention (facts 30 days, runs 365), and its growth run after run.
"""

import datetime
import gc
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
for entry in (str(REPO), str(REPO / "collections")):
    if entry not in sys.path:
        sys.path.insert(0, entry)

# pylint: disable=wrong-import-position
from diagnose_bench import build_fleet, load_templates, prewrite_facts_files, without_facts  # noqa: E402

from ansible_collections.gpufleet.core.plugins.plugin_utils.audit import record_step, run as audit_run
from ansible_collections.gpufleet.core.plugins.plugin_utils import run_folder  # noqa: E402
from ansible_collections.gpufleet.core.plugins.plugin_utils.audit.host_summary import collection_status  # noqa: E402
from ansible_collections.gpufleet.core.plugins.plugin_utils.store.extract import host_extract  # noqa: E402
from ansible_collections.gpufleet.core.plugins.plugin_utils.reports.model import build_report  # noqa: E402
from ansible_collections.gpufleet.core.plugins.plugin_utils.store import changes as change_set  # noqa: E402
from ansible_collections.gpufleet.core.plugins.plugin_utils.store.engine import make_engine  # noqa: E402
from ansible_collections.gpufleet.core.plugins.plugin_utils.store.identity import identify  # noqa: E402
from ansible_collections.gpufleet.core.plugins.plugin_utils.store.queries import (  # noqa: E402
    finding_history, open_findings, previous_complete_run)
from ansible_collections.gpufleet.core.plugins.plugin_utils.store.record import StoreSettings  # noqa: E402
from ansible_collections.gpufleet.core.plugins.plugin_utils.store.schema import ensure_schema  # noqa: E402
from tests.support.postgres import Cluster, missing_reason  # noqa: E402

OVERHEAD_HOSTS = 1000
QUERY_HOSTS = 10000
QUERY_RUNS = 30
FINDINGS_PER_HOST = 4
SIZE_HOSTS = 100
SIZE_RUNS = 30
QUERY_RULES = ("hardware.xid", "hardware.pcie_link_degraded", "driver.persistence_mode_off", "workload.memory_near_full",
               "hardware.temperature_near_slowdown", "scheduling.mig_layout_drift")


def iso(moment):
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def sqlite_url(folder, name):
    return "sqlite:///%s" % os.path.join(folder, name)


# ---------------------------------------------------------------- a) overhead of the store on an audit

class StoreTimer:
    """CPU seconds of the store's own step in each audit (audit_run.build_and_record, wrapped in place, less the
    report's build in it, record_step.build_report)."""

    def __init__(self):
        self.seconds = []
        self.original = audit_run.build_and_record
        self.original_build = record_step.build_report

    def __enter__(self):
        building = []

        def timed_build(*args, **kwargs):
            used = time.process_time()
            try:
                return self.original_build(*args, **kwargs)
            finally:
                building.append(time.process_time() - used)

        def timed(*args, **kwargs):
            del building[:]
            used = time.process_time()
            try:
                return self.original(*args, **kwargs)
            finally:
                self.seconds.append(time.process_time() - used - sum(building))
        audit_run.build_and_record = timed
        record_step.build_report = timed_build
        return self

    def __exit__(self, *_exc):
        audit_run.build_and_record = self.original
        record_step.build_report = self.original_build


def audit_seconds(results, policies, folder, started_at, store, cpu=None, worker_cpu=None):
    """Wall seconds of one run_audit (and its CPU seconds appended to cpu when given: this process only, so
    a PostgreSQL server's own work is in the wall time, not in the CPU time). As in the audit, the facts files
    and the store's extracts are made first, as the gpu_facts action makes them in each host's worker (untimed
    here; their CPU seconds appended to worker_cpu). Each audit starts after a full garbage collection, so none
    pays for the garbage of the one before."""
    run_dir = tempfile.mkdtemp(prefix="run-", dir=folder)
    results, prewrite_cpu, _wall = prewrite_facts_files(results, run_dir, policies)
    results = without_facts(results)
    if worker_cpu is not None:
        worker_cpu.append(prewrite_cpu)
    gc.collect()
    wall, used = time.perf_counter(), time.process_time()
    report, _paths, _lines = audit_run.run_audit(results, policies, run_dir, folder, started_at, store=store)
    seconds = time.perf_counter() - wall
    if cpu is not None:
        cpu.append(time.process_time() - used)
    shutil.rmtree(run_dir, ignore_errors=True)
    return seconds, report


def extract_cpu(results):
    """CPU seconds of the store's extracts of every host (the worker's share of the store), best of 3: the facts
    file's text is made for the file either way."""
    texts = [(run_folder.facts_file_text(result["ansible_facts"]["gpufleet"]), result["ansible_facts"]["gpufleet"])
             for result in results.values() if collection_status(result) == "ok"]
    best = None
    for _round in range(3):
        used = time.process_time()
        for text, facts in texts:
            host_extract(text, facts)
        used = time.process_time() - used
        best = used if best is None else min(best, used)
    return best


def overhead(rounds, work, postgres_url):
    """Each store first gets one run (the day before), then every round audits without a store and into
    each store, in turn, one day later each round: a scheduled audit into a store that grows run by run."""
    templates, group_policies = load_templates()
    results, policies = build_fleet(OVERHEAD_HOSTS, templates, group_policies)
    stores = {"sqlite": StoreSettings(sqlite_url(work, "overhead.sqlite"), "bench")}
    if postgres_url:
        stores["postgresql"] = StoreSettings(postgres_url(), "bench")
    start = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(days=rounds + 1)
    for store in stores.values():
        audit_seconds(results, policies, work, iso(start), store)
    times = {"none": []}
    times.update({name: [] for name in stores})
    cpu = {name: [] for name in times}
    status, record, worker = {}, {name: [] for name in stores}, []
    for number in range(rounds):
        started_at = iso(start + datetime.timedelta(days=number + 1))
        for name in ["none"] + list(stores):
            with StoreTimer() as timer:
                seconds, report = audit_seconds(results, policies, work, started_at, stores.get(name), cpu[name],
                                                worker)
            times[name].append(seconds)
            record.get(name, []).extend(timer.seconds)
            status[name] = (report.get("store") or {}).get("status", "none")
    result = {"hosts": OVERHEAD_HOSTS, "gpus_per_host": 8, "rounds": rounds, "store_status": status,
              "seconds": {name: [round(value, 3) for value in values] for name, values in times.items()},
              "cpu_seconds": {name: [round(value, 3) for value in values] for name, values in cpu.items()},
              "record_run_cpu_seconds": {name: [round(value, 3) for value in values] for name, values in record.items()},
              "worker_ms_per_host": round(1e3 * statistics.median(worker) / OVERHEAD_HOSTS, 3),
              "extract_ms_per_host": round(1e3 * extract_cpu(results) / OVERHEAD_HOSTS, 3)}
    for name in stores:
        ratios = [with_store / without for with_store, without in zip(times[name], times["none"])]
        result["ratio_" + name] = round(statistics.median(ratios), 3)
        ratios = [with_store / without for with_store, without in zip(cpu[name], cpu["none"])]
        result["cpu_ratio_" + name] = round(statistics.median(ratios), 3)
        result["record_run_share_" + name] = round(statistics.median(record[name]) / statistics.median(cpu["none"]), 3)
    return result


# ---------------------------------------------------------------- b) queries at 10,000 hosts

def synthetic_run(number, started_at, hosts):
    """A report of `hosts` hosts with FINDINGS_PER_HOST findings each (one host in 50 has one fewer, so
    runs differ)."""
    findings = {}
    for host_number in range(hosts):
        host = "gpu-node-%05d" % host_number
        count = FINDINGS_PER_HOST if (host_number + number) % 50 else FINDINGS_PER_HOST - 1
        findings[host] = [{"rule": QUERY_RULES[(host_number + k) % len(QUERY_RULES)],
                           "layer": QUERY_RULES[(host_number + k) % len(QUERY_RULES)].split(".")[0],
                           "severity": "warning", "host": host, "gpu": "0000:%02x:00.0" % (0x1b + k),
                           "summary": "finding %d" % k, "evidence": {}, "action": "look", "fix": None}
                          for k in range(count)]
    run = {"id": "run-%02d" % number, "started_at": started_at, "finished_at": started_at, "status": "complete",
           "scope": {"pattern": "all"}, "fail_severity": "critical"}
    hosts_status = {host: {"status": "ok", "facts_file": None, "message": None} for host in findings}
    return build_report(run, hosts_status, findings, [])


def fill_query_store(url):
    """QUERY_RUNS runs of the same fleet; each run drops a different host's last finding. The finding rows
    are encoded once and inserted run after run (what write_run inserts, without encoding 1.2 million
    findings again), so filling takes minutes, not the hour that 30 full audits of 10,000 hosts would."""
    from ansible_collections.gpufleet.core.plugins.plugin_utils.store.tables import FINDINGS
    from ansible_collections.gpufleet.core.plugins.plugin_utils.store.write import dumps, insert_run
    engine = make_engine(url)
    ensure_schema(engine)
    start = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(days=QUERY_RUNS)
    full = synthetic_run(0, iso(start), QUERY_HOSTS)
    identified_all = identify(full["findings"], {})
    encoded = [(finding, identity, parts, {
        "identity": identity, "host": finding["host"], "rule": finding["rule"], "layer": finding["layer"],
        "severity": finding["severity"], "gpu": finding["gpu"], "gpu_key": parts[2], "rule_key": parts[3],
        "data": dumps(finding)}) for finding, identity, parts in identified_all]
    wall = time.perf_counter()
    first_seen = {}
    report = None
    for number in range(QUERY_RUNS):
        started = iso(start + datetime.timedelta(days=number))
        dropped = {"gpu-node-%05d" % host for host in range((50 - number % 50) % 50, QUERY_HOSTS, 50)}
        kept = [entry for entry in encoded if not (entry[0]["host"] in dropped and entry[2][2] == "bus:0000:1e:00.0")]
        history = {}
        for _finding, identity, _parts, _row in kept:
            since, count = first_seen.get(identity, (started, 0))
            history[identity] = (since, count + 1)
        first_seen = history
        report = {"run": dict(full["run"], id="run-%02d" % number, started_at=started), "hosts": {},
                  "findings": [entry[0] for entry in kept], "summary": {}, "causes": [], "report_version": "bench"}
        with engine.begin() as connection:
            run_pk = insert_run(connection, report)
            connection.execute(FINDINGS.insert(), [
                dict(row, run_pk=run_pk, first_seen=history[identity][0], runs_open=history[identity][1])
                for _finding, identity, _parts, row in kept])
    report["hosts"] = full["hosts"]
    return engine, time.perf_counter() - wall, report


def query_times(url, repeats):
    engine, fill_seconds, last = fill_query_store(url)
    identified = identify(last["findings"], {})
    audited = set(last["hosts"])
    changed, history = [], []
    try:
        for _round in range(repeats):
            wall = time.perf_counter()
            with engine.connect() as connection:
                newest = previous_complete_run(connection, "all")  # the last run itself: compare with the one before
                previous_run = previous_complete_run(connection, "all", before_pk=newest.id)
                previous = open_findings(connection, previous_run.id)
                _history, changes = change_set.compare(identified, previous, last["run"]["started_at"], audited,
                                                       previous_run.run_id)
            changed.append(time.perf_counter() - wall)
            wall = time.perf_counter()
            with engine.connect() as connection:
                rows = finding_history(connection, identified[0][1])  # a finding every run had
            history.append(time.perf_counter() - wall)
    finally:
        engine.dispose()
    return {"fill_seconds": round(fill_seconds, 1), "changes_seconds": round(statistics.median(changed), 3),
            "history_seconds": round(statistics.median(history), 4), "history_runs": len(rows),
            "findings_per_run": len(last["findings"]), "changes_counts": changes["counts"]}


# ---------------------------------------------------------------- c) size and growth

def sqlite_bytes(path):
    return sum(os.path.getsize(path + suffix) for suffix in ("", "-wal") if os.path.exists(path + suffix))


def size_growth(work):
    templates, group_policies = load_templates()
    results, policies = build_fleet(SIZE_HOSTS, templates, group_policies)
    path = os.path.join(work, "size.sqlite")
    store = StoreSettings("sqlite:///" + path, "bench")
    start = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(days=SIZE_RUNS)
    sizes = []
    for number in range(SIZE_RUNS):
        audit_seconds(results, policies, work, iso(start + datetime.timedelta(days=number)), store)
        engine = make_engine(store.url)
        with engine.connect() as connection:
            connection.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
        engine.dispose()
        sizes.append(sqlite_bytes(path))
    growth = [later - earlier for earlier, later in zip(sizes, sizes[1:])]
    return {"hosts": SIZE_HOSTS, "runs": SIZE_RUNS, "bytes_after_runs": sizes,
            "bytes_per_host_and_run": round(statistics.median(growth) / SIZE_HOSTS),
            "bytes_after_30_runs": sizes[-1]}


def store_bench(rounds=2, query_repeats=5, work_root=None, parts=("overhead", "queries", "size")):
    """Each part prints its lines as soon as it is measured (print_store prints the whole again)."""
    work = tempfile.mkdtemp(prefix="gpufleet-bench-store-", dir=work_root)
    cluster = None
    result = {}
    try:
        reason = missing_reason()
        if reason is None:
            cluster = Cluster().start()
        result["postgresql"] = "started" if cluster else "skipped: %s" % reason
        if "overhead" in parts:
            result["overhead"] = overhead(rounds, work, cluster.new_database if cluster else None)
            print_overhead(result, flush=True)
        if "queries" in parts:
            result["queries"] = {"sqlite": query_times(sqlite_url(work, "queries.sqlite"), query_repeats)}
            if cluster:
                result["queries"]["postgresql"] = query_times(cluster.new_database(), query_repeats)
            print_queries(result, flush=True)
        if "size" in parts:
            result["size"] = size_growth(work)
            print_size(result, flush=True)
    finally:
        if cluster:
            cluster.stop()
        shutil.rmtree(work, ignore_errors=True)
    return result


def print_overhead(result, flush=False):
    over = result["overhead"]
    print("   store overhead, %s hosts of 8 GPUs (PostgreSQL %s):" % (over["hosts"], result["postgresql"]), flush=flush)
    for name, values in over["seconds"].items():
        print("   audit, store %-10s %s s wall, %s s CPU" % (name, " ".join("%.2f" % value for value in values), " ".join(
            "%.2f" % value for value in over.get("cpu_seconds", {}).get(name, ()))), flush=flush)
    for name, values in over.get("record_run_cpu_seconds", {}).items():
        print("   the store's own step (record_run), %-10s %s s CPU: %.3f of the audit without a store (medians)" % (
            name, " ".join("%.2f" % value for value in values), over["record_run_share_" + name]), flush=flush)
    if "worker_ms_per_host" in over:
        print("   in each host's worker (the gpu_facts action, untimed above): facts file and store extract %.3f ms CPU a "
              "host, of which the store's extract %.3f ms" % (over["worker_ms_per_host"], over["extract_ms_per_host"]),
              flush=flush)
    for name in ("sqlite", "postgresql"):
        if "ratio_" + name in over:
            print("   with %-10s / without: %.3f wall, %s CPU (median of paired rounds; CPU: this process only)" % (
                name, over["ratio_" + name], over.get("cpu_ratio_" + name)), flush=flush)


def print_queries(result, flush=False):
    for name, query in result["queries"].items():
        print("   %s, %d runs of %d hosts (%d findings a run; filled in %.0f s): changes %.3f s, history of one "
              "finding over %d runs %.4f s" % (
                  name, QUERY_RUNS, QUERY_HOSTS, query["findings_per_run"], query["fill_seconds"],
                  query["changes_seconds"], query["history_runs"], query["history_seconds"]), flush=flush)


def print_size(result, flush=False):
    size = result["size"]
    print("   size: %d bytes per host and run; %.1f MB after %d daily runs of %d hosts (default retention)"
          % (size["bytes_per_host_and_run"], size["bytes_after_30_runs"] / 1e6, size["runs"], size["hosts"]),
          flush=flush)


def print_store(result):
    print("\n5. The run store")
    if "overhead" in result:
        print_overhead(result)
    if "queries" in result:
        print_queries(result)
    if "size" in result:
        print_size(result)
