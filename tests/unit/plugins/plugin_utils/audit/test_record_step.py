"""The history step (audit/record_step.py): the audit drives the run's store transaction, makes the history
findings in it and builds its report once, with them, before the store compares and writes the run."""

import datetime

from ansible_collections.gpufleet.core.plugins.plugin_utils.audit import record_step
from ansible_collections.gpufleet.core.plugins.plugin_utils.audit.record_step import ReportInputs, build_and_record
from ansible_collections.gpufleet.core.plugins.plugin_utils.policy import validate_policy
from ansible_collections.gpufleet.core.plugins.plugin_utils.reports.model import build_report
from ansible_collections.gpufleet.core.plugins.plugin_utils.store import record as store_record
from ansible_collections.gpufleet.core.plugins.plugin_utils.store.baseline import set_baseline
from ansible_collections.gpufleet.core.plugins.plugin_utils.store.engine import make_engine
from ansible_collections.gpufleet.core.plugins.plugin_utils.store.record import StoreSettings
from tests.support.postgres import postgres_cluster, store_url  # noqa: F401 pylint: disable=unused-import
from tests.support.store_runs import host_facts, xid

NOW = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
T1, T2 = [(NOW - datetime.timedelta(days=days)).strftime("%Y-%m-%dT%H:%M:%SZ") for days in (2, 1)]
POLICY = validate_policy({})
OK = {"status": "ok", "facts_file": "facts/node-1.json", "message": None}


def inputs(run_id, started, fail_severity="critical", findings=None):
    run = {"id": run_id, "started_at": started, "finished_at": started, "tool_version": "test",
           "fail_severity": fail_severity, "policy_errors": [], "status": "complete", "status_reason": "test",
           "scope": {"pattern": "all", "limit": None}, "rules_run": ["hardware.xid"]}
    return ReportInputs(run, {"node-1": dict(OK)}, {"node-1": list(findings or [])}, [])


def facts(started, driver="550.90.07"):
    result = host_facts("node-1", started)
    result["driver"]["version"] = driver
    return {"node-1": result}


def counting_builds(monkeypatch):
    built = []

    def build(*args):
        built.append(args)
        return build_report(*args)
    monkeypatch.setattr(record_step, "build_report", build)
    return built


def audit_after_a_baseline(url, monkeypatch, fail_severity="critical"):
    """The report of a run whose driver moved from its baseline run's, and how many times it was built."""
    build_and_record(StoreSettings(url, "test"), inputs("r1", T1), facts(T1), {"node-1": POLICY})
    engine = make_engine(url)
    with engine.begin() as connection:
        set_baseline(connection, "r1")
    engine.dispose()
    built = counting_builds(monkeypatch)
    report = build_and_record(StoreSettings(url, "test"), inputs("r2", T2, fail_severity, [xid("node-1")]),
                              facts(T2, driver="550.127.05"), {"node-1": POLICY})
    return report, built


def test_the_report_is_built_once_with_the_history_findings_in_it(store_url, monkeypatch):  # noqa: F811
    report, built = audit_after_a_baseline(store_url, monkeypatch)
    assert len(built) == 1
    assert sorted(f["rule"] for f in report["findings"]) == ["driver.baseline_driver", "hardware.xid"]
    assert [f["rule"] for f in report["hosts"]["node-1"]["findings"]] == ["hardware.xid", "driver.baseline_driver"]
    assert report["summary"]["by_rule"] == {"driver.baseline_driver": 1, "hardware.xid": 1}
    assert "driver.baseline_driver" in report["run"]["rules_run"] and "hardware.xid" in report["run"]["rules_run"]
    assert report["baselines"][0]["run"] == "r1"
    # the history finding is compared and written with the others, in the same transaction
    assert report["store"]["status"] == "written" and report["changes"]["against"] == "r1"
    assert {entry["rule"] for entry in report["changes"]["new"]} == {"driver.baseline_driver", "hardware.xid"}


def test_fail_severity_none_judges_nothing_with_history_findings(store_url, monkeypatch):  # noqa: F811
    report, built = audit_after_a_baseline(store_url, monkeypatch, fail_severity="none")
    assert len(built) == 1 and report["summary"]["by_severity"]["critical"] == 1
    assert (report["run"]["fail_severity"], report["summary"]["fail_severity"]) == ("none", "critical")
    assert report["summary"]["failed_threshold"] is False


def test_a_store_that_fails_to_write_keeps_the_history_findings_and_says_why(store_url, monkeypatch):  # noqa: F811
    def broken(*_args, **_kwargs):
        raise OSError("disk full")
    build_and_record(StoreSettings(store_url, "test"), inputs("r1", T1), facts(T1), {"node-1": POLICY})
    engine = make_engine(store_url)
    with engine.begin() as connection:
        set_baseline(connection, "r1")
    engine.dispose()
    monkeypatch.setattr(store_record, "write_run", broken)
    report = build_and_record(StoreSettings(store_url, "test"), inputs("r2", T2), facts(T2, driver="550.127.05"),
                              {"node-1": POLICY})
    assert report["store"]["status"] == "failed" and report["store"]["error"] == "OSError: disk full"
    assert report["changes"]["status"] == "unavailable"
    assert [f["rule"] for f in report["findings"]] == ["driver.baseline_driver"]
    assert "identity" not in report["findings"][0]  # nothing of the rolled-back comparison


def test_without_a_store_the_report_has_no_store_sections_and_an_off_store_says_so(monkeypatch):
    built = counting_builds(monkeypatch)
    plain = build_and_record(None, inputs("r1", T1), facts(T1), {"node-1": POLICY})
    off = build_and_record(StoreSettings(None, "off"), inputs("r1", T1), facts(T1), {"node-1": POLICY})
    assert len(built) == 2 and "store" not in plain and "changes" not in plain
    assert off["store"]["status"] == "off" and off["changes"]["reason"] == "the store is off"


def test_the_aggregate_records_without_the_history_rules(store_url, monkeypatch):  # noqa: F811
    audit_after_a_baseline(store_url, monkeypatch)
    report = build_and_record(StoreSettings(store_url, "test"), inputs("r3", T2), facts(T2, driver="550.127.05"),
                              {"node-1": POLICY}, history=False)
    assert report["findings"] == [] and "baselines" not in report and report["store"]["status"] == "written"


def validated_facts(started, h2d):
    """node-1 after a validation whose GPU 1 (bus id BUS[1]) copied h2d GB/s host to device."""
    result = facts(started)
    result["node-1"]["validation"] = {"checks": {"nvbandwidth": {"status": "passed", "testcases": [
        {"name": "host_to_device_memcpy_ce", "per_gpu": {"0": 53.0, "1": h2d}}]}}}
    for index, gpu in enumerate(result["node-1"]["gpus"]):
        gpu["index"] = index
    return result


def test_a_bandwidth_that_sinks_validation_after_validation_is_found_from_the_stored_facts(store_url):  # noqa: F811
    settings = StoreSettings(store_url, "test")
    days = [(NOW - datetime.timedelta(days=days)).strftime("%Y-%m-%dT%H:%M:%SZ") for days in (3, 2, 1)]
    for number, (started, h2d) in enumerate(zip(days[:2], (53.0, 49.0)), 1):
        report = build_and_record(settings, inputs("r%d" % number, started), validated_facts(started, h2d),
                                  {"node-1": POLICY})
        assert not [f for f in report["findings"] if f["rule"] == "hardware.validation_bandwidth_sinking"]
    report = build_and_record(settings, inputs("r3", days[2]), validated_facts(days[2], 44.0), {"node-1": POLICY})
    [sinking] = [f for f in report["findings"] if f["rule"] == "hardware.validation_bandwidth_sinking"]
    assert sinking["evidence"]["series_gbs"] == [53.0, 49.0, 44.0] and sinking["evidence"]["runs"] == ["r1", "r2"]
    assert "hardware.validation_bandwidth_sinking" in report["run"]["rules_run"]
