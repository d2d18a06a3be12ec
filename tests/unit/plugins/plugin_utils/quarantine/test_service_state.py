"""A node's service state: events recorded in the store (SQLite and a real PostgreSQL server), the state derived
from them, the gpufleet.core.service_state task's result and service.json."""

import json

import pytest
from sqlalchemy import inspect

from ansible_collections.gpufleet.core.plugins.plugin_utils.quarantine import service_state as engine
from ansible_collections.gpufleet.core.plugins.plugin_utils.store.engine import StoreError, make_engine
from ansible_collections.gpufleet.core.plugins.plugin_utils.store.record import StoreSettings
from ansible_collections.gpufleet.core.plugins.plugin_utils.store.schema import ensure_schema
from tests.support.postgres import postgres_cluster, store_url  # noqa: F401 pylint: disable=unused-import

DRAIN = {"host": "node-3", "event": "quarantined", "at": "2026-12-06T23:00:00Z", "scheduler": "slurm",
         "rule": "hardware.gpu_lost", "finding": "GPU 0000:17:00.0 fell off the bus",
         "reason": "gpufleet: hardware.gpu_lost (run q1)"}


def repair(step, result, at, host="node-3"):
    return {"host": host, "event": "repair", "step": step, "result": result, "at": at}


def test_a_quarantined_node_with_a_failed_reset_is_out_since_its_drain(store_url):
    settings = StoreSettings(store_url)
    engine.record_service_events(settings, [DRAIN], run_id="q1")
    breaker = {"host": "node-1", "event": "left_in_service", "reason": "breaker: 1 of 2 nodes out"}
    stored, states = engine.record_service_events(
        settings, [repair("reset", "failed", "2026-12-06T23:05:00+00:00"), breaker], run_id="q2",
        now="2026-12-06T23:06:00Z")
    assert [event["at"] for event in stored] == ["2026-12-06T23:05:00Z", "2026-12-06T23:06:00Z"]
    node = states["node-3"]
    assert (node["state"], node["since"], node["rule"], node["run_id"], node["scheduler"], node["reason"]) == (
        "quarantined", "2026-12-06T23:00:00Z", "hardware.gpu_lost", "q1", "slurm", "gpufleet: hardware.gpu_lost (run q1)")
    assert node["finding"] == "GPU 0000:17:00.0 fell off the bus"
    assert node["repairs"] == [{"step": "reset", "result": "failed", "at": "2026-12-06T23:05:00Z"}]
    assert node["failed_repairs"] == 1
    assert states["node-1"]["state"] == "in_service"
    assert states["node-1"]["last_event"]["reason"] == "breaker: 1 of 2 nodes out"
    assert engine.service_states(settings, ["node-3"]) == {"node-3": node}
    assert engine.service_states(settings, ["node-9"]) == {}


def test_the_state_is_derived_and_only_the_events_are_stored(store_url):
    settings = StoreSettings(store_url)
    engine.record_service_events(settings, [DRAIN, repair("reset", "failed", "2026-12-06T23:05:00Z"),
                                            repair("reboot", "passed", "2026-12-06T23:10:00Z"),
                                            {"host": "node-3", "event": "returned", "at": "2026-12-06T23:20:00Z",
                                             "scheduler": "slurm"}], run_id="q1")
    made = make_engine(store_url)
    with made.connect() as connection:
        assert "service_events" in inspect(connection).get_table_names()
        assert len(engine.read_events(connection)) == 4
    made.dispose()
    node = engine.service_states(settings)["node-3"]
    assert (node["state"], node["since"], node["rule"], node["reason"]) == ("in_service", "2026-12-06T23:20:00Z", None, None)
    assert [(r["step"], r["result"]) for r in node["repairs"]] == [("reset", "failed"), ("reboot", "passed")]
    # the next quarantine starts a new episode: its repairs only
    _stored, states = engine.record_service_events(settings, [dict(DRAIN, at="2026-12-07T01:00:00Z")], run_id="q2")
    assert (states["node-3"]["since"], states["node-3"]["repairs"], states["node-3"]["failed_repairs"]) == (
        "2026-12-07T01:00:00Z", [], 0)


def test_derive_states_keeps_the_first_since_and_an_operators_drain():
    events = engine.normalized_events([
        DRAIN, dict(DRAIN, event="kept_out", at="2026-12-07T00:00:00Z"),
        {"host": "node-5", "event": "operator_out", "at": "2026-12-06T20:00:00Z", "reason": "bad fan, ticket 42"},
        {"host": "node-5", "event": "quarantined", "at": "2026-12-06T23:00:00Z", "rule": "hardware.gpu_lost"},
    ], run_id="q1")
    states = engine.derive_states(events)
    assert states["node-3"]["since"] == "2026-12-06T23:00:00Z"
    assert states["node-3"]["last_event"]["event"] == "kept_out"
    assert (states["node-5"]["state"], states["node-5"]["reason"], states["node-5"]["since"]) == (
        "operator_out", "bad fan, ticket 42", "2026-12-06T20:00:00Z")


def test_bad_events_are_named_and_none_is_recorded(tmp_path):
    settings = StoreSettings("sqlite:///%s" % (tmp_path / "gpufleet.sqlite"))
    with pytest.raises(engine.ServiceEventError) as raised:
        engine.record_service_events(settings, [DRAIN, {"host": "node-4", "event": "repair", "step": "pray"},
                                                {"event": "returned"}, dict(DRAIN, at="yesterday")])
    message = str(raised.value)
    assert "event 2 (host node-4) a repair's step 'pray' is not one of reset, reboot, rma" in message
    assert "event 2 (host node-4) a repair's result None" in message
    assert "event 3 (host ?) has no host" in message
    assert "event 4 (host node-3) at 'yesterday' is not an ISO 8601 time" in message
    assert engine.service_states(settings) == {}


def test_check_mode_records_nothing_and_returns_the_states_it_would_make(tmp_path):
    settings = StoreSettings("sqlite:///%s" % (tmp_path / "gpufleet.sqlite"))
    _stored, states = engine.record_service_events(settings, [DRAIN], run_id="q1", check_mode=True)
    assert states["node-3"]["state"] == "quarantined"
    assert engine.service_states(settings) == {}


def test_a_store_that_is_off_is_an_error_that_says_so():
    with pytest.raises(StoreError) as raised:
        engine.service_states(StoreSettings(None, "off"))
    assert "the run store is off" in str(raised.value)


def test_the_task_writes_service_json_and_reports_a_bad_event_or_store(tmp_path):
    run_folder = tmp_path / "quarantine-1"
    args = {"report_root": str(tmp_path), "store": True, "store_url": None, "run_folder": str(run_folder),
            "run_id": "quarantine-1", "events": [DRAIN]}
    result = engine.service_state_task(args)
    assert result["changed"] is True and result["recorded"] == 1 and "failed" not in result
    written = json.loads((run_folder / "service.json").read_text())
    assert written["run_id"] == "quarantine-1" and written["hosts"]["node-3"]["state"] == "quarantined"
    assert (tmp_path / "gpufleet.sqlite").exists()  # the default store under the report root, as audit_report's

    bad = engine.service_state_task(dict(args, events=[dict(DRAIN, event="vanished")]))
    assert bad["failed"] is True and "event 1 (host node-3) event 'vanished' is not one of" in bad["msg"]
    off = engine.service_state_task(dict(args, store=False))
    assert off["failed"] is True and "the run store is off" in off["msg"]
    (tmp_path / "a-file").write_text("not a folder")
    broken = engine.service_state_task(dict(args, store_url="sqlite:///%s/a-file/gpufleet.sqlite" % tmp_path))
    assert broken["failed"] is True and "service events not recorded: the run store sqlite:///" in broken["msg"]

    checked = engine.service_state_task(dict(args, run_folder=str(tmp_path / "check")), check_mode=True)
    assert checked["recorded"] == 0 and not (tmp_path / "check").exists()


def test_a_store_at_revision_0003_upgrades_with_the_service_events_table(store_url):
    made = make_engine(store_url)
    assert ensure_schema(made, "0003") == "0003"
    with made.connect() as connection:
        assert "service_events" not in inspect(connection).get_table_names()
    made.dispose()
    _stored, states = engine.record_service_events(StoreSettings(store_url), [DRAIN])
    assert states["node-3"]["state"] == "quarantined"
