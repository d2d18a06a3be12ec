"""The shipped alert rules (contrib/prometheus/gpufleet-alerts.yml) pass `promtool check rules` and their unit
tests (`promtool test rules`: every alert firing and not firing), as `make test-prometheus` runs them."""

import os
import re
import subprocess

import yaml

from tests.support.promtool import PROMTOOL_TIMEOUT, binary
from tests.support.schema_check import ROOT

RULES = os.path.join(ROOT, "contrib", "prometheus", "gpufleet-alerts.yml")
RULE_TESTS = os.path.join(ROOT, "contrib", "prometheus", "tests", "gpufleet-alerts.test.yml")
ALERTS = {"GpufleetCriticalFindings", "GpufleetGpuLost", "GpufleetRunNotComplete", "GpufleetHostsNotAudited",
          "GpufleetAuditNotOnSchedule", "GpufleetAuditMissing", "GpufleetStoreNotWritten"}


def promtool(*arguments):
    return subprocess.run([binary("promtool")] + list(arguments), capture_output=True, text=True,
                          timeout=PROMTOOL_TIMEOUT, check=False)


def test_promtool_checks_the_rules():
    result = promtool("check", "rules", RULES)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS: %d rules found" % len(ALERTS) in result.stdout


def test_promtool_unit_tests_pass():
    result = promtool("test", "rules", RULE_TESTS)
    assert result.returncode == 0, result.stdout + result.stderr


def test_every_alert_is_tested_firing_and_not_firing():
    with open(RULES, encoding="utf-8") as handle:
        alerts = {rule["alert"] for group in yaml.safe_load(handle)["groups"] for rule in group["rules"]}
    assert alerts == ALERTS
    with open(RULE_TESTS, encoding="utf-8") as handle:
        cases = [case for test in yaml.safe_load(handle)["tests"] for case in test["alert_rule_test"]]
    firing = {case["alertname"] for case in cases if case["exp_alerts"]}
    silent = {case["alertname"] for case in cases if not case["exp_alerts"]}
    assert firing == ALERTS and silent == ALERTS


def test_the_schedule_parameter_is_documented_where_it_is_set():
    with open(RULES, encoding="utf-8") as handle:
        text = handle.read()
    assert re.search(r"time\(\) - gpufleet_audit_last_run_timestamp_seconds > 26 \* 3600", text)
    with open(os.path.join(ROOT, "docs", "monitoring.md"), encoding="utf-8") as handle:
        assert "26 * 3600" in handle.read()
