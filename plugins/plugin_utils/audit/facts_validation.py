# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A host's facts checked against the facts schema (docs/schema/gpu_facts.schema.json) as they arrive on the
controller, so that one host's facts of the wrong shape are that host's failed collection, never the run's crash.

The schema's own subset of JSON Schema (type, enum, properties, required, additionalProperties, items,
$ref into $defs, pattern, minimum) is compiled once into checks: the controller's runtime has no jsonschema (it
is a test dependency), and the compiled checks cost a fraction of a millisecond per host (bench/README.md). A
keyword outside that subset is refused when the schema is loaded, so the schema cannot grow a rule that is
silently not checked (tests/unit/plugins/plugin_utils/audit/test_facts_validation.py compares with jsonschema).

Stricter than JSON Schema on purpose, because the facts go into JSON files and the run store: a number is finite
(no NaN or Infinity, which strict JSON cannot hold), an integer is an integer (not 3.0, not a boolean) within the
signed 64-bit range that SQLite and PostgreSQL store (a 2^64-1 counter is NVML's "not available", not a count).
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
import math
import os
import re

from ansible_collections.gpufleet.core.plugins.module_utils.facts_model import INT64_MAX, INT64_MIN

SCHEMA_PATH = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))),
                           "docs", "schema", "gpu_facts.schema.json")
MAX_PROBLEMS = 5
# keywords that only document
ANNOTATIONS = frozenset(("description", "title", "$schema", "$id", "$defs", "$comment", "examples", "default"))
CHECKED = frozenset(("type", "enum", "properties", "required", "additionalProperties", "items", "$ref", "pattern",
                     "minimum"))


class SchemaSubsetError(ValueError):
    """The facts schema uses a keyword this validator does not check."""


class TooManyProblems(Exception):
    """Enough problems found to say why the facts are refused."""


def _is_integer(value):
    return type(value) is int and INT64_MIN <= value <= INT64_MAX  # pylint: disable=unidiomatic-typecheck


def _is_number(value):
    return _is_integer(value) or (type(value) is float and math.isfinite(value))  # pylint: disable=unidiomatic-typecheck


TYPE_TESTS = {
    "object": lambda value: isinstance(value, dict),
    "array": lambda value: isinstance(value, list),
    "string": lambda value: isinstance(value, str),
    "boolean": lambda value: isinstance(value, bool),
    "null": lambda value: value is None,
    "integer": _is_integer,
    "number": _is_number,
}


def _shown(value):
    """A short picture of a value: containers by their size (their text could be megabytes, or nested too deep)."""
    if isinstance(value, list):
        return "a list of %d item(s)" % len(value)
    if isinstance(value, dict):
        return "an object of %d field(s)" % len(value)
    text = repr(value[:61] if isinstance(value, str) else value)
    return text if len(text) <= 60 else text[:57] + "..."


def _why_not(value, types):
    """Why a value is none of types: NaN, Infinity and out-of-range integers named as such."""
    if type(value) is float and not math.isfinite(value):  # pylint: disable=unidiomatic-typecheck
        return "%s is not a finite number" % _shown(value)
    if type(value) is int and not INT64_MIN <= value <= INT64_MAX:  # pylint: disable=unidiomatic-typecheck
        return "%s is outside the signed 64-bit range" % _shown(value)
    return "%s is not %s" % (_shown(value), " or ".join(types))


class _Compiler:
    """Turns schema nodes into check(value, path, problems) functions; each $def compiled once."""

    def __init__(self, schema):
        self.defs = schema.get("$defs") or {}
        self.compiled_defs = {}

    def compile(self, node, where):
        unknown = set(node) - CHECKED - ANNOTATIONS
        if unknown:
            raise SchemaSubsetError("%s uses %s, which facts_validation does not check" % (where, sorted(unknown)))
        checks = [self._compile_keyword(node, keyword, where) for keyword in
                  ("$ref", "type", "enum", "pattern", "minimum") if keyword in node]
        if {"properties", "required", "additionalProperties"} & set(node):
            checks.append(self._object(node, where))
        if "items" in node:
            checks.append(self._items(node["items"], where))
        if len(checks) == 1:
            return checks[0]

        def check_all(value, path, problems):
            for check in checks:
                if not check(value, path, problems):
                    return False
            return True
        return check_all

    def _compile_keyword(self, node, keyword, where):
        if keyword == "$ref":
            return self._ref(node["$ref"])
        if keyword == "type":
            return self._type(node["type"])
        if keyword == "enum":
            return self._enum(node["enum"])
        if keyword == "pattern":
            return self._pattern(node["pattern"])
        return self._minimum(node["minimum"])

    def _ref(self, ref):
        prefix = "#/$defs/"
        if not ref.startswith(prefix) or ref[len(prefix):] not in self.defs:
            raise SchemaSubsetError("$ref %r is not one of the schema's $defs" % ref)
        name = ref[len(prefix):]
        if name not in self.compiled_defs:
            self.compiled_defs[name] = None  # a definition that refers to itself is resolved when first called
            self.compiled_defs[name] = self.compile(self.defs[name], ref)
        if self.compiled_defs[name] is not None:
            return self.compiled_defs[name]

        def check_ref(value, path, problems):
            return self.compiled_defs[name](value, path, problems)
        return check_ref

    @staticmethod
    def _type(types):
        types = [types] if isinstance(types, str) else list(types)
        unknown = [name for name in types if name not in TYPE_TESTS]
        if unknown:
            raise SchemaSubsetError("type %s is not a JSON type facts_validation checks" % unknown)
        tests = [TYPE_TESTS[name] for name in types]
        if len(tests) == 1:  # most of the schema's types: one test, no loop
            test = tests[0]

            def check_one_type(value, path, problems):
                if test(value):
                    return True
                _add(problems, path, _why_not(value, types))
                return False
            return check_one_type

        if len(tests) != 2:
            raise SchemaSubsetError("type %s: facts_validation checks one type or a pair (a type or null)" % types)
        first, second = tests

        def check_type_pair(value, path, problems):
            if first(value) or second(value):
                return True
            _add(problems, path, _why_not(value, types))
            return False
        return check_type_pair

    @staticmethod
    def _enum(allowed):
        # booleans are not 0 and 1 here (JSON Schema compares them as different values)
        keys = {(type(item), item) for item in allowed}

        def check_enum(value, path, problems):
            if isinstance(value, (str, int, float, bool, type(None))) and (type(value), value) in keys:
                return True
            _add(problems, path, "%s is not one of %s" % (_shown(value), ", ".join(map(str, allowed))))
            return False
        return check_enum

    @staticmethod
    def _pattern(pattern):
        regex = re.compile(pattern)

        def check_pattern(value, path, problems):
            if not isinstance(value, str) or regex.search(value):
                return True
            _add(problems, path, "%s does not match %s" % (_shown(value), pattern))
            return False
        return check_pattern

    @staticmethod
    def _minimum(minimum):
        def check_minimum(value, path, problems):
            if not _is_number(value) or value >= minimum:
                return True
            _add(problems, path, "%s is less than %s" % (_shown(value), minimum))
            return False
        return check_minimum

    def _object(self, node, where):
        properties = {name: self.compile(sub, "%s.%s" % (where, name))
                      for name, sub in (node.get("properties") or {}).items()}
        required = list(node.get("required") or ())
        extra = node.get("additionalProperties", True)
        extra_check = self.compile(extra, where + ".*") if isinstance(extra, dict) else None

        def check_object(value, path, problems):
            if not isinstance(value, dict):
                return True
            valid = True
            for name in required:
                if name not in value:
                    _add(problems, path, "%s is missing" % name)
                    valid = False
            for name, item in value.items():
                check = properties.get(name) or extra_check
                if check is not None:
                    valid = check(item, (path, name), problems) and valid
                elif extra is False:
                    _add(problems, path, "%s is not a field of the facts" % _shown(name))
                    valid = False
            return valid
        return check_object

    def _items(self, node, where):
        check_item = self.compile(node, where + "[]")

        def check_items(value, path, problems):
            if not isinstance(value, list):
                return True
            valid = True
            for position, item in enumerate(value):
                valid = check_item(item, (path, position), problems) and valid
            return valid
        return check_items


def _path_text(path):
    """'gpus[0].temperature.gpu_c' of the path (parent path, key or list position) built while checking."""
    parts = []
    while path:
        path, name = path
        parts.append("[%d]" % name if isinstance(name, int) else ".%s" % name)
    return "".join(reversed(parts)).lstrip(".")


def _add(problems, path, text):
    problems.append("%s: %s" % (_path_text(path) or "(the facts)", text))
    if len(problems) >= MAX_PROBLEMS:
        raise TooManyProblems()


def compile_schema(schema):
    """A function facts -> [problem, ...] (at most MAX_PROBLEMS; empty when the facts are valid)."""
    check = _Compiler(schema).compile(schema, "#")

    def problems_of(facts):
        problems = []
        try:
            check(facts, None, problems)
        except TooManyProblems:
            pass
        except RecursionError:
            problems.append("the facts are nested too deeply")
        return problems
    return problems_of


_CHECKERS = {}


def facts_checker(path=SCHEMA_PATH):
    """compile_schema of the schema file at path, compiled once per process."""
    if path not in _CHECKERS:
        with open(path, encoding="utf-8") as stream:
            _CHECKERS[path] = compile_schema(json.load(stream))
    return _CHECKERS[path]


def facts_problems(facts):
    """What is wrong with one host's facts against the facts schema, at most MAX_PROBLEMS lines; [] when valid."""
    return facts_checker()(facts)


def refusal_message(problems):
    """The reason a host's collection fails when its facts do not match the schema."""
    return "the host's facts do not match the facts schema (docs/schema/gpu_facts.schema.json), so none of them " \
           "are used: %s%s" % ("; ".join(problems), " (and maybe more)" if len(problems) >= MAX_PROBLEMS else "")
