# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The controller's memory for one audit of 1,000 to 10,000 hosts of 8 GPUs, three ways:
- held: every host's facts in its registered result (the gpu_facts action's keep_facts=true, as audit.yml ran
  before), diagnosed by run_audit;
- files: results that only name each host's facts file (keep_facts=false): run_audit reads the files one by one,
  diagnoses each host and keeps its fleet view (plugins/plugin_utils/audit/fleet_view.py);
- workers: as files, with each host diagnosed in its worker (the action's policy option, audit.yml now):
  run_audit reads no facts at all.

Each audit runs in a fresh Python process that loads its results and policies from a pickle and runs the real
run_audit on facts files written beforehand by the action's own functions, as the workers write them; the
process's peak RSS (VmHWM) is its memory, measured against the same process's RSS before the audit started
(the results as Ansible would hold them). Results: bench/README.md ("Fleet-scale goals", section 4).

    .venv/bin/python bench/memory_bench.py --sizes 1000 10000 [--store] [--rounds 3]
"""

import argparse
import json
import os
import pickle
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO / "collections") not in sys.path:
    sys.path[:0] = [str(REPO), str(REPO / "collections")]

# pylint: disable=wrong-import-position
from ansible_collections.gpufleet.core.plugins.plugin_utils.audit import run as audit_run  # noqa: E402
from ansible_collections.gpufleet.core.plugins.plugin_utils.audit.host_step import DIAGNOSIS_KEY  # noqa: E402

MODES = ("held", "files", "workers")


def status_mib(pid, field):
    """A memory field of /proc/<pid>/status (VmRSS: now; VmHWM: the peak since the process's exec, where ru_maxrss
    would include the parent's RSS at fork time), in MiB."""
    with open("/proc/%d/status" % pid, encoding="ascii") as stream:
        for line in stream:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024.0
    return None


def prepare(size, work):
    """Writes the fleet's facts files (as the workers do) and one pickle per mode: (results, host policies)."""
    sys.path.insert(0, str(REPO / "bench"))
    import diagnose_bench  # pylint: disable=import-outside-toplevel
    templates, policies = diagnose_bench.load_templates()
    results, host_policies = diagnose_bench.build_fleet(size, templates, policies)
    run_dir = os.path.join(work, "reports", "20261205T050000Z")
    named, _cpu, _wall = diagnose_bench.prewrite_facts_files(results, run_dir, host_policies)
    workers = diagnose_bench.without_facts(named)
    files = {host: {key: value for key, value in result.items() if key != DIAGNOSIS_KEY}
             for host, result in workers.items()}
    held = {host: {key: value for key, value in result.items() if key != DIAGNOSIS_KEY}
            for host, result in named.items()}
    paths = {}
    for mode, chosen in (("held", held), ("files", files), ("workers", workers)):
        paths[mode] = os.path.join(work, "%s.pickle" % mode)
        with open(paths[mode], "wb") as stream:
            pickle.dump((chosen, host_policies), stream, protocol=pickle.HIGHEST_PROTOCOL)
    return run_dir, paths


def child(pickle_path, run_dir, store):
    """One audit in this process; prints its memory and CPU as JSON."""
    from ansible_collections.gpufleet.core.plugins.plugin_utils.store.record import StoreSettings
    with open(pickle_path, "rb") as stream:
        results, host_policies = pickle.load(stream)
    loaded = status_mib(os.getpid(), "VmRSS")
    settings = None
    if store:
        settings = StoreSettings("sqlite:///%s" % os.path.join(os.path.dirname(run_dir), "gpufleet.sqlite"), "bench")
    cpu, wall = time.process_time(), time.perf_counter()
    report, _paths, _lines = audit_run.run_audit(results, host_policies, run_dir, os.path.dirname(run_dir),
                                                 "2026-12-05T05:00:00Z", store=settings)
    print(json.dumps({"rss_before_audit_mib": loaded, "peak_rss_mib": status_mib(os.getpid(), "VmHWM"),
                      "audit_cpu_s": time.process_time() - cpu, "audit_wall_s": time.perf_counter() - wall,
                      "findings": len(report["findings"]), "store": (report.get("store") or {}).get("status")}))


def measure(size, store, rounds=1, work_root=None):
    """{mode: medians over the rounds}, the modes interleaved in each round (each in its own process)."""
    work = tempfile.mkdtemp(prefix="gpufleet-bench-memory-", dir=work_root)
    try:
        run_dir, paths = prepare(size, work)
        runs = {mode: [] for mode in MODES}
        for _round in range(rounds):
            for mode in MODES:
                command = [sys.executable, __file__, "--child", paths[mode], "--run-dir", run_dir]
                if store:
                    command.append("--store")
                output = subprocess.run(command, check=True, stdout=subprocess.PIPE, text=True).stdout
                runs[mode].append(json.loads(output.strip().splitlines()[-1]))
        return {mode: dict(entries[0], **{key: statistics.median(entry[key] for entry in entries) for key in (
            "rss_before_audit_mib", "peak_rss_mib", "audit_cpu_s", "audit_wall_s")}) for mode, entries in runs.items()}
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--store", action="store_true", help="with the run store (SQLite) on")
    parser.add_argument("--rounds", type=int, default=1, help="audits of each kind per size (medians)")
    parser.add_argument("--work-root", help="where the facts files go (default: the temporary folder)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--run-dir", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child(args.child, args.run_dir, args.store)
        return 0
    print("gpufleet memory bench, %s UTC, load %s, store %s, %d round(s), medians" % (
        time.strftime("%Y-%m-%d %H:%M", time.gmtime()), " ".join("%.2f" % x for x in os.getloadavg()),
        "SQLite" if args.store else "off", args.rounds))
    print("   %-8s %-6s %14s %14s %14s %10s %10s" % (
        "hosts", "facts", "before audit", "peak RSS", "audit adds", "CPU s", "findings"))
    for size in args.sizes:
        measured = measure(size, args.store, args.rounds, args.work_root)
        for mode in MODES:
            row = measured[mode]
            print("   %-8d %-6s %10.1f MiB %10.1f MiB %10.1f MiB %10.2f %10d" % (
                size, mode, row["rss_before_audit_mib"], row["peak_rss_mib"],
                row["peak_rss_mib"] - row["rss_before_audit_mib"], row["audit_cpu_s"], row["findings"]))
        for mode in MODES[1:]:
            print("   %-8d ratio %s/held: peak RSS %.3f, CPU %.3f" % (
                size, mode, measured[mode]["peak_rss_mib"] / measured["held"]["peak_rss_mib"],
                measured[mode]["audit_cpu_s"] / measured["held"]["audit_cpu_s"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
