"""The monitoring stack against reality (issue 30, section 1): the demo audit publishes gpufleet.prom into a
textfile directory (gpufleet_textfile_dir); a real node_exporter (textfile collector only) and a real Prometheus,
both Debian's and started here on loopback, scrape it beside a dcgm-exporter sample of a demo host; every panel
of the Grafana dashboard returns data, the alert rules load and the right ones fire. A --limit run never replaces
the published file."""

import json
import os
import shutil

import pytest

from tests.integration.test_audit_output import output, run_playbook
from tests.support.prometheus_stack import prometheus_scraping_textfiles
from tests.support.schema_check import ROOT

DASHBOARD = os.path.join(ROOT, "contrib", "grafana", "gpufleet-fleet.json")
RULES = os.path.join(ROOT, "contrib", "prometheus", "gpufleet-alerts.yml")
DCGM_SAMPLE = os.path.join(ROOT, "tests", "fixtures", "samples", "dcgm-exporter_gpu-h100-thermal-05.metrics")


@pytest.fixture(scope="module")
def published(tmp_path_factory):
    """(textfile folder, playbook result) of the demo audit with gpufleet_textfile_dir."""
    textfile_dir = tmp_path_factory.mktemp("textfile")
    reports = tmp_path_factory.mktemp("reports")
    result = run_playbook("audit.yml", "-e", "gpufleet_report_dir=%s" % reports,
                          "-e", "gpufleet_textfile_dir=%s" % textfile_dir)
    assert result.returncode == 2, output(result)[-3000:]
    return textfile_dir, result


@pytest.fixture(scope="module")
def prometheus(published, tmp_path_factory):
    textfile_dir, _result = published
    # dcgm-exporter is scraped on its own in a real cluster; here its sample rides on the same node_exporter
    scraped = tmp_path_factory.mktemp("scraped")
    shutil.copy(os.path.join(textfile_dir, "gpufleet.prom"), scraped / "gpufleet.prom")
    shutil.copy(DCGM_SAMPLE, scraped / "dcgm-exporter.prom")
    with prometheus_scraping_textfiles(str(scraped), tmp_path_factory.mktemp("prometheus"), [RULES]) as server:
        server.wait_for_series("gpufleet_audit_info")
        server.wait_for_series("DCGM_FI_DEV_GPU_TEMP")
        yield server


def dashboard_targets():
    with open(DASHBOARD, encoding="utf-8") as handle:
        dashboard = json.load(handle)
    return dashboard, [(panel["title"], target["expr"]) for panel in dashboard["panels"] for target in panel["targets"]]


def test_the_complete_demo_audit_publishes_its_file(published):
    textfile_dir, result = published
    target = os.path.join(textfile_dir, "gpufleet.prom")
    assert "Textfile: %s replaced (a complete audit of the whole scope)" % target in result.stdout
    assert oct(os.stat(target).st_mode & 0o777) == "0o644"
    assert sorted(os.listdir(textfile_dir)) == ["gpufleet.prom"]


def test_a_limited_run_leaves_the_published_file_as_it_is(published, tmp_path):
    textfile_dir, _result = published
    target = os.path.join(textfile_dir, "gpufleet.prom")
    with open(target, encoding="utf-8") as handle:
        before = handle.read()
    result = run_playbook("audit.yml", "--limit", "gpu-h100-ok-01", "-e", "gpufleet_report_dir=%s" % tmp_path,
                          "-e", "gpufleet_textfile_dir=%s" % textfile_dir)
    assert result.returncode == 0, output(result)[-3000:]
    assert ("Textfile: %s NOT replaced: a partial run (--limit) never replaces it" % target) in result.stdout
    with open(target, encoding="utf-8") as handle:
        assert handle.read() == before


def test_the_dashboard_is_grafana_json_with_a_query_in_every_panel():
    dashboard, targets = dashboard_targets()
    assert dashboard["uid"] and dashboard["title"] and isinstance(dashboard["schemaVersion"], int)
    assert [item["type"] for item in dashboard["templating"]["list"]] == ["datasource"]
    for panel in dashboard["panels"]:
        assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}, panel["title"]
        assert set(panel["gridPos"]) == {"x", "y", "w", "h"} and panel["gridPos"]["x"] + panel["gridPos"]["w"] <= 24
        assert panel["targets"] and all(target["expr"].strip() and target["refId"] for target in panel["targets"])
    assert len(targets) >= 10


def test_every_panel_query_returns_data_from_the_scraped_demo(prometheus):
    _dashboard, targets = dashboard_targets()
    empty = [(title, expr) for title, expr in targets if not prometheus.query(expr)]
    assert not empty


def test_the_dcgm_join_panel_names_the_demo_hosts_hot_gpus(prometheus):
    _dashboard, targets = dashboard_targets()
    expr = dict(targets)["GPU temperature (DCGM) of GPUs with findings"]
    rows = {(row["metric"]["gpu"], row["metric"]["rule"], float(row["value"][1])) for row in prometheus.query(expr)}
    assert {("2", "hardware.temperature", 87.0), ("3", "hardware.temperature", 88.0),
            ("6", "hardware.temperature", 86.0)} <= rows
    assert {row["metric"]["Hostname"] for row in prometheus.query(expr)} == {"gpu-h100-thermal-05"}


def test_the_alert_rules_load_and_fire_on_the_demo(prometheus):
    groups = prometheus.get("/api/v1/rules")["groups"]
    rules = {rule["name"]: rule for group in groups for rule in group["rules"]}
    assert len(rules) == 7 and all(rule["health"] == "ok" for rule in rules.values()), rules
    firing = prometheus.wait_for_series('ALERTS{alertname="GpufleetGpuLost"}')
    assert {(alert["metric"]["host"], alert["metric"]["gpu"]) for alert in firing} == {("gpu-h100-xid79-02", "5")}
    critical = prometheus.wait_for_series('ALERTS{alertname="GpufleetCriticalFindings"}')
    assert ("gpu-h100-xid79-02", "hardware") in {(a["metric"]["host"], a["metric"]["layer"]) for a in critical}
    assert not prometheus.query('ALERTS{alertname=~"GpufleetStoreNotWritten|GpufleetRunNotComplete|'
                                'GpufleetAuditMissing"}')
