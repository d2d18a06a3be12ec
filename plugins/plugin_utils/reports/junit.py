# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""junit.xml for CI dashboards, valid against the junit-10.xsd that Jenkins reads.

Layout: one testsuite per rule family (gpufleet.hardware, gpufleet.driver, gpufleet.scheduling,
gpufleet.workload, gpufleet.custom ...) that had a rule run, and in each one testcase per host of the run,
classname = family, name = host: every host has its test cases, passing ones included, so CI counts them and
keeps their history. What every finding says in full (action, evidence) stays in report.json and report.html.

- A testcase fails (<failure type="<worst severity>">) when a finding of its family on its host is at or above
  the run's fail severity (run.fail_severity), as the exit status does (model.fails_at): with the default
  critical, warnings pass; fail_severity warning makes them failures; none never fails. The failure's message
  names the failing rules (with their finding counts), its text one line per finding of the family: severity,
  rule, GPU and summary. Nothing in it changes from run to run for the same finding (no first_seen, no run
  counts, no durations), so CI's history of the testcase means something.
- A testcase without a failing finding passes; the lines of its findings below the threshold in <system-out>.
- A host whose facts could not be collected: its family testcases are <skipped> (its rules did not run), and
  suite gpufleet.collection has its <error type="unreachable|failed">; there every other host passes.
- Each family suite's <properties> name the rules that ran (gpufleet.rules_run).

Host text (host names, summaries) goes through text_safety.safe_xml_text: the characters
XML 1.0 forbids (most C0 controls, U+FFFE, U+FFFF, lone surrogates) and those that would mislead a
reader (DEL, C1, bidi overrides, zero-width characters) are written as visible escapes such as \\x1b
or \\u202e (a carriage return as \\r), so the document stays valid and the text still shows what the
host sent.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re

from ansible_collections.gpufleet.core.plugins.module_utils.vocabulary import LAYER_ORDER, LAYERS
from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.findings import severity_rank
from ansible_collections.gpufleet.core.plugins.plugin_utils.text_safety import safe_xml_text
from ansible_collections.gpufleet.core.plugins.plugin_utils.reports.model import fails_at
from ansible_collections.gpufleet.core.plugins.plugin_utils.reports.since_previous import (
    junit_properties as history_properties)

COLLECTION_SUITE = "collection"
COLLECTION_CASE = "collection.gpu_facts"
PASSED, FAILED, SKIPPED = "passed", "failed", "skipped"
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
    """The finding's line: the same for the same finding in every run (nothing from the store's history)."""
    where = "GPU %s" % finding["gpu"] if finding.get("gpu") else "host"
    return "[%s] %s, %s: %s" % (finding["severity"], finding["rule"], where, finding["summary"])


def describe_findings(findings):
    return "\n".join(describe_finding(finding) for finding in findings)


def failure_message(failing):
    """The failing rules, worst first, each with its count of failing findings on the host."""
    counts = {}
    for finding in failing:
        counts[finding["rule"]] = counts.get(finding["rule"], 0) + 1
    return ", ".join(rule if count == 1 else "%s (%d)" % (rule, count) for rule, count in counts.items())


def host_testcase(family, host, findings, fail_severity):
    """One host's testcase of one family, and its outcome."""
    opening = '<testcase classname="%s" name="%s"' % (attribute(family), attribute(host))
    if not findings:
        return opening + "/>", PASSED
    findings = sorted(findings, key=lambda finding: -severity_rank(finding["severity"]))
    failing = [finding for finding in findings if fails_at(finding["severity"], fail_severity)]
    if failing:
        body = '<failure type="%s" message="%s">%s</failure>' % (
            attribute(findings[0]["severity"]), attribute(failure_message(failing)), text(describe_findings(findings)))
        return "%s>%s</testcase>" % (opening, body), FAILED
    return "%s><system-out>%s</system-out></testcase>" % (opening, text(describe_findings(findings))), PASSED


def skipped_testcase(family, host, entry):
    """A host whose facts were not collected: its rules did not run."""
    message = "not audited: the host's facts were not collected (%s)" % entry["status"]
    return '<testcase classname="%s" name="%s"><skipped message="%s"/></testcase>' % (
        attribute(family), attribute(host), attribute(message)), SKIPPED


def collection_testcase(host, entry):
    opening = '<testcase classname="%s" name="%s"' % (COLLECTION_CASE, attribute(host))
    if entry["status"] == "ok":
        return opening + "/>", PASSED
    message = entry.get("message") or entry["status"]
    body = '<error type="%s" message="%s">%s</error>' % (attribute(entry["status"]), attribute(message), text(message))
    return "%s>%s</testcase>" % (opening, body), FAILED


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
    """cases: [(xml, outcome)]; failure_kind says whether failed cases count as failures or errors."""
    failed = sum(1 for _xml, outcome in cases if outcome == FAILED)
    counts = {"failures": failed if failure_kind == "failures" else 0, "errors": failed if failure_kind == "errors" else 0,
              "skipped": sum(1 for _xml, outcome in cases if outcome == SKIPPED)}
    opening = '<testsuite name="gpufleet.%s" tests="%d" failures="%d" errors="%d" skipped="%d"' % (
        attribute(name), len(cases), counts["failures"], counts["errors"], counts["skipped"])
    if timestamp:
        opening += ' timestamp="%s"' % attribute(timestamp)
    lines = [opening + ">"]
    if properties:
        lines.append("    " + properties)
    lines.extend("    " + xml for xml, _outcome in cases)
    lines.append("  </testsuite>")
    return "  " + "\n".join(lines), len(cases), counts


def collection_cases(report):
    return [collection_testcase(host, entry) for host, entry in report["hosts"].items()]


def rules_properties(rules):
    return '<properties><property name="gpufleet.rules_run" value="%s"/></properties>' % attribute(" ".join(rules))


def family_testcase(family, host, entry, findings, fail_severity):
    if entry["status"] != "ok" and not findings:
        return skipped_testcase(family, host, entry)
    return host_testcase(family, host, findings, fail_severity)


def family_cases(report, rules):
    """{family: (cases, rules of the family that ran)}; every family with a rule that ran or a finding has a
    suite, with a testcase for every host."""
    grouped = findings_by_family_and_host(report["findings"])
    fail_severity = report["run"].get("fail_severity")
    families = {}
    for rule in rules:
        families.setdefault(rule_family(rule), []).append(rule)
    for family in grouped:
        families.setdefault(family, [])
    by_family = {}
    for family, family_rules in families.items():
        hosts = grouped.get(family, {})
        cases = [family_testcase(family, host, entry, hosts.get(host, []), fail_severity)
                 for host, entry in report["hosts"].items()]
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
