# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What quarantine.yml does to each node, decided from an audit's findings, the nodes' service states and what
the scheduler says about each node now (docs/quarantine.md). Pure: no file, command or store is touched here.

    plan_quarantine(findings_by_host, audit_hosts, run_id, policies, nodes, service_states, groups, fleet)
      -> {"hosts": {host: decision}, "exit_status": 0|2|4, "summary": {...}}

A decision's "action" is one of ACTIONS:
  contain          take the node out (its trigger: the finding that asks for it)
  left_in_service  the node should go out but the circuit breaker refused (why: which limit)
  operator_out     out of service by someone else: kept as it is, with their reason
  repair           quarantined by gpufleet and its findings still ask for it: the next repair
  return           quarantined by gpufleet and its audit is clean: a candidate to go back
  hold             quarantined by gpufleet, clean, but not returned (the validation the policy asks for is missing)
  unverified       the audit could not read the node, or the scheduler could not be asked: nothing is decided
  in_service       nothing to do
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import fnmatch

from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.findings import severity_rank

ACTIONS = ("contain", "left_in_service", "operator_out", "repair", "return", "hold", "unverified", "in_service")
# ansible-playbook-like exit statuses quarantine.yml ends with (docs/quarantine.md, "Exit status")
EXIT_DONE, EXIT_BREAKER, EXIT_NOT_DONE = 0, 2, 4
# every reason gpufleet puts on a node starts with it: a drain with another reason is an operator's
REASON_PREFIX = "gpufleet:"
COLLECTION_RULE = "driver.collection_incomplete"
IGNORED_GROUPS = ("all", "ungrouped")
MAX_REASON = 200


# ---------------------------------------------------------------- triggers

def trigger_matches(trigger, finding):
    """Whether a finding matches one policy trigger ({"rule", "min_severity", "evidence"})."""
    if not fnmatch.fnmatchcase(finding.get("rule") or "", trigger.get("rule") or ""):
        return False
    minimum = trigger.get("min_severity")
    if minimum and severity_rank(finding.get("severity")) < severity_rank(minimum):
        return False
    evidence = finding.get("evidence") if isinstance(finding.get("evidence"), dict) else {}
    for key, allowed in (trigger.get("evidence") or {}).items():
        allowed = allowed if isinstance(allowed, list) else [allowed]
        if evidence.get(key) not in allowed:
            return False
    return True


def triggering_findings(findings, triggers):
    """The findings any trigger matches, worst first."""
    matched = [finding for finding in findings or () if any(trigger_matches(t, finding) for t in triggers or ())]
    return sorted(matched, key=lambda finding: (-severity_rank(finding.get("severity")), finding.get("rule") or ""))


def node_reason(finding, run_id):
    """The text put on a node (Slurm reason, condition message): "gpufleet: <rule> <summary> (run <id>)", one
    line of at most MAX_REASON characters, the run id always kept."""
    tail = " (run %s)" % run_id
    head = "%s %s %s" % (REASON_PREFIX, finding.get("rule"), " ".join(str(finding.get("summary") or "").split()))
    room = MAX_REASON - len(tail)
    if len(head) > room:
        head = head[:room - 3].rstrip() + "..."
    return head + tail


def is_own_reason(reason):
    return (reason or "").strip().startswith(REASON_PREFIX)


# ---------------------------------------------------------------- the circuit breaker

def allowed_out(total, max_out_pct, max_out):
    """How many of `total` nodes may be out at once (None: no limit). A share above 0 always allows one node:
    a single broken node is taken out even in a small group."""
    limits = []
    if max_out_pct is not None:
        limits.append(max(1, int(total * max_out_pct // 100)) if max_out_pct > 0 else 0)
    if max_out is not None:
        limits.append(max_out)
    return min(limits) if limits else None


def _limit_text(limit):
    parts = []
    if limit.get("max_out_pct") is not None:
        parts.append("%s%%" % _number(limit["max_out_pct"]))
    if limit.get("max_out") is not None:
        parts.append("%d nodes" % limit["max_out"])
    return " and ".join(parts)


def _number(value):
    return int(value) if float(value).is_integer() else value


def breaker_scopes(host, policy, groups, fleet):
    """[(name, members, limit)]: the fleet, then each inventory group of the host the policy's group limits apply to."""
    breaker = policy.get("breaker") or {}
    scopes = [("the fleet", sorted(fleet), breaker.get("fleet") or {})]
    chosen = breaker.get("groups") or []
    for name in sorted(groups):
        if name in IGNORED_GROUPS or host not in groups[name] or (chosen and name not in chosen):
            continue
        scopes.append(("group %s" % name, sorted(groups[name]), breaker.get("group") or {}))
    return scopes


def breaker_refusal(host, policy, groups, fleet, out):
    """Why the breaker keeps `host` in service with the nodes `out` already out (None: it may go out)."""
    for name, members, limit in breaker_scopes(host, policy, groups, fleet):
        allowed = allowed_out(len(members), limit.get("max_out_pct"), limit.get("max_out"))
        if allowed is None:
            continue
        count = len(out & set(members))
        if count + 1 > allowed:
            return "%s has %d of %d out, limit %s (%s node%s)" % (
                name, count, len(members), _limit_text(limit), allowed, "" if allowed == 1 else "s")
    return None


# ---------------------------------------------------------------- one host

def collection_gap(findings):
    """(status, summary) of the audit's collection_incomplete finding (partial or failed), or None."""
    for finding in findings:
        if finding.get("rule") == COLLECTION_RULE:
            return (finding.get("evidence") or {}).get("status") or "incomplete", finding.get("summary")
    return None


def unverified_reason(host, audit_hosts, findings, node, triggered):
    """Why nothing can be decided on this host, or None. A partial collection still backs the trigger findings it
    read (a GPU lost to nvidia-smi makes its report partial): such a host may be contained, never returned."""
    entry = audit_hosts.get(host)
    if entry is None:
        return "not in the audit"
    if entry.get("status") != "ok":
        message = ": %s" % entry["message"] if entry.get("message") else ""
        return "the audit could not read it (%s%s)" % (entry.get("status"), message)
    gap = collection_gap(findings)
    if gap and (gap[0] != "partial" or not triggered):
        return "its collection was %s: %s" % gap
    if node.get("refused"):
        return "not acted on: %s" % node["refused"]
    if not node.get("known"):
        return "the scheduler (%s) could not be asked about it%s" % (
            node.get("scheduler") or "unknown", ": %s" % node["error"] if node.get("error") else "")
    return None


def _is_ours(node, state):
    if node.get("out"):
        return is_own_reason(node.get("reason"))
    # no scheduler to ask (method services or none): the store's record is what is known
    return node.get("scheduler") in ("services", "none") and state.get("state") == "quarantined"


def _finding_brief(finding):
    return {"rule": finding.get("rule"), "severity": finding.get("severity"), "gpu": finding.get("gpu"),
            "summary": finding.get("summary")}


def _decide(host, policy, node, state, triggers, run_id):
    """The decision for a verified host, before the breaker."""
    decision = {"host": host, "scheduler": node.get("scheduler"), "node_reason": node.get("reason") or "",
                "busy": bool(node.get("busy")), "triggers": [_finding_brief(f) for f in triggers]}
    trigger = triggers[0] if triggers else None
    if _is_ours(node, state):
        decision.update(action="repair" if trigger else "return",
                        why=("still triggers: %s %s" % (trigger["rule"], trigger.get("summary")) if trigger
                             else "quarantined by gpufleet and the audit found nothing that triggers"),
                        failed_repairs=int(state.get("failed_repairs") or 0),
                        repairs=list(state.get("repairs") or []))
        return decision
    if node.get("out"):
        decision.update(action="operator_out", why="taken out of service outside gpufleet (reason: %s); kept as it is"
                        % (node.get("reason") or "none given"))
        return decision
    if trigger is None:
        decision.update(action="in_service", why="nothing triggers")
        return decision
    decision.update(action="contain", rule=trigger["rule"], finding=trigger.get("summary"),
                    reason=node_reason(trigger, run_id), why="%s: %s" % (trigger["rule"], trigger.get("summary")))
    return decision


# ---------------------------------------------------------------- the plan

def _out_now(decisions, nodes, service_states):
    out = {host for host, node in nodes.items() if node.get("out")}
    out |= {host for host, state in service_states.items()
            if state.get("state") in ("quarantined", "operator_out") and not (nodes.get(host) or {}).get("known")}
    out |= {host for host, decision in decisions.items() if decision["action"] in ("repair", "return", "hold", "operator_out")}
    return out


def _apply_breaker(decisions, policies_by_host, groups, fleet, out):
    candidates = [d for d in decisions.values() if d["action"] == "contain"]
    candidates.sort(key=lambda d: (-severity_rank(d["triggers"][0].get("severity")), d["host"]))
    for decision in candidates:
        refusal = breaker_refusal(decision["host"], policies_by_host[decision["host"]], groups, fleet, out)
        if refusal:
            decision.update(action="left_in_service", why="circuit breaker: %s; %s stays in service although %s"
                            % (refusal, decision["host"], decision["why"]), breaker=refusal)
        else:
            out.add(decision["host"])


def exit_status(decisions):
    actions = {decision["action"] for decision in decisions.values()}
    if "unverified" in actions:
        return EXIT_NOT_DONE
    if "left_in_service" in actions:
        return EXIT_BREAKER
    return EXIT_DONE


def plan_quarantine(findings_by_host, audit_hosts, run_id, policies_by_host, nodes, service_states=None,
                    groups=None, fleet=None):
    """The plan of one quarantine run.

    findings_by_host: {host: [finding]} of the audit; audit_hosts: {host: {"status", "message"}} (report.json's
    hosts); policies_by_host: {host: the effective policy's quarantine section}; nodes: {host: {"scheduler",
    "known", "out", "reason", "busy", "error"}} what the scheduler says now; service_states: {host: state} of the
    store (service_state.py); groups: {group: [hosts]} of the inventory; fleet: every host the breaker counts
    (default: the planned hosts)."""
    service_states = service_states or {}
    groups = groups or {}
    fleet = set(fleet or policies_by_host)
    decisions = {}
    for host in sorted(policies_by_host):
        findings = findings_by_host.get(host) or []
        node = nodes.get(host) or {"known": False}
        triggers = triggering_findings(findings, policies_by_host[host].get("triggers"))
        unverified = unverified_reason(host, audit_hosts, findings, node, bool(triggers))
        if unverified:
            decisions[host] = {"host": host, "scheduler": node.get("scheduler"), "action": "unverified",
                               "why": "nothing decided: %s" % unverified,
                               "triggers": [_finding_brief(finding) for finding in triggers]}
            continue
        decisions[host] = _decide(host, policies_by_host[host], node, service_states.get(host) or {}, triggers, run_id)
    out = _out_now(decisions, nodes, service_states)
    _apply_breaker(decisions, policies_by_host, groups, fleet, out)
    return {"run_id": run_id, "hosts": decisions, "exit_status": exit_status(decisions),
            "summary": summary(decisions), "out_after": sorted(out)}


def summary(decisions):
    """{action: [hosts]} for the actions some host has."""
    counts = {action: sorted(h for h, d in decisions.items() if d["action"] == action) for action in ACTIONS}
    return {action: hosts for action, hosts in counts.items() if hosts}
