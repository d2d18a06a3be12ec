"""Fleet correlation weighs hypotheses (driver version, VBIOS version, workload, one card) with their evidence
and names the strongest as the likely cause, keeping every hypothesis in the cause's evidence."""

import json
import os

import jsonschema

from tests.support.correlate_builders import audit, with_xids
from tests.support.rule_builders import healthy_node
from tests.support.schema_check import ROOT

DRIVER_A, DRIVER_B = "550.54.15", "550.90.07"
VBIOS_F, VBIOS_G = "96.00.74.00.1C", "96.00.89.00.01"
BUS = "0000:18:00.0"
FALLEN = "GPU has fallen off the bus."


def node(number, driver, vbios=VBIOS_G, workload="python3"):
    """A healthy H100 node whose cards have serials of their own."""
    facts = healthy_node(driver=driver)
    for gpu in facts["gpus"]:
        gpu["serial"] = "17%02d%09d" % (number, gpu["index"])
        gpu["vbios_version"] = vbios
        for process in gpu["processes"]:
            process["name"] = workload
    return facts


def fleet_of(specs):
    """{name: facts} from [(driver, vbios, workload)], named gpu-01, gpu-02, ..."""
    return {"gpu-%02d" % n: node(n, *spec) for n, spec in enumerate(specs, 1)}


def by_id(hypotheses):
    return {entry["id"]: entry for entry in hypotheses}


def test_xid79_on_three_distinct_cards_of_a_mostly_clean_driver_points_at_the_driver():
    """3 of 12 hosts on driver A (a share under DRIVER_MIN_SHARE), 0 of 10 on driver B, three different cards."""
    fleet = fleet_of([(DRIVER_A,)] * 12 + [(DRIVER_B,)] * 10)
    for host in ("gpu-02", "gpu-07", "gpu-11"):
        with_xids(fleet[host], 79, BUS, 1, message=FALLEN)
    findings, causes = audit(fleet)
    assert [cause["id"] for cause in causes] == ["driver:%s" % DRIVER_A]
    cause = causes[0]
    assert cause["kind"] == "driver" and cause["hosts"] == ["gpu-02", "gpu-07", "gpu-11"]
    assert "Xid 79 on 3 of 12 hosts running driver %s (0 of 10 hosts on other versions" % DRIVER_A in cause["summary"]
    assert cause["evidence"]["symptoms"][0]["distinct_cards"] == 3
    weighed = by_id(cause["evidence"]["hypotheses"])
    driver = weighed["driver:%s" % DRIVER_A]
    assert (driver["hosts_hit"], driver["hosts_in_group"], driver["share"]) == (3, 12, 0.25)
    assert (driver["hosts_hit_elsewhere"], driver["hosts_elsewhere"], driver["supported"]) == (0, 10, True)
    assert driver["score"] == 0.75 and driver["chance"] == 0.143
    assert weighed["card"]["supported"] is False and "3 distinct cards" in weighed["card"]["why"]
    assert weighed["firmware:%s" % VBIOS_G]["supported"] is False
    lost = [f for host in cause["hosts"] for f in findings[host] if f["rule"] == "hardware.gpu_lost"]
    assert len(lost) == 3 and {f["evidence"]["explained_by"] for f in lost} == {"driver:%s" % DRIVER_A}


def test_two_distinct_cards_at_a_low_share_are_not_enough():
    fleet = fleet_of([(DRIVER_A,)] * 12 + [(DRIVER_B,)] * 10)
    for host in ("gpu-02", "gpu-07"):
        with_xids(fleet[host], 79, BUS, 1, message=FALLEN)
    _findings, causes = audit(fleet)
    assert causes == []


def test_distinct_cards_in_a_group_that_is_nearly_the_whole_fleet_are_chance():
    """3 of 40 hosts on driver A and 0 of 2 on driver B: all three would be on A 86% of the time anyway."""
    fleet = fleet_of([(DRIVER_A,)] * 40 + [(DRIVER_B,)] * 2)
    for host in ("gpu-05", "gpu-17", "gpu-33"):
        with_xids(fleet[host], 79, BUS, 1, message=FALLEN)
    _findings, causes = audit(fleet)
    assert causes == []


def test_xid79_five_times_on_one_serial_points_at_the_card():
    fleet = fleet_of([(DRIVER_A,)] * 10 + [(DRIVER_B,)] * 10)
    with_xids(fleet["gpu-04"], 79, BUS, 5, message=FALLEN)
    _findings, causes = audit(fleet)
    assert [cause["id"] for cause in causes] == ["card:1704000000000"]
    cause = causes[0]
    assert cause["kind"] == "card" and cause["evidence"]["xids"] == [{"xid": 79, "count": 5}]
    weighed = by_id(cause["evidence"]["hypotheses"])
    assert weighed["card"]["supported"] is True and weighed["card"]["most_events_on_one_card"] == 5
    assert weighed["driver:%s" % DRIVER_A]["supported"] is False
    assert weighed["driver:%s" % DRIVER_A]["why"].startswith("on 1 host(s)")


def test_the_same_xid_on_hosts_sharing_a_vbios_across_drivers_points_at_the_firmware():
    """VBIOS F on gpu-01, 02, 05, 06; the Xid on 01, 02 (driver A) and 05 (driver B); none on VBIOS G."""
    fleet = fleet_of([(DRIVER_A, VBIOS_F), (DRIVER_A, VBIOS_F), (DRIVER_A, VBIOS_G), (DRIVER_A, VBIOS_G),
                      (DRIVER_B, VBIOS_F), (DRIVER_B, VBIOS_F), (DRIVER_B, VBIOS_G), (DRIVER_B, VBIOS_G)])
    for host in ("gpu-01", "gpu-02", "gpu-05"):
        with_xids(fleet[host], 48, BUS, 1, message="An uncorrectable double bit error (DBE) has been detected")
    findings, causes = audit(fleet)
    assert [cause["id"] for cause in causes] == ["firmware:%s" % VBIOS_F]
    cause = causes[0]
    assert (cause["kind"], cause["layer"], cause["hosts"]) == ("firmware", "hardware", ["gpu-01", "gpu-02", "gpu-05"])
    assert cause["evidence"]["vbios_version"] == VBIOS_F
    assert "VBIOS %s" % VBIOS_F in cause["summary"] and "not the cards" in cause["summary"]
    assert "VBIOS" in cause["action"] and "repair" in cause["action"]
    weighed = by_id(cause["evidence"]["hypotheses"])
    firmware, driver = weighed["firmware:%s" % VBIOS_F], weighed["driver:%s" % DRIVER_A]
    assert (firmware["hosts_hit"], firmware["hosts_in_group"], firmware["hosts_hit_elsewhere"]) == (3, 4, 0)
    assert firmware["score"] > driver["score"]
    assert (driver["hosts_hit"], driver["hosts_in_group"], driver["hosts_hit_elsewhere"]) == (2, 4, 1)
    assert all(f["evidence"].get("explained_by") == cause["id"]
               for host in cause["hosts"] for f in findings[host] if f["rule"] == "hardware.xid")


def test_a_driver_and_a_vbios_that_always_go_together_are_named_together():
    fleet = fleet_of([(DRIVER_A, VBIOS_F)] * 4 + [(DRIVER_B, VBIOS_G)] * 4)
    for host in ("gpu-01", "gpu-02", "gpu-03"):
        with_xids(fleet[host], 119, BUS, 1)
    _findings, causes = audit(fleet)
    assert [cause["id"] for cause in causes] == ["driver:%s" % DRIVER_A]
    assert causes[0]["evidence"]["indistinguishable_from"] == ["firmware:%s" % VBIOS_F]
    assert "firmware:%s goes with it" % VBIOS_F in causes[0]["summary"]
    assert "VBIOS" in causes[0]["action"]


def test_errors_only_where_one_workload_runs_point_at_that_workload():
    """One driver and one VBIOS everywhere; Xid 13 on three of the four hosts running vllm, none on the trainers."""
    fleet = fleet_of([(DRIVER_B, VBIOS_G, "vllm")] * 4 + [(DRIVER_B, VBIOS_G, "trainer")] * 4)
    for host in ("gpu-01", "gpu-02", "gpu-04"):
        with_xids(fleet[host], 13, BUS, 1, message="Graphics SM Warp Exception on (GPC 0, TPC 1, SM 0)")
    _findings, causes = audit(fleet)
    assert [cause["id"] for cause in causes] == ["workload:vllm"]
    cause = causes[0]
    assert (cause["kind"], cause["layer"], cause["evidence"]["workload"]) == ("workload", "workload", "vllm")
    assert "GPUs running vllm (0 of 4 hosts without it show it)" in cause["summary"]
    weighed = by_id(cause["evidence"]["hypotheses"])
    assert weighed["workload:vllm"]["share"] == 0.75
    # one driver on every host: supported only by its old concentration rule, and weaker than the workload
    assert weighed["driver:%s" % DRIVER_B]["hosts_elsewhere"] == 0
    assert weighed["workload:vllm"]["score"] > weighed["driver:%s" % DRIVER_B]["score"]


def test_the_crowded_host_is_still_the_concurrency_cause():
    from tests.support.rule_builders import crowded_l40s_node
    fleet = {"gpu-01": crowded_l40s_node(), "gpu-02": healthy_node(), "gpu-03": healthy_node()}
    with_xids(fleet["gpu-01"], 31, "0000:41:00.0", 1, message="MMU Fault")
    _findings, causes = audit(fleet)
    assert [cause["id"] for cause in causes] == ["workload:concurrency"]


def test_causes_with_hypotheses_are_valid_report_causes():
    with open(os.path.join(ROOT, "docs", "schema", "report.schema.json")) as handle:
        schema = json.load(handle)
    cause_schema = {"$defs": schema["$defs"], "$ref": "#/$defs/cause"}
    fleet = fleet_of([(DRIVER_A, VBIOS_F)] * 4 + [(DRIVER_B, VBIOS_G)] * 4)
    for host in ("gpu-01", "gpu-02", "gpu-03"):
        with_xids(fleet[host], 119, BUS, 1)
    with_xids(fleet["gpu-06"], 48, BUS, 4, message="DBE")
    _findings, causes = audit(fleet)
    assert sorted(cause["kind"] for cause in causes) == ["card", "driver"]
    for cause in causes:
        jsonschema.Draft202012Validator(cause_schema).validate(cause)
        for entry in cause["evidence"]["hypotheses"]:
            jsonschema.Draft202012Validator(
                {"$defs": schema["$defs"], "$ref": "#/$defs/hypothesis"}).validate(entry)
