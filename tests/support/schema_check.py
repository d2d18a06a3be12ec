"""Validates facts against the published JSON Schema; every test that produces facts calls it."""

import json
import os

import jsonschema

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

with open(os.path.join(ROOT, "docs", "schema", "gpu_facts.schema.json")) as _handle:
    FACTS_SCHEMA = json.load(_handle)

_VALIDATOR = jsonschema.Draft202012Validator(FACTS_SCHEMA)


def assert_valid_facts(facts):
    errors = sorted(_VALIDATOR.iter_errors(facts), key=lambda e: list(e.absolute_path))
    assert not errors, "\n".join("%s: %s" % ("/".join(map(str, e.absolute_path)), e.message) for e in errors[:10])


def assert_valid_gpu(gpu):
    """Validates one gpus[] entry on its own."""
    facts = {"$defs": FACTS_SCHEMA["$defs"], "$ref": "#/$defs/gpu"}
    errors = list(jsonschema.Draft202012Validator(facts).iter_errors(gpu))
    assert not errors, "\n".join("%s: %s" % ("/".join(map(str, e.absolute_path)), e.message) for e in errors[:10])
