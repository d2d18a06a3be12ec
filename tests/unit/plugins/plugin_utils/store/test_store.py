"""The run store, on SQLite and on a real PostgreSQL server (tests/support/postgres.py): one transaction
per run, stable finding identities, new / persisting / cleared, migrations, failures that never stop a run."""

import datetime
import json

import pytest
from sqlalchemy import inspect, select, text

from ansible_collections.gpufleet.core.plugins.plugin_utils.store import record as store_record
from ansible_collections.gpufleet.core.plugins.plugin_utils.store.engine import StoreError, make_engine
from ansible_collections.gpufleet.core.plugins.plugin_utils.store.queries import (
    finding_history, list_runs, run_facts, store_counts)
from ansible_collections.gpufleet.core.plugins.plugin_utils.store.schema import ensure_schema, head_revision
from ansible_collections.gpufleet.core.plugins.plugin_utils.store.tables import BASELINES, RUNS
from tests.support.postgres import postgres_cluster, store_url  # noqa: F401 pylint: disable=unused-import
from ansible_collections.gpufleet.core.plugins.plugin_utils.store.record import StoreSettings
from tests.support.store_runs import BUS, gpu_facts, host_facts, host_wide, make_run, pcie, record, record_run, xid


def days_ago(days):
    moment = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(days=days)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


T1, T2, T3, T4 = days_ago(4), days_ago(3), days_ago(2), days_ago(1)


def counts(url):
    engine = make_engine(url)
    try:
        with engine.connect() as connection:
            return store_counts(connection)
    finally:
        engine.dispose()


def test_first_run_has_every_finding_new(store_url):
    report, facts = make_run("r1", T1, {"node-1": [xid("node-1"), pcie("node-1")], "node-2": []})
    record(store_url, report, facts)
    assert report["store"]["status"] == "written" and report["store"]["error"] is None
    assert report["changes"]["status"] == "first_run" and report["changes"]["against"] is None
    assert report["changes"]["counts"] == {"new": 2, "persisting": 0, "cleared": 0}
    assert [(f["first_seen"], f["runs_open"]) for f in report["findings"]] == [(T1, 1), (T1, 1)]
    assert counts(store_url)["findings"] == 2 and counts(store_url)["facts"] == 2


def test_second_run_marks_persisting_new_and_cleared(store_url):
    first, facts = make_run("r1", T1, {"node-1": [xid("node-1"), pcie("node-1")], "node-2": [host_wide("node-2")]})
    record(store_url, first, facts)
    second, facts = make_run("r2", T2, {"node-1": [xid("node-1")], "node-2": [host_wide("node-2", "driver.x")]})
    record(store_url, second, facts)
    changes = second["changes"]
    assert changes["status"] == "compared" and changes["against"] == "r1"
    by_identity = {finding["identity"]: finding for finding in second["findings"]}
    assert [(by_identity[i]["rule"], by_identity[i]["host"], by_identity[i]["first_seen"], by_identity[i]["runs_open"])
            for i in changes["persisting"]] == [("hardware.xid", "node-1", T1, 2)]  # report 1.3: identities
    assert [(c["rule"], c["host"]) for c in changes["new"]] == [("driver.x", "node-2")]
    assert sorted((c["rule"], c["host"]) for c in changes["cleared"]) == [
        ("driver.persistence_mode_off", "node-2"), ("hardware.pcie_link_degraded", "node-1")]
    xid_finding = [f for f in second["findings"] if f["rule"] == "hardware.xid"][0]
    assert (xid_finding["first_seen"], xid_finding["runs_open"]) == (T1, 2)
    assert second["hosts"]["node-1"]["findings"][0]["first_seen"] == T1


def test_a_gpu_is_the_same_gpu_by_serial_in_another_slot(store_url):
    first, _facts = make_run("r1", T1, {"node-1": [xid("node-1", BUS[0])]})
    record(store_url, first, {"node-1": host_facts("node-1", T1, [gpu_facts("SER-A", BUS[0])])})
    second, _facts = make_run("r2", T2, {"node-1": [xid("node-1", BUS[1])]})
    record(store_url, second, {"node-1": host_facts("node-1", T2, [gpu_facts("SER-A", BUS[1])])})
    assert second["changes"]["counts"] == {"new": 0, "persisting": 1, "cleared": 0}
    third, _facts = make_run("r3", T3, {"node-1": [xid("node-1", BUS[1])]})
    record(store_url, third, {"node-1": host_facts("node-1", T3, [gpu_facts("SER-B", BUS[1])])})
    assert third["changes"]["counts"] == {"new": 1, "persisting": 0, "cleared": 1}


def test_partial_run_is_not_the_previous_run_and_clears_only_audited_hosts(store_url):
    record(store_url, *make_run("r1", T1, {"node-1": [xid("node-1")], "node-2": [xid("node-2")]}))
    partial, facts = make_run("r2", T2, {"node-1": []}, status="partial")
    record(store_url, partial, facts)
    assert partial["changes"]["against"] == "r1"
    assert [c["host"] for c in partial["changes"]["cleared"]] == ["node-1"]
    third, facts = make_run("r3", T3, {"node-1": [xid("node-1")]}, unreachable=["node-2"])
    record(store_url, third, facts)
    assert third["changes"]["against"] == "r1"  # the partial run r2 is never the reference
    assert third["changes"]["counts"] == {"new": 0, "persisting": 1, "cleared": 0}


def test_scopes_are_compared_only_with_themselves(store_url):
    record(store_url, *make_run("r1", T1, {"node-1": [xid("node-1")]}, pattern="h100"))
    other, facts = make_run("r2", T2, {"node-1": [xid("node-1")]}, pattern="a100")
    record(store_url, other, facts)
    assert other["changes"]["status"] == "first_run"


def test_history_of_one_finding(store_url):
    for number, started in enumerate((T1, T2, T3), 1):
        record(store_url, *make_run("r%d" % number, started, {"node-1": [xid("node-1")]}))
    report, facts = make_run("r4", T4, {"node-1": [xid("node-1")]})
    record(store_url, report, facts)
    engine = make_engine(store_url)
    with engine.connect() as connection:
        history = finding_history(connection, report["findings"][0]["identity"])
    engine.dispose()
    assert [(row.run_id, row.runs_open, row.first_seen) for row in history] == [
        ("r1", 1, T1), ("r2", 2, T1), ("r3", 3, T1), ("r4", 4, T1)]


def test_unwritable_store_is_reported_and_the_report_is_complete(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    report, facts = make_run("r1", T1, {"node-1": [xid("node-1")]})
    record("sqlite:///%s" % (blocker / "gpufleet.sqlite"), report, facts)
    assert report["store"]["status"] == "failed"
    assert "cannot create the store's folder" in report["store"]["error"]
    assert report["changes"]["status"] == "unavailable" and "could not be used" in report["changes"]["reason"]
    assert "first_seen" not in report["findings"][0] and report["summary"]["by_severity"]["critical"] == 1


def test_server_down_is_reported(postgres_cluster):  # noqa: F811
    url = postgres_cluster.url("postgres").replace(postgres_cluster.folder, "/nonexistent-socket-folder")
    report, facts = make_run("r1", T1, {"node-1": [xid("node-1")]})
    record(url, report, facts)
    assert report["store"]["status"] == "failed" and "OperationalError" in report["store"]["error"]


def test_store_newer_than_the_code_is_refused(store_url):
    record(store_url, *make_run("r1", T1, {"node-1": [xid("node-1")]}))
    engine = make_engine(store_url)
    with engine.begin() as connection:
        connection.execute(text("UPDATE alembic_version SET version_num = '0099'"))
    with pytest.raises(StoreError) as raised:
        ensure_schema(engine)
    engine.dispose()
    message = str(raised.value)
    assert "revision 0099" in message and "newest %s" % head_revision() in message and "0001, 0002, 0003" in message
    report, facts = make_run("r2", T2, {"node-1": [xid("node-1")]})
    record(store_url, report, facts)
    assert report["store"]["status"] == "failed" and "0099" in report["store"]["error"]
    assert [row.run_id for row in list_runs(make_engine(store_url).connect())] == ["r1"]


def test_store_at_the_first_revision_upgrades_with_its_data(store_url):
    engine = make_engine(store_url)
    assert ensure_schema(engine, "0001") == "0001"
    with engine.begin() as connection:
        connection.execute(text(
            "INSERT INTO runs (run_id, scope_key, status, started_at, hosts_total, findings_total, record, summary)"
            " VALUES ('old', 'all', 'complete', :t, 1, 1, '{}', '{}')"), {"t": T1})
        run_pk = connection.execute(select(RUNS.c.id)).scalar()
        old, _facts = make_run("old", T1, {"node-1": [host_wide("node-1")]})
        from ansible_collections.gpufleet.core.plugins.plugin_utils.store.identity import identify
        (finding, identity, _parts), = identify(old["findings"], {})
        connection.execute(text(
            "INSERT INTO findings (run_pk, identity, host, rule, layer, severity, first_seen, runs_open, data)"
            " VALUES (:run, :identity, 'node-1', :rule, 'driver', 'warning', :t, 1, '{}')"),
            {"run": run_pk, "identity": identity, "rule": finding["rule"], "t": T1})
    engine.dispose()
    report, facts = make_run("new", T2, {"node-1": [host_wide("node-1")]})
    record(store_url, report, facts)
    assert report["store"]["status"] == "written" and report["store"]["revision"] == head_revision()
    assert report["changes"]["against"] == "old"
    (persisting,) = report["changes"]["persisting"]
    assert [f["first_seen"] for f in report["findings"] if f["identity"] == persisting] == [T1]
    assert counts(store_url)["gpu_counters"] == 2  # the table revision 0002 adds, written by the new run


def test_store_at_revision_0002_upgrades_to_the_covering_index(store_url):
    engine = make_engine(store_url)
    assert ensure_schema(engine, "0002") == "0002"
    engine.dispose()
    record(store_url, *make_run("r1", T1, {"node-1": [xid("node-1")]}))  # upgrades, then writes
    engine = make_engine(store_url)
    with engine.connect() as connection:
        indexes = {index["name"]: index["column_names"] for index in inspect(connection).get_indexes("findings")}
    engine.dispose()
    assert indexes["ix_findings_open"] == ["run_pk", "identity", "host", "first_seen", "runs_open"]
    assert "ix_findings_run" not in indexes  # the covering index starts with run_pk and replaces it
    report, facts = make_run("r2", T2, {"node-1": [xid("node-1")]})
    record(store_url, report, facts)
    assert report["store"]["revision"] == head_revision() == "0005"
    assert report["changes"]["counts"] == {"new": 0, "persisting": 1, "cleared": 0}


def test_interrupted_run_leaves_no_partial_run(store_url, monkeypatch):
    record(store_url, *make_run("r1", T1, {"node-1": [xid("node-1")]}))

    def interrupted(*_args, **_kwargs):
        raise KeyboardInterrupt()
    monkeypatch.setattr(store_record, "apply_retention", interrupted)
    report, facts = make_run("r2", T2, {"node-1": [xid("node-1"), pcie("node-1")]})
    with pytest.raises(KeyboardInterrupt):
        record(store_url, report, facts)
    assert counts(store_url) == {"runs": 1, "hosts": 1, "facts": 1, "findings": 1, "causes": 0,
                                 "gpu_counters": 2, "baselines": 0}


def test_retention_removes_old_facts_and_runs_but_keeps_baselines(store_url):
    keep = {"facts_days": 0, "runs_days": 0}
    record(store_url, *make_run("ancient", days_ago(400), {"node-1": [xid("node-1")]}), **keep)
    record(store_url, *make_run("kept-baseline", days_ago(399), {"node-1": [xid("node-1")]}), **keep)
    engine = make_engine(store_url)
    with engine.begin() as connection:
        baseline_pk = connection.execute(select(RUNS.c.id).where(RUNS.c.run_id == "kept-baseline")).scalar()
        connection.execute(BASELINES.insert().values(scope_group="all", run_pk=baseline_pk, set_at=T1))
    record(store_url, *make_run("old-facts", days_ago(60), {"node-1": []}), facts_days=0, runs_days=0)
    report, facts = make_run("today", T4, {"node-1": []})
    record(store_url, report, facts, facts_days=30, runs_days=365)
    with engine.connect() as connection:
        assert [row.run_id for row in list_runs(connection)] == ["today", "old-facts", "kept-baseline"]
        assert run_facts(connection, baseline_pk) == {}
        old_facts_pk = connection.execute(select(RUNS.c.id).where(RUNS.c.run_id == "old-facts")).scalar()
        assert run_facts(connection, old_facts_pk) == {}
    engine.dispose()
    assert report["store"]["retention"]["removed"]["runs"] == 1


def test_retention_zero_keeps_everything(store_url):
    record(store_url, *make_run("ancient", days_ago(400), {"node-1": []}), facts_days=0, runs_days=0)
    record(store_url, *make_run("today", T1, {"node-1": []}), facts_days=0, runs_days=0)
    assert counts(store_url)["runs"] == 2 and counts(store_url)["facts"] == 2


def facts_hosts(url, run_id):
    engine = make_engine(url)
    try:
        with engine.connect() as connection:
            pk = connection.execute(select(RUNS.c.id).where(RUNS.c.run_id == run_id)).scalar()
            return None if pk is None else sorted(run_facts(connection, pk))
    finally:
        engine.dispose()


def test_a_limit_run_of_one_group_applies_its_retention_to_that_groups_data_only(store_url):
    from ansible_collections.gpufleet.core.plugins.plugin_utils.policy import validate_policy
    keep = {"facts_days": 0, "runs_days": 0}
    record(store_url, *make_run("a-old", days_ago(60), {"a-1": []}), **keep)
    record(store_url, *make_run("b-old", days_ago(60), {"b-1": []}), **keep)
    record(store_url, *make_run("ab-old", days_ago(60), {"a-1": [], "b-1": []}), **keep)
    record(store_url, *make_run("ab-yesterday", days_ago(1), {"a-1": [], "b-1": []}), **keep)
    # --limit group_a: only a-1 is in the run, with its group's short retention (group_b's policy keeps a year)
    short = validate_policy({"store": {"retention": {"facts_days": 7, "runs_days": 30}}})
    report, facts = make_run("a-today", T4, {"a-1": []}, status="partial")
    record_run(StoreSettings(store_url, "test", 7, 30), report, facts, host_policies={"a-1": short})
    assert facts_hosts(store_url, "a-old") is None  # every host of it is group_a's: the run owns it
    assert facts_hosts(store_url, "b-old") == ["b-1"]  # group_b's: untouched
    assert facts_hosts(store_url, "ab-old") == ["b-1"]  # shared: a-1's facts go, the run and b-1's facts stay
    assert report["store"]["retention"]["removed"] == {"facts": 2, "runs": 1}  # a-1 of a-old and of ab-old
    assert report["store"]["retention"]["skipped"] is None


def test_a_complete_run_owns_its_scopes_earlier_runs_and_no_other_scopes(store_url):
    keep = {"facts_days": 0, "runs_days": 0}
    # a host since removed from the inventory, in an old run of the whole fleet; another pattern's old run
    record(store_url, *make_run("all-old", days_ago(400), {"node-1": [], "retired-9": []}), **keep)
    record(store_url, *make_run("h100-old", days_ago(400), {"other-1": []}, pattern="h100"), **keep)
    record(store_url, *make_run("all-recent", days_ago(60), {"node-1": [], "retired-9": []}), **keep)
    report, facts = make_run("all-today", T4, {"node-1": []})
    record(store_url, report, facts, facts_days=30, runs_days=365)
    assert facts_hosts(store_url, "all-old") is None
    assert facts_hosts(store_url, "h100-old") == ["other-1"]
    assert facts_hosts(store_url, "all-recent") == []
    assert report["store"]["retention"]["removed"] == {"facts": 4, "runs": 1}


def test_a_clock_that_jumped_forward_does_not_purge_the_history(store_url):
    keep = {"facts_days": 0, "runs_days": 0}
    # the controller's clock now reads two years after the newest stored run
    record(store_url, *make_run("before-the-jump", days_ago(731), {"node-1": [xid("node-1")]}), **keep)
    record(store_url, *make_run("last-before-the-jump", days_ago(730), {"node-1": [xid("node-1")]}), **keep)
    report, facts = make_run("after-the-jump", T4, {"node-1": []})
    record(store_url, report, facts, facts_days=30, runs_days=365)
    retention = report["store"]["retention"]
    assert retention["removed"] == {"facts": 0, "runs": 0}
    assert "more than the retention's 365 days before this controller's clock" in retention["skipped"]
    from ansible_collections.gpufleet.core.plugins.plugin_utils.reports.since_previous import store_line
    assert "; retention NOT applied: the newest stored run started at " in store_line(report)
    assert counts(store_url)["runs"] == 3 and counts(store_url)["facts"] == 3


def test_a_stored_run_far_in_the_future_of_the_clock_stops_the_retention(store_url):
    keep = {"facts_days": 0, "runs_days": 0}
    record(store_url, *make_run("ancient", days_ago(400), {"node-1": []}), **keep)
    record(store_url, *make_run("from-the-future", days_ago(-3), {"node-1": []}), **keep)
    report, facts = make_run("now", T4, {"node-1": []})
    record(store_url, report, facts, facts_days=30, runs_days=365)
    assert "after this controller's clock" in report["store"]["retention"]["skipped"]
    assert counts(store_url)["runs"] == 3


def test_two_controllers_starting_in_the_same_second_are_both_stored(store_url):
    first, facts = make_run("20260301T120000Z", T3, {"node-1": [xid("node-1")]})
    record(store_url, first, facts)
    second, facts = make_run("20260301T120000Z", T3, {"node-2": [xid("node-2")]})
    record(store_url, second, facts)
    third, facts = make_run("20260301T120000Z", T3, {"node-3": []})
    record(store_url, third, facts)
    assert [report["store"]["status"] for report in (first, second, third)] == ["written"] * 3
    assert [report["run"]["id"] for report in (first, second, third)] == [
        "20260301T120000Z", "20260301T120000Z-2", "20260301T120000Z-3"]
    engine = make_engine(store_url)
    with engine.connect() as connection:
        stored = {row.run_id: row.hosts_total for row in list_runs(connection)}
        record_ids = [json.loads(value)["id"] for value in connection.execute(select(RUNS.c.record).order_by(RUNS.c.id)
                                                                              ).scalars()]
    engine.dispose()
    assert stored == {"20260301T120000Z": 1, "20260301T120000Z-2": 1, "20260301T120000Z-3": 1}
    assert record_ids == ["20260301T120000Z", "20260301T120000Z-2", "20260301T120000Z-3"]
    assert counts(store_url)["findings"] == 2


def record_one_run(url, number, barrier, results):
    report, facts = make_run("20260301T120000Z", T3, {"node-%d" % number: [xid("node-%d" % number)]})
    barrier.wait()
    record(url, report, facts)
    results.put((report["store"]["status"], report["store"]["error"], report["run"]["id"]))


def test_audits_creating_a_new_sqlite_store_at_once_are_all_stored(tmp_path):
    import multiprocessing
    url = "sqlite:///%s" % (tmp_path / "new" / "gpufleet.sqlite")
    context = multiprocessing.get_context("fork")
    barrier, results = context.Barrier(6), context.Queue()
    workers = [context.Process(target=record_one_run, args=(url, number, barrier, results)) for number in range(6)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(120)
    outcomes = [results.get(timeout=5) for _worker in workers]
    assert [(status, error) for status, error, _id in outcomes] == [("written", None)] * 6
    assert sorted(run_id for _status, _error, run_id in outcomes) == sorted(
        ["20260301T120000Z"] + ["20260301T120000Z-%d" % n for n in range(2, 7)])
    assert counts(url)["runs"] == 6


def test_the_codes_revision_list_is_alembics():
    from ansible_collections.gpufleet.core.plugins.plugin_utils.store.schema import HEAD, REVISIONS, known_revisions
    assert list(REVISIONS) == sorted(known_revisions()) and HEAD == head_revision()
