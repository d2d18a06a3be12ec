# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A finding's identity across runs: its rule, its host, its GPU by serial (else UUID, else bus id) and
the rule's own key, so a card that moves to another slot or a renumbered GPU is still the same finding.

The rule's own key is the finding's "key" when a rule sets one, else the evidence values that name what
the finding is about (a service, a link, a toolkit, an Xid), never readings that change between runs.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import hashlib
from json.encoder import encode_basestring_ascii as quoted

# evidence fields that say which thing a finding is about (not how bad it is)
KEY_FIELDS = ("service", "unit", "name", "xid", "link", "toolkit", "table", "profile", "gpu_instance_id",
              "compute_instance_id", "setting", "fact", "counter", "process_name")


def gpu_key(gpu):
    """A GPU's lasting name: serial, else UUID, else bus id."""
    for field, prefix in (("serial", "serial:"), ("uuid", "uuid:"), ("pci_bus_id", "bus:")):
        value = gpu.get(field)
        if value not in (None, "", "N/A", "[N/A]"):
            return prefix + str(value)
    return None


def gpu_keys(facts):
    """{bus id: GPU key} for a host's facts (None facts: empty)."""
    keys = {}
    for gpu in (facts or {}).get("gpus") or ():
        if gpu.get("pci_bus_id"):
            keys[gpu["pci_bus_id"]] = gpu_key(gpu)
    return keys


def rule_key(finding):
    if finding.get("key") is not None:
        return str(finding["key"])
    evidence = finding.get("evidence")
    if not isinstance(evidence, dict):
        return ""
    parts = ["%s=%s" % (field, evidence[field]) for field in KEY_FIELDS
             if field in evidence and isinstance(evidence[field], (str, int, float, bool))]
    return ";".join(parts)


def finding_gpu_key(finding, keys):
    bus = finding.get("gpu")
    if not bus:
        return ""
    return keys.get(bus) or "bus:%s" % bus


def identity_parts(finding, keys):
    """(rule, host, GPU key, rule key)"""
    return (str(finding.get("rule")), str(finding.get("host")), finding_gpu_key(finding, keys), rule_key(finding))


def digest(parts, ordinal=0):
    """SHA-1 of the compact ASCII JSON array of the parts (and the ordinal when not 0), written out here:
    the same text json.dumps(list(parts) + [ordinal], separators=(",", ":")) gives for string parts, at a
    fraction of its cost (every finding of every run is identified)."""
    text = "[" + ",".join(map(quoted, parts)) + ("," + str(int(ordinal)) if ordinal else "") + "]"
    return hashlib.sha1(text.encode("ascii")).hexdigest()


def identify(findings, keys_by_host):
    """[(finding, identity, (rule, host, gpu key, rule key))] in the order of findings. Two findings of one run with the
    same parts (a rule that reports one thing twice) get distinct identities by their order."""
    seen = {}
    result = []
    for finding in findings:
        parts = identity_parts(finding, keys_by_host.get(finding.get("host"), {}))
        ordinal = seen.get(parts, 0)
        seen[parts] = ordinal + 1
        result.append((finding, digest(parts, ordinal), parts))
    return result
