# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""report.json on disk (report 1.2 and later) against the report in memory (docs/report-format.md).

1.3: changes.persisting lists the persisting findings' identities (1.2: an object per finding, which
findings[] holds in full anyway); `expanded` reads both into identities.

In memory (report_model.build_report), every host entry holds its findings and every finding its action,
as the renderers read them. On disk, each finding is written once: `hosts.<host>.findings` lists the
positions of the host's findings in the top-level `findings`, and an action that every finding of a rule
shares is written once in `actions` (rule id -> text) and left out of those findings. A fleet's report
is then about half as large and nothing is lost: `expanded` turns a document back into the report in
memory, and reads older documents (hosts holding finding objects, findings with their action) unchanged.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type


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


def compact(report):
    """The report as report.json holds it; the report itself is not changed."""
    position = finding_positions(report)
    actions = shared_actions(report["findings"])
    document = dict(report)
    document["hosts"] = {
        host: dict(entry, findings=[position(finding) for finding in entry["findings"]])
        for host, entry in report["hosts"].items()
    }
    document["findings"] = [
        {key: value for key, value in finding.items() if key != "action"} if finding["rule"] in actions else finding
        for finding in report["findings"]
    ]
    document["actions"] = dict(sorted(actions.items()))
    return document


def persisting_identities(changes):
    """changes.persisting as identities from any 1.x document: 1.3 lists identities, 1.2 objects with one."""
    return [entry.get("identity") if isinstance(entry, dict) else entry for entry in (changes or {}).get("persisting") or ()]


def expanded(document):
    """The report in memory from a report.json document of any 1.x version (a new object)."""
    actions = document.get("actions") or {}
    findings = [finding if "action" in finding else dict(finding, action=actions.get(finding["rule"]))
                for finding in document.get("findings", [])]
    report = {key: value for key, value in document.items() if key != "actions"}
    report["findings"] = findings
    if isinstance(document.get("changes"), dict):
        report["changes"] = dict(document["changes"], persisting=persisting_identities(document["changes"]))
    report["hosts"] = {
        host: dict(entry, findings=[findings[item] if isinstance(item, int) else item
                                    for item in entry.get("findings", [])])
        for host, entry in document.get("hosts", {}).items()
    }
    return report
