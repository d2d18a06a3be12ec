"""Debian's promtool (package prometheus) for the tests: PromQL evaluated on series from exposition text
(`promtool test rules`), so a test can join gpufleet.prom with dcgm-exporter's metrics and unit-test the alert
rules.

Without promtool the tests skip with the reason; under `make test` (GPUFLEET_PROMETHEUS_REQUIRED=1, set by the
Makefile) a missing promtool fails them (tools/ensure_system_packages.sh installs it)."""

import json
import os
import shutil
import subprocess

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

REQUIRED_ENV = "GPUFLEET_PROMETHEUS_REQUIRED"
PROMTOOL_TIMEOUT = 120


def required():
    return os.environ.get(REQUIRED_ENV, "").strip() not in ("", "0", "false", "no")


def binary(name):
    """The path of a Prometheus binary (promtool, prometheus, prometheus-node-exporter); skips (fails under
    GPUFLEET_PROMETHEUS_REQUIRED) when it is not installed."""
    path = shutil.which(name) or (os.path.join("/usr/bin", name) if os.path.exists(os.path.join("/usr/bin", name))
                                  else None)
    if path is None:
        reason = "%s is not installed (Debian package prometheus / prometheus-node-exporter)" % name
        if required():
            pytest.fail("%s, and %s is set: the Prometheus tests must run" % (reason, REQUIRED_ENV), pytrace=False)
        pytest.skip(reason)
    return path


def selector(name, labels):
    """name{label="value",...} as promtool's input_series reads it; an empty value is no label, as a scrape
    stores it."""
    pairs = ",".join("%s=%s" % (key, json.dumps(value)) for key, value in sorted(labels.items()) if value != "")
    return "%s{%s}" % (name, pairs)


def input_series(*texts, points=10):
    """promtool input_series of every sample of the exposition texts, constant over points minutes."""
    series = []
    for text in texts:
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                series.append({"series": selector(sample.name, sample.labels),
                               "values": "%s+0x%d" % (repr(float(sample.value)), points)})
    return series


def run_rule_tests(folder, tests, rule_files=()):
    """Writes tests (promtool's unit test document) into folder and runs `promtool test rules` on it;
    returns the completed process."""
    path = os.path.join(str(folder), "promtool-tests.yml")
    with open(path, "w", encoding="utf-8") as handle:
        yaml.safe_dump({"rule_files": [os.path.abspath(name) for name in rule_files], "evaluation_interval": "1m",
                        "tests": tests}, handle, sort_keys=False)
    return subprocess.run([binary("promtool"), "test", "rules", path], capture_output=True, text=True,
                          timeout=PROMTOOL_TIMEOUT, check=False)
