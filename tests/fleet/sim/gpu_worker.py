# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A simulated GPU workload for the gpufleet test fleet (python3 standard library only).

Environment:
    WORKERS               how many worker processes to fork (default 1)
    CUDA_VISIBLE_DEVICES  comma list of GPU indexes or MIG device UUIDs (default 0); workers go
                          round-robin over them
    MEM_PER_WORKER_MIB    GPU memory each worker holds (default 3800)
    NAME                  process name nvidia-smi shows (default python3)
    WORKER_FAILURE        "exit" (default): when a worker fails, stop the others and exit 1, as
                          torchrun and most servers do; "continue": keep the others running

Each worker registers in /run/gpufleet-sim/procs/<pid>.json, so nvidia-smi lists it and counts
its memory, then sleeps until SIGTERM removes the registration. A worker that does not fit in
the GPU's free memory exits with PyTorch's "CUDA out of memory" error instead; the checks and
the registration happen under the simulator's state lock, so concurrent workers never overcommit.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.realpath(__file__)))

import nvidia_smi as sim  # noqa: E402  pylint: disable=wrong-import-position
import load_model  # noqa: E402  pylint: disable=wrong-import-position

GIB = 1024.0


class WorkerError(Exception):
    """A worker that cannot start; the text is what CUDA / PyTorch print."""


def settings(environ):
    """(workers, devices, mem_mib, name, failure policy) from the environment."""
    try:
        workers = int(environ.get("WORKERS", "1"))
        mem = int(environ.get("MEM_PER_WORKER_MIB", "3800"))
    except ValueError as exc:
        raise WorkerError("gpu-worker: bad WORKERS or MEM_PER_WORKER_MIB: %s" % exc)
    if workers < 0 or mem < 0:
        raise WorkerError("gpu-worker: WORKERS and MEM_PER_WORKER_MIB must not be negative")
    visible = environ.get("CUDA_VISIBLE_DEVICES", "0")
    devices = [token.strip() for token in visible.split(",") if token.strip()]
    policy = environ.get("WORKER_FAILURE", "exit")
    return workers, devices, mem, environ.get("NAME") or "python3", policy


def find_target(state, token):
    """(gpu index, gpu, gpu instance or None, compute instance or None) for one CUDA device token."""
    gpus = sim.visible_gpus(state)
    if token.startswith("MIG-"):
        for index, gpu in enumerate(gpus):
            if sim.mig_enabled(gpu):
                for gi, ci in sim.mig_devices(gpu):
                    if ci["uuid"] == token:
                        return index, gpu, gi, ci
        raise WorkerError("RuntimeError: CUDA error: invalid device ordinal")
    if not token.isdigit() or int(token) >= len(gpus):
        raise WorkerError("RuntimeError: CUDA error: invalid device ordinal")
    index = int(token)
    gpu = gpus[index]
    if sim.mig_enabled(gpu):
        devices = sim.mig_devices(gpu)
        if not devices:
            raise WorkerError("RuntimeError: CUDA error: no CUDA-capable device is detected")
        return (index, gpu) + devices[0]
    return index, gpu, None, None


def check_driver(state):
    if state is None or not state["driver"].get("library_version") or not state["driver"].get("kernel_module_version"):
        raise WorkerError("RuntimeError: Found no NVIDIA driver on your system. Please check that you have an "
                          "NVIDIA GPU and installed a driver from http://www.nvidia.com/Download/index.aspx")
    if state["driver"]["library_version"] != state["driver"]["kernel_module_version"]:
        raise WorkerError("RuntimeError: CUDA error: system has unsupported display driver / cuda driver combination")


def check_compute_mode(gpu, others):
    mode = gpu.get("compute_mode", "Default")
    if mode == "Prohibited" or (mode == "Exclusive_Process" and others):
        raise WorkerError("RuntimeError: CUDA error: CUDA-capable device(s) is/are busy or unavailable")


def capacity_mib(state, gpu, gi):
    if gi is not None:
        return sim.profile_by_name(sim.mig_model(state, gpu), gi["profile"])["memory_mib"]
    memory = gpu["memory"]
    return memory["total_mib"] - (memory.get("reserved_mib") or 0) - (memory.get("idle_used_mib") or 0)


def out_of_memory(index, capacity, used, mem):
    free = max(0, capacity - used)
    return WorkerError(
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate %.2f GiB. GPU %d has a total capacity of "
        "%.2f GiB of which %.2f GiB is free. Including non-PyTorch memory, this process has 0 bytes memory in use. "
        "Of the allocated memory 0 bytes is allocated by PyTorch, and 0 bytes is reserved by PyTorch but unallocated."
        % (mem / GIB, index, capacity / GIB, free / GIB))


def register(token, mem, name):
    """Checks that this process can use the device and registers it in the procs folder."""
    with sim.StateLock(exclusive=True):
        state = sim.load_state()
        check_driver(state)
        index, gpu, gi, ci = find_target(state, token)
        procs = [proc for proc in sim.gpu_processes(sim.live_processes(), index) if proc["pid"] != os.getpid()]
        check_compute_mode(gpu, procs)
        sharing = [proc for proc in procs if gi is None or proc["gpu_instance_id"] == gi["id"]]
        used = sum(proc["used_mib"] for proc in sharing)
        capacity = capacity_mib(state, gpu, gi)
        if used + mem > capacity:
            raise out_of_memory(index, capacity, used, mem)
        record = {"gpu": index, "used_mib": mem, "name": name, "type": "C",
                  "starttime": sim.process_start_time(os.getpid())}
        if gi is not None:
            record["gpu_instance_id"] = gi["id"]
            record["compute_instance_id"] = ci["id"]
        sim.write_json_atomically(os.path.join(sim.procs_dir(), "%d.json" % os.getpid()), record)
        if load_model.logs_xid_now(gpu, len(procs) + 1):
            sim.append_kernel_log(state, [load_model.xid_line(gpu, os.getpid(), name)])


def unregister(path):
    try:
        os.unlink(path)
    except OSError:
        pass


def run_worker(token, mem, name):
    """The body of one forked worker; never returns. SIGTERM waits while the worker registers, so
    a registration is always removed again."""
    path = os.path.join(sim.procs_dir(), "%d.json" % os.getpid())

    def stop(_signum, _frame):
        unregister(path)
        os._exit(0)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGTERM, signal.SIGINT])
    try:
        register(token, mem, name)
    except WorkerError as exc:
        sys.stderr.write("%s\n" % exc)
        sys.stderr.flush()
        os._exit(1)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGTERM, signal.SIGINT])
    while True:
        signal.pause()


def fork_workers(children, workers, devices, mem, name):
    stops = [signal.SIGTERM, signal.SIGINT]
    for slot in range(workers):
        signal.pthread_sigmask(signal.SIG_BLOCK, stops)
        pid = os.fork()
        if pid == 0:
            run_worker(devices[slot % len(devices)], mem, name)
        children[pid] = slot
        signal.pthread_sigmask(signal.SIG_UNBLOCK, stops)


def stop_children(children):
    for pid in list(children):
        try:
            os.kill(pid, signal.SIGTERM)
        except OSError:
            pass
    for pid in list(children):
        try:
            os.waitpid(pid, 0)
        except OSError:
            pass
        children.pop(pid, None)


def supervise(children, policy):
    """Waits for the workers; returns the exit status of the whole workload."""
    failures = 0
    while children:
        try:
            pid, status = os.wait()
        except OSError:
            break
        children.pop(pid, None)
        if os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0:
            continue
        failures += 1
        if policy == "exit":
            sys.stderr.write("gpu-worker: worker %d failed; stopping the other %d workers\n" % (pid, len(children)))
            stop_children(children)
    return 1 if failures else 0


def main():
    try:
        workers, devices, mem, name, policy = settings(os.environ)
        if workers and not devices:
            raise WorkerError("RuntimeError: CUDA error: no CUDA-capable device is detected")
    except WorkerError as exc:
        sys.stderr.write("%s\n" % exc)
        return 1
    children = {}

    def terminate(_signum, _frame):
        stop_children(children)
        sys.exit(0)

    signal.signal(signal.SIGTERM, terminate)
    signal.signal(signal.SIGINT, terminate)
    fork_workers(children, workers, devices, mem, name)
    status = supervise(children, policy)
    while not workers:
        time.sleep(3600)
    return status


if __name__ == "__main__":
    sys.exit(main())
