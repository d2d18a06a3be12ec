# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Findings as data, the four layers, severities, and the registry of rules.

A finding is a plain dict (see make_finding). Every rule declares its id, layer, default severity
and remediation role once, here (@rule or declare_rule), so reports can list the rules that ran and
its findings take them from the declaration (Context.finding, RuleInfo.finding).
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import datetime
import functools

from ansible_collections.gpufleet.core.plugins.module_utils.vocabulary import (
    FIX_ROLES, LAYER_ORDER, LAYERS, SEVERITIES, SEVERITY_RANK)

# rule scopes: "host" rules are called once with the context, "gpu" rules once per GPU,
# "fleet" rules run in diagnose_fleet across hosts, "emitted" ids are produced by another rule.
SCOPES = ("host", "gpu", "fleet", "emitted")


def make_finding(rule, layer, severity, host, gpu, summary, evidence, action, fix=None):
    return {
        "rule": rule,
        "layer": layer,
        "severity": severity,
        "host": host,
        "gpu": gpu,
        "summary": summary,
        "evidence": evidence,
        "action": action,
        "fix": fix,
    }


def severity_rank(severity):
    """critical=3, warning=2, info=1; anything else 0."""
    return SEVERITY_RANK.get(severity, 0)


def at_or_above(severity, threshold):
    return severity_rank(severity) >= severity_rank(threshold)


def worst_severity(severities, default="info"):
    worst = None
    for severity in severities:
        if worst is None or severity_rank(severity) > severity_rank(worst):
            worst = severity
    return worst or default


DECLARED = object()  # fix=DECLARED: the role the rule declares


class RuleInfo:
    """What a report says about a rule: id, layer, default severity, fix role, one-line title."""

    __slots__ = ("id", "layer", "severity", "fix", "title", "scope", "check")

    def __init__(self, rule_id, layer, severity, fix, title, scope, check):
        self.id = rule_id
        self.layer = layer
        self.severity = severity
        self.fix = fix
        self.title = title
        self.scope = scope
        self.check = check

    def as_dict(self):
        return {"id": self.id, "layer": self.layer, "severity": self.severity, "fix": self.fix,
                "title": self.title, "scope": self.scope}

    def finding(self, host, gpu, summary, evidence, action, severity=None, fix=DECLARED):
        """A finding of this rule; severity None: the declared one; fix: the declared role unless given
        (None: no role); gpu is a gpu record, a bus id or None."""
        if isinstance(gpu, dict):
            gpu = gpu.get("pci_bus_id")
        return make_finding(self.id, self.layer, severity or self.severity, host, gpu, summary, evidence, action,
                            self.fix if fix is DECLARED else fix)


RULES = {}


def _check_declaration(rule_id, layer, severity, fix, scope):
    if layer not in LAYERS:
        raise ValueError("rule %s: layer %r is not one of %s" % (rule_id, layer, ", ".join(LAYERS)))
    if severity not in SEVERITIES:
        raise ValueError("rule %s: severity %r is not one of %s" % (rule_id, severity, ", ".join(SEVERITIES)))
    if fix is not None and fix not in FIX_ROLES:
        raise ValueError("rule %s: fix %r is not one of %s" % (rule_id, fix, ", ".join(FIX_ROLES)))
    if scope not in SCOPES:
        raise ValueError("rule %s: scope %r is not one of %s" % (rule_id, scope, ", ".join(SCOPES)))
    if rule_id.split(".", 1)[0] != layer:
        raise ValueError("rule %s: id must start with its layer %s" % (rule_id, layer))


def rule_declaration(rule_id, layer, severity, title, fix=None, scope="emitted", check=None):
    """A checked RuleInfo that is not registered (a rule of the run itself, not of the facts)."""
    _check_declaration(rule_id, layer, severity, fix, scope)
    return RuleInfo(rule_id, layer, severity, fix, title, scope, check)


def declare_rule(rule_id, layer, severity, title, fix=None, scope="emitted", check=None):
    """Adds a rule id to the registry; returns its RuleInfo."""
    info = RULES[rule_id] = rule_declaration(rule_id, layer, severity, title, fix, scope, check)
    return info


def rule(rule_id, layer, severity, title, fix=None, scope="host"):
    """Decorator: registers a check function under rule_id; the check's ctx.finding() emits this rule.

    scope "host": check(ctx) -> findings; scope "gpu": check(ctx, gpu) -> findings.
    """
    def register(check):
        info = declare_rule(rule_id, layer, severity, title, fix=fix, scope=scope)

        @functools.wraps(check)
        def run(ctx, *gpu):
            ctx.rule = info
            return check(ctx, *gpu)
        info.check = run
        return run
    return register


def list_rules():
    """Every registered rule as dicts, in layer order then id."""
    infos = sorted(RULES.values(), key=lambda info: (LAYER_ORDER[info.layer], info.id))
    return [info.as_dict() for info in infos]


def gpu_label(gpu):
    """'GPU 3 (0000:3b:00.0, NVIDIA H100 80GB HBM3)' for summaries."""
    if gpu is None:
        return "host"
    return "GPU %s (%s, %s)" % (gpu.get("index"), gpu.get("pci_bus_id") or "bus id unknown", gpu.get("name") or "model unknown")


class Context:
    """What every rule reads: the host, its facts, the effective policy, the knowledge and the time.

    `plan` holds what diagnose prepared once per policy (compiled custom rules, the MIG config).
    """

    __slots__ = ("host", "facts", "policy", "knowledge", "now", "plan", "gpus", "thresholds", "rule", "_cache")

    def __init__(self, host, facts, policy, knowledge, now, plan=None):
        self.host = host
        self.facts = facts
        self.policy = policy
        self.knowledge = knowledge
        self.now = now
        self.plan = plan
        self.gpus = facts.get("gpus") or []
        self.thresholds = policy.get("thresholds") or {}
        self.rule = None  # the RuleInfo of the check that runs (set by @rule)
        self._cache = {}

    def cached(self, key, compute):
        """Derived values computed once per host (compute is called with the context)."""
        try:
            return self._cache[key]
        except KeyError:
            value = self._cache[key] = compute(self)
            return value

    def finding(self, gpu, summary, evidence, action, severity=None, fix=DECLARED, rule=None):
        """A finding of the running check's rule (or of `rule`, a RuleInfo the check emits), on this host;
        severity, layer and fix come from the declaration unless given (see RuleInfo.finding)."""
        return (rule or self.rule).finding(self.host, gpu, summary, evidence, action, severity, fix)


def parse_time(value):
    """An ISO 8601 time (from facts) as an aware UTC datetime; None when it is not one."""
    if isinstance(value, datetime.datetime):
        moment = value
    elif isinstance(value, str) and len(value) >= 10 and value[4:5] == "-":
        try:
            moment = datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return None
    else:
        return None
    if moment.tzinfo is None:
        return moment.replace(tzinfo=datetime.timezone.utc)
    return moment.astimezone(datetime.timezone.utc)
