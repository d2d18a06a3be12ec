"""hardware.fabric_counter_growth (issue 32): an HCA port's error counters stored per run (hca_counters, revision
0006) and compared with the previous run, on SQLite and PostgreSQL."""

import copy
import datetime

from sqlalchemy import text

from ansible_collections.gpufleet.core.plugins.plugin_utils.audit.fleet_view import fleet_view
from ansible_collections.gpufleet.core.plugins.plugin_utils.policy import validate_policy
from ansible_collections.gpufleet.core.plugins.plugin_utils.store.counters import hca_port_counters
from ansible_collections.gpufleet.core.plugins.plugin_utils.store.engine import make_engine
from ansible_collections.gpufleet.core.plugins.plugin_utils.store.record import StoreSettings
from ansible_collections.gpufleet.core.plugins.plugin_utils.store.schema import ensure_schema
from tests.support.fabric_builders import healthy_fabric
from tests.support.report_inputs import finding
from tests.support.postgres import postgres_cluster, store_url  # noqa: F401 pylint: disable=unused-import
from tests.support.store_runs import host_facts, make_run, record_run

NOW = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
POLICY = validate_policy({})
RULE = "hardware.fabric_counter_growth"


def at(hours_ago):
    return (NOW - datetime.timedelta(hours=hours_ago)).strftime("%Y-%m-%dT%H:%M:%SZ")


def fabric_host(host, collected_at, **port_counters):
    """A host whose HCA mlx5_1 port 1 has the given counters (the others zero)."""
    facts = host_facts(host, collected_at)
    facts["fabric"] = healthy_fabric()
    facts["fabric"]["hcas"][1]["ports"][0]["counters"].update(port_counters)
    return facts


def audit(url, run_id, hours_ago, facts_by_host, policy=POLICY):
    report, _facts = make_run(run_id, at(hours_ago), {host: [] for host in facts_by_host})
    return record_run(StoreSettings(url, "test"), report, copy.deepcopy(facts_by_host),
                      {host: policy for host in facts_by_host})


def growth_findings(report):
    return [finding for finding in report["findings"] if finding["rule"] == RULE]


def test_counters_that_grew_since_the_previous_run_carry_from_to_and_delta(store_url):
    audit(store_url, "first", 2, {"node-1": fabric_host("node-1", at(2), symbol_error=5, link_downed=1,
                                                        port_xmit_wait=10)})
    report = audit(store_url, "second", 1, {"node-1": fabric_host("node-1", at(1), symbol_error=25, link_downed=2,
                                                                  port_xmit_wait=900000)})
    assert RULE in report["run"]["rules_run"]
    [finding] = growth_findings(report)
    assert finding["severity"] == "warning" and finding["layer"] == "hardware" and finding["gpu"] is None
    evidence = finding["evidence"]
    assert (evidence["link"], evidence["hca"], evidence["port"], evidence["since"]) == ("mlx5_1/1", "mlx5_1", 1, at(2))
    # port_xmit_wait grew by 899,990 and is not judged by default: congestion, not a fault by itself
    assert evidence["counters"] == [
        {"counter": "link_downed", "from": 1, "to": 2, "delta": 1, "warning": 1, "critical": 3, "severity": "warning"},
        {"counter": "symbol_error", "from": 5, "to": 25, "delta": 20, "warning": 10, "critical": 1000,
         "severity": "warning"}]
    assert finding["summary"] == ("HCA port mlx5_1/1: link_downed 1 -> 2 (+1), symbol_error 5 -> 25 (+20) since the "
                                  "previous run (%s)" % at(2))


def test_a_link_that_flapped_three_times_is_critical_and_nothing_grown_is_no_finding(store_url):
    audit(store_url, "first", 3, {"node-1": fabric_host("node-1", at(3))})
    same = audit(store_url, "second", 2, {"node-1": fabric_host("node-1", at(2))})
    assert growth_findings(same) == []
    flapped = audit(store_url, "third", 1, {"node-1": fabric_host("node-1", at(1), link_downed=3)})
    [finding] = growth_findings(flapped)
    assert finding["severity"] == "critical"
    assert finding["evidence"]["counters"][0]["delta"] == 3


def test_a_reset_counter_and_a_policy_that_turns_a_counter_off(store_url):
    audit(store_url, "first", 3, {"node-1": fabric_host("node-1", at(3), symbol_error=500, port_rcv_errors=0)})
    reset = audit(store_url, "second", 2, {"node-1": fabric_host("node-1", at(2), symbol_error=3)})
    assert growth_findings(reset) == []  # 500 -> 3: the counters were cleared, not grown
    quiet = validate_policy({"fabric": {"counters": {"port_rcv_errors": {"warning": None, "critical": None}}}})
    off = audit(store_url, "third", 1, {"node-1": fabric_host("node-1", at(1), symbol_error=3, port_rcv_errors=50)},
                policy=quiet)
    assert growth_findings(off) == []


def test_each_port_is_stored_once_per_run_and_read_back_by_host(store_url):
    audit(store_url, "first", 2, {"node-1": fabric_host("node-1", at(2)), "node-2": host_facts("node-2", at(2))})
    engine = make_engine(store_url)
    with engine.connect() as connection:
        rows = connection.execute(text("SELECT host, hca, port, counters FROM hca_counters ORDER BY hca")).fetchall()
        revision = connection.execute(text("SELECT version_num FROM alembic_version")).scalar()
    engine.dispose()
    assert revision == "0006"
    assert [(row[0], row[1], row[2]) for row in rows] == [("node-1", "mlx5_%d" % index, 1) for index in range(4)]
    assert '"link_downed":0' in rows[0][3]


def test_port_counters_of_bad_facts_are_left_out():
    facts = {"fabric": {"hcas": [
        {"name": "mlx5_0", "ports": [{"port": 1, "counters": {
            "symbol_error": 7, "link_downed": True, "port_rcv_errors": "12", "link_error_recovery": 2}}]},
        {"name": None, "ports": [{"port": 1, "counters": {"symbol_error": 1}}]},
        {"name": "mlx5_2", "ports": [{"port": "1", "counters": {"symbol_error": 1}}, {"port": 2, "counters": {}}]},
        "not an HCA"]}}
    assert hca_port_counters(facts) == {("mlx5_0", 1): {"symbol_error": 7, "link_error_recovery": 2}}
    assert hca_port_counters({"fabric": {"hcas": None}}) == {} == hca_port_counters(None)


def test_a_store_at_revision_0003_upgrades_and_trends_from_its_next_run(store_url):
    engine = make_engine(store_url)
    assert ensure_schema(engine, "0003") == "0003"
    engine.dispose()
    audit(store_url, "first", 2, {"node-1": fabric_host("node-1", at(2))})  # upgrades, then writes its ports
    report = audit(store_url, "second", 1, {"node-1": fabric_host("node-1", at(1), link_error_recovery=12)})
    assert report["store"]["revision"] == "0006"
    [finding] = growth_findings(report)
    assert finding["severity"] == "critical" and finding["evidence"]["counters"][0]["delta"] == 12


def test_counters_that_grew_on_the_peer_explain_an_nccl_error_the_correlation_left_open(store_url):
    facts = {"node-1": fabric_host("node-1", at(2)), "node-2": host_facts("node-2", at(2))}
    audit(store_url, "first", 2, facts)
    nccl = finding("hardware.nccl_network", "critical", "node-2",
                   evidence={"service": "train.service", "peer": "node-1", "count": 1})
    report, _facts = make_run("second", at(1), {"node-1": [], "node-2": [nccl]})
    now = {"node-1": fabric_host("node-1", at(1), link_downed=4), "node-2": host_facts("node-2", at(1))}
    record_run(StoreSettings(store_url, "test"), report, copy.deepcopy(now), {host: POLICY for host in now})
    [cause] = report["causes"]
    assert cause["id"] == "fabric:node-2" and cause["hosts"] == ["node-1", "node-2"]
    assert cause["evidence"]["fabric"][0]["rule"] == RULE and cause["evidence"]["fabric"][0]["link"] == "mlx5_1/1"
    assert cause["severity"] == "critical"
    [symptom] = [f for f in report["findings"] if f["rule"] == "hardware.nccl_network"]
    assert symptom["evidence"]["explained_by"] == "fabric:node-2"


def test_the_fleet_view_keeps_the_port_counters_and_leaves_out_the_ethtool_statistics():
    facts = fabric_host("node-1", at(1), symbol_error=9)
    facts["fabric"]["hcas"][0]["ports"][0]["ethtool"] = {"rx_prio%d_bytes" % n: n for n in range(800)}
    facts["fabric"]["hcas"][0]["ports"][0]["hw_counters"] = {"out_of_buffer": 3}
    view = fleet_view(facts)
    assert hca_port_counters(view) == hca_port_counters(facts) and hca_port_counters(view)[("mlx5_1", 1)][
        "symbol_error"] == 9
    assert view["fabric"]["hcas"][0] == {"name": "mlx5_0", "ports": [
        {"port": 1, "counters": facts["fabric"]["hcas"][0]["ports"][0]["counters"]}]}
    assert fleet_view({"fabric": {"hcas": None, "gpudirect": None}})["fabric"] == {"hcas": None, "gpudirect": None}
