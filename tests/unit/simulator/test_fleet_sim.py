"""The simulated NVIDIA stack of the test fleet (tests/fleet/sim), run as the fleet runs it: as programs.

Each test builds a state with tests/fleet/sim/state.py in a temporary folder standing in for /
(GPUFLEET_SIM_ROOT) and runs nvidia_smi.py / gpu_worker.py as subprocesses; the long MIG command
sequences call the same entry point (run_nvidia_smi) in this process to keep the file fast.
Expected texts are the ones real nvidia-smi prints: the published MIG User Guide transcripts and
(tests marked corpus) the captures of the public corpus.
"""

import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from ansible_collections.gpufleet.core.plugins.module_utils.fabric_parsers import parse_topology
from ansible_collections.gpufleet.core.plugins.module_utils.facts_model import new_facts
from ansible_collections.gpufleet.core.plugins.module_utils.kernel_log import parse_kernel_log
from ansible_collections.gpufleet.core.plugins.module_utils.nvsmi_mig import parse_lci, parse_lgi
from tests.support.nvsmi_lgip import parse_lgip
from ansible_collections.gpufleet.core.plugins.module_utils.nvsmi_xml import collect_nvidia_smi, parse_nvidia_smi_xml
from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.knowledge import load_knowledge
from tests.support.live_host import live_host
from tests.support.corpus import read_realdata
from tests.support.schema_check import ROOT, assert_valid_facts, assert_valid_gpu

SIM_DIR = os.path.join(ROOT, "tests", "fleet", "sim")
NVIDIA_SMI = os.path.join(SIM_DIR, "nvidia_smi.py")
GPU_WORKER = os.path.join(SIM_DIR, "gpu_worker.py")


def _load_state_module():
    spec = importlib.util.spec_from_file_location("gpufleet_sim_state", os.path.join(SIM_DIR, "state.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


sim_state = _load_state_module()
A100 = "NVIDIA A100-SXM4-80GB"
A100_40 = "NVIDIA A100-SXM4-40GB"
H100 = "NVIDIA H100 80GB HBM3"
A30 = "NVIDIA A30"


# ---------------------------------------------------------------- helpers

def make_root(tmp_path, gpu=A100, count=1, **options):
    root = str(tmp_path / "root")
    sim_state.write_state(sim_state.state_for(gpu, count, **options), root)
    return root


def env_for(root, **extra):
    env = dict(os.environ, GPUFLEET_SIM_ROOT=root)
    env.update(extra)
    return env


def smi(root, *args):
    """(exit status, stdout, stderr) of the simulated nvidia-smi."""
    done = subprocess.run([sys.executable, NVIDIA_SMI] + [str(a) for a in args], env=env_for(root),
                          capture_output=True, text=True, timeout=30, check=False)
    return done.returncode, done.stdout, done.stderr


def ok(root, *args):
    rc, out, err = smi(root, *args)
    assert rc == 0, (args, rc, out, err)
    return out


def smi_fast(root, *args):
    """The same command run in this process (nvidia_smi.run_nvidia_smi): for the long MIG sequences."""
    saved = os.environ.get("GPUFLEET_SIM_ROOT")
    os.environ["GPUFLEET_SIM_ROOT"] = root
    try:
        out, err, rc = sim_state.sim.run_nvidia_smi([str(a) for a in args])
    finally:
        if saved is None:
            del os.environ["GPUFLEET_SIM_ROOT"]
        else:
            os.environ["GPUFLEET_SIM_ROOT"] = saved
    return rc, out, err


def ok_fast(root, *args):
    rc, out, err = smi_fast(root, *args)
    assert rc == 0, (args, rc, out, err)
    return out


def read_state(root):
    with open(os.path.join(root, "var/lib/gpufleet-sim/state.json")) as handle:
        return json.load(handle)


def report(root):
    return parse_nvidia_smi_xml(ok(root, "-q", "-x"))


def report_fast(root):
    return parse_nvidia_smi_xml(ok_fast(root, "-q", "-x"))


def sleeper():
    return subprocess.Popen(["sleep", "60"])


def register_process(root, pid, gpu, used_mib, name="python3", **extra):
    record = dict({"gpu": gpu, "used_mib": used_mib, "name": name, "type": "C"}, **extra)
    path = os.path.join(root, "run/gpufleet-sim/procs/%d.json" % pid)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as handle:
        json.dump(record, handle)
    return path


@pytest.fixture
def busy():
    """Live processes to register as GPU users; stopped at the end."""
    started = []

    def start():
        process = sleeper()
        started.append(process)
        return process

    yield start
    for process in started:
        process.kill()
        process.wait()


def wait_for(predicate, timeout=10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


def proc_files(root):
    folder = os.path.join(root, "run/gpufleet-sim/procs")
    return sorted(os.listdir(folder)) if os.path.isdir(folder) else []


def sim_host(tmp_path, root, monkeypatch):
    """A LiveHost whose nvidia-smi is the simulator, as gpu_facts runs it on a fleet host."""
    wrapper = tmp_path / "nvidia-smi"
    wrapper.write_text('#!/bin/sh\nexec "%s" "%s" "$@"\n' % (sys.executable, NVIDIA_SMI))
    wrapper.chmod(0o755)
    monkeypatch.setenv("GPUFLEET_SIM_ROOT", root)
    return live_host(find_bin=lambda name: str(wrapper) if name == "nvidia-smi" else None)


def fresh_facts():
    facts = new_facts()
    facts["collected_at"] = "2026-01-01T00:00:00Z"
    return facts


def realdata_lines(name, start=None, end=None):
    text = read_realdata(name)
    if start is not None:
        text = text.split(start, 1)[1]
    if end is not None:
        text = text.split(end, 1)[0]
    return text.strip("\n").splitlines()


# ---------------------------------------------------------------- state builder

def test_state_copies_the_mig_table_from_knowledge():
    state = sim_state.state_for(A100, 2, driver="550.90.07")
    knowledge = load_knowledge().mig_model(A100)
    table = state["mig_models"]["A100-80GB"]
    assert [p["name"] for p in table["profiles"]] == list(knowledge["profiles"])
    for profile in table["profiles"]:
        known = knowledge["profiles"][profile["name"]]
        assert (profile["id"], profile["max_instances"], profile["placements"]) == (
            known["id"], known["max_instances"], known["placements"])
    assert [gpu["mig"]["model"] for gpu in state["gpus"]] == ["A100-80GB", "A100-80GB"]
    assert state["driver"] == {"library_version": "550.90.07", "kernel_module_version": "550.90.07",
                               "cuda_version": None, "lost_on_load": []}
    assert len(set(gpu["uuid"] for gpu in state["gpus"])) == 2


def test_state_builder_refuses_what_it_cannot_simulate():
    assert sim_state.state_for("Tesla T4", 1)["gpus"][0]["mig"] is None
    with pytest.raises(ValueError, match="not MIG-capable"):
        sim_state.state_for("Tesla T4", 1, mig=True)
    with pytest.raises(ValueError, match="unknown GPU model"):
        sim_state.state_for("NVIDIA GeForce RTX 9090", 1)
    with pytest.raises(ValueError, match="does not fit"):
        sim_state.state_for(H100, 1, mig=True, mig_layouts={0: ["4g.40gb", "3g.40gb:0"]})


def test_install_places_the_simulator_and_enables_units(tmp_path):
    root = str(tmp_path / "upper")
    written = sim_state.install(root, sim_state.state_for(A30, 1), enable=("gpufleet-sim-boot.service",))
    assert "usr/bin/nvidia-smi" in written and "var/lib/gpufleet-sim/state.json" in written
    assert os.access(os.path.join(root, "usr/bin/nvidia-smi"), os.X_OK)
    link = os.path.join(root, "etc/systemd/system/multi-user.target.wants/gpufleet-sim-boot.service")
    assert os.readlink(link) == "/etc/systemd/system/gpufleet-sim-boot.service"
    rc, out, _err = smi(root, "-L")
    assert rc == 0 and out.startswith("GPU 0: NVIDIA A30 (UUID: GPU-")


# ---------------------------------------------------------------- -q -x

def test_xml_report_parses_into_the_state_values(tmp_path, busy):
    root = make_root(tmp_path, A100, 2, driver="550.90.07", compute_mode="EXCLUSIVE_PROCESS")
    ok(root, "-pm", "1", "-i", "0")
    worker = busy()
    register_process(root, worker.pid, 1, 5000, name="/usr/bin/python3")
    state = read_state(root)
    parsed = report(root)
    assert parsed["driver"] == {"version": "550.90.07", "cuda_driver_version": "12.4"}
    for gpu, record in zip(parsed["gpus"], state["gpus"]):
        assert_valid_gpu(gpu)
        assert (gpu["name"], gpu["uuid"], gpu["serial"]) == (A100, record["uuid"], record["serial"])
        assert gpu["architecture"] == "ampere"
        assert gpu["memory"]["total_mib"] == 81920 and gpu["memory"]["reserved_mib"] == 659
        assert gpu["compute_mode"] == "exclusive_process"
        assert gpu["mig"]["mode_current"] is False and gpu["mig"]["mode_pending"] is False
        assert gpu["pcie"]["gen_max"] == 4 and gpu["pcie"]["width_current"] == 16
        assert gpu["power"]["limit_w"] == 400.0 and gpu["temperature"]["slowdown_c"] == 89
        assert gpu["clocks"]["max_sm_mhz"] == 1410
        assert gpu["ecc"]["mode_current"] is True and gpu["ecc"]["aggregate_uncorrected"] == 0
        assert gpu["remapped_rows"]["uncorrectable"] == 0
        assert gpu["clock_event_reasons"]["active"] == ["gpu_idle"]
    assert [gpu["pci_bus_id"] for gpu in parsed["gpus"]] == ["0000:07:00.0", "0000:0f:00.0"]
    assert [gpu["persistence_mode"] for gpu in parsed["gpus"]] == [True, False]
    assert parsed["gpus"][0]["processes"] == [] and parsed["gpus"][0]["memory"]["used_mib"] == 0
    assert [(p["pid"], p["name"], p["type"], p["used_memory_mib"], p["gpu_instance_id"])
            for p in parsed["gpus"][1]["processes"]] == [(worker.pid, "/usr/bin/python3", "compute", 5000, None)]
    assert parsed["gpus"][1]["memory"]["used_mib"] == 5000
    assert parsed["gpus"][1]["memory"]["free_mib"] == 81920 - 659 - 5000


def test_gpu_facts_reads_a_mig_host_through_nvidia_smi(tmp_path, monkeypatch):
    root = make_root(tmp_path, H100, 1, mig=True, mig_layouts={0: ["3g.40gb", "3g.40gb"]})
    facts = fresh_facts()
    assert collect_nvidia_smi(sim_host(tmp_path, root, monkeypatch), facts, timeout=20) is True
    assert_valid_facts(facts)
    assert facts["errors"] == []
    gpu = facts["gpus"][0]
    assert gpu["mig"]["mode_current"] is True
    assert [(gi["id"], gi["profile_id"], gi["profile_name"], gi["placement"], gi["memory_mib"])
            for gi in gpu["mig"]["gpu_instances"]] == [
        (1, 9, "3g.40gb", {"start": 0, "size": 4}, 40448), (2, 9, "3g.40gb", {"start": 4, "size": 4}, 40448)]
    assert [[ci["profile_name"] for ci in gi["compute_instances"]] for gi in gpu["mig"]["gpu_instances"]] == [
        ["3g.40gb"], ["3g.40gb"]]
    assert gpu["utilization"]["gpu_pct"] is None and gpu["remapped_rows"]["uncorrectable"] is None


# ---------------------------------------------------------------- -L, -pm, -c, errors

def test_list_gpus_shows_mig_devices(tmp_path):
    root = make_root(tmp_path, A30, 2, mig=True, mig_layouts={0: ["2g.12gb", "1g.6gb"]})
    uuids = [gpu["uuid"] for gpu in read_state(root)["gpus"]]
    lines = ok_fast(root, "-L").splitlines()
    assert lines[0] == "GPU 0: NVIDIA A30 (UUID: %s)" % uuids[0]
    assert [line[:28] for line in lines[1:3]] == ["  MIG 2g.12gb     Device  0:", "  MIG 1g.6gb      Device  1:"]
    assert lines[3] == "GPU 1: NVIDIA A30 (UUID: %s)" % uuids[1]
    assert ok_fast(root, "-L", "-i", uuids[1]).splitlines() == [lines[3]]


def test_persistence_mode(tmp_path):
    root = make_root(tmp_path, A100, 2)
    assert ok(root, "-pm", "1", "-i", "0") == "Enabled persistence mode for GPU 00000000:07:00.0.\nAll done.\n"
    assert ok(root, "-pm", "ENABLED") == (
        "Persistence mode is already Enabled for GPU 00000000:07:00.0.\n"
        "Enabled persistence mode for GPU 00000000:0F:00.0.\nAll done.\n")
    assert ok(root, "--persistence-mode=0", "--id=1") == "Disabled persistence mode for GPU 00000000:0F:00.0.\nAll done.\n"
    assert [gpu["persistence_mode"] for gpu in read_state(root)["gpus"]] == [True, False]
    assert smi(root, "-pm", "5")[0] == 2


def test_compute_mode_by_name_and_number(tmp_path):
    root = make_root(tmp_path, A100, 1)
    assert ok_fast(root, "-c", "3") == "Set compute mode to EXCLUSIVE_PROCESS for GPU 00000000:07:00.0.\nAll done.\n"
    assert ok_fast(root, "-c", "EXCLUSIVE_PROCESS", "-i", "0") == (
        "Compute mode is already set to EXCLUSIVE_PROCESS for GPU 00000000:07:00.0.\nAll done.\n")
    ok_fast(root, "--compute-mode=PROHIBITED")
    assert report(root)["gpus"][0]["compute_mode"] == "prohibited"
    ok_fast(root, "-c", "0")
    assert read_state(root)["gpus"][0]["compute_mode"] == "Default"
    rc, out, _err = smi_fast(root, "-c", "1")
    assert (rc, out) == (2, "Invalid combination of input arguments. Please run 'nvidia-smi -h' for help.\n")


def test_bad_arguments_and_unknown_gpus(tmp_path):
    root = make_root(tmp_path, A100, 1)
    assert smi(root, "--frobnicate") == (2, "Option \"--frobnicate\" is not recognized. Please run 'nvidia-smi -h'.\n", "")
    assert smi(root, "-L", "-i", "3") == (6, "No devices were found\n", "")
    assert smi(root, "mig", "-lgi")[:2] == (6, "No MIG-enabled devices found.\n")


def test_summary_table(tmp_path, busy):
    root = make_root(tmp_path, A30, 1)
    worker = busy()
    register_process(root, worker.pid, 0, 3800)
    lines = ok(root).splitlines()
    assert lines[2].startswith("| NVIDIA-SMI 550.90.07") and "CUDA Version: 12.4" in lines[2]
    assert all(len(line) == 89 for line in lines[1:] if line)
    assert any(line.startswith("|   0  NVIDIA A30 ") and "00000000:07:00.0" in line for line in lines)
    assert any(" 3800MiB / 24576MiB " in line for line in lines)
    assert any(str(worker.pid) in line and line.rstrip(" |").endswith("3800MiB") for line in lines)


def test_csv_queries(tmp_path, busy):
    root = make_root(tmp_path, A100, 2, persistence_mode=True)
    worker = busy()
    register_process(root, worker.pid, 1, 1234, name="trainer")
    assert ok(root, "--query-gpu=index,pci.bus_id,driver_version,persistence_mode,mig.mode.current,memory.used,power.limit",
              "--format=csv").splitlines() == [
        "index, pci.bus_id, driver_version, persistence_mode, mig.mode.current, memory.used [MiB], power.limit [W]",
        "0, 00000000:07:00.0, 550.90.07, Enabled, Disabled, 0 MiB, 400.00 W",
        "1, 00000000:0F:00.0, 550.90.07, Enabled, Disabled, 1234 MiB, 400.00 W"]
    assert ok(root, "--query-compute-apps=pid,process_name,used_gpu_memory,gpu_bus_id", "--format=csv,noheader,nounits") == (
        "%d, trainer, 1234, 00000000:0F:00.0\n" % worker.pid)
    assert smi(root, "--query-gpu=index,bogus", "--format=csv")[:2] == (2, 'Field "bogus" is not a valid field to query.\n')


# ---------------------------------------------------------------- MIG mode and reset

def test_mig_mode_stays_pending_until_a_gpu_reset(tmp_path):
    root = make_root(tmp_path, A100, 2)
    assert ok(root, "-i", "0", "-mig", "1") == (
        "Warning: MIG mode is in pending enable state for GPU 00000000:07:00.0:Not Supported\n"
        "Reboot the system or try nvidia-smi --gpu-reset to make MIG mode effective on GPU 00000000:07:00.0\n"
        "All done.\n")
    mig = report_fast(root)["gpus"][0]["mig"]
    assert (mig["mode_current"], mig["mode_pending"]) == (False, True)
    assert smi_fast(root, "mig", "-lgi", "-i", "0")[0] == 6
    assert ok_fast(root, "-r", "-i", "0") == "GPU 00000000:07:00.0 was successfully reset.\nAll done.\n"
    assert [(g["mig"]["mode_current"], g["mig"]["mode_pending"]) for g in report_fast(root)["gpus"]] == [
        (True, True), (False, False)]
    assert ok_fast(root, "-i", "0", "-mig", "1") == "Enabled MIG Mode for GPU 00000000:07:00.0\nAll done.\n"


def test_mig_mode_and_reset_while_processes_use_the_gpu(tmp_path, busy):
    root = make_root(tmp_path, A100, 2)
    register_process(root, busy().pid, 0, 4000)
    assert ok(root, "-i", "0", "-mig", "1").splitlines()[:2] == [
        "Warning: MIG mode is in pending enable state for GPU 00000000:07:00.0:In use by another client",
        "00000000:07:00.0 is currently being used by one or more other processes (e.g. CUDA application or a "
        "monitoring application such as another instance of nvidia-smi). Please first kill all processes using "
        "the device and retry the command or reboot the system to make MIG mode effective."]
    rc, out, _err = smi(root, "--gpu-reset", "-i", "0")
    assert rc == 255
    assert out.splitlines()[:4] == ["The following GPUs could not be reset:",
                                    "  GPU 00000000:07:00.0: In use by another client", "",
                                    "1 device is currently being used by one or more other processes (e.g., Fabric "
                                    "Manager, CUDA application, graphics application such as an X server, or a "
                                    "monitoring application such as another instance of nvidia-smi). Please first "
                                    "kill all processes using this device and all compute applications running in "
                                    "the system."]
    assert read_state(root)["gpus"][0]["mig"] == {"model": "A100-80GB", "current": False, "pending": True,
                                                  "gpu_instances": []}
    ok(root, "-r", "-i", "1")


def test_mig_mode_change_variants(tmp_path):
    immediate = make_root(tmp_path / "a", A100, 1, mig_mode_change="immediate")
    assert ok_fast(immediate, "-mig", "1") == "Enabled MIG Mode for GPU 00000000:07:00.0\nAll done.\n"
    assert read_state(immediate)["gpus"][0]["mig"]["current"] is True
    vm = make_root(tmp_path / "b", A100, 1, mig_mode_change="reboot_required")
    ok_fast(vm, "-mig", "1")
    assert smi_fast(vm, "-r") == (3, "Resetting GPU 00000000:07:00.0 is not supported.\n", "")
    no_mig = make_root(tmp_path / "c", "Tesla T4", 1)
    assert smi_fast(no_mig, "-mig", "1")[:2] == (
        3, "Unable to enable MIG Mode for GPU 00000000:07:00.0: Not Supported\nTerminating early due to previous errors.\n")


# ---------------------------------------------------------------- MIG listings against real captures

@pytest.mark.corpus
def test_lgip_matches_the_h100_capture(tmp_path):
    root = make_root(tmp_path, H100, 4, mig=True)
    assert ok(root, "mig", "-lgip").splitlines() == realdata_lines("nvsmi-mig-lgip_4xh100-sxm5-80gb_stackhpc.txt")


def test_lgip_of_one_h100_parses(tmp_path):
    root = make_root(tmp_path, H100, 4, mig=True)
    profiles = parse_lgip(ok(root, "mig", "-lgip", "-i", "2"))
    assert [(p["gpu"], p["profile_name"], p["profile_id"], p["instances_free"], p["memory_gib"]) for p in profiles] == [
        (2, "1g.10gb", 19, 7, 9.75), (2, "1g.10gb+me", 20, 1, 9.75), (2, "1g.20gb", 15, 4, 19.62),
        (2, "2g.20gb", 14, 3, 19.62), (2, "3g.40gb", 9, 2, 39.5), (2, "4g.40gb", 5, 1, 39.5), (2, "7g.80gb", 0, 1, 79.25)]


@pytest.mark.corpus
def test_a30_session_matches_the_capture(tmp_path):
    """The A30 transcript: -lgip, -lgipp, three -cgi ... -C calls, -lgi, -lcip for two instances."""
    session = "nvsmi-mig-session_a30_lgipp-lgi-L-table-lcip_535.183.01_unresolved-repo.txt"
    root = make_root(tmp_path, A30, 1, mig=True)
    assert ok_fast(root, "mig", "-lgip").splitlines() == realdata_lines("nvsmi-mig-lgip_a30-24gb_535.183.01_unresolved-repo.txt")
    assert ok_fast(root, "mig", "-lgipp").splitlines() == realdata_lines(session, "$ nvidia-smi mig -lgipp\n", "$")
    assert smi_fast(root, "mig", "-lgi") == (6, "No GPU instances found: Not Found\n", "")
    created = ok_fast(root, "mig", "-cgi", "14", "-C") + ok_fast(root, "mig", "-cgi", "14", "-C") + ok_fast(root, "mig", "-cgi", "5", "-C")
    expected = [line for line in realdata_lines(session) if line.startswith("Successfully created")]
    assert created.splitlines() == expected
    last_lgi = realdata_lines(session).index("|   0  MIG 2g.12gb          5        2          2:2     |")
    assert ok_fast(root, "mig", "-lgi").splitlines() == realdata_lines(session)[last_lgi - 9:last_lgi + 2]
    assert ok_fast(root, "mig", "-lcip", "-gi", "2").splitlines() == realdata_lines(session, "$ sudo nvidia-smi mig -lcip -gi 2\n", "$")
    assert ok_fast(root, "mig", "-lcip", "-gi", "3").splitlines() == realdata_lines(session, "$ sudo nvidia-smi mig -lcip -gi 3\n", "$")


# The placements and ids nvidia-smi chose in NVIDIA's MIG User Guide transcripts (A100-SXM4-40GB)
# and in a published H100 80GB session: the simulator must choose the same.
GUIDE_TRANSCRIPTS = [
    (A100_40, "19,19,14,9", [(13, "1g.5gb", 19), (11, "1g.5gb", 19), (3, "2g.10gb", 14)], "9"),
    (A100_40, "9,19,14,19", [(2, "3g.20gb", 9), (7, "1g.5gb", 19), (4, "2g.10gb", 14), (8, "1g.5gb", 19)], None),
    (A100_40, "14,19,19,19,19,19", [(5, "2g.10gb", 14), (13, "1g.5gb", 19), (7, "1g.5gb", 19), (8, "1g.5gb", 19),
                                    (9, "1g.5gb", 19), (10, "1g.5gb", 19)], None),
    (H100, ",".join(["19"] * 7), [(gi, "1g.10gb", 19) for gi in (13, 11, 12, 7, 8, 9, 10)], None),
]


@pytest.mark.parametrize("gpu,profiles,created,refused", GUIDE_TRANSCRIPTS)
def test_gpu_instances_land_where_the_driver_puts_them(tmp_path, gpu, profiles, created, refused):
    root = make_root(tmp_path, gpu, 1, mig=True)
    rc, out, _err = smi_fast(root, "mig", "-cgi", profiles)
    lines = ["Successfully created GPU instance ID %2d on GPU  0 using profile MIG %s (ID %2d)" % item for item in created]
    if refused:
        lines += ["Unable to create a GPU instance on GPU  0 using profile %s: Insufficient Resources" % refused,
                  "Failed to create GPU instances: Insufficient Resources"]
    assert (rc, out.splitlines()) == (23 if refused else 0, lines)
    assert sorted(gi["id"] for gi in parse_lgi(ok_fast(root, "mig", "-lgi"))) == sorted(item[0] for item in created)


def test_cgi_with_compute_instances_and_the_listings_parse(tmp_path):
    root = make_root(tmp_path, A100, 1, mig=True)
    assert ok_fast(root, "mig", "-cgi", "9,3g.40gb", "-C", "-i", "0").splitlines() == [
        "Successfully created GPU instance ID  2 on GPU  0 using profile MIG 3g.40gb (ID  9)",
        "Successfully created compute instance ID  0 on GPU  0 GPU instance ID  2 using profile MIG 3g.40gb (ID  2)",
        "Successfully created GPU instance ID  1 on GPU  0 using profile MIG 3g.40gb (ID  9)",
        "Successfully created compute instance ID  0 on GPU  0 GPU instance ID  1 using profile MIG 3g.40gb (ID  2)"]
    assert parse_lgi(ok_fast(root, "mig", "-lgi")) == [
        {"gpu": 0, "id": 1, "profile_id": 9, "profile_name": "3g.40gb", "placement": {"start": 0, "size": 4}},
        {"gpu": 0, "id": 2, "profile_id": 9, "profile_name": "3g.40gb", "placement": {"start": 4, "size": 4}}]
    assert [(ci["gpu_instance_id"], ci["id"], ci["profile_id"], ci["placement"]) for ci in parse_lci(ok_fast(root, "mig", "-lci"))] == [
        (1, 0, 2, {"start": 0, "size": 3}), (2, 0, 2, {"start": 0, "size": 3})]
    assert [(p["profile_id"], p["instances_free"]) for p in parse_lgip(ok_fast(root, "mig", "-lgip"))] == [
        (19, 0), (20, 0), (15, 0), (14, 0), (9, 0), (5, 0), (0, 0)]


def test_cgi_refusals(tmp_path, busy):
    root = make_root(tmp_path, A100, 2, mig=True)
    assert smi_fast(root, "mig", "-cgi", "99", "-i", "0") == (
        2, "Unable to create a GPU instance on GPU  0 using profile 99: Invalid Argument\n"
           "Failed to create GPU instances: Invalid Argument\n", "")
    assert smi_fast(root, "mig", "-cgi", "9:2", "-i", "0")[0] == 2
    assert ok_fast(root, "mig", "-cgi", "4g.40gb", "-i", "0").startswith("Successfully created GPU instance ID  1 ")
    assert smi_fast(root, "mig", "-cgi", "MIG 3g.40gb:0", "-i", "0")[:2] == (
        23, "Unable to create a GPU instance on GPU  0 using profile MIG 3g.40gb: Insufficient Resources\n"
            "Failed to create GPU instances: Insufficient Resources\n")
    assert ok_fast(root, "mig", "-cgi", "9:4", "-i", "0").startswith("Successfully created GPU instance ID  2 ")
    register_process(root, busy().pid, 1, 1000)
    assert smi_fast(root, "mig", "-cgi", "19", "-i", "1")[:2] == (
        19, "Unable to create a GPU instance on GPU  1 using profile 19: In use by another client\n"
            "Failed to create GPU instances: In use by another client\n")
    assert smi_fast(root, "-i", "0", "-mig", "0")[:2] == (
        19, "Unable to disable MIG Mode for GPU 00000000:07:00.0: In use by another client\n"
            "Terminating early due to previous errors.\n")


def test_compute_instances_then_destroy_in_order(tmp_path):
    root = make_root(tmp_path, H100, 1, mig=True)
    ok_fast(root, "mig", "-cgi", "9")
    assert smi_fast(root, "mig", "-lci") == (6, "No compute instances found: Not Found\n", "")
    assert ok_fast(root, "mig", "-cci", "0,1c.3g.40gb", "-gi", "2").splitlines() == [
        "Successfully created compute instance ID  0 on GPU  0 GPU instance ID  2 using profile MIG 1c.3g.40gb (ID  0)",
        "Successfully created compute instance ID  1 on GPU  0 GPU instance ID  2 using profile MIG 1c.3g.40gb (ID  0)"]
    assert smi_fast(root, "mig", "-cci", "-gi", "2")[0] == 23
    assert smi_fast(root, "mig", "-dgi", "-gi", "2")[:2] == (
        19, "Unable to destroy GPU instance ID  2 from GPU  0: In use by another client\n"
            "Failed to destroy GPU instances: In use by another client\n")
    assert ok_fast(root, "mig", "-dci", "-gi", "2", "-ci", "1") == (
        "Successfully destroyed compute instance ID  1 from GPU  0 GPU instance ID  2\n")
    assert ok_fast(root, "mig", "-dci", "-i", "0") == "Successfully destroyed compute instance ID  0 from GPU  0 GPU instance ID  2\n"
    assert smi_fast(root, "mig", "-dci")[:2] == (6, "Failed to destroy compute instances: Not Found\n")
    assert ok_fast(root, "mig", "-dgi") == "Successfully destroyed GPU instance ID  2 from GPU  0\n"
    assert smi_fast(root, "mig", "-dgi")[:2] == (6, "Failed to destroy GPU instances: Not Found\n")
    assert ok_fast(root, "-i", "0", "-mig", "0").startswith("Warning: MIG mode is in pending disable state")


def test_concurrent_creations_never_overcommit(tmp_path):
    root = make_root(tmp_path, H100, 1, mig=True)
    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(lambda _n: smi(root, "mig", "-cgi", "19", "-C")[0], range(8)))
    assert sorted(results) == [0] * 7 + [23]
    instances = read_state(root)["gpus"][0]["mig"]["gpu_instances"]
    assert sorted(gi["id"] for gi in instances) == [7, 8, 9, 10, 11, 12, 13]
    assert all(len(gi["compute_instances"]) == 1 for gi in instances)


# ---------------------------------------------------------------- driver state

def test_driver_library_mismatch_fails_every_command(tmp_path, monkeypatch):
    root = make_root(tmp_path, A100, 2, driver="550.127.05", kernel_module="550.90.07")
    expected = (18, "Failed to initialize NVML: Driver/library version mismatch\nNVML library version: 550.127\n", "")
    assert smi(root, "-q", "-x") == expected
    for args in (["-L"], ["mig", "-lgi"], ["-pm", "1"], []):
        assert smi_fast(root, *args) == expected
    with open(os.path.join(root, "var/log/gpufleet-sim/kern.log")) as handle:
        _xids, events = parse_kernel_log(handle.read())
    assert [(e["kind"], e["client_version"], e["kernel_module_version"]) for e in events][0] == (
        "api_mismatch", "550.127.05", "550.90.07")
    facts = fresh_facts()
    assert collect_nvidia_smi(sim_host(tmp_path, root, monkeypatch), facts, timeout=20) is False
    assert facts["driver"]["mismatch"] is True and facts["errors"][0]["code"] == 18
    assert_valid_facts(facts)
    assert ok(root, "--sim-boot") == ""
    assert smi_fast(root, "-L") == expected
    ok_fast(root, "--sim-boot")
    assert report(root)["driver"]["version"] == "550.127.05"


def test_first_boot_keeps_the_state_and_a_reboot_reinitializes(tmp_path):
    root = make_root(tmp_path, A100, 2, mig=True, mig_pending=True, persistence_mode=True, compute_mode="3",
                     mig_layouts={0: ["3g.40gb"]})
    ok_fast(root, "-i", "1", "-mig", "0")
    dead = subprocess.Popen(["true"])
    dead.wait()
    stale = register_process(root, dead.pid, 0, 1000)
    ok_fast(root, "--sim-boot")
    assert not os.path.exists(stale)
    first = read_state(root)
    assert first["boot_count"] == 1 and len(first["gpus"][0]["mig"]["gpu_instances"]) == 1
    assert [(g["persistence_mode"], g["mig"]["current"], g["mig"]["pending"]) for g in first["gpus"]] == [
        (True, True, True), (True, True, False)]
    ok_fast(root, "--sim-boot")
    gpus = read_state(root)["gpus"]
    assert [(g["mig"]["current"], g["mig"]["pending"], g["mig"]["gpu_instances"]) for g in gpus] == [
        (True, True, []), (False, False, [])]
    assert [(g["persistence_mode"], g["compute_mode"]) for g in gpus] == [(False, "Default"), (False, "Default")]
    with open(os.path.join(root, "var/log/gpufleet-sim/kern.log")) as handle:
        assert "NVRM: loading NVIDIA UNIX x86_64 Kernel Module  550.90.07" in handle.read()
    keeps = make_root(tmp_path / "keeps", A100, 1, persistence_mode=True, reboot_keeps_settings=True)
    ok_fast(keeps, "--sim-boot")
    ok_fast(keeps, "--sim-boot")
    assert read_state(keeps)["gpus"][0]["persistence_mode"] is True


def test_driver_package_upgrade_reload_and_lost_gpu(tmp_path, busy, monkeypatch):
    root = make_root(tmp_path, A100, 2, driver="550.90.07")
    ok_fast(root, "--sim-install-library", "550.127.05")
    assert smi_fast(root, "-L")[0] == 18
    worker = busy()
    register_process(root, worker.pid, 0, 1000)
    assert smi_fast(root, "--sim-reload-modules") == (1, "rmmod: ERROR: Module nvidia is in use\n", "")
    worker.kill()
    worker.wait()
    ok_fast(root, "--sim-reload-modules")
    assert read_state(root)["driver"]["kernel_module_version"] == "550.127.05"
    ok_fast(root, "--sim-install-library", "560.35.03", "--lost-after-load", "1")
    ok_fast(root, "--sim-boot")
    assert smi_fast(root, "-L")[0] == 18
    ok_fast(root, "--sim-boot")
    rc, out, err = smi_fast(root, "-L")
    assert (rc, len(out.splitlines())) == (15, 1)
    assert err.startswith("Unable to determine the device handle for GPU 00000000:0F:00.0: GPU is lost.")
    facts = fresh_facts()
    assert collect_nvidia_smi(sim_host(tmp_path, root, monkeypatch), facts, timeout=20) is True
    assert [(g["pci_bus_id"], g["lost"]) for g in facts["gpus"]] == [("0000:07:00.0", False), ("0000:0f:00.0", True)]
    assert facts["driver"]["version"] == "560.35.03" and facts["driver"]["cuda_driver_version"] == "12.6"
    assert_valid_facts(facts)
    ok_fast(root, "--sim-install-library", "560.35.03")
    ok_fast(root, "--sim-boot")
    assert len(ok_fast(root, "-L").splitlines()) == 2
    ok_fast(root, "--sim-remove-library")
    assert smi_fast(root, "-L")[0] == 12


def test_persistence_daemon_holds_persistence_mode(tmp_path):
    root = make_root(tmp_path, A30, 2)
    daemon = subprocess.Popen([sys.executable, NVIDIA_SMI, "--sim-persistenced"], env=env_for(root))
    try:
        assert wait_for(lambda: all(g["persistence_mode"] for g in read_state(root)["gpus"]))
        assert smi(root, "--sim-reload-modules")[0] == 1
    finally:
        daemon.send_signal(signal.SIGTERM)
        daemon.wait(timeout=10)
    assert [g["persistence_mode"] for g in read_state(root)["gpus"]] == [False, False]
    ok(root, "--sim-reload-modules")


# ---------------------------------------------------------------- the simulated workload

def start_worker(root, **env):
    return subprocess.Popen([sys.executable, GPU_WORKER], env=env_for(root, **env),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_workers_register_their_memory_and_clean_up(tmp_path):
    root = make_root(tmp_path, A100, 2)
    worker = start_worker(root, WORKERS="4", CUDA_VISIBLE_DEVICES="0,1", MEM_PER_WORKER_MIB="3800", NAME="inference")
    try:
        assert wait_for(lambda: len(proc_files(root)) == 4)
        gpus = report(root)["gpus"]
        assert [[(p["name"], p["used_memory_mib"]) for p in g["processes"]] for g in gpus] == [
            [("inference", 3800)] * 2, [("inference", 3800)] * 2]
        assert [g["memory"]["used_mib"] for g in gpus] == [7600, 7600]
    finally:
        worker.send_signal(signal.SIGTERM)
        worker.wait(timeout=10)
    assert worker.returncode == 0
    assert proc_files(root) == []
    assert report(root)["gpus"][0]["processes"] == []


def test_the_worker_that_does_not_fit_runs_out_of_memory(tmp_path):
    root = make_root(tmp_path, A30, 1)
    worker = start_worker(root, WORKERS="7", MEM_PER_WORKER_MIB="3800")
    _out, err = worker.communicate(timeout=20)
    assert worker.returncode == 1
    assert "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.71 GiB. GPU 0 has a total capacity of 23.55 GiB" in err
    assert err.count("CUDA out of memory") == 1
    assert proc_files(root) == []


def test_exclusive_process_mode_admits_one_process(tmp_path):
    root = make_root(tmp_path, A100, 1, compute_mode="EXCLUSIVE_PROCESS")
    worker = start_worker(root, WORKERS="2")
    _out, err = worker.communicate(timeout=20)
    assert worker.returncode == 1
    assert "RuntimeError: CUDA error: CUDA-capable device(s) is/are busy or unavailable" in err
    assert proc_files(root) == []


def test_a_worker_on_a_mig_device_holds_its_instance(tmp_path):
    root = make_root(tmp_path, H100, 1, mig=True, mig_layouts={0: ["3g.40gb", "1g.10gb"]})
    devices = read_state(root)["gpus"][0]["mig"]["gpu_instances"]
    small = [gi for gi in devices if gi["profile"] == "1g.10gb"][0]
    worker = start_worker(root, CUDA_VISIBLE_DEVICES=small["compute_instances"][0]["uuid"], MEM_PER_WORKER_MIB="9000")
    try:
        assert wait_for(lambda: len(proc_files(root)) == 1)
        process = report(root)["gpus"][0]["processes"][0]
        assert (process["gpu_instance_id"], process["compute_instance_id"]) == (small["id"], 0)
        assert smi(root, "mig", "-dci", "-gi", small["id"])[0] == 19
        assert ok(root, "mig", "-dci", "-gi", "2").startswith("Successfully destroyed compute instance ID  0")
        too_big = start_worker(root, CUDA_VISIBLE_DEVICES=small["compute_instances"][0]["uuid"], MEM_PER_WORKER_MIB="1000")
        assert too_big.wait(timeout=20) == 1 and "CUDA out of memory" in too_big.stderr.read()
    finally:
        worker.send_signal(signal.SIGTERM)
        worker.wait(timeout=10)


def test_topology_matrix_reads_as_nvidia_smi_topo_m(tmp_path):
    root = make_root(tmp_path, A100, 2)
    topology, problems = parse_topology(ok(root, "topo", "-m"))
    assert problems == [] and topology["devices"] == ["GPU0", "GPU1"]
    assert topology["matrix"] == {"GPU0": {"GPU0": "X", "GPU1": "PHB"}, "GPU1": {"GPU0": "PHB", "GPU1": "X"}}
    assert topology["numa_affinity"] == {"GPU0": "0", "GPU1": "0"}
    assert smi(root, "topo", "-p2p", "rw")[0] == 2


# ---------------------------------------------------------------- repairs (issue 29)

def lose_gpu(root, position, **repair):
    state = read_state(root)
    state["gpus"][position]["lost"] = True
    if repair:
        state["repair"] = repair
    sim_state.write_state(state, root)


def test_a_reset_by_bus_id_brings_a_lost_gpu_back(tmp_path):
    root = make_root(tmp_path, H100, 2)
    bus = read_state(root)["gpus"][0]["pci_bus_id"]
    lose_gpu(root, 0)
    rc, _out, err = smi(root, "-L")
    assert rc == 15 and "%s: GPU is lost" % bus in err
    out = ok(root, "-r", "-i", bus)
    assert "GPU %s was successfully reset." % bus in out
    assert ok(root, "-L").count("GPU ") == 2 and not read_state(root)["gpus"][0]["lost"]


def test_a_reset_without_id_resets_lost_gpus_too(tmp_path):
    root = make_root(tmp_path, H100, 2)
    lose_gpu(root, 1)
    out = ok(root, "-r")
    assert out.count("was successfully reset.") == 2
    assert ok(root, "-L").count("GPU ") == 2


def test_a_failing_reset_prints_the_tools_failure_and_changes_nothing(tmp_path):
    root = make_root(tmp_path, H100, 2)
    bus = read_state(root)["gpus"][0]["pci_bus_id"]
    lose_gpu(root, 0, reset_fails=True)
    rc, out, _err = smi(root, "-r", "-i", bus)
    assert rc == 15
    assert out.splitlines()[:2] == ["Unable to reset GPU %s: GPU is lost" % bus, "Terminating early due to previous errors."]
    assert read_state(root)["gpus"][0]["lost"] is True
    rc, out, _err = smi(root, "-r", "-i", "0")  # the healthy GPU, now index 0
    assert rc == 255 and "Unknown Error" in out


def test_a_reboot_brings_a_lost_gpu_back_unless_reboots_fail(tmp_path):
    root = make_root(tmp_path, H100, 2)
    assert smi_fast(root, "--sim-boot")[0] == 0  # the first boot
    lose_gpu(root, 1)
    assert smi_fast(root, "--sim-boot")[0] == 0  # a reboot
    assert not read_state(root)["gpus"][1]["lost"]
    lose_gpu(root, 1, reboot_fails=True)
    assert smi_fast(root, "--sim-boot")[0] == 0
    assert read_state(root)["gpus"][1]["lost"] is True
