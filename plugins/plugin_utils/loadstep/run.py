# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The controller's end of loadstep.yml (the action gpufleet.core.loadstep_report calls run_report): each host's
run analysed and compared with its previous run, one line per host, and loadstep.json and loadstep.html written
into the run's folder (run_folder.py: <report root>/<UTC start time>-loadstep)."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import time

from ansible_collections.gpufleet.core.plugins.plugin_utils.loadstep import report
from ansible_collections.gpufleet.core.plugins.plugin_utils.collection_version import collection_version
from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.knowledge import load_knowledge
from ansible_collections.gpufleet.core.plugins.plugin_utils.reports.loadstep_html import render_loadstep_html
from ansible_collections.gpufleet.core.plugins.plugin_utils.run_folder import create_run_dir
from ansible_collections.gpufleet.core.plugins.plugin_utils.text_safety import safe_text


class IncompleteRun(ValueError):
    """A host's recorded run lacks what its analysis needs; the message says what."""


def _utc(epoch=None):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))


def host_run(host, recorded, report_root, run_dir):
    """One host's entry of loadstep.json from what the playbook recorded for it."""
    plan = recorded.get("plan") or {}
    if not recorded.get("measured") or plan.get("refusals"):
        entry = report.run_entry(host, plan.get("service"), plan.get("definition"), None, [],
                                 recorded.get("status") or "refused", recorded.get("restored"),
                                 recorded.get("started_at"), recorded.get("finished_at"), plan.get("mode"),
                                 plan.get("steps") or [])
        entry["refusals"] = plan.get("refusals") or []
        return entry
    policy = recorded["policy"]
    idle, steps = report.analyse_steps(recorded["measured"], plan["definition"], load_knowledge(policy["catalogs"]),
                                       policy["margin_c"], plan["mode"] == "service")
    entry = report.run_entry(host, plan["service"], plan["definition"], idle, steps, recorded.get("status"),
                             recorded.get("restored"), recorded.get("started_at"), recorded.get("finished_at"),
                             plan["mode"], plan["steps"])
    entry["refusals"] = []
    previous_dir, previous = report.find_previous(report_root, run_dir, host, plan["service"])
    if previous is not None:
        entry["comparison"] = report.compare_runs(previous, entry, previous_dir)
    return entry


def brief(entry):
    comparison = entry.get("comparison") or {}
    return {"status": entry["status"], "broke": entry["broke"], "held": entry["held"],
            "suggestion": entry["suggestion"], "comparison": comparison.get("verdict"),
            "refusals": entry.get("refusals") or []}


def summary_line(host, entry):
    if entry.get("refusals"):
        return "%s: refused: %s" % (host, "; ".join(entry["refusals"]))
    if entry["status"] == "planned":
        return "%s %s: planned only (check mode), %d steps" % (host, entry["service"], len(entry["planned_steps"]))
    broke, suggestion = entry["broke"], entry["suggestion"]
    text = "%s %s: %s" % (host, entry["service"], entry["status"])
    text += ("; broke at step %s (%s in flight): %s, layer %s" % (broke["step"], broke["concurrency"], broke["detail"],
                                                                  broke["layer"]) if broke else "; no step broke")
    if suggestion:
        text += "; suggested workers_per_gpu %s" % suggestion["workers_per_gpu"]
    if entry.get("comparison"):
        text += "; against the previous run: %s" % entry["comparison"]["verdict"]
    return text


def run_report(recorded, report_root, run_dir, started_at, check_mode=False):
    """(the task's result, one line per host) for {host: what the playbook recorded}; IncompleteRun for a recorded
    run that is incomplete, before anything is written. In check mode nothing is written; a run folder or file that
    cannot be written makes the result failed, with the lines still there."""
    try:
        entries = {host: host_run(host, value, report_root, run_dir) for host, value in sorted(recorded.items())}
    except (KeyError, TypeError, ValueError) as exc:
        raise IncompleteRun(str(exc))
    summary = "\n".join(safe_text(summary_line(host, entry)) for host, entry in entries.items())
    result = {"changed": False, "runs": {host: brief(entry) for host, entry in entries.items()}}
    if check_mode:
        return result, summary
    try:
        run_dir = create_run_dir(run_dir)
        document = report.build_document(list(entries.values()), run_dir, started_at, _utc(), collection_version())
        files = report.write_document(document, run_dir, render_loadstep_html)
    except (OSError, ValueError) as exc:
        result.update(failed=True, msg="loadstep_report: %s" % exc)
        return result, summary
    result.update(run_dir=run_dir, report_dir=run_dir, files=files, msg="loadstep reports in %s" % run_dir)
    return result, summary
