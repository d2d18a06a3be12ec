"""Demo hosts of the workload and host_pressure gather_subsets (docs/workload-and-host-pressure.md).

gpu-l40s-workload-17: an inference service that keeps running out of GPU memory with three workers on GPU 0,
restarted by systemd six times, one worker on a GPU its policy does not give it, none with the allocator
setting the policy asks for, and a PyTorch built for CUDA 12.6 on a driver of CUDA 12.4.
gpu-h100-dataload-18: a training job whose GPUs idle at about 12% while CPU and I/O pressure are high.
The answers follow the formats the real programs print (systemctl show, journalctl -o json, the kernel's
OOM-killer report, /proc/pressure, nvidia-smi --query-gpu csv).
"""

import calendar
import json
import time

import demo_scenarios as demo
from ansible_collections.gpufleet.core.plugins.module_utils import journal_scan, workload_facts, workload_probe
from ansible_collections.gpufleet.core.plugins.module_utils.host_facts import SERVICE_UNITS, SYSTEMCTL_PROPERTIES
from ansible_collections.gpufleet.core.plugins.module_utils.host_io import command_key
from ansible_collections.gpufleet.core.plugins.module_utils.host_pressure import GPU_QUERY

SUBSETS = ["all", "!driver_clients", "!fabric"]
PYTHON = "/opt/venv/bin/python3"
SYSTEMCTL = "/usr/bin/systemctl"
JOURNALCTL = "/usr/bin/journalctl"


def exec_start(argv):
    return ("{ path=%s ; argv[]=%s ; ignore_errors=no ; start_time=[Mon 2026-11-30 05:41:12 UTC] ; "
            "stop_time=[n/a] ; pid=0 ; code=(null) ; status=0/0 }" % (argv[0], " ".join(argv)))


def show_block(unit, active, sub, result, restarts, code, status, main_pid, argv):
    return ("Id=%s\nLoadState=loaded\nActiveState=%s\nSubState=%s\nResult=%s\nNRestarts=%d\nExecMainCode=%d\n"
            "ExecMainStatus=%d\nMainPID=%d\nUser=\nExecStart=%s\n" % (
                unit, active, sub, result, restarts, code, status, main_pid, exec_start(argv)))


def journal_line(unit, pid, stamp, message):
    """One `journalctl -o json` entry of a service's stdout."""
    micros = calendar.timegm(time.strptime(stamp, "%Y-%m-%dT%H:%M:%S")) * 1000000
    return json.dumps({"__REALTIME_TIMESTAMP": str(micros), "_PID": str(pid), "_TRANSPORT": "stdout",
                       "PRIORITY": "6", "SYSLOG_IDENTIFIER": "python3", "_SYSTEMD_UNIT": unit,
                       "_SYSTEMD_CGROUP": "/system.slice/" + unit, "MESSAGE": message})


def probe_answer(packages):
    return {"rc": 0, "stdout": json.dumps({"python": "3.10.12", "packages": packages}) + "\n", "stderr": ""}


def add_services(host, blocks, journals, frameworks):
    """systemctl show of the workload units (sorted, as the collector asks), their journals and probes."""
    units = sorted(blocks)
    argv = [SYSTEMCTL, "show", "--property=" + workload_facts.SYSTEMCTL_PROPERTIES] + units
    host["commands"][command_key(argv)] = {"rc": 0, "stdout": "\n".join(blocks[unit] for unit in units), "stderr": ""}
    for unit in units:
        argv = journal_scan.journalctl_argv(JOURNALCTL, unit, demo.KERNEL_LOG_WINDOW_HOURS,
                                            workload_facts.MAX_JOURNAL_ENTRIES)
        host["commands"][command_key(argv)] = {"rc": 0, "stdout": "\n".join(journals[unit]) + "\n", "stderr": ""}
    for interpreter, packages in frameworks.items():
        host["commands"][command_key([interpreter, "-c", workload_probe.PROBE_SCRIPT])] = probe_answer(packages)


def host_services(sim, host, extra):
    """The host subset's systemctl show when the audit adds the policy's services (audit.yml passes them)."""
    units = [name + ".service" for _role, names in SERVICE_UNITS for name in names] + extra
    argv = [SYSTEMCTL, "show", "--property=" + SYSTEMCTL_PROPERTIES] + units
    stdout = "\n".join(demo.systemctl_block(unit, sim.units.get(unit)) for unit in units)
    host["commands"][command_key(argv)] = {"rc": 0, "stdout": stdout, "stderr": ""}


def add_process(host, pid, unit, environment):
    host["files"]["/proc/%d/cgroup" % pid] = "0::/system.slice/%s\n" % unit
    host["files"]["/proc/%d/environ" % pid] = "".join(
        "%s=%s\0" % item for item in [("PATH", "/opt/venv/bin:/usr/bin"), ("HOME", "/root"),
                                      ("HF_TOKEN", "hf_demo_not_a_secret")] + environment)


def psi(some_avg10, some_avg60, some_total, full_total=0):
    return ("some avg10=%.2f avg60=%.2f avg300=%.2f total=%d\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=%d\n"
            % (some_avg10, some_avg60, some_avg60 * 0.8, some_total, full_total))


def add_pressure(host, cpu, io, utilization, load, cpus="0-191"):
    host["files"].update({
        "/proc/pressure/cpu": psi(cpu, cpu - 2.5, 48211900312),
        "/proc/pressure/memory": psi(0.0, 0.0, 1231187, 1001002),
        "/proc/pressure/io": psi(io, io - 1.0, 9113047551, 6011874410),
        "/proc/vmstat": "nr_free_pages 12042211\npswpin 0\npswpout 0\n",
        "/proc/meminfo": "MemTotal:       2113472512 kB\nMemFree:        60244112 kB\n"
                         "MemAvailable:   1180443304 kB\nSwapTotal:              0 kB\nSwapFree:               0 kB\n",
        "/proc/loadavg": "%.2f %.2f %.2f 61/4211 991234\n" % (load, load - 6.1, load - 20.4),
        "/sys/devices/system/cpu/online": cpus + "\n"})
    rows = "".join("%d, %d\n" % (index, value) for index, value in enumerate(utilization))
    host["commands"][command_key(["/usr/bin/nvidia-smi"] + GPU_QUERY)] = {"rc": 0, "stdout": rows, "stderr": ""}


TORCH_CU126 = {"name": "torch", "version": "2.6.0+cu126", "cuda": "12.6", "cudnn": "9.5.1.17", "nccl": "2.21.5"}
TORCH_CU124 = {"name": "torch", "version": "2.5.1+cu124", "cuda": "12.4", "cudnn": "9.1.0.70", "nccl": "2.21.5"}
OOM = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.95 GiB. GPU 0 has a total capacity of "
       "44.52 GiB of which 812.06 MiB is free. Including non-PyTorch memory, this process has 14.71 GiB memory in use. "
       "Of the allocated memory 13.02 GiB is allocated by PyTorch, and 1.20 GiB is reserved by PyTorch but "
       "unallocated. If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF="
       "expandable_segments:True to avoid fragmentation.")


def inference_journal(unit):
    lines = []
    for restart, hour in enumerate(("2026-11-29T14", "2026-11-29T19", "2026-11-29T23", "2026-11-30T02",
                                    "2026-11-30T04", "2026-11-30T05")):
        pid = 60901 + 10 * restart
        lines += [journal_line(unit, pid, hour + ":02:11", "INFO: loading model meta-llama/Llama-3.1-8B-Instruct"),
                  journal_line(unit, pid, hour + ":31:40", "Traceback (most recent call last):"),
                  journal_line(unit, pid, hour + ":31:40", '  File "/opt/app/server.py", line 214, in generate'),
                  journal_line(unit, pid, hour + ":31:40", OOM)]
    lines.append(journal_line(unit, 61001, "2026-11-30T05:41:15", "INFO: serving on 0.0.0.0:8000"))
    return lines


def host_l40s_workload_17():
    name = "gpu-l40s-workload-17"
    unit = "inference.service"
    scenario = demo.identify(demo.node(demo.l40s_gpu, 4, "550.127.05"), name, "132452317")
    gpu0 = demo.load(scenario["gpus"][0], 96, 291.2, 70, 2430, 44310)
    gpu0["processes"] = [demo.process(61001 + worker, "/opt/venv/bin/python3", 14770) for worker in range(3)]
    gpu1 = demo.load(scenario["gpus"][1], 61, 201.7, 58, 2280, 14770)
    gpu1["processes"] = [demo.process(61004, "/opt/venv/bin/python3", 14770)]
    sim = demo.gpu_host(name, scenario).cuda_toolkits("12.4.1").gpu_processes(scenario, "python3")
    sim.kernel_log(("2026-11-30T04:58:10", "python3 invoked oom-killer: gfp_mask=0xcc0(GFP_KERNEL), order=0, "
                                           "oom_score_adj=0"),
                   ("2026-11-30T04:58:10", "oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/,"
                                           "mems_allowed=0-1,oom_memcg=/system.slice/inference.service,task_memcg="
                                           "/system.slice/inference.service,task=python3,pid=60941,uid=0"),
                   ("2026-11-30T04:58:10", "Memory cgroup out of memory: Killed process 60941 (python3) "
                                           "total-vm:61289244kB, anon-rss:31980112kB, file-rss:91232kB, "
                                           "shmem-rss:0kB, UID:0 pgtables:64152kB oom_score_adj:0"))
    sim.service("inference", restart="on-failure")
    host = sim.to_dict()
    host_services(sim, host, [unit])
    for pid in range(61001, 61005):
        add_process(host, pid, unit, [("CUDA_VISIBLE_DEVICES", "0" if pid < 61004 else "1"), ("NCCL_DEBUG", "WARN")])
    argv = [PYTHON, "-m", "app.server", "--port", "8000"]
    add_services(host, {unit: show_block(unit, "active", "running", "success", 6, 1, 1, 61001, argv)},
                 {unit: inference_journal(unit)}, {PYTHON: [TORCH_CU126]})
    add_pressure(host, cpu=6.4, io=1.2, utilization=[96, 61, 0, 0], load=14.2, cpus="0-63")
    return dict(name=name, group="serving", source="nvml", nvml=scenario, host=host, gather_subset=SUBSETS,
                services=[unit],
                description="inference.service crash-looping on CUDA OOMs with 3 workers on GPU 0; a worker on GPU 1; "
                            "torch for CUDA 12.6")


def host_h100_dataload_18():
    name = "gpu-h100-dataload-18"
    unit = "trainer.service"
    scenario = demo.identify(demo.h100_node(), name, "165242318")
    for index, gpu in enumerate(scenario["gpus"]):
        demo.load(gpu, 12 + index % 3, 212.0 + index, 41 + index % 4, 1980, 61210)
        gpu["processes"] = [demo.process(71201 + index, "/opt/venv/bin/python3", 60698)]
    sim = demo.training_node(name, scenario).gpu_processes(scenario, "pt_main_thread").service(
        "trainer", restart="on-failure")
    host = sim.to_dict()
    host_services(sim, host, [unit])
    for index in range(8):
        add_process(host, 71201 + index, unit, [("CUDA_VISIBLE_DEVICES", "0,1,2,3,4,5,6,7"), ("LOCAL_RANK", str(index)),
                                                ("NCCL_IB_HCA", "mlx5_0,mlx5_1"), ("NCCL_SOCKET_IFNAME", "eth0")])
    argv = [PYTHON, "-m", "torch.distributed.run", "--nproc-per-node=8", "train.py"]
    journal = [journal_line(unit, 71200, "2026-11-30T01:00:03",
                            "step 1000 loss 2.114 samples/s 212.4 dataloader wait 81%")]
    add_services(host, {unit: show_block(unit, "active", "running", "success", 0, 0, 0, 71200, argv)},
                 {unit: journal}, {PYTHON: [TORCH_CU124]})
    utilization = [12 + index % 3 for index in range(8)]
    add_pressure(host, cpu=68.4, io=31.7, utilization=utilization, load=203.5)
    return dict(name=name, group="h100_dataload", source="nvml", nvml=scenario, host=host, gather_subset=SUBSETS,
                services=[unit],
                description="trainer.service on 8 H100s at 12-14% busy while CPU pressure is 68% and I/O 32%: "
                            "data loading starves them")


HOST_BUILDERS = (host_l40s_workload_17, host_h100_dataload_18)
