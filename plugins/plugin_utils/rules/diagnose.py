# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Facts + policy + knowledge -> findings, for one host and for a fleet.

What depends only on the policy (compiled custom rules, the desired MIG config) is prepared once
per policy object (a PolicyPlan); Knowledge is loaded once per distinct `catalogs` override.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import datetime
import json

from ansible_collections.gpufleet.core.plugins.plugin_utils.rules import active_checks as rules_active_checks
from ansible_collections.gpufleet.core.plugins.plugin_utils.rules import bmc as rules_bmc
from ansible_collections.gpufleet.core.plugins.plugin_utils.rules import collection as rules_collection
from ansible_collections.gpufleet.core.plugins.plugin_utils.rules import driver as rules_driver
from ansible_collections.gpufleet.core.plugins.plugin_utils.rules import fabric as rules_fabric
from ansible_collections.gpufleet.core.plugins.plugin_utils.rules import hardware as rules_hardware
from ansible_collections.gpufleet.core.plugins.plugin_utils.rules import k8s as rules_k8s
from ansible_collections.gpufleet.core.plugins.plugin_utils.rules import scheduling as rules_scheduling
from ansible_collections.gpufleet.core.plugins.plugin_utils.rules import workload as rules_workload
from ansible_collections.gpufleet.core.plugins.plugin_utils.rules import workload_health as rules_workload_health
from ansible_collections.gpufleet.core.plugins.plugin_utils.rules import xid_repeat as rules_xid_repeat
from ansible_collections.gpufleet.core.plugins.module_utils.vocabulary import LAYER_ORDER
from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.findings import RULES, Context, list_rules, parse_time
from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.drift_trend import DRIFT_RULES, TREND_RULES
from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.host_clock import on_host_clock
from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.custom import compile_custom_rules, run_custom_rules
from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.knowledge import load_knowledge
from ansible_collections.gpufleet.core.plugins.plugin_utils.policy import validate_policy

# Rules that still apply when no NVIDIA stack answered (a driver/library mismatch makes NVML fail; a
# collector that did not answer on a host with NVIDIA hardware is a failed collection).
ABSENT_STACK_RULES = ("driver.kernel_userspace_mismatch", "driver.nvidia_absent", rules_collection.RULE_ID,
                      "driver.clock_offset")

# Importing a rules module registers its rules.
RULE_MODULES = (rules_collection, rules_driver, rules_hardware, rules_scheduling, rules_workload,
                rules_workload_health, rules_bmc, rules_k8s, rules_fabric, rules_xid_repeat, rules_active_checks)


def _checks(scope):
    """((RuleInfo, the check function itself), ...) in layer order: diagnose_host sets ctx.rule and calls the
    function without @rule's wrapper (one Python call less for each of the fleet's rule and GPU pairs)."""
    infos = sorted((info for info in RULES.values() if info.scope == scope and info.check is not None),
                   key=lambda info: (LAYER_ORDER[info.layer], info.id))
    return tuple((info, getattr(info.check, "__wrapped__", info.check)) for info in infos)


HOST_CHECKS = _checks("host")
GPU_CHECKS = _checks("gpu")


class PolicyPlan:
    """What diagnose prepares once per effective policy."""

    __slots__ = ("policy", "custom", "mig")

    def __init__(self, policy):
        self.policy = policy
        self.custom = compile_custom_rules(policy)
        self.mig = rules_scheduling.mig_plan(policy)


def build_plan(policy):
    return PolicyPlan(policy)


def resolve_now(now, facts):
    """The moment Xid windows count back from, on the host's clock (the times of its log): `now` (a controller
    time, datetime or ISO text) moved by the facts' clock_offset_s, else when the facts were collected (so
    replayed fixtures judge the same way every time), else the current UTC time so moved."""
    moment = parse_time(now) if now is not None else None
    if moment is None and facts:
        return parse_time(facts.get("collected_at")) or on_host_clock(utc_now(), facts)
    return on_host_clock(moment or utc_now(), facts)


def utc_now():
    return datetime.datetime.now(datetime.timezone.utc)


def make_context(host, facts, policy, knowledge, now=None, plan=None):
    return Context(host, facts, policy, knowledge, resolve_now(now, facts), plan or build_plan(policy))


def diagnose_host(host, facts, policy, knowledge, now=None, plan=None):
    """Findings of one host. facts None (unreachable or failed collection): no findings, the report
    shows the status. policy: the effective policy (validate_policy); plan: build_plan(policy) to reuse."""
    if facts is None:
        return []
    ctx = make_context(host, facts, policy, knowledge, now, plan)
    findings = []
    if not facts.get("nvidia_present"):
        for rule_id in ABSENT_STACK_RULES:
            findings.extend(RULES[rule_id].check(ctx))
        findings.extend(run_custom_rules(ctx.plan.custom, host, facts, scopes=("host",)))
        return findings
    for info, check in HOST_CHECKS:
        ctx.rule = info
        found = check(ctx)
        if found:
            findings.extend(found)
    gpu_checks = GPU_CHECKS
    for gpu in ctx.gpus:
        if gpu.get("lost"):
            continue  # hardware.gpu_lost says it all; its other values are unknown
        for info, check in gpu_checks:
            ctx.rule = info
            found = check(ctx, gpu)
            if found:
                findings.extend(found)
    findings.extend(run_custom_rules(ctx.plan.custom, host, facts))
    return findings


# ---------------------------------------------------------------- fleet

def knowledge_loader(load=None):
    """A callable policy -> Knowledge that loads once per distinct policy["catalogs"]."""
    load = load or load_knowledge
    cache = {}

    def knowledge_for(policy):
        catalogs = (policy or {}).get("catalogs") or {}
        key = json.dumps(catalogs, sort_keys=True, default=str) if any(catalogs.values()) else ""
        if key not in cache:
            cache[key] = load(catalogs if key else None)
        return cache[key]
    return knowledge_for


def _knowledge_resolver(knowledge_for):
    """knowledge_for may be a callable(policy), a Knowledge for every host, or None (shipped tables)."""
    if knowledge_for is None:
        return knowledge_loader()
    if callable(knowledge_for):
        return knowledge_for
    return lambda _policy: knowledge_for


def _default_policy():
    return validate_policy({})


class FleetDiagnosis:
    """A fleet diagnosed host by host (host(), as each host's facts are read), then the fleet rules over every
    host (fleet(), which needs only what fleet_view.fleet_view keeps of each host's facts).

    policies: {host: effective policy}; a host without one gets the default policy.
    knowledge_for: callable(policy) -> Knowledge, one Knowledge for all, or None.
    """

    def __init__(self, policies, knowledge_for=None, now=None):
        self.policies = policies or {}
        self.now = now
        self.default = None
        self._resolve = _knowledge_resolver(knowledge_for)
        self._prepared = {}

    def host(self, host, facts):
        """Findings of one host (facts None: unreachable or failed)."""
        policy = self.policies.get(host)
        if policy is None:
            self.default = self.default or _default_policy()
            policy = self.default
        key = id(policy)
        if key not in self._prepared:
            self._prepared[key] = (policy, build_plan(policy), self._resolve(policy))
        _policy, plan, knowledge = self._prepared[key]
        return diagnose_host(host, facts, policy, knowledge, self.now, plan)

    def fleet(self, hosts, findings, groups=None):
        """Adds the fleet rules' findings to findings ({host: [findings]}, in place). hosts: {host: facts or
        their fleet view, or None}; groups: as in diagnose_fleet."""
        for host, extra in fleet_findings(hosts, self.policies, groups, self.default).items():
            findings.setdefault(host, []).extend(extra)
        return findings


def diagnose_fleet(hosts, policies, knowledge_for=None, now=None, groups=None):
    """{host: findings} for {host: facts or None}, with fleet rules (driver.version_skew) added.

    policies: {host: effective policy}; a host without one gets the default policy.
    knowledge_for: callable(policy) -> Knowledge, one Knowledge for all, or None.
    groups: optional {group name: [hosts]} (inventory groups of one node type) for the skew rule; without
    it hosts that share an effective policy form a group. Either way a group is split by GPU model.
    """
    diagnosis = FleetDiagnosis(policies, knowledge_for, now)
    findings = {host: diagnosis.host(host, facts) for host, facts in hosts.items()}
    return diagnosis.fleet(hosts, findings, groups)


def _driver_versions(hosts, names):
    versions = {}
    for host in names:
        facts = hosts.get(host)
        version = ((facts or {}).get("driver") or {}).get("version") if facts and facts.get("nvidia_present") else None
        if version:
            versions[host] = version
    return versions


def _skew_applies(policy):
    driver = (policy or {}).get("driver") or {}
    return not driver.get("allow_skew") and not driver.get("pin")


def _policy_groups(hosts, policies, default):
    """Hosts that share an effective policy (same object or equal content)."""
    keys_by_id, groups = {}, {}
    for host in hosts:
        policy = policies.get(host) or default
        if id(policy) not in keys_by_id:
            keys_by_id[id(policy)] = json.dumps(policy, sort_keys=True, default=str)
        groups.setdefault(keys_by_id[id(policy)], []).append(host)
    if len(groups) == 1:
        return {"the fleet": list(hosts)}
    return {"policy group %d" % number: names for number, names in enumerate(groups.values(), 1)}


def _gpu_models(facts):
    return tuple(sorted({gpu.get("name") for gpu in (facts or {}).get("gpus") or () if gpu.get("name")}))


def skew_groups(hosts, policies, groups=None, default=None):
    """{label: [hosts]}: the given groups (or hosts sharing a policy), each split by GPU models,
    since nodes of different types may rightly run different drivers."""
    base = groups if groups is not None else _policy_groups(hosts, policies, default)
    result = {}
    for name, members in sorted(base.items()):
        by_models = {}
        for host in members:
            if host in hosts:
                by_models.setdefault(_gpu_models(hosts[host]), []).append(host)
        for models, names in sorted(by_models.items()):
            if models:
                result["%s (%s hosts)" % (name, ", ".join(models))] = names
    return result


def fleet_findings(hosts, policies, groups=None, default=None):
    """Findings of the fleet rules, {host: [findings]}."""
    default = default or (_default_policy() if any(host not in policies for host in hosts) else None)
    result = {}
    for name, group in skew_groups(hosts, policies, groups, default).items():
        members = [host for host in group if _skew_applies(policies.get(host) or default)]
        for host, extra in rules_driver.version_skew(name, _driver_versions(hosts, members)).items():
            if not any(finding["rule"] == "driver.version_skew" for finding in result.get(host, ())):
                result.setdefault(host, []).extend(extra)
        for host, extra in rules_k8s.sharing_skew(name, {host: hosts[host] for host in group}).items():
            if not any(finding["rule"] == rules_k8s.SHARING_SKEW.id for finding in result.get(host, ())):
                result.setdefault(host, []).extend(extra)
    base = groups if groups is not None else _policy_groups(hosts, policies, default)
    for name, members in sorted(base.items()):
        reachable = dict((host, hosts[host]) for host in members if hosts.get(host))
        for host, extra in rules_workload_health.framework_skew(name, reachable).items():
            kept = result.setdefault(host, [])
            # a host in several groups is told once per service and framework
            seen = set((f["rule"], f["evidence"].get("service"), f["evidence"].get("framework")) for f in kept)
            kept.extend(f for f in extra if (f["rule"], f["evidence"]["service"], f["evidence"]["framework"]) not in seen)
    for host, extra in rules_active_checks.below_peers(hosts, policies, default).items():
        result.setdefault(host, []).extend(extra)
    return result


def rules_run(policies=()):
    """Ids of every rule that runs, including the custom rules of the given policies. The history rules are not
    among them: the history step adds those it evaluated (audit/record_step.py)."""
    ids = set(RULES) - {info.id for info in DRIFT_RULES + TREND_RULES}
    for policy in policies:
        ids.update(custom.id for custom in compile_custom_rules(policy))
    return sorted(ids)


__all__ = ["diagnose_host", "diagnose_fleet", "FleetDiagnosis", "build_plan", "make_context", "knowledge_loader",
           "fleet_findings", "rules_run", "list_rules", "resolve_now"]
