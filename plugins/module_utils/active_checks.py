# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Active diagnostics on one host (the gpu_validate module's engine): the safety gate, each check's command, its
bounded run and its result in the `validation` shape (docs/active-checks.md, the facts family `validation`).

A check's status says what the tool reported, never more: failed (the tool ran and reported a fault), error (the tool
or its harness could not do its job), skipped (not found, not applicable), timeout (killed at its bound), refused (the
node was busy), passed. The controller judges (diag-judge's rules); nothing here changes clocks, power, persistence or
MIG, and no command gets such a flag.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os
import time

from ansible_collections.gpufleet.core.plugins.module_utils.dcgm_diag_output import parse_dcgm_diag
from ansible_collections.gpufleet.core.plugins.module_utils.gpu_burn_output import parse_gpu_burn
from ansible_collections.gpufleet.core.plugins.module_utils.nccl_tests_output import parse_nccl_tests
from ansible_collections.gpufleet.core.plugins.module_utils.nvbandwidth_output import parse_nvbandwidth

VALIDATION_FORMAT = 1
CHECKS = ("dcgm_diag", "nvbandwidth", "nccl_all_reduce", "stress")
DEFAULT_CHECKS = ["dcgm_diag", "nvbandwidth"]
STRESS_TOOLS = ("dcgm_targeted_stress", "gpu_burn")
DEFAULT_TESTCASES = ["host_to_device_memcpy_ce", "device_to_host_memcpy_ce", "device_to_device_memcpy_read_ce"]
# The program each check runs, by the tool_paths key that overrides where it is found (names searched on PATH).
TOOL_NAMES = {"dcgmi": ("dcgmi",), "nvbandwidth": ("nvbandwidth",), "all_reduce_perf": ("all_reduce_perf",),
              "gpu_burn": ("gpu_burn", "gpu-burn")}
# Longest any one check may run: a level 4 DCGM diagnostic takes one to two hours on 8 GPUs.
MAX_TIMEOUT_S = 4 * 3600
DCGM_TIMEOUTS_S = {1: 300, 2: 900, 3: 3600, 4: 3 * 3600}
DEFAULT_TIMEOUTS_S = {"nvbandwidth": 900, "nccl_all_reduce": 900}
# Beyond stress_seconds, what a stress run needs to start and stop
STRESS_MARGIN_S = 300
OUTPUT_TAIL_BYTES = 4096
NOT_UNDER_MIG = ("nvbandwidth", "nccl_all_reduce", "stress")
HOW_TO_PROCEED = ("Drain the node first (Slurm: scontrol update nodename=NODE state=drain reason=validate; Kubernetes: "
                  "kubectl drain NODE --ignore-daemonsets) or quarantine it (quarantine.yml), wait for the GPU processes "
                  "to end, and run again; allow_busy=true runs the checks anyway and disturbs the running work.")


def utc_now(now=None):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() if now is None else now))


def output_tail(result):
    """The last OUTPUT_TAIL_BYTES of what the command printed (stdout, then stderr)."""
    text = (result.stdout or "") + (("\n" + result.stderr) if result.stderr else "")
    data = text.encode("utf-8")
    return data[-OUTPUT_TAIL_BYTES:].decode("utf-8", "replace") if len(data) > OUTPUT_TAIL_BYTES else text


def new_result(status, reason="", command=None, duration_s=0.0, tool_version=None, tail=""):
    return {"status": status, "reason": reason, "command": list(command or []), "duration_s": round(duration_s, 3),
            "tool_version": tool_version, "output_tail": tail}


def empty_details(name, params):
    """The keys a check adds to its result, before anything ran."""
    if name == "dcgm_diag":
        return {"level": params["dcgm_level"], "tests": []}
    if name == "nvbandwidth":
        return {"testcases": []}
    if name == "nccl_all_reduce":
        return {"gpus": 0, "rows": [], "peak_busbw_gbs": None, "avg_busbw_gbs": None, "error_text": None}
    return {"tool": params["stress_tool"], "seconds": params["stress_seconds"], "per_gpu": {}}


def check_result(name, params, status, reason="", command=None):
    result = new_result(status, reason, command)
    result.update(empty_details(name, params))
    return result


# ---- the safety gate


def gpu_identities(gpus):
    """[{index, uuid, name, pci_bus_id}] of gpu_facts-shaped GPUs ({index: gpu})."""
    return [{"index": index, "uuid": gpus[index].get("uuid"), "name": gpus[index].get("name"),
             "pci_bus_id": gpus[index].get("pci_bus_id")} for index in sorted(gpus)]


def compute_processes(gpus):
    """[{pid, name, gpu}] of the processes (other than graphics-only ones) on the GPUs."""
    found = []
    for index in sorted(gpus):
        for process in gpus[index].get("processes") or []:
            if process.get("type") == "graphics":
                continue
            found.append({"pid": int(process["pid"]), "name": process.get("name") or "", "gpu": index})
    return found


def unknown_process_lists(gpus):
    return dict((index, gpu.get("processes_unknown") or "not read") for index, gpu in gpus.items()
                if not isinstance(gpu.get("processes"), list))


def refusal(gpus, read_error=None):
    """The refused entry when the node is busy or its processes cannot be read, else None."""
    if read_error is not None:
        return {"reason": "the GPUs and their processes could not be read (%s): an idle node cannot be verified"
                % read_error, "how_to_proceed": "Make nvidia-smi answer on this host (gpu_facts shows why it "
                "does not) and run again.", "gpu_processes": []}
    unknown = unknown_process_lists(gpus)
    if unknown:
        described = "; ".join("GPU %d: %s" % (index, why) for index, why in sorted(unknown.items()))
        return {"reason": "the processes on the GPUs are unknown (%s): an unread process list is not an idle GPU"
                % described, "how_to_proceed": HOW_TO_PROCEED, "gpu_processes": []}
    processes = compute_processes(gpus)
    if processes:
        described = ", ".join("pid %d (%s) on GPU %s" % (p["pid"], p["name"] or "?", p["gpu"]) for p in processes)
        return {"reason": "GPU compute processes are running: %s" % described, "how_to_proceed": HOW_TO_PROCEED,
                "gpu_processes": processes}
    return None


def mig_gpus(gpus):
    return [index for index in sorted(gpus) if ((gpus[index].get("mig") or {}).get("mode_current")) is True]


# ---- finding the tools


def find_tool(key, given, find_bin, is_executable=None):
    """(path, None) of a check's program, or (None, why it is not there)."""
    is_executable = is_executable or (lambda path: os.path.isfile(path) and os.access(path, os.X_OK))
    if given:
        if is_executable(given):
            return given, None
        return None, "%s was given at %s, which is not an executable file" % (key, given)
    for name in TOOL_NAMES[key]:
        path = find_bin(name)
        if path:
            return path, None
    return None, "%s was not found on PATH (install it, or give its path in the module's options)" % " or ".join(
        TOOL_NAMES[key])


def tool_key(name, params):
    if name == "dcgm_diag" or (name == "stress" and params["stress_tool"] == "dcgm_targeted_stress"):
        return "dcgmi"
    return {"nvbandwidth": "nvbandwidth", "nccl_all_reduce": "all_reduce_perf", "stress": "gpu_burn"}[name]


def given_path(key, params):
    if key == "all_reduce_perf":
        return (params.get("nccl") or {}).get("path")
    return (params.get("tool_paths") or {}).get(key)


# ---- commands


def command_for(name, path, params, gpu_count):
    """The argv of a check. Never a flag that changes clocks, power, persistence or MIG."""
    if name == "dcgm_diag":
        return [path, "diag", "-r", str(params["dcgm_level"]), "-j"]
    if name == "nvbandwidth":
        return [path, "-t"] + list(params["nvbandwidth_testcases"])
    if name == "nccl_all_reduce":
        nccl = params["nccl"]
        return [path, "-b", str(nccl["min_bytes"]), "-e", str(nccl["max_bytes"]), "-f", "2", "-g", str(max(gpu_count, 1))]
    if params["stress_tool"] == "dcgm_targeted_stress":
        return [path, "diag", "-r", "targeted_stress", "-p",
                "targeted_stress.test_duration=%d" % params["stress_seconds"], "-j"]
    compare = os.path.join(os.path.dirname(path), "compare.ptx")
    return [path] + (["-c", compare] if os.path.isfile(compare) else []) + [str(params["stress_seconds"])]


def timeout_for(name, params):
    """Seconds the check may run before its process group is killed."""
    given = (params.get("timeouts") or {}).get(name)
    if given:
        return given
    if name == "dcgm_diag":
        return DCGM_TIMEOUTS_S[params["dcgm_level"]]
    if name == "stress":
        return params["stress_seconds"] + STRESS_MARGIN_S
    return DEFAULT_TIMEOUTS_S[name]


# ---- reading each tool's output


def _dcgm_failures(tests):
    described = []
    for test in tests:
        if test["status"] != "fail":
            continue
        failing = sorted((gpu for gpu, result in test["gpus"].items() if result["status"] == "fail"), key=int)
        described.append("%s (%s)" % (test["name"], "GPU " + ", ".join(failing) if failing else "no GPU named"))
    return described


def judge_dcgm(parsed, run):
    """(status, reason) of a dcgmi diag run from what it printed."""
    if parsed["error"]:
        return "error", "dcgmi diag could not run the diagnostic: %s" % parsed["error"]
    if not parsed["tests"]:
        return "error", "dcgmi diag printed no diagnostic result (%s)" % run.describe_failure()
    failures = _dcgm_failures(parsed["tests"])
    if failures:
        return "failed", "DCGM reported failures: %s" % "; ".join(failures)
    if all(test["status"] == "skip" for test in parsed["tests"]):
        return "error", "DCGM skipped every test: nothing was tested"
    return "passed", ""


def dcgm_details(text, run, params):
    parsed = parse_dcgm_diag(text)
    status, reason = judge_dcgm(parsed, run)
    return status, reason, parsed["tool_version"], {"level": params["dcgm_level"], "tests": parsed["tests"]}


_DATA_FAULTS = ("Invalid value when checking the pattern", "ASSERT in expression")


def judge_nvbandwidth(cases, wanted, run):
    if not cases:
        return "error", "nvbandwidth printed no test case (%s)" % run.describe_failure()
    faults = ["%s: %s" % (case["name"], case["error"]) for case in cases
              if case["error"] and case["error"].startswith(_DATA_FAULTS)]
    if faults:
        return "failed", "nvbandwidth data validation failed: %s" % "; ".join(faults)
    broken = ["%s: %s" % (case["name"], case["error"]) for case in cases
              if case["error"] and not case["error"].startswith("waived")]
    missing = sorted(set(wanted) - set(case["name"] for case in cases))
    if missing:
        broken.append("not run: %s" % ", ".join(missing))
    if broken:
        return "error", "nvbandwidth did not finish: %s" % "; ".join(broken)
    return "passed", ""


def nvbandwidth_details(text, run, params):
    parsed = parse_nvbandwidth(text)
    status, reason = judge_nvbandwidth(parsed["testcases"], params["nvbandwidth_testcases"], run)
    return status, reason, parsed["tool_version"], {"testcases": parsed["testcases"]}


def judge_nccl(parsed, run):
    if parsed["error_text"]:
        return "failed", parsed["error_text"]
    wrong = [row["size_bytes"] for row in parsed["rows"] if row["wrong"]]
    if wrong:
        return "failed", "wrong results at %s bytes" % ", ".join(map(str, wrong))
    if parsed["out_of_bounds"]:
        return "failed", "%d out-of-bounds values" % parsed["out_of_bounds"]
    if not parsed["rows"]:
        return "error", "all_reduce_perf printed no result row (%s)" % run.describe_failure()
    return "passed", ""


def nccl_details(text, run, params, gpu_count):
    parsed = parse_nccl_tests(text)
    status, reason = judge_nccl(parsed, run)
    details = {"gpus": parsed["gpus"] or gpu_count, "rows": parsed["rows"], "peak_busbw_gbs": parsed["peak_busbw_gbs"],
               "avg_busbw_gbs": parsed["avg_busbw_gbs"], "error_text": parsed["error_text"]}
    return status, reason, parsed["tool_version"], details


STRESS_RESULTS = {"pass": "ok", "fail": "faulty"}


def judge_stress(per_gpu, init_error, run):
    bad = ["GPU %s %s" % (gpu, value["result"]) for gpu, value in sorted(per_gpu.items(), key=lambda i: int(i[0]))
           if value["result"] in ("faulty", "died")]
    if bad:
        return "failed", "stress test: %s" % ", ".join(bad)
    if init_error:
        return "error", "the stress tool could not start: %s" % init_error
    if not per_gpu:
        return "error", "the stress tool reported no GPU (%s)" % run.describe_failure()
    unknown = sorted((gpu for gpu, value in per_gpu.items() if value["result"] == "unknown"), key=int)
    if unknown:
        return "error", "no verdict for GPU %s (an OK without any progress line is not a pass)" % ", ".join(unknown)
    return "passed", ""


def stress_details(text, run, params):
    if params["stress_tool"] == "gpu_burn":
        parsed = parse_gpu_burn(text)
        per_gpu, init_error, version = parsed["per_gpu"], parsed["init_error"], None
    else:
        parsed = parse_dcgm_diag(text)
        stress = [test for test in parsed["tests"] if test["name"].lower().replace(" ", "_") == "targeted_stress"]
        per_gpu = dict((gpu, {"result": STRESS_RESULTS.get(value["status"], "unknown"), "errors": None})
                       for test in stress for gpu, value in test["gpus"].items())
        init_error, version = parsed["error"], parsed["tool_version"]
    status, reason = judge_stress(per_gpu, init_error, run)
    return status, reason, version, {"tool": params["stress_tool"], "seconds": params["stress_seconds"],
                                     "per_gpu": per_gpu}


def read_output(name, text, run, params, gpu_count):
    """(status, reason, tool_version, details) of a check that ran to its end."""
    if name == "dcgm_diag":
        return dcgm_details(text, run, params)
    if name == "nvbandwidth":
        return nvbandwidth_details(text, run, params)
    if name == "nccl_all_reduce":
        return nccl_details(text, run, params, gpu_count)
    return stress_details(text, run, params)


# ---- running


def run_check(name, path, params, gpu_count, run_command, clock=time.monotonic):
    """The result of one check: its command run within its bound, then read."""
    command = command_for(name, path, params, gpu_count)
    bound = timeout_for(name, params)
    started = clock()
    run = run_command(command, bound)
    duration = clock() - started
    result = new_result("error", command=command, duration_s=duration, tail=output_tail(run))
    result.update(empty_details(name, params))
    if run.timed_out and "output exceeded" not in (run.stderr or ""):
        result.update(status="timeout", reason="killed after %d s, the bound of this check (timeouts.%s)" % (bound, name))
        return result
    if run.rc is None:
        result["reason"] = "%s could not be run: %s" % (os.path.basename(path), run.describe_failure())
        return result
    status, reason, version, details = read_output(name, run.stdout + "\n" + run.stderr, run, params, gpu_count)
    result.update(details)
    result.update(status=status, reason=reason, tool_version=version)
    return result


def plan_check(name, params, mig, find_bin):
    """(path, None) when the check can run, or (None, skipped result)."""
    if mig and name in NOT_UNDER_MIG:
        return None, check_result(name, params, "skipped", "GPU %s in MIG mode: %s needs whole GPUs and does not run "
                                  "under MIG (dcgm_diag does)" % (", ".join(map(str, mig)), name))
    key = tool_key(name, params)
    path, why = find_tool(key, given_path(key, params), find_bin)
    if path is None:
        return None, check_result(name, params, "skipped", why)
    return path, None


def validate(params, gpus, read_error, find_bin, run_command, check_mode=False, now=time.time):
    """The `validation` dict: refused when the node is busy, else each requested check's result."""
    started_at = utc_now(now())
    checks = [name for name in CHECKS if name in params["checks"]]
    refused = None if params["allow_busy"] and read_error is None else refusal(gpus or {}, read_error)
    mig = mig_gpus(gpus or {})
    validation = {"format": VALIDATION_FORMAT, "started_at": started_at, "finished_at": None, "refused": refused,
                  "mig_enabled": bool(mig), "gpus": gpu_identities(gpus or {}), "checks": {}}
    for name in checks:
        if refused is not None:
            validation["checks"][name] = check_result(name, params, "refused", refused["reason"])
            continue
        path, skipped = plan_check(name, params, mig, find_bin)
        if skipped is not None:
            validation["checks"][name] = skipped
        elif check_mode:
            command = command_for(name, path, params, len(gpus))
            validation["checks"][name] = check_result(name, params, "skipped", "check mode: not run", command)
        else:
            validation["checks"][name] = run_check(name, path, params, len(gpus), run_command)
    validation["finished_at"] = utc_now(now())
    return validation
