# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Checkers: check(value, path, problems) -> normalised value; problems collects what is wrong.

Each checker also carries `json_schema`: the JSON Schema (draft-07) of what it accepts in an inventory
fragment, so the published schema (docs/schema/policy.schema.json) comes from the same definition.
Containers also accept null there: merging reads a section or list written as null as empty. A Jinja
template stands wherever a single value may ("#/definitions/template"): policy_check checks what it renders.
Mappings and lists are not offered as templates, so that an unknown key is reported as one.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re

from ansible_collections.gpufleet.core.plugins.plugin_utils.policy.merge import deep_merge, to_plain
from ansible_collections.gpufleet.core.plugins.plugin_utils.policy.problems import (
    Problem, describe_value, did_you_mean)
from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.custom import expression_problem

try:
    import jmespath
except ImportError:  # a dependency of the project; guarded so that Ansible can load the plugins without it
    jmespath = None

ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_PERCENT = re.compile(r"^(\d{1,3})%$")
_NON_BLANK = r"\S"
TEMPLATE = {"type": "string", "pattern": r"\{\{|\{%", "description": "a Jinja template, checked once rendered"}


def is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _fail(problems, path, expected, value, hint=""):
    problems.append(Problem(tuple(path), "must be %s, got %s%s" % (expected, describe_value(value), hint)))
    return value


def _or_null(expected, nullable):
    return "null or " + expected if nullable else expected


def _range_text(low, high):
    if high is None:
        return "%s or more" % low
    return "between %s and %s" % (low, high)


def _described(check, schema, nullable=False, container=False):
    """check, carrying the JSON Schema of its values (json_value) and of what a fragment may hold there
    (json_schema: those values, null when nullable, or a template unless it is a container)."""
    check.json_value = schema
    check.json_schema = schema if container else {
        "anyOf": [schema] + ([{"type": "null"}] if nullable else []) + [{"$ref": "#/definitions/template"}]}
    return check


def _bounds(schema, low, high):
    schema["minimum"] = low
    if high is not None:
        schema["maximum"] = high
    return schema


def boolean(nullable=False):
    def check(value, path, problems):
        if isinstance(value, bool) or (nullable and value is None):
            return value
        return _fail(problems, path, _or_null("true or false", nullable), value)
    return _described(check, {"type": "boolean"}, nullable)


def integer(low, high=None, nullable=False):
    expected = "a whole number " + _range_text(low, high)

    def check(value, path, problems):
        if nullable and value is None:
            return None
        if is_int(value) and value >= low and (high is None or value <= high):
            return int(value)
        return _fail(problems, path, _or_null(expected, nullable), value)
    return _described(check, _bounds({"type": "integer"}, low, high), nullable)


def number(low, high, nullable=False):
    expected = "a number " + _range_text(low, high)

    def check(value, path, problems):
        if nullable and value is None:
            return None
        if _is_number(value) and low <= value <= high:
            return value
        return _fail(problems, path, _or_null(expected, nullable), value)
    return _described(check, _bounds({"type": "number"}, low, high), nullable)


def choice(options):
    """One of options (which may hold None, True, False); strings get a did-you-mean."""
    expected = "one of " + ", ".join(describe_value(option) for option in options)

    def check(value, path, problems):
        for option in options:
            if value is option or (isinstance(value, str) and isinstance(option, str) and value == option):
                return option
        strings = [option for option in options if isinstance(option, str)]
        hint = did_you_mean(value, strings) if isinstance(value, str) else ""
        return _fail(problems, path, expected, value, hint)
    return _described(check, {"enum": list(options)})


def text(pattern, expected, nullable=False, hint_float=None):
    def check(value, path, problems):
        if nullable and value is None:
            return None
        if isinstance(value, str) and pattern.match(value):
            return str(value)
        hint = ""
        if isinstance(value, float) and hint_float:
            hint = " (YAML read it as a number: quote it, e.g. %s)" % hint_float
        return _fail(problems, path, _or_null(expected, nullable), value, hint)
    return _described(check, {"type": "string", "pattern": pattern.pattern, "description": expected}, nullable)


def non_empty_text(nullable=False):
    def check(value, path, problems):
        if nullable and value is None:
            return None
        if isinstance(value, str) and value.strip():
            return str(value)
        return _fail(problems, path, _or_null("a non-empty string", nullable), value)
    return _described(check, {"type": "string", "pattern": _NON_BLANK}, nullable)


def digits_text(pattern, expected, low, high):
    """Like text(pattern, nullable=True), also taking a whole number written without quotes (a driver branch)."""
    check_text = text(pattern, expected, nullable=True)

    def check(value, path, problems):
        if is_int(value):
            value = str(value)
        return check_text(value, path, problems)
    number_schema = {"type": "integer", "minimum": low, "maximum": high}
    return _described(check, {"anyOf": [check_text.json_value, number_schema]}, nullable=True)


def list_of(item_check):
    def check(value, path, problems):
        if not isinstance(value, list):
            return _fail(problems, path, "a list", value)
        return [item_check(item, tuple(path) + (index,), problems) for index, item in enumerate(value)]
    return _described(check, {"type": ["array", "null"], "items": item_check.json_schema}, container=True)


def any_mapping(nullable=False):
    def check(value, path, problems):
        if (nullable and value is None) or isinstance(value, dict):
            return to_plain(value)
        return _fail(problems, path, _or_null("a mapping", nullable), value)
    return _described(check, {"type": ["object", "null"]}, container=True)


def unknown_key(problems, path, key, allowed):
    problems.append(Problem(tuple(path) + (key,), "unknown key%s; allowed keys: %s"
                            % (did_you_mean(key, allowed), ", ".join(sorted(allowed)))))


def section(fields, required=()):
    """A mapping of known keys. The JSON Schema leaves `required` out: a fragment may set part of an entry
    that another fragment completes; the effective policy is checked for it."""
    def check(value, path, problems):
        if value is None and not required:
            value = {}
        if not isinstance(value, dict):
            return _fail(problems, path, "a mapping", value)
        result = {}
        for key, item in value.items():
            if key in fields:
                result[key] = fields[key](item, tuple(path) + (key,), problems)
            else:
                unknown_key(problems, path, key, fields)
        for key in required:
            if key not in value:
                problems.append(Problem(tuple(path) + (key,), "is required"))
        return result
    properties = {key: field.json_schema for key, field in fields.items()}
    return _described(check, {"type": ["object", "null"], "properties": properties, "additionalProperties": False},
                      container=True)


def named_list(entry_check, defaults, normalise_name, name_pattern, name_expected):
    """Entries as a list of mappings with "name", or a mapping name -> settings; returns a list."""
    def check(value, path, problems):
        if isinstance(value, list):
            value = _named_entries_from_list(value, path, problems)
        elif isinstance(value, dict):
            value = _named_entries_from_mapping(value, path, problems)
        else:
            return _fail(problems, path, "a list of mappings with a name, or a mapping of name to settings", value)
        entries = []
        for key, name, entry in value:
            entry_path = tuple(path) + (key,)
            if entry is None:
                entry = {}
            if not isinstance(entry, dict):
                _fail(problems, entry_path, "a mapping", entry)
                continue
            entry = {item: setting for item, setting in entry.items() if item != "name"}
            checked = entry_check(deep_merge(defaults, entry), entry_path, problems)
            if not (isinstance(name, str) and name_pattern.match(name)):
                _fail(problems, entry_path + ("name",), name_expected, name)
                continue
            entries.append(dict(name=normalise_name(str(name)), **checked))
        return entries
    name_schema = {"type": "string", "pattern": name_pattern.pattern, "description": name_expected}
    entry_schema = dict(entry_check.json_value, properties=dict(entry_check.json_value["properties"], name=name_schema))
    listed = dict(entry_schema, type="object", required=["name"])
    return _described(check, {"anyOf": [
        {"type": "array", "items": listed},
        {"type": "object", "propertyNames": {"pattern": name_pattern.pattern}, "additionalProperties": entry_schema},
        {"type": "null"}]}, container=True)


def _named_entries_from_mapping(value, path, problems):
    entries = []
    for key, entry in value.items():
        if isinstance(entry, dict) and "name" in entry and entry["name"] != key:
            problems.append(Problem(tuple(path) + (key, "name"), "%s differs from the key %s it is under"
                                    % (describe_value(entry["name"]), describe_value(key))))
            continue
        entries.append((key, key, entry))
    return entries


def _named_entries_from_list(value, path, problems):
    entries, seen = [], set()
    for index, entry in enumerate(value):
        if not isinstance(entry, dict):
            _fail(problems, tuple(path) + (index,), "a mapping", entry)
            continue
        name = entry.get("name")
        if isinstance(name, str):
            if name in seen:
                problems.append(Problem(tuple(path) + (index, "name"), "duplicate name %r" % name))
                continue
            seen.add(name)
        entries.append((index, name, entry))
    return entries


def environment():
    def check(value, path, problems):
        if not isinstance(value, dict):
            return _fail(problems, path, "a mapping of variable name to value", value)
        result = {}
        for key, item in value.items():
            if not (isinstance(key, str) and ENV_NAME.match(key)):
                problems.append(Problem(tuple(path) + (key,), "is not an environment variable name"))
            elif isinstance(item, (str, int, float)) and not isinstance(item, bool):
                result[str(key)] = str(item)
            else:
                _fail(problems, tuple(path) + (key,), "a string or a number", item)
        return result
    return _described(check, {"type": "object", "propertyNames": {"pattern": ENV_NAME.pattern},
                              "additionalProperties": {"type": ["string", "number"]}}, container=True)


def gpu_selection():
    def check(value, path, problems):
        if value is None or value == "all":
            return value
        if isinstance(value, list) and value and all(is_int(item) and 0 <= item < 64 for item in value):
            if len(set(value)) == len(value):
                return [int(item) for item in value]
        return _fail(problems, path, "'all', null or a list of distinct GPU indexes (0-63)", value)
    indexes = {"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": 63}, "minItems": 1,
               "uniqueItems": True}
    return _described(check, {"anyOf": [{"enum": ["all", None]}, indexes]})


def batch_size():
    def check(value, path, problems):
        if is_int(value) and value >= 1:
            return int(value)
        match = _PERCENT.match(value) if isinstance(value, str) else None
        if match and 1 <= int(match.group(1)) <= 100:
            return str(value)
        return _fail(problems, path, "a whole number 1 or more, or a percentage such as '25%'", value)
    percentage = {"type": "string", "pattern": r"^(100|0?0?[1-9]|0?[1-9][0-9])%$"}
    return _described(check, {"anyOf": [{"type": "integer", "minimum": 1}, percentage]})


def batch_list():
    """serial-style batches: a non-empty list of batch sizes (numbers or percentages); the last repeats."""
    item = batch_size()

    def check(value, path, problems):
        if isinstance(value, list) and value:
            return [item(entry, tuple(path) + (index,), problems) for index, entry in enumerate(value)]
        return _fail(problems, path, "a non-empty list of batch sizes such as [1, '10%', '100%']", value)
    return _described(check, {"type": "array", "items": item.json_schema, "minItems": 1})


def jmespath_expression():
    def check(value, path, problems):
        if not (isinstance(value, str) and value.strip()):
            return _fail(problems, path, "a JMESPath expression (string)", value)
        if jmespath is None:
            problems.append(Problem(tuple(path), "cannot be checked: the Python package jmespath is missing "
                                                 "on the controller"))
            return str(value)
        too_big = expression_problem(str(value))
        if too_big:
            problems.append(Problem(tuple(path), "JMESPath expression %s: %s" % (describe_value(str(value)), too_big)))
            return str(value)
        try:
            jmespath.compile(str(value))
        except jmespath.exceptions.JMESPathError as error:
            problems.append(Problem(tuple(path), "JMESPath expression %r does not compile: %s"
                                    % (str(value), jmespath_error_text(error))))
        return str(value)
    return _described(check, {"type": "string", "pattern": _NON_BLANK, "description": "a JMESPath expression"})


def jmespath_error_text(error):
    if isinstance(error, jmespath.exceptions.IncompleteExpressionError):
        return "the expression is incomplete"
    position = getattr(error, "lex_position", getattr(error, "lexer_position", None))
    message = getattr(error, "message", None) or getattr(error, "msg", None) or str(error).splitlines()[0]
    return "%s at position %s" % (message, position) if position is not None else str(message)
