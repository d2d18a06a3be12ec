# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A host's own part of the audit's diagnosis, made in the host's Ansible worker as its result arrives (the
gpu_facts action, beside the facts file): the findings of the per-host rules, the host's fleet view
(fleet_view.py) and its summary line, so that audit_report reads neither the host's facts nor its facts file and
only runs what needs the whole fleet.

The result carries it as gpufleet_diagnosis, the JSON text of {"policy": digest of the effective policy it was made
with, "findings": [...], "view": {...}, "line": "..."}: one string, which ansible-playbook keeps for every host to
the end of the play at a tenth of the memory the same data takes as Python objects (bench/README.md, section 4).
audit_report uses it only where the digest is that of the host's policy in its own run and the shape is right;
anything else is diagnosed again from the facts.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import hashlib
import json

from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.diagnose import (
    build_plan, diagnose_host, knowledge_loader)
from ansible_collections.gpufleet.core.plugins.plugin_utils.audit.fleet_view import fleet_view
from ansible_collections.gpufleet.core.plugins.plugin_utils.audit.host_summary import summary_line

DIAGNOSIS_KEY = "gpufleet_diagnosis"
DIAGNOSIS_FIELDS = frozenset(("policy", "findings", "view", "line"))


def policy_digest(policy):
    """SHA-1 of the policy's canonical JSON: the same policy gives the same digest in every process."""
    text = json.dumps(policy, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha1(text.encode("utf-8", "backslashreplace")).hexdigest()


def host_diagnosis(host, result, policy, knowledge_for=None):
    """The diagnosis of one host whose registered result holds its facts (ansible_facts.gpufleet), as JSON text."""
    facts = result["ansible_facts"]["gpufleet"]
    knowledge = (knowledge_for or knowledge_loader())(policy)
    return json.dumps({"policy": policy_digest(policy),
                       "findings": diagnose_host(host, facts, policy, knowledge, None, build_plan(policy)),
                       "view": fleet_view(facts),
                       "line": summary_line(host, result)}, separators=(",", ":"), default=str)


def accepted_diagnosis(result, digest):
    """(findings, view, line) of the result's diagnosis when it was made with the policy of this digest and has
    the shape host_diagnosis gives, else None."""
    text = (result or {}).get(DIAGNOSIS_KEY)
    try:
        diagnosis = json.loads(text) if isinstance(text, str) else None
    except ValueError:
        return None
    if not isinstance(diagnosis, dict) or diagnosis.keys() != DIAGNOSIS_FIELDS or diagnosis["policy"] != digest:
        return None
    findings, view, line = diagnosis["findings"], diagnosis["view"], diagnosis["line"]
    if not isinstance(findings, list) or not all(isinstance(finding, dict) for finding in findings):
        return None
    if not isinstance(view, dict) or not isinstance(line, str):
        return None
    return findings, view, line
