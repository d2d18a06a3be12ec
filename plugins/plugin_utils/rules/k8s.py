# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Scheduling-layer rules on a Kubernetes node's GPU sharing (facts: kubernetes): what the node advertises
against the GPUs it has, time slicing or MPS where the policy wants another sharing.mode, and sharing
that differs between the nodes of one group (a fleet rule, called by diagnose.fleet_findings)."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
from collections import Counter

from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.findings import declare_rule, rule

GPU_RESOURCE = "nvidia.com/gpu"
MIG_PREFIX = "nvidia.com/mig-"
SHARING_MODES = {"time_slicing": "time_slicing", "mps": "mps"}

SHARING_SKEW = declare_rule(
    "scheduling.k8s_sharing_skew", "scheduling", "warning",
    "The NVIDIA device plugin shares GPUs differently on nodes of one group (strategy, replicas, renaming)",
    scope="fleet")


def _kubernetes(facts):
    kubernetes = (facts or {}).get("kubernetes")
    return kubernetes if isinstance(kubernetes, dict) and kubernetes.get("node") else None


def _mig_devices(gpu):
    """MIG devices of a MIG-enabled GPU, as profile names (one per compute instance)."""
    devices = []
    for instance in (gpu.get("mig") or {}).get("gpu_instances") or ():
        for compute in instance.get("compute_instances") or [{}]:
            devices.append(compute.get("profile_name") or instance.get("profile_name") or "unknown")
    return devices


def _mig_strategy(kubernetes):
    sharing = kubernetes.get("sharing") or {}
    return sharing.get("mig_strategy") or (kubernetes.get("labels") or {}).get("nvidia.com/mig.strategy") or "none"


def expected_resources(gpus, kubernetes):
    """{resource: count} that the device plugin should advertise for these GPUs with this config."""
    strategy = _mig_strategy(kubernetes)
    full, mig = 0, []
    for gpu in gpus:
        if (gpu.get("mig") or {}).get("mode_current") and strategy != "none":
            mig.extend(_mig_devices(gpu))
        else:
            full += 1
    expected = {GPU_RESOURCE: full}
    if strategy == "single":
        expected[GPU_RESOURCE] += len(mig)
    elif strategy == "mixed":
        for profile, count in Counter(mig).items():
            expected[MIG_PREFIX + profile] = count
    sharing = kubernetes.get("sharing") or {}
    if sharing.get("strategy") in SHARING_MODES:
        for resource in sharing.get("resources") or ():
            name, replicas = resource.get("name"), resource.get("replicas") or 1
            if name in expected:
                count = expected[name] * replicas
                if sharing.get("rename_by_default"):
                    expected[name] = 0
                    name += ".shared"
                expected[name] = count
    return expected


@rule("scheduling.k8s_allocatable_mismatch", "scheduling", "warning",
      "The node advertises other nvidia.com resources than its GPUs and the device plugin's sharing config give "
      "(a GPU lost, or the plugin misconfigured)")
def allocatable_mismatch(ctx):
    kubernetes = _kubernetes(ctx.facts)
    resources = (kubernetes or {}).get("resources")
    if not resources or not ctx.gpus:
        return ()
    advertised = resources.get("allocatable") or {}
    expected = expected_resources(ctx.gpus, kubernetes)
    names = sorted(set(expected) | {name for name in advertised if name.startswith((GPU_RESOURCE, MIG_PREFIX))})
    differ = {name: {"expected": expected.get(name, 0), "advertised": advertised.get(name, 0)} for name in names
              if expected.get(name, 0) != advertised.get(name, 0)}
    if not differ:
        return ()
    lost = [gpu.get("pci_bus_id") for gpu in ctx.gpus if gpu.get("lost")]
    fewer = any(item["advertised"] < item["expected"] for item in differ.values())
    summary = "; ".join("%s %d, expected %d" % (name, item["advertised"], item["expected"]) for name, item in differ.items())
    return [ctx.finding(
        None, "Node %s advertises %s (%d GPUs on the host%s)" % (
            kubernetes.get("node_name"), summary, len(ctx.gpus), ", %d lost" % len(lost) if lost else ""),
        {"differences": differ, "advertised": advertised, "expected": expected, "source": resources.get("source"),
         "sharing": kubernetes.get("sharing"), "mig_strategy": _mig_strategy(kubernetes), "lost_gpus": lost},
        ("A GPU is missing from what pods can get: check the hardware findings (a GPU that fell off the bus or was lost) and the device "
         "plugin's log (unhealthy devices); restart the plugin pod once the GPU is back." if fewer else
         "The device plugin advertises more than the GPUs and its config give: check its config (replicas, "
         "migStrategy) and restart the plugin pod after a change of its config or of the MIG layout."))]


@rule("scheduling.k8s_sharing_policy", "scheduling", "warning",
      "The device plugin time-slices or shares GPUs through MPS where the policy's sharing.mode says otherwise "
      "(exclusive GPUs, MIG, or the other sharing)")
def sharing_policy(ctx):
    kubernetes = _kubernetes(ctx.facts)
    sharing = (kubernetes or {}).get("sharing") or {}
    wanted = (ctx.policy.get("sharing") or {}).get("mode")
    strategy = sharing.get("strategy")
    if strategy not in SHARING_MODES or wanted is None or wanted == SHARING_MODES[strategy]:
        return ()
    replicas = {item["name"]: item.get("replicas") for item in sharing.get("resources") or ()}
    return [ctx.finding(
        None, "The device plugin shares GPUs by %s (%s) while the policy wants sharing.mode %s" % (
            strategy.replace("_", " "), ", ".join("%s x%s" % pair for pair in sorted(replicas.items())), wanted),
        {"strategy": strategy, "replicas": replicas, "source": sharing.get("source"),
         "config_name": sharing.get("config_name"), "sharing_mode": wanted},
        "Pods of services that need %s GPUs get a replica of a shared GPU: remove the sharing from the device "
        "plugin config for this node (or label the node with another nvidia.com/device-plugin.config), or change "
        "sharing.mode if sharing is intended." % wanted.replace("_", " "))]


def _device_health(ctx):
    return ((_kubernetes(ctx.facts) or {}).get("device_health")) or {}


def _fewer_allocatable(kubernetes, resource):
    resources = kubernetes.get("resources") or {}
    capacity, allocatable = resources.get("capacity") or {}, resources.get("allocatable") or {}
    return resource in capacity and allocatable.get(resource, 0) < capacity[resource]


@rule("scheduling.k8s_device_unhealthy", "scheduling", "warning",
      "The device plugin marked GPUs (or MIG devices) unhealthy, or pods were rejected for lack of healthy "
      "devices (critical when the unhealthy devices are gone from what the node can allocate or pods were "
      "rejected: rejected pods are never retried)")
def device_unhealthy(ctx):
    health = _device_health(ctx)
    kubernetes = _kubernetes(ctx.facts) or {}
    unhealthy = health.get("unhealthy") or []
    rejected = [item for item in health.get("admission_failures") or () if item.get("kind") == "unhealthy_devices"]
    if not unhealthy and not rejected:
        return ()
    resources = sorted({item["resource"] for item in unhealthy} | {name for item in rejected for name in item["resources"]})
    lost = [name for name in resources if _fewer_allocatable(kubernetes, name)]
    devices = ", ".join("%s%s" % (item["device"], " (Xid %s)" % item["xid"] if item.get("xid") is not None else "")
                        for item in unhealthy[:8])
    return [ctx.finding(
        None,
        "Node %s: %s%s" % (kubernetes.get("node_name"),
                           "the device plugin marked %d devices unhealthy: %s" % (len(unhealthy), devices)
                           if unhealthy else "pods were rejected: no healthy %s" % ", ".join(resources),
                           "; %d pods rejected at admission" % len(rejected) if rejected and unhealthy else ""),
        {"unhealthy": unhealthy[:16], "recovered": health.get("recovered") or [], "admission_failures": rejected[:8],
         "resources": resources, "fewer_allocatable": lost, "sources": health.get("sources")},
        "Look at the GPU behind each device (its Xids and hardware findings); the device plugin does not take a "
        "device back by itself on every version: restart the plugin pod once the GPU is healthy (reset or "
        "replaced), and resubmit the rejected pods.",
        severity="critical" if rejected or lost else None)]


@rule("scheduling.k8s_admission_rejected", "scheduling", "warning",
      "Pods were rejected at admission for their request (more replicas of a shared GPU than "
      "failRequestsGreaterThanOne allows, or another device plugin refusal)")
def admission_rejected(ctx):
    rejected = [item for item in _device_health(ctx).get("admission_failures") or ()
                if item.get("kind") != "unhealthy_devices"]
    if not rejected:
        return ()
    first = rejected[0]
    return [ctx.finding(
        None,
        "%d pods rejected at admission: %s" % (len(rejected), "asked for %s x%s where a shared resource allows %s" % (
            ", ".join(first["resources"]), first["requested"], first["limit"])
            if first["kind"] == "shared_request_too_large" else first["reason"]),
        {"admission_failures": rejected[:8]},
        "A job asks for more than the device plugin hands out: with shared GPUs a pod gets one replica (ask for "
        "nvidia.com/gpu: 1, or unset failRequestsGreaterThanOne knowing the replicas share one GPU); the node is "
        "healthy.")]


def sharing_signature(facts):
    """What must agree across a group: the strategy, replicas per resource, renaming, request limit, MIG
    strategy; None for a host that is no Kubernetes node or whose config was not found."""
    kubernetes = _kubernetes(facts)
    sharing = (kubernetes or {}).get("sharing")
    if not sharing or sharing.get("error"):
        return None
    return json.dumps({
        "strategy": sharing.get("strategy"),
        "replicas": sorted((item["name"], item.get("replicas")) for item in sharing.get("resources") or ()),
        "rename_by_default": sharing.get("rename_by_default"),
        "fail_requests_greater_than_one": sharing.get("fail_requests_greater_than_one"),
        "mig_strategy": sharing.get("mig_strategy"),
    }, sort_keys=True)


def sharing_skew(group_name, hosts):
    """{host: [finding]} for the nodes of a group whose sharing differs from that of most of them.
    hosts: {host: facts} of the group."""
    signatures = {host: sharing_signature(facts) for host, facts in hosts.items()}
    signatures = {host: signature for host, signature in signatures.items() if signature is not None}
    if len(set(signatures.values())) < 2:
        return {}
    counts = Counter(signatures.values())
    reference = sorted(counts, key=lambda signature: (-counts[signature], signature))[0]
    findings = {}
    for host, signature in signatures.items():
        if signature == reference:
            continue
        findings[host] = [SHARING_SKEW.finding(
            host, None,
            "GPU sharing on this node (%s) differs from most nodes of %s (%s)" % (
                _describe(signature), group_name, _describe(reference)),
            {"sharing": json.loads(signature), "group_reference": json.loads(reference), "group": group_name,
             "nodes_per_sharing": {_describe(key): count for key, count in counts.items()}},
            "Give the nodes of one pool one device plugin config (the same nvidia.com/device-plugin.config label), "
            "so that a pod gets the same share of a GPU wherever it lands.")]
    return findings


def _describe(signature):
    data = json.loads(signature)
    if data["strategy"] == "none":
        return "no sharing"
    replicas = ", ".join("%s x%s" % (name, count) for name, count in data["replicas"])
    return "%s %s%s" % (data["strategy"].replace("_", " "), replicas, ", renamed" if data["rename_by_default"] else "")


@rule("scheduling.k8s_operator_not_ready", "scheduling", "warning",
      "The GPU Operator's controller says its ClusterPolicy is not ready: the states it names (device plugin, "
      "feature discovery, validation ...) have not converged and the node's GPUs may not be schedulable")
def operator_not_ready(ctx):
    operator = _device_health(ctx).get("operator") or {}
    if operator.get("ready") is not False:
        return ()
    states = operator.get("states_not_ready") or []
    return [ctx.finding(
        None, "The GPU Operator's ClusterPolicy is not ready%s" % (
            ": %s" % ", ".join(states) if states else " (%d steps not ready)" % operator.get("steps_not_ready", 0)),
        {"operator": operator, "sources": _device_health(ctx).get("sources")},
        "Look at the pods of the states named (kubectl get pods -n gpu-operator: crash loops, image pulls) and "
        "their logs; GPUs are not offered to pods until the device plugin's state is ready.")]


# a GPU stack container restarted this often is crash looping
GPU_STACK_RESTARTS = 5


@rule("scheduling.k8s_gpu_stack_restarting", "scheduling", "warning",
      "Pods of the GPU stack on the node (device plugin, feature discovery, operator validators, DCGM exporter) "
      "keep restarting (critical for the device plugin: the node's GPUs are not offered while it is down)")
def gpu_stack_restarting(ctx):
    looping = [item for item in _device_health(ctx).get("restarting") or ()
               if item.get("restarts", 0) >= GPU_STACK_RESTARTS]
    if not looping:
        return ()
    plugin = any("device-plugin" in item["pod"] for item in looping)
    return [ctx.finding(
        None, "GPU stack pods restart over and over: %s" % ", ".join(
            "%s%s %d times" % (item["pod"], "/%s" % item["container"] if item.get("container") else "",
                               item["restarts"]) for item in looping[:5]),
        {"restarting": looping[:16], "limit": GPU_STACK_RESTARTS},
        "Read the previous container's log (kubectl logs --previous, or /var/log/pods on the node): a driver "
        "or NVML that does not answer, a MIG layout the pod does not expect, a missing runtime class; fix it and "
        "the pods settle.", severity="critical" if plugin else None)]
