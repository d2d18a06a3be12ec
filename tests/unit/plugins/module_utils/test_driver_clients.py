"""Driver clients: processes that mapped NVIDIA driver libraries of another version than the kernel module,
found in a fake /proc tree written to a temporary folder and read through the real LiveHost."""

import json
import os
import subprocess

import pytest

from ansible_collections.gpufleet.core.plugins.module_utils import driver_clients
from ansible_collections.gpufleet.core.plugins.module_utils.collector import Collection
from ansible_collections.gpufleet.core.plugins.module_utils.driver_clients import (
    collect_driver_clients, container_of, nvidia_libraries, scan_driver_clients)
from ansible_collections.gpufleet.core.plugins.module_utils.facts_model import new_facts
from ansible_collections.gpufleet.core.plugins.module_utils.host_io import LiveHost
from tests.support.schema_check import ROOT, assert_valid_facts

PYTHON39 = "/root/.pyenv/versions/3.9.18/bin/python"
MODULE_LINE = "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  550.54.15  Release Build  (dvs-builder@U16)\n"
CONTAINER_ID = "4f1c2b9a" * 8
POD_CGROUP = ("0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod7d1e.slice/"
              "cri-containerd-%s.scope\n" % CONTAINER_ID)
HOST_CGROUP = "0::/system.slice/triton.service\n"
LIB = "/usr/lib/x86_64-linux-gnu"


def maps_line(path, address="7f3a40000000-7f3a40200000", perms="r-xp", inode=5243012):
    return "%s %s 00000000 fd:01 %d                    %s\n" % (address, perms, inode, path)


def process_maps(*paths):
    lines = [maps_line("/usr/bin/python3.10", "55d0c0a00000-55d0c0b00000"),
             maps_line("[heap]", "55d0c1a00000-55d0c1c00000", "rw-p", 0)]
    for path in paths:
        lines.append(maps_line(path))
        lines.append(maps_line(path, "7f3a40400000-7f3a40500000", "rw-p"))
    lines.append(maps_line("[vdso]", "7ffd5a1f0000-7ffd5a1f2000", "r-xp", 0))
    return "".join(lines)


class RootedHost(LiveHost):
    """A LiveHost whose absolute paths live under a temporary folder."""

    def __init__(self, root):
        LiveHost.__init__(self, find_bin=lambda name: None, now=1796040000.0)
        self.root = str(root)
        self.reads = []

    def read_text(self, path, limit=None):
        self.reads.append(path)
        return LiveHost.read_text(self, self.root + path, limit)

    def listdir(self, path):
        return LiveHost.listdir(self, self.root + path)


def write(root, path, text):
    full = os.path.join(str(root), path.lstrip("/"))
    os.makedirs(os.path.dirname(full), exist_ok=True)
    with open(full, "w", encoding="utf-8", errors="surrogateescape") as handle:
        handle.write(text)


def add_process(root, pid, comm, maps, cgroup=HOST_CGROUP):
    write(root, "/proc/%d/comm" % pid, comm + "\n")
    write(root, "/proc/%d/maps" % pid, maps)
    write(root, "/proc/%d/cgroup" % pid, cgroup)


@pytest.fixture
def proc(tmp_path):
    """A host on 550.54.15: a pod bundling 535.54.03 libraries, a host service on the right libraries, a
    process with only an independently versioned NVIDIA library, a shell and a kernel thread."""
    write(tmp_path, "/proc/driver/nvidia/version", MODULE_LINE + "GCC version:  gcc version 12.3.0\n")
    bundled = process_maps(LIB + "/libcuda.so.535.54.03", LIB + "/libnvidia-ml.so.535.54.03",
                           LIB + "/libnvidia-ptxjitcompiler.so.535.54.03")
    add_process(tmp_path, 4242, "python3", bundled, POD_CGROUP)
    add_process(tmp_path, 1777, "tritonserver", process_maps(LIB + "/libcuda.so.550.54.15", LIB + "/libnvidia-ml.so.550.54.15"))
    add_process(tmp_path, 2001, "weston", process_maps(LIB + "/libnvidia-egl-wayland.so.1.1.13"))
    add_process(tmp_path, 900, "bash", process_maps())
    add_process(tmp_path, 2, "kthreadd", "")
    write(tmp_path, "/proc/meminfo", "MemTotal: 1 kB\n")
    return tmp_path


def test_a_pod_with_its_own_driver_libraries_is_found_with_pid_name_container_and_versions(proc):
    record = scan_driver_clients(RootedHost(proc), own_pid=1)
    assert record["kernel_module_version"] == "550.54.15"
    assert record["status"] == "complete"
    assert record["processes_scanned"] == 5 and record["processes_unreadable"] == 0
    assert record["mismatched"] == [{
        "pid": 4242, "name": "python3",
        "container": POD_CGROUP.strip()[3:], "container_id": CONTAINER_ID,
        "library": LIB + "/libcuda.so.535.54.03", "library_version": "535.54.03", "compat": False,
        "libraries": [LIB + "/libcuda.so.535.54.03", LIB + "/libnvidia-ml.so.535.54.03",
                      LIB + "/libnvidia-ptxjitcompiler.so.535.54.03"],
    }]
    assert record["mismatched_left_out"] == 0


def test_processes_without_nvidia_libraries_are_not_read_further(proc):
    host = RootedHost(proc)
    scan_driver_clients(host, own_pid=1)
    assert "/proc/900/comm" not in host.reads and "/proc/1777/cgroup" not in host.reads
    assert "/proc/4242/cgroup" in host.reads


def test_matching_libraries_give_an_empty_list(tmp_path):
    write(tmp_path, "/proc/driver/nvidia/version", MODULE_LINE)
    add_process(tmp_path, 1777, "tritonserver", process_maps(LIB + "/libcuda.so.550.54.15"))
    record = scan_driver_clients(RootedHost(tmp_path), own_pid=1)
    assert (record["status"], record["mismatched"], record["processes_scanned"]) == ("complete", [], 1)


def test_module_version_from_sys_module_when_proc_driver_is_absent(tmp_path):
    write(tmp_path, "/sys/module/nvidia/version", "550.54.15\n")
    add_process(tmp_path, 31, "app", process_maps(LIB + "/libnvidia-ml.so.550.90.07"))
    record = scan_driver_clients(RootedHost(tmp_path), own_pid=1)
    assert record["kernel_module_version"] == "550.54.15"
    assert [(c["pid"], c["library_version"], c["container"]) for c in record["mismatched"]] == [(31, "550.90.07", None)]


def test_no_kernel_module_means_nothing_is_scanned(tmp_path):
    add_process(tmp_path, 31, "app", process_maps(LIB + "/libcuda.so.535.54.03"))
    host = RootedHost(tmp_path)
    record = scan_driver_clients(host, own_pid=1)
    assert record["status"] == "no_kernel_module" and record["processes_scanned"] == 0
    assert not [path for path in host.reads if path.endswith("/maps")]


def test_a_stale_compat_package_is_marked_compat(tmp_path):
    write(tmp_path, "/proc/driver/nvidia/version", MODULE_LINE)
    add_process(tmp_path, 77, "train.py", process_maps("/usr/local/cuda-12.2/compat/libcuda.so.535.104.05"))
    (client,) = scan_driver_clients(RootedHost(tmp_path), own_pid=1)["mismatched"]
    assert client["compat"] is True and client["library_version"] == "535.104.05"


def test_a_library_replaced_on_disk_still_counts(tmp_path):
    write(tmp_path, "/proc/driver/nvidia/version", MODULE_LINE)
    add_process(tmp_path, 78, "old-job", process_maps(LIB + "/libcuda.so.550.40.07 (deleted)"))
    (client,) = scan_driver_clients(RootedHost(tmp_path), own_pid=1)["mismatched"]
    assert client["library"] == LIB + "/libcuda.so.550.40.07"


def test_a_hostile_process_name_is_data(tmp_path):
    write(tmp_path, "/proc/driver/nvidia/version", MODULE_LINE)
    add_process(tmp_path, 66, "\x1b[2Jx\x07\udcff", process_maps(LIB + "/libcuda.so.535.54.03"))
    (client,) = scan_driver_clients(RootedHost(tmp_path), own_pid=1)["mismatched"]
    assert client["name"] == "?[2Jx?\ufffd"
    assert all(char.isprintable() for char in client["name"])


def test_bounds_on_kept_clients_and_time(tmp_path, monkeypatch):
    write(tmp_path, "/proc/driver/nvidia/version", MODULE_LINE)
    for pid in range(100, 106):
        add_process(tmp_path, pid, "worker", process_maps(LIB + "/libcuda.so.535.54.03"), POD_CGROUP)
    monkeypatch.setattr(driver_clients, "MAX_CLIENTS", 4)
    record = scan_driver_clients(RootedHost(tmp_path), own_pid=1)
    assert len(record["mismatched"]) == 4 and record["mismatched_left_out"] == 2
    monkeypatch.setattr(driver_clients, "MAX_PROCESSES", 3)
    record = scan_driver_clients(RootedHost(tmp_path), own_pid=1)
    assert record["status"] == "partial" and record["processes_scanned"] == 3
    record = scan_driver_clients(RootedHost(tmp_path), timeout=-1, own_pid=1)
    assert record["status"] == "partial" and record["processes_scanned"] == 0


def test_unreadable_maps_and_a_cut_scan_are_errors(tmp_path, monkeypatch):
    write(tmp_path, "/proc/driver/nvidia/version", MODULE_LINE)
    for pid in (10, 11, 12):
        write(tmp_path, "/proc/%d/comm" % pid, "secret\n")
    add_process(tmp_path, 13, "app", process_maps(LIB + "/libcuda.so.550.54.15"))
    facts = new_facts()
    facts["collected_at"] = "2026-11-30T12:00:00Z"
    collect_driver_clients(RootedHost(tmp_path), facts)
    assert facts["driver_clients"]["processes_unreadable"] == 3
    assert [error["reason"] for error in facts["errors"]] == [
        "maps of 3 of 4 processes not readable (run with become)"]
    assert_valid_facts(facts)


def test_own_process_is_skipped(tmp_path):
    write(tmp_path, "/proc/driver/nvidia/version", MODULE_LINE)
    add_process(tmp_path, 5000, "python3", process_maps(LIB + "/libnvidia-ml.so.535.54.03"))
    assert scan_driver_clients(RootedHost(tmp_path), own_pid=5000)["mismatched"] == []


@pytest.mark.parametrize("cgroup, expected", [
    (POD_CGROUP, (POD_CGROUP.strip()[3:], CONTAINER_ID)),
    ("0::/system.slice/docker-%s.scope\n" % CONTAINER_ID, ("/system.slice/docker-%s.scope" % CONTAINER_ID, CONTAINER_ID)),
    ("12:pids:/docker/%s\n11:memory:/docker/%s\n" % (CONTAINER_ID, CONTAINER_ID),
     ("/docker/%s" % CONTAINER_ID, CONTAINER_ID)),
    ("0::/machine.slice/libpod-%s.scope/container\n" % CONTAINER_ID,
     ("/machine.slice/libpod-%s.scope/container" % CONTAINER_ID, CONTAINER_ID)),
    (HOST_CGROUP, (None, None)),
    ("0::/user.slice/user-1000.slice/session-3.scope\n", (None, None)),
    ("", (None, None)),
])
def test_container_from_cgroup(cgroup, expected):
    assert container_of(cgroup) == expected


def test_only_driver_versioned_libraries_are_read_from_maps():
    text = process_maps(LIB + "/libcuda.so.1", LIB + "/libnvidia-egl-gbm.so.1.1.0", LIB + "/libcudart.so.12.2.140",
                        "/opt/app/lib/libnvidia-ml.so.470.82.01", LIB + "/libnvcuvid.so.535.54.03")
    assert nvidia_libraries(text) == [("/opt/app/lib/libnvidia-ml.so.470.82.01", "470.82.01"),
                                      (LIB + "/libnvcuvid.so.535.54.03", "535.54.03")]


def test_gather_subset_records_and_replays_with_only_the_nvidia_lines(proc):
    facts, fixture = Collection(gather_subset=["driver_clients"], record=True, scrub=False,
                                host=RootedHost(proc)).run()
    assert facts["gather_subset"] == ["driver_clients"]
    assert [client["pid"] for client in facts["driver_clients"]["mismatched"]] == [4242]
    assert_valid_facts(facts)
    recorded = fixture["host"]["files"]
    assert recorded["/proc/900/maps"] == "" and recorded["/proc/2/maps"] == ""
    assert recorded["/proc/4242/maps"].count("\n") == 5 and "[heap]" not in recorded["/proc/4242/maps"]
    fixture = json.loads(json.dumps(fixture))
    replayed, _none = Collection(source="replay", gather_subset=["driver_clients"], fixture=fixture).run()
    assert replayed["gather_subset"] == ["driver_clients"]
    assert replayed["driver_clients"]["mismatched"] == facts["driver_clients"]["mismatched"]
    assert replayed["driver_clients"]["processes_scanned"] == facts["driver_clients"]["processes_scanned"]


def test_a_fixture_recorded_before_the_subset_existed_replays_without_it(proc):
    _facts, fixture = Collection(gather_subset=["all", "!driver_clients", "!gpus", "!driver"], record=True,
                                 scrub=False, host=RootedHost(proc)).run()
    replayed, _none = Collection(source="replay", fixture=fixture).run()
    assert "driver_clients" not in replayed["gather_subset"] and replayed["driver_clients"] is None
    assert not [error for error in replayed["errors"] if error["call"] == "driver clients"]


@pytest.mark.skipif(not os.path.exists(PYTHON39), reason="Python 3.9 is not installed at %s" % PYTHON39)
def test_the_collector_runs_on_python_3_9(proc):
    """Target code runs on the Pythons GPU hosts have: the same scan, under 3.9, with the standard library only."""
    script = "\n".join([
        "import json, sys",
        "sys.path.insert(0, sys.argv[2])",
        "from ansible_collections.gpufleet.core.plugins.module_utils import driver_clients",
        "from ansible_collections.gpufleet.core.plugins.module_utils.host_io import ReplayHost",
        "class Rooted(ReplayHost):",
        "    def read_text(self, path, limit=None):",
        "        try:",
        "            with open(sys.argv[1] + path, 'rb') as handle:",
        "                return handle.read().decode('utf-8', 'replace')",
        "        except OSError:",
        "            return None",
        "    def listdir(self, path):",
        "        import os",
        "        return sorted(os.listdir(sys.argv[1] + path))",
        "print(json.dumps(driver_clients.scan_driver_clients(Rooted({}), own_pid=1)))",
    ])
    out = subprocess.run([PYTHON39, "-I", "-c", script, str(proc), os.path.join(ROOT, "collections")], cwd=str(proc),
                         capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr
    assert [client["pid"] for client in json.loads(out.stdout)["mismatched"]] == [4242]
