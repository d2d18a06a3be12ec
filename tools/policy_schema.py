#!/usr/bin/env python
"""Writes docs/schema/policy.schema.json, the JSON Schema of the gpufleet policy in inventory variables, from
the policy's own definition (plugins/plugin_utils/policy/schema.py), so editors and CI can lint group_vars
with the keys the audit accepts. --check exits 1 when the file is stale."""

import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCHEMA_FILE = os.path.join(ROOT, "docs", "schema", "policy.schema.json")
for _path in (ROOT, os.path.join(ROOT, "collections")):
    if _path not in sys.path:
        sys.path.insert(0, _path)

from ansible_collections.gpufleet.core.plugins.plugin_utils.policy import json_schema  # noqa: E402


def render():
    return json.dumps(json_schema(), indent=2, sort_keys=True) + "\n"


def main():
    wanted = render()
    try:
        with open(SCHEMA_FILE) as handle:
            current = handle.read()
    except FileNotFoundError:
        current = None
    if "--check" in sys.argv:
        if wanted != current:
            sys.stderr.write("%s is stale: run tools/policy_schema.py\n" % SCHEMA_FILE)
            return 1
        return 0
    with open(SCHEMA_FILE, "w") as handle:
        handle.write(wanted)
    return 0


if __name__ == "__main__":
    sys.exit(main())
