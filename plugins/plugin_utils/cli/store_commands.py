# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The store's subcommands of the `gpufleet` command: runs, show, diff, baseline set/show, report.

register(subparsers) adds them to the console script's argparse subparsers; each handler takes the parsed
namespace (args.store_url may be None: then GPUFLEET_STORE_URL, else <report root>/gpufleet.sqlite) and
returns the exit status: 0 done, 1 the store could not answer (no store, unknown run, newer schema).
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
import os
import sys

from ansible_collections.gpufleet.core.plugins.plugin_utils.run_folder import report_root
from ansible_collections.gpufleet.core.plugins.plugin_utils.store.baseline import set_baseline
from ansible_collections.gpufleet.core.plugins.plugin_utils.store.baseline_template import render_markdown
from ansible_collections.gpufleet.core.plugins.plugin_utils.store.engine import StoreError, make_engine, resolve_url
from ansible_collections.gpufleet.core.plugins.plugin_utils.store.queries import (
    baselines, find_run, list_runs, run_findings, run_hosts)
from ansible_collections.gpufleet.core.plugins.plugin_utils.store.record import store_error_text
from ansible_collections.gpufleet.core.plugins.plugin_utils.store.schema import ensure_schema
from ansible_collections.gpufleet.core.plugins.plugin_utils.store.sqla import IMPORT_ERROR, MISSING, make_url

EXIT_OK = 0
EXIT_STORE = 1
WHOLE_FLEET = "all"


def store_location(args):
    root = report_root(getattr(args, "report_root", None))
    url, _source = resolve_url(root, getattr(args, "store_url", None), enabled=True)
    return url, root


def open_store(args):
    """(engine, report root) of an existing store, at a revision this code knows (older ones upgrade)."""
    url, root = store_location(args)
    if IMPORT_ERROR is not None:
        raise StoreError(MISSING % IMPORT_ERROR)
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite" and parsed.database and not os.path.exists(parsed.database):
        raise StoreError("no store at %s: run an audit first, or give --store-url" % parsed.database)
    engine = make_engine(url)
    ensure_schema(engine)
    return engine, root


def emit(args, data, text_lines):
    if getattr(args, "json", False):
        print(json.dumps(data, indent=1, sort_keys=True, default=str))
    else:
        print("\n".join(text_lines))


def handler(action):
    """Wraps a subcommand: opens the store, runs action(args, connection, root), reports store errors."""
    def run(args):
        try:
            engine, root = open_store(args)
        except Exception as exc:  # an unreadable store is a message and exit status 1, never a traceback
            print("gpufleet: %s" % error_text(exc), file=sys.stderr)
            return EXIT_STORE
        try:
            with engine.begin() as connection:
                return action(args, connection, root)
        except Exception as exc:
            print("gpufleet: %s" % error_text(exc), file=sys.stderr)
            return EXIT_STORE
        finally:
            engine.dispose()
    run.action = action
    return run


def error_text(exc):
    return store_error_text(exc)


# ----------------------------------------------------------------- runs, show, diff

def runs_action(args, connection, _root):
    rows = list_runs(connection, args.limit)
    data = [{"run": row.run_id, "scope": row.scope_key, "status": row.status, "started_at": row.started_at,
             "hosts": row.hosts_total, "findings": row.findings_total} for row in rows]
    lines = ["%-22s %-9s %-20s %6s %8s  %s" % ("RUN", "STATUS", "STARTED (UTC)", "HOSTS", "FINDINGS", "SCOPE")]
    lines += ["%-22s %-9s %-20s %6d %8d  %s" % (item["run"], item["status"], item["started_at"] or "", item["hosts"],
                                                item["findings"], item["scope"]) for item in data]
    if not data:
        lines = ["no runs in the store yet"]
    emit(args, data, lines)
    return EXIT_OK


def finding_line(finding, first_seen=None, runs_open=None):
    where = finding.get("host") or ""
    if finding.get("gpu"):
        where += " " + finding["gpu"]
    since = " (open since %s, %d runs)" % (first_seen, runs_open) if first_seen else ""
    return "  [%s] %s %s: %s%s" % (finding.get("severity"), finding.get("rule"), where, finding.get("summary"), since)


def show_action(args, connection, _root):
    run = find_run(connection, args.run)
    hosts = run_hosts(connection, run.id)
    findings = run_findings(connection, run.id)
    record = json.loads(run.record)
    record.pop("stored_policies", None)
    data = {"run": record, "summary": json.loads(run.summary), "hosts": hosts,
            "findings": [dict(finding, identity=identity, first_seen=first_seen, runs_open=runs_open)
                         for finding, identity, first_seen, runs_open in findings]}
    by_status = {}
    for entry in hosts.values():
        by_status[entry["status"]] = by_status.get(entry["status"], 0) + 1
    lines = ["run %s (%s, scope %s), started %s" % (run.run_id, run.status, run.scope_key, run.started_at),
             "hosts: %s" % ", ".join("%d %s" % (count, status) for status, count in sorted(by_status.items())),
             "findings (%d):" % len(findings)]
    lines += [finding_line(finding, first_seen, runs_open) for finding, _identity, first_seen, runs_open in findings]
    emit(args, data, lines)
    return EXIT_OK


def diff_findings(connection, run_a, run_b):
    """(new in b, cleared since a, persisting) between two runs, as lists of finding dicts."""
    before = {identity: finding for finding, identity, _first, _open in run_findings(connection, run_a.id)}
    after = {identity: finding for finding, identity, _first, _open in run_findings(connection, run_b.id)}
    new = [after[key] for key in after if key not in before]
    cleared = [before[key] for key in before if key not in after]
    persisting = [after[key] for key in after if key in before]
    return new, cleared, persisting


def diff_action(args, connection, _root):
    run_a, run_b = find_run(connection, args.run_a), find_run(connection, args.run_b)
    new, cleared, persisting = diff_findings(connection, run_a, run_b)
    data = {"from": run_a.run_id, "to": run_b.run_id, "new": new, "cleared": cleared, "persisting": persisting}
    lines = ["%s -> %s: %d new, %d cleared, %d persisting" % (
        run_a.run_id, run_b.run_id, len(new), len(cleared), len(persisting))]
    for label, findings in (("new", new), ("cleared", cleared)):
        if findings:
            lines.append("%s:" % label)
            lines += [finding_line(finding) for finding in findings]
    emit(args, data, lines)
    return EXIT_OK


# ----------------------------------------------------------------- baselines

def baseline_set_action(args, connection, _root):
    row = set_baseline(connection, args.run, args.group)
    emit(args, {"group": args.group, "run": row.run_id},
         ["baseline of %s: run %s (%s, started %s); later runs report drift from it" % (
             "the whole fleet" if args.group == WHOLE_FLEET else "group %s" % args.group, row.run_id, row.status,
             row.started_at)])
    return EXIT_OK


def baseline_show_action(args, connection, _root):
    if getattr(args, "markdown", False):
        sys.stdout.write(render_markdown(connection))
        return EXIT_OK
    rows = baselines(connection)
    data = {group: {"run": row.run_id, "run_started_at": row.started_at, "set_at": row.set_at}
            for group, row in rows.items()}
    lines = ["%-24s %-22s %s" % ("GROUP", "RUN", "SET AT (UTC)")]
    lines += ["%-24s %-22s %s" % (group, item["run"], item["set_at"]) for group, item in data.items()]
    emit(args, data, lines if data else ["no baseline set (gpufleet baseline set RUN|latest [--group G])"])
    return EXIT_OK


# ----------------------------------------------------------------- report

def report_action(args, connection, root):
    if getattr(args, "aggregate", None):
        return aggregate_action(args, root)
    if not args.run:
        raise StoreError("give RUN (or latest), or --aggregate RUN_GROUP")
    # here, not on top: the renderers load only for the command that writes reports (the gpufleet command starts
    # without them)
    from ansible_collections.gpufleet.core.plugins.plugin_utils.audit.rebuild import rebuild_reports
    output, paths = rebuild_reports(connection, args.run, args.output, root)
    emit(args, {"output": output, "files": paths},
         ["rebuilt the reports of run %s from the store: %s/ (%s)" % (
             args.run, output, ", ".join(os.path.basename(path) for path in paths))])
    return EXIT_OK


def aggregate_action(args, root):
    """The fleet report of a sliced run: every slice's hosts from the store, fleet rules and correlation."""
    # here, not on top: the rules and renderers load only for the command that runs them
    from ansible_collections.gpufleet.core.plugins.plugin_utils.audit.aggregate import run_aggregate
    url, _root = store_location(args)
    report, folder, paths = run_aggregate(url, args.aggregate, root, args.output)
    run = report["run"]
    slices = run["orchestration"]["aggregate"]["slices"]
    store_status = (report.get("store") or {}).get("status")
    emit(args, {"output": folder, "files": paths, "run": run["id"], "status": run["status"],
                "status_reason": run["status_reason"], "slices": slices, "summary": report["summary"],
                "store": report.get("store")},
         ["aggregated %d slice run(s) of run group %s into run %s (%s: %s): %s/ (%s)" % (
             len(slices), args.aggregate, run["id"], run["status"], run["status_reason"], folder,
             ", ".join(os.path.basename(path) for path in paths)),
          "findings: %d, causes: %d; store: %s" % (len(report["findings"]), len(report["causes"]), store_status)])
    return EXIT_OK


# ----------------------------------------------------------------- argparse

def on_run(parser, action):
    """The handler the console script calls with the parsed namespace (args.handler, also args.func)."""
    run = handler(action)
    parser.set_defaults(handler=run, func=run)


def add_common(parser):
    parser.add_argument("--json", action="store_true", help="print JSON instead of text")


def register(subparsers):
    """Adds runs, show, diff, baseline and report to the gpufleet command's subparsers."""
    parser = subparsers.add_parser("runs", help="list the runs in the store, newest first")
    parser.add_argument("--limit", type=int, default=50, help="at most this many runs (0: all)")
    add_common(parser)
    on_run(parser, runs_action)

    parser = subparsers.add_parser("show", help="one run: its hosts and findings, with first_seen")
    parser.add_argument("run", metavar="RUN", help="run id (the run folder's name), or latest")
    add_common(parser)
    on_run(parser, show_action)

    parser = subparsers.add_parser("diff", help="findings new, cleared and persisting from RUN_A to RUN_B")
    parser.add_argument("run_a", metavar="RUN_A")
    parser.add_argument("run_b", metavar="RUN_B")
    add_common(parser)
    on_run(parser, diff_action)

    baseline = subparsers.add_parser("baseline", help="the known-good run that later runs report drift from")
    actions = baseline.add_subparsers(dest="baseline_command", metavar="{set,show}")
    actions.required = True
    parser = actions.add_parser("set", help="make RUN (or latest) the baseline of the fleet or of one group")
    parser.add_argument("run", metavar="RUN|latest")
    parser.add_argument("--group", default=WHOLE_FLEET, help="inventory group (default: all, the whole fleet)")
    add_common(parser)
    on_run(parser, baseline_set_action)
    parser = actions.add_parser("show", help="the baselines that are set")
    parser.add_argument("--markdown", action="store_true",
                        help="the baseline template of each group (GPU models and counts, driver, CUDA, isolation)")
    add_common(parser)
    on_run(parser, baseline_show_action)

    parser = subparsers.add_parser("report", help="rebuild a run's reports (json, html, junit, prometheus) from the store")
    parser.add_argument("run", metavar="RUN", nargs="?", help="run id, or latest")
    parser.add_argument("--aggregate", metavar="RUN_GROUP",
                        help="instead of RUN: the fleet report of a sliced run, from every slice run of RUN_GROUP "
                             "(run.orchestration.run_group), recorded in the store as a new run")
    parser.add_argument("--output", help="folder for the reports (default: <report root>/rebuilt/<run>; with "
                                         "--aggregate <report root>/<time>-aggregate)")
    add_common(parser)
    on_run(parser, report_action)
    return subparsers
