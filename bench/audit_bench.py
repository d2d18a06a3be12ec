# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""audit.yml against a one-task ping play on the same simulated fleet (bench/README.md, figure 5).

N hosts of 8 GPUs, connection local, 25 forks; every host's gpu_facts finds a fake `nvidia-smi` first on
PATH that prints an 8-GPU `nvidia-smi -q -x` built from a real capture (bench/run.py's eight_gpu_xml).
Both playbooks run alternately in one loop; each run's wall time and the CPU time of its process tree
(RUSAGE_CHILDREN) are recorded, and the ratios are taken per round.

    .venv/bin/python bench/audit_bench.py --hosts 200 --rounds 3
    .venv/bin/python bench/audit_bench.py --hosts 200 --rounds 1 --task-times   # where the audit's time goes
"""

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
sys.path.insert(0, str(BENCH))

# pylint: disable=wrong-import-position
from run import eight_gpu_xml, smi_input  # noqa: E402
from corpus import realdata_dir  # noqa: E402

FORKS = 25
PING_PLAY = """---
- name: Ping every host
  hosts: all
  gather_facts: false
  tasks:
    - name: Ping
      ansible.builtin.ping:
"""
FAKE_NVIDIA_SMI = """#!/bin/sh
# bench/audit_bench.py: answers `nvidia-smi -q -x` with an 8-GPU document, nothing else
if [ "$1" = "-q" ] && [ "$2" = "-x" ]; then exec cat "%s"; fi
echo "fake nvidia-smi: only -q -x" >&2
exit 1
"""


def write_fleet(workdir, hosts, xml_text):
    """Inventory of `hosts` simulated hosts, the fake nvidia-smi and the ping play under workdir."""
    (workdir / "bin").mkdir()
    xml_path = workdir / "nvsmi-q-x.xml"
    xml_path.write_text(xml_text, encoding="utf-8")
    fake = workdir / "bin" / "nvidia-smi"
    fake.write_text(FAKE_NVIDIA_SMI % xml_path, encoding="utf-8")
    fake.chmod(0o755)
    names = ["bench-gpu-%05d" % index for index in range(hosts)]
    inventory = {"all": {
        "vars": {
            "ansible_connection": "local",
            "ansible_python_interpreter": sys.executable,
            "gpufleet_facts_source": "nvidia_smi",
            "gpufleet_report_dir": str(workdir / "reports"),
        },
        "children": {"gpu_fleet": {"hosts": {name: None for name in names}}},
    }}
    (workdir / "hosts.yml").write_text(json.dumps(inventory, indent=1), encoding="utf-8")
    (workdir / "ping.yml").write_text(PING_PLAY, encoding="utf-8")
    return names


def playbook_env(workdir, task_times, tree=REPO):
    env = dict(os.environ)
    env.update({
        "ANSIBLE_CONFIG": str(tree / "ansible.cfg"),
        "ANSIBLE_LOCALHOST_WARNING": "0",
        "ANSIBLE_NOCOLOR": "1",
        "ANSIBLE_FORKS": str(FORKS),
        "PATH": "%s:%s" % (workdir / "bin", env.get("PATH", "")),
    })
    if task_times:
        env["ANSIBLE_CALLBACK_PLUGINS"] = str(BENCH / "callback_plugins")
        env["ANSIBLE_CALLBACKS_ENABLED"] = "gpufleet_task_times"
        env["GPUFLEET_TASK_TIMES"] = str(workdir / ("task-times-%d.json" % time.monotonic_ns()))
    return env


def children_cpu():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


# runs ansible-playbook and writes the largest resident set of its processes (the controller's main process), KiB
PEAK_RSS_WRAPPER = ("import resource, subprocess, sys\n"
                    "code = subprocess.call(sys.argv[2:])\n"
                    "open(sys.argv[1], 'w').write(str(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss))\n"
                    "sys.exit(code)\n")


def run_playbook(workdir, playbook, task_times=False, tree=REPO, extra=()):
    ansible_playbook = Path(sys.executable).parent / "ansible-playbook"
    env = playbook_env(workdir, task_times, tree)
    peak_file = workdir / ("peak-rss-%d" % time.monotonic_ns())
    argv = [sys.executable, "-c", PEAK_RSS_WRAPPER, str(peak_file), str(ansible_playbook), "-i",
            str(workdir / "hosts.yml"), "-f", str(FORKS), str(playbook)] + list(extra)
    cpu_before = children_cpu()
    started = time.perf_counter()
    completed = subprocess.run(argv, cwd=str(tree), env=env, capture_output=True, text=True, timeout=3600,
                               check=False)
    wall = time.perf_counter() - started
    result = {"rc": completed.returncode, "wall_s": wall, "cpu_s": children_cpu() - cpu_before,
              "stdout_bytes": len(completed.stdout),
              "peak_rss_mib": int(peak_file.read_text()) / 1024.0 if peak_file.is_file() else None}
    if task_times and Path(env["GPUFLEET_TASK_TIMES"]).is_file():
        result["task_times"] = json.loads(Path(env["GPUFLEET_TASK_TIMES"]).read_text(encoding="utf-8"))
    # 0: healthy, 2: findings; anything else means the run did not do what is being measured
    if completed.returncode not in (0, 2):
        raise SystemExit("%s exited %d\n%s\n%s" % (playbook, completed.returncode, completed.stdout[-4000:],
                                                   completed.stderr[-4000:]))
    return result


def check_audit(workdir, hosts):
    """The audit read every host's 8 GPUs from the fake nvidia-smi."""
    latest = workdir / "reports" / "latest" / "report.json"
    report = json.loads(latest.read_text(encoding="utf-8"))
    statuses = [host["status"] for host in report["hosts"].values()]
    return {"hosts_in_report": len(statuses), "hosts_ok": statuses.count("ok"),
            "findings": len(report["findings"]), "rules": sorted({finding["rule"] for finding in report["findings"]}),
            "expected_hosts": hosts}


def latest_store(reports):
    """"<status> <engine>" of the store section of the newest report.json in reports ("off" without a store)."""
    store = json.loads((reports / "latest" / "report.json").read_text(encoding="utf-8")).get("store") or {}
    return "%s %s" % (store.get("status"), str(store.get("url") or "").split(":", 1)[0])


def median(values):
    return statistics.median(values) if values else None


STORE_OFF = ("-e", "gpufleet_store=false")
OTHER_REPORTS = "reports-other"


def reports_of(name, store_off):
    """The reports folder a run of the bench writes into (the inventory's, but the compared tree's own)."""
    return OTHER_REPORTS if name == "audit_other" and not store_off else "reports"


def audit_bench(hosts, rounds, task_times=False, realdata=None, compare_tree=None, store_off=False, postgresql=False):
    """compare_tree: another checkout of the collection (an earlier commit, from `git archive`) whose
    audit.yml runs in the same rounds as audit_other. store_off: audit.yml with `-e gpufleet_store=false`
    also runs in every round (audit_other), for the store's overhead on the whole audit; the reports
    folder, and so the default SQLite store in it, is then kept from round to round, as a daily audit
    keeps it. postgresql: audit.yml into a PostgreSQL store (a server started here as the tests start one,
    tests/support/postgres.py) also runs in every round (audit_postgresql)."""
    smi_path, corpus_note = smi_input(realdata)
    xml_text = eight_gpu_xml(smi_path.read_text(encoding="utf-8"))
    workdir = Path(tempfile.mkdtemp(prefix="gpufleet-audit-bench-"))
    trees = {"ping": REPO, "audit": REPO}
    extra = {}
    if compare_tree or store_off:
        trees["audit_other"] = compare_tree or REPO
        # the other tree gets reports (and a store) of its own: a store that the newer tree migrated is one the
        # older tree cannot write, and a failed store write would make the other tree's audit cheaper
        extra["audit_other"] = STORE_OFF if store_off else ("-e", "gpufleet_report_dir=%s" % (workdir / OTHER_REPORTS))
    cluster = None
    try:
        if postgresql:
            cluster = postgres_cluster()
            trees["audit_postgresql"] = REPO
            extra["audit_postgresql"] = ("-e", "gpufleet_store_url=%s" % cluster.new_database())
        write_fleet(workdir, hosts, xml_text)
        runs = {name: [] for name in trees}
        store_status = {}
        for index in range(rounds):
            shift = index % len(trees)
            names = list(trees)
            for name in names[shift:] + names[:shift]:
                playbook = workdir / "ping.yml" if name == "ping" else trees[name] / "audit.yml"
                runs[name].append(run_playbook(workdir, playbook, task_times and name != "ping", trees[name],
                                               extra.get(name, ())))
                if index == 0 and name == "audit":
                    audit_check = check_audit(workdir, hosts)
                if index == 0 and name != "ping":
                    store_status[name] = latest_store(workdir / reports_of(name, store_off))
            if not (store_off or postgresql):
                shutil.rmtree(workdir / "reports", ignore_errors=True)
                shutil.rmtree(workdir / OTHER_REPORTS, ignore_errors=True)
        audit_check["store"] = store_status
        return summarize(hosts, rounds, runs, audit_check, smi_path, corpus_note)
    finally:
        if cluster is not None:
            cluster.stop()
        shutil.rmtree(workdir, ignore_errors=True)


def postgres_cluster():
    sys.path.insert(0, str(REPO))
    from tests.support.postgres import Cluster, missing_reason  # pylint: disable=import-outside-toplevel
    reason = missing_reason()
    if reason:
        raise SystemExit("--postgresql: %s" % reason)
    cluster = Cluster()
    cluster.start()
    return cluster


def summarize(hosts, rounds, runs, audit_check, smi_path, corpus_note):
    result = {"hosts": hosts, "forks": FORKS, "rounds": rounds, "nvidia_smi_input": smi_path.name,
              "corpus_note": corpus_note, "audit_check": audit_check, "runs": runs}
    for clock in ("wall_s", "cpu_s"):
        pairs = [audit[clock] / ping[clock] for audit, ping in zip(runs["audit"], runs["ping"])]
        result[clock] = {
            "ping_median": median([run[clock] for run in runs["ping"]]),
            "audit_median": median([run[clock] for run in runs["audit"]]),
            "ratio_median": median(pairs), "ratios": pairs,
        }
        if "audit_other" in runs:
            other = [run[clock] / ping[clock] for run, ping in zip(runs["audit_other"], runs["ping"])]
            audit_other = [run[clock] / other_run[clock] for run, other_run in zip(runs["audit"], runs["audit_other"])]
            result[clock].update(other_median=median([run[clock] for run in runs["audit_other"]]),
                                 other_ratio_median=median(other), other_ratios=other,
                                 audit_other_median=median(audit_other), audit_other_ratios=audit_other)
        if "audit_postgresql" in runs:
            against = runs.get("audit_other") or runs["audit"]
            postgresql = [run[clock] / other_run[clock] for run, other_run in zip(runs["audit_postgresql"], against)]
            result[clock].update(postgresql_median=median([run[clock] for run in runs["audit_postgresql"]]),
                                 postgresql_other_median=median(postgresql), postgresql_other_ratios=postgresql)
    return result


def print_audit(result):
    print("== 5. audit.yml against a one-task ping play: %d hosts of 8 GPUs, connection local, %d forks, "
          "%d rounds (fake nvidia-smi from %s)"
          % (result["hosts"], result["forks"], result["rounds"], result["nvidia_smi_input"]))
    if result["corpus_note"]:
        print("   note: %s" % result["corpus_note"])
    check = result["audit_check"]
    print("   audit reported %d of %d hosts, %d ok, %d findings (rules: %s)"
          % (check["hosts_in_report"], check["expected_hosts"], check["hosts_ok"], check["findings"],
             ", ".join(check["rules"])))
    if check.get("store"):
        print("   store of each audit's first run: %s" % ", ".join(
            "%s %s" % (name, status) for name, status in sorted(check["store"].items())))
    for clock, label in (("wall_s", "wall-clock s"), ("cpu_s", "CPU s (process tree)")):
        row = result[clock]
        print("   %-22s ping %8.2f   audit %8.2f   ratio audit/ping %.2f (per round: %s)"
              % (label, row["ping_median"], row["audit_median"], row["ratio_median"],
                 " ".join("%.2f" % ratio for ratio in row["ratios"])))
        if "other_median" in row:
            print("   %-22s                 other %8.2f   ratio other/ping %.2f (per round: %s)"
                  % (label, row["other_median"], row["other_ratio_median"],
                     " ".join("%.2f" % ratio for ratio in row["other_ratios"])))
            print("   %-22s                 ratio audit/other %.3f (per round: %s)"
                  % (label, row["audit_other_median"], " ".join("%.3f" % ratio for ratio in row["audit_other_ratios"])))
        if "postgresql_median" in row:
            print("   %-22s                 audit into PostgreSQL %8.2f   ratio to %s %.3f (per round: %s)"
                  % (label, row["postgresql_median"], "other" if "other_median" in row else "audit",
                     row["postgresql_other_median"],
                     " ".join("%.3f" % ratio for ratio in row["postgresql_other_ratios"])))
    peaks = {name: median([run["peak_rss_mib"] for run in runs if run.get("peak_rss_mib")])
             for name, runs in result["runs"].items()}
    print("   peak RSS of the largest process (ansible-playbook's controller), MiB, median: %s" % ", ".join(
        "%s %.0f" % (name, peak) for name, peak in peaks.items() if peak))
    for name in ("audit", "audit_other"):
        for run in result["runs"].get(name, []):
            if "task_times" in run:
                print("   %s task times (wall s, from the task's start to the next task's start):" % name)
                for task in run["task_times"]:
                    print("     %8.2f  %s" % (task["seconds"], task["name"]))


# ---------------------------------------------------------------- figure 6: one host's collection against setup

NVML_FIXTURE = REPO / "inventories" / "demo" / "fixtures" / "gpu-h100-ok-01.json"
COLLECTIONS = (
    ("gpu_facts_nvml_replay", "gpufleet.core.gpu_facts", json.dumps({"source": "replay", "fixture": str(NVML_FIXTURE)})),
    ("gpu_facts_nvidia_smi", "gpufleet.core.gpu_facts", "source=nvidia_smi"),
    ("setup_min", "ansible.builtin.setup", "gather_subset=min"),
)


def run_adhoc(workdir, module, args):
    ansible = Path(sys.executable).parent / "ansible"
    argv = [str(ansible), "localhost", "-i", "localhost,", "-c", "local", "-m", module, "-a", args,
            "-e", "ansible_python_interpreter=%s" % sys.executable]
    cpu_before = children_cpu()
    started = time.perf_counter()
    completed = subprocess.run(argv, cwd=str(REPO), env=playbook_env(workdir, False), capture_output=True,
                               text=True, timeout=600, check=False)
    wall = time.perf_counter() - started
    if completed.returncode != 0 or "SUCCESS" not in completed.stdout:
        raise SystemExit("%s %s exited %d\n%s\n%s" % (module, args, completed.returncode, completed.stdout[-3000:],
                                                      completed.stderr[-3000:]))
    return {"wall_s": wall, "cpu_s": children_cpu() - cpu_before}


def collection_vs_setup(rounds, realdata=None):
    """One host's gpu_facts (NVML replayed, all subsets; nvidia-smi -q -x from the fake, all subsets) against
    setup gather_subset=min, each an ad-hoc `ansible localhost -c local` run, interleaved in a rotating order."""
    smi_path, corpus_note = smi_input(realdata)
    workdir = Path(tempfile.mkdtemp(prefix="gpufleet-collection-bench-"))
    try:
        write_fleet(workdir, 1, eight_gpu_xml(smi_path.read_text(encoding="utf-8")))
        for name, module, args in COLLECTIONS:  # warm-up: Ansible's module cache, the page cache
            run_adhoc(workdir, module, args)
        runs = {name: [] for name, _module, _args in COLLECTIONS}
        for index in range(rounds):
            shift = index % len(COLLECTIONS)
            for name, module, args in COLLECTIONS[shift:] + COLLECTIONS[:shift]:
                runs[name].append(run_adhoc(workdir, module, args))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    result = {"rounds": rounds, "nvidia_smi_input": smi_path.name, "corpus_note": corpus_note,
              "nvml_fixture": str(NVML_FIXTURE.relative_to(REPO)), "runs": runs}
    for clock in ("wall_s", "cpu_s"):
        result[clock] = {}
        for name in runs:
            pairs = [run[clock] / setup[clock] for run, setup in zip(runs[name], runs["setup_min"])]
            result[clock][name] = {"median": median([run[clock] for run in runs[name]]),
                                   "ratio_to_setup_min": median(pairs)}
    return result


def print_collection_vs_setup(result):
    print("== 6. one host's collection against setup gather_subset=min (ad-hoc, connection local, %d rounds)"
          % result["rounds"])
    for clock, label in (("wall_s", "wall-clock s"), ("cpu_s", "CPU s (process tree)")):
        for name, row in result[clock].items():
            print("   %-22s %-24s %8.3f   x setup_min %.2f" % (label, name, row["median"], row["ratio_to_setup_min"]))


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n", maxsplit=1)[0])
    parser.add_argument("--hosts", type=int, nargs="+", default=[200])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--task-times", action="store_true", help="time each task of the audit (callback)")
    parser.add_argument("--realdata", type=Path, default=realdata_dir())
    parser.add_argument("--collection-rounds", type=int, default=0,
                        help="also time one host's collection against setup (figure 6) this many rounds")
    parser.add_argument("--no-audit", action="store_true", help="skip figure 5")
    parser.add_argument("--compare-tree", type=Path, default=None,
                        help="also run this checkout's audit.yml in every round (e.g. git archive of an earlier commit)")
    parser.add_argument("--store-off", action="store_true",
                        help="also run audit.yml with -e gpufleet_store=false in every round (other: the store's "
                             "overhead on the whole audit; the store is kept from round to round)")
    parser.add_argument("--postgresql", action="store_true",
                        help="also run audit.yml into a PostgreSQL store started here (Debian's postgresql package) "
                             "in every round")
    parser.add_argument("--output", type=Path, default=None)
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    load = os.getloadavg()
    print("audit bench: %d CPUs, load %.2f %.2f %.2f" % ((os.cpu_count(),) + load))
    results = []
    if args.collection_rounds:
        result = collection_vs_setup(args.collection_rounds, args.realdata)
        print_collection_vs_setup(result)
        results.append(result)
    for hosts in [] if args.no_audit else args.hosts:
        result = audit_bench(hosts, args.rounds, args.task_times, args.realdata, args.compare_tree, args.store_off,
                             args.postgresql)
        result["load_at_start"] = load
        result["load_at_end"] = os.getloadavg()
        print_audit(result)
        results.append(result)
    if args.output:
        args.output.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
