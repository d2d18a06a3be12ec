"""plugin_utils/audit/facts_validation.py: the controller's check of each host's facts against the facts schema, without
jsonschema. Every fact the demo fleet gives passes; whatever jsonschema refuses, it refuses too; and it refuses what
strict JSON and the store cannot hold (NaN, Infinity, integers beyond 64 bits), which jsonschema lets through."""

import copy

import jsonschema
import pytest

from ansible_collections.gpufleet.core.plugins.plugin_utils.audit.facts_validation import (
    MAX_PROBLEMS, SchemaSubsetError, compile_schema, facts_problems, refusal_message)
from tests.support.demo_fleet import demo_audit
from tests.support.schema_check import FACTS_SCHEMA

JSONSCHEMA = jsonschema.Draft202012Validator(FACTS_SCHEMA)
# a value of each JSON kind, for every leaf of the facts
REPLACEMENTS = ("text", 7, 2.5, True, None, [], {}, {"unknown": 1})


def demo_facts(host="gpu-h100-nvlink-12"):
    return copy.deepcopy(demo_audit()[0][host])


def leaves(value, path=()):
    """(path, value) of every leaf and every container of the facts."""
    yield path, value
    if isinstance(value, dict):
        for key, item in value.items():
            yield from leaves(item, path + (key,))
    elif isinstance(value, list):
        for position, item in enumerate(value):
            yield from leaves(item, path + (position,))


def replaced(facts, path, value):
    facts = copy.deepcopy(facts)
    record = facts
    for key in path[:-1]:
        record = record[key]
    record[path[-1]] = value
    return facts


def test_every_demo_hosts_facts_pass():
    facts = demo_audit()[0]
    assert len(facts) == 19
    assert {host: facts_problems(host_facts) for host, host_facts in facts.items()} == {host: [] for host in facts}


def test_whatever_jsonschema_refuses_is_refused():
    """Every other field of one host replaced by a value of each JSON kind in turn."""
    facts = demo_facts("gpu-t4-nvsmi-14")
    paths = [path for path, _value in leaves(facts) if path][::2]
    assert len(paths) > 100
    checked = refused = 0
    for path in paths:
        for value in REPLACEMENTS:
            candidate = replaced(facts, path, value)
            theirs = not JSONSCHEMA.is_valid(candidate)
            ours = bool(facts_problems(candidate))
            assert ours == theirs, (path, value, facts_problems(candidate))
            checked += 1
            refused += ours
    assert refused > checked // 2


@pytest.mark.parametrize("path, value, why", [
    (("gpus", 0, "power", "draw_w"), float("nan"), "nan is not a finite number"),
    (("gpus", 0, "power", "draw_w"), float("inf"), "inf is not a finite number"),
    (("gpus", 0, "power", "limit_w"), float("-inf"), "-inf is not a finite number"),
    (("gpus", 0, "pcie", "replay_counter"), 2 ** 64 - 1, "18446744073709551615 is outside the signed 64-bit range"),
    (("gpus", 0, "pcie", "replay_counter"), -(2 ** 63) - 1,
     "-9223372036854775809 is outside the signed 64-bit range"),
    (("gpus", 0, "pcie", "replay_counter"), 3.0, "3.0 is not integer or null"),
])
def test_what_strict_json_and_the_store_cannot_hold_is_refused_though_jsonschema_takes_it(path, value, why):
    facts = replaced(demo_facts(), path, value)
    assert facts_problems(facts) == ["%s: %s" % (".".join(map(str, path)).replace(".0.", "[0]."), why)]
    assert JSONSCHEMA.is_valid(facts)  # to jsonschema NaN and Infinity are numbers, 2^64-1 and 3.0 integers


def test_a_boolean_is_not_a_count():
    facts = replaced(demo_facts(), ("gpus", 0, "pcie", "replay_counter"), True)
    assert facts_problems(facts) == ["gpus[0].pcie.replay_counter: True is not integer or null"]


def test_the_largest_signed_64_bit_counter_is_a_count():
    facts = replaced(demo_facts(), ("gpus", 0, "pcie", "replay_counter"), 2 ** 63 - 1)
    assert facts_problems(facts) == []


def test_problems_are_bounded_and_named_in_the_refusal():
    facts = demo_facts()
    for gpu in facts["gpus"]:
        gpu["name"] = 0
    problems = facts_problems(facts)
    assert problems == ["gpus[%d].name: 0 is not string or null" % index for index in range(MAX_PROBLEMS)]
    message = refusal_message(problems)
    assert message.startswith("the host's facts do not match the facts schema (docs/schema/gpu_facts.schema.json)")
    assert "gpus[4].name: 0 is not string or null (and maybe more)" in message


@pytest.mark.parametrize("facts, problem", [
    ([], "(the facts): a list of 0 item(s) is not object"),
    ({}, "(the facts): schema_version is missing"),
])
def test_facts_that_are_not_facts_are_refused(facts, problem):
    assert facts_problems(facts)[0] == problem


def test_deeply_nested_facts_are_refused_not_a_crash():
    facts = demo_facts()
    nested = []
    for _depth in range(100000):
        nested = [nested]
    facts["gather_subset"] = nested
    assert facts_problems(facts) == ["gather_subset[0]: a list of 1 item(s) is not string"]


def test_an_enum_tells_booleans_from_numbers():
    check = compile_schema({"type": "object", "properties": {"x": {"enum": [1, "a"]}}})
    assert check({"x": 1}) == [] and check({"x": "a"}) == []
    assert check({"x": True}) == ["x: True is not one of 1, a"]


@pytest.mark.parametrize("schema", [
    {"type": "object", "properties": {"x": {"type": "integer", "maximum": 3}}},
    {"anyOf": [{"type": "string"}]},
    {"$ref": "#/$defs/missing"},
    {"type": ["integer", "string", "null"]},
    {"type": "decimal"},
])
def test_a_keyword_it_does_not_check_is_refused_when_the_schema_is_loaded(schema):
    with pytest.raises(SchemaSubsetError):
        compile_schema(schema)


def test_every_definition_of_the_published_schema_is_within_the_checked_subset():
    for name, definition in FACTS_SCHEMA["$defs"].items():
        compile_schema(dict(definition, **{"$defs": FACTS_SCHEMA["$defs"]}))(None)  # compiles every $ref it reaches
    assert compile_schema(FACTS_SCHEMA)({}) != []
