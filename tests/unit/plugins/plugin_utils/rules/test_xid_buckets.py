"""The Xid catalog held to NVIDIA's resolution buckets (issue 27, point 5): every layer or severity that
departs from what an Xid's bucket implies carries its reason, and no reason stands without a departure."""

import pytest

from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.knowledge import load_knowledge

KNOWLEDGE = load_knowledge()


def test_every_departure_from_the_bucket_has_its_reason_and_every_reason_a_departure():
    unexplained = [n for n in KNOWLEDGE.xid_numbers()
                   if KNOWLEDGE.xid_departures(n) and not KNOWLEDGE.xid(n).get("departure")]
    stale = [n for n in KNOWLEDGE.xid_numbers()
             if KNOWLEDGE.xid(n).get("departure") and not KNOWLEDGE.xid_departures(n)]
    assert (unexplained, stale) == ([], [])


def test_the_departures_are_the_reviewed_ones():
    departing = {n: KNOWLEDGE.xid_departures(n) for n in KNOWLEDGE.xid_numbers() if KNOWLEDGE.xid_departures(n)}
    assert departing == {
        32: ["layer"], 46: ["layer"], 60: ["layer"], 94: ["layer"], 109: ["layer"], 119: ["layer"],
        120: ["layer"], 155: ["layer"],
        43: ["severity"], 92: ["severity"], 137: ["severity"], 157: ["severity"],
    }


def test_xid_32_keeps_the_hardware_layer_for_the_reason_in_the_catalogs_trigger_text():
    entry = KNOWLEDGE.xid(32)
    assert (entry["bucket"], entry["layer"], entry["severity"]) == ("RESTART_APP", "hardware", "warning")
    assert "PCIe" in entry["departure"] and "not the application" in entry["departure"]


@pytest.mark.parametrize("bucket, severity, layer", [
    ("RESTART_VM", "critical", None),
    ("RESET_GPU", "critical", "hardware"),
    ("RESTART_APP", "warning", "workload"),
    ("IGNORE", "info", None),
])
def test_buckets_imply_a_severity_and_some_a_layer(bucket, severity, layer):
    assert KNOWLEDGE.xid_bucket(bucket) == {"severity": severity, "layer": layer}


def test_an_override_that_departs_is_reported_as_departing():
    changed = load_knowledge({"xid": {"48": {"severity": "warning"}}})
    assert changed.xid_departures(48) == ["severity"] and KNOWLEDGE.xid_departures(48) == []
