"""The store's subcommands (runs, show, diff, baseline set/show, report), through an argparse parser as
the gpufleet console script builds it, on SQLite and PostgreSQL."""

import argparse
import datetime
import json
import os

import pytest

from ansible_collections.gpufleet.core.plugins.plugin_utils.cli.store_commands import register
from ansible_collections.gpufleet.core.plugins.plugin_utils.reports.writer import render_json
from ansible_collections.gpufleet.core.plugins.plugin_utils.store.record import StoreSettings
from tests.support.postgres import postgres_cluster, store_url  # noqa: F401 pylint: disable=unused-import
from tests.support.store_runs import host_wide, make_run, pcie, record, record_run, xid

NOW = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
T1, T2 = [(NOW - datetime.timedelta(days=days)).strftime("%Y-%m-%dT%H:%M:%SZ") for days in (2, 1)]


def parser():
    top = argparse.ArgumentParser(prog="gpufleet")
    top.add_argument("--store-url", dest="store_url")
    top.add_argument("--report-root", dest="report_root")
    register(top.add_subparsers(dest="command"))
    return top


def run(argv, capsys):
    args = parser().parse_args(argv)
    status = args.handler(args)
    out, err = capsys.readouterr()
    return status, out, err


@pytest.fixture
def two_runs(store_url):  # noqa: F811
    record(store_url, *make_run("r1", T1, {"node-1": [xid("node-1"), pcie("node-1")], "node-2": []}))
    record(store_url, *make_run("r2", T2, {"node-1": [xid("node-1")], "node-2": [host_wide("node-2")]}))
    return store_url


def test_runs_lists_newest_first(two_runs, capsys):
    status, out, _err = run(["--store-url", two_runs, "runs", "--json"], capsys)
    assert status == 0
    assert [(item["run"], item["findings"], item["status"]) for item in json.loads(out)] == [
        ("r2", 2, "complete"), ("r1", 2, "complete")]
    status, out, _err = run(["--store-url", two_runs, "runs"], capsys)
    assert out.splitlines()[1].startswith("r2 ") and "RUN" in out.splitlines()[0]


def test_show_gives_findings_with_first_seen(two_runs, capsys):
    status, out, _err = run(["--store-url", two_runs, "show", "latest", "--json"], capsys)
    shown = json.loads(out)
    assert status == 0 and shown["run"]["id"] == "r2"
    assert sorted((f["rule"], f["first_seen"], f["runs_open"]) for f in shown["findings"]) == [
        ("driver.persistence_mode_off", T2, 1), ("hardware.xid", T1, 2)]
    _status, out, _err = run(["--store-url", two_runs, "show", "r2"], capsys)
    assert "[critical] hardware.xid node-1 00000000:1B:00.0: Xid 79 on node-1 (open since %s, 2 runs)" % T1 in out


def test_diff_between_two_runs(two_runs, capsys):
    status, out, _err = run(["--store-url", two_runs, "diff", "r1", "r2", "--json"], capsys)
    diff = json.loads(out)
    assert status == 0
    assert [f["rule"] for f in diff["new"]] == ["driver.persistence_mode_off"]
    assert [f["rule"] for f in diff["cleared"]] == ["hardware.pcie_link_degraded"]
    assert [f["rule"] for f in diff["persisting"]] == ["hardware.xid"]
    _status, out, _err = run(["--store-url", two_runs, "diff", "r1", "r2"], capsys)
    assert out.splitlines()[0] == "r1 -> r2: 1 new, 1 cleared, 1 persisting"


def test_baseline_set_and_show(two_runs, capsys):
    assert run(["--store-url", two_runs, "baseline", "set", "r1"], capsys)[0] == 0
    status, out, _err = run(["--store-url", two_runs, "baseline", "set", "latest", "--group", "h100"], capsys)
    assert status == 0 and "group h100: run r2" in out
    status, out, _err = run(["--store-url", two_runs, "baseline", "show", "--json"], capsys)
    shown = json.loads(out)
    assert {group: item["run"] for group, item in shown.items()} == {"all": "r1", "h100": "r2"}
    assert run(["--store-url", two_runs, "baseline", "set", "r1", "--group", "h100"], capsys)[0] == 0
    assert json.loads(run(["--store-url", two_runs, "baseline", "show", "--json"], capsys)[1])["h100"]["run"] == "r1"


def test_report_rebuilds_a_run_from_the_store(two_runs, tmp_path, capsys):
    output = tmp_path / "rebuilt"
    status, out, _err = run(["--store-url", two_runs, "report", "r2", "--output", str(output)], capsys)
    assert status == 0 and "rebuilt the reports of run r2" in out
    rebuilt = json.loads((output / "report.json").read_text())
    assert rebuilt["run"]["id"] == "r2" and rebuilt["changes"]["against"] == "r1"
    assert rebuilt["changes"]["counts"] == {"new": 1, "persisting": 1, "cleared": 1}
    assert sorted(f["rule"] for f in rebuilt["findings"]) == ["driver.persistence_mode_off", "hardware.xid"]
    assert [f["first_seen"] for f in rebuilt["findings"] if f["rule"] == "hardware.xid"] == [T1]
    assert sorted(os.listdir(output)) == ["facts", "findings.ndjson", "gpufleet.prom", "junit.xml", "report.html", "report.json"]
    assert json.loads((output / "facts" / "node-1.json").read_text())["collected_at"] == T2
    # the stored facts give gpufleet.prom dcgm-exporter's labels of the GPU
    xid_series = [line for line in (output / "gpufleet.prom").read_text().splitlines()
                  if line.startswith('gpufleet_finding{host="node-1",rule="hardware.xid"')]
    assert len(xid_series) == 1
    assert 'gpu="0",UUID="GPU-node-1-S0",pci_bus_id="00000000:1B:00.0"' in xid_series[0]


def test_unknown_run_and_missing_store_are_messages(two_runs, tmp_path, capsys):
    status, _out, err = run(["--store-url", two_runs, "show", "nope"], capsys)
    assert status == 1 and "no run 'nope' in the store" in err
    status, _out, err = run(["--report-root", str(tmp_path / "empty"), "runs"], capsys)
    assert status == 1 and "no store at %s" % (tmp_path / "empty" / "gpufleet.sqlite") in err


def test_default_store_is_under_the_report_root(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("GPUFLEET_STORE_URL", raising=False)
    record("sqlite:///%s" % (tmp_path / "gpufleet.sqlite"), *make_run("r1", T1, {"node-1": []}))
    status, out, _err = run(["--report-root", str(tmp_path), "runs", "--json"], capsys)
    assert status == 0 and [item["run"] for item in json.loads(out)] == ["r1"]


def test_baseline_template_as_markdown(two_runs, capsys):
    assert run(["--store-url", two_runs, "baseline", "set", "r1"], capsys)[0] == 0
    status, out, _err = run(["--store-url", two_runs, "baseline", "show", "--markdown"], capsys)
    assert status == 0 and "## the whole fleet" in out
    assert "| run | r1 (started %s" % T1 in out
    assert "| GPU models (GPUs) | NVIDIA H100 80GB HBM3 (4) |" in out
    assert "| driver (hosts) | 550.90.07 (2) |" in out and "| GPUs per host (hosts) | 2 (2) |" in out


def test_latest_is_the_complete_run_that_started_last_not_a_partial_or_older_one(store_url, capsys):  # noqa: F811
    # the audit that started later finished first; an earlier-started one and a --limit run finished after it
    record(store_url, *make_run("started-later", T2, {"node-1": [], "node-2": []}))
    record(store_url, *make_run("started-earlier", T1, {"node-1": [], "node-2": []}))
    record(store_url, *make_run("one-host-incident", T2, {"node-1": [xid("node-1")]}, status="partial"))
    status, out, _err = run(["--store-url", store_url, "baseline", "set", "latest"], capsys)
    assert status == 0 and "the whole fleet: run started-later" in out
    assert json.loads(run(["--store-url", store_url, "show", "latest", "--json"], capsys)[1])["run"]["id"] == \
        "started-later"


def test_an_unfinished_run_cannot_be_a_baseline(store_url, capsys):  # noqa: F811
    report, facts = make_run("killed", T1, {"node-1": []})
    record_run(StoreSettings(store_url, "test"), report, facts, reports_pending=True)
    status, _out, err = run(["--store-url", store_url, "baseline", "set", "killed"], capsys)
    assert status == 1 and "run killed is unfinished (its reports were not all written)" in err
    listed = json.loads(run(["--store-url", store_url, "runs", "--json"], capsys)[1])
    assert [(item["run"], item["status"]) for item in listed] == [("killed", "unfinished")]


def test_report_rebuilds_a_run_judged_by_none_as_the_audit_built_it(store_url, tmp_path, capsys):  # noqa: F811
    report, facts = make_run("judged-by-none", T1, {"node-1": [xid("node-1")], "node-2": []})
    report["run"]["fail_severity"] = "none"
    recorded = record_run(StoreSettings(store_url, "test"), report, facts)
    assert (recorded["summary"]["fail_severity"], recorded["summary"]["failed_threshold"]) == ("critical", False)
    output = tmp_path / "rebuilt"
    assert run(["--store-url", store_url, "report", "judged-by-none", "--output", str(output)], capsys)[0] == 0
    rebuilt = json.loads((output / "report.json").read_text())
    original = json.loads(render_json(recorded))
    for key in ("run", "summary", "findings", "hosts", "causes", "changes"):
        assert rebuilt[key] == original[key], key
