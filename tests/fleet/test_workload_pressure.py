"""gather_subsets workload and host_pressure on the simulated fleet (scenario `workload`): a GPU service that
logs PyTorch's CUDA out-of-memory error in its journal at every start and that systemd restarts every second
is audited; the facts hold its restarts, the journal's OOM lines, its GPU processes' environment and the host
pressure sample, and the report has the crash loop."""

import json
import time

import pytest

from ansible_collections.gpufleet.core.plugins.plugin_utils.reports.format import expanded

UNIT = "inference.service"
HOST = "fleet-01"
RESTARTS = 3


@pytest.fixture(scope="module")
def workload_fleet(fleet):
    previous = fleet.scenario
    if previous != "workload":
        fleet.use_scenario("workload")
    yield fleet
    if previous != "workload":
        fleet.use_scenario(previous)


def restarts(fleet):
    answer = fleet.ssh(HOST, "systemctl show -p NRestarts --value %s" % UNIT, check=True).stdout.strip()
    return int(answer or 0)


@pytest.fixture(scope="module")
def audited(workload_fleet, tmp_path_factory):
    """The audit's report and fleet-01's facts, once systemd restarted the service RESTARTS times."""
    deadline = time.monotonic() + 60
    while restarts(workload_fleet) < RESTARTS:
        assert time.monotonic() < deadline, workload_fleet.ssh(HOST, "systemctl status --no-pager %s" % UNIT).stdout
        time.sleep(1)
    report_dir = tmp_path_factory.mktemp("reports")
    # every host of the scenario (the others are CPU nodes): a whole run, so its folder is "latest"
    run = workload_fleet.playbook("audit.yml", extra_vars={"gpufleet_report_dir": str(report_dir)})
    assert run.rc in (0, 2), run.output()
    run_dir = report_dir / "latest"
    report = expanded(json.loads((run_dir / "report.json").read_text()))
    facts = json.loads((run_dir / "facts" / (HOST + ".json")).read_text())
    return report, facts


def service(facts):
    return next(item for item in facts["workload"]["services"] if item["unit"] == UNIT)


def test_the_facts_hold_the_restarts_and_the_journals_cuda_oom(audited):
    _report, facts = audited
    inference = service(facts)
    assert "workload" in facts["gather_subset"] and "host_pressure" in facts["gather_subset"]
    assert inference["restarts"] >= RESTARTS
    assert inference["journal"]["status"] == "read"
    oom = inference["journal"]["matches"]["cuda_oom"]
    assert oom["count"] >= RESTARTS
    assert "CUDA out of memory" in oom["first"]["message"] and oom["last"]["time"] >= oom["first"]["time"]
    assert inference["frameworks"]["status"] == "read" and inference["frameworks"]["interpreter"] == "/usr/bin/python3"
    assert inference["frameworks"]["packages"] == []  # the simulated workload imports no framework


def test_the_gpu_processes_environment_is_read_as_root(audited):
    _report, facts = audited
    for process in service(facts)["processes"]:
        assert process["environment"] == {"CUDA_VISIBLE_DEVICES": "0"}
        assert process["gpu_index"] == 0


def test_host_pressure_is_sampled_with_gpu_utilization(audited):
    _report, facts = audited
    pressure = facts["host_pressure"]
    assert 0.9 <= pressure["sample_seconds"] <= 2.0
    assert [sample["index"] for sample in pressure["gpu_utilization"]] == [0, 1]
    assert pressure["gpu_utilization_source"] == "nvidia-smi"
    assert pressure["cpus"] >= 1 and pressure["memory"]["available_mib"] > 0
    assert pressure["pressure"]["cpu"] is None or 0.0 <= pressure["pressure"]["cpu"]["some_pct"] <= 100.0


def test_the_audit_reports_the_crash_loop(audited):
    report, _facts = audited
    (loop,) = [f for f in report["hosts"][HOST]["findings"] if f["rule"] == "workload.crash_loop"]
    assert loop["evidence"]["restarts"] >= RESTARTS
    assert loop["evidence"]["journal_failures"]["cuda_oom"] >= RESTARTS
    # caught waiting to restart: the failed start's exit; caught running: the new process has not exited
    assert loop["evidence"]["last_exit"] in ({"code": "exited", "status": 1, "signal": None},
                                             {"code": None, "status": 0, "signal": None})
    assert loop["severity"] == ("critical" if loop["evidence"]["active_state"] != "active" else "warning")
