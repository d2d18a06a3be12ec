# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Findings as data, the four layers, severities, and the registry of rules.

A finding is a plain dict (see make_finding). Every rule registers here with its id,
layer, default severity and remediation role, so reports can list the rules that ran.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import datetime

LAYERS = ("hardware", "driver", "scheduling", "workload")
SEVERITIES = ("critical", "warning", "info")
FIX_ROLES = ("worker_limits", "restart_policy", "gpu_settings", "mig_layout", "driver")

_RANK = {"critical": 3, "warning": 2, "info": 1}

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
    return _RANK.get(severity, 0)


def at_or_above(severity, threshold):
    return severity_rank(severity) >= severity_rank(threshold)


def worst_severity(severities, default="info"):
    worst = None
    for severity in severities:
        if worst is None or severity_rank(severity) > severity_rank(worst):
            worst = severity
    return worst or default


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


def declare_rule(rule_id, layer, severity, title, fix=None, scope="emitted", check=None):
    """Adds a rule id to the registry; returns its RuleInfo."""
    _check_declaration(rule_id, layer, severity, fix, scope)
    info = RuleInfo(rule_id, layer, severity, fix, title, scope, check)
    RULES[rule_id] = info
    return info


def rule(rule_id, layer, severity, title, fix=None, scope="host"):
    """Decorator: registers a check function under rule_id.

    scope "host": check(ctx) -> findings; scope "gpu": check(ctx, gpu) -> findings.
    """
    def register(check):
        declare_rule(rule_id, layer, severity, title, fix=fix, scope=scope, check=check)
        return check
    return register


def list_rules():
    """Every registered rule as dicts, in layer order then id."""
    order = {layer: position for position, layer in enumerate(LAYERS)}
    infos = sorted(RULES.values(), key=lambda info: (order[info.layer], info.id))
    return [info.as_dict() for info in infos]


_REGISTERED_FIX = object()


def gpu_label(gpu):
    """'GPU 3 (0000:3b:00.0, NVIDIA H100 80GB HBM3)' for summaries."""
    if gpu is None:
        return "host"
    return "GPU %s (%s, %s)" % (gpu.get("index"), gpu.get("pci_bus_id") or "bus id unknown", gpu.get("name") or "model unknown")


class Context:
    """What every rule reads: the host, its facts, the effective policy, the knowledge and the time.

    `plan` holds what diagnose prepared once per policy (compiled custom rules, the MIG config).
    """

    __slots__ = ("host", "facts", "policy", "knowledge", "now", "plan", "gpus", "thresholds", "_cache")

    def __init__(self, host, facts, policy, knowledge, now, plan=None):
        self.host = host
        self.facts = facts
        self.policy = policy
        self.knowledge = knowledge
        self.now = now
        self.plan = plan
        self.gpus = facts.get("gpus") or []
        self.thresholds = policy.get("thresholds") or {}
        self._cache = {}

    def cached(self, key, compute):
        """Derived values computed once per host (compute is called with the context)."""
        try:
            return self._cache[key]
        except KeyError:
            value = self._cache[key] = compute(self)
            return value

    def finding(self, rule_id, severity, gpu, summary, evidence, action, fix=_REGISTERED_FIX):
        """A finding of a registered rule; gpu is a gpu record, a bus id or None."""
        info = RULES[rule_id]
        if isinstance(gpu, dict):
            gpu = gpu.get("pci_bus_id")
        if fix is _REGISTERED_FIX:
            fix = info.fix
        return make_finding(rule_id, info.layer, severity or info.severity, self.host, gpu, summary, evidence, action, fix)


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
