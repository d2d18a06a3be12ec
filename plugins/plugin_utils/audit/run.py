# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The controller's part of one audit: facts files, diagnosis, correlation, the four reports, the run's
status (complete, partial, failed) and each host's verdict, which the playbook turns into its exit status."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import contextlib
import datetime
import gc
import json
import os
import signal
import threading

from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.active_checks import validation_summary
from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.correlate import correlate
from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.diagnose import FleetDiagnosis, rules_run
from ansible_collections.gpufleet.core.plugins.module_utils.vocabulary import (
    DEFAULT_FAIL_SEVERITY, FAIL_SEVERITIES, NO_FAILURE)
from ansible_collections.gpufleet.core.plugins.plugin_utils.collection_version import VERSION
from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.findings import rule_declaration, severity_rank
from ansible_collections.gpufleet.core.plugins.plugin_utils.audit.record_step import ReportInputs, build_and_record
from ansible_collections.gpufleet.core.plugins.plugin_utils.audit.host_step import (
    DIAGNOSIS_KEY, accepted_diagnosis, host_step, policy_digest, write_facts)
from ansible_collections.gpufleet.core.plugins.plugin_utils.audit.host_summary import collection_status, result_facts
from ansible_collections.gpufleet.core.plugins.plugin_utils.store.extract import STORE_EXTRACT_KEY, counters_extract
from ansible_collections.gpufleet.core.plugins.plugin_utils.store.record import finish_run
from ansible_collections.gpufleet.core.plugins.plugin_utils.run_folder import (
    FACTS_FILE_KEY, FACTS_MODE, facts_file_names, file_mode, write_atomically)
from ansible_collections.gpufleet.core.plugins.plugin_utils.reports.prometheus import gpu_inventory
from ansible_collections.gpufleet.core.plugins.plugin_utils.reports.model import fails_at
from ansible_collections.gpufleet.core.plugins.plugin_utils.reports.writer import write_reports

TOOL_VERSION = VERSION
# a rule of the run, not of the facts: listed in rules_run only when the policy accepts unreachable hosts
UNREACHABLE = rule_declaration("hardware.host_unreachable", "hardware", "warning",
                               "A host the policy accepts as unreachable (report.accept_unreachable)")
UNREACHABLE_RULE = UNREACHABLE.id
# what each host's verdict means for the playbook (playbooks/tasks/audit.yml, gpufleet.core.audit_verdict)
VERDICT_OK = "ok"
VERDICT_FAIL = "fail"
VERDICT_NOT_AUDITED = "not_audited"


def utc_now():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def prewritten_facts_file(result, facts_dir):
    """The facts file the worker already wrote for this host (the result's gpufleet_facts_file, relative to
    the run folder, e.g. "facts/gpu-01.json"), or None: absent, not a plain relative path inside facts/, or
    not there, in which case run_audit writes the file itself."""
    relative = result.get(FACTS_FILE_KEY)
    if not isinstance(relative, str) or not relative.startswith("facts/") or "\\" in relative:
        return None
    name = relative[len("facts/"):]
    if not name or "/" in name or name.startswith(".") or not os.path.isfile(os.path.join(facts_dir, name)):
        return None
    return relative


def worker_extract(result, entry):
    """The store extract (store/extract.py) the worker made of the host's facts file, or None: there is one only
    where the worker wrote the facts file the host's status names, from that file's text."""
    if entry["facts_file"] and STORE_EXTRACT_KEY in (result or {}) and result.get(FACTS_FILE_KEY) == entry["facts_file"]:
        return result[STORE_EXTRACT_KEY]
    return None


def read_facts_file(path):
    with open(path, encoding="utf-8") as stream:
        facts = json.load(stream)
    if not isinstance(facts, dict):
        raise ValueError("not a JSON object")
    return facts


def host_status(host, result, facts_dir, file_name=None, facts_mode=None, read=True):
    """(status record for the report, facts or None); writes the host's facts file as
    facts/<file_name>.json (file_name from report_writer.facts_file_names; the host name by default) with
    facts_mode (report_writer.file_mode(FACTS_MODE), read once per run; by default read here), unless the
    result names one already written (gpufleet_facts_file, by the gpu_facts action in the worker), in which
    case the facts come from that file when the result does not hold them (keep_facts=false) and read is true."""
    status = collection_status(result)
    if status != "ok":
        message = " ".join(str((result or {}).get("msg") or "no result from the host").split())
        return {"status": status, "facts_file": None, "message": message}, None
    facts = result_facts(result)
    written = prewritten_facts_file(result, facts_dir)
    if facts is None and (read or written is None):
        named = result.get(FACTS_FILE_KEY)
        try:
            if written is None:
                raise OSError("no such file in the run folder")
            facts = read_facts_file(os.path.join(facts_dir, written[len("facts/"):]))
        except (OSError, ValueError) as exc:
            return {"status": "failed", "facts_file": None, "message": " ".join((
                "the facts file the collection wrote (%s) could not be read: %s" % (named, exc)).split())}, None
    if written is not None:
        return {"status": "ok", "facts_file": written, "message": None}, facts
    try:
        written, _extract = write_facts(facts_dir, file_name or facts_file_names([host])[host], facts, facts_mode)
    except ValueError as exc:  # NaN or Infinity, which a facts file (strict JSON) cannot hold
        return {"status": "failed", "facts_file": None,
                "message": "the host's facts cannot be written as JSON: %s" % exc}, None
    return {"status": "ok", "facts_file": written, "message": None}, facts


def worker_diagnoses(results, host_policies):
    """{host: (findings, fleet view, summary line)} of the hosts whose worker diagnosed them with the policy they
    have in this run (plugin_utils/audit/host_step.py), read from the diagnosis's text: the report's own objects."""
    digests, accepted = {}, {}
    for host, result in results.items():
        policy = host_policies.get(host)
        if policy is None or collection_status(result) != "ok" or DIAGNOSIS_KEY not in result:
            continue
        if id(policy) not in digests:
            digests[id(policy)] = policy_digest(policy)
        diagnosis = accepted_diagnosis(result, digests[id(policy)])
        if diagnosis is not None:
            accepted[host] = diagnosis
    return accepted


def unreachable_finding(host, entry):
    return UNREACHABLE.finding(
        host, None,
        "%s could not be reached; its GPUs were not audited (the policy accepts unreachable hosts)" % host,
        {"message": entry.get("message")},
        "Check that the host is up and reachable over its connection (ssh, network, credentials), then audit again.")


def accepted_unreachable(statuses, host_policies):
    """Hosts that were unreachable where their policy says report.accept_unreachable."""
    return [host for host, entry in statuses.items() if entry["status"] == "unreachable"
            and (host_policies.get(host) or {}).get("report", {}).get("accept_unreachable")]


def run_scope(targeted, in_scope, pattern=None, limit=None):
    """What the run covered. in_scope: every inventory host of the audit's pattern, without --limit
    (None: the targeted hosts are the whole scope)."""
    in_scope = set(targeted) if in_scope is None else set(in_scope)
    not_targeted = sorted(in_scope - set(targeted))
    return {
        "pattern": pattern,
        "limit": limit,
        "hosts_in_pattern": len(in_scope | set(targeted)),
        "hosts_targeted": len(targeted),
        "hosts_not_targeted": len(not_targeted),
    }


def run_status(statuses, scope, accepted=()):
    """(status, reason). failed: no host's facts were read; partial: the run targeted only part of its
    pattern's hosts (--limit); complete: every host of the pattern was targeted."""
    read = [host for host, entry in statuses.items() if entry["status"] == "ok"]
    if not statuses:
        return "failed", "no host was targeted"
    if not read:
        return "failed", "no host's facts could be read (%d unreachable or failed, %d of them accepted)" % (
            len(statuses), len(accepted))
    if scope["hosts_not_targeted"]:
        return "partial", "%d of the pattern's %d hosts were not targeted (--limit %s)" % (
            scope["hosts_not_targeted"], scope["hosts_in_pattern"], scope.get("limit") or "or a subset")
    return "complete", "every host of the pattern was targeted"


def host_verdicts(report, accepted, not_converged=(), not_acted=()):
    """{host: {"verdict": ok | fail | not_audited, "msg": why}} for the playbook's per-host verdict task.

    not_audited: unreachable (not accepted by its policy) or its collection failed; fail: a finding at or
    above the fail severity, or (after a remediation) not converged, or not acted on (the remediation refused
    the host: remediation.json not_acted)."""
    # run.fail_severity keeps 'none' (summary.fail_severity names a real severity for the renderers)
    threshold = report["run"]["fail_severity"]
    verdicts = {}
    for host, entry in report["hosts"].items():
        if entry["status"] != "ok" and host not in accepted:
            verdicts[host] = {"verdict": VERDICT_NOT_AUDITED, "msg": "not audited: %s: %s" % (
                entry["status"], entry.get("message") or "no result from the host")}
            continue
        failing = [f for f in entry["findings"] if fails_at(f["severity"], threshold)]
        if failing:
            verdicts[host] = {"verdict": VERDICT_FAIL, "msg": "%d finding(s) at or above %s: %s" % (
                len(failing), threshold, ", ".join(sorted({f["rule"] for f in failing})))}
        elif host in not_converged:
            verdicts[host] = {"verdict": VERDICT_FAIL, "msg": "not converged by the remediation"}
        elif host in not_acted:
            verdicts[host] = {"verdict": VERDICT_FAIL, "msg": "not acted on: the remediation refused this host "
                                                              "(its message above says why and how to proceed)"}
        else:
            verdicts[host] = {"verdict": VERDICT_OK, "msg": "audited"}
    for host in not_converged:
        if verdicts.get(host, {}).get("verdict") == VERDICT_OK:
            verdicts[host] = {"verdict": VERDICT_FAIL, "msg": "not converged by the remediation"}
    return verdicts


def strictest_fail_severity(policies):
    """The lowest report.fail_severity of the policies in play ('none' only when all say so)."""
    chosen = [policy["report"]["fail_severity"] for policy in policies]
    failing = [severity for severity in chosen if severity != NO_FAILURE]
    if not failing:
        return NO_FAILURE if chosen else DEFAULT_FAIL_SEVERITY
    return min(failing, key=severity_rank)


class Terminated(BaseException):
    """SIGTERM or SIGINT while the run writes its store row and its files (signals_unwind)."""


@contextlib.contextmanager
def signals_unwind(signals=(signal.SIGTERM, signal.SIGINT)):
    """While the run writes its store row and its files, SIGTERM and SIGINT raise Terminated where the process
    stands instead of ending it there (ansible-playbook's worker exits at once), so the store's transaction rolls
    back and no temporary file stays; then the signal is delivered again to the handlers it had. Outside the main
    thread (where Python cannot set handlers) nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received = []

    def unwind(signum, _frame):
        received.append(signum)
        raise Terminated(signum)
    previous = {signum: signal.signal(signum, unwind) for signum in signals}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        if received:
            os.kill(os.getpid(), received[0])


@contextlib.contextmanager
def collector_paused():
    """Python's cyclic garbage collector off for the duration (on again afterwards if it was on).

    run_audit allocates hundreds of thousands of findings, strings and dicts; every so many allocations the
    collector walks the whole heap, the fleet's facts included, so its cost grew faster than the fleet
    (bench/README.md, section 4). Nothing run_audit builds is a reference cycle that needs it: reference
    counting frees what the run drops, and the collector catches up once it is back on."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def run_audit(results, host_policies, run_dir, report_root, started_at, fail_severity=None, scope=None, store=None,
              orchestration=None, counts=None, compress=False):
    """results: {host: registered gpu_facts result}; host_policies: {host: effective policy};
    scope: {"hosts": every host of the audit's pattern without --limit, "pattern", "limit"} (optional:
    without it the targeted hosts are the whole scope); store: store.record.StoreSettings (None: no store,
    and the report has no "store" and "changes" sections); orchestration: the AWX job or slice the run is
    part of (plugin_utils/orchestration.py), recorded as run.orchestration. A registered result that holds
    gpufleet_facts_file has its facts file written already (host_status); one that holds gpufleet_diagnosis made
    with the host's policy is not diagnosed again (plugin_utils/audit/host_step.py). counts: a dict that gets
    "diagnosed_in_workers", how many hosts were. compress: also write report.json.gz (writer.write_reports).

    Returns (report, written paths, per-host summary lines).
    """
    with collector_paused():
        return _run_audit(results, host_policies, run_dir, report_root, started_at, fail_severity, scope, store,
                          orchestration, counts if counts is not None else {}, compress)


def _run_audit(results, host_policies, run_dir, report_root, started_at, fail_severity, scope, store,
               orchestration, counts, compress):
    facts_dir = os.path.join(run_dir, "facts")
    os.makedirs(facts_dir, exist_ok=True)
    file_names = facts_file_names(sorted(results))
    facts_mode = file_mode(FACTS_MODE)
    diagnosis = FleetDiagnosis(host_policies)
    diagnosed = worker_diagnoses(results, host_policies)
    counts["diagnosed_in_workers"] = len(diagnosed)
    # Host by host: a host its worker diagnosed brings its findings, fleet view and line; any other host's facts
    # (from its result, else from the facts file its worker wrote) are diagnosed here, give its line and what the
    # store keeps, and are dropped. The fleet-wide steps after the loop read the fleet views.
    statuses, views, findings, lines, extracts = {}, {}, {}, [], {}
    for host in sorted(results):
        result = results[host]
        read = host not in diagnosed or (store is not None and STORE_EXTRACT_KEY not in result)
        statuses[host], facts = host_status(host, result, facts_dir, file_names[host], facts_mode, read)
        if statuses[host]["status"] == "ok" and host in diagnosed:
            findings[host], views[host], line = diagnosed[host]
            lines.append(line)
        else:
            if facts is None and collection_status(result) == "ok":  # its facts file could not be read
                result = {"failed": True, "msg": statuses[host]["message"]}
            step = host_step(host, result, facts, diagnosis.host)
            findings[host], views[host] = step.findings, step.view
            if step.failure is not None:
                statuses[host], facts = {"status": "failed", "facts_file": None, "message": step.failure}, None
            lines.append(step.line)
        if store is not None and statuses[host]["status"] == "ok":
            extracts[host] = worker_extract(result, statuses[host]) or counters_extract(facts)
        del facts
    for host, status in statuses.items():
        view = (views.get(host) or {}) if status["status"] == "ok" else {}
        if view.get("coverage") is not None:
            status["inputs"] = view["coverage"]
        if validation_summary(view) is not None:
            status["validation"] = validation_summary(view)
    accepted = accepted_unreachable(statuses, host_policies)

    diagnosis.fleet(views, findings)
    for host in accepted:
        findings.setdefault(host, []).append(unreachable_finding(host, statuses[host]))
    causes = correlate(views, findings, host_policies)
    distinct = list({id(policy): policy for policy in host_policies.values()}.values())
    if fail_severity is None:
        fail_severity = strictest_fail_severity(distinct)
    if fail_severity not in FAIL_SEVERITIES:
        raise ValueError("fail_severity must be one of %s, not %r" % (", ".join(FAIL_SEVERITIES), fail_severity))
    run = {
        "id": os.path.basename(os.path.normpath(run_dir)),
        "started_at": started_at,
        "finished_at": utc_now(),
        "tool_version": TOOL_VERSION,
        "fail_severity": fail_severity,
        "policy_errors": [],
        "rules_run": rules_run(distinct) + ([UNREACHABLE_RULE] if accepted else []),
    }
    scope = scope or {}
    run["scope"] = run_scope(sorted(results), scope.get("hosts"), scope.get("pattern"), scope.get("limit"))
    run["status"], run["status_reason"] = run_status(statuses, run["scope"], accepted)
    run["orchestration"] = orchestration
    with signals_unwind():
        report = build_and_record(store, ReportInputs(run, statuses, findings, causes), views, host_policies,
                                  run_dir=run_dir, extracts=extracts, reports_pending=True)
        write_atomically(os.path.join(run_dir, "hosts.txt"), "\n".join(lines) + "\n")
        paths = write_reports(report, run_dir, report_root, gpu_inventory(views), compress=compress)
        finish_run(store, report)
    return report, paths, lines
