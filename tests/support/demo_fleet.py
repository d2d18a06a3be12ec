"""The demo fleet (inventories/demo) read as the tests see it: hosts, policies, fixtures, its audit."""

import functools
import json
import os

import pynvml
import yaml

from ansible_collections.gpufleet.core.plugins.module_utils.collector import Collection
from ansible_collections.gpufleet.core.plugins.module_utils.facts_model import new_facts
from ansible_collections.gpufleet.core.plugins.module_utils.nvsmi_xml import parse_nvidia_smi_xml
from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.correlate import correlate
from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.diagnose import diagnose_fleet
from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.findings import at_or_above
from ansible_collections.gpufleet.core.plugins.plugin_utils.policy import policy_from_vars
from tests.support.schema_check import ROOT, assert_valid_facts
from tests.support.rule_builders import KNOWLEDGE


DEMO = os.path.join(ROOT, "inventories", "demo")


def inventory():
    with open(os.path.join(DEMO, "hosts.yml")) as handle:
        return yaml.safe_load(handle)


def groups_of_hosts(group, parents=("all",), found=None):
    """{host: [groups from the top down]} and {host: host vars} of the YAML inventory."""
    found = {} if found is None else found
    for host, host_vars in ((group.get("hosts") or {}).items()):
        found[host] = (list(parents), host_vars or {})
    for name, child in (group.get("children") or {}).items():
        groups_of_hosts(child or {}, tuple(parents) + (name,), found)
    return found


def group_vars(name):
    path = os.path.join(DEMO, "group_vars", name + ".yml")
    if not os.path.exists(path):
        return {}
    with open(path) as handle:
        return yaml.safe_load(handle) or {}


HOSTS = groups_of_hosts(inventory()["all"])


def demo_policy(host):
    groups, host_vars = HOSTS[host]
    variables = {}
    for group in groups:
        variables.update(group_vars(group))
    variables.update(host_vars)
    return policy_from_vars(variables)


@functools.lru_cache(maxsize=None)
def fixture(host):
    with open(os.path.join(DEMO, "fixtures", host + ".json")) as handle:
        return json.load(handle)


@functools.lru_cache(maxsize=None)
def demo_audit():
    """(facts, findings, causes) of the whole demo fleet. `now` is the recording time the fixtures keep:
    replayed facts carry the replay's own collected_at."""
    facts = {}
    for host in HOSTS:
        # the services audit.yml passes: the policy's workload services
        services = [service["name"] for service in demo_policy(host)["workload"]["services"]]
        facts[host], _recorded = Collection(source="replay", fixture=fixture(host), pynvml=pynvml,
                                            services=services).run()
        assert_valid_facts(facts[host])
    policies = {host: demo_policy(host) for host in HOSTS}
    findings = diagnose_fleet(facts, policies, KNOWLEDGE, now=fixture("gpu-h100-ok-01")["recorded_at"])
    causes = correlate(facts, findings, policies)
    return facts, findings, causes


def found(host, rule, severity="info"):
    return [f for f in demo_audit()[1][host] if f["rule"] == rule and at_or_above(f["severity"], severity)]


def nvidia_smi_facts(path):
    """The facts of a host whose nvidia-smi -q -x printed the file at path."""
    with open(path, encoding="utf-8") as handle:
        report = parse_nvidia_smi_xml(handle.read())
    facts = new_facts()
    facts.update(source="nvidia_smi", nvidia_present=True, collected_at="2026-11-30T06:00:00Z",
                 gather_subset=["driver", "gpus"])
    facts["driver"].update(version=report["driver"]["version"], cuda_driver_version=report["driver"]["cuda_driver_version"],
                           userspace_version=report["driver"]["version"])
    facts["gpus"] = report["gpus"]
    assert_valid_facts(facts)
    return facts
