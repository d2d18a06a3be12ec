"""gather_subset workload through the real collector, on recorded host answers: the units that own GPU
processes, their restarts, exits, OOM kills, journal failures, frameworks and CUDA/NCCL environment; and a
host without the tools or the permission, which reports error entries and never fails."""

import json
import os

import pytest

from ansible_collections.gpufleet.core.plugins.module_utils import workload_facts, workload_probe
from ansible_collections.gpufleet.core.plugins.module_utils.collector import Collection
from ansible_collections.gpufleet.core.plugins.module_utils.host_io import CommandResult, ReplayHost, command_key
from ansible_collections.gpufleet.core.plugins.module_utils.journal_scan import journalctl_argv as unit_journal_argv
from ansible_collections.gpufleet.core.plugins.module_utils.kernel_log import journalctl_argv as kernel_argv
from tests.support.schema_check import ROOT, assert_valid_facts

T4_XML = os.path.join(ROOT, "tests", "fixtures", "samples", "nvsmi-q-x_tesla-t4_515.105.01.xml")
NOW = 1796040000.0  # 2026-11-30T12:00:00Z
SYSTEMCTL = "/usr/bin/systemctl"
JOURNALCTL = "/usr/bin/journalctl"
PYTHON = "/opt/venv/bin/python3"
EXEC_START = ("{ path=%s ; argv[]=%s -m vllm.entrypoints.openai.api_server --port 8000 ; ignore_errors=no ; "
              "start_time=[Mon 2026-11-30 11:58:01 UTC] ; stop_time=[n/a] ; pid=48211 ; code=(null) ; status=0/0 }"
              % (PYTHON, PYTHON))
SHOW = """Id=absent.service
LoadState=not-found
ActiveState=inactive
SubState=dead
Result=success
NRestarts=0
ExecMainCode=0
ExecMainStatus=0
MainPID=0
User=
ExecStart=

Id=vllm.service
LoadState=loaded
ActiveState=activating
SubState=auto-restart
Result=exit-code
NRestarts=7
ExecMainCode=1
ExecMainStatus=1
MainPID=0
User=svc-llm
ExecStart=%s
""" % EXEC_START
ENVIRON = ("PATH=/usr/bin\0HF_TOKEN=hf_secret_value\0CUDA_VISIBLE_DEVICES=0\0"
           "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True\0NCCL_DEBUG=WARN\0CUDA_MPS_PIPE_DIRECTORY=/run/mps\0"
           "AWS_SECRET_ACCESS_KEY=abc\0")
OOM_LINE = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.50 GiB. GPU 0 has a total capacity of "
            "14.58 GiB of which 210.06 MiB is free.")
KERNEL = ("2026-11-30T09:14:02+0000 t4 kernel: oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/,"
          "mems_allowed=0,oom_memcg=/system.slice/vllm.service,task_memcg=/system.slice/vllm.service,task=python3,"
          "pid=48001,uid=998\n"
          "2026-11-30T09:14:02+0000 t4 kernel: Memory cgroup out of memory: Killed process 48001 (python3) "
          "total-vm:29289244kB, anon-rss:16800004kB, file-rss:44932kB, shmem-rss:0kB, UID:998\n"
          "2026-11-30T10:00:00+0000 t4 kernel: oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,"
          "mems_allowed=0,global_oom,task_memcg=/user.slice/user-1000.slice/session-4.scope,task=make,pid=777,uid=1000\n")
PROBE_OUTPUT = json.dumps({"python": "3.10.12", "packages": [
    {"name": "torch", "version": "2.5.1+cu124", "cuda": "12.4", "cudnn": "9.1.0.70", "nccl": "2.21.5"}]})


def journal_entry(message, seconds):
    return json.dumps({"__REALTIME_TIMESTAMP": str(int((NOW - seconds) * 1000000)), "_PID": "48211",
                       "MESSAGE": message})


def result(stdout="", rc=0, stderr=""):
    return {"rc": rc, "stdout": stdout, "stderr": stderr}


def host_answers(probe=True, euid_root=True):
    """What a T4 host with vllm.service (python3, pid 48211, on GPU 0) answers."""
    runuser = "/usr/sbin/runuser"
    show_argv = [SYSTEMCTL, "show", "--property=" + workload_facts.SYSTEMCTL_PROPERTIES, "absent.service",
                 "vllm.service"]
    journal = "\n".join([journal_entry("Traceback (most recent call last):", 600), journal_entry(OOM_LINE, 599),
                         journal_entry("INFO: restarting", 500)])
    probe_argv = [runuser, "-u", "svc-llm", "--", PYTHON, "-c", workload_probe.PROBE_SCRIPT]
    commands = {
        "nvidia-smi -q -x": result(open(T4_XML).read()),
        command_key(show_argv): result(SHOW),
        command_key(unit_journal_argv(JOURNALCTL, "vllm.service", 72, workload_facts.MAX_JOURNAL_ENTRIES)):
            result(journal + "\n"),
        command_key(kernel_argv(JOURNALCTL, 72)): result(KERNEL),
    }
    if probe:
        commands[command_key(probe_argv)] = result(PROBE_OUTPUT + "\n")
    files = {"/proc/48211/cgroup": "0::/system.slice/vllm.service\n", "/proc/48211/environ": ENVIRON,
             "/proc/1318/cgroup": "0::/system.slice/gdm.service\n"}
    return {"now": NOW, "bins": {"nvidia-smi": "/usr/bin/nvidia-smi", "systemctl": SYSTEMCTL,
                                 "journalctl": JOURNALCTL, "runuser": runuser},
            "files": files, "dirs": {}, "commands": commands}


def collect(answers, services=("vllm", "absent"), euid=0, monkeypatch=None):
    answers["euid"] = euid
    facts, _recorded = Collection(source="nvidia_smi", gather_subset=["workload"], services=list(services),
                                  host=ReplayHost(answers)).run()
    assert_valid_facts(facts)
    return facts


def service(facts, unit):
    return next(item for item in facts["workload"]["services"] if item["unit"] == unit)


def test_a_crash_looping_gpu_service_with_its_failures_and_frameworks(monkeypatch):
    facts = collect(host_answers(), monkeypatch=monkeypatch)
    vllm = service(facts, "vllm.service")
    assert vllm["sources"] == ["policy", "gpu_process"]
    assert (vllm["active_state"], vllm["sub_state"], vllm["restarts"], vllm["result"]) == (
        "activating", "auto-restart", 7, "exit-code")
    assert vllm["last_exit"] == {"code": "exited", "status": 1, "signal": None}
    assert vllm["user"] == "svc-llm"
    assert vllm["oom_kills"]["count"] == 1 and vllm["oom_kills"]["events"][0]["anon_rss_kib"] == 16800004
    assert facts["workload"]["oom_kills_elsewhere"] == 1
    matches = vllm["journal"]["matches"]
    assert (matches["cuda_oom"]["count"], matches["python_traceback"]["count"]) == (1, 1)
    assert matches["cuda_oom"]["first"]["time"] == "2026-11-30T11:50:01Z"
    assert vllm["journal"]["cuda_oom_gpus"] == [0]
    assert vllm["frameworks"]["status"] == "read"
    assert vllm["frameworks"]["packages"] == [
        {"name": "torch", "version": "2.5.1+cu124", "cuda": "12.4", "cudnn": "9.1.0.70", "nccl": "2.21.5"}]
    (process,) = vllm["processes"]
    assert (process["pid"], process["gpu_index"], process["used_memory_mib"]) == (48211, 0, 1604)
    assert process["environment"] == {"CUDA_VISIBLE_DEVICES": "0", "PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True",
                                      "NCCL_DEBUG": "WARN", "CUDA_MPS_PIPE_DIRECTORY": "/run/mps"}


def test_nothing_else_of_environ_leaves_the_host(monkeypatch):
    facts = collect(host_answers(), monkeypatch=monkeypatch)
    text = json.dumps(facts)
    assert "hf_secret_value" not in text and "AWS_SECRET" not in text and "HF_TOKEN" not in text


def test_a_unit_that_does_not_exist_is_reported_not_probed(monkeypatch):
    absent = service(collect(host_answers(), monkeypatch=monkeypatch), "absent.service")
    assert (absent["load_state"], absent["journal"]["status"], absent["frameworks"]["status"]) == (
        "not-found", "not_read", "not_probed")
    assert absent["processes"] == []


def test_the_graphics_process_is_no_gpu_workload(monkeypatch):
    facts = collect(host_answers(), services=(), monkeypatch=monkeypatch)
    assert [item["unit"] for item in facts["workload"]["services"]] == ["vllm.service"]


def test_without_root_the_probe_and_environ_say_why(monkeypatch):
    answers = host_answers(probe=False)
    del answers["files"]["/proc/48211/environ"]
    facts = collect(answers, euid=1000, monkeypatch=monkeypatch)
    vllm = service(facts, "vllm.service")
    assert vllm["frameworks"]["status"] == "not_probed"
    assert "needs become" in vllm["frameworks"]["reason"]
    assert vllm["processes"][0]["environment"] is None
    assert "not root" in vllm["processes"][0]["environment_unreadable"]


def test_a_host_without_systemctl_or_journalctl_reports_errors_not_a_failure(monkeypatch):
    answers = host_answers()
    answers["bins"] = {"nvidia-smi": "/usr/bin/nvidia-smi"}
    facts = collect(answers, monkeypatch=monkeypatch)
    vllm = service(facts, "vllm.service")
    assert vllm["journal"]["status"] == "unavailable" and vllm["restarts"] is None
    assert vllm["oom_kills"]["read"] is False
    calls = [error["call"] for error in facts["errors"]]
    assert "workload: systemctl" in calls and "workload: kernel log" in calls
    assert facts["collection"]["status"] == "complete"


def test_a_journal_that_fails_or_hangs_is_an_entry_of_its_own(monkeypatch):
    answers = host_answers()
    key = command_key(unit_journal_argv(JOURNALCTL, "vllm.service", 72, workload_facts.MAX_JOURNAL_ENTRIES))
    answers["commands"][key] = {"rc": None, "stdout": journal_entry(OOM_LINE, 10) + "\n", "stderr": "",
                                "timed_out": True}
    vllm = service(collect(answers, monkeypatch=monkeypatch), "vllm.service")
    assert vllm["journal"]["status"] == "partial" and vllm["journal"]["matches"]["cuda_oom"]["count"] == 1
    answers["commands"][key] = {"rc": 1, "stdout": "", "stderr": "Failed to open journal: Permission denied"}
    vllm = service(collect(answers, monkeypatch=monkeypatch), "vllm.service")
    assert vllm["journal"]["status"] == "failed" and "Permission denied" in vllm["journal"]["reason"]


def test_a_probe_that_prints_garbage_is_failed_with_the_reason(monkeypatch):
    answers = host_answers(probe=False)
    probe_argv = ["/usr/sbin/runuser", "-u", "svc-llm", "--", PYTHON, "-c", workload_probe.PROBE_SCRIPT]
    answers["commands"][command_key(probe_argv)] = result("Segmentation fault\n")
    vllm = service(collect(answers, monkeypatch=monkeypatch), "vllm.service")
    assert vllm["frameworks"]["status"] == "failed" and "no JSON" in vllm["frameworks"]["reason"]


@pytest.mark.parametrize("text, unit", [
    ("0::/system.slice/vllm.service\n", "vllm.service"),
    ("12:pids:/system.slice/x.service\n1:name=systemd:/system.slice/trainer.service\n", "trainer.service"),
    ("0::/user.slice/user-1000.slice/session-3.scope\n", None),
    ("0::/system.slice/docker-4f1c.scope\n", None),
    ("garbage", None),
])
def test_the_service_of_a_process(text, unit):
    assert workload_facts.unit_of_process(text) == unit


@pytest.mark.parametrize("props, expected", [
    ({"ExecMainCode": "2", "ExecMainStatus": "9"}, {"code": "killed", "status": None, "signal": "KILL"}),
    ({"ExecMainCode": "3", "ExecMainStatus": "6"}, {"code": "dumped", "status": None, "signal": "ABRT"}),
    ({"ExecMainCode": "1", "ExecMainStatus": "137"}, {"code": "exited", "status": 137, "signal": None}),
    ({"ExecMainCode": "0", "ExecMainStatus": "0"}, {"code": None, "status": 0, "signal": None}),
])
def test_the_last_exit(props, expected):
    assert workload_facts.last_exit(props) == expected


class Scripts(ReplayHost):
    def __init__(self, files, bins=None):
        ReplayHost.__init__(self, {"files": files, "bins": bins or {}})


@pytest.mark.parametrize("path, argv, files, expected", [
    ("/usr/bin/python3.11", [], {}, "/usr/bin/python3.11"),
    ("/usr/bin/env", ["/usr/bin/env", "PYTHONUNBUFFERED=1", "python3", "serve.py"], {}, "/usr/local/bin/python3"),
    ("/opt/venv/bin/torchrun", [], {"/opt/venv/bin/torchrun": "#!/opt/venv/bin/python3.10\nimport re\n"},
     "/opt/venv/bin/python3.10"),
    ("/usr/local/bin/serve", [], {"/usr/local/bin/serve": "#!/usr/bin/env python3\n"}, "/usr/local/bin/python3"),
    ("/usr/local/bin/gpu-worker", [],
     {"/usr/local/bin/gpu-worker": "#!/bin/sh\n# wrapper\nexec /usr/bin/python3 /usr/lib/x/worker.py \"$@\"\n"},
     "/usr/bin/python3"),
    ("/opt/tritonserver/bin/tritonserver", [], {"/opt/tritonserver/bin/tritonserver": "\x7fELF\x02\x01"}, None),
    ("/usr/local/bin/run.sh", [], {"/usr/local/bin/run.sh": "#!/bin/bash\nexec /usr/bin/java -jar x.jar\n"}, None),
])
def test_the_interpreter_of_an_exec_start(path, argv, files, expected):
    host = Scripts(files, {"python3": "/usr/local/bin/python3"})
    assert workload_probe.interpreter_of(host, path, argv) == expected


def test_exec_start_as_systemctl_prints_it():
    assert workload_probe.parse_exec_start(EXEC_START) == (
        PYTHON, [PYTHON, "-m", "vllm.entrypoints.openai.api_server", "--port", "8000"])
    assert workload_probe.parse_exec_start("") == (None, [])


PYTHON39 = "/root/.pyenv/versions/3.9.18/bin/python"


def write(root, relative, text):
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def dist_info(root, name, version):
    write(root, "%s-%s.dist-info/METADATA" % (name.replace("-", "_"), version),
          "Metadata-Version: 2.1\nName: %s\nVersion: %s\n" % (name, version))


@pytest.mark.skipif(not os.path.exists(PYTHON39), reason="needs the Python 3.9 of the target-side tests")
def test_the_real_probe_reads_versions_without_importing_the_frameworks(tmp_path, monkeypatch):
    """site-packages with a torch, a tensorflow and a jax whose __init__ would fail on import: the probe
    reads their metadata and version files only."""
    site = tmp_path / "site"
    write(site, "torch/__init__.py", "raise SystemExit('torch must not be imported')\n")
    write(site, "torch/version.py", "from typing import Optional\n__version__ = '2.4.1+cu121'\n"
                                    "cuda: Optional[str] = '12.1'\nhip: Optional[str] = None\n")
    dist_info(site, "torch", "2.4.1+cu121")
    dist_info(site, "nvidia-cudnn-cu12", "9.1.0.70")
    dist_info(site, "nvidia-nccl-cu12", "2.20.5")
    write(site, "tensorflow/__init__.py", "raise SystemExit('tensorflow must not be imported')\n")
    write(site, "tensorflow/python/platform/build_info.py",
          "build_info = {'cpu_compiler': 'clang', 'cuda_compute_capabilities': ['sm_60'], "
          "'cuda_version': '12.3', 'cudnn_version': '8', 'is_cuda_build': True}\n")
    dist_info(site, "tensorflow", "2.16.1")
    dist_info(site, "jax", "0.4.30")
    dist_info(site, "jaxlib", "0.4.30")
    dist_info(site, "jax-cuda12-plugin", "0.4.30")
    dist_info(site, "nvidia-cuda-runtime-cu12", "12.5.82")
    monkeypatch.setenv("PYTHONPATH", str(site))
    from tests.support.live_host import live_host
    record = workload_probe.probe_frameworks(live_host(), "{ path=%s ; argv[]=%s -m x ; }" % (PYTHON39, PYTHON39),
                                             None, 20, euid=0)
    assert record["status"] == "read", record
    assert record["python"] == "3.9.18"
    assert record["packages"] == [
        {"name": "torch", "version": "2.4.1+cu121", "cuda": "12.1", "cudnn": "9.1.0.70", "nccl": "2.20.5"},
        {"name": "tensorflow", "version": "2.16.1", "cuda": "12.3", "cudnn": "8", "nccl": "2.20.5"},
        {"name": "jax", "version": "0.4.30", "cuda": "12.5", "cudnn": "9.1.0.70", "nccl": "2.20.5"}]


def test_a_probe_that_hangs_is_stopped_at_its_timeout():
    class Hung(ReplayHost):
        def run(self, argv, timeout):
            return CommandResult(None, "", "", timed_out=True)
    record = workload_probe.probe_frameworks(Hung({}), "{ path=/usr/bin/python3 ; argv[]=/usr/bin/python3 ; }",
                                             None, 1, euid=0)
    assert record["status"] == "failed" and "timed out" in record["reason"]
