#!/usr/bin/env python
"""Writes the RETURN block of plugins/modules/gpu_facts.py from the published JSON Schema,
so ansible-doc and the schema cannot drift apart. --check exits 1 when the block is stale."""

import json
import os
import re
import sys

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCHEMA = os.path.join(ROOT, "docs", "schema", "gpu_facts.schema.json")
MODULE = os.path.join(ROOT, "plugins", "modules", "gpu_facts.py")
BLOCK = re.compile(r"(# BEGIN GENERATED RETURN[^\n]*\nRETURN = r\"\"\")\n(?:.*?\n)?(\"\"\")", re.S)

JSON_TO_ANSIBLE = {"string": "str", "integer": "int", "number": "float", "boolean": "bool",
                   "object": "dict", "array": "list"}


def resolve(node, defs):
    while "$ref" in node:
        node = dict(defs[node["$ref"].split("/")[-1]], **{k: v for k, v in node.items() if k != "$ref"})
    return node


def ansible_type(node):
    kinds = node.get("type")
    if kinds is None and "enum" in node:
        kinds = sorted({type(v).__name__ for v in node["enum"] if v is not None})
        kinds = [{"str": "string", "int": "integer"}.get(k, k) for k in kinds]
    if isinstance(kinds, str):
        kinds = [kinds]
    kinds = [k for k in (kinds or []) if k != "null"]
    return JSON_TO_ANSIBLE.get(kinds[0], "raw") if len(kinds) == 1 else "raw"


def describe(node):
    text = node.get("description") or node.get("title") or "See the schema."
    if "enum" in node:
        text += " One of: %s." % ", ".join("null" if v is None else str(v) for v in node["enum"])
    return text


def entry(node, defs):
    node = resolve(node, defs)
    kind = ansible_type(node)
    doc = {"description": describe(node), "returned": "always" if kind in ("list", "dict") else "success",
           "type": kind}
    if kind == "dict" and "properties" in node:
        doc["contains"] = {name: entry(child, defs) for name, child in node["properties"].items()}
    elif kind == "list":
        items = resolve(node.get("items", {}), defs)
        doc["elements"] = ansible_type(items)
        if doc["elements"] == "dict" and "properties" in items:
            doc["contains"] = {name: entry(child, defs) for name, child in items["properties"].items()}
    return doc


def render():
    with open(SCHEMA) as handle:
        schema = json.load(handle)
    facts = entry(schema, schema["$defs"])
    facts["description"] = schema["description"]
    doc = {"ansible_facts": {"description": "Facts added to the host.", "returned": "always", "type": "dict",
                             "contains": {"gpufleet": facts}}}
    return yaml.safe_dump(doc, sort_keys=False, width=110, default_flow_style=False).rstrip()


def main():
    with open(MODULE) as handle:
        source = handle.read()
    wanted = BLOCK.sub(lambda m: "%s\n%s\n%s" % (m.group(1), render(), m.group(2)), source)
    if "--check" in sys.argv:
        if wanted != source:
            sys.stderr.write("RETURN in %s is stale: run tools/schema_to_return.py\n" % MODULE)
            return 1
        return 0
    with open(MODULE, "w") as handle:
        handle.write(wanted)
    return 0


if __name__ == "__main__":
    sys.exit(main())
