"""validate.yml on the simulated fleet (scenario `validate`: four idle 2x H100 nodes with the simulated dcgmi,
nvbandwidth and all_reduce_perf, failures injected in the simulator's state): it refuses a busy node, passes a
healthy one, and turns a failed memory test, a bandwidth far below its peers and an NCCL failure into findings with
their figures, in report.json, report.html and the store; and a driver rollout whose policy verifies with the active
checks stops on a node that fails them (scenario `driver`)."""

import json
import os
import sqlite3
import tempfile
import zlib

import pytest

from ansible_collections.gpufleet.core.plugins.plugin_utils.reports.format import expanded
from test_driver_rollout import START, PIN, hook_log, hook_policy, read_log, rollout, versions

STATE_FILE = "/var/lib/gpufleet-sim/state.json"


@pytest.fixture(scope="module")
def validate_fleet(fleet):
    previous = fleet.scenario
    fleet.use_scenario("validate")
    yield fleet
    fleet.use_scenario(previous)


def validation_findings(report, host):
    return sorted((f["rule"], f["severity"], f["gpu"]) for f in report["findings"]
                  if f["host"] == host and ".validation_" in f["rule"])


def validate(fleet, report_dir, **extra):
    run = fleet.playbook("validate.yml", extra_vars=dict({"gpufleet_report_dir": report_dir}, **extra))
    folders = sorted(name for name in os.listdir(report_dir) if name.endswith("-validate"))
    with open(os.path.join(report_dir, folders[-1], "report.json")) as stream:
        return run, folders[-1], expanded(json.load(stream))


def test_validate_passes_the_healthy_node_judges_the_others_and_refuses_a_busy_one(validate_fleet):
    fleet = validate_fleet
    report_dir = tempfile.mkdtemp(prefix="validate-")
    run, folder, report = validate(fleet, report_dir, gpufleet_audit_hosts="all")
    assert run.rc == 2, run.output()  # the failed memory test is critical
    hosts = report["hosts"]

    assert validation_findings(report, "fleet-01") == []
    assert {name: check["status"] for name, check in hosts["fleet-01"]["validation"]["checks"].items()} == {
        "dcgm_diag": "passed", "nvbandwidth": "passed", "nccl_all_reduce": "passed"}

    memory = [f for f in report["findings"] if f["host"] == "fleet-02" and f["rule"] == "hardware.validation_dcgm_failed"]
    assert [(f["severity"], f["evidence"]["gpu_index"], f["evidence"]["level"]) for f in memory] == [("critical", 1, 2)]
    assert "Memory" in memory[0]["evidence"]["test"]

    low = {f["rule"]: f["evidence"] for f in report["findings"] if f["host"] == "fleet-03"
           and f["rule"] in ("hardware.validation_below_peers", "hardware.validation_bandwidth_low")
           and f["evidence"]["testcase"] == "host_to_device_memcpy_ce"}
    assert set(low) == {"hardware.validation_below_peers", "hardware.validation_bandwidth_low"}
    peers = low["hardware.validation_below_peers"]
    assert peers["measured_gbs"] < 0.5 * peers["peer_median_gbs"] and peers["link"] == "PCIe Gen5 x16"
    assert low["hardware.validation_bandwidth_low"]["expected_gbs"] == 50.41

    [nccl] = [f for f in report["findings"] if f["host"] == "fleet-04" and f["rule"].endswith(".validation_nccl_failed")]
    assert "unhandled system error" in nccl["evidence"]["error_text"]

    with open(os.path.join(report_dir, folder, "report.html")) as stream:
        page = stream.read()
    section = page[page.index('<section id="validation">'):]
    assert "<code>fleet-03</code>" in section and "of 50.41 expected (PCIe Gen5 x16)" in section

    connection = sqlite3.connect(os.path.join(report_dir, "gpufleet.sqlite"))
    [(blob,)] = connection.execute("SELECT data FROM facts WHERE host = 'fleet-02'").fetchall()
    stored = json.loads(zlib.decompress(blob))
    assert stored["validation"]["checks"]["dcgm_diag"]["status"] == "failed"
    rules = [row[0] for row in connection.execute("SELECT rule FROM findings WHERE host = 'fleet-02'")]
    assert "hardware.validation_dcgm_failed" in rules

    # the healthy node, now running a GPU service, is refused: reported, not passed
    fleet.ssh("fleet-01", "systemctl start trainer.service", check=True)
    try:
        run, _folder, report = validate(fleet, report_dir, gpufleet_audit_hosts="fleet-01")
    finally:
        fleet.ssh("fleet-01", "systemctl stop trainer.service", check=True)
    assert run.rc == 0, run.output()
    busy = report["hosts"]["fleet-01"]["validation"]
    assert busy["refused"]["reason"].startswith("GPU compute processes are running: pid ")
    assert {check["status"] for check in busy["checks"].values()} == {"refused"}
    assert [f[0] for f in validation_findings(report, "fleet-01")] == ["driver.validation_not_run"]


def inject(fleet, host, diagnostics):
    script = ("import json; p=%r; s=json.load(open(p)); s['diagnostics']=%r; json.dump(s, open(p, 'w'))"
              % (STATE_FILE, diagnostics))
    fleet.ssh(host, "python3 -c %s" % json.dumps(script), check=True)


def test_a_rollout_that_verifies_with_the_active_checks_stops_on_a_failing_node(fleet):
    previous = fleet.scenario
    fleet.use_scenario("driver")
    try:
        inject(fleet, "fleet-01", {"memory_fail_gpus": [0]})
        log = hook_log()
        extra = dict(hook_policy(log), gpufleet_policy_zz_validate={"validation": {
            "verify_after": ["driver_rollout"], "checks": ["dcgm_diag"], "dcgm_level": 2}})
        run, report = rollout(fleet, extra)
        assert run.rc != 0
        assert report["failed"] == ["fleet-01"] and report["untouched"] == ["fleet-02", "fleet-03", "fleet-04"]
        assert report["stopped"] is True and report["stopped_after_batch"] == 1
        assert "the active checks after the change failed" in report["hosts"]["fleet-01"]["msg"]
        assert "hardware.validation_dcgm_failed" in report["hosts"]["fleet-01"]["msg"]
        # the driver changed and the node stays drained (no undrain hook ran)
        assert read_log(log) == [["drain", "fleet-01", PIN]]
        assert versions(fleet, ["fleet-01"]) == {"fleet-01": (PIN + "-1", PIN)}
        assert set(versions(fleet, ["fleet-02", "fleet-03", "fleet-04"]).values()) == {(START + "-1", START)}
    finally:
        fleet.use_scenario(previous)


def test_remediate_that_verifies_with_the_active_checks_leaves_a_failing_node_not_converged(validate_fleet):
    fleet = validate_fleet
    fleet.recreate()
    report_dir = tempfile.mkdtemp(prefix="remediate-validate-")
    policy = {"gpufleet_policy_zz_verify": {"persistence_mode": True, "validation": {"verify_after": ["remediate"]}}}
    run = fleet.playbook("remediate.yml", limit="fleet-01,fleet-02",
                         extra_vars=dict(policy, gpufleet_report_dir=report_dir))
    assert run.rc == 2, run.output()
    with open(os.path.join(report_dir, "latest-partial", "remediation.json")) as handle:
        record = json.load(handle)
    # both hosts got persistence mode; fleet-02's GPU 1 then failed DCGM's memory test
    assert record["not_converged"] == ["fleet-02"]
    cleared = {(f["host"], f["rule"]) for f in record["cleared"]}
    assert cleared >= {("fleet-01", "driver.persistence_mode"), ("fleet-02", "driver.persistence_mode")}
    assert ("fleet-02", "hardware.validation_dcgm_failed") in {(f["host"], f["rule"]) for f in record["new"]}
    assert "not converged: the active checks after remediation failed" in run.stdout
    fleet.recreate()
