# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""report.json on disk against the report in memory (docs/report-format.md), and findings.ndjson.

In memory (report_model.build_report), every host entry holds its findings and every finding all its keys, as
the renderers read them. On disk, report 2.0 (`disk_document`) writes each finding whole, once, in the top-level
`findings` (its host, layer, severity, rule, summary, evidence, action and every other key it has), so that
`jq '.findings[] | select(.severity == "critical")'` reads it; a host entry leaves out its `findings` (they are
the top-level findings whose `host` is the host).

Documents of 1.x wrote what findings share once (1.2: `hosts.<host>.findings` as positions in the top-level
`findings`, shared actions in `actions`; 1.3: per-rule `defaults`, shared texts in `summaries` and `evidence`
referenced by position, `host` left out; `changes.persisting` as identities). `expanded` turns a document of
any version back into the report in memory, key for key; findings of a 1.3 document that shared a summary or
evidence share the same object after it (read them, do not change them in place).
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

# the keys of a finding in memory, in the order findings.make_finding writes them
FINDING_KEYS = ("rule", "layer", "severity", "host", "gpu", "summary", "evidence", "action", "fix")
SUMMARY_REF = "summary_ref"
EVIDENCE_REF = "evidence_ref"
REFERENCES = (SUMMARY_REF, EVIDENCE_REF)
# the keys findings.ndjson adds to each finding: the run it belongs to
NDJSON_RUN_KEYS = ("run_id", "time")


def disk_document(report):
    """The report as report.json holds it (2.0): whole findings once, host entries without them; the report
    itself is not changed."""
    written = dict(report)
    written["hosts"] = {host: {key: value for key, value in entry.items() if key != "findings"}
                        for host, entry in report["hosts"].items()}
    return written


def ndjson_records(report):
    """findings.ndjson's records: each finding whole, after the run's id and time (when the run finished,
    else when it started)."""
    run = report.get("run") or {}
    stamp = dict(zip(NDJSON_RUN_KEYS, (run.get("id"), run.get("finished_at") or run.get("started_at"))))
    for finding in report["findings"]:
        record = dict(stamp)
        record.update((key, value) for key, value in finding.items() if key not in NDJSON_RUN_KEYS)
        yield record


def is_1x(document):
    return str(document.get("report_version") or "1.").startswith("1.")


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


def _host_entries_of_whole_findings(hosts, findings):
    """2.0: each host entry with the findings that name it, in the order of the top-level findings."""
    by_host = {}
    for finding in findings:
        by_host.setdefault(finding.get("host"), []).append(finding)
    return {host: dict(entry, findings=by_host.get(host, [])) for host, entry in hosts.items()}


def expanded(document):
    """The report in memory from a report.json document of any version (a new object)."""
    if not is_1x(document):
        findings = [dict(finding) for finding in document.get("findings", [])]
        return dict(document, findings=findings,
                    hosts=_host_entries_of_whole_findings(document.get("hosts", {}), findings))
    return _expanded_1x(document)


def _expanded_1x(document):
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
