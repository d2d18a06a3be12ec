# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""report.json on disk (report 1.2 and later) against the report in memory (docs/report-format.md).

In memory (report_model.build_report), every host entry holds its findings and every finding all its keys,
as the renderers read them. On disk, each finding is written once and says only what it does not share:

- 1.2: `hosts.<host>.findings` lists the positions of the host's findings in the top-level `findings`, and an
  action that every finding of a rule shares is written once in `actions` (rule id -> text).
- 1.3: a finding listed under its own host leaves out `host`; `defaults` (rule id -> {key: value}) holds the
  layer, severity, action and fix most findings of a rule have, and a finding leaves out each of those keys
  whose value is the default; a summary text or an evidence value that more than one finding has is written
  once in `summaries` or `evidence` (lists) and the finding holds its position as `summary_ref` or
  `evidence_ref`. `actions` is no longer written (its texts are in `defaults`).
  `changes.persisting` lists the persisting findings' identities (1.2: an object per finding, which
  `findings` holds in full anyway).

`expanded` turns a document of any 1.x version back into the report in memory, key for key; findings that
shared a summary or evidence on disk share the same object after it (read them, do not change them in place).
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import collections

# the keys of a finding in memory, in the order findings.make_finding writes them
FINDING_KEYS = ("rule", "layer", "severity", "host", "gpu", "summary", "evidence", "action", "fix")
# keys whose most common value per rule goes into `defaults` (each a string or null)
DEFAULTED_KEYS = ("layer", "severity", "action", "fix")
SUMMARY_REF = "summary_ref"
EVIDENCE_REF = "evidence_ref"
REFERENCES = (SUMMARY_REF, EVIDENCE_REF)


def shared_actions(findings):
    """{rule: action} of the rules whose findings all have the same action."""
    actions, mixed = {}, set()
    for finding in findings:
        rule, action = finding["rule"], finding.get("action")
        if rule in mixed:
            continue
        if actions.setdefault(rule, action) != action:
            mixed.add(rule)
    return {rule: action for rule, action in actions.items() if rule not in mixed and action is not None}


def _identity(finding):
    return (finding["host"], finding["rule"], finding.get("gpu"), finding["summary"], repr(finding.get("evidence")))


def finding_positions(report):
    """position(finding of a host entry) -> its index in the top-level findings: the same object in a
    report from build_report or expanded, an equal one in a report copied some other way."""
    by_object = {id(finding): index for index, finding in enumerate(report["findings"])}
    by_value = {}

    def position(finding):
        if id(finding) in by_object:
            return by_object[id(finding)]
        if not by_value:
            for index, other in enumerate(report["findings"]):
                by_value.setdefault(_identity(other), index)
        return by_value[_identity(finding)]
    return position


_UNFIT = object()  # a key a finding lacks, or holds as something other than a string or null


def _signature(finding):
    return (finding["rule"],) + tuple(finding.get(key, _UNFIT) for key in DEFAULTED_KEYS)


def _safe_signature(finding):
    values = (finding.get(key, _UNFIT) for key in DEFAULTED_KEYS)
    return (finding["rule"],) + tuple(value if value is None or isinstance(value, str) else _UNFIT for value in values)


def rule_defaults(findings):
    """{rule: {key: value}}: for each of DEFAULTED_KEYS that every finding of the rule holds as a string or
    null, the value most of them hold (the first seen on a tie)."""
    try:
        signatures = collections.Counter(map(_signature, findings))
    except TypeError:  # an unhashable value: a key that cannot have a default anyway
        signatures = collections.Counter(map(_safe_signature, findings))
    tallies = {}
    for signature, count in signatures.items():
        per_rule = tallies.setdefault(signature[0], [{} for _key in DEFAULTED_KEYS])
        for tally, value in zip(per_rule, signature[1:]):
            if value is not None and not isinstance(value, str):
                value = _UNFIT
            tally[value] = tally.get(value, 0) + count
    defaults = {}
    for rule, per_rule in tallies.items():
        chosen = {key: max(tally, key=tally.get) for key, tally in zip(DEFAULTED_KEYS, per_rule) if _UNFIT not in tally}
        if chosen:
            defaults[rule] = chosen
    return defaults


def _repeated(values, key=None):
    """{key(value): position} of the values that occur more than once, in order of first occurrence, and
    the list of those values."""
    seen, table, positions = {}, [], {}
    for value in values:
        mark = value if key is None else key(value)
        if mark in positions:
            continue
        if mark in seen:
            positions[mark] = len(table)
            table.append(seen[mark])
        else:
            seen[mark] = value
    return positions, table


def _evidence_key(evidence):
    # repr tells apart what == would not (1 and True, 1 and 1.0) and is as fast as hashing a dict gets
    return repr(evidence)


def _owners(hosts, position):
    """{position: host} for each finding listed under exactly one host entry."""
    owners = {}
    for host, entry in hosts.items():
        for finding in entry["findings"]:
            index = position(finding)
            owners[index] = host if index not in owners else None
    return owners


def compact(report):
    """The report as report.json holds it (1.3); the report itself is not changed."""
    position = finding_positions(report)
    findings = report["findings"]
    defaults = rule_defaults(findings)
    summary_refs, summaries = _repeated(finding.get("summary") for finding in findings
                                        if isinstance(finding.get("summary"), str))
    marks = [_evidence_key(finding["evidence"]) if "evidence" in finding else None for finding in findings]
    evidence_refs, evidence = _repeated(((mark, finding["evidence"]) for mark, finding in zip(marks, findings)
                                         if mark is not None), lambda pair: pair[0])
    evidence = [value for _mark, value in evidence]
    owners = _owners(report["hosts"], position)
    stored = []
    no_defaults = {}
    for index, finding in enumerate(findings):
        if any(key in finding for key in REFERENCES):
            raise ValueError("a finding may not hold the key %s (report_format.REFERENCES)" % ", ".join(REFERENCES))
        shared = defaults.get(finding["rule"], no_defaults)
        written = {}
        for key, value in finding.items():
            if key in shared and value == shared[key] and type(value) is type(shared[key]):
                continue
            if key == "host" and owners.get(index) == value and isinstance(value, str):
                continue
            if key == "summary" and isinstance(value, str) and value in summary_refs:
                written[SUMMARY_REF] = summary_refs[value]
            elif key == "evidence" and marks[index] in evidence_refs:
                written[EVIDENCE_REF] = evidence_refs[marks[index]]
            else:
                written[key] = value
        stored.append(written)
    document = dict(report)
    document["hosts"] = {
        host: dict(entry, findings=[position(finding) for finding in entry["findings"]])
        for host, entry in report["hosts"].items()
    }
    document["findings"] = stored
    document["defaults"] = dict(sorted(defaults.items()))
    document["summaries"] = summaries
    document["evidence"] = evidence
    return document


def persisting_identities(changes):
    """changes.persisting as identities from any 1.x document: 1.3 lists identities, 1.2 objects with one."""
    return [entry.get("identity") if isinstance(entry, dict) else entry for entry in (changes or {}).get("persisting") or ()]


_NO_ACTION = object()


def _expand_finding(stored, host, shared, summaries, evidence, action=_NO_ACTION):
    """One finding in memory from its stored form: host from the entry that lists it, references resolved,
    defaults filled in, keys in make_finding's order and then any others in their stored order. action: the
    1.2 `actions` entry of the rule (None where it has none), given for documents before 1.3 only."""
    finding = {}
    for key in FINDING_KEYS:
        if key in stored:
            finding[key] = stored[key]
        elif key == "host" and host is not None:
            finding[key] = host
        elif key == "summary" and SUMMARY_REF in stored:
            finding[key] = summaries[stored[SUMMARY_REF]]
        elif key == "evidence" and EVIDENCE_REF in stored:
            finding[key] = evidence[stored[EVIDENCE_REF]]
        elif key in shared:
            finding[key] = shared[key]
        elif key == "action" and action is not _NO_ACTION:
            finding[key] = action
    for key, value in stored.items():
        if key not in finding and key not in REFERENCES:
            finding[key] = value
    return finding


def expanded(document):
    """The report in memory from a report.json document of any 1.x version (a new object)."""
    actions = document.get("actions") or {}  # 1.2
    defaults = document.get("defaults") or {}  # 1.3
    summaries = document.get("summaries") or []
    evidence = document.get("evidence") or []
    owners = {}
    for host, entry in document.get("hosts", {}).items():
        for item in entry.get("findings", []):
            if isinstance(item, int):
                owners[item] = host if item not in owners else None
    no_defaults = {}
    findings = []
    before_1_3 = "defaults" not in document
    for index, stored in enumerate(document.get("findings", [])):
        rule = stored.get("rule")
        shared = defaults.get(rule, no_defaults)
        if before_1_3:
            findings.append(_expand_finding(stored, owners.get(index), shared, summaries, evidence, actions.get(rule)))
        else:
            findings.append(_expand_finding(stored, owners.get(index), shared, summaries, evidence))
    report = {key: value for key, value in document.items()
              if key not in ("actions", "defaults", "summaries", "evidence")}
    report["findings"] = findings
    if isinstance(document.get("changes"), dict):
        report["changes"] = dict(document["changes"], persisting=persisting_identities(document["changes"]))
    report["hosts"] = {
        host: dict(entry, findings=[findings[item] if isinstance(item, int) else item
                                    for item in entry.get("findings", [])])
        for host, entry in document.get("hosts", {}).items()
    }
    return report
