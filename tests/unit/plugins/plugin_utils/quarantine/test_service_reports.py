"""An audit after service events were recorded shows each node's service state in report.json, report.html and
gpufleet.prom (reports/service.py); a report without service events renders as before."""

import json
import os

import jsonschema
from prometheus_client.parser import text_string_to_metric_families

from ansible_collections.gpufleet.core.plugins.plugin_utils.quarantine.service_state import record_service_events
from ansible_collections.gpufleet.core.plugins.plugin_utils.reports.format import expanded
from ansible_collections.gpufleet.core.plugins.plugin_utils.reports.writer import write_reports
from ansible_collections.gpufleet.core.plugins.plugin_utils.store.record import StoreSettings
from tests.support.postgres import postgres_cluster, store_url  # noqa: F401 pylint: disable=unused-import
from tests.support.store_runs import make_run, record, xid

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), *[".."] * 5))
EVENTS = [
    {"host": "node-1", "event": "quarantined", "at": "2026-12-06T23:00:00Z", "scheduler": "slurm",
     "rule": "hardware.xid", "finding": "Xid 79 on node-1", "reason": "gpufleet: hardware.xid (run q1)"},
    {"host": "node-1", "event": "repair", "step": "reset", "result": "failed", "at": "2026-12-06T23:05:00Z"},
    {"host": "node-1", "event": "repair", "step": "reboot", "result": "failed", "at": "2026-12-06T23:15:00Z"},
    {"host": "node-2", "event": "operator_out", "at": "2026-12-06T20:00:00Z", "scheduler": "slurm",
     "reason": "fan <replaced>"},
    {"host": "node-9", "event": "quarantined", "at": "2026-12-06T23:00:00Z", "rule": "hardware.xid"},
]


def audit_after_events(url, tmp_path):
    record_service_events(StoreSettings(url), EVENTS, run_id="q1")
    report, facts = make_run("20261206T233000Z", "2026-12-06T23:30:00Z",
                             {"node-1": [xid("node-1")], "node-2": [], "node-3": []})
    record(url, report, facts)
    run_dir = tmp_path / "20261206T233000Z"
    run_dir.mkdir()
    write_reports(report, str(run_dir), str(tmp_path))
    return run_dir


def test_report_json_has_the_service_state_of_the_hosts_the_store_knows(store_url, tmp_path):
    run_dir = audit_after_events(store_url, tmp_path)
    document = json.loads((run_dir / "report.json").read_text())
    with open(os.path.join(ROOT, "docs", "schema", "report.schema.json"), encoding="utf-8") as stream:
        jsonschema.validate(document, json.load(stream))
    hosts = expanded(document)["hosts"]
    assert document["report_version"] == "2.0"
    node = hosts["node-1"]["service"]
    assert (node["state"], node["since"], node["rule"], node["run_id"], node["failed_repairs"]) == (
        "quarantined", "2026-12-06T23:00:00Z", "hardware.xid", "q1", 2)
    assert [(r["step"], r["result"]) for r in node["repairs"]] == [("reset", "failed"), ("reboot", "failed")]
    assert hosts["node-2"]["service"]["state"] == "operator_out"
    assert "service" not in hosts["node-3"]  # no event: no state
    assert "node-9" not in hosts  # not audited in this run


def test_report_html_lists_the_nodes_out_of_service_first(store_url, tmp_path):
    html = (audit_after_events(store_url, tmp_path) / "report.html").read_text()
    section = html[html.index('<section id="service">'):]
    section = section[:section.index("</section>")]
    assert "(2 of 2 nodes out of service)" in section
    assert "<code>node-1</code>" in section and "reset failed, reboot failed" in section
    assert "gpufleet: hardware.xid (run q1)" in section
    assert "fan &lt;replaced&gt;" in section and "out (operator)" in section


def test_gpufleet_prom_has_the_service_series(store_url, tmp_path):
    text = (audit_after_events(store_url, tmp_path) / "gpufleet.prom").read_text()
    samples = {(sample.name, tuple(sorted(sample.labels.items()))): sample.value
               for family in text_string_to_metric_families(text) for sample in family.samples}
    assert samples[("gpufleet_node_in_service", (("host", "node-1"),))] == 0
    assert samples[("gpufleet_node_in_service", (("host", "node-2"),))] == 0
    assert ("gpufleet_node_in_service", (("host", "node-3"),)) not in samples
    assert samples[("gpufleet_node_quarantined_since_timestamp_seconds",
                    (("host", "node-1"), ("rule", "hardware.xid")))] == 1796598000.0
    assert samples[("gpufleet_node_repairs_total", (("host", "node-1"), ("result", "failed"), ("step", "reset")))] == 1
    assert samples[("gpufleet_node_repairs_total", (("host", "node-1"), ("result", "failed"), ("step", "reboot")))] == 1


def test_a_report_without_service_events_has_no_service_section(tmp_path):
    url = "sqlite:///%s" % (tmp_path / "gpufleet.sqlite")
    report, facts = make_run("r1", "2026-12-06T23:30:00Z", {"node-1": []})
    record(url, report, facts)
    assert "service" not in report["hosts"]["node-1"]
    write_reports(report, str(tmp_path), str(tmp_path))
    assert 'id="service"' not in (tmp_path / "report.html").read_text()
    assert "gpufleet_node_in_service" not in (tmp_path / "gpufleet.prom").read_text()
