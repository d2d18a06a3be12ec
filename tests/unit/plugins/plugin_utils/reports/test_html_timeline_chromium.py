"""The incident's timeline view in report.html, opened in headless Chromium (as test_report_html_chromium.py
does for the table): the lanes and rows render in time order, close events are marked and linked, text from
hosts stays text, and the page's own script still runs beside it."""

import pytest

from ansible_collections.gpufleet.core.plugins.plugin_utils.reports.html import render_html
from ansible_collections.gpufleet.core.plugins.plugin_utils.reports.model import build_report
from ansible_collections.gpufleet.core.plugins.plugin_utils.timeline.build import mark_close
from ansible_collections.gpufleet.core.plugins.plugin_utils.timeline.events import epoch_of_iso, event
from tests.support.report_inputs import hostile_inputs
from tests.support.chromium import rendered_dom

HOSTILE = '<img src=x onerror="document.documentElement.dataset.pwned=1"></script><b>'


def sample_timeline():
    events = [
        event(epoch_of_iso("2026-11-29T21:13:58Z"), "dgx-h100-01", "hardware", "bmc", "bmc_event",
              "BMC: Power Supply #0x51: Power Supply AC lost Asserted", "BMC clock", "ipmitool-sel-elist.txt", 2,
              "   2 | 11/29/2026 | 21:13:58 | Power Supply #0x51 | Power Supply AC lost | Asserted"),
        event(epoch_of_iso("2026-11-29T21:14:07Z"), "dgx-h100-01", "hardware", "kernel", "xid",
              "Xid 79 on 0000:ab:00.0: GPU has fallen off the bus.", "host clock, UTC", "kernel.log", 5,
              "NVRM: Xid (PCI:0000:ab:00): 79, GPU has fallen off the bus.", gpu="0000:ab:00.0"),
        event(epoch_of_iso("2026-11-29T23:00:00Z"), HOSTILE, "workload", "journal", "service_log",
              "inference.service: " + HOSTILE, "host clock, UTC", "journal-services.json", 1, HOSTILE),
        event(None, "dgx-h100-01", "hardware", "bmc", "bmc_event", "BMC: Pre-Init entry", "BMC clock",
              "ipmitool-sel-elist.txt", 1, "   1 | Pre-Init |0000000000| System Event"),
    ]
    for number, item in enumerate(events, 1):
        item["id"] = "e%d" % number
    correlations = mark_close(events, {})
    hosts = {host: {"status": "ok", "window": None, "why": None, "sources": {"kernel": {
        "status": "ok", "events": 1, "clock": "host clock, UTC", "why": None, "files": ["kernel.log"]}}}
        for host in ("dgx-h100-01", HOSTILE)}
    return {"window": {"since": "2026-11-29T06:00:00Z", "until": "2026-11-30T06:00:00Z",
                       "since_epoch": epoch_of_iso("2026-11-29T06:00:00Z"),
                       "until_epoch": epoch_of_iso("2026-11-30T06:00:00Z")},
            "events": events, "correlations": correlations, "close_seconds": 120, "hosts": hosts, "dropped_events": 0}


@pytest.fixture(scope="module")
def dom():
    return rendered_dom(render_html(build_report(*hostile_inputs()), sample_timeline()), "incident.html")


def timeline_rows(dom):
    return [attrs for tag, attrs in dom.elements if tag == "tr" and "event" in (attrs.get("class") or "").split()]


def test_the_timeline_rows_render_in_time_order_with_close_events_marked(dom):
    rows = timeline_rows(dom)
    assert [row["id"] for row in rows] == ["e1", "e2", "e3", "e4"]
    assert [row["class"] for row in rows] == ["event close", "event close", "event", "event"]
    assert [row["data-kind"] for row in rows] == ["bmc_event", "xid", "service_log", "bmc_event"]
    assert dom.attribute("section", "id", "timeline") == "timeline"
    links = [attrs["href"] for tag, attrs in dom.elements if tag == "a" and attrs.get("href") in ("#e1", "#e2")]
    assert sorted(links) == ["#e1", "#e1", "#e2", "#e2"]  # the lane marks and the "close to" links
    assert "time unknown" in dom.texts


def test_the_lanes_place_each_timed_event_on_the_window(dom):
    marks = [attrs for tag, attrs in dom.elements if tag == "a" and "mark" in (attrs.get("class") or "")]
    # lanes sorted by host name ('<' before 'd'); 21:13:58 is 15 h 13 min 58 s into the 24 h window
    assert [mark["style"] for mark in marks] == ["left:70.833%", "left:63.470%", "left:63.480%"]
    lanes = [attrs["data-host"] for tag, attrs in dom.elements if tag == "div" and attrs.get("class") == "lane"]
    assert lanes == [HOSTILE, "dgx-h100-01"]


def test_host_text_in_the_timeline_stays_text_and_the_table_still_runs(dom):
    assert dom.tags("img") == []
    assert dom.attribute("html", "data-pwned") is None
    assert not any(name.startswith("on") for _tag, attrs in dom.elements for name in attrs)
    assert any(HOSTILE in text for text in dom.texts)
    assert dom.attribute("body", "data-ready") == "1"
    assert len(dom.rows) == 11
    assert not any(str(value).startswith(("http:", "https:", "//")) for _tag, attrs in dom.elements
                   for name, value in attrs.items() if name in ("src", "href"))
