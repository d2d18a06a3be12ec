# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A quarantine run on the controller (quarantine.yml, docs/quarantine.md): the plan from the audit's report.json,
then the outcome of each host's steps, both in the run folder's quarantine.json.

    plan_step(args, check_mode)    -> {"run_dir", "plan", "hosts": {host: decision}, "exit_status", ...}
    report_step(args, check_mode)  -> {"host_verdicts": {host: {"verdict", "msg"}}, "exit_status", ...}
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import datetime
import json
import os

from ansible_collections.gpufleet.core.plugins.plugin_utils.quarantine.contain import commands, node_state
from ansible_collections.gpufleet.core.plugins.plugin_utils.quarantine.plan import (
    EXIT_BREAKER, EXIT_DONE, EXIT_NOT_DONE, plan_quarantine, summary)
from ansible_collections.gpufleet.core.plugins.plugin_utils.quarantine.repair_ladder import next_repair
from ansible_collections.gpufleet.core.plugins.plugin_utils.reports.format import expanded
from ansible_collections.gpufleet.core.plugins.plugin_utils.run_folder import (
    CHECK_MODE_SUFFIX, QUARANTINE_FILE, REPORT_MODE, new_run_dir, write_atomically)

FORMAT = 1
MODULES_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "modules")


def collection_has(module):
    """Whether this collection has the module (gpu_validate and rma_packet are written by other parts)."""
    return os.path.exists(os.path.join(MODULES_DIR, "%s.py" % module))


def utc_now():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def read_audit(run_dir):
    """(report, None) from <run_dir>/report.json, or (None, why it could not be read)."""
    path = os.path.join(run_dir or "", "report.json")
    try:
        with open(path) as handle:
            return expanded(json.load(handle)), None
    except (OSError, ValueError, TypeError, AttributeError) as exc:
        return None, "the audit's report %s could not be read: %s" % (path, exc)


def policies_by_host(hosts, host_policy, policies):
    """{host: its effective policy's quarantine section} for the hosts whose policy is known."""
    found = {}
    for host in hosts:
        policy = policies.get(host_policy.get(host)) if host_policy.get(host) is not None else None
        if isinstance(policy, dict) and isinstance(policy.get("quarantine"), dict):
            found[host] = policy["quarantine"]
    return found


def nodes_from_queries(queries, quarantine_policies):
    """{host: node state} from each host's registered scheduler queries ({"method", "names", "slurm", "kubectl"})."""
    nodes = {}
    for host, policy in quarantine_policies.items():
        query = queries.get(host)
        if not isinstance(query, dict):
            nodes[host] = {"known": False, "error": "the scheduler was not asked (the host left the play)"}
            continue
        if query.get("refused"):
            nodes[host] = {"known": False, "refused": query["refused"]}
            continue
        nodes[host] = node_state(policy["contain"]["method"], query.get("slurm"), query.get("kubectl"),
                                 query.get("names") or {}, policy["contain"])
    return nodes


def _no_plan(hosts, why):
    decisions = {host: {"host": host, "action": "unverified", "why": "nothing decided: %s" % why, "triggers": []}
                 for host in hosts}
    return {"run_id": None, "hosts": decisions, "exit_status": EXIT_NOT_DONE, "summary": {"unverified": sorted(hosts)},
            "out_after": []}


def build_plan(args):
    report, why = read_audit(args["audit_dir"])
    hosts = list(args["hosts"])
    quarantine_policies = policies_by_host(hosts, args.get("host_policy") or {}, args.get("policies") or {})
    if report is None:
        return _no_plan(hosts, why)
    missing = sorted(set(hosts) - set(quarantine_policies))
    plan = plan_quarantine(
        {host: entry.get("findings") or [] for host, entry in report.get("hosts", {}).items()},
        report.get("hosts") or {}, (report.get("run") or {}).get("id"), quarantine_policies,
        nodes_from_queries(args.get("queries") or {}, quarantine_policies), args.get("service_states") or {},
        args.get("groups") or {}, args.get("fleet") or hosts)
    add_commands(plan, quarantine_policies, args.get("queries") or {}, utc_now())
    for host, decision in plan["hosts"].items():
        decision["recorded_state"] = ((args.get("service_states") or {}).get(host) or {}).get("state")
    plan["summary"] = summary(plan["hosts"])
    for host in missing:
        plan["hosts"][host] = {"host": host, "action": "unverified", "triggers": [],
                               "why": "nothing decided: its policy is unknown (the policy check failed)"}
        plan["exit_status"] = EXIT_NOT_DONE
    return plan


def add_commands(plan, quarantine_policies, queries, now):
    """Each decision's scheduler commands (contain, return) and the services a bare host stops and starts."""
    for host, decision in plan["hosts"].items():
        if decision["action"] == "unverified" or host not in quarantine_policies:
            continue
        contain = quarantine_policies[host]["contain"]
        decision["commands"] = commands(decision, contain, (queries.get(host) or {}).get("names") or {}, now)
        decision["services"] = list(contain.get("services") or []) if decision.get("scheduler") == "services" else []
        if decision["action"] == "repair":
            repairs = quarantine_policies[host]["repairs"]
            decision["next_repair"] = next_repair(decision.get("repairs"), repairs["steps"],
                                                  repairs["max_failed_repairs"])
        if decision["action"] == "return":
            decision["validation"] = validation_for(quarantine_policies[host]["return"]["require_validation"])
            if decision["validation"] == "unavailable":
                decision.update(action="hold", why="not returned: the policy requires validation "
                                "(quarantine.return.require_validation) and gpu_validate is not available")


def validation_for(required):
    """run: validate before the return; skip: a clean audit is enough; unavailable: required, and no gpu_validate."""
    if required is False:
        return "skip"
    if collection_has("gpu_validate"):
        return "run"
    return "unavailable" if required is True else "skip"


def host_values(hostvars, hosts, name):
    """{host: the host variable `name`} for the hosts that have it, read without templating it again."""
    values = {}
    for host in hosts:
        variables = hostvars.raw_get(host) if hasattr(hostvars, "raw_get") else hostvars.get(host) or {}
        if name in variables:
            values[host] = variables[name]
    return values


def write_document(path, document):
    write_atomically(path, json.dumps(document, indent=1, sort_keys=True) + "\n", mode=REPORT_MODE)


def plan_step(args, check_mode):
    """Plans the run and writes quarantine.json in a new run folder of kind quarantine (-check in check mode)."""
    plan = build_plan(args)
    run_dir = new_run_dir(args["report_root"], "quarantine", suffix=CHECK_MODE_SUFFIX if check_mode else "")
    document = {"format": FORMAT, "kind": "quarantine", "check_mode": bool(check_mode), "started_at": utc_now(),
                "audit_dir": args["audit_dir"], "audit_run": plan["run_id"], "plan": plan, "outcomes": {},
                "exit_status": plan["exit_status"]}
    write_document(os.path.join(run_dir, QUARANTINE_FILE), document)
    return {"run_dir": run_dir, "audit_run": plan["run_id"], "hosts": plan["hosts"], "summary": plan["summary"],
            "exit_status": plan["exit_status"], "rma_packet": collection_has("rma_packet")}


# ---------------------------------------------------------------- the outcome

def host_verdict(decision, outcome):
    """(verdict for audit_verdict, message): not_audited (exit 4) when the host could not be decided on or a step
    failed, fail (exit 2) when the breaker left it in service, else ok."""
    action = (decision or {}).get("action", "unverified")
    why = (decision or {}).get("why") or ""
    if outcome.get("failed"):
        return "not_audited", "%s: %s failed: %s" % (action, outcome.get("step") or "a step", outcome.get("msg") or "")
    if action == "unverified":
        return "not_audited", why
    if action == "left_in_service":
        return "fail", why
    return "ok", "%s: %s%s" % (action, why, "; %s" % outcome["msg"] if outcome.get("msg") else "")


def final_exit_status(verdicts):
    kinds = {verdict for verdict, _msg in verdicts.values()}
    if "not_audited" in kinds:
        return EXIT_NOT_DONE
    if "fail" in kinds:
        return EXIT_BREAKER
    return EXIT_DONE


def _event(host, decision, kind, **fields):
    event = {"host": host, "event": kind, "scheduler": decision.get("scheduler") or "none"}
    event.update((key, value) for key, value in fields.items() if value)
    return event


def service_events(decisions, outcomes):
    """The service events of this run for gpufleet.core.service_state: what was done, not what was planned; an
    operator's node once, when the store does not know it out yet."""
    events = []
    for host in sorted(decisions):
        decision, outcome = decisions[host], outcomes.get(host) or {}
        action = decision.get("action")
        if outcome.get("failed"):
            continue
        if action == "contain":
            events.append(_event(host, decision, "quarantined", rule=decision.get("rule"),
                                 finding=decision.get("finding"), reason=decision.get("reason")))
        elif action == "left_in_service":
            trigger = (decision.get("triggers") or [{}])[0]
            events.append(_event(host, decision, "left_in_service", rule=trigger.get("rule"),
                                 finding=trigger.get("summary"), reason=decision.get("breaker")))
        elif action == "operator_out" and decision.get("recorded_state") != "operator_out":
            events.append(_event(host, decision, "operator_out", reason=decision.get("node_reason")))
        elif action in ("repair", "hold"):
            trigger = (decision.get("triggers") or [{}])[0]
            events.append(_event(host, decision, "kept_out", rule=trigger.get("rule"), finding=trigger.get("summary"),
                                 reason=decision.get("node_reason")))
            events.extend(dict(_event(host, decision, "repair"), **repair) for repair in outcome.get("repairs") or [])
        elif action == "return" and outcome.get("step") == "return":
            events.append(_event(host, decision, "returned", detail=outcome.get("msg")))
        elif action == "return":
            events.append(_event(host, decision, "kept_out", reason=decision.get("node_reason"),
                                 detail=outcome.get("msg")))
    return events


def report_step(args, check_mode):
    """Adds each host's outcome to quarantine.json and gives each host its verdict."""
    path = os.path.join(args["run_dir"], QUARANTINE_FILE)
    with open(path) as handle:
        document = json.load(handle)
    decisions = document["plan"]["hosts"]
    outcomes = {host: dict(outcome) for host, outcome in (args.get("outcomes") or {}).items()
                if isinstance(outcome, dict)}
    verdicts = {host: host_verdict(decisions.get(host), outcomes.get(host) or {})
                for host in sorted(set(decisions) | set(outcomes))}
    document.update(outcomes=outcomes, finished_at=utc_now(), exit_status=final_exit_status(verdicts))
    write_document(path, document)
    return {"host_verdicts": {host: {"verdict": verdict, "msg": msg} for host, (verdict, msg) in verdicts.items()},
            "exit_status": document["exit_status"], "path": path, "events": service_events(decisions, outcomes),
            "run_id": os.path.basename(os.path.normpath(args["run_dir"]))}
