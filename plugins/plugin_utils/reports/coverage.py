# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a host's audit looked at (report.json hosts.<host>.inputs, docs/offline.md): the collection's steps by the
status of their inputs (the facts' `inputs`), and the capture read instead of the host. A host without findings
whose inputs were absent is not a clean host: the report says which evidence was never looked at."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.gpufleet.core.plugins.module_utils.input_ledger import ABSENT, FAILED, NOT_SUPPORTED, READ

INPUT_STATUSES = (READ, FAILED, NOT_SUPPORTED, ABSENT)


def host_inputs(facts):
    """{read, failed, not_supported, absent: [step], capture: {kind, path} or None}, or None for facts that do not
    say (collected before facts 1.5, or no facts)."""
    if not isinstance(facts, dict) or not isinstance(facts.get("inputs"), list):
        return None
    grouped = {status: [] for status in INPUT_STATUSES}
    for entry in facts["inputs"]:
        if isinstance(entry, dict) and entry.get("status") in grouped:
            grouped[entry["status"]].append(str(entry.get("input")))
    capture = facts.get("capture")
    grouped["capture"] = ({"kind": capture.get("kind"), "path": capture.get("path")}
                          if isinstance(capture, dict) else None)
    return grouped


def unread_inputs(entry):
    """The steps of a report's host entry that read nothing (failed, not supported or absent)."""
    inputs = entry.get("inputs") or {}
    return [step for status in INPUT_STATUSES[1:] for step in inputs.get(status) or ()]
