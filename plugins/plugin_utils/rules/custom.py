# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Custom rules from the policy: JMESPath expressions over the facts.

scope "host": the expression reads the host's facts (the gpu_facts document).
scope "gpu": it reads each gpus[] entry, with the whole host's facts under the key `host_facts`
(e.g. ``temperature.gpu_c > `80` && host_facts.driver.version == '550.54.15'``).
A result JMESPath counts as true (anything but null, false, "", [] and {}; the number 0 is true)
is a finding "custom.<name>" with the result as evidence. Expressions are compiled once per policy.

Bounded: an expression has at most MAX_EXPRESSION_LENGTH characters, brackets nested at most MAX_NESTING
deep and a syntax tree at most MAX_TREE_DEPTH deep (expression_problem, checked when the policy is
validated). Its evaluation on one host (or one GPU) has a budget of MAX_WORK units: one per node visited,
one per element a flatten builds or a visit returns, and the size of every function argument (so a
to_string or join over values that multi-selects and flattens doubled, step after step, is charged
for what it would build). A rule past the budget, or running past MAX_SECONDS, stops with an info
finding that names the rule, like any other expression that cannot be evaluated.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import time

try:
    import jmespath
    from jmespath.exceptions import JMESPathError
    from jmespath.visitor import TreeInterpreter
except ImportError:  # the controller needs it only for custom rules; validate_policy says so first
    jmespath = None
    JMESPathError = ValueError
    TreeInterpreter = object

from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.findings import gpu_label, make_finding

HOST_FACTS_KEY = "host_facts"
_COMPILED = {}
_MAX_COMPILED = 4096

MAX_EXPRESSION_LENGTH = 2000
MAX_NESTING = 32
MAX_TREE_DEPTH = 64
MAX_WORK = 200000
MAX_SECONDS = 1.0
_CLOCK_EVERY = 256
_OPENING, _CLOSING = "([{", ")]}"


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
        problem = size_problem(expression)
        if problem:
            raise ValueError(problem)
        compiled = jmespath.compile(expression)
        problem = tree_problem(compiled)
        if problem:
            raise ValueError(problem)
        _COMPILED[expression] = compiled
    return compiled


# ---------------------------------------------------------------- bounds

def bracket_depth(expression):
    """Deepest nesting of (), [] and {} outside string literals ('...', `...`, "...")."""
    depth = deepest = 0
    quote = None
    escaped = False
    for character in expression:
        if quote:
            if escaped:
                escaped = False
            elif character == "\\":
                escaped = True
            elif character == quote:
                quote = None
        elif character in "'`\"":
            quote = character
        elif character in _OPENING:
            depth += 1
            deepest = max(deepest, depth)
        elif character in _CLOSING:
            depth -= 1
    return deepest


def size_problem(expression):
    """Why an expression is too big to compile safely (the parser recurses per nesting level), or None."""
    if len(expression) > MAX_EXPRESSION_LENGTH:
        return "the expression has %d characters, more than %d" % (len(expression), MAX_EXPRESSION_LENGTH)
    if bracket_depth(expression) > MAX_NESTING:
        return "the expression nests brackets deeper than %d levels" % MAX_NESTING
    return None


def tree_depth(node):
    deepest, pending = 0, [(node, 1)]
    while pending:
        current, depth = pending.pop()
        deepest = max(deepest, depth)
        pending.extend((child, depth + 1) for child in current.get("children") or () if isinstance(child, dict))
    return deepest


def tree_problem(compiled):
    """Why a compiled expression is too deep to evaluate (evaluation recurses per level), or None."""
    depth = tree_depth(compiled.parsed)
    if depth > MAX_TREE_DEPTH:
        return "the expression is %d operations deep, more than %d" % (depth, MAX_TREE_DEPTH)
    return None


def expression_problem(expression):
    """Why an expression cannot be a custom rule's (too long, too deep, or not JMESPath), or None.
    Used by the policy's validation, so that a bad rule stops the audit before any host is contacted."""
    problem = size_problem(expression)
    if problem:
        return problem
    try:
        compiled = jmespath.compile(expression)
    except RecursionError:
        return "the expression nests deeper than the parser can follow"
    except JMESPathError:
        return None  # the policy describes syntax errors itself
    return tree_problem(compiled)


class WorkLimitExceeded(ValueError):
    """An evaluation past its budget of work or time."""


class BudgetedInterpreter(TreeInterpreter):  # pylint: disable=too-few-public-methods
    """jmespath's TreeInterpreter, counting the work it does and stopping past a budget (see the module doc)."""

    def __init__(self, max_work=MAX_WORK, max_seconds=MAX_SECONDS):
        super(BudgetedInterpreter, self).__init__()
        self.left = max_work
        self.max_work = max_work
        self.deadline = time.monotonic() + max_seconds
        self.max_seconds = max_seconds
        self.visits = 0

    def charge(self, units):
        self.left -= units
        if self.left < 0:
            raise WorkLimitExceeded("stopped after %d units of work (the limit): the expression builds more "
                                    "than a rule needs" % self.max_work)

    def visit(self, node, *args, **kwargs):
        self.visits += 1
        if self.visits % _CLOCK_EVERY == 0 and time.monotonic() > self.deadline:
            raise WorkLimitExceeded("stopped after %.1f s (the limit)" % self.max_seconds)
        self.charge(1)
        result = super(BudgetedInterpreter, self).visit(node, *args, **kwargs)
        if isinstance(result, (list, dict)):
            self.charge(len(result))
        elif isinstance(result, str):
            self.charge(len(result) // 16)
        return result

    def visit_flatten(self, node, value):
        """As TreeInterpreter's, charged for the list it builds before building it."""
        base = self.visit(node["children"][0], value)
        if not isinstance(base, list):
            return None
        self.charge(sum(len(element) if isinstance(element, list) else 1 for element in base))
        merged = []
        for element in base:
            if isinstance(element, list):
                merged.extend(element)
            else:
                merged.append(element)
        return merged

    def visit_function_expression(self, node, value):
        arguments = [self.visit(child, value) for child in node["children"]]
        for argument in arguments:
            self.charge(_expanded_size(argument, self.left + 1))
        return self._functions.call_function(node["value"], arguments)


def _expanded_size(value, limit):
    """Values in value (strings count one per 16 characters), shared references counted each time; stops
    counting once past limit."""
    total, pending = 0, [value]
    while pending and total <= limit:
        current = pending.pop()
        if isinstance(current, dict):
            total += 1 + len(current)
            pending.extend(current.values())
        elif isinstance(current, list):
            total += 1 + len(current)
            pending.extend(current)
        elif isinstance(current, str):
            total += 1 + len(current) // 16
        else:
            total += 1
    return total


def search(compiled, document, max_work=MAX_WORK, max_seconds=MAX_SECONDS):
    """compiled.search(document) within a budget; WorkLimitExceeded past it."""
    return BudgetedInterpreter(max_work, max_seconds).visit(compiled.parsed, document)


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
                result = search(custom.compiled, document)
                if is_truthy(result):
                    findings.append(_finding(custom, host, gpu, result))
            return findings
        result = search(custom.compiled, facts)
        return [_finding(custom, host, None, result)] if is_truthy(result) else []
    except (JMESPathError, TypeError, ValueError, RecursionError) as error:
        return [_failure(custom, host, error)]


def run_custom_rules(customs, host, facts, scopes=("host", "gpu")):
    findings = []
    for custom in customs:
        if custom.scope in scopes:
            findings.extend(evaluate(custom, host, facts))
    return findings
