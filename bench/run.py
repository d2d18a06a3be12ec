# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Benchmarks of gpufleet.core; `make bench` runs them all. What each figure means: bench/README.md.

1. collection: one gpu_facts collection of an 8-GPU host, NVML replay against parsing the
   equivalent `nvidia-smi -q -x`, timed in the same run, interleaved, and given as a ratio.
2. payload: the AnsiballZ file Ansible ships per host for gpu_facts, against ansible.builtin.setup.
3. fleet: one collection of every host of the demo fleet (inventories/demo/fixtures), when present.
4. diagnose: the controller's side of an audit (run_audit) for 1,000 to 10,000 hosts of 8 GPUs,
   against json.dumps of the same facts, with cProfile's hot spots (bench/diagnose_bench.py).

Prints a table and writes bench/results/latest.json.
"""

import argparse
import base64
import cProfile
import datetime
import gc
import json
import os
import platform
import pstats
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
import xml.etree.ElementTree as ET
import zipfile
from importlib import metadata
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "collections")]

# pylint: disable=wrong-import-position
import pynvml  # noqa: E402

from ansible_collections.gpufleet.core.plugins.module_utils.collector import (  # noqa: E402
    Collection, validate_fixture)
from ansible_collections.gpufleet.core.plugins.module_utils.facts_model import new_facts  # noqa: E402
from ansible_collections.gpufleet.core.plugins.module_utils.host_io import ReplayHost  # noqa: E402
from ansible_collections.gpufleet.core.plugins.module_utils.nvml_collect import collect_nvml  # noqa: E402
from ansible_collections.gpufleet.core.plugins.module_utils.nvml_fixture import (  # noqa: E402
    ReplayLibrary, use_library)
from ansible_collections.gpufleet.core.plugins.module_utils.nvsmi_xml import (  # noqa: E402
    collect_nvidia_smi, parse_nvidia_smi_xml)
from simulator.nvml_sim import SimulatedNvmlLibrary, scenario_h100_node  # noqa: E402

from corpus import realdata_dir  # noqa: E402
from diagnose_bench import SIZES as DIAGNOSE_SIZES, diagnose_bench, print_diagnose  # noqa: E402
from store_bench import print_store, store_bench  # noqa: E402

RESULTS = REPO / "bench" / "results" / "latest.json"
SMI_CAPTURE = "nvsmi-q-x_tesla-t4_515.105.01_v11_telegraf.xml"
# the project's own T4 document, used when the corpus (and so the capture) is absent
SMI_SAMPLE = REPO / "tests" / "fixtures" / "samples" / "nvsmi-q-x_tesla-t4_515.105.01.xml"
DEMO_FIXTURES = REPO / "inventories" / "demo" / "fixtures"

GPU_COUNT = 8
# The GPU part of a collection; host and kernel_log read the same files and commands whichever
# backend answered, so they are left out to compare the backends alone.
GPU_SUBSETS = ["all", "!host", "!kernel_log"]
GPU_SUBSETS_NO_NVLINK = ["all", "!host", "!kernel_log", "!nvlink"]
PROC_DRIVER_VERSION = "/proc/driver/nvidia/version"
KERNEL_MODULE_LINE = "NVRM version: NVIDIA UNIX x86_64 Kernel Module  %s  Thu Jan  1 00:00:00 UTC 2026\n"
# Bus numbers of an 8-GPU HGX baseboard, as in simulator/nvml_sim.py
HGX_BUSES = (0x18, 0x2A, 0x3A, 0x5D, 0x9A, 0xAB, 0xBA, 0xDB)


# ---------------------------------------------------------------- timing

def summarize(samples):
    """Median and spread of timings in seconds, reported in milliseconds."""
    ordered = sorted(samples)
    quartiles = statistics.quantiles(ordered, n=4) if len(ordered) > 1 else [ordered[0]] * 3
    return {
        "n": len(ordered),
        "median_ms": statistics.median(ordered) * 1e3,
        "min_ms": ordered[0] * 1e3,
        "max_ms": ordered[-1] * 1e3,
        "q1_ms": quartiles[0] * 1e3,
        "q3_ms": quartiles[2] * 1e3,
    }


def time_once(func):
    started = time.perf_counter()
    func()
    return time.perf_counter() - started


def measure_interleaved(cases, rounds, warmup, seed=2026):
    """Times every case once per round, in a shuffled order each round, so drift in the machine's
    load reaches all cases alike. Returns {name: [seconds, ...]} in round order."""
    for _warmup in range(warmup):
        for func in cases.values():
            func()
    shuffle = random.Random(seed)
    names = list(cases)
    samples = {name: [] for name in names}
    for _round in range(rounds):
        gc.collect()
        shuffle.shuffle(names)
        for name in names:
            samples[name].append(time_once(cases[name]))
    return samples


def paired_ratio(numerators, denominators):
    """Per-round ratios: each pair was timed within the same round."""
    return summarize_ratio([n / d for n, d in zip(numerators, denominators)])


def summarize_ratio(ratios):
    ordered = sorted(ratios)
    quartiles = statistics.quantiles(ordered, n=4) if len(ordered) > 1 else [ordered[0]] * 3
    return {"n": len(ordered), "median": statistics.median(ordered), "q1": quartiles[0], "q3": quartiles[2],
            "min": ordered[0], "max": ordered[-1]}


# ---------------------------------------------------------------- the two 8-GPU hosts

def round_trip(document):
    """A fixture as the module reads it back from its JSON file."""
    return json.loads(json.dumps(document))


def record_fixture(source, inner_host, subsets, nvml_library=None):
    """A gpufleet fixture recorded by the real Collection from a simulated host."""
    collection = Collection(source=source, gather_subset=subsets, record=True, scrub=True, pynvml=pynvml,
                            host=inner_host, nvml_library=nvml_library)
    facts, fixture = collection.run()
    if len(facts["gpus"]) != GPU_COUNT or facts["errors"]:
        raise SystemExit("recording %s gave %d GPUs and errors %s" % (source, len(facts["gpus"]), facts["errors"]))
    return round_trip(fixture)


def nvml_fixture(subsets):
    """8x H100 from simulator/nvml_sim.py, recorded through the real pynvml."""
    scenario = scenario_h100_node(GPU_COUNT)
    host = ReplayHost({"files": {PROC_DRIVER_VERSION: KERNEL_MODULE_LINE % scenario["driver_version"]}})
    return record_fixture("nvml", host, subsets, nvml_library=SimulatedNvmlLibrary(scenario))


def gpu_block(text):
    match = re.search(r"^[ \t]*<gpu id=.*?^[ \t]*</gpu>[ \t]*\n", text, re.S | re.M)
    if not match:
        raise SystemExit("no <gpu> element in %s" % SMI_CAPTURE)
    return match


def gpu_copy(block, index):
    """The captured <gpu> element as GPU `index` of an HGX board: its own bus id, minor number,
    module id, UUID and serial; every measured value stays as captured."""
    bus = HGX_BUSES[index]
    bus_id = "00000000:%02X:00.0" % bus
    replacements = [
        (r'<gpu id="[^"]*">', '<gpu id="%s">' % bus_id),
        (r"<pci_bus_id>[^<]*</pci_bus_id>", "<pci_bus_id>%s</pci_bus_id>" % bus_id),
        (r"<pci_bus>[^<]*</pci_bus>", "<pci_bus>%02X</pci_bus>" % bus),
        (r"<pci_device>[^<]*</pci_device>", "<pci_device>00</pci_device>"),
        (r"<minor_number>[^<]*</minor_number>", "<minor_number>%d</minor_number>" % index),
        (r"<gpu_module_id>[^<]*</gpu_module_id>", "<gpu_module_id>%d</gpu_module_id>" % (index + 1)),
        (r"<uuid>[^<]*</uuid>", "<uuid>GPU-%s</uuid>" % uuid.uuid5(uuid.NAMESPACE_DNS, "gpufleet-bench-%d" % index)),
        (r"<serial>[^<]*</serial>", "<serial>%013d</serial>" % (1324020000000 + index)),
    ]
    for pattern, replacement in replacements:
        block, count = re.subn(pattern, replacement, block, count=1)
        if count != 1:
            raise SystemExit("%s: no %s to replace" % (SMI_CAPTURE, pattern))
    return block


def eight_gpu_xml(single_gpu_text):
    """`nvidia-smi -q -x` of an 8-GPU host made from a real single-GPU capture."""
    match = gpu_block(single_gpu_text)
    gpus = "".join(gpu_copy(match.group(0), index) for index in range(GPU_COUNT))
    text = single_gpu_text[:match.start()] + gpus + single_gpu_text[match.end():]
    return re.sub(r"<attached_gpus>\d+</attached_gpus>", "<attached_gpus>%d</attached_gpus>" % GPU_COUNT, text)


def smi_host_fixture(xml_text, driver_version):
    return {
        "bins": {"nvidia-smi": "/usr/bin/nvidia-smi"},
        "files": {PROC_DRIVER_VERSION: KERNEL_MODULE_LINE % driver_version},
        "dirs": {},
        "commands": {"nvidia-smi -q -x": {"rc": 0, "stdout": xml_text, "stderr": "", "timed_out": False,
                                          "missing": False}},
    }


def check_smi_report(xml_text):
    report = parse_nvidia_smi_xml(xml_text)
    bus_ids = {gpu["pci_bus_id"] for gpu in report["gpus"]}
    uuids = {gpu["uuid"] for gpu in report["gpus"]}
    if len(report["gpus"]) != GPU_COUNT or len(bus_ids) != GPU_COUNT or len(uuids) != GPU_COUNT:
        raise SystemExit("8-GPU XML parsed to %d GPUs, %d bus ids, %d UUIDs"
                         % (len(report["gpus"]), len(bus_ids), len(uuids)))
    return report


# ---------------------------------------------------------------- figure 1: one 8-GPU collection

def replay_collection(fixture, subsets):
    def run():
        facts, _fixture = Collection(source="replay", fixture=fixture, gather_subset=subsets, pynvml=pynvml).run()
        return facts
    return run


def nvml_collect_only(calls, subsets):
    """collect_nvml through the real pynvml and a ReplayLibrary, without the Collection around it."""
    chosen = set(Collection(gather_subset=subsets).subsets)

    def run():
        facts = new_facts()
        with use_library(pynvml, ReplayLibrary(calls)):
            collect_nvml(pynvml, facts, chosen)
        return facts
    return run


def smi_collect_only(host_fixture):
    def run():
        facts = new_facts()
        collect_nvidia_smi(ReplayHost(host_fixture), facts, timeout=20)
        return facts
    return run


def profile_key(func):
    code = func.__code__
    return (code.co_filename, code.co_firstlineno, code.co_name)


def replay_library_share(collect, runs):
    """Share of collect_nvml-through-replay time spent inside ReplayLibrary (building its index and
    answering calls) rather than in pynvml and the collector, from cProfile's cumulative times."""
    profiler = cProfile.Profile()
    profiler.enable()
    for _run in range(runs):
        collect()
    profiler.disable()
    stats = pstats.Stats(profiler).stats
    total = sum(entry[2] for entry in stats.values())  # tottime of every function = all profiled time
    inside = sum(stats[key][3] for key in (profile_key(ReplayLibrary.__init__), profile_key(ReplayLibrary.answer))
                 if key in stats)
    return inside / total


def check_replays(cases):
    """Every timed case must produce all 8 GPUs without errors, or the timing means nothing."""
    for name, func in cases.items():
        facts = func()
        if not isinstance(facts, dict) or "gpus" not in facts:
            continue
        errors = facts.get("errors", [])
        if len(facts["gpus"]) != GPU_COUNT or errors:
            raise SystemExit("%s: %d GPUs, errors %s" % (name, len(facts["gpus"]), errors[:3]))


def smi_input(realdata):
    """(path, note): the real T4 capture of the corpus when there is one, else the project's own T4 sample,
    with a note saying why."""
    if realdata is None:
        return SMI_SAMPLE, ("public corpus not found (GPUFLEET_CORPUS, else ../shared beside the checkout): "
                            "the project's own T4 sample stands in for the capture")
    capture = realdata / SMI_CAPTURE
    if not capture.is_file():
        return SMI_SAMPLE, "%s not found: the project's own T4 sample stands in for it" % capture
    return capture, None


def collection_bench(realdata, rounds, warmup):
    smi_path, corpus_note = smi_input(realdata)
    single = smi_path.read_text(encoding="utf-8")
    xml8 = eight_gpu_xml(single)
    report = check_smi_report(xml8)
    xml_root = xml8[xml8.index("<nvidia_smi_log"):]
    host_fixture = smi_host_fixture(xml8, report["driver"]["version"])
    smi_fixture = record_fixture("nvidia_smi", ReplayHost(host_fixture), GPU_SUBSETS)
    nvml_full = nvml_fixture(GPU_SUBSETS)
    nvml_no_links = nvml_fixture(GPU_SUBSETS_NO_NVLINK)

    cases = {
        "nvml_replay_collection": replay_collection(nvml_full, GPU_SUBSETS),
        "nvidia_smi_collection": replay_collection(smi_fixture, GPU_SUBSETS),
        "nvml_replay_collection_no_nvlink": replay_collection(nvml_no_links, GPU_SUBSETS_NO_NVLINK),
        "nvml_collect_only": nvml_collect_only(nvml_full["nvml"]["calls"], GPU_SUBSETS),
        "nvml_replay_library_build": lambda: ReplayLibrary(nvml_full["nvml"]["calls"]),
        "nvidia_smi_collect_only": smi_collect_only(host_fixture),
        "nvidia_smi_parse_only": lambda: parse_nvidia_smi_xml(xml8),
        "xml_fromstring_only": lambda: ET.fromstring(xml_root),
    }
    check_replays(cases)
    samples = measure_interleaved(cases, rounds, warmup)
    timings = {name: summarize(values) for name, values in samples.items()}
    nvml_calls = len(nvml_full["nvml"]["calls"])
    parse = timings["nvidia_smi_parse_only"]["median_ms"]
    return {
        "inputs": {
            "gpus": GPU_COUNT,
            "subsets": Collection(gather_subset=GPU_SUBSETS).subsets,
            "nvml_scenario": "simulator/nvml_sim.py scenario_h100_node(8), recorded through pynvml",
            "nvml_fixture_calls": nvml_calls,
            "nvml_fixture_calls_no_nvlink": len(nvml_no_links["nvml"]["calls"]),
            "nvml_fixture_json_bytes": len(json.dumps(nvml_full)),
            "nvidia_smi_capture": smi_path.name,
            "corpus_note": corpus_note,
            "nvidia_smi_xml_bytes": len(xml8.encode("utf-8")),
            "nvidia_smi_processes": sum(len(gpu["processes"]) for gpu in report["gpus"]),
        },
        "rounds": rounds,
        "warmup_rounds": warmup,
        "timings": timings,
        "ratios": {
            "nvml_replay_over_nvidia_smi": paired_ratio(samples["nvml_replay_collection"],
                                                        samples["nvidia_smi_collection"]),
            "nvml_replay_no_nvlink_over_nvidia_smi": paired_ratio(samples["nvml_replay_collection_no_nvlink"],
                                                                  samples["nvidia_smi_collection"]),
            "nvml_collect_over_nvidia_smi_parse": paired_ratio(samples["nvml_collect_only"],
                                                               samples["nvidia_smi_parse_only"]),
        },
        "nvml_us_per_call": timings["nvml_collect_only"]["median_ms"] * 1e3 / nvml_calls,
        "nvml_replay_library_share": replay_library_share(cases["nvml_collect_only"], max(5, rounds // 10)),
        "xml_fromstring_share_of_parse": timings["xml_fromstring_only"]["median_ms"] / parse,
    }


# ---------------------------------------------------------------- figure 2: module payload

ZIP_DATA_RE = re.compile(r"""^zip_data\s*=\s*['"]([A-Za-z0-9+/=]+)['"]""", re.M)


def ansible_env(remote_tmp):
    env = dict(os.environ)
    env.update({
        "ANSIBLE_CONFIG": str(REPO / "ansible.cfg"),
        "ANSIBLE_KEEP_REMOTE_FILES": "1",
        # Pipelining (on in ansible.cfg) sends the same payload on stdin and writes no file; Ansible turns it
        # off by itself when remote files are kept, and this says so explicitly.
        "ANSIBLE_PIPELINING": "0",
        "ANSIBLE_REMOTE_TMP": str(remote_tmp),
        "ANSIBLE_LOCALHOST_WARNING": "0",
        "ANSIBLE_NOCOLOR": "1",
    })
    return env


def kept_payload(module, args, workdir):
    """Runs `module` on localhost with the repository's ansible.cfg and returns the AnsiballZ file
    Ansible left in the remote temporary folder."""
    remote_tmp = Path(workdir) / module.replace(".", "_")
    remote_tmp.mkdir()
    ansible = Path(sys.executable).parent / "ansible"
    argv = [str(ansible), "localhost", "-i", "localhost,", "-c", "local", "-m", module, "-a", args,
            "-e", "ansible_python_interpreter=%s" % sys.executable]
    completed = subprocess.run(argv, cwd=str(REPO), env=ansible_env(remote_tmp), capture_output=True, text=True,
                               timeout=120, check=False)
    found = sorted(remote_tmp.rglob("AnsiballZ_*.py"))
    if len(found) != 1:
        raise SystemExit("%s: expected one AnsiballZ file, found %s\n%s%s"
                         % (module, found, completed.stdout[-2000:], completed.stderr[-2000:]))
    return found[0], completed.returncode


def payload_contents(path):
    text = path.read_text(encoding="utf-8")
    match = ZIP_DATA_RE.search(text)
    if not match:
        raise SystemExit("%s: no zip_data in the AnsiballZ wrapper" % path)
    zip_bytes = base64.b64decode(match.group(1))
    with tempfile.TemporaryFile() as handle:
        handle.write(zip_bytes)
        handle.seek(0)
        with zipfile.ZipFile(handle) as archive:
            entries = [{"path": info.filename, "bytes": info.file_size, "compressed_bytes": info.compress_size}
                       for info in archive.infolist()]
    return {"file_bytes": path.stat().st_size, "zip_bytes": len(zip_bytes), "entries": entries}


def entry_group(entry_path):
    """module, collection_module_utils, ansible_module_utils, or other (the package __init__ files
    that make the module importable)."""
    if entry_path.startswith("ansible/module_utils/"):
        return "ansible_module_utils"
    if entry_path.endswith("/__init__.py"):
        return "other"
    if entry_path.startswith(("ansible/modules/", "ansible_collections/gpufleet/core/plugins/modules/")):
        return "module"
    if entry_path.startswith("ansible_collections/gpufleet/core/plugins/module_utils/"):
        return "collection_module_utils"
    return "other"


def ansible_module_utils_folder(entry_path):
    """ansible/module_utils/common/text/converters.py -> common; basic.py stays basic.py."""
    return entry_path.split("/")[2]


def folder_totals(entries):
    totals = {}
    for entry in entries:
        if entry_group(entry["path"]) != "ansible_module_utils":
            continue
        folder = totals.setdefault(ansible_module_utils_folder(entry["path"]), {"files": 0, "bytes": 0})
        folder["files"] += 1
        folder["bytes"] += entry["bytes"]
    return totals


def group_totals(entries):
    totals = {}
    for entry in entries:
        group = totals.setdefault(entry_group(entry["path"]), {"files": 0, "bytes": 0, "compressed_bytes": 0})
        group["files"] += 1
        group["bytes"] += entry["bytes"]
        group["compressed_bytes"] += entry["compressed_bytes"]
    return totals


def payload_bench():
    with tempfile.TemporaryDirectory(prefix="gpufleet-bench-") as workdir:
        ours_path, ours_rc = kept_payload("gpufleet.core.gpu_facts", "gather_subset=min", workdir)
        ours = payload_contents(ours_path)
        setup_path, setup_rc = kept_payload("ansible.builtin.setup", "gather_subset=min", workdir)
        setup = payload_contents(setup_path)
    for payload, rc in ((ours, ours_rc), (setup, setup_rc)):
        payload["ansible_rc"] = rc
        payload["groups"] = group_totals(payload["entries"])
        payload["ansible_module_utils_folders"] = folder_totals(payload["entries"])
        payload["uncompressed_bytes"] = sum(entry["bytes"] for entry in payload["entries"])
    ours["collection_files"] = [entry for entry in ours["entries"] if entry["path"].startswith("ansible_collections/")
                                and entry["bytes"]]
    return {
        "method": "ANSIBLE_KEEP_REMOTE_FILES=1, ANSIBLE_PIPELINING=0, ad-hoc run on localhost (connection local)",
        "gpu_facts": ours,
        "setup": setup,
        "ratios": {
            "file_bytes": ours["file_bytes"] / setup["file_bytes"],
            "zip_bytes": ours["zip_bytes"] / setup["zip_bytes"],
            "uncompressed_bytes": ours["uncompressed_bytes"] / setup["uncompressed_bytes"],
        },
    }


# ---------------------------------------------------------------- figure 3: demo fleet

def demo_fleet_fixtures(folder):
    """{path: fixture} of every demo host, as the module would load them."""
    if not folder.is_dir():
        return {}
    fixtures = {}
    for path in sorted(folder.rglob("*.json")):
        name = display_path(path)
        fixtures[name] = validate_fixture(json.loads(path.read_text(encoding="utf-8")), name)
    return fixtures


def replay_fixture(fixture):
    facts, _fixture = Collection(source="replay", fixture=fixture, gather_subset=fixture.get("gather_subset"),
                                 pynvml=pynvml).run()
    return facts


def display_path(path):
    path = path.resolve()
    return str(path.relative_to(REPO)) if path.is_relative_to(REPO) else str(path)


def fleet_bench(folder, rounds, warmup):
    """Each host is a case of one interleaved measurement; a round's fleet time is the sum of its
    hosts' times in that round."""
    fixtures = demo_fleet_fixtures(folder)
    if not fixtures:
        return {"skipped": "no fixtures under %s" % display_path(folder)}
    cases = {name: (lambda fixture=fixture: replay_fixture(fixture)) for name, fixture in fixtures.items()}
    samples = measure_interleaved(cases, rounds, warmup)
    fleet = [sum(round_times) for round_times in zip(*samples.values())]
    hosts = {name: replay_fixture(fixture) for name, fixture in fixtures.items()}
    per_host = {}
    for name, facts in hosts.items():
        per_host[Path(name).stem] = dict(summarize(samples[name]), gpus=len(facts["gpus"]),
                                         source=facts.get("replay_of") or "none",
                                         subsets=",".join(facts["gather_subset"]))
    timing = summarize(fleet)
    return {"fixtures": display_path(folder), "hosts": len(hosts), "gpus": sum(len(f["gpus"]) for f in hosts.values()),
            "sources": sorted({host["source"] for host in per_host.values()}),
            "rounds": rounds, "timing": timing, "per_host_ms": timing["median_ms"] / len(hosts),
            "per_host": per_host,
            "note": "each fixture replayed in-process with the gather_subset it was recorded with; "
                    "reading the JSON files is not timed"}


# ---------------------------------------------------------------- machine and report

def cpu_model():
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def machine():
    return {
        "cpu_count": os.cpu_count(),
        "cpu_model": cpu_model(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "ansible_core": metadata.version("ansible-core"),
        "nvidia_ml_py": metadata.version("nvidia-ml-py"),
        "load_average_at_start": os.getloadavg(),
    }


def fmt_timing(timing):
    return "%9.3f  %9.3f  %9.3f  %9.3f  %9.3f" % (timing["median_ms"], timing["q1_ms"], timing["q3_ms"],
                                                  timing["min_ms"], timing["max_ms"])


def fmt_ratio(ratio):
    return "%.2f (IQR %.2f-%.2f, min %.2f, max %.2f)" % (
        ratio["median"], ratio["q1"], ratio["q3"], ratio["min"], ratio["max"])


def print_collection(result):
    inputs = result["inputs"]
    print("== 1. one gpu_facts collection of an %d-GPU host (%d interleaved rounds after %d warm-up)"
          % (inputs["gpus"], result["rounds"], result["warmup_rounds"]))
    print("   NVML fixture: %d calls, %d bytes JSON; nvidia-smi XML: %d bytes from %s"
          % (inputs["nvml_fixture_calls"], inputs["nvml_fixture_json_bytes"], inputs["nvidia_smi_xml_bytes"],
             inputs["nvidia_smi_capture"]))
    if inputs["corpus_note"]:
        print("   note: %s" % inputs["corpus_note"])
    print("   %-34s %9s  %9s  %9s  %9s  %9s" % ("case (ms)", "median", "q1", "q3", "min", "max"))
    for name, timing in result["timings"].items():
        print("   %-34s %s" % (name, fmt_timing(timing)))
    for name, ratio in result["ratios"].items():
        print("   ratio %-36s %s" % (name, fmt_ratio(ratio)))
    print("   NVML replay: %.1f us per recorded call (ReplayLibrary build included); %.0f%% of collect_nvml's "
          "time is inside ReplayLibrary (cProfile)" % (result["nvml_us_per_call"],
                                                       100 * result["nvml_replay_library_share"]))
    print("   nvidia-smi parse: %.0f%% of it is ElementTree building the tree"
          % (100 * result["xml_fromstring_share_of_parse"]))


def print_payload(result):
    print("== 2. module payload per host (%s)" % result["method"])
    for name in ("gpu_facts", "setup"):
        payload = result[name]
        print("   %-10s AnsiballZ file %8d B, embedded zip %8d B, %3d files %8d B uncompressed"
              % (name, payload["file_bytes"], payload["zip_bytes"], len(payload["entries"]),
                 payload["uncompressed_bytes"]))
        for group, totals in sorted(payload["groups"].items()):
            print("   %10s   %-24s %3d files %8d B (%d B compressed)"
                  % ("", group, totals["files"], totals["bytes"], totals["compressed_bytes"]))
        print("   %10s   ansible module_utils by folder: %s" % ("", ", ".join(
            "%s %d/%d B" % (folder, totals["files"], totals["bytes"])
            for folder, totals in sorted(payload["ansible_module_utils_folders"].items()))))
    print("   gpufleet files in the gpu_facts payload (bytes, compressed):")
    for entry in result["gpu_facts"]["collection_files"]:
        print("     %-72s %7d %7d" % (entry["path"], entry["bytes"], entry["compressed_bytes"]))
    ratios = result["ratios"]
    print("   ratio gpu_facts/setup: file %.2f, zip %.2f, uncompressed %.2f"
          % (ratios["file_bytes"], ratios["zip_bytes"], ratios["uncompressed_bytes"]))


def print_fleet(result):
    print("== 3. one collection of the whole demo fleet")
    if "skipped" in result:
        print("   skipped: %s" % result["skipped"])
        return
    print("   %d hosts (%s), %d GPUs, %d rounds: median %.2f ms (min %.2f, max %.2f), %.2f ms per host"
          % (result["hosts"], "/".join(result["sources"]), result["gpus"], result["rounds"],
             result["timing"]["median_ms"],
             result["timing"]["min_ms"], result["timing"]["max_ms"], result["per_host_ms"]))
    print("   %-26s %4s %-10s %9s  %9s  %9s" % ("host (ms)", "gpus", "source", "median", "min", "max"))
    for name, host in result["per_host"].items():
        print("   %-26s %4d %-10s %9.2f  %9.2f  %9.2f"
              % (name, host["gpus"], host["source"], host["median_ms"], host["min_ms"], host["max_ms"]))


FIGURES = ("collection", "payload", "fleet", "diagnose", "store")


def parse_args(argv):
    parser = argparse.ArgumentParser(description="gpufleet benchmarks (see bench/README.md)")
    parser.add_argument("--only", choices=FIGURES, action="append",
                        help="run only this figure (repeatable); default: all")
    parser.add_argument("--rounds", type=int, default=200, help="timed rounds per case (default 200)")
    parser.add_argument("--warmup", type=int, default=20, help="untimed rounds first (default 20)")
    parser.add_argument("--realdata", type=Path, default=realdata_dir(),
                        help="folder of real nvidia-smi captures (default: realdata/ of the public corpus, "
                             "GPUFLEET_CORPUS else ../shared beside the checkout: %(default)s); without it "
                             "figure 1 uses the project's own T4 sample and says so")
    parser.add_argument("--fleet-fixtures", type=Path, default=DEMO_FIXTURES,
                        help="folder of the demo fleet's fixtures (default %(default)s)")
    parser.add_argument("--diagnose-sizes", type=int, nargs="+", default=list(DIAGNOSE_SIZES),
                        help="fleet sizes of figure 4, hosts (default %(default)s)")
    parser.add_argument("--diagnose-repeats", type=int, default=2,
                        help="runs of figure 4's smallest fleet; larger ones get proportionally fewer, at least "
                             "one (default %(default)s)")
    parser.add_argument("--no-diagnose-profile", action="store_true",
                        help="skip figure 4's cProfile runs at the smallest and largest size")
    parser.add_argument("--diagnose-tmp", type=Path, default=None,
                        help="folder for figure 4's report folders, removed after each run (default: $TMPDIR)")
    parser.add_argument("--store-parts", nargs="+", default=("overhead", "queries", "size"),
                        choices=("overhead", "queries", "size"), help="figure 5's parts to measure (default: all)")
    parser.add_argument("--store-rounds", type=int, default=3,
                        help="paired rounds of figure 5's store overhead (default %(default)s)")
    parser.add_argument("--output", type=Path, default=RESULTS, help="JSON results (default %(default)s)")
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    chosen = args.only or list(FIGURES)
    started = time.perf_counter()
    results = {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
               "command": " ".join([Path(sys.executable).name, "bench/run.py"] + (argv or sys.argv[1:])),
               "machine": machine()}
    print("gpufleet bench, %s: %d CPUs (%s), Python %s, ansible-core %s, nvidia-ml-py %s, load %s"
          % (results["date"], results["machine"]["cpu_count"], results["machine"]["cpu_model"],
             results["machine"]["python"], results["machine"]["ansible_core"], results["machine"]["nvidia_ml_py"],
             " ".join("%.2f" % load for load in results["machine"]["load_average_at_start"])))
    if "collection" in chosen:
        results["collection"] = collection_bench(args.realdata, args.rounds, args.warmup)
        print_collection(results["collection"])
    if "payload" in chosen:
        results["payload"] = payload_bench()
        print_payload(results["payload"])
    if "fleet" in chosen:
        results["fleet"] = fleet_bench(args.fleet_fixtures, max(10, args.rounds // 10), max(2, args.warmup // 10))
        print_fleet(results["fleet"])
    if "diagnose" in chosen:
        results["diagnose"] = diagnose_bench(sorted(set(args.diagnose_sizes)), args.diagnose_repeats,
                                             not args.no_diagnose_profile,
                                             str(args.diagnose_tmp) if args.diagnose_tmp else None)
        print_diagnose(results["diagnose"])
    if "store" in chosen:
        results["store"] = store_bench(args.store_rounds, work_root=str(args.diagnose_tmp) if args.diagnose_tmp else None,
                                       parts=args.store_parts)
        print_store(results["store"])
    results["machine"]["load_average_at_end"] = os.getloadavg()
    results["seconds"] = round(time.perf_counter() - started, 1)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    print("done in %.1f s; load at end %s; results in %s"
          % (results["seconds"], " ".join("%.2f" % load for load in results["machine"]["load_average_at_end"]),
             args.output))


if __name__ == "__main__":
    main()
