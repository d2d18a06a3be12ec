"""The demo fleet (inventories/demo): its fixtures come from tools/make_demo_fleet.py and nowhere
else, and each host replays through the real collectors to the facts its scenario describes."""

import functools
import importlib.util
import json
import os
import re
import subprocess
import sys

import pynvml
import pytest
import yaml

from ansible_collections.gpufleet.core.plugins.module_utils.collector import Collection
from tests.support.demo_fabric_checks import FABRIC_FACT_CHECKS
from tests.support.demo_workload_checks import WORKLOAD_FACT_CHECKS
from tests.support.schema_check import ROOT, assert_valid_facts

DEMO = os.path.join(ROOT, "inventories", "demo")
FIXTURES = os.path.join(DEMO, "fixtures")


def _load_generator():
    spec = importlib.util.spec_from_file_location("make_demo_fleet", os.path.join(ROOT, "tools", "make_demo_fleet.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


make_demo_fleet = _load_generator()
SCENARIOS = dict((spec["name"], spec) for spec in make_demo_fleet.demo_scenarios.demo_hosts())
HOSTS = sorted(SCENARIOS)
NVSWITCH_NODES = [name for name in HOSTS if name.startswith(("gpu-h100-", "gpu-a100-"))]
WINDOW_START = "2026-11-27T06:00:00Z"
RECORDED_AT = "2026-11-30T06:00:00Z"


@functools.lru_cache(maxsize=None)
def fixture(name):
    with open(os.path.join(FIXTURES, name + ".json")) as handle:
        return json.load(handle)


@functools.lru_cache(maxsize=None)
def replayed(name):
    facts, recorded = Collection(source="replay", fixture=fixture(name), pynvml=pynvml, host=None,
                                 services=SCENARIOS[name].get("services")).run()
    assert recorded is None
    return facts


def facts_of(name):
    """A copy, so a check cannot change what the next one sees."""
    return json.loads(json.dumps(replayed(name)))


# ---------------------------------------------------------------- generated, never hand-edited

def test_committed_fixtures_are_exactly_what_the_generator_writes(tmp_path):
    # In its own process, as a person runs it: recording through pynvml in a process that other tests have
    # already used once numbered one NVML handle differently (pynvml and ctypes keep per-process state).
    generator = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "make_demo_fleet.py"), "--out", str(tmp_path)],
                               cwd=ROOT, capture_output=True, text=True, check=False, timeout=600)
    assert generator.returncode == 0, generator.stderr
    generated = sorted(os.listdir(str(tmp_path)))
    assert generated == sorted(os.listdir(FIXTURES)) == ["%s.json" % name for name in HOSTS]
    for filename in generated:
        with open(os.path.join(str(tmp_path), filename), "rb") as handle:
            fresh = handle.read()
        with open(os.path.join(FIXTURES, filename), "rb") as handle:
            committed = handle.read()
        assert fresh == committed, "%s differs: run .venv/bin/python tools/make_demo_fleet.py" % filename


def test_fleet_stays_small_enough_to_ship():
    sizes = dict((name, os.path.getsize(os.path.join(FIXTURES, name + ".json"))) for name in HOSTS)
    assert sum(sizes.values()) < 3 * 1024 * 1024
    assert max(sizes.values()) < 600 * 1024


@pytest.mark.parametrize("name", HOSTS)
def test_fixture_is_a_stable_recording_of_the_real_collectors(name):
    document = fixture(name)
    assert document["format"] == "gpufleet-fixture" and document["format_version"] == 1
    assert document["recorded_at"] == RECORDED_AT
    chosen = SCENARIOS[name].get("gather_subset") or make_demo_fleet.DEMO_SUBSETS
    workload = [] if "!workload" in chosen else ["workload", "host_pressure"]
    fabric = [] if "!fabric" in chosen else ["fabric"]
    assert document["gather_subset"] == (["driver", "gpus", "processes", "mig", "nvlink", "host", "kernel_log"]
                                         + workload + ["bmc", "kubernetes"] + fabric)
    assert document["host"]["now"] == make_demo_fleet.demo_scenarios.NOW
    journal = [key for key in document["host"]["commands"] if key.startswith("journalctl ")]
    assert [key for key in journal if " -o short-iso " in key] == [
        "journalctl _TRANSPORT=kernel -o short-iso --no-pager --since=-72h"]
    # the services' journals of the workload subset (--unit=) and the incident evidence of the hosts with a
    # story (tools/demo_evidence.py)
    evidence = [key for key in journal if " -o short-iso " not in key and "--unit=" not in key]
    assert bool(evidence) == (name in make_demo_fleet.demo_evidence.STORIES)


# ---------------------------------------------------------------- inventory

def _inventory_hosts(group, path=()):
    found = dict((host, (path, variables or {})) for host, variables in (group.get("hosts") or {}).items())
    for child, content in (group.get("children") or {}).items():
        found.update(_inventory_hosts(content or {}, path + (child,)))
    return found


def test_inventory_lists_every_demo_host_in_its_group_with_its_scenario():
    with open(os.path.join(DEMO, "hosts.yml")) as handle:
        inventory = yaml.safe_load(handle)
    hosts = _inventory_hosts(inventory["all"])
    assert sorted(hosts) == HOSTS
    for name, (path, variables) in hosts.items():
        assert path == ("gpu_fleet", SCENARIOS[name]["group"])
        assert variables == {"gpufleet_demo_scenario": SCENARIOS[name]["description"]}


def test_group_vars_make_every_host_replay_its_own_fixture_locally():
    with open(os.path.join(DEMO, "group_vars", "all.yml")) as handle:
        variables = yaml.safe_load(handle)
    assert variables == {
        "ansible_connection": "local",
        "ansible_python_interpreter": "{{ ansible_playbook_python }}",
        "gpufleet_facts_source": "replay",
        "gpufleet_facts_fixture": "{{ inventory_dir }}/fixtures/{{ inventory_hostname }}.json",
    }


# ---------------------------------------------------------------- every host

@pytest.mark.parametrize("name", HOSTS)
def test_replay_gives_schema_valid_facts_of_a_realistic_host(name):
    facts = facts_of(name)
    assert_valid_facts(facts)
    assert facts["source"] == "replay"
    host = facts["host"]
    assert host["hostname"] == name
    assert re.match(r"^5\.15\.0-\d+-generic$", host["kernel"])
    assert host["os"] == {"id": "ubuntu", "version_id": "22.04", "pretty_name": "Ubuntu 22.04.5 LTS"}
    for event in facts["xid_events"] + facts["kernel_events"]:
        assert WINDOW_START <= event["time"] <= RECORDED_AT


@pytest.mark.parametrize("name", [host for host in HOSTS if host != "cpu-node-nodriver-13"])
def test_gpu_hosts_have_the_usual_nvidia_stack(name):
    host = facts_of(name)["host"]
    assert host["services"]["persistenced"]["state"] == "running"
    assert host["cuda_toolkits"]
    assert host["container_toolkit"]["docker_nvidia_runtime"] is True
    assert re.match(r"^1\.\d+\.\d+$", host["container_toolkit"]["version"])
    fabric_manager = host["services"]["fabricmanager"]["state"]
    if name in NVSWITCH_NODES:
        assert fabric_manager == ("failed" if name == "gpu-h100-mismatch-03" else "running")
    else:
        assert fabric_manager == "not_found"


@pytest.mark.parametrize("name", [host for host in HOSTS if SCENARIOS[host]["nvml"] and SCENARIOS[host]["nvml"]["gpus"]])
def test_every_gpu_is_its_own(name):
    gpus = [gpu for gpu in facts_of(name)["gpus"] if not gpu["lost"]]
    uuids = [gpu["uuid"] for gpu in gpus]
    assert len(set(uuids)) == len(uuids)
    others = set(gpu["uuid"] for other in HOSTS if other != name for gpu in replayed(other)["gpus"])
    assert not others & set(uuids)


# ---------------------------------------------------------------- each scenario

def gpus_named(facts, name, count):
    assert [gpu["name"] for gpu in facts["gpus"]] == [name] * count
    return facts["gpus"]


def check_h100_ok_01(facts):
    driver = facts["driver"]
    assert (driver["version"], driver["kernel_module_version"], driver["userspace_version"]) == ("550.90.07",) * 3
    assert driver["cuda_driver_version"] == "12.4" and driver["mismatch"] is False
    assert facts["xid_events"] == [] and facts["kernel_events"] == [] and facts["errors"] == []
    for gpu in gpus_named(facts, "NVIDIA H100 80GB HBM3", 8):
        assert gpu["lost"] is False and gpu["memory"]["total_mib"] == 81559
        assert gpu["pcie"]["width_current"] == gpu["pcie"]["width_max"] == 16
        assert gpu["pcie"]["replay_counter"] == 0 and gpu["pcie"]["aer"]["correctable"] == 0
        assert gpu["remapped_rows"]["pending"] is False and gpu["ecc"]["volatile_uncorrected"] == 0
        assert gpu["mig"]["mode_current"] is False and gpu["mig"]["mode_pending"] is False
        assert [link["active"] for link in gpu["nvlinks"]] == [True] * 18
        assert all(count == 0 for link in gpu["nvlinks"] for count in link["errors"].values())
        assert gpu["clock_event_reasons"]["active"] == []
        assert gpu["power"]["limit_w"] == gpu["power"]["default_limit_w"] == 700.0
        assert gpu["temperature"]["gpu_c"] <= gpu["temperature"]["slowdown_c"] - 20
        assert gpu["compute_mode"] == "default" and len(gpu["processes"]) == 1
        assert gpu["fabric"]["state"] == "completed"
    host = facts["host"]
    assert host["mps_daemon_running"] is False and host["services"]["mps"]["state"] == "not_found"
    assert host["services"]["dcgm"] == {"name": "nvidia-dcgm", "state": "running", "enabled": True,
                                        "restart": "on-abort"}
    assert host["cuda_toolkits"] == [{"path": "/usr/local/cuda-12.2", "version": "12.2.2"},
                                     {"path": "/usr/local/cuda-12.4", "version": "12.4.1"}]


def check_h100_xid79_02(facts):
    gpus = facts["gpus"]
    assert [gpu["lost"] for gpu in gpus] == [False] * 5 + [True] + [False] * 2
    assert facts["xid_events"] == [{
        "xid": 79, "pci_bus_id": "0000:ab:00.0", "time": "2026-11-29T21:14:07Z", "pid": None, "process_name": None,
        "gpu_instance_id": None, "compute_instance_id": None, "message": "GPU has fallen off the bus."}]
    assert "0000:ab:00.0" not in [gpu["pci_bus_id"] for gpu in gpus if not gpu["lost"]]
    assert facts["kernel_events"] == []
    assert [(error["gpu"], error["call"], error["code"]) for error in facts["errors"]] == [
        (5, "nvmlDeviceGetHandleByIndex", 15)]


def check_h100_mismatch_03(facts):
    driver = facts["driver"]
    assert driver["mismatch"] is True and driver["kernel_module_version"] == "550.54.15"
    assert facts["gpus"] == []
    events = facts["kernel_events"]
    assert [(event["kind"], event["client_version"], event["kernel_module_version"]) for event in events] == [
        ("api_mismatch", "550.90.07", "550.54.15")] * 3
    assert [event["time"] for event in events] == [
        "2026-11-29T14:02:11Z", "2026-11-29T14:02:13Z", "2026-11-30T05:41:30Z"]


def check_a100_oldcuda_04(facts):
    driver = facts["driver"]
    assert (driver["version"], driver["cuda_driver_version"], driver["kernel_module_version"]) == (
        "470.256.02", "11.4", "470.256.02")
    assert {"path": "/usr/local/cuda-12.4", "version": "12.4.1"} in facts["host"]["cuda_toolkits"]
    assert {"path": "/usr/local/cuda-11.4", "version": "11.4.4"} in facts["host"]["cuda_toolkits"]
    for gpu in gpus_named(facts, "NVIDIA A100-SXM4-80GB", 8):
        # R470 has no nvmlDeviceGetMemoryInfo_v2: reserved memory is unknown and counted as used
        assert (gpu["memory"]["total_mib"], gpu["memory"]["used_mib"], gpu["memory"]["reserved_mib"]) == (
            81920, 591, None)
        assert len(gpu["nvlinks"]) == 12 and gpu["fabric"] is None
    assert set(error["call"] for error in facts["errors"]) <= {"nvmlDeviceGetGpuFabricInfo"}


def check_h100_thermal_05(facts):
    hot = {2: 87, 3: 88, 6: 86}
    for gpu in gpus_named(facts, "NVIDIA H100 80GB HBM3", 8):
        assert (gpu["power"]["limit_w"], gpu["power"]["default_limit_w"]) == (500.0, 700.0)
        assert gpu["power"]["draw_w"] <= gpu["power"]["limit_w"]
        reasons = gpu["clock_event_reasons"]["active"]
        if gpu["index"] in hot:
            assert gpu["temperature"]["gpu_c"] == hot[gpu["index"]]
            assert gpu["temperature"]["slowdown_c"] - gpu["temperature"]["gpu_c"] <= 3
            assert reasons == ["sw_power_cap", "sw_thermal_slowdown", "hw_thermal_slowdown"]
            assert gpu["clocks"]["sm_mhz"] == 1275 and gpu["clocks"]["max_sm_mhz"] == 1980
        else:
            assert reasons == ["sw_power_cap"]


def check_h100_pcie_06(facts):
    gpus = gpus_named(facts, "NVIDIA H100 80GB HBM3", 8)
    degraded = gpus[3]
    assert degraded["pci_bus_id"] == "0000:5d:00.0"
    pcie = degraded["pcie"]
    assert (pcie["gen_current"], pcie["gen_max"], pcie["width_current"], pcie["width_max"]) == (5, 5, 8, 16)
    assert pcie["replay_counter"] == 4127
    assert pcie["aer"] == {"correctable": 480, "nonfatal": 0, "fatal": 0, "counters": {
        "correctable.RxErr": 18, "correctable.BadTLP": 27, "correctable.BadDLLP": 394, "correctable.Timeout": 41}}
    for gpu in gpus[:3] + gpus[4:]:
        assert gpu["pcie"]["width_current"] == 16 and gpu["pcie"]["aer"]["correctable"] == 0


def check_a100_remap_07(facts):
    gpus = gpus_named(facts, "NVIDIA A100-SXM4-80GB", 8)
    bad = gpus[6]
    assert bad["pci_bus_id"] == "0000:b7:00.0"
    assert bad["remapped_rows"] == {"correctable": 0, "uncorrectable": 1, "pending": True, "failure": False}
    assert (bad["ecc"]["volatile_uncorrected"], bad["ecc"]["aggregate_uncorrected"]) == (1, 1)
    assert [gpu["remapped_rows"]["pending"] for gpu in gpus] == [False] * 6 + [True, False]
    events = [(event["xid"], event["pci_bus_id"], event["pid"], event["process_name"]) for event in facts["xid_events"]]
    assert events == [(94, "0000:b7:00.0", 2741196, "python3"), (63, "0000:b7:00.0", None, None)]
    assert facts["driver"]["version"] == "535.183.06" and facts["errors"] == []


def layout(gpu):
    return [(gi["id"], gi["profile_id"], gi["profile_name"], gi["placement"]["start"], gi["placement"]["size"],
             [(ci["profile_name"], ci["placement"]["size"]) for ci in gi["compute_instances"]])
            for gi in gpu["mig"]["gpu_instances"]]


def check_a100_migdrift_08(facts):
    seven = [(gi_id, 19, "1g.10gb", start, 1, [("1g.10gb", 1)])
             for gi_id, start in ((7, 4), (8, 5), (9, 6), (11, 0), (12, 1), (13, 2), (14, 3))]
    for gpu in gpus_named(facts, "NVIDIA A100-SXM4-80GB", 8):
        assert gpu["mig"]["mode_current"] is True and gpu["mig"]["mode_pending"] is True
        assert layout(gpu) == seven
        assert [gi["memory_mib"] for gi in gpu["mig"]["gpu_instances"]] == [9728] * 7
    assert [(process["gpu_instance_id"], process["compute_instance_id"], process["used_memory_mib"])
            for process in facts["gpus"][0]["processes"]] == [(7, 0, 8371), (11, 0, 8371)]


def check_a100_migpending_09(facts):
    two = [(1, 9, "3g.40gb", 4, 4, [("3g.40gb", 3)]), (2, 9, "3g.40gb", 0, 4, [("3g.40gb", 3)])]
    for gpu in gpus_named(facts, "NVIDIA A100-SXM4-80GB", 8):
        mig = gpu["mig"]
        if gpu["index"] < 4:
            assert (mig["mode_current"], mig["mode_pending"], layout(gpu)) == (True, True, two)
        else:
            assert (mig["mode_current"], mig["mode_pending"], layout(gpu)) == (False, True, [])


def check_l40s_crowded_10(facts):
    gpus = gpus_named(facts, "NVIDIA L40S", 4)
    crowded = gpus[0]
    processes = crowded["processes"]
    assert len(processes) == 12 and set(process["name"] for process in processes) == {"/opt/conda/bin/python"}
    assert sum(process["used_memory_mib"] for process in processes) == 45072
    memory = crowded["memory"]
    assert (memory["total_mib"], memory["used_mib"], memory["free_mib"]) == (46068, 45072, 429)
    assert [len(gpu["processes"]) for gpu in gpus[1:]] == [2, 2, 2]
    for gpu in gpus:
        assert gpu["nvlinks"] == [] and gpu["mig"]["mode_current"] is None and gpu["fabric"] is None
    assert facts["host"]["container_toolkit"]["containerd_nvidia_runtime"] is True


def check_h100_mps_11(facts):
    host = facts["host"]
    assert host["mps_daemon_running"] is True
    assert host["services"]["mps"] == {"name": "nvidia-mps", "state": "running", "enabled": True,
                                       "restart": "on-failure"}
    for gpu in gpus_named(facts, "NVIDIA H100 80GB HBM3", 8):
        assert gpu["compute_mode"] == "exclusive_process"
        assert (gpu["processes"][0]["pid"], gpu["processes"][0]["name"]) == (48211, "nvidia-cuda-mps-server")
        assert len(gpu["processes"]) == (3 if gpu["index"] < 4 else 2)


def check_h100_nvlink_12(facts):
    gpus = gpus_named(facts, "NVIDIA H100 80GB HBM3", 8)
    links = gpus[2]["nvlinks"]
    assert [link["link"] for link in links if not link["active"]] == [7]
    assert links[7]["errors"] == {"replay": 0, "recovery": 12, "crc_flit": 3, "crc_data": 0}
    assert [(links[n]["errors"]["replay"], links[n]["errors"]["recovery"]) for n in (6, 8)] == [(41, 3), (29, 2)]
    assert all(link["active"] for gpu in gpus if gpu["index"] != 2 for link in gpu["nvlinks"])
    assert [(event["xid"], event["pci_bus_id"]) for event in facts["xid_events"]] == [(74, "0000:3a:00.0")]
    assert "link 7(" in facts["xid_events"][0]["message"]


def check_cpu_nodriver_13(facts):
    assert facts["nvidia_present"] is False and facts["replay_of"] is None and facts["gpus"] == []
    assert facts["driver"]["kernel_module_version"] is None and facts["driver"]["mismatch"] is False
    host = facts["host"]
    assert set(service["state"] for service in host["services"].values()) == {"not_found"}
    assert host["cuda_toolkits"] == []
    assert host["container_toolkit"] == {"version": None, "docker_nvidia_runtime": False,
                                         "docker_default_runtime": None, "containerd_nvidia_runtime": False}
    assert facts["xid_events"] == [] and facts["kernel_events"] == []


def check_t4_nvsmi_14(facts):
    assert facts["replay_of"] == "nvidia_smi" and fixture("gpu-t4-nvsmi-14")["nvml"] is None
    driver = facts["driver"]
    assert (driver["version"], driver["cuda_driver_version"], driver["nvml_version"]) == ("515.105.01", "11.7", None)
    assert driver["kernel_module_version"] == "515.105.01" and driver["mismatch"] is False
    (gpu,) = gpus_named(facts, "Tesla T4", 1)
    assert gpu["pci_bus_id"] == "0000:00:1e.0" and gpu["uuid"] == "GPU-c325c434-8090-9372-31f0-cfc1d0545b27"
    assert (gpu["memory"]["total_mib"], gpu["memory"]["used_mib"]) == (15360, 1630)
    assert [(process["pid"], process["name"], process["used_memory_mib"]) for process in gpu["processes"]] == [
        (1318, "/usr/lib/xorg/Xorg", 26), (48211, "python3", 1604)]
    assert (gpu["pcie"]["width_current"], gpu["pcie"]["width_max"], gpu["pcie"]["aer"]) == (8, 16, None)


def gsp_check(expected_events):
    def check(facts):
        driver = facts["driver"]
        assert (driver["version"], driver["kernel_module_version"], driver["mismatch"]) == ("550.54.15", "550.54.15", False)
        gpus_named(facts, "NVIDIA H100 80GB HBM3", 8)
        assert [(event["xid"], event["pci_bus_id"], event["pid"]) for event in facts["xid_events"]] == expected_events
        assert all("GSP" in event["message"] for event in facts["xid_events"])
    return check


SCENARIO_CHECKS = {
    "gpu-h100-ok-01": check_h100_ok_01,
    "gpu-h100-xid79-02": check_h100_xid79_02,
    "gpu-h100-mismatch-03": check_h100_mismatch_03,
    "gpu-a100-oldcuda-04": check_a100_oldcuda_04,
    "gpu-h100-thermal-05": check_h100_thermal_05,
    "gpu-h100-pcie-06": check_h100_pcie_06,
    "gpu-a100-remap-07": check_a100_remap_07,
    "gpu-a100-migdrift-08": check_a100_migdrift_08,
    "gpu-a100-migpending-09": check_a100_migpending_09,
    "gpu-l40s-crowded-10": check_l40s_crowded_10,
    "gpu-h100-mps-11": check_h100_mps_11,
    "gpu-h100-nvlink-12": check_h100_nvlink_12,
    "cpu-node-nodriver-13": check_cpu_nodriver_13,
    "gpu-t4-nvsmi-14": check_t4_nvsmi_14,
    "gpu-h100-gsp-15": gsp_check([(119, "0000:2a:00.0", 40211), (119, "0000:9a:00.0", 40215)]),
    "gpu-h100-gsp-16": gsp_check([(119, "0000:18:00.0", 51877), (119, "0000:ba:00.0", 52990)]),
}


SCENARIO_CHECKS.update(WORKLOAD_FACT_CHECKS)
SCENARIO_CHECKS.update(FABRIC_FACT_CHECKS)


def test_every_demo_host_has_a_scenario_check():
    assert sorted(SCENARIO_CHECKS) == HOSTS


@pytest.mark.parametrize("name", HOSTS)
def test_replayed_facts_show_the_scenario(name):
    SCENARIO_CHECKS[name](facts_of(name))
