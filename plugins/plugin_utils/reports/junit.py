# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""junit.xml for CI dashboards, valid against the junit-10.xsd that Jenkins reads.

Layout: one testsuite per rule family (gpufleet.hardware, gpufleet.driver, gpufleet.scheduling,
gpufleet.workload, gpufleet.custom), one testcase per host with findings of that family, classname =
family, name = host. Sized for fleets: a host's testcase lists its rules and findings of the family,
and what every finding says in full (action, evidence) stays in report.json and report.html.

- critical and warning findings: <failure type="critical|warning"> (the worst severity), its message
  the failing rules (with their finding counts), its text one line per finding of the family:
  severity, rule, GPU and summary. Warnings are failures so that they show; Jenkins marks the build
  unstable, while the playbook's exit code follows fail_severity.
- info findings only: passing testcase, the finding lines in <system-out>
- a host with no finding of a family has no testcase in that suite; its suite's <properties> name the
  rules that ran (gpufleet.rules_run), so a passing rule stays visible.
- suite gpufleet.collection: one testcase per host, <error type="unreachable|failed"> when the facts
  could not be collected (its rules did not run); passing when they were, which is the host's
  testcase in a fleet where nothing was found.

Host text (host names, summaries) goes through text_safety.safe_xml_text: the characters
XML 1.0 forbids (most C0 controls, U+FFFE, U+FFFF, lone surrogates) and those that would mislead a
reader (DEL, C1, bidi overrides, zero-width characters) are written as visible escapes such as \\x1b
or \\u202e (a carriage return as \\r), so the document stays valid and the text still shows what the
host sent.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re

from ansible_collections.gpufleet.core.plugins.module_utils.vocabulary import LAYER_ORDER, LAYERS, SEVERITIES
from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.findings import severity_rank
from ansible_collections.gpufleet.core.plugins.plugin_utils.text_safety import safe_xml_text
from ansible_collections.gpufleet.core.plugins.plugin_utils.reports.since_previous import (
    junit_finding_note as history_note, junit_properties as history_properties)

COLLECTION_SUITE = "collection"
COLLECTION_CASE = "collection.gpu_facts"
FAILING_SEVERITIES = tuple(s for s in SEVERITIES if s != "info")
_ESCAPES = {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "\n": "&#10;", "\r": "&#13;", "\t": "&#9;"}
_ATTRIBUTE_SPECIALS = re.compile('[&<>"\n\r\t]')
_TEXT_SPECIALS = re.compile("[&<>\r]")


def xml_safe(value):
    """Text XML 1.0 can carry, with every unsafe character escaped visibly (text_safety.safe_xml_text)."""
    if isinstance(value, str) and value.isascii() and value.isprintable():
        return value  # the usual host name, rule or summary: safe_xml_text would return it unchanged
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


def findings_by_family_and_host(findings):
    grouped = {}
    for finding in findings:
        grouped.setdefault(rule_family(finding["rule"]), {}).setdefault(finding["host"], []).append(finding)
    return grouped


def describe_finding(finding):
    where = "GPU %s" % finding["gpu"] if finding.get("gpu") else "host"
    return "[%s] %s, %s: %s%s" % (finding["severity"], finding["rule"], where, finding["summary"], history_note(finding))


def describe_findings(findings):
    return "\n".join(describe_finding(finding) for finding in findings)


def failure_message(findings):
    """The failing rules, worst first, each with its count of findings on the host."""
    counts = {}
    for finding in findings:
        if finding["severity"] in FAILING_SEVERITIES:
            counts[finding["rule"]] = counts.get(finding["rule"], 0) + 1
    return ", ".join(rule if count == 1 else "%s (%d)" % (rule, count) for rule, count in counts.items())


def host_testcase(family, host, findings):
    """One testcase of a host's findings of one family, and whether it failed."""
    opening = '<testcase classname="%s" name="%s"' % (attribute(family), attribute(host))
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


def rules_properties(rules):
    return '<properties><property name="gpufleet.rules_run" value="%s"/></properties>' % attribute(" ".join(rules))


def family_cases(report, rules):
    """{family: (cases, rules of the family that ran)}; every family with a rule that ran has a suite."""
    grouped = findings_by_family_and_host(report["findings"])
    families = {}
    for rule in rules:
        families.setdefault(rule_family(rule), []).append(rule)
    for family in grouped:
        families.setdefault(family, [])
    by_family = {}
    for family, family_rules in families.items():
        hosts = grouped.get(family, {})
        cases = [host_testcase(family, host, hosts[host]) for host in report["hosts"] if host in hosts]
        by_family[family] = (cases, family_rules)
    return by_family


def render_junit(report, rules_run=None):
    """junit.xml text. rules_run: rule ids that ran (default: report["run"]["rules_run"])."""
    timestamp = report["run"].get("started_at")
    suites = [testsuite(COLLECTION_SUITE, collection_cases(report), timestamp, "errors", run_properties(report))]
    by_family = family_cases(report, rules_that_ran(report, rules_run))
    for family in sorted(by_family, key=family_order):
        cases, family_rules = by_family[family]
        suites.append(testsuite(family, cases, timestamp, "failures", rules_properties(family_rules)))
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
