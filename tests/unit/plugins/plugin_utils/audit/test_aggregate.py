"""The aggregate step's own logic: which slice runs it takes, its status, the policies it reads back, the
findings it keeps (tests/integration/test_awx_slicing.py runs it on the demo fleet against PostgreSQL)."""

from collections import namedtuple

from ansible_collections.gpufleet.core.plugins.plugin_utils.audit import aggregate
from ansible_collections.gpufleet.core.plugins.plugin_utils.store.write import POLICIES_KEY, policies_record

Row = namedtuple("Row", "id run_id status")


def slice_record(number, count=3, group="g"):
    return {"orchestration": {"run_group": group, "slice": {"number": number, "count": count}}}


def union_of(slices, statuses=None):
    union = aggregate.Union()
    union.slices = slices
    union.statuses = statuses or {"h1": {"status": "ok"}}
    return union


def slice_entry(number, status="complete", run=None, without_facts=()):
    return {"run": run or "r%d" % number, "status": status, "number": number, "count": 3, "hosts": 1,
            "hosts_without_facts": list(without_facts)}


def test_newest_run_of_each_slice_number_is_taken():
    runs = [(Row(1, "a", "partial"), slice_record(1)), (Row(2, "b", "partial"), slice_record(2)),
            (Row(3, "c", "partial"), slice_record(1)), (Row(4, "d", "complete"), {"orchestration": {"run_group": "g"}})]
    chosen = aggregate.newest_per_slice(runs)
    assert {key: row.run_id for key, (row, _record) in chosen.items()} == {"slice 1": "c", "slice 2": "b", "run d": "d"}
    assert aggregate.slice_count(runs) == 3


def test_status_complete_partial_and_failed():
    assert aggregate.aggregate_status(union_of([slice_entry(n) for n in (1, 2, 3)]), 3)[0] == "complete"
    status, reason = aggregate.aggregate_status(union_of([slice_entry(2)]), 3)
    assert (status, reason) == ("partial", "slice 1, 3 of 3 missing from the store")
    status, reason = aggregate.aggregate_status(
        union_of([slice_entry(1), slice_entry(2, "failed", "r-two"), slice_entry(3, without_facts=["h9"])]), 3)
    assert status == "partial"
    assert reason == "slice run r-two failed; slice run r3 has no stored facts of 1 host(s) (retention?)"
    status, _reason = aggregate.aggregate_status(union_of([slice_entry(1)], {"h1": {"status": "unreachable"}}), 1)
    assert status == "failed"


def test_a_slice_run_whose_reports_were_not_all_written_makes_the_aggregate_partial():
    status, reason = aggregate.aggregate_status(
        union_of([slice_entry(1), slice_entry(2, "unfinished", "r-killed"), slice_entry(3)]), 3)
    assert (status, reason) == ("partial", "slice run r-killed is unfinished (its reports were not all written)")


def test_stored_policies_round_trip_one_copy_per_distinct_policy():
    first, second = {"driver": {"pin": "550"}}, {"driver": {"pin": None}}
    stored = policies_record({"a": first, "b": dict(first), "c": second})
    assert stored["policies"] == [first, second] and stored["host_policy"] == {"a": 0, "b": 0, "c": 1}
    assert aggregate.stored_policies({POLICIES_KEY: stored}) == {"a": first, "b": first, "c": second}
    assert aggregate.stored_policies({}) == {}


def test_findings_lose_the_store_annotations_and_the_slices_correlation_mark():
    finding = {"rule": "hardware.xid", "host": "h1", "identity": "x", "first_seen": "t", "runs_open": 2,
               "evidence": {"xid": 79, "explained_by": "cause-1"}}
    assert aggregate.clean_finding(finding) == {"rule": "hardware.xid", "host": "h1", "evidence": {"xid": 79}}
    assert finding["evidence"]["explained_by"] == "cause-1"


def test_fleet_rules_are_the_cross_host_ones():
    assert aggregate.fleet_rule_ids() == {"driver.version_skew", "workload.framework_skew",
                                          "scheduling.k8s_sharing_skew"}
