"""The hosts of the demo fleet (inventories/demo): what each one simulates, as plain data and small builders.

Each host is a dict:
    name         inventory hostname
    description  one line; inventories/demo/hosts.yml repeats it as gpufleet_demo_scenario
    group        the inventory group it belongs to (all groups sit under gpu_fleet)
    source       "nvml" or "nvidia_smi": the backend that answers on this host
    nvml         a SimulatedNvmlLibrary scenario (simulator/nvml_sim.py), or None
    host         what the host answers, in ReplayHost's shape: now, bins, files, dirs, commands

tools/make_demo_fleet.py runs the real collectors against each host and keeps, as the fixture,
only what they asked for. Every value is simulated; file contents, command outputs and kernel log
lines follow the formats the real programs print.
"""

import calendar
import copy
import json
import os
import uuid

import pynvml

from ansible_collections.gpufleet.core.plugins.module_utils.args_common import WINDOW_HOURS
from ansible_collections.gpufleet.core.plugins.module_utils.facts_model import normalize_pci_bus_id
from ansible_collections.gpufleet.core.plugins.module_utils.host_facts import (
    AER_FILES, SERVICE_UNITS, SYSTEMCTL_PROPERTIES)
from ansible_collections.gpufleet.core.plugins.module_utils.bmc_collect import CLOCK_ARGS, DCMI_ARGS, SDR_ARGS, SEL_ARGS
from ansible_collections.gpufleet.core.plugins.module_utils.host_io import command_key
from ansible_collections.gpufleet.core.plugins.module_utils.kernel_log import journalctl_argv
from simulator.nvml_sim import catalog_values, scenario_h100_node

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# the project's own nvidia-smi -q -x document of a Tesla T4 (tests/fixtures/samples/README.md)
T4_SAMPLE = os.path.join(ROOT, "tests", "fixtures", "samples", "nvsmi-q-x_tesla-t4_515.105.01.xml")

# Every demo host is recorded at this instant; kernel log lines lie in the window (WINDOW_HOURS) before it.
RECORDED_AT = "2026-11-30T06:00:00Z"
NOW = calendar.timegm((2026, 11, 30, 6, 0, 0))
KERNEL_LOG_WINDOW_HOURS = WINDOW_HOURS

KERNEL = "5.15.0-119-generic"
GPU_IS_LOST = pynvml.NVML_ERROR_GPU_IS_LOST
DRIVER_NOT_LOADED = pynvml.NVML_ERROR_DRIVER_NOT_LOADED
LIB_RM_VERSION_MISMATCH = pynvml.NVML_ERROR_LIB_RM_VERSION_MISMATCH

# clock event reason bits (nvml.h nvmlClocksEventReasons)
SW_POWER_CAP = 0x4
SW_THERMAL_SLOWDOWN = 0x20
HW_THERMAL_SLOWDOWN = 0x40

OS_RELEASE_JAMMY = """PRETTY_NAME="Ubuntu 22.04.5 LTS"
NAME="Ubuntu"
VERSION_ID="22.04"
VERSION="22.04.5 LTS (Jammy Jellyfish)"
VERSION_CODENAME=jammy
ID=ubuntu
ID_LIKE=debian
HOME_URL="https://www.ubuntu.com/"
SUPPORT_URL="https://help.ubuntu.com/"
BUG_REPORT_URL="https://bugs.launchpad.net/ubuntu/"
PRIVACY_POLICY_URL="https://www.ubuntu.com/legal/terms-and-policies/privacy-policy"
UBUNTU_CODENAME=jammy
"""

# ---------------------------------------------------------------- drivers

# driver version -> (NVML version, CUDA driver version as NVML encodes it, kernel module build stamp)
DRIVERS = {
    "470.256.02": ("11.470.256.02", 11040, "Thu May  2 14:37:44 UTC 2024"),
    "515.105.01": ("11.515.105.01", 11070, "Sat Mar 25 09:12:43 UTC 2023"),
    "535.183.06": ("12.535.183.06", 12020, "Wed Jun 26 06:46:07 UTC 2024"),
    "550.54.15": ("12.550.54.15", 12040, "Tue Mar  5 22:23:56 UTC 2024"),
    "550.90.07": ("12.550.90.07", 12040, "Fri May 31 09:34:47 UTC 2024"),
    "550.127.05": ("12.550.127.05", 12040, "Thu Sep 26 21:59:41 UTC 2024"),
}

# NVML entry points a driver branch does not export yet (pynvml then falls back to older ones)
MISSING_BEFORE_R510 = ["nvmlDeviceGetMemoryInfo_v2", "nvmlDeviceGetComputeRunningProcesses_v3",
                       "nvmlDeviceGetGpuInstanceProfileInfoV", "nvmlGpuInstanceGetComputeInstanceProfileInfoV"]
MISSING_BEFORE_R535 = ["nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetGpuFabricInfo"]
MISSING_BEFORE_R550 = ["nvmlDeviceGetGpuFabricInfoV"]


def missing_functions(driver_version):
    branch = int(driver_version.split(".")[0])
    missing = []
    for first_branch, names in ((510, MISSING_BEFORE_R510), (535, MISSING_BEFORE_R535),
                                (550, MISSING_BEFORE_R550)):
        if branch < first_branch:
            missing.extend(names)
    return missing


def with_driver(scenario, version):
    nvml_version, cuda, _stamp = DRIVERS[version]
    scenario.update(driver_version=version, nvml_version=nvml_version, cuda_driver_version=cuda,
                    missing_functions=missing_functions(version))
    return scenario


def proc_driver_version(version, open_module):
    """/proc/driver/nvidia/version as the open and the proprietary kernel modules print it."""
    stamp = DRIVERS[version][2]
    if open_module:
        first = ("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  %s  Release Build  "
                 "(dvs-builder@U16-I3-B03-4-3)  %s" % (version, stamp))
    else:
        first = "NVRM version: NVIDIA UNIX x86_64 Kernel Module  %s  %s" % (version, stamp)
    return first + "\nGCC version:  gcc version 11.4.0 (Ubuntu 11.4.0-1ubuntu1~22.04) \n"


# ---------------------------------------------------------------- GPU models

# GPU-instance profiles of an A100 80GB (../shared/reference/mig_profiles.yaml: ids, slices, instances
# and engines; memory from the `nvidia-smi mig -lgip` Memory column in GiB x 1024), keyed by NVML enum.
A100_80GB_GI_PROFILES = {
    pynvml.NVML_GPU_INSTANCE_PROFILE_1_SLICE: dict(id=19, name="MIG 1g.10gb", slices=1, instances=7, sm=14,
                                                   ce=1, dec=0, jpeg=0, ofa=0, memory_mb=9728),
    pynvml.NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV1: dict(id=20, name="MIG 1g.10gb+me", slices=1, instances=1, sm=14,
                                                        ce=1, dec=1, jpeg=1, ofa=1, memory_mb=9728),
    pynvml.NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV2: dict(id=15, name="MIG 1g.20gb", slices=1, instances=4, sm=14,
                                                        ce=1, dec=1, jpeg=0, ofa=0, memory_mb=19968),
    pynvml.NVML_GPU_INSTANCE_PROFILE_2_SLICE: dict(id=14, name="MIG 2g.20gb", slices=2, instances=3, sm=28,
                                                   ce=2, dec=1, jpeg=0, ofa=0, memory_mb=19968),
    pynvml.NVML_GPU_INSTANCE_PROFILE_3_SLICE: dict(id=9, name="MIG 3g.40gb", slices=3, instances=2, sm=42,
                                                   ce=3, dec=2, jpeg=0, ofa=0, memory_mb=40192),
    pynvml.NVML_GPU_INSTANCE_PROFILE_4_SLICE: dict(id=5, name="MIG 4g.40gb", slices=4, instances=1, sm=56,
                                                   ce=4, dec=2, jpeg=0, ofa=0, memory_mb=40192),
    pynvml.NVML_GPU_INSTANCE_PROFILE_7_SLICE: dict(id=0, name="MIG 7g.80gb", slices=7, instances=1, sm=98,
                                                   ce=7, dec=5, jpeg=1, ofa=1, memory_mb=81152),
}
GI_PROFILE_1G_10GB = 19
GI_PROFILE_3G_40GB = 9
CI_PROFILE_1_SLICE = pynvml.NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE
CI_PROFILE_3_SLICE = pynvml.NVML_COMPUTE_INSTANCE_PROFILE_3_SLICE

# DGX A100 GPU bus numbers
_A100_BUSES = (0x07, 0x0F, 0x47, 0x4E, 0x87, 0x90, 0xB7, 0xBD)
# a 4-GPU PCIe server, one GPU per root port
_L40S_BUSES = (0x01, 0x41, 0x81, 0xC1)


def _links(count):
    return [{"active": True, "errors": {"replay": 0, "recovery": 0, "crc_flit": 0, "crc_data": 0}}
            for _link in range(count)]


def _ecc_clean():
    return {"mode_current": True, "mode_pending": True, "volatile_corrected": 0, "volatile_uncorrected": 0,
            "aggregate_corrected": 0, "aggregate_uncorrected": 0}


def _rows_clean():
    return {"correctable": 0, "uncorrectable": 0, "pending": False, "failure": False}


def a100_gpu(index):
    """One idle A100-SXM4-80GB of an HGX/DGX A100 board: ECC on, 12 NVLinks up, MIG capable but off."""
    a100 = catalog_values("NVIDIA A100-SXM4-80GB")
    return {
        "name": a100["name"],
        "uuid": None,
        "serial": None,
        "pci_bus_id": "00000000:%02X:00.0" % _A100_BUSES[index % len(_A100_BUSES)],
        "pci_device_id": a100["pci_device_id"],
        "pci_subsystem_id": a100["pci_subsystem_id"],
        "board_part_number": a100["board_part_number"],
        "vbios_version": "92.00.45.00.05",
        "architecture": a100["architecture"],
        "compute_capability": a100["compute_capability"],
        "memory": {"total_mib": a100["memory_total_mib"], "reserved_mib": 591, "used_mib": 0},
        "bar1": {"total_mib": a100["bar1_total_mib"], "used_mib": 1},
        "temperature": {"gpu_c": 30 + index % 4, "slowdown_c": 89, "shutdown_c": 92},
        "power": {"draw_w": 61.127 + index, "limit_w": a100["limit_w"], "default_limit_w": a100["limit_w"],
                  "min_limit_w": a100["min_limit_w"], "max_limit_w": a100["max_limit_w"]},
        "fan_speed_pct": None,
        "clocks": {"graphics_mhz": 210, "sm_mhz": 210, "memory_mhz": 1593,
                   "max_graphics_mhz": 1410, "max_sm_mhz": 1410, "max_memory_mhz": 1593},
        "clock_event_mask": 0x1,
        "performance_state": 0,
        "utilization": {"gpu_pct": 0, "memory_pct": 0},
        "ecc": _ecc_clean(),
        "retired_pages": None,
        "remapped_rows": _rows_clean(),
        "pcie": {"gen_current": a100["pcie_gen_max"], "gen_max": a100["pcie_gen_max"], "width_current": 16,
                 "width_max": 16, "replay_counter": 0},
        "nvlinks": _links(a100["nvlinks"]),
        "compute_mode": pynvml.NVML_COMPUTEMODE_DEFAULT,
        "persistence_mode": True,
        "mig": {"current": 0, "pending": 0, "profiles": A100_80GB_GI_PROFILES, "gpu_instances": []},
        "processes": [],
        "fabric": None,
        "lost": False,
        "errors": {},
    }


def l40s_gpu(index):
    """One idle L40S (48 GB GDDR6, PCIe only): no NVLink, no MIG, no fabric, passive cooling."""
    l40s = catalog_values("NVIDIA L40S")
    return {
        "name": l40s["name"],
        "uuid": None,
        "serial": None,
        "pci_bus_id": "00000000:%02X:00.0" % _L40S_BUSES[index % len(_L40S_BUSES)],
        "pci_device_id": l40s["pci_device_id"],
        "pci_subsystem_id": l40s["pci_subsystem_id"],
        "board_part_number": l40s["board_part_number"],
        "vbios_version": "95.02.66.00.02",
        "architecture": l40s["architecture"],
        "compute_capability": l40s["compute_capability"],
        "memory": {"total_mib": l40s["memory_total_mib"], "reserved_mib": 567, "used_mib": 0},
        "bar1": {"total_mib": l40s["bar1_total_mib"], "used_mib": 1},
        "temperature": {"gpu_c": 27 + index % 3, "slowdown_c": 90, "shutdown_c": 93},
        "power": {"draw_w": 33.512 + index, "limit_w": l40s["limit_w"], "default_limit_w": l40s["limit_w"],
                  "min_limit_w": l40s["min_limit_w"], "max_limit_w": l40s["max_limit_w"]},
        "fan_speed_pct": None,
        "clocks": {"graphics_mhz": 210, "sm_mhz": 210, "memory_mhz": 405,
                   "max_graphics_mhz": 2520, "max_sm_mhz": 2520, "max_memory_mhz": 9001},
        "clock_event_mask": 0x1,
        "performance_state": 8,
        "utilization": {"gpu_pct": 0, "memory_pct": 0},
        "ecc": _ecc_clean(),
        "retired_pages": None,
        "remapped_rows": _rows_clean(),
        "pcie": {"gen_current": l40s["pcie_gen_max"], "gen_max": l40s["pcie_gen_max"], "width_current": 16,
                 "width_max": 16, "replay_counter": 0},
        "nvlinks": _links(l40s["nvlinks"]),
        "compute_mode": pynvml.NVML_COMPUTEMODE_DEFAULT,
        "persistence_mode": True,
        "mig": None,
        "processes": [],
        "fabric": None,
        "lost": False,
        "errors": {},
    }


def node(gpu_builder, count, driver_version):
    scenario = {"init_error": None, "errors": {}, "gpus": [gpu_builder(index) for index in range(count)]}
    return with_driver(scenario, driver_version)


def h100_node(driver_version="550.90.07"):
    return with_driver(scenario_h100_node(8), driver_version)


def identify(scenario, host_name, serial_prefix):
    """Gives each GPU a UUID and a serial of its own, so no two demo hosts share a GPU."""
    for index, gpu in enumerate(scenario["gpus"]):
        gpu["uuid"] = "GPU-%s" % uuid.uuid5(uuid.NAMESPACE_URL, "gpufleet-demo/%s/%d" % (host_name, index))
        gpu["serial"] = "%s%04d" % (serial_prefix, 17 + 131 * index)
        if gpu.get("fabric"):
            gpu["fabric"]["cluster_uuid"] = str(uuid.uuid5(uuid.NAMESPACE_URL, "gpufleet-demo/%s/fabric" % host_name))
    return scenario


def bus_id(gpu):
    """The sysfs / kernel log spelling of a scenario GPU's bus id: 0000:ab:00.0."""
    return normalize_pci_bus_id(gpu["pci_bus_id"])


def kernel_log_pci(gpu):
    """The Xid spelling: PCI:0000:ab:00."""
    return "PCI:" + bus_id(gpu)[:-2]


def process(pid, name, used_mib, gpu_instance_id=None, compute_instance_id=None):
    return {"pid": pid, "name": name, "used_mib": used_mib, "gpu_instance_id": gpu_instance_id,
            "compute_instance_id": compute_instance_id}


def load(gpu, utilization, draw_w, temperature_c, sm_mhz, used_mib, mask=0x0):
    """A GPU at work: P0, busy, clocks up, memory in use."""
    gpu["utilization"] = {"gpu_pct": utilization, "memory_pct": max(0, utilization - 35)}
    gpu["power"]["draw_w"] = draw_w
    gpu["temperature"]["gpu_c"] = temperature_c
    gpu["clocks"].update(graphics_mhz=sm_mhz, sm_mhz=sm_mhz, memory_mhz=gpu["clocks"]["max_memory_mhz"])
    gpu["memory"]["used_mib"] = used_mib
    gpu["clock_event_mask"] = mask
    gpu["performance_state"] = 0
    gpu["bar1"]["used_mib"] = 9
    return gpu


def gpu_instance(gi_id, profile_id, start, size, ci_profile, ci_slices):
    return {"id": gi_id, "profile_id": profile_id, "placement": {"start": start, "size": size},
            "compute_instances": [{"id": 0, "profile_id": ci_profile, "placement": {"start": 0, "size": ci_slices}}]}


def seven_1g_10gb():
    """7x 1g.10gb as `nvidia-smi mig -cgi 19,19,19,19,19,19,19 -C` leaves them: (GI id, placement start)."""
    return [gpu_instance(gi_id, GI_PROFILE_1G_10GB, start, 1, CI_PROFILE_1_SLICE, 1)
            for gi_id, start in ((7, 4), (8, 5), (9, 6), (11, 0), (12, 1), (13, 2), (14, 3))]


def two_3g_40gb():
    return [gpu_instance(1, GI_PROFILE_3G_40GB, 4, 4, CI_PROFILE_3_SLICE, 3),
            gpu_instance(2, GI_PROFILE_3G_40GB, 0, 4, CI_PROFILE_3_SLICE, 3)]


# ---------------------------------------------------------------- host files and commands

BASE_PROCESSES = {1: "systemd", 2: "kthreadd", 3: "rcu_gp", 4: "rcu_par_gp", 612: "systemd-journal",
                  655: "systemd-udevd", 1021: "systemd-network", 1043: "systemd-resolve", 1187: "cron",
                  1190: "dbus-daemon", 1203: "rsyslogd", 1254: "containerd", 1301: "sshd", 1422: "dockerd",
                  1533: "agetty"}
PROC_ENTRIES = ["acpi", "buddyinfo", "bus", "cmdline", "cpuinfo", "driver", "meminfo", "self", "stat", "sys",
                "uptime", "version"]
USR_LOCAL_ENTRIES = ["bin", "etc", "games", "include", "lib", "man", "sbin", "share", "src"]

# CUDA toolkit release -> (cudart, nvcc, driver bundled with the runfile) as version.json lists them
CUDA_RELEASES = {
    "11.4.4": ("11.4.148", "11.4.152", "470.82.01"),
    "11.7.1": ("11.7.99", "11.7.99", "515.65.01"),
    "11.8.0": ("11.8.89", "11.8.89", "520.61.05"),
    "12.2.2": ("12.2.140", "12.2.140", "535.104.05"),
    "12.4.1": ("12.4.127", "12.4.131", "550.54.15"),
}

AER_COUNTERS = {
    "correctable": ("RxErr", "BadTLP", "BadDLLP", "Rollover", "Timeout", "NonFatalErr", "CorrIntErr", "HeaderOF"),
    "uncorrectable": ("Undefined", "DLP", "SDES", "TLP", "FCP", "CmpltTO", "CmpltAbrt", "UnxCmplt", "RxOF",
                      "MalfTLP", "ECRC", "UnsupReq", "ACSViol", "UncorrIntErr", "BlockedTLP", "AtomicOpBlocked",
                      "TLPBlockedErr", "PoisonTLPBlocked"),
}

# routine kernel messages of a busy container host (docker bridge, perf sampling), in the window
ROUTINE_KERNEL_LINES = [
    ("2026-11-27T08:15:02", "IPv6: ADDRCONF(NETDEV_CHANGE): veth5e0c1d2: link becomes ready"),
    ("2026-11-27T08:15:02", "docker0: port 1(veth5e0c1d2) entered blocking state"),
    ("2026-11-27T08:15:02", "docker0: port 1(veth5e0c1d2) entered forwarding state"),
    ("2026-11-28T02:31:07", "perf: interrupt took too long (2509 > 2500), lowering kernel.perf_event_max_sample_rate "
                            "to 79500"),
    ("2026-11-29T11:20:03", "docker0: port 1(veth5e0c1d2) entered disabled state"),
    ("2026-11-29T11:20:03", "device veth5e0c1d2 left promiscuous mode"),
]


def systemctl_block(unit, state):
    """One unit as `systemctl show --property=...` prints it (Service properties before Unit ones).
    state: None (no such unit) or (ActiveState, UnitFileState, Restart[, Id of the unit it aliases])."""
    if state is None:
        return "Restart=no\nId=%s\nLoadState=not-found\nActiveState=inactive\nUnitFileState=\n" % unit
    active, unit_file_state, restart = state[:3]
    unit_id = state[3] if len(state) > 3 else unit
    return "Restart=%s\nId=%s\nLoadState=loaded\nActiveState=%s\nUnitFileState=%s\n" % (
        restart, unit_id, active, unit_file_state)


def cuda_version_json(release):
    cudart, nvcc, driver = CUDA_RELEASES[release]
    content = {
        "cuda": {"name": "CUDA SDK", "version": release},
        "cuda_cudart": {"name": "CUDA Runtime (cudart)", "version": cudart},
        "cuda_nvcc": {"name": "CUDA NVCC", "version": nvcc},
        "nvidia_driver": {"name": "NVIDIA Linux Driver", "version": driver},
    }
    return json.dumps(content, indent=3, sort_keys=True, separators=(",", " : ")) + "\n"


def aer_text(names, counts, total_name):
    counts = counts or {}
    lines = ["%s %d" % (name, counts.get(name, 0)) for name in names]
    lines.append("%s %d" % (total_name, sum(counts.values())))
    return "\n".join(lines) + "\n"


def docker_daemon_json(default_runtime=None):
    """/etc/docker/daemon.json as `nvidia-ctk runtime configure --runtime=docker [--set-as-default]` writes it."""
    config = {"runtimes": {"nvidia": {"args": [], "path": "nvidia-container-runtime"}}}
    if default_runtime:
        config["default-runtime"] = default_runtime
    return json.dumps(config, indent=4, sort_keys=True) + "\n"


CONTAINERD_DOCKER_DEFAULT = """disabled_plugins = ["cri"]

#root = "/var/lib/containerd"
#state = "/run/containerd"
#subreaper = true
#oom_score = 0

#[grpc]
#  address = "/run/containerd/containerd.sock"
#  uid = 0
#  gid = 0

#[debug]
#  address = "/run/containerd/debug.sock"
#  uid = 0
#  gid = 0
#  level = "info"
"""

CONTAINERD_WITH_NVIDIA = """version = 2

[plugins]

  [plugins."io.containerd.grpc.v1.cri"]

    [plugins."io.containerd.grpc.v1.cri".containerd]
      default_runtime_name = "nvidia"

      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes]

        [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]
          privileged_without_host_devices = false
          runtime_engine = ""
          runtime_root = ""
          runtime_type = "io.containerd.runc.v2"

          [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia.options]
            BinaryName = "/usr/bin/nvidia-container-runtime"
"""


# ipmitool -Z sdr elist of an HGX H100 chassis: FAN3 below its lower critical threshold, fan redundancy degraded,
# the inlet at 38 C; both power supply groups fine.
HGX_SDR = """\
Inlet Temp       | 01h | unc | 55.1 | 38 degrees C
Exhaust Temp     | 02h | ok  | 55.2 | 63 degrees C
FAN1             | 41h | ok  | 29.1 | 11200 RPM
FAN2             | 42h | ok  | 29.2 | 11340 RPM
FAN3             | 43h | lcr | 29.3 | 1120 RPM
FAN4             | 44h | ok  | 29.4 | 11270 RPM
Fan Redundancy   | 4fh | ok  | 29.5 | Redundancy Degraded
PSU1 Status      | 61h | ok  | 10.1 | Presence detected
PSU2 Status      | 62h | ok  | 10.2 | Presence detected
PSU3 Status      | 63h | ok  | 10.3 | Presence detected
PSU4 Status      | 64h | ok  | 10.4 | Presence detected
PS Redundancy    | 6fh | ok  | 10.5 | Fully Redundant
Total Power      | 70h | ok  | 21.1 | 5880 Watts
"""
HGX_SEL = """\
   1 | 11/20/26 | 08:02:11 GMT | Event Logging Disabled #0x07 | Log area reset/cleared | Asserted
   2 | 11/29/26 | 23:40:12 GMT | Temperature Inlet Temp | Upper Non-critical going high | Asserted | Reading 36 > Threshold 35 degrees C
   3 | 11/30/26 | 01:12:37 GMT | Fan FAN3 | Lower Critical going low | Asserted | Reading 1120 < Threshold 2000 RPM
   4 | 11/30/26 | 01:12:38 GMT | Fan Fan Redundancy | Redundancy Degraded | Asserted
"""
HGX_DCMI = """\
    Instantaneous power reading:                  5912 Watts
    Minimum during sampling period:               1204 Watts
    Maximum during sampling period:               6488 Watts
    Average power reading over sample period:     5790 Watts
    IPMI timestamp:                           Mon Nov 30 05:59:58 2026
    Sampling period:                          00000001 Seconds.
    Power reading state is:                   activated
"""
KUBELET_CONFIG = """\
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cgroupDriver: systemd
"""
# The NVIDIA device plugin's config on a Kubernetes inference node, changed from 4 replicas to 2 without a restart
# of the plugin: the kubelet still holds the 4 replicas it registered.
T4_TIME_SLICING = """\
version: v1
flags:
  migStrategy: none
sharing:
  timeSlicing:
    renameByDefault: false
    failRequestsGreaterThanOne: false
    resources:
    - name: nvidia.com/gpu
      replicas: 2
"""


class SimHost:
    """Builds a ReplayHost dict for one Ubuntu 22.04 host: files, folders, commands and programs."""

    def __init__(self, name, kernel=KERNEL):
        self.name = name
        self.bins = {"systemctl": "/usr/bin/systemctl", "journalctl": "/usr/bin/journalctl", "dmesg": "/usr/bin/dmesg"}
        self.files = {"/proc/sys/kernel/hostname": name + "\n", "/proc/sys/kernel/osrelease": kernel + "\n",
                      "/etc/os-release": OS_RELEASE_JAMMY}
        self.dirs = {}
        self.commands = {}
        self.units = {}
        self.pids = dict(BASE_PROCESSES)
        self.usr_local = list(USR_LOCAL_ENTRIES)
        self.kernel_lines = list(ROUTINE_KERNEL_LINES)

    # -- NVIDIA driver and services

    def nvidia_driver(self, version, open_module=True, nvidia_smi=True):
        self.files["/proc/driver/nvidia/version"] = proc_driver_version(version, open_module)
        if nvidia_smi:
            self.bins["nvidia-smi"] = "/usr/bin/nvidia-smi"
        self.service("nvidia-persistenced", restart="no")
        self.pids[1177] = "nvidia-persiste"
        return self

    def fabric_manager(self, active="active"):
        self.service("nvidia-fabricmanager", active=active, restart="no")
        if active == "active":
            self.pids[2210] = "nv-fabricmanage"
        return self

    def dcgm(self):
        self.service("nvidia-dcgm", restart="on-abort")
        self.units["dcgm.service"] = ("active", "enabled", "on-abort", "nvidia-dcgm.service")
        self.pids[2391] = "nv-hostengine"
        return self

    def service(self, name, active="active", unit_file_state="enabled", restart="no"):
        self.units[name + ".service"] = (active, unit_file_state, restart)
        return self

    def systemctl_show(self):
        units = [name + ".service" for _role, names in SERVICE_UNITS for name in names]
        argv = [self.bins["systemctl"], "show", "--property=" + SYSTEMCTL_PROPERTIES] + units
        stdout = "\n".join(systemctl_block(unit, self.units.get(unit)) for unit in units)
        self.commands[command_key(argv)] = {"rc": 0, "stdout": stdout, "stderr": ""}

    # -- CUDA and containers

    def cuda_toolkits(self, *releases):
        """Installs toolkits as the cuda-toolkit-X-Y packages do: /usr/local/cuda-X.Y, with the
        alternatives links /usr/local/cuda-X and /usr/local/cuda pointing at the newest."""
        newest_of_major = {}
        for release in releases:
            folder = "cuda-" + ".".join(release.split(".")[:2])
            self._cuda_folder(folder, release)
            newest_of_major[release.split(".")[0]] = release
        for major, release in newest_of_major.items():
            self._cuda_folder("cuda-" + major, release)
        self._cuda_folder("cuda", releases[-1])
        return self

    def _cuda_folder(self, folder, release):
        self.usr_local.append(folder)
        self.files["/usr/local/%s/version.json" % folder] = cuda_version_json(release)

    def container_toolkit(self, version, docker_default_runtime=None, containerd_config=CONTAINERD_DOCKER_DEFAULT):
        self.bins["nvidia-ctk"] = "/usr/bin/nvidia-ctk"
        self.commands["nvidia-ctk --version"] = {
            "rc": 0, "stdout": "NVIDIA Container Toolkit CLI version %s\n" % version, "stderr": ""}
        self.files["/etc/docker/daemon.json"] = docker_daemon_json(docker_default_runtime)
        self.files["/etc/containerd/config.toml"] = containerd_config
        return self

    def docker_without_nvidia(self):
        self.files["/etc/docker/daemon.json"] = json.dumps(
            {"log-driver": "json-file", "log-opts": {"max-file": "3", "max-size": "100m"}}, indent=2) + "\n"
        self.files["/etc/containerd/config.toml"] = CONTAINERD_DOCKER_DEFAULT
        return self

    # -- processes, PCIe AER, kernel log, nvidia-smi

    def process(self, pid, comm):
        self.pids[pid] = comm
        return self

    def gpu_processes(self, scenario, comm):
        """Every GPU process of the scenario is also a process of the host, with this comm."""
        for gpu in scenario["gpus"]:
            for entry in gpu.get("processes") or []:
                self.pids.setdefault(entry["pid"], comm)
        return self

    def aer(self, gpu, correctable=None, nonfatal=None, fatal=None):
        """The aer_dev_* files of one GPU; counts: {counter name: count}, totals are their sums."""
        counts = {"correctable": correctable, "nonfatal": nonfatal, "fatal": fatal}
        names = {"correctable": AER_COUNTERS["correctable"], "nonfatal": AER_COUNTERS["uncorrectable"],
                 "fatal": AER_COUNTERS["uncorrectable"]}
        for kind, filename, total_name in AER_FILES:
            path = "/sys/bus/pci/devices/%s/%s" % (bus_id(gpu), filename)
            self.files[path] = aer_text(names[kind], counts[kind], total_name)
        return self

    def aer_for_all(self, scenario):
        for gpu in scenario["gpus"]:
            self.aer(gpu)
        return self

    def kernel_log(self, *lines):
        """(ISO time without zone, message) pairs, in UTC; merged with the routine lines by time."""
        self.kernel_lines.extend(lines)
        return self

    def journalctl_output(self):
        lines = sorted(self.kernel_lines, key=lambda line: line[0])
        text = "".join("%s+0000 %s kernel: %s\n" % (stamp, self.name, message) for stamp, message in lines)
        argv = journalctl_argv(self.bins["journalctl"], KERNEL_LOG_WINDOW_HOURS)
        self.commands[command_key(argv)] = {"rc": 0, "stdout": text, "stderr": ""}

    def nvidia_smi_xml(self, text):
        self.commands["nvidia-smi -q -x"] = {"rc": 0, "stdout": text, "stderr": ""}
        return self

    # -- the chassis (BMC, in-band ipmitool) and Kubernetes

    def bmc(self, sdr, sel, clock, dcmi=None):
        """/dev/ipmi0 and ipmitool answering sdr elist, sel elist, sel time get and dcmi power reading."""
        self.dirs["/dev"] = sorted(["null", "zero", "tty", "ipmi0", "nvidia0", "nvidiactl"])
        self.bins["ipmitool"] = "/usr/bin/ipmitool"
        answers = ((SDR_ARGS, sdr), (SEL_ARGS, sel), (CLOCK_ARGS, clock), (DCMI_ARGS, dcmi))
        for args, text in answers:
            key = command_key(["ipmitool", "-I", "open", "-Z"] + list(args))
            self.commands[key] = ({"rc": 0, "stdout": text, "stderr": ""} if text is not None else
                                  {"rc": 1, "stdout": "", "stderr": "DCMI request failed because: Invalid command (c1)"})
        return self

    def kubernetes_node(self, device_plugin_config, registered):
        """A kubelet, the device plugin's config file and the devices it registered ({resource: [ids]})."""
        self.files["/var/lib/kubelet/config.yaml"] = KUBELET_CONFIG
        self.files["/etc/nvidia-device-plugin/config.yaml"] = device_plugin_config
        checkpoint = {"Data": {"PodDeviceEntries": None, "RegisteredDevices": registered}, "Checksum": 2876434481}
        self.files["/var/lib/kubelet/device-plugins/kubelet_internal_checkpoint"] = json.dumps(checkpoint)
        return self

    def to_dict(self):
        self.systemctl_show()
        self.journalctl_output()
        files = dict(self.files)
        for pid, comm in self.pids.items():
            files["/proc/%d/comm" % pid] = comm + "\n"
        dirs = dict(self.dirs)
        dirs["/proc"] = sorted(PROC_ENTRIES + [str(pid) for pid in self.pids])
        dirs["/usr/local"] = sorted(self.usr_local)
        return {"now": NOW, "bins": dict(self.bins), "files": files, "dirs": dirs, "commands": dict(self.commands)}


def gpu_host(name, scenario, open_module=True):
    """An NVIDIA host with the usual stack: driver, persistenced, docker with the NVIDIA runtime."""
    host = SimHost(name).nvidia_driver(scenario["driver_version"], open_module=open_module)
    host.container_toolkit("1.16.2").aer_for_all(scenario)
    host.dirs["/proc/driver/nvidia/gpus"] = sorted(bus_id(gpu) for gpu in scenario["gpus"])
    return host


def training_node(name, scenario, cuda=("12.2.2", "12.4.1"), open_module=True):
    """An 8-GPU NVSwitch (HGX) training node: fabric manager and DCGM run beside persistenced."""
    host = gpu_host(name, scenario, open_module).fabric_manager().dcgm()
    host.cuda_toolkits(*cuda)
    return host


def api_mismatch_lines(stamp, client, kernel):
    """The driver's four-line message, one journal record per line."""
    return [(stamp, "NVRM: API mismatch: the client has the version %s, but" % client),
            (stamp, "NVRM: this kernel module has the version %s.  Please" % kernel),
            (stamp, "NVRM: make sure that this kernel module and all NVIDIA driver"),
            (stamp, "NVRM: components have the same version.")]


# ---------------------------------------------------------------- the hosts

def training_load(gpu, index, pid, used_mib=68712, draw_w=640.0):
    load(gpu, 98, draw_w + 3.25 * index, 61 + index % 5, 1980, used_mib)
    gpu["processes"] = [process(pid, "/usr/bin/python3", used_mib - 512)]
    return gpu


def host_h100_ok_01():
    name = "gpu-h100-ok-01"
    scenario = identify(h100_node(), name, "165242301")
    for index, gpu in enumerate(scenario["gpus"]):
        training_load(gpu, index, 214301 + index)
    host = training_node(name, scenario).gpu_processes(scenario, "pt_main_thread")
    return dict(name=name, group="h100_training", source="nvml", nvml=scenario, host=host.to_dict(),
                description="Healthy 8x H100 SXM training node under load: the baseline, nothing to report")


def host_h100_xid79_02():
    name = "gpu-h100-xid79-02"
    scenario = identify(h100_node(), name, "165242302")
    lost = scenario["gpus"][5]
    lost["lost"] = True
    host = training_node(name, scenario).kernel_log(
        ("2026-11-29T21:14:07", "NVRM: GPU at %s: %s" % (kernel_log_pci(lost), lost["uuid"])),
        ("2026-11-29T21:14:07", "NVRM: GPU Board Serial Number: %s" % lost["serial"]),
        ("2026-11-29T21:14:07", "NVRM: Xid (%s): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus."
         % kernel_log_pci(lost)),
        ("2026-11-29T21:14:07", "NVRM: GPU %s: GPU has fallen off the bus." % bus_id(lost)),
        ("2026-11-29T21:14:08", "NVRM: A GPU crash dump has been created. If possible, please run"),
        ("2026-11-29T21:14:08", "NVRM: nvidia-bug-report.sh as root to collect this data before"),
        ("2026-11-29T21:14:08", "NVRM: the NVIDIA kernel module is unloaded."),
    )
    return dict(name=name, group="h100_training", source="nvml", nvml=scenario, host=host.to_dict(),
                description="Xid 79 on GPU 5 (0000:ab:00.0): the GPU fell off the bus and NVML reports it lost")


def host_h100_mismatch_03():
    name = "gpu-h100-mismatch-03"
    scenario = identify(h100_node("550.90.07"), name, "165242303")
    scenario["init_error"] = LIB_RM_VERSION_MISMATCH
    host = training_node(name, scenario)
    # the packages were upgraded to 550.90.07 without a reboot: the loaded module is still 550.54.15,
    # and the restarted fabric manager (550.90.07) cannot talk to it
    host.files["/proc/driver/nvidia/version"] = proc_driver_version("550.54.15", open_module=True)
    host.fabric_manager(active="failed")
    host.commands["nvidia-smi -q -x"] = {
        "rc": 18, "stdout": "Failed to initialize NVML: Driver/library version mismatch\nNVML library version: 550.90\n",
        "stderr": ""}
    host.kernel_log(*(api_mismatch_lines("2026-11-29T14:02:11", "550.90.07", "550.54.15")
                      + api_mismatch_lines("2026-11-29T14:02:13", "550.90.07", "550.54.15")
                      + api_mismatch_lines("2026-11-30T05:41:30", "550.90.07", "550.54.15")))
    return dict(name=name, group="h100_training", source="nvml", nvml=scenario, host=host.to_dict(),
                description="Driver upgraded to 550.90.07 without a reboot: kernel module 550.54.15, NVML version mismatch")


def host_a100_oldcuda_04():
    name = "gpu-a100-oldcuda-04"
    scenario = identify(node(a100_gpu, 8, "470.256.02"), name, "132322004")
    host = SimHost(name).nvidia_driver("470.256.02", open_module=False)
    host.container_toolkit("1.16.2").aer_for_all(scenario).fabric_manager().dcgm()
    host.cuda_toolkits("11.4.4", "12.4.1")
    return dict(name=name, group="a100_training", source="nvml", nvml=scenario, host=host.to_dict(),
                description="8x A100 on driver 470.256.02 (CUDA 11.4) with the CUDA 12.4 toolkit installed")


def host_h100_thermal_05():
    name = "gpu-h100-thermal-05"
    scenario = identify(h100_node(), name, "165242305")
    hot = {2: 87, 3: 88, 6: 86}
    for index, gpu in enumerate(scenario["gpus"]):
        temperature = hot.get(index, 74 + index % 4)
        mask = SW_POWER_CAP | (SW_THERMAL_SLOWDOWN | HW_THERMAL_SLOWDOWN if index in hot else 0)
        load(gpu, 100, 496.5 + index * 0.375, temperature, 1275 if index in hot else 1590, 71168, mask)
        gpu["power"]["limit_w"] = 500.0
        gpu["processes"] = [process(77301 + index, "/usr/bin/python3", 70656)]
    host = training_node(name, scenario).gpu_processes(scenario, "pt_main_thread")
    host.bmc(HGX_SDR, HGX_SEL, "11/30/26 06:00:03 GMT\n", HGX_DCMI)
    return dict(name=name, group="h100_training", source="nvml", nvml=scenario, host=host.to_dict(),
                description="Power capped at 500 W of 700 W; GPUs 2, 3 and 6 at 86-88 C in thermal slowdown; "
                            "BMC: FAN3 failed, inlet 38 C")


def host_h100_pcie_06():
    name = "gpu-h100-pcie-06"
    scenario = identify(h100_node(), name, "165242306")
    degraded = scenario["gpus"][3]
    degraded["pcie"].update(width_current=8, replay_counter=4127)
    host = training_node(name, scenario)
    host.aer(degraded, correctable={"RxErr": 18, "BadTLP": 27, "BadDLLP": 394, "Timeout": 41})
    bus = bus_id(degraded)
    for stamp, status, bit in (("2026-11-28T17:52:36", "00000080", "[ 7] BadDLLP"),
                               ("2026-11-29T09:03:11", "00001000", "[12] Timeout"),
                               ("2026-11-30T04:27:58", "00000080", "[ 7] BadDLLP")):
        host.kernel_log(
            (stamp, "pcieport 0000:5c:00.0: AER: Corrected error received: %s" % bus),
            (stamp, "nvidia %s: PCIe Bus Error: severity=Corrected, type=Data Link Layer, (Transmitter ID)" % bus),
            (stamp, "nvidia %s:   device [10de:2330] error status/mask=%s/00002000" % (bus, status)),
            (stamp, "nvidia %s:    %s" % (bus, bit)))
    return dict(name=name, group="h100_training", source="nvml", nvml=scenario, host=host.to_dict(),
                description="GPU 3 (0000:5d:00.0) PCIe link at x8 of x16 (gen5), replays and AER correctable errors")


def host_a100_remap_07():
    name = "gpu-a100-remap-07"
    scenario = identify(node(a100_gpu, 8, "535.183.06"), name, "132322007")
    bad = scenario["gpus"][6]
    bad["remapped_rows"].update(uncorrectable=1, pending=True)
    bad["ecc"].update(volatile_uncorrected=1, aggregate_uncorrected=1)
    host = SimHost(name).nvidia_driver("535.183.06").container_toolkit("1.16.2").aer_for_all(scenario)
    host.fabric_manager().dcgm().cuda_toolkits("12.2.2")
    host.kernel_log(
        ("2026-11-29T16:48:22", "NVRM: Xid (%s): 94, pid=2741196, name=python3, Contained ECC error"
         % kernel_log_pci(bad)),
        ("2026-11-29T16:48:22", "NVRM: Xid (%s): 63, pid='<unknown>', name=<unknown>, Row Remapper: New row "
                                "(0x0000000021a4f310) marked for remapping, reset gpu to activate." % kernel_log_pci(bad)))
    return dict(name=name, group="a100_training", source="nvml", nvml=scenario, host=host.to_dict(),
                description="GPU 6 (0000:b7:00.0) has a row remap pending after an uncorrectable ECC error")


def mig_node(name, serial_prefix):
    scenario = identify(node(a100_gpu, 8, "535.183.06"), name, serial_prefix)
    host = SimHost(name).nvidia_driver("535.183.06").container_toolkit("1.16.2", docker_default_runtime="nvidia")
    host.aer_for_all(scenario).fabric_manager().dcgm().cuda_toolkits("12.2.2")
    return scenario, host


def host_a100_migdrift_08():
    name = "gpu-a100-migdrift-08"
    scenario, host = mig_node(name, "132322008")
    for gpu in scenario["gpus"]:
        gpu["mig"].update(current=1, pending=1, gpu_instances=seven_1g_10gb())
    first = scenario["gpus"][0]
    first["memory"]["used_mib"] = 16742
    first["processes"] = [process(90412, "/opt/tritonserver/bin/tritonserver", 8371, 7, 0),
                          process(90518, "/opt/tritonserver/bin/tritonserver", 8371, 11, 0)]
    host.gpu_processes(scenario, "tritonserver")
    return dict(name=name, group="a100_mig", source="nvml", nvml=scenario, host=host.to_dict(),
                description="MIG on all 8 A100s as 7x 1g.10gb each, not the intended 2x 3g.40gb")


def host_a100_migpending_09():
    name = "gpu-a100-migpending-09"
    scenario, host = mig_node(name, "132322009")
    for index, gpu in enumerate(scenario["gpus"]):
        if index < 4:
            gpu["mig"].update(current=1, pending=1, gpu_instances=two_3g_40gb())
        else:
            gpu["mig"].update(current=0, pending=1)
    return dict(name=name, group="a100_mig", source="nvml", nvml=scenario, host=host.to_dict(),
                description="MIG enabled on GPUs 4-7 but pending a GPU reset; GPUs 0-3 run 2x 3g.40gb")


OOM_KILL_LINES = [
    ("2026-11-30T03:41:12", "python invoked oom-killer: gfp_mask=0xcc0(GFP_KERNEL), order=0, oom_score_adj=0"),
    ("2026-11-30T03:41:12", "oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/,mems_allowed=0-1,"
                            "oom_memcg=/system.slice/inference.service,task_memcg=/system.slice/inference.service,"
                            "task=python,pid=31007,uid=1001"),
    ("2026-11-30T03:41:12", "Memory cgroup out of memory: Killed process 31007 (python) total-vm:60342100kB, "
                            "anon-rss:24876012kB, file-rss:512000kB, shmem-rss:0kB, UID:1001 pgtables:50212kB "
                            "oom_score_adj:0"),
]


def host_l40s_crowded_10():
    name = "gpu-l40s-crowded-10"
    scenario = identify(node(l40s_gpu, 4, "550.127.05"), name, "132452310")
    workers = [3812] * 4 + [3750] * 4 + [3706] * 4
    crowded = load(scenario["gpus"][0], 97, 297.84, 71, 2430, sum(workers))
    crowded["processes"] = [process(31011 + position, "/opt/conda/bin/python", used)
                            for position, used in enumerate(workers)]
    for index in (1, 2, 3):
        gpu = load(scenario["gpus"][index], 42 + 6 * index, 182.5 + index, 55 + index, 2280, 30720)
        gpu["processes"] = [process(31100 + 10 * index + worker, "/opt/conda/bin/python", 15360) for worker in (0, 1)]
    host = gpu_host(name, scenario)
    host.container_toolkit("1.16.2", containerd_config=CONTAINERD_WITH_NVIDIA).cuda_toolkits("12.4.1")
    host.gpu_processes(scenario, "python")
    # a 13th worker, started before the others, ran the service's cgroup out of memory (tools/demo_evidence.py)
    host.kernel_log(*OOM_KILL_LINES)
    return dict(name=name, group="inference", source="nvml", nvml=scenario, host=host.to_dict(),
                description="4x L40S; GPU 0 shared by 12 Python workers using 45072 of 46068 MiB")


def host_h100_mps_11():
    name = "gpu-h100-mps-11"
    scenario = identify(h100_node(), name, "165242311")
    server = process(48211, "nvidia-cuda-mps-server", 506)
    for index, gpu in enumerate(scenario["gpus"]):
        clients = [process(48305 + 2 * index + client, "/usr/bin/python3", 33280) for client in range(2 if index < 4 else 1)]
        load(gpu, 91, 588.0 + index, 58 + index % 4, 1980, 506 + sum(client["used_mib"] for client in clients))
        gpu["compute_mode"] = pynvml.NVML_COMPUTEMODE_EXCLUSIVE_PROCESS
        gpu["processes"] = [dict(server)] + clients
    host = training_node(name, scenario).service("nvidia-mps", restart="on-failure")
    host.process(48190, "nvidia-cuda-mps").process(48211, "nvidia-cuda-mps")
    host.gpu_processes(scenario, "pt_main_thread")
    return dict(name=name, group="h100_training", source="nvml", nvml=scenario, host=host.to_dict(),
                description="MPS control daemon (nvidia-mps.service) serving all 8 H100s in exclusive-process mode")


def host_h100_nvlink_12():
    name = "gpu-h100-nvlink-12"
    scenario = identify(h100_node(), name, "165242312")
    gpu = scenario["gpus"][2]
    links = gpu["nvlinks"]
    links[7] = {"active": False, "errors": {"replay": 0, "recovery": 12, "crc_flit": 3, "crc_data": 0}}
    links[6]["errors"].update(replay=41, recovery=3, crc_flit=17)
    links[8]["errors"].update(replay=29, recovery=2, crc_flit=9)
    host = training_node(name, scenario).kernel_log(
        ("2026-11-29T02:17:45", "NVRM: Xid (%s): 74, pid='<unknown>', name=<unknown>, NVLink: fatal error "
                                "detected on link 7(0x0, 0x0, 0x0, 0x0, 0x10000, 0x0, 0x0)" % kernel_log_pci(gpu)))
    return dict(name=name, group="h100_training", source="nvml", nvml=scenario, host=host.to_dict(),
                description="NVLink 7 of GPU 2 (0000:3a:00.0) down after Xid 74; errors on links 6 and 8")


def host_cpu_nodriver_13():
    name = "cpu-node-nodriver-13"
    scenario = {"driver_version": None, "nvml_version": None, "cuda_driver_version": None,
                "init_error": DRIVER_NOT_LOADED, "errors": {}, "missing_functions": [], "gpus": []}
    host = SimHost(name).docker_without_nvidia()
    return dict(name=name, group="cpu_nodes", source="nvml", nvml=scenario, host=host.to_dict(),
                description="CPU node: libnvidia-ml from the base image, no NVIDIA kernel module, no nvidia-smi")


def read_t4_sample():
    with open(T4_SAMPLE) as handle:
        return handle.read()


def host_t4_nvsmi_14():
    name = "gpu-t4-nvsmi-14"
    host = SimHost(name).nvidia_driver("515.105.01", open_module=False)
    host.nvidia_smi_xml(read_t4_sample()).container_toolkit("1.13.5").cuda_toolkits("11.7.1")
    # a pass-through GPU of a VM: the virtual PCIe port exposes no AER, so there are no aer_dev_* files
    host.process(1318, "Xorg").process(48211, "python3")
    gpu_uuid = "GPU-c325c434-8090-9372-31f0-cfc1d0545b27"
    host.kubernetes_node(T4_TIME_SLICING, {"nvidia.com/gpu": ["%s::%d" % (gpu_uuid, replica) for replica in range(4)]})
    return dict(name=name, group="inference", source="nvidia_smi", nvml=None, host=host.to_dict(),
                description="Tesla T4 without pynvml: facts from nvidia-smi -q -x (515.105.01); "
                            "k8s node advertising stale replicas")


def gsp_timeout_line(gpu, index, pid):
    return ("NVRM: Xid (%s): 119, pid=%d, name=python3, Timeout after 6s of waiting for RPC response from "
            "GPU%d GSP! Expected function 76 (GSP_RM_CONTROL) (0x20802a02 0x8)." % (kernel_log_pci(gpu), pid, index))


def gsp_host(name, serial_prefix, stamps):
    """An H100 node still on 550.54.15 whose GSP firmware times out on two GPUs: with its twin, the same
    Xid on every host of one driver version, which points at the driver and not at the cards."""
    scenario = identify(h100_node("550.54.15"), name, serial_prefix)
    lines = []
    for (index, stamp, pid) in stamps:
        lines.append((stamp, gsp_timeout_line(scenario["gpus"][index], index, pid)))
    host = training_node(name, scenario).kernel_log(*lines)
    return dict(name=name, group="h100_training", source="nvml", nvml=scenario, host=host.to_dict(),
                description="Driver 550.54.15 (not yet upgraded): Xid 119 GSP RPC timeouts on two GPUs, like its twin")


def host_h100_gsp_15():
    return gsp_host("gpu-h100-gsp-15", "165242315",
                    [(1, "2026-11-29T14:02:11", 40211), (4, "2026-11-29T14:02:19", 40215)])


def host_h100_gsp_16():
    return gsp_host("gpu-h100-gsp-16", "165242316",
                    [(0, "2026-11-29T18:40:02", 51877), (6, "2026-11-30T01:12:45", 52990)])


HOST_BUILDERS = (
    host_h100_ok_01, host_h100_xid79_02, host_h100_mismatch_03, host_a100_oldcuda_04, host_h100_thermal_05,
    host_h100_pcie_06, host_a100_remap_07, host_a100_migdrift_08, host_a100_migpending_09, host_l40s_crowded_10,
    host_h100_mps_11, host_h100_nvlink_12, host_cpu_nodriver_13, host_t4_nvsmi_14, host_h100_gsp_15,
    host_h100_gsp_16,
)


def demo_hosts():
    """Every demo host, freshly built (callers may change what they get)."""
    import demo_fabric_hosts  # its hosts build on this module's helpers too
    import demo_workload_hosts  # its hosts build on this module's helpers
    return [copy.deepcopy(build()) for build in
            HOST_BUILDERS + demo_workload_hosts.HOST_BUILDERS + demo_fabric_hosts.HOST_BUILDERS]
