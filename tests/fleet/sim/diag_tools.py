# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The simulated active-diagnostic tools of the test fleet: dcgmi (diag only), nvbandwidth, all_reduce_perf and
gpu_burn, answering from the host's state file in their documented formats (see README.md, "Active diagnostics").

    python3 diag_tools.py dcgmi diag -r 2 -j
    python3 diag_tools.py nvbandwidth -t host_to_device_memcpy_ce
    python3 diag_tools.py all_reduce_perf -b 8 -e 128M -f 2 -g 4
    python3 diag_tools.py gpu_burn 60

Failure injection, per host: state["diagnostics"] (every key optional):
    memory_fail_gpus    [positions]  dcgmi diag -r 2+: "GPU Memory" fails on these GPUs
    pcie_fail_gpus      [positions]  dcgmi diag -r 2+: "PCIe" fails on these GPUs
    bandwidth_factor    {"1": 0.4}   nvbandwidth: this GPU's copies run at this fraction of the model's figure
    nvbandwidth_pattern_error  name  nvbandwidth: this test case aborts on a data-validation failure
    nccl_error          "NCCL failure common.cu:1005 'unhandled system error'": all_reduce_perf stops with it
    nccl_busbw_factor   0.3          all_reduce_perf: bus bandwidth at this fraction of the model's
    burn_faulty_gpus    [positions]  gpu_burn: these GPUs are FAULTY (errors counted); dcgmi targeted_stress fails them
    hang                ["nvbandwidth", ...]  these tools print their header and never end (for timeouts)
    real_time           false        true: gpu_burn and targeted_stress sleep for the seconds asked
Python 3 standard library only (the containers run it with Debian's python3).
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import nvidia_smi as sim  # noqa: E402  pylint: disable=wrong-import-position

DCGM_VERSION = "3.3.8"
NVBANDWIDTH_VERSION = "v0.7"
NCCL_TESTS_VERSION = "2.13.10"
NCCL_VERSION = "2.21.5"

# GB/s a healthy x16 link moves with the copy engines, by PCIe generation: (host->device, device->host,
# bidirectional per direction). Gen3 from the Tesla T4 run of NVIDIA/go-dcgm#52 (13.15 / 12.33 GB/s, realdata); gen4
# from nvbandwidth's README (25.94-26.19 H2D, 18.37-19.59 bidirectional) and NVIDIA/nvbandwidth#15 (26.25-27.11 D2H);
# gen5 from the RTX 5090 quote in tinygrad/open-gpu-kernel-modules#29 (56.3 / 57.3 / 50.9 GB/s, realdata).
PCIE_CE_GBS = {3: (13.15, 12.33, 11.3), 4: (26.0, 26.7, 18.9), 5: (56.3, 57.3, 50.9)}
# Device-to-device copy-engine GB/s between two GPUs, by NVLink count: 12 links (A100 class) about the 276 GB/s of
# nvbandwidth's README matrix; 18 links (H100/H200 SXM) approximate (NVLink4 is 1.5x NVLink3 per GPU); 4 links (A30
# bridge) approximate; no NVLink: over PCIe, about the host link.
NVLINK_D2D_GBS = {18: 390.0, 12: 276.0, 4: 85.0}
# all_reduce_perf bus bandwidth at large sizes, GB/s: NVLink counts as above (the 300 GB/s of kvcache-ai/Mooncake#3484,
# GPU not stated, realdata), PCIe only about 0.8 of the host link (NVIDIA/nccl#340: ~21 GB/s on 2 GPUs).
NCCL_BUSBW_GBS = {18: 360.0, 12: 230.0, 4: 60.0}
NCCL_LATENCY_US = 18.0

DCGM_TESTS = (  # (level at which it runs, category, name)
    (1, "Deployment", "Denylist"), (1, "Deployment", "NVML Library"), (1, "Deployment", "CUDA Main Library"),
    (1, "Deployment", "Permissions and OS Blocks"), (1, "Deployment", "Persistence Mode"),
    (1, "Deployment", "Environment Variables"), (1, "Deployment", "Page Retirement/Row Remap"),
    (1, "Deployment", "Graphics Processes"), (1, "Deployment", "Inforom"),
    (2, "Integration", "PCIe"), (2, "Hardware", "GPU Memory"),
    (3, "Hardware", "Diagnostic"), (3, "Stress", "Targeted Stress"), (3, "Stress", "Targeted Power"),
    (3, "Stress", "Memory Bandwidth"),
    (4, "Hardware", "Memtest"), (4, "Hardware", "Pulse Test"), (4, "Hardware", "EUD Test"),
)
FAILURE_MESSAGES = {
    "GPU Memory": "GPU %d Memory test failed: %d memory mismatches found (DCGM_FR_MEMORY_MISMATCH). Drain the GPU "
                  "and reset it or reboot the node.",
    "PCIe": "GPU %d PCIe link error: the replay rate exceeded its limit during the test. Check the PCIe link and reseat "
            "the GPU.",
    "Targeted Stress": "GPU %d Targeted stress test failed: %d errors in the compute results (DCGM_FR_STRESS_LEVEL).",
}
INJECTED_KEYS = {"GPU Memory": "memory_fail_gpus", "PCIe": "pcie_fail_gpus", "Targeted Stress": "burn_faulty_gpus"}
TITLES = {
    "host_to_device_memcpy_ce": "memcpy CE CPU(row) -> GPU(column) bandwidth (GB/s)",
    "device_to_host_memcpy_ce": "memcpy CE CPU(row) <- GPU(column) bandwidth (GB/s)",
    "host_to_device_bidirectional_memcpy_ce": "memcpy CE CPU(row) <-> GPU(column) bandwidth (GB/s)",
    "device_to_host_bidirectional_memcpy_ce": "memcpy CE CPU(row) <-> GPU(column) bandwidth (GB/s)",
    "device_to_device_memcpy_read_ce": "memcpy CE GPU(row) -> GPU(column) bandwidth (GB/s)",
    "device_to_device_memcpy_write_ce": "memcpy CE GPU(row) <- GPU(column) bandwidth (GB/s)",
}


class ToolError(Exception):
    def __init__(self, text, rc):
        Exception.__init__(self, text)
        self.text, self.rc = text, rc


# ---------------------------------------------------------------- the host


def load():
    """(state, injected failures, visible GPUs); ToolError when the driver cannot be used."""
    state = sim.load_state()
    try:
        sim.check_driver(state)
    except sim.SmiError as error:
        raise ToolError(error.text, 1)
    return state, state.get("diagnostics") or {}, sim.visible_gpus(state)


def catalog_path():
    """The model catalog: installed beside this file in a container, simulator/gpu_models.json in the project."""
    installed = os.path.join(HERE, "gpu_models.json")
    if os.path.exists(installed):
        return installed
    return os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(HERE))), "simulator", "gpu_models.json")


def model(gpu):
    """(PCIe generation, NVLink count) of a GPU's model, from the catalog the fleet's state was built from."""
    try:
        with open(catalog_path()) as handle:
            spec = json.load(handle)["models"].get(gpu["name"], {})
    except (IOError, OSError, ValueError):
        spec = {}
    return spec.get("pcie_gen_max") or gpu.get("pcie", {}).get("gen_max") or 4, spec.get("nvlinks") or 0


def factor(injected, position):
    return float((injected.get("bandwidth_factor") or {}).get(str(position), 1.0))


def hang_if_asked(injected, tool, out):
    """Never returns when the state asks this tool to hang (what it printed so far stays printed)."""
    if tool in (injected.get("hang") or []):
        out.flush()
        while True:
            time.sleep(3600)


def option_value(argv, names, default=None):
    for index, arg in enumerate(argv):
        if arg in names and index + 1 < len(argv):
            return argv[index + 1]
        for name in names:
            if name.startswith("--") and arg.startswith(name + "="):
                return arg.split("=", 1)[1]
    return default


# ---------------------------------------------------------------- dcgmi diag


def dcgm_results(level_or_test, gpus, injected):
    """[(category, name, {position: (status, message)})] of a run."""
    if level_or_test == "targeted_stress":
        selected = [test for test in DCGM_TESTS if test[2] == "Targeted Stress"]
    else:
        selected = [test for test in DCGM_TESTS if test[0] <= int(level_or_test)]
    results = []
    for _level, category, name in selected:
        failing = set(injected.get(INJECTED_KEYS.get(name), []) or [])
        per_gpu = {}
        for position, _gpu in enumerate(gpus):
            if position in failing:
                per_gpu[position] = ("Fail", FAILURE_MESSAGES[name] % ((position, 12) if "%d memory" in FAILURE_MESSAGES[
                    name] or "%d errors" in FAILURE_MESSAGES[name] else (position,)))
            else:
                per_gpu[position] = ("Pass", None)
        results.append((category, name, per_gpu))
    return results


def dcgm_json(results, state):
    """The DCGM 3.x JSON layout (tab indentation, "key" : value), as dcgmi diag -j prints it."""
    categories = []
    for category, name, per_gpu in results:
        entries = []
        for position, (status, message) in sorted(per_gpu.items()):
            entry = {"gpu_id": str(position), "status": status}
            if message:
                entry["warnings"] = [{"error_category": 1, "error_id": 83, "warning": message}]
            entries.append(entry)
        test = {"name": name, "results": entries}
        existing = [c for c in categories if c["category"] == category]
        if existing:
            existing[0]["tests"].append(test)
        else:
            categories.append({"category": category, "tests": [test]})
    document = {"DCGM GPU Diagnostic": {"test_categories": categories},
                "Driver Version Detected": state["driver"]["kernel_module_version"], "version": DCGM_VERSION}
    return json.dumps(document, indent="\t", separators=(",", " : ")) + "\n"


def _row(left, right):
    return "| %-25s | %-45s  |" % (left, right)


def _wrapped(text, width=45):
    return [text[start:start + width] for start in range(0, len(text), width)] or [""]


def dcgm_text(results, state, gpus):
    """The DCGM 3.x text table ("Pass - All", "Fail - GPU: 1", messages cut every 45 characters)."""
    lines = ["Successfully ran diagnostic for group.", "+" + "-" * 27 + "+" + "-" * 48 + "+",
             _row("Diagnostic", "Result"), "+" + "=" * 27 + "+" + "=" * 48 + "+",
             "|-----  Metadata  ----------+------------------------------------------------|",
             _row("DCGM Version", DCGM_VERSION), _row("Driver Version Detected", state["driver"]["kernel_module_version"]),
             _row("GPU Device IDs Detected", ",".join(gpu["pci_device_id"][:4].lower() for gpu in gpus))]
    section = None
    for category, name, per_gpu in results:
        if category != section:
            section = category
            lines.append(("|-----  %s  " % category).ljust(28, "-") + "+" + "-" * 48 + "|")
        statuses = sorted(set(status for status, _message in per_gpu.values()))
        if len(statuses) == 1:
            lines.append(_row(name, "%s - All" % statuses[0]))
        else:
            for number, status in enumerate(statuses):
                indexes = ",".join(str(p) for p, (s, _m) in sorted(per_gpu.items()) if s == status)
                lines.append(_row(name if number == 0 else "", "%s - GPU: %s" % (status, indexes)))
        for _position, (_status, message) in sorted(per_gpu.items()):
            if message:
                for number, piece in enumerate(_wrapped(message)):
                    lines.append(_row("Warning" if number == 0 else "", piece))
    lines.append("+" + "-" * 27 + "+" + "-" * 48 + "+")
    return "\n".join(lines) + "\n"


def dcgmi(argv, out):
    if argv[:1] == ["-v"] or argv[:1] == ["--version"]:
        out.write("Version : %s\nBuild ID : 4\nBuild Date : 2024-08-20\n" % DCGM_VERSION)
        return 0
    if argv[:1] != ["diag"]:
        raise ToolError("Error: the simulated dcgmi knows only 'diag' and '-v'", 2)
    run = option_value(argv, ("-r", "--run"))
    if run is None or not (run in ("1", "2", "3", "4", "targeted_stress")):
        raise ToolError("Error: Invalid value for --run: %r (1, 2, 3, 4 or a test name)" % (run,), 2)
    state, injected, gpus = load()
    hang_if_asked(injected, "dcgmi", out)
    results = dcgm_results(run, gpus, injected)
    if run == "targeted_stress" and injected.get("real_time"):
        duration = option_value(argv, ("-p", "--parameters"), "targeted_stress.test_duration=120").split("=")[-1]
        time.sleep(float(duration))
    out.write(dcgm_json(results, state) if "-j" in argv or "--json" in argv else dcgm_text(results, state, gpus))
    failed = any(status == "Fail" for _c, _n, per_gpu in results for status, _m in per_gpu.values())
    return 226 if failed else 0


# ---------------------------------------------------------------- nvbandwidth


def nvbandwidth_header(state, gpus):
    lines = ["nvbandwidth Version: %s" % NVBANDWIDTH_VERSION, "Built from Git version: %s" % NVBANDWIDTH_VERSION, "",
             "CUDA Runtime Version: 12040", "CUDA Driver Version: 12040",
             "Driver Version: %s" % state["driver"]["kernel_module_version"], ""]
    lines += ["Device %d: %s (%s)" % (n, gpu["name"], gpu["pci_bus_id"][:-2].lower()) for n, gpu in enumerate(gpus)]
    return lines + [""]


def host_matrix(name, gpus, injected):
    column = 2 if "bidirectional" in name else (0 if name.startswith("host_to_device") else 1)
    return [[round(PCIE_CE_GBS[min(max(model(gpu)[0], 3), 5)][column] * factor(injected, n), 2)
             for n, gpu in enumerate(gpus)]]


def d2d_figure(gpus, injected, row, column):
    generation, links = model(gpus[row])
    base = NVLINK_D2D_GBS.get(links) or PCIE_CE_GBS[min(max(generation, 3), 5)][0] * 0.9
    return round(base * min(factor(injected, row), factor(injected, column)), 2)


def device_matrix(gpus, injected):
    return [[None if row == column else d2d_figure(gpus, injected, row, column) for column in range(len(gpus))]
            for row in range(len(gpus))]


def matrix_lines(matrix):
    width = len(matrix[0])
    lines = ["   " + "".join("%10d" % column for column in range(width))]
    for number, row in enumerate(matrix):
        lines.append("%-3d" % number + "".join("%10s" % ("N/A" if value is None else "%.2f" % value) for value in row))
    return lines


def nvbandwidth_case(name, gpus, injected):
    lines = ["Running %s." % name]
    if name == injected.get("nvbandwidth_pattern_error"):
        return lines + [" Invalid value when checking the pattern at 0x7f3a40000000", " Current offset : 11136 ",
                        "ASSERT in expression h_errorFlag == 0 in void memcmpPatternHelper() : memcpy.cpp:165"], True
    if name.startswith("device_to_device") and len(gpus) < 2:
        return lines + ["Waived. ", ""], False
    matrix = device_matrix(gpus, injected) if name.startswith("device_to_device") else host_matrix(name, gpus, injected)
    total = sum(value for row in matrix for value in row if value is not None)
    return lines + [TITLES[name]] + matrix_lines(matrix) + ["", "SUM %s %.2f" % (name, total), ""], False


def nvbandwidth(argv, out):
    if "-l" in argv or "--list" in argv:
        out.write("".join("%d, %s:\n" % (n, name) for n, name in enumerate(TITLES)))
        return 0
    wanted = []
    if "-t" in argv or "--testcase" in argv:
        start = argv.index("-t" if "-t" in argv else "--testcase") + 1
        for arg in argv[start:]:
            if arg.startswith("-"):
                break
            wanted.append(arg)
    wanted = wanted or list(TITLES)
    unknown = [name for name in wanted if name not in TITLES]
    if unknown:
        raise ToolError("ERROR: Testcase %s not found!" % unknown[0], 1)
    state, injected, gpus = load()
    out.write("\n".join(nvbandwidth_header(state, gpus)) + "\n")
    hang_if_asked(injected, "nvbandwidth", out)
    for name in wanted:
        lines, aborted = nvbandwidth_case(name, gpus, injected)
        out.write("\n".join(lines) + "\n")
        if aborted:
            out.write("Aborted (core dumped)\n")
            return 134
    return 0


# ---------------------------------------------------------------- all_reduce_perf


def size_value(text):
    text = str(text).strip().upper()
    scale = {"K": 1024, "M": 1024 ** 2, "G": 1024 ** 3}.get(text[-1:], 1)
    return int(text[:-1] if scale > 1 else text) * scale


def nccl_header(argv, state, gpus, count, low, high):
    host = state.get("hostname") or "localhost"
    lines = ["# nccl-tests version %s nccl-headers=22105 nccl-library=22105" % NCCL_TESTS_VERSION,
             "# Collective test starting: all_reduce_perf",
             "# nThread 1 nGpus %d minBytes %d maxBytes %d step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 "
             "validation: 1 graph: 0" % (count, low, high), "#", "# Using devices"]
    for rank, gpu in enumerate(gpus[:count]):
        lines.append("#  Rank %2d Group  0 Pid %6d on %10s device %2d [0x%s] %s" % (
            rank, os.getpid(), host, rank, gpu["pci_bus_id"][9:11].lower(), gpu["name"]))
    return lines


def nccl_rows(gpus, count, low, high, injected):
    _generation, links = model(gpus[0])
    peak = (NCCL_BUSBW_GBS.get(links) or PCIE_CE_GBS[min(max(_generation, 3), 5)][0] * 0.8)
    peak *= float(injected.get("nccl_busbw_factor", 1.0))
    ratio = 2.0 * (count - 1) / count if count > 1 else 0.0
    algbw_peak = peak / ratio if ratio else peak
    rows, size = [], low
    while size <= high:
        elements = max(size // 4, 1)
        time_us = NCCL_LATENCY_US + size / (algbw_peak * 1e3)
        algbw = size / time_us / 1e3
        rows.append((size, elements, time_us, algbw, algbw * ratio))
        size *= 2
    return rows


def all_reduce_perf(argv, out):
    state, injected, gpus = load()
    count = min(int(option_value(argv, ("-g", "--ngpus"), "1")), len(gpus))
    low, high = size_value(option_value(argv, ("-b", "--minbytes"), "32M")), size_value(option_value(
        argv, ("-e", "--maxbytes"), "32M"))
    out.write("\n".join(nccl_header(argv, state, gpus, count, low, high)) + "\n")
    hang_if_asked(injected, "all_reduce_perf", out)
    host = state.get("hostname") or "localhost"
    if injected.get("nccl_error"):
        error = injected["nccl_error"]
        out.write("%s: %s\n .. %s pid %d: Test failure common.cu:891\n" % (
            host, error if error.startswith("Test ") else "Test " + error, host, os.getpid()))
        return 2
    out.write("#\n#%90s%34s\n" % ("out-of-place", "in-place"))
    out.write("#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw"
              "   busbw #wrong\n")
    out.write("#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)"
              "  (GB/s)       \n")
    rows = nccl_rows(gpus, count, low, high, injected)
    for size, elements, time_us, algbw, busbw in rows:
        half = "%8.2f %7.2f %7.2f %6d" % (time_us, algbw, busbw, 0)
        out.write("%12d  %12d     float     sum      -1 %s %s\n" % (size, elements, half, half))
    average = sum(row[4] for row in rows) / len(rows) if rows else 0.0
    out.write("# Out of bounds values : 0 OK\n# Avg bus bandwidth    : %.4f \n#\n\n" % average)
    return 0


# ---------------------------------------------------------------- gpu_burn


def gpu_burn(argv, out):
    seconds = int(next((arg for arg in argv if arg.isdigit()), "10"))
    state, injected, gpus = load()
    faulty = set(injected.get("burn_faulty_gpus") or [])
    for number, gpu in enumerate(gpus):
        out.write("GPU %d: %s (UUID: %s)\n" % (number, gpu["name"], gpu["uuid"]))
    hang_if_asked(injected, "gpu_burn", out)
    for number, gpu in enumerate(gpus):
        total = gpu["memory"]["total_mib"]
        out.write("Initialized device %d with %d MB of memory (%d MB available, using %d MB of it), using FLOATS\n"
                  % (number, total, total - 600, int((total - 600) * 0.9)))
    steps = 3
    for step in range(1, steps + 1):
        if injected.get("real_time"):
            time.sleep(seconds / float(steps))
        done = "%.1f%%" % (100.0 * step / steps)
        procd = " - ".join("%d (%d Gflop/s)" % (step * 3000, 19000) for _gpu in gpus)
        errors = " - ".join(str(step * 4096 if n in faulty else 0) + ("  (WARNING!)" if n in faulty else "")
                            for n in range(len(gpus)))
        temps = " - ".join("%d C" % (gpu["temperature"]["gpu_c"] + 20 + step) for gpu in gpus)
        out.write("%s  proc'd: %s   errors: %s   temps: %s \n" % (done, procd, errors, temps))
        out.write("\tSummary at:   %s\n\n" % time.strftime("%a %b %d %H:%M:%S UTC %Y", time.gmtime()))
    out.write("Killing processes.. done\n\nTested %d GPUs:\n" % len(gpus))
    for number in range(len(gpus)):
        out.write("\tGPU %d: %s\n" % (number, "FAULTY" if number in faulty else "OK"))
    return 0  # as the real gpu_burn: 0 even with FAULTY GPUs


TOOLS = {"dcgmi": dcgmi, "nvbandwidth": nvbandwidth, "all_reduce_perf": all_reduce_perf, "gpu_burn": gpu_burn}


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] not in TOOLS:
        sys.stderr.write("usage: diag_tools.py {%s} ARGS...\n" % ",".join(sorted(TOOLS)))
        return 2
    try:
        rc = TOOLS[argv[0]](argv[1:], sys.stdout)
    except ToolError as error:
        sys.stdout.flush()
        sys.stderr.write(error.text + "\n")
        return error.rc
    sys.stdout.flush()
    return rc


if __name__ == "__main__":
    sys.exit(main())
