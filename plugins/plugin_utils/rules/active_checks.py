# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The results of active checks (facts.validation, written by gpufleet.core.gpu_validate) judged as findings.

DCGM diagnostics, nvbandwidth, nccl-tests' all_reduce_perf and a bounded stress run: a GPU a tool found at fault
is a hardware finding; a tool or harness that could not do its job, a node refused because it was busy, or checks
that were all skipped are findings too (nothing passes that did not run). Bandwidth is judged against the expected
figure of the GPU's link (data/active_checks.yml, sourced), against the same SKU and link on the other GPUs of the
run (bandwidth_below_peers, a fleet rule) and against the host's own earlier runs (audit/record_step.py).
Thresholds are the policy's `validation` section; docs/active-checks.md, "Judgement", lists every finding.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import functools
import re
import statistics

from ansible_collections.gpufleet.core.plugins.module_utils import journal_scan
from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.findings import declare_rule, gpu_label, rule
from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.knowledge_tables import _read_data
from ansible_collections.gpufleet.core.plugins.plugin_utils.store.identity import gpu_key

CHECK_NAMES = ("dcgm_diag", "nvbandwidth", "nccl_all_reduce", "stress")
NOT_A_VERDICT = ("error", "timeout", "refused")
# CUDA could not start at all (cudaErrorSystemNotReady, 802): on an NVSwitch system, fabric manager is not running.
CUDA_NOT_READY = re.compile(r"system not yet initialized|cudaErrorSystemNotReady|CUDA_ERROR_SYSTEM_NOT_READY",
                            re.IGNORECASE)
# DCGM's own failure to run a test, not the GPU's (NVIDIA/DCGM#253: a child process that exited or printed no JSON)
HARNESS_FAILURE = re.compile(r"internal error|child process|couldn't be parsed", re.IGNORECASE)
# nvbandwidth's check of the copied data failed (NVIDIA/nvbandwidth#34, #19)
COPY_CORRUPT = re.compile(r"checking the pattern|h_errorFlag", re.IGNORECASE)
# how the project already classifies NCCL failures (module_utils/journal_scan.py) -> the layer they belong to here
NCCL_LAYERS = {"nccl_network": "hardware", "cuda_ecc": "hardware", "cuda_driver_insufficient": "driver",
               "cuda_forward_compat": "driver", "nccl_cuda": "driver"}
DEFAULTS = {"bandwidth_min_fraction": 0.7, "peer_min_fraction": 0.8, "sinking_runs": 3, "sinking_fraction": 0.9}
MIN_PEERS = 3
SOURCE = "plugins/plugin_utils/rules/data/active_checks.yml"


@functools.lru_cache(maxsize=1)
def expectations():
    """data/active_checks.yml, with its NVLink patterns compiled."""
    data = _read_data("active_checks.yml")
    data["nvlink_classes"] = [dict(entry, regex=re.compile(entry["pattern"], re.IGNORECASE))
                              for entry in data["nvlink_classes"]]
    return data


def validation_of(facts):
    """facts.validation when it is a result of gpu_validate, else None."""
    found = (facts or {}).get("validation")
    return found if isinstance(found, dict) else None


def checks_of(validation):
    checks = (validation or {}).get("checks")
    return dict((name, result) for name, result in checks.items() if isinstance(result, dict)) \
        if isinstance(checks, dict) else {}


def thresholds(policy):
    values = dict(DEFAULTS)
    values.update((key, value) for key, value in ((policy or {}).get("validation") or {}).items()
                  if key in DEFAULTS and value is not None)
    return values


def gpus_by_index(facts):
    """{"<index>": gpu record}: the facts' GPUs, else what gpu_validate saw."""
    found = {}
    for gpu in list((validation_of(facts) or {}).get("gpus") or ()) + list((facts or {}).get("gpus") or ()):
        if isinstance(gpu, dict) and gpu.get("index") is not None:
            found[str(gpu["index"])] = gpu
    return found


def _gpu(ctx, index):
    return ctx.cached("validation_gpus", lambda ctx: gpus_by_index(ctx.facts)).get(str(index)) or {"index": index}


def pcie_link(gpu):
    """(label, nominal GB/s one direction) of the GPU's host link at its maximum generation and width, or None."""
    pcie = gpu.get("pcie") or {}
    gen, width = pcie.get("gen_max"), pcie.get("width_max")
    per_lane = expectations()["pcie_lane_gbs"].get(gen)
    if per_lane is None or not isinstance(width, int) or width <= 0:
        return None
    return "PCIe Gen%d x%d" % (gen, width), round(per_lane * width, 2)


def nvlink_link(gpu):
    for entry in expectations()["nvlink_classes"]:
        if entry["regex"].search(gpu.get("name") or ""):
            return entry["name"], entry["nominal_gbs"]
    return None


def link_of(gpu, testcase):
    """(link kind, label, nominal GB/s or None) of the link a test case measures on this GPU."""
    kind = expectations()["judged_testcases"].get(testcase)
    if kind is None:
        kind = "nvlink" if testcase.startswith("device_to_device") else "pcie"
        found = None
    else:
        found = pcie_link(gpu) if kind == "pcie" else nvlink_link(gpu)
    if found is None:
        return kind, "%s (%s)" % (kind, "unknown" if kind == "pcie" else "no NVLink class"), None
    return kind, found[0], found[1]


def expected_figure(gpu, testcase):
    """{link, nominal_gbs, expected_gbs} for a judged test case on this GPU, else None."""
    if testcase not in expectations()["judged_testcases"]:
        return None
    kind, label, nominal = link_of(gpu, testcase)
    if nominal is None:
        return None
    efficiency = expectations()["pcie_efficiency" if kind == "pcie" else "nvlink_efficiency"]
    return {"link": label, "nominal_gbs": nominal, "efficiency": efficiency,
            "expected_gbs": round(nominal * efficiency, 2)}


def testcases(validation):
    nvbandwidth = checks_of(validation).get("nvbandwidth") or {}
    return [case for case in nvbandwidth.get("testcases") or () if isinstance(case, dict) and case.get("name")]


def per_gpu_figures(case):
    """[("<index>", GB/s)] of a test case, the figures that are numbers."""
    figures = case.get("per_gpu") or {}
    return [(str(index), float(value)) for index, value in sorted(figures.items())
            if isinstance(value, (int, float)) and not isinstance(value, bool)]


def _check_evidence(name, check_result, **extra):
    evidence = {"check": name, "status": check_result.get("status"), "reason": check_result.get("reason") or "",
                "command": check_result.get("command"), "tool_version": check_result.get("tool_version"),
                "duration_s": check_result.get("duration_s")}
    evidence.update(extra)
    return evidence


# ---------------------------------------------------------------- DCGM diagnostics

def dcgm_tests(validation):
    dcgm = checks_of(validation).get("dcgm_diag") or {}
    return [test for test in dcgm.get("tests") or () if isinstance(test, dict)]


def _test_gpus(test):
    gpus = test.get("gpus")
    return dict((str(index), entry) for index, entry in gpus.items() if isinstance(entry, dict)) \
        if isinstance(gpus, dict) else {}


def _messages(test):
    texts = [str(text) for text in test.get("messages") or ()]
    for entry in _test_gpus(test).values():
        texts.extend(str(text) for text in entry.get("messages") or ())
    return texts


def _cuda_not_ready(texts):
    return any(CUDA_NOT_READY.search(text or "") for text in texts)


@rule("hardware.validation_dcgm_failed", "hardware", "critical",
      "A DCGM diagnostic test (memory, PCIe, stress, ...) failed on a GPU", fix=None)
def dcgm_failed(ctx):
    validation = validation_of(ctx.facts)
    level = (checks_of(validation).get("dcgm_diag") or {}).get("level")
    findings = []
    for test in dcgm_tests(validation):
        if _cuda_not_ready(_messages(test)):
            continue  # driver.validation_cuda_not_ready: no GPU was tested
        for index, entry in sorted(_test_gpus(test).items()):
            if entry.get("status") != "fail":
                continue
            gpu = _gpu(ctx, index)
            messages = [str(text) for text in entry.get("messages") or ()][:5]
            findings.append(ctx.finding(
                gpu, "%s failed DCGM's %s test (dcgmi diag -r %s)%s" % (
                    gpu_label(gpu), test.get("name"), level, ": %s" % messages[0] if messages else ""),
                {"check": "dcgm_diag", "level": level, "test": test.get("name"), "category": test.get("category"),
                 "gpu_index": _int(index), "status": "fail", "messages": messages},
                "Drain the GPU; read the test's messages (memory: retired pages / remapped rows and Xid 48/63/94/95, "
                "PCIe: the link and its replays); rerun dcgmi diag at level 3 to confirm, then reset or RMA the card."))
    return findings


def _int(text):
    try:
        return int(text)
    except (TypeError, ValueError):
        return None


# ---------------------------------------------------------------- checks that could not give a verdict

@rule("driver.validation_cuda_not_ready", "driver", "critical",
      "CUDA could not initialise for the active checks ('system not yet initialized'): on an NVSwitch system, "
      "fabric manager is not running")
def cuda_not_ready(ctx):
    validation = validation_of(ctx.facts)
    where = [("dcgm_diag", test.get("name")) for test in dcgm_tests(validation) if _cuda_not_ready(_messages(test))]
    nccl = checks_of(validation).get("nccl_all_reduce") or {}
    if _cuda_not_ready([nccl.get("error_text") or "", nccl.get("reason") or ""]):
        where.append(("nccl_all_reduce", nccl.get("error_text")))
    if not where:
        return []
    return [ctx.finding(
        None, "CUDA could not initialise on this host ('system not yet initialized'), so no GPU was tested: %s" % (
            ", ".join("%s %s" % pair for pair in where)),
        {"checks": [{"check": check, "where": text} for check, text in where]},
        "Start nvidia-fabricmanager (systemctl enable --now nvidia-fabricmanager) with the driver's exact version, "
        "check its log, then validate again; the GPUs are not at fault.")]


def _harness_failures(validation):
    """[(check, what)] of checks and DCGM tests that failed to run, not on a GPU's fault."""
    found = []
    for name, result in sorted(checks_of(validation).items()):
        if result.get("status") in ("error", "timeout"):
            found.append((name, "%s: %s" % (result["status"], result.get("reason") or "no reason given")))
    for test in dcgm_tests(validation):
        if test.get("status") != "fail" or _cuda_not_ready(_messages(test)):
            continue
        gpu_failed = any(entry.get("status") == "fail" for entry in _test_gpus(test).values())
        if not gpu_failed or any(HARNESS_FAILURE.search(text) for text in _messages(test)):
            found.append(("dcgm_diag", "test %s failed with %s" % (
                test.get("name"), "every GPU passing" if not gpu_failed else "an internal error")))
    for case in testcases(validation):
        if case.get("error") and not COPY_CORRUPT.search(case["error"]):
            found.append(("nvbandwidth", "%s: %s" % (case["name"], case["error"])))
    return found


@rule("driver.validation_harness_error", "driver", "warning",
      "An active check could not do its job (its tool failed, timed out or reported an internal error): no verdict "
      "on the GPUs")
def harness_error(ctx):
    failures = _harness_failures(validation_of(ctx.facts))
    if not failures:
        return []
    return [ctx.finding(
        None, "%d active check%s gave no verdict: %s" % (
            len(failures), "s" if len(failures) > 1 else "", "; ".join("%s %s" % pair for pair in failures[:5])),
        {"failures": [{"check": check, "what": what} for check, what in failures]},
        "The GPUs were not judged by these checks: read the check's output_tail in the facts; a DCGM internal error "
        "under Slurm is often the job's cpuset (run it with --exclusive or outside Slurm); raise the check's bound "
        "if it timed out; then validate again.")]


def _nothing_tested(validation):
    """Why nothing was tested, or None."""
    refused = validation.get("refused")
    if isinstance(refused, dict):
        return "the node was refused: %s" % (refused.get("reason") or "busy")
    checks = checks_of(validation)
    if not checks:
        return "no check was requested"
    if all(result.get("status") == "skipped" for result in checks.values()):
        return "every check was skipped (%s)" % "; ".join(
            "%s: %s" % (name, result.get("reason") or "no reason") for name, result in sorted(checks.items()))
    tests = dcgm_tests(validation)
    if (checks.get("dcgm_diag") or {}).get("status") == "passed" and tests and all(
            test.get("status") == "skip" for test in tests):
        return "DCGM skipped every test of its diagnostic"
    return None


@rule("driver.validation_not_run", "driver", "warning",
      "The active checks tested nothing: the node was refused (busy), or every check or test was skipped")
def not_run(ctx):
    validation = validation_of(ctx.facts)
    if validation is None:
        return []
    why = _nothing_tested(validation)
    if why is None:
        return []
    refused = validation.get("refused") if isinstance(validation.get("refused"), dict) else {}
    return [ctx.finding(
        None, "Nothing was tested: %s" % why,
        {"reason": why, "refused": bool(refused), "how_to_proceed": refused.get("how_to_proceed"),
         "gpu_processes": list(refused.get("gpu_processes") or ())[:10],
         "checks": dict((name, result.get("status")) for name, result in sorted(checks_of(validation).items()))},
        refused.get("how_to_proceed") or "A skipped check is no pass: install the missing tool (the reason names "
        "it), or take the GPU out of MIG mode, and validate again.")]


# ---------------------------------------------------------------- stress

@rule("hardware.validation_stress_failed", "hardware", "critical",
      "A bounded stress run (gpu-burn or DCGM targeted stress) found a GPU faulty, or the GPU died under load")
def stress_failed(ctx):
    stress = checks_of(validation_of(ctx.facts)).get("stress") or {}
    findings = []
    for index, entry in sorted((stress.get("per_gpu") or {}).items()):
        if not isinstance(entry, dict) or entry.get("result") not in ("faulty", "died"):
            continue
        gpu = _gpu(ctx, index)
        findings.append(ctx.finding(
            gpu, "%s %s under %s for %ss (%s errors)" % (
                gpu_label(gpu), "computed wrong results" if entry["result"] == "faulty" else "died",
                stress.get("tool"), stress.get("seconds"), entry.get("errors")),
            _check_evidence("stress", stress, tool=stress.get("tool"), seconds=stress.get("seconds"),
                            gpu_index=_int(index), result=entry["result"], errors=entry.get("errors")),
            "Drain the GPU: a card that computes wrong results under load corrupts jobs silently. Check its "
            "temperature and power during the run, its Xids and memory errors; reseat or RMA it."))
    return findings


# ---------------------------------------------------------------- NCCL

NCCL_RULES = dict((layer, declare_rule(
    "%s.validation_nccl_failed" % layer, layer, "warning",
    "nccl-tests' all_reduce_perf across the node's GPUs failed, classified as the services' NCCL failures are "
    "(%s)" % what)) for layer, what in (
        ("hardware", "network or peer, uncorrectable ECC, wrong results: hardware"),
        ("driver", "a CUDA error, driver too old: driver"),
        ("workload", "a local resource, a timeout, another error: workload")))


def nccl_kind(text, following=""):
    """The project's NCCL/CUDA classification of a failure line and the lines after it (journal_scan.classify,
    refine), "nccl_error" by default."""
    return journal_scan.refine(journal_scan.classify(text or "") or "nccl_error", following or "")


@rule("hardware.validation_nccl_wrong", "hardware", "critical",
      "nccl-tests' all_reduce_perf found wrong results (#wrong above 0): data corrupted between the node's GPUs")
def nccl_failed(ctx):
    nccl = checks_of(validation_of(ctx.facts)).get("nccl_all_reduce") or {}
    findings = []
    wrong = [row for row in nccl.get("rows") or () if isinstance(row, dict) and (row.get("wrong") or 0) > 0]
    if wrong:
        findings.append(ctx.finding(
            None, "all_reduce_perf across %s GPUs found %d wrong results at %s bytes" % (
                nccl.get("gpus"), wrong[0]["wrong"], wrong[0].get("size_bytes")),
            _check_evidence("nccl_all_reduce", nccl, rows_wrong=wrong[:5]),
            "Drain the node: wrong results mean corrupted data on a GPU or a link between them; run dcgmi diag -r 3 "
            "and nvbandwidth to find the GPU."))
    if nccl.get("status") != "failed":
        return findings
    text = nccl.get("error_text") or nccl.get("reason") or ""
    if _cuda_not_ready([text]):
        return findings  # driver.validation_cuda_not_ready
    kind = nccl_kind(text, nccl.get("output_tail"))
    layer = NCCL_LAYERS.get(kind, "workload")
    severity = "critical" if kind == "cuda_ecc" else "warning"
    findings.append(ctx.finding(
        None, "all_reduce_perf across %s GPUs failed (%s): %s" % (nccl.get("gpus"), kind, text or "no error line"),
        _check_evidence("nccl_all_reduce", nccl, kind=kind, error_text=text,
                        peak_busbw_gbs=nccl.get("peak_busbw_gbs")),
        "Read the failure line and the output tail: a network or peer failure points at the links, a CUDA error "
        "at the driver, a resource at the host's limits (/dev/shm, locked memory); fix it and validate again.",
        severity=severity, rule=NCCL_RULES[layer]))
    return findings


# ---------------------------------------------------------------- bandwidth against the expected figure

@rule("hardware.validation_bandwidth_low", "hardware", "warning",
      "nvbandwidth measured a GPU's copy bandwidth far below the expected figure of its link (PCIe generation and "
      "width, NVLink class): validation.bandwidth_min_fraction of the expected")
def bandwidth_low(ctx):
    validation = validation_of(ctx.facts)
    minimum = thresholds(ctx.policy)["bandwidth_min_fraction"]
    findings = []
    for case in testcases(validation):
        if COPY_CORRUPT.search(case.get("error") or ""):
            findings.append(ctx.finding(
                None, "nvbandwidth %s: the copied data was wrong (%s)" % (case["name"], case["error"]),
                {"check": "nvbandwidth", "testcase": case["name"], "error": case["error"]},
                "Drain the node: a copy that corrupts data points at a GPU's memory or the link; run dcgmi diag -r 3 "
                "on it and rule out a CUDA toolkit and driver mismatch.", severity="critical"))
            continue
        for index, measured in per_gpu_figures(case):
            gpu = _gpu(ctx, index)
            expected = expected_figure(gpu, case["name"])
            if expected is None or measured >= expected["expected_gbs"] * minimum:
                continue
            findings.append(ctx.finding(
                gpu, "%s: nvbandwidth %s measured %.2f GB/s, expected %.2f GB/s on %s (below %d%%)" % (
                    gpu_label(gpu), case["name"], measured, expected["expected_gbs"], expected["link"],
                    round(minimum * 100)),
                dict(expected, check="nvbandwidth", testcase=case["name"], gpu_index=_int(index),
                     measured_gbs=measured, threshold_gbs=round(expected["expected_gbs"] * minimum, 2),
                     min_fraction=minimum, source=SOURCE),
                "Check the link: lspci -vv for the negotiated PCIe speed and width, the riser and slot; nvidia-smi "
                "nvlink -s and -e for NVLink; reseat at the next maintenance and validate again."))
    return findings


HOST_RULES = (dcgm_failed, cuda_not_ready, harness_error, not_run, stress_failed, nccl_failed, bandwidth_low)


def host_findings(ctx):
    """The findings of this module's host rules alone (a verification step judges a host's checks with them)."""
    return [finding for check in HOST_RULES for finding in check(ctx)]


# ---------------------------------------------------------------- bandwidth against the run's peers (fleet rule)

BELOW_PEERS = declare_rule(
    "hardware.validation_below_peers", "hardware", "warning",
    "A GPU's nvbandwidth figure is below validation.peer_min_fraction of the median of the same GPU model and link "
    "in the same run", scope="fleet")


def peer_groups(hosts):
    """{(model, test case, link label): [(host, gpu, GB/s)]} over the hosts' validations."""
    groups = {}
    for host, facts in sorted(hosts.items()):
        if not validation_of(facts):
            continue
        gpus = gpus_by_index(facts)
        for case in testcases(validation_of(facts)):
            for index, measured in per_gpu_figures(case):
                gpu = gpus.get(index) or {"index": _int(index)}
                _kind, label, _nominal = link_of(gpu, case["name"])
                groups.setdefault((gpu.get("name") or "model unknown", case["name"], label), []).append(
                    (host, gpu, measured))
    return groups


def below_peers(hosts, policies, default=None):
    """{host: [findings]}: GPUs below peer_min_fraction of the median of the others in their group."""
    found = {}
    for (model, testcase, link), members in sorted(peer_groups(hosts).items()):
        if len(members) < MIN_PEERS:
            continue
        for position, (host, gpu, measured) in enumerate(members):
            others = [value for other, (_h, _g, value) in enumerate(members) if other != position]
            median = statistics.median(others)
            minimum = thresholds(policies.get(host) or default)["peer_min_fraction"]
            if measured >= median * minimum:
                continue
            found.setdefault(host, []).append(BELOW_PEERS.finding(
                host, gpu, "%s: nvbandwidth %s measured %.2f GB/s, %d%% of the median %.2f GB/s of %d peers (%s, %s)"
                % (gpu_label(gpu), testcase, measured, round(100 * measured / median) if median else 0, median,
                   len(others), model, link),
                {"check": "nvbandwidth", "testcase": testcase, "measured_gbs": measured,
                 "peer_median_gbs": round(median, 2), "peers": len(others), "model": model, "link": link,
                 "min_fraction": minimum, "threshold_gbs": round(median * minimum, 2)},
                "Compare this GPU's link with its peers': lspci -vv (speed, width), nvidia-smi nvlink -s, the NUMA "
                "placement of the test; reseat or replace what differs and validate again."))
    return found


# ---------------------------------------------------------------- bandwidth against the host's own history

SINKING = declare_rule(
    "hardware.validation_bandwidth_sinking", "hardware", "warning",
    "A GPU's nvbandwidth figure fell at each of its last validation.sinking_runs validations and ends below "
    "validation.sinking_fraction of the first: a link that degrades, before it fails")


def gpu_figures(facts):
    """{(gpu key, test case): (gpu, GB/s)} of a host's validation."""
    gpus = gpus_by_index(facts)
    found = {}
    for case in testcases(validation_of(facts)):
        for index, measured in per_gpu_figures(case):
            gpu = gpus.get(index) or {"index": _int(index)}
            found[(gpu_key(gpu) or "index %s" % index, case["name"])] = (gpu, measured)
    return found


def bandwidth_sinking(host, facts, earlier, policy):
    """Findings of GPUs whose figure sank run after run. earlier: [(run id, facts)] of the host's earlier runs,
    newest first (those without a validation are passed over)."""
    limits = thresholds(policy)
    runs = limits["sinking_runs"]
    history = [(run, gpu_figures(old)) for run, old in earlier if validation_of(old)][:runs - 1][::-1]
    if len(history) < runs - 1:
        return []
    findings = []
    for key, (gpu, measured) in sorted(gpu_figures(facts).items()):
        series = [figures[key][1] for _run, figures in history if key in figures] + [measured]
        if len(series) < runs or not all(later < before for before, later in zip(series, series[1:])):
            continue
        if measured >= series[0] * limits["sinking_fraction"]:
            continue
        findings.append(SINKING.finding(
            host, gpu, "%s: nvbandwidth %s sank at each of the last %d validations, %.2f -> %.2f GB/s (%d%%)" % (
                gpu_label(gpu), key[1], runs, series[0], measured, round(100 * measured / series[0])),
            {"check": "nvbandwidth", "testcase": key[1], "series_gbs": series, "runs": [run for run, _f in history],
             "before": series[0], "after": measured, "sinking_fraction": limits["sinking_fraction"]},
            "Plan a maintenance before it fails: check the link (lspci -vv, nvidia-smi nvlink -e), its replays and "
            "the GPU's temperature during the test; reseat and validate again."))
    return findings


# ---------------------------------------------------------------- the host's summary (report.json, the store)

def _check_summary(name, result):
    summary = {"status": result.get("status"), "reason": result.get("reason") or "",
               "duration_s": result.get("duration_s"), "tool_version": result.get("tool_version")}
    if name == "dcgm_diag":
        summary["level"] = result.get("level")
        summary["tests"] = [{"name": test.get("name"), "status": test.get("status"),
                             "failed_gpus": sorted(_int(index) for index, entry in _test_gpus(test).items()
                                                   if entry.get("status") == "fail")}
                            for test in result.get("tests") or () if isinstance(test, dict)]
    elif name == "nccl_all_reduce":
        summary.update(gpus=result.get("gpus"), peak_busbw_gbs=result.get("peak_busbw_gbs"),
                       avg_busbw_gbs=result.get("avg_busbw_gbs"), error_text=result.get("error_text"))
    elif name == "stress":
        summary.update(tool=result.get("tool"), seconds=result.get("seconds"), per_gpu=result.get("per_gpu"))
    return summary


def _figures(facts, validation):
    """[{testcase, gpu_index, measured_gbs, expected_gbs, link}] of nvbandwidth."""
    gpus = gpus_by_index(facts)
    figures = []
    for case in testcases(validation):
        for index, measured in per_gpu_figures(case):
            expected = expected_figure(gpus.get(index) or {}, case["name"])
            figures.append({"testcase": case["name"], "gpu_index": _int(index), "measured_gbs": measured,
                            "expected_gbs": expected["expected_gbs"] if expected else None,
                            "link": expected["link"] if expected else link_of(gpus.get(index) or {}, case["name"])[1]})
    return figures


def validation_summary(facts):
    """What report.json's hosts.<host>.validation shows of a host's active checks (None without any)."""
    validation = validation_of(facts)
    if validation is None:
        return None
    checks = dict((name, _check_summary(name, result)) for name, result in sorted(checks_of(validation).items()))
    if "nvbandwidth" in checks:
        checks["nvbandwidth"]["figures"] = _figures(facts, validation)
    refused = validation.get("refused") if isinstance(validation.get("refused"), dict) else None
    return {"started_at": validation.get("started_at"), "finished_at": validation.get("finished_at"),
            "refused": refused and {"reason": refused.get("reason"), "how_to_proceed": refused.get("how_to_proceed")},
            "mig_enabled": validation.get("mig_enabled"), "checks": checks}
