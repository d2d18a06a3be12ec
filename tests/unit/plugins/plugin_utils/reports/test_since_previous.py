"""What every report says about the store: changes, first_seen, the age of open findings."""

import datetime
import json
import os
from xml.etree import ElementTree

import jsonschema
from prometheus_client.parser import text_string_to_metric_families

from ansible_collections.gpufleet.core.plugins.plugin_utils.reports.html import render_html
from ansible_collections.gpufleet.core.plugins.plugin_utils.reports.junit import render_junit
from ansible_collections.gpufleet.core.plugins.plugin_utils.reports.prometheus import render_prometheus
from ansible_collections.gpufleet.core.plugins.plugin_utils.reports.terminal import render_terminal
from ansible_collections.gpufleet.core.plugins.plugin_utils.reports.writer import render_json
from tests.support.report_inputs import embedded_data
from tests.support.store_runs import host_wide, make_run, pcie, record, xid
from tests.support.schema_check import ROOT

FIRST = (datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(days=2)).replace(microsecond=0)
SECOND = FIRST + datetime.timedelta(days=1)


def iso(moment):
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def two_runs(tmp_path):
    url = "sqlite:///%s" % (tmp_path / "gpufleet.sqlite")
    record(url, *make_run("r1", iso(FIRST), {"node-1": [xid("node-1"), pcie("node-1")], "node-2": []}))
    report, facts = make_run("r2", iso(SECOND), {"node-1": [xid("node-1")], "node-2": [host_wide("node-2")]})
    report["run"]["finished_at"] = iso(SECOND)
    return record(url, report, facts)


def test_report_json_with_changes_matches_the_schema(tmp_path):
    report = json.loads(render_json(two_runs(tmp_path)))
    with open(os.path.join(ROOT, "docs", "schema", "report.schema.json"), encoding="utf-8") as stream:
        jsonschema.validate(report, json.load(stream))
    assert report["report_version"] == "2.0"
    assert report["changes"]["persisting"] == [f["identity"] for f in report["findings"] if f["runs_open"] == 2]


def test_html_shows_new_and_cleared_first(tmp_path):
    page = render_html(two_runs(tmp_path))
    changes = page.index('<section id="changes">')
    assert changes < page.index('<section id="summary">')
    new_table = page[page.index('id="changes-new"'):page.index('id="changes-cleared"')]
    assert "driver.persistence_mode_off" in new_table and "node-2" in new_table
    cleared_table = page[page.index('id="changes-cleared"'):]
    assert "hardware.pcie_link_degraded" in cleared_table.split("</table>")[0]
    assert "1 findings persist from earlier runs, the oldest open since %s" % iso(FIRST) in page


def test_prometheus_exports_first_seen_timestamps_and_counts(tmp_path):
    families = {family.name: family for family in text_string_to_metric_families(render_prometheus(two_runs(tmp_path)))}
    changed = {sample.labels["change"]: sample.value for sample in families["gpufleet_findings_changed"].samples}
    assert changed == {"new": 1.0, "cleared": 1.0, "persisting": 1.0}
    # the time the store first saw each open finding, not an age frozen at the run
    first_seen = {(s.labels["host"], s.labels["rule"]): s.value
                  for s in families["gpufleet_finding_first_seen_timestamp_seconds"].samples}
    assert first_seen == {("node-1", "hardware.xid"): FIRST.timestamp(),
                          ("node-2", "driver.persistence_mode_off"): SECOND.timestamp()}
    assert "gpufleet_finding_open_seconds" not in families
    assert families["gpufleet_store_written"].samples[0].value == 1.0


def test_prometheus_first_seen_without_a_store_is_the_runs_start():
    report, _facts = make_run("r1", iso(FIRST), {"node-1": [xid("node-1")]})
    families = {family.name: family for family in text_string_to_metric_families(render_prometheus(report))}
    assert [s.value for s in families["gpufleet_finding_first_seen_timestamp_seconds"].samples] == [FIRST.timestamp()]


def test_junit_and_terminal_say_what_changed(tmp_path):
    report = two_runs(tmp_path)
    tree = ElementTree.fromstring(render_junit(report).encode("utf-8"))
    properties = {item.get("name"): item.get("value") for item in tree.iter("property")}
    assert (properties["gpufleet.findings_new"], properties["gpufleet.findings_cleared"],
            properties["gpufleet.findings_persisting"], properties["gpufleet.changes_against"]) == ("1", "1", "1", "r1")
    failure = list(tree.iter("failure"))[0]
    assert "open since" not in failure.text and "runs" not in failure.text  # stable from run to run
    text = render_terminal(report)
    assert "Changes since r1: 1 new, 1 cleared, 1 persisting" in text
    assert "  new: [warning] driver.persistence_mode_off node-2" in text
    assert "  cleared: [info] hardware.pcie_link_degraded node-1 00000000:43:00.0" in text


def test_reports_without_a_store_are_unchanged():
    report, _facts = make_run("r1", iso(FIRST), {"node-1": [xid("node-1")]})
    assert "changes" not in render_html(report) or '<section id="changes">' not in render_html(report)
    assert "gpufleet_findings_changed" not in render_prometheus(report)
    assert "Changes" not in render_terminal(report)


def test_html_state_column_says_new_or_open_since_not_the_collection_status(tmp_path):
    report = two_runs(tmp_path)
    data = json.loads(embedded_data(render_html(report)))
    states = {(data["hosts"][row[0]][0], data["strings"][row[3]]): data["strings"][row[9]]
              for row in data["rows"] if row[1] >= 0}
    assert states == {("node-1", "hardware.xid"): "open since %s (2 runs)" % iso(FIRST),
                      ("node-2", "driver.persistence_mode_off"): "new"}
    page = render_html(report)
    assert '<th data-column="state" scope="col">state</th>' in page
    assert '<th data-column="status"' not in page


def test_html_shows_the_stores_kind_never_its_path_or_credentials(tmp_path):
    report = two_runs(tmp_path)
    page = render_html(report)
    assert report["store"]["url"].startswith("sqlite:///") and str(tmp_path) in report["store"]["url"]
    assert str(tmp_path) not in page and "gpufleet.sqlite" not in page
    assert "Store: run written to sqlite store" in page
    postgres = dict(report, store=dict(report["store"], url="postgresql+psycopg://gpufleet:***@db.internal:5432/fleet",
                                       status="failed", error="connection to postgresql+psycopg://gpufleet:***@"
                                       "db.internal:5432/fleet refused"))
    page = render_html(postgres)
    assert "db.internal" not in page and "gpufleet:***" not in page and "5432" not in page
    assert "Store: NOT WRITTEN (connection to postgresql store refused)" in page
    assert "Store: run written to sqlite:///" in render_terminal(report)  # the terminal is the user's own
