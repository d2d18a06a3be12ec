"""Reports: report.json (schema), junit.xml (Jenkins XSD), gpufleet.prom (prometheus parser), terminal, writer.

The samples below are shaped like the rules' findings and are shared with test_report_html_chromium.py.
"""

import html
import gzip
import json
import os
import time
from xml.etree import ElementTree

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from prometheus_client.parser import text_string_to_metric_families

from ansible_collections.gpufleet.core.plugins.plugin_utils import run_folder
from ansible_collections.gpufleet.core.plugins.plugin_utils.reports import writer as report_writer
from ansible_collections.gpufleet.core.plugins.plugin_utils.reports.html import (
    CONTENT_SECURITY_POLICY, SCRIPT, SCRIPT_HASH, render_html)
from ansible_collections.gpufleet.core.plugins.plugin_utils.reports.junit import render_junit
from ansible_collections.gpufleet.core.plugins.plugin_utils.reports.model import (
    REPORT_VERSION, build_report, host_sort_key)
from ansible_collections.gpufleet.core.plugins.plugin_utils.reports.prometheus import render_prometheus
from ansible_collections.gpufleet.core.plugins.plugin_utils.reports.terminal import render_terminal
from ansible_collections.gpufleet.core.plugins.plugin_utils.reports.writer import write_reports
from tests.support.report_inputs import (
    HOSTILE_HOST, HOSTILE_PROCESS, HOSTILE_SUMMARY, ROOT, RULES_RUN, RUN, demo_like_inputs, embedded_data, finding,
    hostile_inputs, large_inputs, load_junit_schema)
from tests.support.timings import record_timing

REPORT_SCHEMA = os.path.join(ROOT, "docs", "schema", "report.schema.json")


@pytest.fixture(scope="module")
def demo_report():
    return build_report(*demo_like_inputs())


@pytest.fixture(scope="module")
def hostile_report():
    return build_report(*hostile_inputs())


@pytest.fixture(scope="module")
def report_validator():
    with open(REPORT_SCHEMA, encoding="utf-8") as stream:
        schema = json.load(stream)
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


@pytest.fixture(scope="module")
def junit_schema():
    return load_junit_schema()


# report.json


def test_summary_counts_by_layer_and_severity(demo_report):
    summary = demo_report["summary"]
    assert summary["by_layer"]["hardware"] == {"critical": 1, "warning": 0, "info": 1}
    assert summary["by_layer"]["driver"] == {"critical": 1, "warning": 1, "info": 0}
    assert summary["by_layer"]["scheduling"] == {"critical": 0, "warning": 1, "info": 0}
    assert summary["by_layer"]["workload"] == {"critical": 0, "warning": 2, "info": 0}
    assert summary["by_severity"] == {"critical": 2, "warning": 4, "info": 1}
    assert summary["by_rule"]["workload.gpu_oversubscribed"] == 1


def test_summary_hosts_by_status_with_names(demo_report):
    summary = demo_report["summary"]
    assert summary["hosts"] == {"total": 8, "ok": 6, "unreachable": 1, "failed": 1}
    assert summary["unreachable"] == ["dgx-h100-08"]
    assert summary["failed"] == ["dgx-h100-09"]
    assert summary["hosts_by_worst_severity"] == {"critical": 2, "warning": 3, "info": 0, "none": 3}


@pytest.mark.parametrize("fail_severity, expected", [("critical", True), ("warning", True), ("info", True)])
def test_failed_threshold_with_a_critical_finding(fail_severity, expected):
    run, hosts, findings, causes = demo_like_inputs()
    report = build_report(dict(run, fail_severity=fail_severity), hosts, findings, causes)
    assert report["summary"]["failed_threshold"] is expected
    assert report["summary"]["fail_severity"] == fail_severity


@pytest.mark.parametrize("fail_severity, expected", [("critical", False), ("warning", True), ("info", True)])
def test_failed_threshold_with_only_warnings(fail_severity, expected):
    hosts = {"a": {"status": "ok", "facts_file": None, "message": None}}
    findings = {"a": [finding("driver.persistence_mode_off", "warning", "a")]}
    report = build_report(dict(RUN, fail_severity=fail_severity), hosts, findings, [])
    assert report["summary"]["failed_threshold"] is expected


def test_no_findings_pass_at_any_threshold():
    hosts = {"a": {"status": "ok", "facts_file": None, "message": None}}
    report = build_report(dict(RUN, fail_severity="info"), hosts, {}, [])
    assert report["summary"]["failed_threshold"] is False
    assert report["hosts"]["a"]["findings"] == []


def test_findings_are_sorted_worst_first_and_kept_per_host(demo_report):
    severities = [f["severity"] for f in demo_report["findings"]]
    assert severities == ["critical", "critical", "warning", "warning", "warning", "warning", "info"]
    assert [f["layer"] for f in demo_report["findings"][:2]] == ["hardware", "driver"]
    assert [f["rule"] for f in demo_report["hosts"]["dgx-h100-01"]["findings"]] == [
        "hardware.xid", "hardware.pcie_link_degraded"]
    assert demo_report["hosts"]["dgx-h100-08"] == {
        "status": "unreachable", "facts_file": None,
        "message": "Failed to connect to the host via ssh: Connection timed out", "findings": []}


def test_hosts_in_natural_order_and_hosts_known_only_from_findings_are_ok():
    findings = {"n10": [finding("hardware.xid", "critical", "n10")]}
    hosts = {"n2": {"status": "ok", "facts_file": None, "message": None},
             "n1": {"status": "failed", "facts_file": None, "message": "boom"}}
    report = build_report(RUN, hosts, findings, [])
    assert list(report["hosts"]) == ["n1", "n2", "n10"]
    assert report["hosts"]["n10"]["status"] == "ok"


def test_causes_worst_first_then_most_hosts():
    causes = [{"id": c, "kind": "driver", "layer": "driver", "severity": sev, "summary": c, "hosts": hosts,
               "evidence": {}, "action": "x"}
              for c, sev, hosts in [("small", "warning", ["a"]), ("big", "warning", ["a", "b", "c"]),
                                    ("bad", "critical", ["a"])]]
    report = build_report(RUN, {}, {}, causes)
    assert [c["id"] for c in report["causes"]] == ["bad", "big", "small"]


def test_report_validates_against_its_schema(demo_report, hostile_report, report_validator):
    assert demo_report["report_version"] == REPORT_VERSION
    report_validator.validate(demo_report)
    report_validator.validate(hostile_report)
    report_validator.validate(json.loads(report_writer.render_json(demo_report)))


def test_schema_rejects_an_unknown_layer_and_a_missing_summary(demo_report, report_validator):
    broken = json.loads(json.dumps(demo_report))
    broken["findings"][0]["layer"] = "firmware"
    assert not report_validator.is_valid(broken)
    missing = json.loads(json.dumps(demo_report))
    del missing["summary"]
    assert not report_validator.is_valid(missing)


def test_run_defaults_are_filled_and_input_not_changed():
    run = {"id": "r1"}
    report = build_report(run, {}, {}, None)
    assert run == {"id": "r1"}
    assert report["run"]["fail_severity"] == "critical"
    assert report["run"]["policy_errors"] == []
    assert report["run"]["finished_at"] is None
    assert report["causes"] == []


def test_an_unknown_fail_severity_is_refused():
    with pytest.raises(ValueError, match="fail_severity 'high'"):
        build_report(dict(RUN, fail_severity="high"), {}, {}, [])


# junit.xml


def test_junit_validates_against_jenkins_schema(demo_report, hostile_report, junit_schema):
    junit_schema.validate(render_junit(demo_report))
    junit_schema.validate(render_junit(hostile_report))


def test_the_junit_schema_rejects_a_suite_without_counts(junit_schema):
    assert junit_schema.is_valid('<testsuites><testsuite name="x" tests="0" failures="0" errors="0"/></testsuites>')
    assert not junit_schema.is_valid('<testsuites><testsuite name="x"/></testsuites>')


def parse_junit(report, rules_run=None):
    root = ElementTree.fromstring(render_junit(report, rules_run).encode("utf-8"))
    cases = {(case.get("classname"), case.get("name")): case for case in root.iter("testcase")}
    return root, cases


def test_junit_every_host_has_a_testcase_in_every_family_plus_collection(demo_report):
    root, cases = parse_junit(demo_report)
    families = ["hardware", "driver", "scheduling", "workload"]
    assert set(cases) == {(family, host) for family in families + ["collection.gpu_facts"]
                          for host in demo_report["hosts"]}
    assert root.get("tests") == str(len(cases)) == str(5 * 8)
    assert [suite.get("name") for suite in root] == ["gpufleet.collection"] + ["gpufleet." + f for f in families]
    assert list(cases[("hardware", "healthy-07")]) == []  # a clean host passes
    hardware = [suite for suite in root if suite.get("name") == "gpufleet.hardware"][0]
    rules_run = hardware.find("properties/property[@name='gpufleet.rules_run']").get("value").split()
    assert rules_run == sorted(rule for rule in RULES_RUN if rule.startswith("hardware."))


def test_junit_a_host_not_collected_has_skipped_testcases(demo_report):
    root, cases = parse_junit(demo_report)
    skipped = cases[("hardware", "dgx-h100-08")].find("skipped")
    assert skipped.get("message") == "not audited: the host's facts were not collected (unreachable)"
    assert cases[("workload", "dgx-h100-09")].find("skipped") is not None
    hardware_suite = [suite for suite in root if suite.get("name") == "gpufleet.hardware"][0]
    assert hardware_suite.get("skipped") == "2"


def test_junit_failures_follow_the_fail_severity_warnings_pass_by_default(demo_report):
    root, cases = parse_junit(demo_report)
    hardware = cases[("hardware", "dgx-h100-01")].find("failure")
    assert hardware.get("type") == "critical"
    assert hardware.get("message") == "hardware.xid"
    assert "[critical] hardware.xid, GPU 00000000:1B:00.0: Xid 79: GPU has fallen off the bus" in hardware.text
    assert "[info] hardware.pcie_link_degraded" in hardware.text and "Gen5 x8" in hardware.text
    warning_only = cases[("scheduling", "dgx-a100-03")]
    assert warning_only.find("failure") is None
    assert warning_only.find("system-out").text.startswith("[warning] scheduling.mig_layout_drift")
    failing = {key for key, case in cases.items() if case.find("failure") is not None}
    assert failing == {("hardware", "dgx-h100-01"), ("driver", "dgx-h100-02")}
    assert root.get("failures") == "2" and root.get("errors") == "2"
    hardware_suite = [suite for suite in root if suite.get("name") == "gpufleet.hardware"][0]
    assert (hardware_suite.get("tests"), hardware_suite.get("failures")) == ("8", "1")


@pytest.mark.parametrize("fail_severity, failing", [
    ("warning", {("hardware", "dgx-h100-01"), ("driver", "dgx-h100-02"), ("scheduling", "dgx-a100-03"),
                 ("workload", "infer-04"), ("driver", "dgx-h100-06")}),
    ("none", set()),
])
def test_junit_fail_severity_warning_makes_warnings_failures_and_none_fails_nothing(fail_severity, failing):
    run, hosts, findings, causes = demo_like_inputs()
    report = build_report(dict(run, fail_severity=fail_severity), hosts, findings, causes)
    root, cases = parse_junit(report)
    assert {key for key, case in cases.items() if case.find("failure") is not None} == failing
    assert root.get("failures") == str(len(failing))
    if fail_severity == "warning":
        assert cases[("scheduling", "dgx-a100-03")].find("failure").get("message") == "scheduling.mig_layout_drift"
    assert report["summary"]["failed_threshold"] is bool(failing)


def test_junit_info_findings_alone_pass_with_their_lines():
    findings = {"a": [finding("hardware.pcie_link_degraded", "info", "a", "00000000:07:00.0", "Gen4 x16 of Gen5")]}
    report = build_report(RUN, {"a": {"status": "ok", "facts_file": None, "message": None}}, findings, [])
    _root, cases = parse_junit(report, ["hardware.pcie_link_degraded"])
    case = cases[("hardware", "a")]
    assert case.find("failure") is None
    assert case.find("system-out").text == "[info] hardware.pcie_link_degraded, GPU 00000000:07:00.0: Gen4 x16 of Gen5"


def test_junit_every_finding_of_a_host_and_family_is_in_its_one_testcase():
    findings = {"a": [finding("hardware.xid", "warning", "a", "00000000:07:00.0", "Xid 13"),
                      finding("hardware.xid", "critical", "a", "00000000:0F:00.0", "Xid 79"),
                      finding("hardware.ecc_uncorrected", "critical", "a", "00000000:0F:00.0", "2 ECC")]}
    report = build_report(RUN, {"a": {"status": "ok", "facts_file": None, "message": None}}, findings, [])
    _root, cases = parse_junit(report, ["hardware.xid", "hardware.ecc_uncorrected"])
    assert list(cases) == [("collection.gpu_facts", "a"), ("hardware", "a")]
    failure = cases[("hardware", "a")].find("failure")
    assert failure.get("type") == "critical"
    assert failure.get("message") == "hardware.ecc_uncorrected, hardware.xid"  # the warning does not fail
    assert failure.text.splitlines() == [
        "[critical] hardware.ecc_uncorrected, GPU 00000000:0F:00.0: 2 ECC",
        "[critical] hardware.xid, GPU 00000000:0F:00.0: Xid 79",
        "[warning] hardware.xid, GPU 00000000:07:00.0: Xid 13"]


def test_junit_failure_text_holds_nothing_of_the_findings_history():
    findings = {"a": [dict(finding("hardware.xid", "critical", "a", "00000000:07:00.0", "Xid 79"),
                           identity="1" * 40, first_seen="2026-02-01T00:00:00Z", runs_open=7)]}
    report = build_report(RUN, {"a": {"status": "ok", "facts_file": None, "message": None}}, findings, [])
    again = dict(findings["a"][0], first_seen="2026-02-03T00:00:00Z", runs_open=8)
    later = build_report(RUN, {"a": {"status": "ok", "facts_file": None, "message": None}}, {"a": [again]}, [])
    failure = parse_junit(report)[1][("hardware", "a")].find("failure")
    assert failure.text == "[critical] hardware.xid, GPU 00000000:07:00.0: Xid 79"
    assert ElementTree.tostring(failure) == ElementTree.tostring(parse_junit(later)[1][("hardware", "a")].find("failure"))


def test_junit_unreachable_and_failed_hosts_are_errors(demo_report):
    root, cases = parse_junit(demo_report)
    unreachable = cases[("collection.gpu_facts", "dgx-h100-08")].find("error")
    assert unreachable.get("type") == "unreachable"
    assert "Connection timed out" in unreachable.get("message")
    assert cases[("collection.gpu_facts", "dgx-h100-09")].find("error").get("type") == "failed"
    assert list(cases[("collection.gpu_facts", "healthy-07")]) == []
    assert root.get("errors") == "2"


def test_junit_rules_run_defaults_to_the_run_record_and_findings(demo_report):
    report = build_report(dict(RUN, rules_run=None), *demo_like_inputs()[1:])
    root = ElementTree.fromstring(render_junit(report).encode("utf-8"))
    ran = {rule for prop in root.iter("property") if prop.get("name") == "gpufleet.rules_run"
           for rule in prop.get("value").split()}
    assert ran == set(report["summary"]["by_rule"])
    root = ElementTree.fromstring(render_junit(report, ["hardware.xid", "custom.big_jobs"]).encode("utf-8"))
    custom = [suite for suite in root if suite.get("name") == "gpufleet.custom"][0]
    assert custom.find("properties/property").get("value") == "custom.big_jobs"


def test_junit_hostile_strings_stay_text(hostile_report):
    _root, cases = parse_junit(hostile_report)
    failure = cases[("workload", HOSTILE_HOST)].find("failure")
    expected = HOSTILE_SUMMARY.replace("\x00", "\\x00").replace("\x1b", "\\x1b")
    assert failure.get("message") == "workload.gpu_oversubscribed"
    assert expected in failure.text


# gpufleet.prom


def metrics(report):
    families = {family.name: family for family in text_string_to_metric_families(render_prometheus(report))}
    return families


def samples(family):
    return {tuple(sorted(s.labels.items())): s.value for s in family.samples}


def test_prometheus_fleet_and_run_metrics(demo_report):
    families = metrics(demo_report)
    assert all(family.type == "gauge" for family in families.values())
    assert families["gpufleet_audit_last_run_timestamp_seconds"].samples[0].value == 1772366590.0
    assert families["gpufleet_audit_duration_seconds"].samples[0].value == 190.0
    assert samples(families["gpufleet_audit_failed_threshold"]) == {(("fail_severity", "critical"),): 1.0}
    assert samples(families["gpufleet_audit_hosts"]) == {
        (("status", "ok"),): 6.0, (("status", "unreachable"),): 1.0, (("status", "failed"),): 1.0}
    fleet = samples(families["gpufleet_fleet_findings"])
    assert len(fleet) == 12
    assert fleet[(("layer", "workload"), ("severity", "warning"))] == 2.0
    assert fleet[(("layer", "scheduling"), ("severity", "critical"))] == 0.0


def test_prometheus_host_metrics(demo_report):
    families = metrics(demo_report)
    up = samples(families["gpufleet_host_up"])
    assert up[(("host", "dgx-h100-08"), ("status", "unreachable"))] == 0.0
    assert up[(("host", "healthy-07"), ("status", "ok"))] == 1.0
    per_host = samples(families["gpufleet_findings"])
    assert per_host[(("host", "infer-04"), ("layer", "workload"), ("severity", "warning"))] == 2.0
    assert not any(dict(labels)["host"] == "healthy-07" for labels in per_host)
    finding_series = samples(families["gpufleet_finding"])
    # a host-wide finding: no GPU labels, the host's name as Hostname (no facts given)
    assert finding_series[(("Hostname", "dgx-h100-02"), ("UUID", ""), ("gpu", ""), ("host", "dgx-h100-02"),
                           ("layer", "driver"), ("modelName", ""), ("pci_bus_id", ""),
                           ("rule", "driver.kernel_userspace_mismatch"), ("severity", "critical"))] == 1.0
    assert len(finding_series) == 7


def test_prometheus_same_rule_twice_on_one_gpu_is_one_series_counting_both():
    findings = {"a": [finding("hardware.xid", "warning", "a", "00000000:07:00.0", "Xid 13"),
                      finding("hardware.xid", "warning", "a", "00000000:07:00.0", "Xid 31")]}
    report = build_report(RUN, {"a": {"status": "ok", "facts_file": None, "message": None}}, findings, [])
    assert [s.value for s in metrics(report)["gpufleet_finding"].samples] == [2.0]


def test_prometheus_causes(demo_report):
    families = metrics(demo_report)
    assert samples(families["gpufleet_cause_hosts"]) == {
        (("cause", "driver:550.54.15"), ("kind", "driver"), ("layer", "driver"), ("severity", "critical")): 2.0}
    assert set(samples(families["gpufleet_cause_host"])) == {
        (("cause", "driver:550.54.15"), ("host", "dgx-h100-01")), (("cause", "driver:550.54.15"), ("host", "dgx-h100-02"))}


def test_prometheus_label_values_are_escaped(hostile_report):
    text = render_prometheus(hostile_report)
    hosts = {s.labels["host"] for s in metrics(hostile_report)["gpufleet_host_up"].samples}
    assert HOSTILE_HOST in hosts
    awkward = build_report(RUN, {'a"b\\c\nd': {"status": "ok", "facts_file": None, "message": None}}, {}, [])
    assert {s.labels["host"] for s in metrics(awkward)["gpufleet_host_up"].samples} == {'a"b\\c\nd'}
    assert 'host="a\\"b\\\\c\\nd"' in render_prometheus(awkward)
    assert all(line.startswith("#") or "{" in line or " " in line for line in text.splitlines())


def test_prometheus_without_times_has_no_timestamp_metrics():
    report = build_report({"id": None}, {}, {}, [])
    families = metrics(report)
    assert "gpufleet_audit_last_run_timestamp_seconds" not in families
    assert families["gpufleet_audit_info"].samples[0].labels["report_version"] == REPORT_VERSION


# terminal


def test_terminal_summary(demo_report):
    text = render_terminal(demo_report, paths=["/r/20260301T120000Z/report.json", "/r/20260301T120000Z/report.html"])
    lines = text.splitlines()
    assert lines[0] == ("gpufleet audit 20260301T120000Z: 8 hosts (6 ok, 1 unreachable, 1 failed), 7 findings")
    assert lines[1].split() == ["layer", "critical", "warning", "info", "total"]
    assert lines[2].split() == ["hardware", "1", "0", "1", "2"]
    assert lines[6].split() == ["all", "2", "4", "1", "7"]
    assert "Likely causes (1):" in lines
    cause = lines.index("  [critical] Driver 550.54.15 is behind the errors on 2 hosts")
    assert lines[cause + 1] == "    2 host(s): dgx-h100-01, dgx-h100-02"
    assert "Unreachable (1): dgx-h100-08" in lines
    assert "Failed (1): dgx-h100-09" in lines
    assert "Result: FAIL - 2 finding(s) at or above critical" in lines
    assert lines[-1] == "Reports: /r/20260301T120000Z/ (report.json, report.html)"


def test_terminal_stays_short_for_a_big_fleet():
    run, hosts, findings, causes = large_inputs(3000, cause_count=9)
    report = build_report(run, hosts, findings, causes)
    lines = render_terminal(report, run_dir="/r/x").splitlines()
    assert len(lines) <= 30
    assert "  ... and 4 more causes (see report.html)" in lines
    unreachable = [line for line in lines if line.startswith("Unreachable (31): ")][0]
    assert unreachable.endswith("... and 25 more")
    assert all(len(line) <= 120 for line in lines)


def test_terminal_pass_and_host_text_on_one_line():
    hosts = {"a\nb": {"status": "unreachable", "facts_file": None, "message": None}}
    text = render_terminal(build_report(RUN, hosts, {}, []))
    assert "Unreachable (1): a b" in text.splitlines()
    assert "Result: PASS - no finding at or above critical" in text.splitlines()


def report_judged_by_none(inputs):
    """A report with fail_severity none (remediate.yml's first audit)."""
    run, hosts, findings, causes = inputs
    return build_report(dict(run, fail_severity="none"), hosts, findings, causes)


def test_fail_severity_none_names_a_real_severity_in_the_summary_and_never_fails():
    report = report_judged_by_none(demo_like_inputs())
    assert report["summary"]["by_severity"]["critical"] > 0
    assert report["run"]["fail_severity"] == "none"
    assert (report["summary"]["fail_severity"], report["summary"]["failed_threshold"]) == ("critical", False)
    assert ("gpufleet.fail_severity", "critical") in [
        (item.get("name"), item.get("value")) for item in ElementTree.fromstring(render_junit(report)).iter("property")]


def test_terminal_says_not_judged_never_pass_over_critical_findings_when_fail_severity_is_none():
    report = report_judged_by_none(demo_like_inputs())
    assert report["summary"]["by_severity"]["critical"] > 0
    lines = render_terminal(report).splitlines()
    result = [line for line in lines if line.startswith("Result: ")]
    by_severity = report["summary"]["by_severity"]
    counts = (by_severity["critical"], by_severity["warning"], by_severity["info"])
    assert result == ["Result: NOT JUDGED - fail_severity is none: findings never fail this run "
                      "(%d critical, %d warning, %d info)" % counts]
    assert "PASS" not in render_html(report)


# report.html (browser checks are in test_report_html_chromium.py)


def test_html_is_self_contained(demo_report):
    page = render_html(demo_report)
    assert page.startswith("<!DOCTYPE html>")
    for needle in ("http://", "https://", " src=", "<link", "@import", "url(", "<iframe"):
        assert needle not in page
    assert page.count("<script") == 2
    assert "default-src 'none'" in CONTENT_SECURITY_POLICY
    assert 'content="%s"' % html.escape(CONTENT_SECURITY_POLICY) in page
    assert "script-src 'sha256-%s'" % SCRIPT_HASH in CONTENT_SECURITY_POLICY
    assert "<script>%s</script>" % SCRIPT in page


def test_html_shows_summary_causes_and_problem_hosts(demo_report):
    page = render_html(demo_report)
    assert page.index('id="causes"') < page.index('id="table-section"')
    assert "Driver 550.54.15 is behind the errors on 2 hosts" in page
    assert "Roll the driver forward on these hosts in a small batch first." in page
    assert '<button class="cell critical" data-layer="hardware" data-severity="critical"' in page
    assert "Failed to connect to the host via ssh: Connection timed out" in page
    assert "FAIL: findings at or above critical" in page


def test_html_table_data_holds_every_finding_and_host(demo_report):
    data = json.loads(embedded_data(render_html(demo_report)))
    assert [host[0] for host in data["hosts"]] == list(demo_report["hosts"])
    assert len(data["rows"]) == len(demo_report["findings"]) + 3
    summaries = {data["strings"][row[5]] for row in data["rows"] if row[5] >= 0}
    assert summaries == {f["summary"] for f in demo_report["findings"]}


def test_html_counts_in_the_heading_the_summary_and_the_table_agree(demo_report):
    page = render_html(demo_report)
    data = json.loads(embedded_data(page))
    finding_rows = [row for row in data["rows"] if row[1] >= 0]
    host_rows = [row for row in data["rows"] if row[1] < 0]
    assert data["counts"] == {"findings": len(finding_rows), "hosts": len(data["hosts"]),
                              "hosts_without_findings": len(host_rows)} == {
        "findings": 7, "hosts": 8, "hosts_without_findings": 3}
    assert '<span class="count">(7 findings on 8 hosts)</span>' in page
    assert '<tr><th>all layers</th>' in page and '<td class="num total">7</td></tr></tbody></table>' in page
    assert "data.counts.findings" in page and "data.counts.hosts_without_findings" in page
    assert '" in all)"' not in page  # the rows, findings and hosts without findings together, no longer


def test_html_escapes_host_strings(hostile_report):
    page = render_html(hostile_report)
    raw = embedded_data(page)
    for needle in ("<", ">", "&"):
        assert needle not in raw
    data = json.loads(raw)
    assert HOSTILE_HOST in [host[0] for host in data["hosts"]]
    assert HOSTILE_PROCESS in json.dumps([row[8] for row in data["rows"]], ensure_ascii=False)
    markup = page.replace(raw, "")
    assert HOSTILE_PROCESS not in markup
    assert "<img" not in markup
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in markup
    assert "evil&quot;&lt;/script&gt;" in markup


# writing


def test_write_reports_writes_all_five_and_points_latest(tmp_path, demo_report):
    root = tmp_path / "reports"
    run_dir = root / "20260301T120000Z"
    paths = write_reports(demo_report, str(run_dir), str(root))
    assert [os.path.basename(p) for p in paths] == [
        "report.json", "report.html", "junit.xml", "gpufleet.prom", "findings.ndjson"]
    assert os.readlink(root / "latest") == "20260301T120000Z"
    with open(root / "latest" / "report.json", encoding="utf-8") as stream:
        assert json.load(stream)["summary"] == json.loads(json.dumps(demo_report["summary"]))
    assert sorted(os.listdir(run_dir)) == ["findings.ndjson", "gpufleet.prom", "junit.xml", "report.html", "report.json"]
    assert sorted(os.listdir(root)) == ["20260301T120000Z", "latest"]
    assert oct(os.stat(paths[0]).st_mode & 0o777) == "0o644"


def test_compress_writes_report_json_gz_beside_report_json(tmp_path, demo_report):
    root = tmp_path / "reports"
    paths = write_reports(demo_report, str(root / "a"), str(root), compress=True)
    assert os.path.basename(paths[-1]) == "report.json.gz"
    plain = (root / "a" / "report.json").read_bytes()
    packed = (root / "a" / "report.json.gz").read_bytes()
    assert gzip.decompress(packed) == plain
    assert len(packed) < len(plain) / 3, (len(packed), len(plain))
    assert oct(os.stat(paths[-1]).st_mode & 0o777) == "0o644"
    write_reports(demo_report, str(root / "b"), str(root), compress=True)
    assert (root / "b" / "report.json.gz").read_bytes() == packed  # no time in the gzip header


def test_latest_moves_only_after_a_complete_run(tmp_path, demo_report, monkeypatch):
    root = tmp_path / "reports"
    write_reports(demo_report, str(root / "run1"), str(root))

    def broken(_report):
        raise RuntimeError("renderer failed")

    monkeypatch.setattr(report_writer, "renderers",
                        lambda inventory=None: report_writer.RENDERERS[:2] + (("junit.xml", broken),))
    with pytest.raises(RuntimeError):
        write_reports(demo_report, str(root / "run2"), str(root))
    assert os.readlink(root / "latest") == "run1"
    assert sorted(os.listdir(root / "run2")) == ["report.html", "report.json"]
    monkeypatch.undo()
    write_reports(demo_report, str(root / "run2"), str(root))
    assert os.readlink(root / "latest") == "run2"
    assert sorted(os.listdir(root)) == ["latest", "run1", "run2"]


def test_overlapping_audits_leave_latest_at_the_run_that_started_later(tmp_path, demo_report):
    root = tmp_path / "reports"
    # the later audit finishes first; the earlier one, finishing after it, must not move latest back
    write_reports(demo_report, str(root / "20260301T120500Z"), str(root))
    write_reports(demo_report, str(root / "20260301T120000Z-incident"), str(root))
    assert os.readlink(root / "latest") == "20260301T120500Z"
    # a run that started later still moves it, and so does one of the same second (the later finisher)
    write_reports(demo_report, str(root / "20260301T121000Z"), str(root))
    assert os.readlink(root / "latest") == "20260301T121000Z"
    write_reports(demo_report, str(root / "20260301T121000Z-2"), str(root))
    assert os.readlink(root / "latest") == "20260301T121000Z-2"
    assert not [name for name in os.listdir(root) if name.endswith(".tmp")]


def test_latest_partial_keeps_the_newer_partial_run_too(tmp_path, demo_report):
    root = tmp_path / "reports"
    partial = dict(demo_report, run=dict(demo_report["run"], status="partial"))
    write_reports(partial, str(root / "20260301T120500Z"), str(root))
    write_reports(partial, str(root / "20260301T120000Z"), str(root))
    assert os.readlink(root / "latest-partial") == "20260301T120500Z"
    assert not os.path.lexists(root / "latest")


def test_the_link_check_and_move_wait_for_the_lock_another_writer_holds(tmp_path, demo_report):
    import threading
    root = tmp_path / "reports"
    root.mkdir()
    moved = []
    with run_folder.links_locked(str(root)):
        writer = threading.Thread(target=lambda: moved.append(
            run_folder.point_latest(str(root / "20260301T120000Z"), str(root))))
        writer.start()
        writer.join(0.5)
        # the other writer waits while the lock is held: nothing moved yet
        assert writer.is_alive() and not os.path.lexists(root / "latest")
    writer.join(5)
    assert moved == [str(root / "latest")] and os.readlink(root / "latest") == "20260301T120000Z"


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path, monkeypatch):
    target = tmp_path / "report.json"
    target.write_text("old")

    def disk_full(_fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(run_folder.os, "fsync", disk_full)
    with pytest.raises(OSError, match="No space"):
        run_folder.write_atomically(str(target), "new text")
    assert target.read_text() == "old"
    assert os.listdir(tmp_path) == ["report.json"]


def test_a_lone_surrogate_from_a_host_does_not_stop_the_reports(tmp_path, report_validator):
    host = "bad\udc80name"
    hosts = {host: {"status": "unreachable", "facts_file": None, "message": "decoded from \\udc80"}}
    report = build_report(RUN, hosts, {host: [finding("hardware.xid", "critical", host, summary=host)]}, [])
    paths = write_reports(report, str(tmp_path / "run"), str(tmp_path))
    for path in paths:
        with open(path, encoding="utf-8") as stream:
            stream.read()
    with open(paths[0], encoding="utf-8") as stream:
        assert list(json.load(stream)["hosts"]) == [host]
    with open(paths[3], encoding="utf-8") as stream:
        assert {s.labels["host"] for f in text_string_to_metric_families(stream.read())
                if f.name == "gpufleet_host_up" for s in f.samples} == {"bad\ufffdname"}
    load_junit_schema().validate(paths[2])
    assert "Unreachable (1): bad\\udc80name" in render_terminal(report).splitlines()


def test_latest_that_is_a_real_directory_is_refused(tmp_path, demo_report):
    root = tmp_path / "reports"
    (root / "latest").mkdir(parents=True)
    with pytest.raises(OSError, match="real directory"):
        write_reports(demo_report, str(root / "run1"), str(root))


def test_run_dir_outside_the_root_gets_an_absolute_link(tmp_path, demo_report):
    write_reports(demo_report, str(tmp_path / "elsewhere" / "run1"), str(tmp_path / "reports"))
    assert os.readlink(tmp_path / "reports" / "latest") == str(tmp_path / "elsewhere" / "run1")


# size


def test_a_big_fleet_reports_every_finding(tmp_path):
    run, hosts, findings, causes = large_inputs(2000, findings_per_host=3, cause_count=3)
    started = time.perf_counter()
    report = build_report(run, hosts, findings, causes)
    paths = write_reports(report, str(tmp_path / "run"), str(tmp_path))
    render_terminal(report, paths)
    record_timing("reports of 2000 hosts", time.perf_counter() - started)  # recorded, never asserted
    assert report["summary"]["hosts"]["unreachable"] == 21
    assert len(report["findings"]) == 3 * (2000 - 21)


# any text from a host


@settings(max_examples=40, deadline=None)
@given(host=st.text(min_size=1, max_size=30), text=st.text(min_size=1, max_size=60))
def test_any_host_text_stays_data_in_every_format(host, text):
    junit_schema = load_junit_schema()
    hosts = {host: {"status": "ok", "facts_file": None, "message": None}}
    findings = {host: [finding("hardware.xid", "critical", host, text, text, {text: text}, text)]}
    report = build_report(RUN, hosts, findings, [])
    junit = render_junit(report)
    junit_schema.validate(junit)
    case = ElementTree.fromstring(junit.encode("utf-8")).find(".//testcase[@classname='hardware']")
    assert case.get("name") == report_junit_safe(host).replace("\n", "\n")
    assert case.find("failure").text.endswith(": " + report_junit_safe(text))
    labels = {s.labels["host"] for s in metrics(report)["gpufleet_host_up"].samples}
    assert labels == {host}
    page = render_html(report)
    raw = embedded_data(page)
    assert "<" not in raw and ">" not in raw and "&" not in raw
    assert json.loads(raw)["hosts"][0][0] == report_html_safe(host)


def report_html_safe(text):
    """What report.html shows of the text: controls and bidi overrides as visible escapes."""
    from ansible_collections.gpufleet.core.plugins.plugin_utils.text_safety import safe_text  # pylint: disable=import-outside-toplevel
    return safe_text(text)


def report_junit_safe(text):
    """What junit.xml carries of the text: every control, format character, surrogate or XML non-character
    as a visible escape (text_safety.safe_xml_text); tab and newline as they are, CRLF as a newline."""
    import unicodedata  # pylint: disable=import-outside-toplevel
    from ansible_collections.gpufleet.core.plugins.plugin_utils.text_safety import escape_character
    text = text.replace("\r\n", "\n")
    return "".join(c if c in "\t\n" or unicodedata.category(c) not in ("Cc", "Cf", "Cs", "Zl", "Zp")
                   and c not in "\ufffe\uffff" else escape_character(c) for c in text)


def test_hosts_sort_naturally_and_odd_digits_stay_text():
    names = ["node-10", "node-2", "\u00b9", "node-\u00b2"]
    assert sorted(names, key=host_sort_key) == ["node-2", "node-10", "node-\u00b2", "\u00b9"]
