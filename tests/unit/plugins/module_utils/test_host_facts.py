"""Host facts read through ReplayHost fixtures: /proc, os-release, systemctl, CUDA
toolkits, container runtime configuration and PCIe AER counters."""

import copy
import os
from xml.etree import ElementTree

import pytest

from ansible_collections.gpufleet.core.plugins.module_utils.facts_model import (
    new_facts, new_gpu, normalize_pci_bus_id)
from ansible_collections.gpufleet.core.plugins.module_utils.host_facts import (
    collect_host, collect_pcie_aer, parse_systemctl_show, read_kernel_module_version)
from ansible_collections.gpufleet.core.plugins.module_utils.host_io import ReplayHost
from tests.support.schema_check import ROOT, assert_valid_facts

# --- /proc/driver/nvidia/version ------------------------------------------------------------

# First lines as printed by real drivers (quoted in public issues and READMEs).
PROPRIETARY_535 = ("NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.154.05  Thu Dec 28 15:37:48 UTC 2023\n"
                   "GCC version:  gcc version 11.4.0 (Ubuntu 11.4.0-1ubuntu1~22.04)\n")
OPEN_580 = ("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.95.05  Release Build  "
            "(dvs-builder@U22-I3-B17-02-5)  Tue Sep 23 09:55:41 UTC 2025\n"
            "GCC version:  gcc version 11.4.0 (Ubuntu 11.4.0-1ubuntu1~22.04.2) \n")


@pytest.mark.parametrize("text, version", [
    (PROPRIETARY_535, "535.154.05"),
    (OPEN_580, "580.95.05"),
    ("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  570.124.06  Release Build  (dvs-builder@U16-I3-A16-1-1)"
     "  Wed Feb 26 00:50:35 UTC 2025\n", "570.124.06"),
    ("NVRM version: NVIDIA UNIX Open Kernel Module for aarch64  580.65.06  Release Build\n", "580.65.06"),
    ("NVRM version: NVIDIA UNIX Open Kernel Module  570.86.15  Release Build\n", "570.86.15"),
    ("NVRM version: NVIDIA UNIX x86_64 Kernel Module  515.76  Mon Sep 12 19:21:56 UTC 2022\n", "515.76"),
    ("garbage\n", None),
    ("", None),
    (None, None),
])
def test_kernel_module_version(text, version):
    files = {} if text is None else {"/proc/driver/nvidia/version": text}
    assert read_kernel_module_version(ReplayHost({"files": files})) == version


# --- a whole host ---------------------------------------------------------------------------

UBUNTU_2204 = """\
PRETTY_NAME="Ubuntu 22.04.4 LTS"
NAME="Ubuntu"
VERSION_ID="22.04"
VERSION="22.04.4 LTS (Jammy Jellyfish)"
VERSION_CODENAME=jammy
ID=ubuntu
ID_LIKE=debian
HOME_URL="https://www.ubuntu.com/"
UBUNTU_CODENAME=jammy
"""

UNITS = ("nvidia-persistenced.service nvidia-fabricmanager.service nvidia-mps.service "
         "nvidia-cuda-mps-control.service nvidia-dcgm.service dcgm.service")
SYSTEMCTL_CMD = "systemctl show --property=Id,LoadState,ActiveState,UnitFileState,Restart " + UNITS


def _block(unit, load, active, file_state, restart):
    return "Restart=%s\nId=%s\nLoadState=%s\nActiveState=%s\nUnitFileState=%s\n" % (
        restart, unit, load, active, file_state)


SYSTEMCTL_OUT = "\n".join([
    _block("nvidia-persistenced.service", "loaded", "active", "enabled", "always"),
    _block("nvidia-fabricmanager.service", "loaded", "failed", "enabled", "on-failure"),
    _block("nvidia-mps.service", "not-found", "inactive", "", "no"),
    _block("nvidia-cuda-mps-control.service", "not-found", "inactive", "", "no"),
    # dcgm.service is an alias of nvidia-dcgm.service on DCGM 3 packages: same Id twice
    _block("nvidia-dcgm.service", "loaded", "inactive", "disabled", "on-abnormal"),
    _block("nvidia-dcgm.service", "loaded", "inactive", "disabled", "on-abnormal"),
])

VERSION_JSON_124 = '{\n   "cuda" : {\n      "name" : "CUDA SDK",\n      "version" : "12.4.1"\n   },\n' \
                   '   "cuda_cudart" : {\n      "name" : "CUDA Runtime (cudart)",\n      "version" : "12.4.127"\n   }\n}\n'
DAEMON_JSON = ('{\n    "default-runtime": "nvidia",\n    "runtimes": {\n        "nvidia": {\n'
               '            "args": [],\n            "path": "nvidia-container-runtime"\n        }\n    }\n}\n')
CONTAINERD_TOML = """\
version = 2

[plugins]
  [plugins."io.containerd.grpc.v1.cri"]
    [plugins."io.containerd.grpc.v1.cri".containerd]
      default_runtime_name = "nvidia"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes]
        [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]
          privileged_without_host_devices = false
          runtime_type = "io.containerd.runc.v2"
          [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia.options]
            BinaryName = "/usr/bin/nvidia-container-runtime"
"""

BASE_FIXTURE = {
    "now": 1796040000,
    "bins": {"systemctl": "/usr/bin/systemctl", "nvidia-ctk": "/usr/bin/nvidia-ctk"},
    "files": {
        "/proc/sys/kernel/hostname": "gpu-node-07\n",
        "/proc/sys/kernel/osrelease": "5.15.0-105-generic\n",
        "/etc/os-release": UBUNTU_2204,
        "/proc/1/comm": "systemd\n",
        "/proc/2211/comm": "nvidia-persiste\n",
        "/proc/4242/comm": "nvidia-cuda-mps\n",
        "/usr/local/cuda/version.json": VERSION_JSON_124,
        "/usr/local/cuda-12/version.json": VERSION_JSON_124,
        "/usr/local/cuda-12.4/version.json": VERSION_JSON_124,
        "/usr/local/cuda-11.0/version.txt": "CUDA Version 11.0.228\n",
        "/etc/docker/daemon.json": DAEMON_JSON,
        "/etc/containerd/config.toml": CONTAINERD_TOML,
    },
    "dirs": {
        "/proc": ["1", "2211", "4242", "acpi", "self", "uptime"],
        "/usr/local": ["bin", "cuda", "cuda-11.0", "cuda-12", "cuda-12.4", "cuda-samples", "lib", "share"],
    },
    "commands": {
        SYSTEMCTL_CMD: {"rc": 0, "stdout": SYSTEMCTL_OUT},
        "nvidia-ctk --version": {"rc": 0, "stdout": "NVIDIA Container Toolkit CLI version 1.17.8\n"
                                                    "commit: f202b80a9b9d0db00d9b1d73c0128c8962c55f4d\n"},
    },
}


def _fixture(**changes):
    fixture = copy.deepcopy(BASE_FIXTURE)
    for section, values in changes.items():
        for key, value in values.items():
            if value is None:
                fixture[section].pop(key, None)
            else:
                fixture[section][key] = value
    return fixture


def _collect(fixture, extra_services=()):
    facts = new_facts()
    facts["collected_at"] = "2026-11-30T12:00:00Z"
    collect_host(ReplayHost(fixture), facts, extra_services=extra_services)
    assert_valid_facts(facts)
    return facts


def test_full_host():
    facts = _collect(BASE_FIXTURE)
    host = facts["host"]
    assert host["hostname"] == "gpu-node-07"
    assert host["kernel"] == "5.15.0-105-generic"
    assert host["os"] == {"id": "ubuntu", "version_id": "22.04", "pretty_name": "Ubuntu 22.04.4 LTS"}
    assert host["services"] == {
        "persistenced": {"name": "nvidia-persistenced", "state": "running", "enabled": True, "restart": "always"},
        "fabricmanager": {"name": "nvidia-fabricmanager", "state": "failed", "enabled": True, "restart": "on-failure"},
        "mps": {"name": "nvidia-mps", "state": "not_found", "enabled": None, "restart": None},
        "dcgm": {"name": "nvidia-dcgm", "state": "stopped", "enabled": False, "restart": "on-abnormal"},
    }
    assert host["mps_daemon_running"] is True
    assert host["cuda_toolkits"] == [{"path": "/usr/local/cuda-11.0", "version": "11.0.228"},
                                     {"path": "/usr/local/cuda-12.4", "version": "12.4.1"}]
    assert host["container_toolkit"] == {"version": "1.17.8", "docker_nvidia_runtime": True,
                                         "docker_default_runtime": "nvidia", "containerd_nvidia_runtime": True}
    assert facts["errors"] == []


def test_absent_sources_give_null_not_guesses():
    fixture = {"now": 1796040000, "bins": {}, "files": {}, "dirs": {}, "commands": {}}
    host = _collect(fixture)["host"]
    assert host["hostname"] is None and host["kernel"] is None
    assert host["os"] == {"id": None, "version_id": None, "pretty_name": None}
    assert host["mps_daemon_running"] is None
    assert host["cuda_toolkits"] == []
    assert host["container_toolkit"] == {"version": None, "docker_nvidia_runtime": None,
                                         "docker_default_runtime": None, "containerd_nvidia_runtime": None}
    assert set(s["state"] for s in host["services"].values()) == {"unknown"}


def test_systemctl_missing_leaves_states_unknown():
    services = _collect(_fixture(bins={"systemctl": None}))["host"]["services"]
    assert services["persistenced"] == {"name": "nvidia-persistenced", "state": "unknown",
                                        "enabled": None, "restart": None}


def test_systemctl_without_systemd_is_an_error_entry():
    failed = {"rc": 1, "stderr": "System has not been booted with systemd as init system (PID 1). Can't operate.\n"
                                 "Failed to connect to bus: Host is down\n"}
    facts = _collect(_fixture(commands={SYSTEMCTL_CMD: failed}))
    assert set(s["state"] for s in facts["host"]["services"].values()) == {"unknown"}
    assert facts["errors"] == [{"gpu": None, "call": "systemctl show", "code": 1, "reason":
                                "exit status 1: System has not been booted with systemd as init system (PID 1). "
                                "Can't operate."}]


def test_extra_services_and_the_older_dcgm_unit_name():
    command = SYSTEMCTL_CMD + " slurmd.service"
    out = "\n".join([
        _block("nvidia-persistenced.service", "loaded", "active", "enabled", "always"),
        _block("nvidia-fabricmanager.service", "not-found", "inactive", "", "no"),
        _block("nvidia-mps.service", "not-found", "inactive", "", "no"),
        _block("nvidia-cuda-mps-control.service", "loaded", "active", "enabled", "on-failure"),
        _block("nvidia-dcgm.service", "not-found", "inactive", "", "no"),
        _block("dcgm.service", "loaded", "active", "enabled", "on-abnormal"),
        _block("slurmd.service", "loaded", "activating", "enabled", "on-failure"),
    ])
    services = _collect(_fixture(commands={command: {"rc": 0, "stdout": out}}),
                        extra_services=["slurmd"])["host"]["services"]
    assert services["mps"]["name"] == "nvidia-cuda-mps-control" and services["mps"]["state"] == "running"
    assert services["dcgm"] == {"name": "dcgm", "state": "running", "enabled": True, "restart": "on-abnormal"}
    assert services["fabricmanager"]["state"] == "not_found"
    assert services["slurmd"] == {"name": "slurmd", "state": "unknown", "enabled": True, "restart": "on-failure"}


def test_systemctl_blocks_are_matched_by_id_when_one_is_missing():
    blocks = parse_systemctl_show(SYSTEMCTL_OUT)
    assert len(blocks) == 6 and blocks[1]["ActiveState"] == "failed"
    short = "\n".join(SYSTEMCTL_OUT.split("\n\n")[:2])
    services = _collect(_fixture(commands={SYSTEMCTL_CMD: {"rc": 0, "stdout": short}}))["host"]["services"]
    assert services["fabricmanager"]["state"] == "failed"
    assert services["dcgm"]["state"] == "unknown"


def test_garbage_daemon_json_is_an_error_and_null():
    facts = _collect(_fixture(files={"/etc/docker/daemon.json": '{"runtimes": {"nvidia": '}))
    toolkit = facts["host"]["container_toolkit"]
    assert toolkit["docker_nvidia_runtime"] is None and toolkit["docker_default_runtime"] is None
    assert [e["call"] for e in facts["errors"]] == ["read /etc/docker/daemon.json"]
    assert facts["errors"][0]["reason"].startswith("not valid JSON")


def test_daemon_json_without_nvidia_runtime():
    facts = _collect(_fixture(files={"/etc/docker/daemon.json": '{"log-driver": "journald"}\n'}))
    toolkit = facts["host"]["container_toolkit"]
    assert toolkit["docker_nvidia_runtime"] is False and toolkit["docker_default_runtime"] is None


def test_containerd_dropin_and_commented_runtime():
    commented = "\n".join("# " + line for line in CONTAINERD_TOML.splitlines())
    fixture = _fixture(files={"/etc/containerd/config.toml": commented})
    assert _collect(fixture)["host"]["container_toolkit"]["containerd_nvidia_runtime"] is False
    dropin = ('[plugins."io.containerd.cri.v1.runtime".containerd.runtimes.nvidia.options]\n'
              'BinaryName = "/usr/bin/nvidia-container-runtime"\n')
    fixture["dirs"]["/etc/containerd/conf.d"] = ["99-nvidia.toml"]
    fixture["files"]["/etc/containerd/conf.d/99-nvidia.toml"] = dropin
    assert _collect(fixture)["host"]["container_toolkit"]["containerd_nvidia_runtime"] is True


def test_container_cli_version_when_nvidia_ctk_is_missing():
    cli_out = ("cli-version: 1.14.6\nlib-version: 1.14.6\nbuild date: 2024-02-27T20:52+0000\n"
               "build revision: d2eb0afe86f0b643e33624ee64f065dd60e952d4\nbuild platform: x86_64\n")
    fixture = _fixture(bins={"nvidia-ctk": None, "nvidia-container-cli": "/usr/bin/nvidia-container-cli"},
                       commands={"nvidia-container-cli --version": {"rc": 0, "stdout": cli_out}})
    assert _collect(fixture)["host"]["container_toolkit"]["version"] == "1.14.6"


def test_failing_nvidia_ctk_is_an_error():
    fixture = _fixture(commands={"nvidia-ctk --version": {"rc": None, "timed_out": True}})
    facts = _collect(fixture)
    assert facts["host"]["container_toolkit"]["version"] is None
    assert facts["errors"][0]["call"] == "nvidia-ctk --version"


def test_cuda_toolkit_rules():
    # /usr/local/cuda with its own version (runfile install straight into it) is kept;
    # a broken version.json falls back to version.txt and is reported.
    fixture = _fixture(
        files={"/usr/local/cuda/version.json": None, "/usr/local/cuda-12/version.json": None,
               "/usr/local/cuda/version.txt": "CUDA Version 10.2.89\n",
               "/usr/local/cuda-12.4/version.json": "{not json", "/usr/local/cuda-12.4/version.txt": None},
        dirs={"/usr/local": ["cuda", "cuda-11.0", "cuda-12.4"]})
    facts = _collect(fixture)
    assert facts["host"]["cuda_toolkits"] == [
        {"path": "/usr/local/cuda", "version": "10.2.89"},
        {"path": "/usr/local/cuda-11.0", "version": "11.0.228"},
        {"path": "/usr/local/cuda-12.4", "version": None},
    ]
    assert [e["call"] for e in facts["errors"]] == ["read /usr/local/cuda-12.4/version.json"]


def test_no_mps_process():
    fixture = _fixture(dirs={"/proc": ["1", "2211", "self"]})
    assert _collect(fixture)["host"]["mps_daemon_running"] is False


def test_os_release_fallback_and_quoting():
    fixture = _fixture(files={"/etc/os-release": None,
                              "/usr/lib/os-release": "ID='rocky'\nVERSION_ID=\"9.3\"\n"
                                                     "PRETTY_NAME=\"Rocky Linux 9.3 (Blue \\\"Onyx\\\")\"\n"})
    assert _collect(fixture)["host"]["os"] == {"id": "rocky", "version_id": "9.3",
                                               "pretty_name": 'Rocky Linux 9.3 (Blue "Onyx")'}


# --- PCIe AER -------------------------------------------------------------------------------

# Files as drivers/pci/pcie/aer.c prints them: "%s %llu" per named bit, then the total.
AER_CORRECTABLE = ("RxErr 0\nBadTLP 3\nBadDLLP 1\nRollover 0\nTimeout 0\nNonFatalErr 0\n"
                   "CorrIntErr 0\nHeaderOF 0\nTOTAL_ERR_COR 4\n")
_UNCORRECTABLE = ("Undefined", "DLP", "SDES", "TLP", "FCP", "CmpltTO", "CmpltAbrt", "UnxCmplt", "RxOF",
                  "MalfTLP", "ECRC", "UnsupReq", "ACSViol", "UncorrIntErr", "BlockedTLP",
                  "AtomicOpBlocked", "TLPBlockedErr", "PoisonTLPBlocked")


def _uncorrectable(total_name, **counts):
    lines = ["%s %d" % (name, counts.get(name, 0)) for name in _UNCORRECTABLE]
    return "\n".join(lines + ["%s %d" % (total_name, sum(counts.values()))]) + "\n"


def _gpus_from_sample(name):
    root = ElementTree.parse(os.path.join(ROOT, "tests", "fixtures", "samples", name)).getroot()
    gpus = []
    for index, element in enumerate(root.findall("gpu")):
        gpu = new_gpu(index)
        gpu["pci_bus_id"] = normalize_pci_bus_id(element.findtext("pci/pci_bus_id"))
        gpus.append(gpu)
    return gpus


def test_pcie_aer_for_the_two_gpus_of_a_sample():
    facts = new_facts()
    facts["collected_at"] = "2026-11-30T12:00:00Z"
    facts["gpus"] = _gpus_from_sample("nvsmi-q-x_2x-a10g_550.90.07.xml")
    assert [g["pci_bus_id"] for g in facts["gpus"]] == ["0000:01:00.0", "0000:02:00.0"]
    base = "/sys/bus/pci/devices/0000:01:00.0/"
    host = ReplayHost({"files": {
        base + "aer_dev_correctable": AER_CORRECTABLE,
        base + "aer_dev_nonfatal": _uncorrectable("TOTAL_ERR_NONFATAL", CmpltTO=2),
        base + "aer_dev_fatal": _uncorrectable("TOTAL_ERR_FATAL", DLP=1),
    }})
    collect_pcie_aer(host, facts)
    assert_valid_facts(facts)
    assert facts["gpus"][0]["pcie"]["aer"] == {
        "correctable": 4, "nonfatal": 2, "fatal": 1,
        "counters": {"correctable.BadTLP": 3, "correctable.BadDLLP": 1, "nonfatal.CmpltTO": 2, "fatal.DLP": 1}}
    assert facts["gpus"][1]["pcie"]["aer"] is None


def test_pcie_aer_with_only_some_files_and_no_bus_id():
    facts = new_facts()
    facts["collected_at"] = "2026-11-30T12:00:00Z"
    facts["gpus"] = [new_gpu(0), new_gpu(1)]
    facts["gpus"][0]["pci_bus_id"] = "0000:2d:00.0"  # a bus id with letters, lower-cased
    host = ReplayHost({"files": {"/sys/bus/pci/devices/0000:2d:00.0/aer_dev_correctable": "RxErr 0\nBadTLP 0\n"}})
    collect_pcie_aer(host, facts)
    assert_valid_facts(facts)
    assert facts["gpus"][0]["pcie"]["aer"] == {"correctable": None, "nonfatal": None, "fatal": None, "counters": {}}
    assert facts["gpus"][1]["pcie"]["aer"] is None
