#!/usr/bin/env python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Are the audit's reports byte-identical between a base commit and the working tree? (bench/README.md)

Both trees audit the same two fleets: the demo fleet (audit.yml with inventories/demo, as `make audit` runs it)
and the bench's simulated fleet (bench/audit_bench.py's hosts of 8 GPUs answered by a fake nvidia-smi, without
the host_pressure subset: BENCH_SUBSETS). Each
tree is laid out in turn at the same path (the base from `git archive`, the working tree as its tracked and
untracked, not ignored, files) and writes into the same report folder, so paths in the reports match. Every
file of the two run folders (report.json, report.html, junit.xml, gpufleet.prom, hosts.txt, facts/) is then
compared byte for byte after masking only what differs from run to run by nature (MASKED_VALUES):

    .venv/bin/python tools/report_identity.py --base 88f95f8
    .venv/bin/python tools/report_identity.py --base main --bench-hosts 50 --keep /tmp/identity

Exit status 0 when every file is identical after masking, 1 when one differs (the first differing lines
are printed), 2 when a run failed.
"""

import argparse
import difflib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from datetime import datetime, timezone
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))

# pylint: disable=wrong-import-position
from audit_bench import playbook_env, write_fleet  # noqa: E402
from corpus import realdata_dir  # noqa: E402
from run import eight_gpu_xml, smi_input  # noqa: E402

# What is masked, and why; nothing else is. The run's own id and times come from its report.json and are
# replaced wherever they appear, in every format the renderers write them.
MASKED_VALUES = (
    ("run.id", "the run's id is the time it started (the run folder's name, junit's suite name, the HTML title,"
               " Prometheus' run_id label)"),
    ("run.started_at", "when the run started (report.json, the HTML header, junit's timestamps, and a finding's"
                       " first_seen, which in a fresh store is this run's start)"),
    ("run.finished_at", "when the run finished (report.json, the HTML header; Prometheus'"
                        " gpufleet_audit_last_run_timestamp_seconds as epoch seconds)"),
    ("collection_seconds", "how long a host's collection took (the facts and report.json), measured on the host"),
    ("collected_at", "the host's clock when it was collected: the run's time on the bench's live hosts (the demo"
                     " replays fixtures, whose time is fixed)"),
    ("the run's duration", "Prometheus' gpufleet_audit_duration_seconds, and gpufleet_finding_open_seconds where a"
                           " finding is as old as the run (first seen at its start, as in a fresh store)"),
)
KEYED_VALUES = re.compile(r'("(collection_seconds|collected_at)": ?)("[^"]*"|[0-9.eE+-]+)')
RUN_DURATION_METRICS = re.compile(r"^(gpufleet_audit_duration_seconds|gpufleet_finding_open_seconds\{[^}]*\}) (\S+)$",
                                  re.MULTILINE)
# The bench's hosts run on this machine, so host_pressure reads its live load (and workload.input_bound fires on
# it or not): that subset is left out on the bench fleet; the demo replays it from its fixtures.
BENCH_SUBSETS = '["all", "!host_pressure"]'
FLEETS = ("demo", "bench")
OK_EXIT = (0, 2)  # 2: findings at or above the fail severity, as both fleets have


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n", maxsplit=1)[0])
    parser.add_argument("--base", default="88f95f8", help="the commit to compare the working tree against")
    parser.add_argument("--bench-hosts", type=int, default=20, help="hosts of the bench's simulated fleet")
    parser.add_argument("--realdata", type=Path, default=realdata_dir())
    parser.add_argument("--keep", type=Path, default=None,
                        help="a folder (new or empty) to work in and keep: both trees' run folders stay there")
    return parser.parse_args(argv)


def base_tree(commit, target):
    """The committed files of `commit` under target (git archive)."""
    archive = subprocess.run(["git", "-C", str(REPO), "archive", "--format=tar", commit], capture_output=True,
                             check=True).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(target, filter="tar")


def working_tree(target):
    """The working tree's files under target: tracked (as they are now, uncommitted edits included) and
    untracked ones git does not ignore."""
    listed = subprocess.run(["git", "-C", str(REPO), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                            capture_output=True, check=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        source = REPO / name
        if not os.path.lexists(source):
            continue  # deleted in the working tree, not yet committed
        destination = target / name
        destination.parent.mkdir(parents=True, exist_ok=True)
        if source.is_symlink():
            os.symlink(os.readlink(source), destination)
        elif source.is_file():
            shutil.copy2(source, destination)


def run_audit(tree, workdir, fleet):
    """Runs the tree's audit.yml against one fleet; returns the run folder it wrote."""
    ansible_playbook = Path(sys.executable).parent / "ansible-playbook"
    reports = workdir / "reports" / fleet
    if fleet == "demo":
        argv = [str(ansible_playbook), "audit.yml", "-e", "gpufleet_report_dir=%s" % reports]
    else:
        argv = [str(ansible_playbook), "-i", str(workdir / "hosts.yml"), "audit.yml",
                "-e", "gpufleet_report_dir=%s" % reports, "-e", '{"gpufleet_gather_subset": %s}' % BENCH_SUBSETS]
    completed = subprocess.run(argv, cwd=str(tree), env=playbook_env(workdir, False, tree), capture_output=True,
                               text=True, timeout=3600, check=False)
    if completed.returncode not in OK_EXIT:
        raise RunFailed("%s audit in %s exited %d\n%s\n%s" % (
            fleet, tree, completed.returncode, completed.stdout[-3000:], completed.stderr[-3000:]))
    return (reports / "latest").resolve()


class RunFailed(Exception):
    pass


def audit_both_fleets(tree, workdir, keep_as):
    """{fleet: run folder}: the tree's run folders, moved to keep_as/<fleet> so the next tree writes afresh."""
    folders = {}
    for fleet in FLEETS:
        run_folder = run_audit(tree, workdir, fleet)
        kept = keep_as / fleet
        kept.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(str(run_folder), str(kept))
        shutil.rmtree(workdir / "reports" / fleet)
        folders[fleet] = kept
    return folders


def epoch_texts(iso_time):
    epoch = datetime.strptime(iso_time, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc).timestamp()
    return ["%r" % float(epoch), "%d" % epoch]


def run_own_values(run_folder):
    return run_own_values_of(json.loads((run_folder / "report.json").read_text(encoding="utf-8"))["run"])


def run_own_values_of(run):
    """(values, duration): the run's id and times as its files write them, longest first, and its duration in
    seconds as Prometheus writes it."""
    values = [(run["id"], "<run.id>")]
    for key in ("started_at", "finished_at"):
        values.append((run[key], "<run.%s>" % key))
        values.extend((text, "<run.%s epoch>" % key) for text in epoch_texts(run[key]))
    duration = float(epoch_texts(run["finished_at"])[1]) - float(epoch_texts(run["started_at"])[1])
    return sorted(values, key=lambda pair: -len(pair[0])), "%r" % duration


def masked(text, own_values):
    values, duration = own_values
    for value, mask in values:
        text = text.replace(value, mask)
    text = RUN_DURATION_METRICS.sub(
        lambda match: "%s %s" % (match.group(1), "<run duration>" if match.group(2) == duration else match.group(2)),
        text)
    return KEYED_VALUES.sub(r"\1<\2>", text)


def run_files(run_folder):
    return sorted(str(path.relative_to(run_folder)) for path in run_folder.rglob("*") if path.is_file())


def compare_run_folders(base, work):
    """[(file, [diff lines])] of the files that differ after masking; a file only one side has differs."""
    base_values, work_values = run_own_values(base), run_own_values(work)
    differences = []
    for name in sorted(set(run_files(base)) | set(run_files(work))):
        if not (base / name).is_file() or not (work / name).is_file():
            differences.append((name, ["only in %s" % ("the working tree" if (work / name).is_file() else "the base")]))
            continue
        before = masked((base / name).read_text(encoding="utf-8"), base_values)
        after = masked((work / name).read_text(encoding="utf-8"), work_values)
        if before != after:
            diff = difflib.unified_diff(before.splitlines(), after.splitlines(), "base/" + name, "work/" + name,
                                        lineterm="", n=0)
            differences.append((name, [line[:300] for line in diff][:20]))
    return differences


def identity(base_commit, bench_hosts, realdata, workdir):
    smi_path, corpus_note = smi_input(realdata)
    write_fleet(workdir, bench_hosts, eight_gpu_xml(smi_path.read_text(encoding="utf-8")))
    tree = workdir / "tree"
    runs = {}
    for label, lay_out in (("base", lambda target: base_tree(base_commit, target)), ("work", working_tree)):
        tree.mkdir()
        lay_out(tree)
        runs[label] = audit_both_fleets(tree, workdir, workdir / "runs" / label)
        shutil.rmtree(tree)
    return {fleet: compare_run_folders(runs["base"][fleet], runs["work"][fleet]) for fleet in FLEETS}, runs, \
        corpus_note


def print_result(base_commit, bench_hosts, results, runs, corpus_note):
    head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                          check=False).stdout.strip()
    dirty = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True, check=False).stdout.strip()
    print("base %s against the working tree (HEAD %s%s); bench fleet of %d hosts"
          % (base_commit, head, ", with uncommitted changes" if dirty else "", bench_hosts))
    if corpus_note:
        print("note:", corpus_note)
    print("masked:", ", ".join(name for name, _why in MASKED_VALUES))
    for fleet, differences in results.items():
        files = run_files(runs["work"][fleet])
        print("%s: %d files compared, %d differ" % (fleet, len(files), len(differences)))
        for name, lines in differences:
            print("  %s" % name)
            for line in lines:
                print("    %s" % line)


def main(argv=None):
    args = parse_args(argv)
    workdir = args.keep or Path(tempfile.mkdtemp(prefix="gpufleet-identity-"))
    workdir.mkdir(parents=True, exist_ok=True)
    try:
        results, runs, corpus_note = identity(args.base, args.bench_hosts, args.realdata, workdir)
        print_result(args.base, args.bench_hosts, results, runs, corpus_note)
    except RunFailed as exc:
        print(exc, file=sys.stderr)
        return 2
    finally:
        if args.keep is None:
            shutil.rmtree(workdir, ignore_errors=True)
    return 1 if any(results.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
