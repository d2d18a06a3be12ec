"""validate.yml on the demo fleet (issue 28): the demo's hosts replay recorded facts, so their active checks are
replayed from recorded gpu_validate results (tests/fixtures/validation/demo_validation.json, the builders of
tests/support/validation_builders.py); the audit judges them with everything else: one report, one store record."""

import json
import os
import sqlite3
import subprocess
import sys
import zlib

from ansible_collections.gpufleet.core.plugins.plugin_utils.reports.format import expanded
from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.active_checks import validation_summary

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PLAYBOOK_BIN = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")
FIXTURE = os.path.join(ROOT, "tests", "fixtures", "validation", "demo_validation.json")
HOSTS = "gpu-h100-ok-01,gpu-h100-pcie-06,gpu-h100-thermal-05,gpu-h100-nvlink-12"


def validate(report_dir, *extra):
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_NOCOLOR="1")
    env.pop("GPUFLEET_STORE_URL", None)
    return subprocess.run([PLAYBOOK_BIN, "validate.yml", "-e", "gpufleet_report_dir=%s" % report_dir] + list(extra),
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=600, check=False)


def latest_report(report_dir, link="latest-partial"):
    with open(os.path.join(report_dir, link, "report.json"), encoding="utf-8") as stream:
        return expanded(json.load(stream))


def validation_findings(report, host):
    return sorted((f["rule"], f["severity"], f["gpu"]) for f in report["findings"]
                  if f["host"] == host and "validation" in f["rule"])


def test_validate_judges_the_replayed_checks_in_one_report_and_one_store_record(tmp_path):
    completed = validate(str(tmp_path), "-l", HOSTS, "-e", "gpufleet_validation_fixture=%s" % FIXTURE)
    assert completed.returncode == 2, completed.stdout[-3000:]  # the failed memory test is critical
    report = latest_report(str(tmp_path))
    assert report["run"]["id"].endswith("-validate")
    assert validation_findings(report, "gpu-h100-ok-01") == []
    assert validation_findings(report, "gpu-h100-pcie-06") == [
        ("hardware.validation_bandwidth_low", "warning", "0000:5d:00.0"),
        ("hardware.validation_below_peers", "warning", "0000:5d:00.0"),
        ("hardware.validation_dcgm_failed", "critical", "0000:5d:00.0")]
    assert validation_findings(report, "gpu-h100-thermal-05") == [("driver.validation_nccl_failed", "warning", None)]
    # a host without a recorded result is not passed: it is reported as not tested
    assert validation_findings(report, "gpu-h100-nvlink-12") == [("driver.validation_not_run", "warning", None)]
    low = [f for f in report["findings"] if f["rule"] == "hardware.validation_bandwidth_low"][0]["evidence"]
    assert (low["measured_gbs"], low["expected_gbs"], low["link"]) == (18.0, 50.41, "PCIe Gen5 x16")
    checks = report["hosts"]["gpu-h100-pcie-06"]["validation"]["checks"]
    assert checks["dcgm_diag"]["tests"][1] == {"name": "memory", "status": "fail", "failed_gpus": [3]}
    page = (tmp_path / "latest-partial" / "report.html").read_text(encoding="utf-8")
    assert '<section id="validation">' in page and "memory: fail on GPU 3" in page

    connection = sqlite3.connect(str(tmp_path / "gpufleet.sqlite"))
    [(blob,)] = connection.execute("SELECT data FROM facts WHERE host = 'gpu-h100-pcie-06'").fetchall()
    stored = json.loads(zlib.decompress(blob))
    assert validation_summary(stored) == report["hosts"]["gpu-h100-pcie-06"]["validation"]
    rows = connection.execute("SELECT rule, data FROM findings WHERE host = 'gpu-h100-pcie-06' AND rule LIKE "
                              "'hardware.validation_%'").fetchall()
    assert sorted(rule for rule, _data in rows) == ["hardware.validation_bandwidth_low", "hardware.validation_below_peers",
                                                    "hardware.validation_dcgm_failed"]
    assert {"measured_gbs": 18.0}.items() <= json.loads(dict(rows)["hardware.validation_bandwidth_low"])["evidence"].items()


def test_validate_runs_nowhere_unless_told_where(tmp_path):
    completed = validate(str(tmp_path))
    assert completed.returncode == 4
    assert "runs only on the hosts you name" in completed.stdout
    assert not os.path.exists(tmp_path / "latest-partial") and not os.path.exists(tmp_path / "latest")


def test_a_replayed_host_is_refused_without_recorded_results_and_check_mode_runs_nothing(tmp_path):
    completed = validate(str(tmp_path / "run"), "-l", "gpu-h100-ok-01")
    assert completed.returncode == 0, completed.stdout[-3000:]
    report = latest_report(str(tmp_path / "run"))
    [finding] = [f for f in report["findings"] if f["rule"] == "driver.validation_not_run"]
    assert "the node was refused" in finding["summary"] and "replay" in finding["summary"]
    assert report["hosts"]["gpu-h100-ok-01"]["validation"]["checks"]["dcgm_diag"]["status"] == "refused"

    checked = validate(str(tmp_path / "check"), "-l", "gpu-h100-ok-01", "--check")
    assert checked.returncode == 0
    assert "gpu-h100-ok-01: refused: " in checked.stdout
    assert not os.path.exists(tmp_path / "check")
