"""Fact builders for the rule tests: a healthy 8x H100 node and its variants, the policy, findings_of/only."""

from ansible_collections.gpufleet.core.plugins.module_utils.facts_model import new_facts, new_gpu, new_process
from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.diagnose import diagnose_host
from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.findings import LAYERS, SEVERITIES
from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.knowledge import load_knowledge
from ansible_collections.gpufleet.core.plugins.plugin_utils.policy import validate_policy
from simulator.gpu_models import model
from tests.support.schema_check import assert_valid_facts


KNOWLEDGE = load_knowledge()
COLLECTED_AT = "2026-11-30T06:00:00Z"
H100 = "NVIDIA H100 80GB HBM3"
H100_BUS_IDS = ("0000:18:00.0", "0000:2a:00.0", "0000:3a:00.0", "0000:5d:00.0",
                "0000:9a:00.0", "0000:ab:00.0", "0000:ba:00.0", "0000:db:00.0")


FINDING_KEYS = {"rule", "layer", "severity", "host", "gpu", "summary", "evidence", "action", "fix"}


def service(name, state="running", restart="no"):
    return {"name": name, "state": state, "enabled": state != "not_found" or None, "restart": restart}


def set_model(gpu, name):
    """Sets the properties of the GPU model `name` from the simulated models' catalog."""
    entry = model(name)
    limits = entry["power_limits_w"]
    gpu.update(name=name, board_part_number=entry["board_part_number"], architecture=entry["architecture"],
               compute_capability=entry["compute_capability"])
    gpu["memory"]["total_mib"] = entry["memory_total_mib"]
    gpu["power"].update(limit_w=limits["default"], default_limit_w=limits["default"], min_limit_w=limits["min"],
                        max_limit_w=limits["max"])
    gpu["pcie"].update(gen_current=entry["pcie_gen_max"], gen_max=entry["pcie_gen_max"])
    gpu["nvlinks"] = [{"link": link, "active": True,
                       "errors": {"replay": 0, "recovery": 0, "crc_flit": 0, "crc_data": 0}}
                      for link in range(entry["nvlinks"])]


def h100_gpu(index):
    gpu = new_gpu(index)
    set_model(gpu, H100)
    gpu.update(uuid="GPU-5d2f61c8-3b0a-4c7e-9a41-0c8e7d1f2a%02d" % index,
               serial="165432100%04d" % index, pci_bus_id=H100_BUS_IDS[index],
               vbios_version="96.00.89.00.01", compute_mode="default", persistence_mode=True, performance_state="P0")
    gpu["memory"].update(used_mib=68712, free_mib=12847, reserved_mib=0)
    gpu["temperature"].update(gpu_c=61, slowdown_c=89, shutdown_c=92, memory_c=70)
    gpu["power"]["draw_w"] = 612.4
    gpu["clock_event_reasons"] = {"mask": 0, "active": []}
    gpu["utilization"] = {"gpu_pct": 97, "memory_pct": 61}
    gpu["ecc"].update(mode_current=True, mode_pending=True, volatile_corrected=0, volatile_uncorrected=0,
                      aggregate_corrected=0, aggregate_uncorrected=0)
    gpu["remapped_rows"].update(correctable=0, uncorrectable=0, pending=False, failure=False)
    gpu["pcie"].update(width_current=16, width_max=16, replay_counter=0,
                       aer={"correctable": 0, "nonfatal": 0, "fatal": 0, "counters": {}})
    gpu["mig"].update(mode_current=False, mode_pending=False)
    gpu["fabric"] = {"state": "completed", "status": "success", "clique_id": 32766,
                     "cluster_uuid": "be03e929-7122-560b-8d3b-9dcff95fd6e5"}
    process = new_process(40210 + index)
    process.update(name="python3", type="compute", used_memory_mib=68190)
    gpu["processes"] = [process]
    return gpu


def healthy_node(gpus=8, driver="550.90.07"):
    """An 8x H100 SXM training node under load with nothing wrong (as gpu-h100-ok-01 of the demo fleet)."""
    facts = new_facts()
    facts.update(source="nvml", collected_at=COLLECTED_AT, collection_seconds=1.9, nvidia_present=True,
                 gather_subset=["driver", "gpus", "processes", "mig", "nvlink", "host", "kernel_log"])
    facts["driver"].update(version=driver, nvml_version="12." + driver, cuda_driver_version="12.4",
                           kernel_module_version=driver, userspace_version=driver)
    facts["gpus"] = [h100_gpu(index) for index in range(gpus)]
    facts["host"] = {
        "hostname": "gpu-node", "kernel": "5.15.0-119-generic",
        "os": {"id": "ubuntu", "version_id": "22.04", "pretty_name": "Ubuntu 22.04.5 LTS"},
        "services": {"persistenced": service("nvidia-persistenced"),
                     "fabricmanager": service("nvidia-fabricmanager"),
                     "mps": service("nvidia-mps", "not_found", None),
                     "dcgm": service("nvidia-dcgm", restart="on-abort")},
        "mps_daemon_running": False,
        "cuda_toolkits": [{"path": "/usr/local/cuda-12.2", "version": "12.2.2"},
                          {"path": "/usr/local/cuda-12.4", "version": "12.4.1"}],
        "container_toolkit": {"version": "1.16.2", "docker_nvidia_runtime": True, "docker_default_runtime": "runc",
                              "containerd_nvidia_runtime": False},
    }
    return facts


def xid_event(xid, bus, time, pid=None, name=None, message="Ch 00000008, errorString CTX SWITCH TIMEOUT"):
    return {"xid": xid, "pci_bus_id": bus, "time": time, "pid": pid, "process_name": name,
            "message": message}


def policy(**settings):
    return validate_policy(settings)


def findings_of(facts, rule=None, the_policy=None, host="gpu-node", now=None):
    assert_valid_facts(facts)
    found = diagnose_host(host, facts, the_policy or policy(), KNOWLEDGE, now=now)
    for finding in found:
        assert set(finding) == FINDING_KEYS
        assert finding["layer"] in LAYERS and finding["severity"] in SEVERITIES and finding["host"] == host
    return [finding for finding in found if rule is None or finding["rule"] == rule]


def only(facts, rule, the_policy=None, now=None):
    found = findings_of(facts, rule, the_policy, now=now)
    assert len(found) == 1, found
    return found[0]


def mismatched_node():
    """Packages upgraded to 550.90.07 without a reboot: NVML fails, the kernel log shows the API mismatch."""
    facts = new_facts()
    facts.update(source="none", collected_at="2026-11-30T06:00:00Z", nvidia_present=False,
                 gather_subset=["driver", "gpus", "host", "kernel_log"])
    facts["driver"].update(kernel_module_version="550.54.15", userspace_version="550.90.07", mismatch=True,
                           mismatch_reason="kernel log: API mismatch: the client has the version 550.90.07, "
                                           "but this kernel module has the version 550.54.15.")
    facts["kernel_events"] = [{"kind": "api_mismatch", "time": "2026-11-29T23:02:11Z", "pci_bus_id": None,
                               "client_version": "550.90.07", "kernel_module_version": "550.54.15",
                               "message": "NVRM: API mismatch: the client has the version 550.90.07, but"}]
    return facts


L40S_BUS_IDS = ("0000:01:00.0", "0000:41:00.0", "0000:81:00.0", "0000:c1:00.0")


def workers(count, each_mib, first_pid=31000, name="python3", kind="compute"):
    processes = []
    for offset in range(count):
        process = new_process(first_pid + offset)
        process.update(name=name, type=kind, used_memory_mib=each_mib)
        processes.append(process)
    return processes


def crowded_l40s_node():
    """4x L40S; GPU 0 shared by 12 workers using 45072 of 46068 MiB (demo host gpu-l40s-crowded-10)."""
    facts = healthy_node(gpus=4, driver="550.127.05")
    for gpu, bus in zip(facts["gpus"], L40S_BUS_IDS):
        set_model(gpu, "NVIDIA L40S")
        gpu.update(pci_bus_id=bus, vbios_version="95.02.66.00.02", fabric=None)
        gpu["memory"].update(used_mib=30720, free_mib=15348)
        gpu["power"]["draw_w"] = 281.0
        gpu["temperature"].update(slowdown_c=90, shutdown_c=93)
        gpu["mig"] = {"mode_current": None, "mode_pending": None, "gpu_instances": []}
        gpu["processes"] = workers(2, 15360, first_pid=32000 + 10 * gpu["index"])
    facts["gpus"][0]["memory"].update(used_mib=45072, free_mib=429)
    facts["gpus"][0]["processes"] = workers(12, 3756)
    facts["host"]["services"]["fabricmanager"] = service("nvidia-fabricmanager", "not_found", None)
    return facts


def custom(name, expression, scope="host", **extra):
    entry = {"name": name, "layer": "driver", "severity": "warning", "scope": scope, "expression": expression,
             "summary": "%s on {gpu}: {result}" % name, "action": "Look at it."}
    entry.update(extra)
    return entry
