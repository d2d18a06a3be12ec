# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Custom rules from the policy: JMESPath expressions over the facts.

scope "host": the expression reads the host's facts (the gpu_facts document).
scope "gpu": it reads each gpus[] entry, with the whole host's facts under the key `host_facts`
(e.g. ``temperature.gpu_c > `80` && host_facts.driver.version == '550.54.15'``).
A result JMESPath counts as true (anything but null, false, "", [] and {}; the number 0 is true)
is a finding "custom.<name>" with the result as evidence. Expressions are compiled once per policy.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

try:
    import jmespath
    from jmespath.exceptions import JMESPathError
except ImportError:  # the controller needs it only for custom rules; validate_policy says so first
    jmespath = None
    JMESPathError = ValueError

from ansible_collections.gpufleet.core.plugins.plugin_utils.findings import gpu_label, make_finding

HOST_FACTS_KEY = "host_facts"
_COMPILED = {}
_MAX_COMPILED = 4096


class CustomRule:
    __slots__ = ("id", "name", "layer", "severity", "scope", "expression", "compiled", "summary", "action", "fix")

    def __init__(self, entry):
        self.name = entry["name"]
        self.id = "custom.%s" % entry["name"]
        self.layer = entry["layer"]
        self.severity = entry.get("severity") or "warning"
        self.scope = entry.get("scope") or "host"
        self.expression = entry["expression"]
        self.compiled = compile_expression(entry["expression"])
        self.summary = entry["summary"]
        self.action = entry["action"]
        self.fix = entry.get("fix")

    def as_dict(self):
        return {"id": self.id, "layer": self.layer, "severity": self.severity, "fix": self.fix,
                "title": self.summary, "scope": self.scope}


def compile_expression(expression):
    compiled = _COMPILED.get(expression)
    if compiled is None:
        if len(_COMPILED) >= _MAX_COMPILED:
            _COMPILED.clear()
        if jmespath is None:
            raise ValueError("custom rules need the Python package jmespath on the controller")
        compiled = _COMPILED[expression] = jmespath.compile(expression)
    return compiled


def compile_custom_rules(policy):
    """CustomRule objects for the policy's custom_rules (validated by validate_policy)."""
    return [CustomRule(entry) for entry in policy.get("custom_rules") or ()]


def is_truthy(value):
    """JMESPath truth: null, false, empty string, list and object are false; everything else (0 too) is true."""
    if value is None or value is False:
        return False
    if isinstance(value, (str, list, dict)):
        return len(value) > 0
    return True


def _summary(custom, host, gpu, result):
    text = custom.summary
    for key, value in (("{host}", host), ("{gpu}", gpu_label(gpu) if gpu else "host"), ("{result}", result)):
        text = text.replace(key, str(value))
    return text


def _finding(custom, host, gpu, result):
    return make_finding(custom.id, custom.layer, custom.severity, host, gpu.get("pci_bus_id") if gpu else None,
                        _summary(custom, host, gpu, result),
                        {"result": result, "expression": custom.expression, "scope": custom.scope},
                        custom.action, custom.fix)


def _failure(custom, host, error):
    return make_finding(custom.id, custom.layer, "info", host, None,
                        "Custom rule %s could not be evaluated: %s" % (custom.name, error),
                        {"expression": custom.expression, "error": str(error)},
                        "Fix the expression in the policy's custom_rules.", None)


def evaluate(custom, host, facts):
    """Findings of one custom rule on one host."""
    try:
        if custom.scope == "gpu":
            findings = []
            for gpu in facts.get("gpus") or ():
                document = dict(gpu)
                document[HOST_FACTS_KEY] = facts
                result = custom.compiled.search(document)
                if is_truthy(result):
                    findings.append(_finding(custom, host, gpu, result))
            return findings
        result = custom.compiled.search(facts)
        return [_finding(custom, host, None, result)] if is_truthy(result) else []
    except (JMESPathError, TypeError, ValueError) as error:
        return [_failure(custom, host, error)]


def run_custom_rules(customs, host, facts, scopes=("host", "gpu")):
    findings = []
    for custom in customs:
        if custom.scope in scopes:
            findings.extend(evaluate(custom, host, facts))
    return findings
