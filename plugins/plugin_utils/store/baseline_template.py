# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The baseline template of the method, per baseline group: GPU models and counts, driver and CUDA
versions, isolation (MIG, compute mode, persistence), worker caps and thresholds (the policy the
known-good run was audited with), the known-good run.

One set of rows (`group_template`) that two renderers print: `gpufleet baseline show --markdown`
(render_markdown, from the store: every host of each baseline run) and report.html (report_html, from
report.json's `baselines`: the audit's hosts that have a baseline, with the facts the drift rules compare
against, audit/record_step.py)."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
from collections import Counter

from ansible_collections.gpufleet.core.plugins.plugin_utils.store.queries import baselines, run_facts, run_record
from ansible_collections.gpufleet.core.plugins.plugin_utils.store.write import stored_policies

NO_FACTS = "unknown (facts no longer kept)"
NO_POLICY = "unknown (the run kept no policy)"


def _values(counter, missing=NO_FACTS):
    if not counter:
        return missing
    return ", ".join("%s (%d)" % (value, count) for value, count in sorted(counter.items(), key=lambda item: -item[1]))


def group_profile(facts_by_host):
    """Counters of what the hosts of a baseline run had."""
    profile = {name: Counter() for name in ("models", "gpu_count", "driver", "cuda", "isolation", "persistence")}
    for facts in facts_by_host.values():
        gpus = [gpu for gpu in facts.get("gpus") or () if not gpu.get("lost")]
        driver = facts.get("driver") or {}
        profile["gpu_count"][len(gpus)] += 1
        profile["driver"][driver.get("version") or "none"] += 1
        profile["cuda"][driver.get("cuda_driver_version") or "none"] += 1
        for gpu in gpus:
            profile["models"][gpu.get("name") or "unknown"] += 1
            mig = "MIG" if (gpu.get("mig") or {}).get("mode_current") else "no MIG"
            profile["isolation"]["%s, compute mode %s" % (mig, gpu.get("compute_mode"))] += 1
            profile["persistence"]["on" if gpu.get("persistence_mode") else "off"] += 1
    return profile


def worker_caps(policy):
    """A policy's worker caps in one line: each service's workers per GPU, the processes per GPU."""
    workload = policy.get("workload") or {}
    caps = ["%s %s per GPU" % (service.get("name"), service["workers_per_gpu"])
            for service in workload.get("services") or () if service.get("workers_per_gpu") is not None]
    if workload.get("max_processes_per_gpu") is not None:
        caps.append("at most %s processes per GPU" % workload["max_processes_per_gpu"])
    return "; ".join(caps) or "not limited"


def thresholds(policy):
    return ", ".join("%s %s" % (key, json.dumps(value)) for key, value in sorted((policy.get("thresholds") or {}).items()))


def policy_profile(policies):
    """Counters of the worker caps and thresholds of the hosts' policies (hosts)."""
    profile = {"caps": Counter(), "thresholds": Counter()}
    for policy in policies:
        profile["caps"][worker_caps(policy or {})] += 1
        profile["thresholds"][thresholds(policy or {}) or "the defaults"] += 1
    return profile


def group_template(group, run_id, started_at, set_at, facts_by_host, policies):
    """{"group", "run", "rows": [[label, text]]}: one group's template, as both renderers print it.
    facts_by_host: the baseline run's facts of the group's hosts; policies: their policies in that run."""
    profile = group_profile(facts_by_host)
    kept = policy_profile(policies)
    return {"group": group, "run": run_id, "rows": [
        ["run", "%s (started %s, set %s)" % (run_id, started_at, set_at)],
        ["hosts with facts", str(len(facts_by_host))],
        ["GPU models (GPUs)", _values(profile["models"])],
        ["GPUs per host (hosts)", _values(profile["gpu_count"])],
        ["driver (hosts)", _values(profile["driver"])],
        ["CUDA driver API (hosts)", _values(profile["cuda"])],
        ["isolation (GPUs)", _values(profile["isolation"])],
        ["persistence mode (GPUs)", _values(profile["persistence"])],
        ["worker caps (hosts)", _values(kept["caps"], NO_POLICY)],
        ["thresholds (hosts)", _values(kept["thresholds"], NO_POLICY)],
    ]}


def run_policies(connection, run_pk, hosts=None):
    """{host: effective policy} the run was audited with (kept in its record by store/write.py)."""
    policies = stored_policies(run_record(connection, run_pk))
    return policies if hosts is None else {host: policies[host] for host in hosts if host in policies}


def templates_from_store(connection):
    """The template of every baseline that is set, over all the hosts of its run."""
    return [group_template(group, row.run_id, row.started_at, row.set_at, run_facts(connection, row.id),
                           run_policies(connection, row.id).values())
            for group, row in baselines(connection).items()]


def templates_for_hosts(connection, chosen):
    """The templates of the baselines the audit's hosts compare with; chosen: {host: (baseline facts, baseline
    run row, group)} (store.baseline.baseline_facts), over those hosts only."""
    groups = {}
    for host, (facts, row, group) in chosen.items():
        groups.setdefault(group, (row, {}))[1][host] = facts
    return [group_template(group, row.run_id, row.started_at, row.set_at, facts,
                           run_policies(connection, row.id, facts).values())
            for group, (row, facts) in sorted(groups.items())]


def group_title(group):
    return "the whole fleet" if group == "all" else "group %s" % group


FOOTNOTE = "Drift from these runs is reported as baseline_* findings (docs/history.md)."


def markdown(templates):
    if not templates:
        return "# Baselines\n\nNo baseline is set (gpufleet baseline set RUN|latest [--group G]).\n"
    lines = ["# Baselines", ""]
    for template in templates:
        lines += ["## %s" % group_title(template["group"]), "", "| | known good |", "|---|---|"]
        lines += ["| %s | %s |" % (label, value.replace("|", "\\|")) for label, value in template["rows"]]
        lines.append("")
    lines.append(FOOTNOTE)
    return "\n".join(lines) + "\n"


def render_markdown(connection):
    return markdown(templates_from_store(connection))
