"""Drift from a baseline run and trends across runs (rules/drift_trend.py), evaluated by the store."""

import copy
import datetime

import pytest
from sqlalchemy import text

from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.diagnose import rules_run
from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.findings import RULES
from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.drift_trend import DRIFT_RULES, TREND_RULES
from ansible_collections.gpufleet.core.plugins.plugin_utils.policy import validate_policy
from ansible_collections.gpufleet.core.plugins.plugin_utils.store.baseline import set_baseline
from ansible_collections.gpufleet.core.plugins.plugin_utils.store.engine import make_engine
from ansible_collections.gpufleet.core.plugins.plugin_utils.run_folder import facts_file_text
from ansible_collections.gpufleet.core.plugins.plugin_utils.store.extract import host_extract
from ansible_collections.gpufleet.core.plugins.plugin_utils.store.record import StoreSettings
from tests.support.postgres import postgres_cluster, store_url  # noqa: F401 pylint: disable=unused-import
from tests.support.store_runs import BUS, gpu_facts, make_run, record_run

NOW = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
POLICY = validate_policy({})


def at(days_ago):
    return (NOW - datetime.timedelta(days=days_ago)).strftime("%Y-%m-%dT%H:%M:%SZ")


def full_facts(collected_at, serials=("S0", "S1"), **counters):
    gpus = []
    for serial, bus in zip(serials, BUS):
        gpu = gpu_facts(serial, bus, **counters)
        gpu.update(vbios_version="96.00.89.00.01", persistence_mode=True, compute_mode="default",
                   power={"limit_w": 700.0}, mig={"mode_current": False, "gpu_instances": []})
        gpu["ecc"]["mode_current"] = True
        gpus.append(gpu)
    return {"collected_at": collected_at, "nvidia_present": True, "driver": {"version": "550.90.07"}, "gpus": gpus,
            "host": {"services": {"vllm": {"name": "vllm.service", "enabled": True, "restart": "on-failure",
                                           "state": "running"}}},
            "xid_events": []}


def audit(url, run_id, days_ago, facts_by_host, groups=None, policy=POLICY, from_worker=False):
    """from_worker: the counters and compressed facts come from each host's worker extract, as in the audit."""
    report, _facts = make_run(run_id, at(days_ago), {host: [] for host in facts_by_host})
    settings = StoreSettings(url, "test", groups_of_host=groups or {})
    extracts = {host: host_extract(facts_file_text(facts), facts)
                for host, facts in facts_by_host.items()} if from_worker else None
    return record_run(settings, report, copy.deepcopy(facts_by_host), {host: policy for host in facts_by_host},
                      extracts=extracts)


def baseline(url, run_id, group="all"):
    engine = make_engine(url)
    with engine.begin() as connection:
        set_baseline(connection, run_id, group)
    engine.dispose()


def by_rule(report):
    return {(f["rule"], f["gpu"]): f for f in report["findings"]}


def test_every_moved_fact_is_a_finding_in_its_layer_with_before_and_after(store_url):
    audit(store_url, "good", 3, {"node-1": full_facts(at(3))})
    baseline(store_url, "good")
    moved = full_facts(at(2))
    moved["driver"]["version"] = "550.127.05"
    first, second = moved["gpus"]
    first.update(vbios_version="96.00.99.00.01", persistence_mode=False, compute_mode="exclusive_process",
                 power={"limit_w": 500.0})
    first["ecc"]["mode_current"] = False
    second["mig"] = {"mode_current": True, "gpu_instances": [{"profile_name": "3g.40gb"}, {"profile_name": "4g.40gb"}]}
    second["pci_bus_id"] = "00000000:99:00.0"  # the same card (serial S1) in another slot
    moved["host"]["services"]["vllm"]["restart"] = "no"
    report = audit(store_url, "later", 2, {"node-1": moved})
    found = by_rule(report)
    expected = {
        ("driver.baseline_driver", None): ("driver", "550.90.07", "550.127.05"),
        ("hardware.baseline_vbios", BUS[0]): ("hardware", "96.00.89.00.01", "96.00.99.00.01"),
        ("driver.baseline_persistence_mode", BUS[0]): ("driver", True, False),
        ("scheduling.baseline_compute_mode", BUS[0]): ("scheduling", "default", "exclusive_process"),
        ("hardware.baseline_power_limit", BUS[0]): ("hardware", 700.0, 500.0),
        ("hardware.baseline_ecc_mode", BUS[0]): ("hardware", True, False),
        ("scheduling.baseline_mig_layout", "00000000:99:00.0"): (
            "scheduling", {"mode": False, "gpu_instances": []}, {"mode": True, "gpu_instances": ["3g.40gb", "4g.40gb"]}),
        ("workload.baseline_service", None): (
            "workload", {"enabled": True, "restart": "on-failure"}, {"enabled": True, "restart": "no"}),
    }
    assert {key: (f["layer"], f["evidence"]["before"], f["evidence"]["after"]) for key, f in found.items()} == expected
    assert found[("driver.baseline_driver", None)]["evidence"]["baseline_run"] == "good"
    assert "driver.baseline_driver" in report["run"]["rules_run"]
    assert report["summary"]["by_rule"]["hardware.baseline_vbios"] == 1
    assert report["changes"]["counts"]["new"] == len(expected)


def test_gpu_count_and_models(store_url):
    audit(store_url, "good", 3, {"node-1": full_facts(at(3))})
    baseline(store_url, "latest")
    fewer = full_facts(at(2), serials=("S0",))
    fewer["gpus"][0]["name"] = "NVIDIA A100-SXM4-80GB"
    found = by_rule(audit(store_url, "later", 2, {"node-1": fewer}))
    assert found[("hardware.baseline_gpu_count", None)]["evidence"]["before"] == 2
    assert found[("hardware.baseline_gpu_count", None)]["evidence"]["after"] == 1
    assert found[("hardware.baseline_gpu_models", None)]["evidence"]["after"] == ["NVIDIA A100-SXM4-80GB"]


def test_group_baseline_wins_over_the_fleets_and_drift_persists(store_url):
    audit(store_url, "fleet-good", 4, {"node-1": full_facts(at(4))})
    newer = full_facts(at(3))
    newer["driver"]["version"] = "550.127.05"
    audit(store_url, "h100-good", 3, {"node-1": newer})
    baseline(store_url, "fleet-good")
    baseline(store_url, "h100-good", "h100")
    same = audit(store_url, "in-group", 2, {"node-1": copy.deepcopy(newer)}, groups={"node-1": ["all", "h100"]})
    assert "driver.baseline_driver" not in same["summary"]["by_rule"]
    drifted = audit(store_url, "no-group", 1, {"node-1": copy.deepcopy(newer)})
    finding = by_rule(drifted)[("driver.baseline_driver", None)]
    assert finding["evidence"]["baseline_group"] == "all" and finding["runs_open"] == 1
    again = audit(store_url, "no-group-2", 0.5, {"node-1": copy.deepcopy(newer)})
    assert by_rule(again)[("driver.baseline_driver", None)]["runs_open"] == 2


def test_no_baseline_no_drift(store_url):
    audit(store_url, "r1", 3, {"node-1": full_facts(at(3))})
    moved = full_facts(at(2))
    moved["driver"]["version"] = "550.127.05"
    assert not [f for f in audit(store_url, "r2", 2, {"node-1": moved})["findings"] if "baseline" in f["rule"]]


@pytest.mark.parametrize("counter,before,after,rule", [
    ("ecc", 0, 5000, "hardware.ecc_corrected_growth"),
    ("retired", 1, 4, "hardware.retired_pages_growth"),
    ("remapped", 0, 2, "hardware.remapped_rows_growth"),
    ("replays", 10, 500, "hardware.pcie_replay_growth"),
    ("nvlink", 0, 40, "hardware.nvlink_error_growth"),
])
@pytest.mark.parametrize("from_worker", [False, True])
def test_counter_growing_fast_is_a_finding(store_url, counter, before, after, rule, from_worker):
    audit(store_url, "r1", 2, {"node-1": full_facts(at(2), **{counter: before})}, from_worker=from_worker)
    report = audit(store_url, "r2", 1, {"node-1": full_facts(at(1), **{counter: after})}, from_worker=from_worker)
    growing = [f for f in report["findings"] if f["rule"] == rule]
    assert len(growing) == 2 and growing[0]["evidence"]["before"] == before
    assert [f["gpu"] for f in growing] == list(BUS[:2]) and growing[0]["summary"].startswith("GPU")
    assert growing[0]["evidence"]["after"] == after and growing[0]["evidence"]["per_day"] == pytest.approx(after - before)
    assert RULES[rule].layer == "hardware"


def test_slow_growth_and_turned_off_rates_are_not_findings(store_url):
    audit(store_url, "r1", 10, {"node-1": full_facts(at(10), ecc=0)})
    report = audit(store_url, "r2", 0, {"node-1": full_facts(at(0), ecc=5000)})  # 500 a day, under 1000
    assert "hardware.ecc_corrected_growth" not in report["summary"]["by_rule"]
    off = validate_policy({"trends": {"retired_pages_per_day": None}})
    audit(store_url, "r3", 0, {"node-1": full_facts(at(0), retired=0)}, policy=off)
    later = full_facts(at(-1), retired=50)
    report = audit(store_url, "r4", -1, {"node-1": later}, policy=off)
    assert "hardware.retired_pages_growth" not in report["summary"]["by_rule"]


@pytest.mark.parametrize("from_worker", [False, True])
def test_xid_rate_counts_events_since_the_previous_run(store_url, from_worker):
    audit(store_url, "r1", 2, {"node-1": full_facts(at(2))}, from_worker=from_worker)
    facts = full_facts(at(1))
    facts["xid_events"] = [{"xid": 79, "pci_bus_id": BUS[0], "time": at(1.5)} for _event in range(3)] + [
        {"xid": 13, "pci_bus_id": BUS[0], "time": at(3)}]  # older than r1: not counted
    report = audit(store_url, "r2", 1, {"node-1": facts}, from_worker=from_worker)
    (finding,) = [f for f in report["findings"] if f["rule"] == "hardware.xid_rate"]
    assert finding["gpu"] == BUS[0] and finding["evidence"]["after"] == 3 and finding["evidence"]["xids"] == [79]


def test_counters_are_kept_per_gpu_serial(store_url):
    audit(store_url, "r1", 2, {"node-1": full_facts(at(2), ecc=7)})
    engine = make_engine(store_url)
    with engine.connect() as connection:
        rows = connection.execute(text("SELECT gpu_key, ecc_corrected FROM gpu_counters ORDER BY gpu_key")).all()
    engine.dispose()
    assert [tuple(row) for row in rows] == [("serial:S0", 7), ("serial:S1", 7)]


def test_a_run_lists_a_history_rule_only_where_its_record_step_evaluated_it(store_url):
    history_ids = {info.id for info in DRIFT_RULES + TREND_RULES}
    assert history_ids and not history_ids & set(rules_run([POLICY]))  # whatever was imported before
    first = audit(store_url, "first", 3, {"node-1": full_facts(at(3))})
    assert not history_ids & set(first["run"].get("rules_run") or ())
    later = audit(store_url, "later", 2, {"node-1": full_facts(at(2))})  # trends against the first run
    assert {info.id for info in TREND_RULES} <= set(later["run"]["rules_run"])
    assert not {info.id for info in DRIFT_RULES} & set(later["run"]["rules_run"])  # no baseline set
