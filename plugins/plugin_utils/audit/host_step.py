# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A host's own step of the audit: its facts checked against the facts schema, the findings of the per-host
rules, its fleet view (fleet_view.py) and summary line, its facts file and what the run store keeps of it.

It runs in the host's Ansible worker as its result arrives (worker_step, the gpu_facts action's one call), so that
audit_report reads neither the host's facts nor its facts file and only runs what needs the whole fleet; for a
host whose worker did not diagnose it, audit_report makes the same step on the controller (audit/run.py), with
the same functions: host_step for the findings, view and line, write_facts for the facts file.

The result carries the worker's diagnosis as gpufleet_diagnosis, the JSON text of {"policy": digest of the
effective policy it was made with, "findings": [...], "view": {...}, "line": "..."}: one string, which
ansible-playbook keeps for every host to the end of the play at a tenth of the memory the same data takes as
Python objects (bench/README.md, section 4). audit_report uses it only where the digest is that of the host's
policy in its own run and the shape is right; anything else is diagnosed again from the facts.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import collections
import hashlib
import json
import os

from ansible_collections.gpufleet.core.plugins.plugin_utils.audit.facts_validation import (
    facts_problems, refusal_message)
from ansible_collections.gpufleet.core.plugins.plugin_utils.audit.fleet_view import fleet_view
from ansible_collections.gpufleet.core.plugins.plugin_utils.audit.host_summary import (
    collection_status, result_facts, summary_line)
from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.diagnose import FleetDiagnosis
from ansible_collections.gpufleet.core.plugins.plugin_utils.run_folder import (
    FACTS_FILE_KEY, FACTS_FOLDER, facts_file, facts_file_name, facts_file_text, write_facts_file)
from ansible_collections.gpufleet.core.plugins.plugin_utils.store.extract import STORE_EXTRACT_KEY, host_extract

DIAGNOSIS_KEY = "gpufleet_diagnosis"
DIAGNOSIS_FIELDS = frozenset(("policy", "findings", "view", "line"))
# the keys the worker's step adds to a host's result; a module's own result may not carry them
WORKER_KEYS = (FACTS_FILE_KEY, STORE_EXTRACT_KEY, DIAGNOSIS_KEY)

HostStep = collections.namedtuple("HostStep", "findings view line failure")


def host_step(host, result, facts, diagnose):
    """One host's findings (diagnose(host, facts), facts None for a failed collection), fleet view and summary
    line, the same in its worker and on the controller. A rule that fails on the facts gives no findings and
    failure, the reason, with which the host's collection is reported failed, never the whole run's crash."""
    try:
        return HostStep(diagnose(host, facts), fleet_view(facts), summary_line(host, result, facts), None)
    except Exception as exc:  # pylint: disable=broad-except  # one host's facts must not cost the fleet its report
        failure = " ".join(("the host's facts could not be diagnosed (%s: %s); report this with its facts" % (
            type(exc).__name__, exc)).split())
        return HostStep([], fleet_view(None), summary_line(host, {"failed": True, "msg": failure}), failure)


def write_facts(facts_dir, name, facts, mode=None, extract=False):
    """Writes facts_dir/<name>.json (run_folder.write_facts_file); returns (its path relative to the run folder,
    the run store's extract of its text (store/extract.py) when extract, else None). ValueError: facts a strict
    JSON file cannot hold (NaN, Infinity)."""
    text = facts_file_text(facts)
    write_facts_file(os.path.join(facts_dir, "%s.json" % name), facts, mode, text)
    return facts_file(name), host_extract(text, facts) if extract else None


def check_facts(result):
    """A result whose facts do not match the facts schema (audit/facts_validation.py) becomes the host's failed
    collection, with what is wrong, and without the facts: nothing after it reads them."""
    if collection_status(result) != "ok":
        return
    try:
        problems = facts_problems(result["ansible_facts"]["gpufleet"])
    except (OSError, ValueError) as exc:  # the schema itself: no facts are taken unchecked
        problems = ["the facts schema could not be read: %s" % exc]
    if not problems:
        return
    result.update(failed=True, msg=refusal_message(problems))
    _drop_facts(result)


def _drop_facts(result):
    result["ansible_facts"] = dict(result["ansible_facts"])
    del result["ansible_facts"]["gpufleet"]
    if not result["ansible_facts"]:
        del result["ansible_facts"]


def policy_digest(policy):
    """SHA-1 of the policy's canonical JSON: the same policy gives the same digest in every process."""
    text = json.dumps(policy, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha1(text.encode("utf-8", "backslashreplace")).hexdigest()


class NotDiagnosed(ValueError):
    """The host's rules failed on its facts in the worker; audit_report diagnoses it again and reports why."""


def host_diagnosis(host, result, policy, knowledge_for=None):
    """The diagnosis of one host whose registered result holds its facts (ansible_facts.gpufleet), as JSON text,
    made by host_step with the diagnosis audit_report makes of a host of this policy; NotDiagnosed with the
    reason when a rule fails on the facts."""
    step = host_step(host, result, result_facts(result), FleetDiagnosis({host: policy}, knowledge_for).host)
    if step.failure is not None:
        raise NotDiagnosed(step.failure)
    return json.dumps({"policy": policy_digest(policy), "findings": step.findings, "view": step.view,
                       "line": step.line}, separators=(",", ":"), default=str)


def worker_step(result, host, hosts, run_dir=None, policy=None, keep_facts=True, knowledge_for=None):
    """The host's own step in its worker, on its registered result holding its facts (in place): the facts
    checked (check_facts); with policy, the diagnosis (DIAGNOSIS_KEY); with run_dir, its facts file, named in
    the result (FACTS_FILE_KEY, relative to run_dir) with the run store's extract (STORE_EXTRACT_KEY), and then,
    unless keep_facts, the facts leave the result. What fails here is left to audit_report, with a warning."""
    check_facts(result)
    if policy is not None and collection_status(result) == "ok":
        try:
            result[DIAGNOSIS_KEY] = host_diagnosis(host, result, policy, knowledge_for)
        except Exception as exc:  # pylint: disable=broad-except  # the controller diagnoses the host instead
            result.setdefault("warnings", []).append("the host was not diagnosed in the worker: %s" % exc)
    if run_dir and collection_status(result) == "ok":
        facts_dir = os.path.join(run_dir, FACTS_FOLDER)
        try:
            os.makedirs(facts_dir, exist_ok=True)
            result[FACTS_FILE_KEY], result[STORE_EXTRACT_KEY] = write_facts(
                facts_dir, facts_file_name(host, hosts or [host]), result["ansible_facts"]["gpufleet"], extract=True)
        except (OSError, ValueError) as exc:
            # the controller writes it with the reports instead (audit/run.py host_status)
            result.setdefault("warnings", []).append("facts file not written in the worker: %s" % exc)
            return result
        if not keep_facts:
            _drop_facts(result)
    return result


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
