# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""junit.xml for CI dashboards, valid against the junit-10.xsd that Jenkins reads.

Layout: one testsuite per rule family (gpufleet.hardware, gpufleet.driver, gpufleet.scheduling,
gpufleet.workload, gpufleet.custom), one testcase per host and rule with classname = rule id and
name = host. Jenkins splits classname at its last dot, so its test tree reads layer > rule > host,
and a hostname's own dots never turn into packages. A suite per host would instead bury a fleet-wide
problem (the same rule failing on 500 hosts) in 500 suites.

- a rule that ran and found nothing for a host: passing testcase
- critical and warning findings: <failure type="critical|warning">, one per testcase (the worst
  finding is the message, every finding of that host and rule is in the text). Warnings are failures
  so that they show; Jenkins marks the build unstable, while the playbook's exit code follows
  fail_severity.
- info findings only: passing testcase, the findings in <system-out>
- suite gpufleet.collection: one testcase per host, <error type="unreachable|failed"> when the facts
  could not be collected (its rules did not run, so it has no rule testcases).

Host text (host names, summaries, evidence) goes through text_safety.safe_xml_text: the characters
XML 1.0 forbids (most C0 controls, U+FFFE, U+FFFF, lone surrogates) and those that would mislead a
reader (DEL, C1, bidi overrides, zero-width characters) are written as visible escapes such as \\x1b
or \\u202e (a carriage return as \\r), so the document stays valid and the text still shows what the
host sent.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
import re

from ansible_collections.gpufleet.core.plugins.module_utils.vocabulary import LAYER_ORDER, LAYERS, SEVERITIES
from ansible_collections.gpufleet.core.plugins.plugin_utils.findings import severity_rank
from ansible_collections.gpufleet.core.plugins.plugin_utils.text_safety import safe_xml_text
from ansible_collections.gpufleet.core.plugins.plugin_utils.report_history import (
    junit_finding_note as history_note, junit_properties as history_properties)

COLLECTION_SUITE = "collection"
COLLECTION_CASE = "collection.gpu_facts"
FAILING_SEVERITIES = tuple(s for s in SEVERITIES if s != "info")
_ESCAPES = {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "\n": "&#10;", "\r": "&#13;", "\t": "&#9;"}
_ATTRIBUTE_SPECIALS = re.compile('[&<>"\n\r\t]')
_TEXT_SPECIALS = re.compile("[&<>\r]")


def xml_safe(value):
    """Text XML 1.0 can carry, with every unsafe character escaped visibly (text_safety.safe_xml_text)."""
    return safe_xml_text(value)


def attribute(value):
    return _ATTRIBUTE_SPECIALS.sub(lambda match: _ESCAPES[match.group()], xml_safe(value))


def text(value):
    return _TEXT_SPECIALS.sub(lambda match: _ESCAPES[match.group()], xml_safe(value))


def rule_family(rule):
    return str(rule).split(".", 1)[0]


def family_order(family):
    return (LAYER_ORDER[family], "") if family in LAYER_ORDER else (len(LAYERS), family)


def rules_that_ran(report, rules_run):
    """Rules given by the caller, else the run record's rules_run, plus every rule that found something."""
    if rules_run is None:
        rules_run = report["run"].get("rules_run") or []
    return sorted(set(rules_run) | set(report["summary"]["by_rule"]))


def findings_by_host_and_rule(findings):
    grouped = {}
    for finding in findings:
        grouped.setdefault((finding["host"], finding["rule"]), []).append(finding)
    return grouped


def describe_finding(finding):
    where = "GPU %s" % finding["gpu"] if finding.get("gpu") else "host"
    lines = ["[%s] %s: %s%s" % (finding["severity"], where, finding["summary"], history_note(finding)), "  action: %s" % finding["action"]]
    if finding.get("fix"):
        lines.append("  fix: %s" % finding["fix"])
    lines.append("  evidence: %s" % json.dumps(finding.get("evidence"), sort_keys=True, default=str))
    return "\n".join(lines)


def describe_findings(findings):
    return "\n".join(describe_finding(finding) for finding in findings)


def failure_message(findings):
    message = findings[0]["summary"]
    if len(findings) > 1:
        message += " (and %d more)" % (len(findings) - 1)
    return message


def rule_testcase(rule, host, findings):
    """One testcase and whether it failed."""
    opening = '<testcase classname="%s" name="%s"' % (attribute(rule), attribute(host))
    if not findings:
        return opening + "/>", False
    findings = sorted(findings, key=lambda finding: -severity_rank(finding["severity"]))
    if findings[0]["severity"] in FAILING_SEVERITIES:
        body = '<failure type="%s" message="%s">%s</failure>' % (
            attribute(findings[0]["severity"]), attribute(failure_message(findings)), text(describe_findings(findings)))
        return "%s>%s</testcase>" % (opening, body), True
    return "%s><system-out>%s</system-out></testcase>" % (opening, text(describe_findings(findings))), False


def collection_testcase(host, entry):
    opening = '<testcase classname="%s" name="%s"' % (COLLECTION_CASE, attribute(host))
    if entry["status"] == "ok":
        return opening + "/>", False
    message = entry.get("message") or entry["status"]
    body = '<error type="%s" message="%s">%s</error>' % (attribute(entry["status"]), attribute(message), text(message))
    return "%s>%s</testcase>" % (opening, body), True


def run_properties(report):
    """<properties> of the run: its status (complete, partial, failed) and why, fail severity, report version."""
    run = report["run"]
    pairs = [("gpufleet.run_status", run.get("status") or "complete"),
             ("gpufleet.run_status_reason", run.get("status_reason") or ""),
             ("gpufleet.fail_severity", report["summary"]["fail_severity"]),
             ("gpufleet.report_version", report.get("report_version") or "")] + history_properties(report)
    items = "".join('<property name="%s" value="%s"/>' % (attribute(name), attribute(value)) for name, value in pairs)
    return "<properties>%s</properties>" % items


def testsuite(name, cases, timestamp, failure_kind, properties=None):
    """cases: [(xml, failed)]; failure_kind says whether failed cases count as failures or errors."""
    failed = sum(1 for _xml, is_failed in cases if is_failed)
    counts = {"failures": failed if failure_kind == "failures" else 0, "errors": failed if failure_kind == "errors" else 0}
    opening = '<testsuite name="gpufleet.%s" tests="%d" failures="%d" errors="%d" skipped="0"' % (
        attribute(name), len(cases), counts["failures"], counts["errors"])
    if timestamp:
        opening += ' timestamp="%s"' % attribute(timestamp)
    lines = [opening + ">"]
    if properties:
        lines.append("    " + properties)
    lines.extend("    " + xml for xml, _failed in cases)
    lines.append("  </testsuite>")
    return "  " + "\n".join(lines), len(cases), counts


def collection_cases(report):
    return [collection_testcase(host, entry) for host, entry in report["hosts"].items()]


def hosts_for_rule(rule, host_entries, hosts_with_findings):
    """Every ok host, and any other host that has a finding for this rule, in report order."""
    return [
        host for host, entry in host_entries.items()
        if entry["status"] == "ok" or host in hosts_with_findings.get(rule, ())
    ]


def rule_cases_by_family(report, rules):
    grouped = findings_by_host_and_rule(report["findings"])
    hosts_with_findings = {}
    for host, rule in grouped:
        hosts_with_findings.setdefault(rule, set()).add(host)
    by_family = {}
    for rule in rules:
        cases = by_family.setdefault(rule_family(rule), [])
        for host in hosts_for_rule(rule, report["hosts"], hosts_with_findings):
            cases.append(rule_testcase(rule, host, grouped.get((host, rule))))
    return by_family


def render_junit(report, rules_run=None):
    """junit.xml text. rules_run: rule ids that ran (default: report["run"]["rules_run"])."""
    timestamp = report["run"].get("started_at")
    suites = [testsuite(COLLECTION_SUITE, collection_cases(report), timestamp, "errors", run_properties(report))]
    by_family = rule_cases_by_family(report, rules_that_ran(report, rules_run))
    for family in sorted(by_family, key=family_order):
        suites.append(testsuite(family, by_family[family], timestamp, "failures"))
    totals = {
        "tests": sum(tests for _xml, tests, _counts in suites),
        "failures": sum(counts["failures"] for _xml, _tests, counts in suites),
        "errors": sum(counts["errors"] for _xml, _tests, counts in suites),
    }
    header = '<testsuites name="%s" tests="%d" failures="%d" errors="%d">' % (
        attribute("gpufleet audit %s" % (report["run"].get("id") or "")).strip(),
        totals["tests"], totals["failures"], totals["errors"])
    parts = ['<?xml version="1.0" encoding="UTF-8"?>', header]
    parts.extend(xml for xml, _tests, _counts in suites)
    parts.append("</testsuites>")
    return "\n".join(parts) + "\n"
