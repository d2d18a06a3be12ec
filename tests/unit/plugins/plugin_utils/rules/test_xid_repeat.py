"""hardware.xid_app_repeat: application Xids (13, 31, 43) repeating on one GPU under different workloads, or at one
SM under different processes, point at the card; the correlation's card step takes them up."""

import pytest

from ansible_collections.gpufleet.core.plugins.module_utils.kernel_log import parse_kernel_log
from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.correlate import card_causes, correlate
from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.xid_repeat import ATTRIBUTE_SECONDS, RULE_ID
from tests.support.kernel_log_builders import NOW, utc_zone  # noqa: F401  pylint: disable=unused-import
from tests.support.rule_builders import findings_of, healthy_node

RULE = "hardware.xid_app_repeat"
GPU_BUS = "0000:3a:00.0"  # GPU 2 of healthy_node
REAL_LOG = "dmesg-decode-iso_xid13-43-and-oom-kill-variants_gpud.log"
REAL_NOW = "2025-01-21T06:00:00Z"


def node_with_xids(xids):
    facts = healthy_node()
    facts["xid_events"] = xids
    return facts


def real_block(corpus):
    """The real block's Xid 13 x16 and Xid 43 (pt_main_thread) on 0000:38:00, moved onto GPU 2 of the node."""
    xids = parse_kernel_log(corpus.read_realdata(REAL_LOG), now=NOW)[0]
    for event in xids:
        event["pci_bus_id"] = GPU_BUS
    return xids


def again_under(xids, pid, name, hour):
    """The same faults an hour later under another process (our own lines in the real ones' format)."""
    copies = []
    for event in xids:
        copy = dict(event, time=event["time"].replace("T04:", "T%02d:" % hour))
        if copy["pid"] is not None:
            copy.update(pid=pid, process_name=name)
        copies.append(copy)
    return copies


def repeats(facts, now=REAL_NOW):
    assert RULE_ID == RULE
    return findings_of(facts, RULE, now=now)


@pytest.mark.corpus
def test_the_real_block_of_one_process_is_no_repeat(corpus):
    xids = real_block(corpus)
    assert [e["xid"] for e in xids].count(13) == 16
    assert repeats(node_with_xids(xids)) == []


@pytest.mark.corpus
def test_the_same_faults_under_another_workload_point_at_the_card(corpus):
    first = real_block(corpus)
    found = repeats(node_with_xids(first + again_under(first, 3100001, "vllm", 5)))
    assert len(found) == 1
    finding = found[0]
    evidence = finding["evidence"]
    assert (finding["layer"], finding["severity"], finding["gpu"]) == ("hardware", "warning", GPU_BUS)
    assert evidence["xids"] == [{"xid": 13, "count": 32}, {"xid": 43, "count": 2}]
    assert evidence["workload_names"] == ["pt_main_thread", "vllm"]
    assert [(p["name"], p["pid"], p["events"], p["xids"]) for p in evidence["processes"]] == [
        ("pt_main_thread", 2924364, 17, [13, 43]), ("vllm", 3100001, 17, [13, 43])]
    # the Xid 13 lines name no process: each takes the one of the Xid 43 that follows within ATTRIBUTE_SECONDS
    assert evidence["events_attributed"] == 32 and evidence["events_without_process"] == 0
    assert {"gpc": 9, "tpc": 1, "sm": 1, "processes": ["pt_main_thread (pid 2924364)", "vllm (pid 3100001)"]} \
        in evidence["same_sm_across_processes"]
    assert (evidence["first_time"], evidence["last_time"]) == ("2025-01-21T04:41:44.283302Z",
                                                               "2025-01-21T05:41:44.287197Z")
    assert evidence["gpu_serial"] == "1654321000002"
    assert "Application Xids 13 x32, 43 x2 on GPU 2 (0000:3a:00.0" in finding["summary"]
    assert "from 2 processes (pt_main_thread, vllm), 2 of them at the same SM (GPC " in finding["summary"]


def own_xid_31(pid, time, location="GPC 2, TPC 2, SM 1", name="python3"):
    return {"xid": 31, "pci_bus_id": GPU_BUS, "time": time, "pid": pid, "process_name": name,
            "message": "Graphics SM Warp Exception on (%s): Out Of Range Address" % location}


def with_location(event):
    numbers = [int(part.split()[1]) for part in event["message"].split("(")[1].split(")")[0].split(", ")]
    return dict(event, gpc=numbers[0], tpc=numbers[1], sm=numbers[2])


def test_one_sm_faulting_under_two_processes_of_one_name_points_at_the_card():
    xids = [with_location(own_xid_31(pid, "2026-11-30T0%d:00:00Z" % hour))
            for pid, hour in ((4100, 1), (4100, 2), (5200, 3))]
    found = repeats(node_with_xids(xids), now=None)
    assert len(found) == 1
    assert found[0]["evidence"]["same_sm_across_processes"] == [
        {"gpc": 2, "tpc": 2, "sm": 1, "processes": ["python3 (pid 4100)", "python3 (pid 5200)"]}]


def test_one_program_faulting_at_different_sms_is_its_own_bug():
    xids = [with_location(own_xid_31(pid, "2026-11-30T0%d:00:00Z" % hour, location))
            for pid, hour, location in ((4100, 1, "GPC 0, TPC 1, SM 0"), (5200, 2, "GPC 3, TPC 0, SM 1"),
                                        (6300, 3, "GPC 5, TPC 2, SM 0"))]
    assert repeats(node_with_xids(xids), now=None) == []


def test_two_workloads_with_one_fault_each_are_not_yet_a_repeat():
    xids = [own_xid_31(4100, "2026-11-30T01:00:00Z", name="train"),
            own_xid_31(5200, "2026-11-30T02:00:00Z", name="infer")]
    assert repeats(node_with_xids(xids), now=None) == []
    third = own_xid_31(5200, "2026-11-30T03:00:00Z", name="infer")
    assert len(repeats(node_with_xids(xids + [third]), now=None)) == 1


def test_a_process_logged_later_than_the_attribution_window_is_not_borrowed():
    unknown = dict(own_xid_31(None, "2026-11-30T01:00:00Z"), process_name=None)
    named = [own_xid_31(4100, "2026-11-30T01:00:%02dZ" % (ATTRIBUTE_SECONDS + 1), name="train"),
             own_xid_31(5200, "2026-11-30T02:00:00Z", name="infer")]
    found = repeats(node_with_xids([unknown] + named), now=None)
    assert found[0]["evidence"]["events_without_process"] == 1
    assert found[0]["evidence"]["events_attributed"] == 0


def test_the_card_step_of_the_correlation_takes_up_the_repeat():
    xids = [own_xid_31(4100, "2026-11-30T01:00:00Z", name="train"),
            own_xid_31(5200, "2026-11-30T02:00:00Z", name="infer"),
            own_xid_31(5200, "2026-11-30T03:00:00Z", name="infer")]
    facts = node_with_xids(xids)
    findings = findings_of(facts)
    causes = correlate({"gpu-node": facts}, {"gpu-node": findings})
    cards = [cause for cause in causes if cause["kind"] == "card"]
    assert len(cards) == 1
    card = cards[0]
    assert card["id"] == "card:1654321000002" and card["hosts"] == ["gpu-node"]
    assert card["evidence"]["xids"] == [{"xid": 31, "count": 3}]
    assert "Xid 31 x3 from 2 processes" in card["summary"]
    explained = {finding["rule"] for finding in findings if finding["evidence"].get("explained_by") == card["id"]}
    assert explained == {RULE, "workload.xid"}


def test_a_repeat_whose_xids_an_earlier_step_explained_goes_with_that_cause():
    repeat = {"rule": RULE, "host": "gpu-node", "gpu": GPU_BUS, "severity": "warning",
              "evidence": {"xids": [{"xid": 13, "count": 4}], "count": 4, "processes": [{}, {}],
                           "gpu_serial": "1654321000002"}}
    thirteen = {"rule": "workload.xid", "host": "gpu-node", "gpu": GPU_BUS, "severity": "warning",
                "evidence": {"xid": 13, "count": 4, "explained_by": "driver:550.54.15"}}
    assert card_causes({"gpu-node": [repeat, thirteen]}) == []
    assert repeat["evidence"]["explained_by"] == "driver:550.54.15"
    del thirteen["evidence"]["explained_by"], repeat["evidence"]["explained_by"]
    (card,) = card_causes({"gpu-node": [repeat, thirteen]})
    assert card["id"] == "card:1654321000002"
    assert thirteen["evidence"]["explained_by"] == repeat["evidence"]["explained_by"] == card["id"]
