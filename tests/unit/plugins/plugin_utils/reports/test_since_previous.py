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
    assert report["report_version"] == "1.5"
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


def test_prometheus_exports_age_and_counts(tmp_path):
    families = {family.name: family for family in text_string_to_metric_families(render_prometheus(two_runs(tmp_path)))}
    changed = {sample.labels["change"]: sample.value for sample in families["gpufleet_findings_changed"].samples}
    assert changed == {"new": 1.0, "cleared": 1.0, "persisting": 1.0}
    ages = {(s.labels["host"], s.labels["rule"]): s.value for s in families["gpufleet_finding_open_seconds"].samples}
    assert ages == {("node-1", "hardware.xid"): 86400.0, ("node-2", "driver.persistence_mode_off"): 0.0}
    assert families["gpufleet_store_written"].samples[0].value == 1.0


def test_junit_and_terminal_say_what_changed(tmp_path):
    report = two_runs(tmp_path)
    tree = ElementTree.fromstring(render_junit(report).encode("utf-8"))
    properties = {item.get("name"): item.get("value") for item in tree.iter("property")}
    assert (properties["gpufleet.findings_new"], properties["gpufleet.findings_cleared"],
            properties["gpufleet.findings_persisting"], properties["gpufleet.changes_against"]) == ("1", "1", "1", "r1")
    failure = list(tree.iter("failure"))[0]
    assert "(open since %s, 2 runs)" % iso(FIRST) in failure.text
    text = render_terminal(report)
    assert "Changes since r1: 1 new, 1 cleared, 1 persisting" in text
    assert "  new: [warning] driver.persistence_mode_off node-2" in text
    assert "  cleared: [info] hardware.pcie_link_degraded node-1 00000000:43:00.0" in text


def test_reports_without_a_store_are_unchanged():
    report, _facts = make_run("r1", iso(FIRST), {"node-1": [xid("node-1")]})
    assert "changes" not in render_html(report) or '<section id="changes">' not in render_html(report)
    assert "gpufleet_findings_changed" not in render_prometheus(report)
    assert "Changes" not in render_terminal(report)
