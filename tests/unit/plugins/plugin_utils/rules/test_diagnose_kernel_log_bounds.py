"""Kernel-log events are bounded: a flood of Xid lines keeps the first and last few per Xid and GPU,
exact counts, and the controller's findings still carry the real count."""

import calendar
import json
import time

import pytest

from ansible_collections.gpufleet.core.plugins.module_utils.facts_model import new_facts
from ansible_collections.gpufleet.core.plugins.module_utils.host_io import ReplayHost
from ansible_collections.gpufleet.core.plugins.module_utils.kernel_log import (
    KEEP_FIRST, KEEP_LAST, MAX_XID_GROUPS, EventBounds, collect_kernel_log, parse_kernel_log)
from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.diagnose import diagnose_host
from tests.support.schema_check import assert_valid_facts
from tests.support.rule_builders import KNOWLEDGE, policy
from tests.support.timings import record_timing

NOW = calendar.timegm((2026, 11, 30, 12, 0, 0, 0, 0, 0))
JOURNALCTL = "journalctl _TRANSPORT=kernel -o short-iso --no-pager --since=-72h"


def stamp(epoch):
    return time.strftime("%Y-%m-%dT%H:%M:%S+0000", time.gmtime(epoch))


def xid_line(epoch, xid=13, bus="0000:3b:00", pid=4242):
    return ("%s gpu-node kernel: NVRM: Xid (PCI:%s): %d, pid=%d, name=python3, Graphics Exception: "
            "ESR 0x405840=0x1000000" % (stamp(epoch), bus, xid, pid))


def utc(epoch):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))


def journal_host(lines):
    return ReplayHost({"now": NOW, "bins": {"journalctl": "/usr/bin/journalctl"},
                       "commands": {JOURNALCTL: {"rc": 0, "stdout": "\n".join(lines) + "\n"}}})


def flood(count, hours, end=NOW):
    """count Xid 13 lines spread evenly over the hours before end, oldest first."""
    span = hours * 3600.0
    return [end - span + span * (i + 1) / count for i in range(count)]


def collected(lines):
    facts = new_facts()
    facts.update(collected_at=stamp(NOW).replace("+0000", "Z"), source="nvml", nvidia_present=True,
                 gather_subset=["kernel_log"])
    assert collect_kernel_log(journal_host(lines), facts, source="journalctl", window_hours=72) == "journalctl"
    assert_valid_facts(facts)
    return facts


def xid_findings(facts, window_hours=72):
    found = diagnose_host("gpu-node", facts, policy(thresholds={"xid_window_hours": window_hours}), KNOWLEDGE)
    return [f for f in found if f["rule"].endswith(".xid")]


@pytest.fixture(scope="module")
def flooded():
    times = flood(100000, 60)
    lines = [xid_line(epoch, pid=1000 + i % 7) for i, epoch in enumerate(times)]
    lines += [xid_line(NOW - 3600 * 5 + i, xid=79, bus="0000:9a:00") for i in range(3)]
    started = time.monotonic()
    facts = collected(lines)
    return facts, times, time.monotonic() - started


def test_100000_xid_lines_become_bounded_facts_with_the_exact_count(flooded):
    facts, times, took = flooded
    record_timing("kernel log of 100000 Xid lines", took)  # recorded, never asserted
    thirteen = [event for event in facts["xid_events"] if event["xid"] == 13]
    assert len(thirteen) == KEEP_FIRST + KEEP_LAST
    assert [event["time"] for event in thirteen] == [utc(epoch) for epoch in times[:5] + times[-5:]]
    assert len([event for event in facts["xid_events"] if event["xid"] == 79]) == 3
    summary = facts["kernel_log"]
    assert (summary["source"], summary["events"], summary["kept"], summary["dropped"], summary["ungrouped"]) == (
        "journalctl", 100003, 13, 100000 - 10, 0)
    group = next(g for g in summary["groups"] if g["xid"] == 13)
    assert (group["count"], group["kept"], group["pci_bus_id"]) == (100000, 10, "0000:3b:00.0")
    assert group["dropped"]["count"] == 99990 and sum(group["dropped"]["by_hour"].values()) == 99990
    assert len(json.dumps(facts)) < 40000
    assert any(error["call"] == "kernel log" and "100003 events" in error["reason"] for error in facts["errors"])


def test_the_finding_counts_every_xid_of_the_flood(flooded):
    facts = flooded[0]
    (finding,) = [f for f in xid_findings(facts) if f["evidence"]["xid"] == 13]
    assert finding["evidence"]["count"] == 100000
    assert "x100000" in finding["summary"]
    lost = [f for f in diagnose_host("gpu-node", facts, policy(), KNOWLEDGE) if f["rule"] == "hardware.gpu_lost"]
    assert [f["evidence"]["count"] for f in lost] == [3]


def test_a_shorter_controller_window_counts_the_dropped_events_of_its_hours(flooded):
    facts, times = flooded[:2]
    in_window = sum(1 for epoch in times if epoch >= NOW - 24 * 3600)
    (finding,) = [f for f in xid_findings(facts, window_hours=24) if f["evidence"]["xid"] == 13]
    assert finding["evidence"]["count"] == in_window
    assert 39000 < in_window < 41000


def test_a_window_that_starts_inside_an_hour_counts_that_hour_whole(flooded):
    facts, times = flooded[:2]
    start = NOW - 24 * 3600 - 1800
    exact = sum(1 for epoch in times if epoch >= start)
    hour_start = NOW - 25 * 3600
    whole_hour = sum(1 for epoch in times if epoch >= hour_start)
    facts = dict(facts, collected_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(NOW - 1800)))
    (finding,) = [f for f in xid_findings(facts, window_hours=24) if f["evidence"]["xid"] == 13]
    # now - 1800 s: the window starts at half past; that hour's dropped events all count
    assert exact < finding["evidence"]["count"] <= whole_hour


def test_a_small_log_is_kept_whole():
    lines = [xid_line(NOW - 100 + i) for i in range(KEEP_FIRST + KEEP_LAST)]
    facts = collected(lines)
    assert len(facts["xid_events"]) == 10 and facts["kernel_log"]["dropped"] == 0
    assert not any(error["call"] == "kernel log" for error in facts["errors"])
    assert xid_findings(facts)[0]["evidence"]["count"] == 10


def test_groups_beyond_the_limit_are_only_counted():
    lines = [xid_line(NOW - 1000 + i, bus="0000:%02x:00" % i) for i in range(100)]
    facts = collected(lines)
    summary = facts["kernel_log"]
    assert len(summary["groups"]) == MAX_XID_GROUPS
    assert summary["ungrouped"] == 100 - MAX_XID_GROUPS and summary["events"] == 100
    assert len(facts["xid_events"]) == MAX_XID_GROUPS


def test_dropped_events_without_a_time_are_counted_as_untimed_and_always_in_the_window():
    bounds = EventBounds()
    for i in range(30):
        bounds.add("xid", {"xid": 31, "pci_bus_id": "0000:3b:00.0", "time": "%d.0" % i, "pid": None,
                           "process_name": None, "gpu_instance_id": None, "compute_instance_id": None,
                           "message": "x"})
    xids, _kernel, summary = bounds.result()
    assert len(xids) == 10
    assert summary["groups"][0]["dropped"]["untimed"] == 20


def test_parse_kernel_log_still_returns_every_event():
    lines = [xid_line(NOW - 1000 + i) for i in range(25)]
    assert len(parse_kernel_log("\n".join(lines), now=NOW)[0]) == 25
