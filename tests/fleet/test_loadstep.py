"""loadstep.yml on the simulated fleet (scenario loadstep): the same service breaks in a different layer on
each host - out of GPU memory at 8 workers (workload), a power-cap throttle at 4 (hardware), Xid 119 with the
fourth worker (driver, by the Xid catalog) - and a host the policy does not allow is refused. Every host is
left as it was. A second run on fleet-01 after a fix (less memory per worker) is compared with the first.

One run of the playbook for all four hosts in the module fixture; each test reads one part of it.
"""

import glob
import json
import os
import types

import pytest

SERVICE = "loadtest.service"
FIX = "/etc/systemd/system/loadtest.service.d/10-fleet-test-smaller-workers.conf"


def loadstep_document(report_dir):
    runs = sorted(glob.glob(os.path.join(report_dir, "*-loadstep", "loadstep.json")))
    assert runs, "no loadstep.json in %s" % report_dir
    with open(runs[-1]) as handle:
        return runs[-1], json.load(handle)


def host_state(fleet, host):
    """What must be the same before and after: the GPU processes, the service's state, leftover load records."""
    shown = fleet.ssh(host, "nvidia-smi --query-compute-apps=pid --format=csv,noheader; echo --; "
                            "systemctl is-active %s; echo --; ls /run/gpufleet-loadstep 2>/dev/null; "
                            "pgrep -fc '[g]pu-(worker|load)'" % SERVICE).stdout
    return shown


@pytest.fixture(scope="module")
def loadstep_fleet(fleet):
    """The fleet rebuilt with the loadstep scenario for this module, then with the one it had before."""
    previous = fleet.scenario
    if previous != "loadstep":
        fleet.use_scenario("loadstep")
    yield fleet
    if previous != "loadstep":
        fleet.use_scenario(previous)


@pytest.fixture(scope="module")
def loadstep_run(loadstep_fleet, tmp_path_factory):
    fleet = loadstep_fleet
    hosts = ["fleet-01", "fleet-02", "fleet-03", "fleet-04"]
    report_dir = str(tmp_path_factory.mktemp("loadstep-reports"))
    before = {host: host_state(fleet, host) for host in hosts}
    run = fleet.playbook("loadstep.yml", limit=hosts,
                         extra_vars={"gpufleet_load_service": SERVICE, "gpufleet_report_dir": report_dir})
    path, document = loadstep_document(report_dir)
    after = {host: host_state(fleet, host) for host in hosts}
    runs = {entry["host"]: entry for entry in document["runs"]}
    return types.SimpleNamespace(run=run, path=path, document=document, runs=runs, before=before, after=after,
                                 report_dir=report_dir)


def test_the_run_measures_the_allowed_hosts_and_refuses_the_other(loadstep_run):
    run = loadstep_run.run
    assert run.rc == 2, run.output()  # fleet-04 was refused
    assert run.stats["fleet-04"]["failed"] == 1
    assert all(run.stats[host]["failed"] == 0 for host in ("fleet-01", "fleet-02", "fleet-03")), run.output()
    refused = loadstep_run.runs["fleet-04"]
    assert refused["status"] == "refused" and refused["steps"] == []
    assert any("loadstep.allowed" in reason for reason in refused["refusals"])
    assert loadstep_run.document["schema"] == "gpufleet.loadstep" and loadstep_run.document["version"] == "1.0"


def test_out_of_memory_breaks_at_8_workers_in_the_workload_layer(loadstep_run):
    entry = loadstep_run.runs["fleet-01"]
    assert entry["mode"] == "service" and entry["status"] == "complete"
    assert [step["concurrency"] for step in entry["steps"]] == [1, 2, 4, 8]
    assert entry["broke"]["concurrency"] == 8 and entry["broke"]["reason"] == "oom"
    assert entry["broke"]["layer"] == "workload"
    assert "CUDA out of memory" in entry["steps"][-1]["load"]["stderr_tail"]
    # one worker holds 12000 MiB: the memory each added worker costs
    assert [step["memory_per_added_worker_mib"] for step in entry["steps"][:3]] == [12000.0, 12000.0, 12000.0]
    assert entry["steps"][2]["gpus"][0]["processes_peak"] == 4
    assert entry["suggestion"]["workers_per_gpu"] == 4
    assert entry["suggestion"]["fragment"] == {
        "gpufleet_policy_loadstep": {"workload": {"services": {SERVICE: {"workers_per_gpu": 4}}}}}


def test_a_power_cap_throttle_breaks_at_4_workers_in_the_hardware_layer(loadstep_run):
    entry = loadstep_run.runs["fleet-02"]
    assert entry["mode"] == "command"
    assert [step["concurrency"] for step in entry["steps"]] == [1, 2, 4]
    assert (entry["broke"]["concurrency"], entry["broke"]["reason"], entry["broke"]["layer"]) == (4, "throttle",
                                                                                                  "hardware")
    broke = entry["steps"][-1]
    assert "sw_power_cap" in broke["gpus"][0]["throttle_reasons"]
    assert broke["gpus"][0]["power_peak_w"] >= 250
    assert entry["idle"]["gpus"][0]["throttle_reasons"] == ["gpu_idle"]
    baseline = entry["steps"][0]["requests"]
    assert baseline["errors"] == 0 and baseline["requests"] > 0 and baseline["p95_ms"] >= 20
    assert entry["steps"][1]["requests"]["p50_ms"] > baseline["p50_ms"]  # latency grows with the concurrency
    assert entry["suggestion"]["workers_per_gpu"] == 2


def test_an_xid_breaks_at_4_workers_in_the_layer_of_the_catalog(loadstep_run):
    entry = loadstep_run.runs["fleet-03"]
    assert (entry["broke"]["concurrency"], entry["broke"]["reason"], entry["broke"]["layer"]) == (4, "xid", "driver")
    assert [event["xid"] for event in entry["steps"][-1]["xid_events"]] == [119]
    assert entry["suggestion"]["workers_per_gpu"] == 2


def test_every_host_is_left_as_it_was(loadstep_run):
    for host in ("fleet-01", "fleet-02", "fleet-03"):
        assert loadstep_run.after[host] == loadstep_run.before[host], host
        assert loadstep_run.runs[host]["host_restored"]["as_it_was"] is True
        assert loadstep_run.runs[host]["host_restored"]["gpu_processes_after"] == []
        assert all(step["load"]["left_running"] == [] for step in loadstep_run.runs[host]["steps"])


def test_the_html_has_the_load_steps_section(loadstep_run):
    html = open(os.path.join(os.path.dirname(loadstep_run.path), "loadstep.html")).read()
    assert '<section id="loadstep">' in html and "<script" not in html
    assert "Broke at step 4 (8 in flight): <b>oom</b> - layer <b>workload</b>" in html
    assert "workers_per_gpu: 4" in html


def test_a_second_run_after_a_fix_is_compared_with_the_first(loadstep_fleet, loadstep_run):
    fleet = loadstep_fleet
    fleet.ssh("fleet-01", "mkdir -p %s && printf '[Service]\\nEnvironment=MEM_PER_WORKER_MIB=7000\\n' > %s && "
                          "systemctl daemon-reload" % (os.path.dirname(FIX), FIX), check=True)
    try:
        # steps 4 and 8 only (an override, checked like the policy): the ones that tell the fix apart
        run = fleet.playbook("loadstep.yml", limit="fleet-01",
                             extra_vars={"gpufleet_load_service": SERVICE, "gpufleet_report_dir": loadstep_run.report_dir,
                                         "gpufleet_load_overrides": {"steps": [4, 8]}})
        assert run.rc == 0, run.output()
        _path, document = loadstep_document(loadstep_run.report_dir)
    finally:
        fleet.ssh("fleet-01", "rm -f %s && systemctl daemon-reload" % FIX, check=True)
    entry = document["runs"][0]
    assert entry["broke"] is None and entry["held"]["concurrency"] == 8
    comparison = entry["comparison"]
    assert comparison["verdict"] == "improved"
    assert (comparison["held_before"], comparison["held_now"]) == (4, 8)
    assert comparison["previous_run"] == os.path.dirname(loadstep_run.path)
    assert [item["concurrency"] for item in comparison["steps"]] == [4, 8]
    assert comparison["steps"][0]["memory_change_mib"] == -20000
    assert comparison["steps"][1]["broke_before"] and not comparison["steps"][1]["broke_now"]


def test_check_mode_prints_the_plan_and_starts_nothing(loadstep_fleet, loadstep_run):
    fleet = loadstep_fleet
    run = fleet.playbook("loadstep.yml", limit="fleet-01", check=True,
                         extra_vars={"gpufleet_load_service": SERVICE, "gpufleet_report_dir": loadstep_run.report_dir})
    assert run.rc == 0, run.output()
    plan = run.result("fleet-01", "Show the plan")["msg"]
    assert plan[1:] == ["step 0: the idle host for 2s", "step 1: concurrency 1 for 2s after 1s of warm-up",
                        "step 2: concurrency 2 for 2s after 1s of warm-up",
                        "step 3: concurrency 4 for 2s after 1s of warm-up",
                        "step 4: concurrency 8 for 2s after 1s of warm-up",
                        "stops at the first step that breaks; at most 89s in all (load.total_timeout_sec 300)"]
    assert run.result("fleet-01", "Step 0, the idle host")["_event"] == "skipped"
    assert run.result("fleet-01", "Analyse the steps and write loadstep.json and loadstep.html")["runs"][
        "fleet-01"]["status"] == "planned"
    assert len(glob.glob(os.path.join(loadstep_run.report_dir, "*-loadstep", "loadstep.json"))) == 2
