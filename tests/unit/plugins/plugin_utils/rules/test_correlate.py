"""Likely causes across hosts: the driver, one card, or how work is packed onto GPUs."""

from tests.support.rule_builders import healthy_node, xid_event
from tests.support.rule_builders import crowded_l40s_node
from tests.support.correlate_builders import audit, with_xids


def r535_node():
    facts = healthy_node(driver="535.104.05")
    facts["host"]["cuda_toolkits"] = [{"path": "/usr/local/cuda-12.2", "version": "12.2.2"}]
    return facts


def mixed_fleet():
    """Four hosts on 535.104.05, three with Xid 119 on some GPU, and four healthy hosts on 550.90.07."""
    fleet = {"gpu-%02d" % n: r535_node() for n in range(1, 5)}
    fleet.update({"gpu-%02d" % n: healthy_node(driver="550.90.07") for n in range(5, 9)})
    for host, bus in (("gpu-01", "0000:18:00.0"), ("gpu-02", "0000:9a:00.0"), ("gpu-03", "0000:db:00.0")):
        with_xids(fleet[host], 119, bus, 1)
    return fleet


def test_same_xid_on_hosts_sharing_a_driver_points_at_the_driver():
    findings, causes = audit(mixed_fleet())
    assert [cause["id"] for cause in causes] == ["driver:535.104.05"]
    cause = causes[0]
    assert cause["kind"] == "driver" and cause["hosts"] == ["gpu-01", "gpu-02", "gpu-03"]
    assert cause["evidence"]["symptoms"][0]["symptom"] == "Xid 119"
    assert cause["evidence"]["symptoms"][0]["hosts_on_version"] == 4
    assert "3 of 4 hosts" in cause["summary"] and "not the cards" in cause["summary"]
    explained = [f for host in ("gpu-01", "gpu-02", "gpu-03") for f in findings[host] if f["rule"] == "driver.xid"]
    assert len(explained) == 3 and all(f["evidence"]["explained_by"] == "driver:535.104.05" for f in explained)


def test_one_host_with_an_xid_is_no_driver_cause():
    fleet = {"gpu-%02d" % n: healthy_node() for n in range(1, 11)}
    fleet["gpu-04"]["xid_events"] = [xid_event(79, "0000:ab:00.0", "2026-11-29T21:14:07Z")]
    _findings, causes = audit(fleet)
    assert causes == []


def test_symptom_as_common_on_other_versions_is_no_driver_cause():
    fleet = mixed_fleet()
    for host, bus in (("gpu-05", "0000:18:00.0"), ("gpu-06", "0000:2a:00.0")):
        with_xids(fleet[host], 119, bus, 1)
    _findings, causes = audit(fleet)
    assert causes == []


def test_repeated_hardware_xid_on_one_card_points_at_the_card():
    fleet = {"gpu-%02d" % n: healthy_node() for n in range(1, 6)}
    with_xids(fleet["gpu-03"], 48, "0000:3a:00.0", 4, message="An uncorrectable double bit error (DBE) has been detected")
    _findings, causes = audit(fleet)
    assert [cause["kind"] for cause in causes] == ["card"]
    cause = causes[0]
    assert cause["id"] == "card:1654321000002" and cause["hosts"] == ["gpu-03"]
    assert cause["evidence"]["pci_bus_id"] == "0000:3a:00.0" and cause["evidence"]["xids"] == [{"xid": 48, "count": 4}]
    assert cause["severity"] == "critical"


def test_two_events_or_application_xids_do_not_blame_the_card():
    fleet = {"gpu-%02d" % n: healthy_node() for n in range(1, 6)}
    with_xids(fleet["gpu-02"], 48, "0000:3a:00.0", 2)
    with_xids(fleet["gpu-03"], 13, "0000:3a:00.0", 5, message="Graphics SM Warp Exception on (GPC 1, TPC 2, SM 0)")
    _findings, causes = audit(fleet)
    assert not [cause for cause in causes if cause["kind"] == "card"]


def test_driver_cause_keeps_the_cards_out_of_it():
    fleet = {"gpu-%02d" % n: r535_node() for n in range(1, 4)}
    fleet.update({"gpu-%02d" % n: healthy_node(driver="550.90.07") for n in range(4, 8)})
    for host in ("gpu-01", "gpu-02", "gpu-03"):
        with_xids(fleet[host], 48, "0000:3a:00.0", 3, message="An uncorrectable double bit error (DBE)")
    _findings, causes = audit(fleet)
    assert [cause["id"] for cause in causes] == ["driver:535.104.05"]


def test_errors_only_on_hosts_with_many_processes_per_gpu_point_at_the_workload():
    fleet = {"gpu-01": crowded_l40s_node(), "gpu-02": healthy_node(), "gpu-03": healthy_node()}
    with_xids(fleet["gpu-01"], 31, "0000:41:00.0", 1, message="MMU Fault: ENGINE GRAPHICS GPCCLIENT_T1_0 faulted")
    findings, causes = audit(fleet)
    assert [cause["id"] for cause in causes] == ["workload:concurrency"]
    cause = causes[0]
    assert cause["kind"] == "workload" and cause["hosts"] == ["gpu-01"]
    assert cause["evidence"]["processes_per_gpu"] == {"gpu-01": 12}
    assert cause["evidence"]["symptoms"] == ["Xid 31", "memory near full"]
    assert all(f["evidence"].get("explained_by") == "workload:concurrency" for f in findings["gpu-01"]
               if f["rule"] in ("workload.memory_near_full", "workload.xid"))


def test_the_same_errors_on_a_host_with_one_process_per_gpu_are_no_workload_cause():
    fleet = {"gpu-01": crowded_l40s_node(), "gpu-02": healthy_node(), "gpu-03": healthy_node()}
    with_xids(fleet["gpu-01"], 31, "0000:41:00.0", 1, message="MMU Fault")
    with_xids(fleet["gpu-02"], 31, "0000:2a:00.0", 1, message="MMU Fault")
    _findings, causes = audit(fleet)
    assert not [cause for cause in causes if cause["kind"] == "workload"]


def test_unreachable_hosts_are_left_out():
    fleet = mixed_fleet()
    fleet["gpu-09"] = None
    findings, causes = audit(fleet)
    assert findings["gpu-09"] == [] and causes[0]["hosts"] == ["gpu-01", "gpu-02", "gpu-03"]
