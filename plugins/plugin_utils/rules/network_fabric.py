# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Hardware-layer rules of the network fabric (InfiniBand and RoCE): the facts family `fabric` (HCAs and their
ports, GPUDirect RDMA readiness, the GPU-to-NIC topology) judged against the policy's `fabric` section.

A port matters when the policy expects it up (fabric.ports, else the ports of fabric.hcas.names): such a port
down is critical; a port nobody expects may be down (the second port of a dual-port card is often unused), but
one that is up at less than it should run at is still a finding. The growth of the ports' error counters between
runs is a history rule (rules/drift_trend.py, hardware.fabric_counter_growth).
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re

from ansible_collections.gpufleet.core.plugins.plugin_utils.policy.defaults import NIC_DISTANCES
from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.findings import rule

ACTIVE = "ACTIVE"
_WIDTH = re.compile(r"^(\d+)X$")
MAX_LISTED = 16


def fabric_policy(ctx):
    return ctx.policy.get("fabric") or {}


def fabric_hcas(ctx):
    """The host's HCAs, or None when the facts have no fabric family or its HCAs could not be read."""
    fabric = ctx.facts.get("fabric")
    if not isinstance(fabric, dict) or not isinstance(fabric.get("hcas"), list):
        return None
    return [hca for hca in fabric["hcas"] if isinstance(hca, dict)]


def port_label(hca, port):
    return "%s/%s" % (hca.get("name"), port.get("port"))


def host_ports(hcas):
    """[(hca, port)] of every port of the host."""
    return [(hca, port) for hca in hcas for port in hca.get("ports") or () if isinstance(port, dict)]


def expected_up(policy):
    """(predicate (hca name, port number) -> whether the policy expects that port up, the key that says so); no port
    is expected when the policy names none."""
    listed = policy.get("ports") or []
    if listed:
        whole = {entry for entry in listed if "/" not in entry}
        single = {entry for entry in listed if "/" in entry}
        return (lambda name, number: name in whole or "%s/%s" % (name, number) in single), "fabric.ports"
    names = set((policy.get("hcas") or {}).get("names") or ())
    return (lambda name, number: name in names), "fabric.hcas.names"


def policy_expects_ports(policy):
    return bool(policy.get("ports") or (policy.get("hcas") or {}).get("names"))


def width_lanes(width):
    match = _WIDTH.match(width) if isinstance(width, str) else None
    return int(match.group(1)) if match else None


def is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


# ---------------------------------------------------------------- ports down

@rule("hardware.fabric_port_down", "hardware", "critical",
      "An HCA port the policy expects up (fabric.ports, else the ports of fabric.hcas.names) is not ACTIVE: "
      "down, polling or waiting for the subnet manager")
def port_down(ctx):
    hcas = fabric_hcas(ctx)
    policy = fabric_policy(ctx)
    if not hcas or not policy_expects_ports(policy):
        return ()
    expects, because = expected_up(policy)
    findings = []
    for hca, port in host_ports(hcas):
        if port.get("state") == ACTIVE or not expects(hca.get("name"), port.get("port")):
            continue
        label = port_label(hca, port)
        findings.append(ctx.finding(
            None, "HCA port %s is %s (physical state %s) but %s expects it up" % (
                label, port.get("state") or "in an unknown state", port.get("phys_state") or "unknown", because),
            {"link": label, "hca": hca.get("name"), "port": port.get("port"), "state": port.get("state"),
             "phys_state": port.get("phys_state"), "link_layer": port.get("link_layer"), "expected_by": because,
             "netdev": port.get("netdev")},
            "Check the port (ibstat %s %s): Polling or Disabled is the cable, the transceiver or the switch port; "
            "LinkUp with INIT or ARMED is the subnet manager (opensm/UFM) not configuring it." % (
                hca.get("name"), port.get("port"))))
    return findings


# ---------------------------------------------------------------- ports degraded

def best_links(ports):
    """{link layer: (best rate Gb/s, most lanes)} of the host's active ports."""
    best = {}
    for _hca, port in ports:
        if port.get("state") != ACTIVE:
            continue
        rate, lanes = best.get(port.get("link_layer"), (None, None))
        if is_number(port.get("rate_gbps")) and (rate is None or port["rate_gbps"] > rate):
            rate = port["rate_gbps"]
        if width_lanes(port.get("width")) and (lanes is None or width_lanes(port["width"]) > lanes):
            lanes = width_lanes(port["width"])
        best[port.get("link_layer")] = (rate, lanes)
    return best


class LinkReference:
    """What an active port should run at: the policy's rate and width where they are set and apply to it (an
    expected port, or with no port expected a port of fabric.hcas.link_layer), else the best of the host's active
    ports of the same link layer."""

    def __init__(self, policy, ports):
        self.wanted = policy.get("hcas") or {}
        self.expects = expected_up(policy)[0]
        self.any_expected = policy_expects_ports(policy)
        self.best = best_links(ports)

    def judged_by_policy(self, hca, port):
        if self.any_expected:
            return self.expects(hca.get("name"), port.get("port"))
        layer = self.wanted.get("link_layer")
        return layer is None or port.get("link_layer") == layer

    def of(self, hca, port):
        """(rate Gb/s, lanes, "policy" or "peers")"""
        rate, lanes = self.best.get(port.get("link_layer"), (None, None))
        policy_rate, policy_lanes = self.wanted.get("rate_gbps"), width_lanes(self.wanted.get("width"))
        if (policy_rate is not None or policy_lanes) and self.judged_by_policy(hca, port):
            return (policy_rate if policy_rate is not None else rate, policy_lanes or lanes, "policy")
        return rate, lanes, "peers"


def degradation(reference, hca, port):
    """The evidence of a slow or narrow active port, or None."""
    rate, lanes, source = reference.of(hca, port)
    actual_rate, actual_lanes = port.get("rate_gbps"), width_lanes(port.get("width"))
    slow = is_number(actual_rate) and rate is not None and actual_rate < rate
    narrow = actual_lanes is not None and lanes is not None and actual_lanes < lanes
    if not (slow or narrow):
        return None
    return {"link": port_label(hca, port), "hca": hca.get("name"), "port": port.get("port"),
            "link_layer": port.get("link_layer"), "rate_gbps": actual_rate, "expected_rate_gbps": rate,
            "width": port.get("width"), "expected_width": "%dX" % lanes if lanes is not None else None,
            "speed": port.get("speed"), "reference": source, "slow": slow, "narrow": narrow,
            "expected_up": reference.expects(hca.get("name"), port.get("port"))}


@rule("hardware.fabric_port_degraded", "hardware", "warning",
      "An active HCA port runs below its rate or width: the policy's (fabric.hcas.rate_gbps, width) or the best "
      "of the host's other active ports of the same link layer; critical on a port the policy expects up")
def port_degraded(ctx):
    hcas = fabric_hcas(ctx)
    if not hcas:
        return ()
    ports = host_ports(hcas)
    reference = LinkReference(fabric_policy(ctx), ports)
    findings = []
    for hca, port in ports:
        evidence = degradation(reference, hca, port) if port.get("state") == ACTIVE else None
        if evidence is None:
            continue
        findings.append(ctx.finding(
            None, "HCA port %s runs at %s %s Gb/s where %s %s Gb/s is expected (%s)" % (
                evidence["link"], evidence["width"] or "?", evidence["rate_gbps"], evidence["expected_width"] or "?",
                evidence["expected_rate_gbps"], "the policy" if evidence["reference"] == "policy"
                else "the host's other ports"),
            evidence,
            "A link that trained down has lost lanes or speed: reseat or replace the cable or transceiver, check "
            "the switch port (mlxlink -d %s -p %s shows the lanes and the cable's errors)." % (
                hca.get("pci_bus_id") or hca.get("name"), port.get("port")),
            severity="critical" if evidence["expected_up"] else None))
    return findings


@rule("hardware.fabric_link_layer", "hardware", "warning",
      "An HCA port the policy expects up runs another link layer than fabric.hcas.link_layer (InfiniBand or "
      "Ethernet/RoCE)")
def link_layer(ctx):
    hcas = fabric_hcas(ctx)
    policy = fabric_policy(ctx)
    wanted = (policy.get("hcas") or {}).get("link_layer")
    if not hcas or wanted is None or not policy_expects_ports(policy):
        return ()
    expects = expected_up(policy)[0]
    findings = []
    for hca, port in host_ports(hcas):
        found = port.get("link_layer")
        if found is None or found == wanted or not expects(hca.get("name"), port.get("port")):
            continue
        label = port_label(hca, port)
        findings.append(ctx.finding(
            None, "HCA port %s runs %s; the policy expects %s" % (label, found, wanted),
            {"link": label, "hca": hca.get("name"), "port": port.get("port"), "link_layer": found,
             "expected_link_layer": wanted},
            "Set the port's link type (mlxconfig -d %s set LINK_TYPE_P%s=%s) and reboot, or correct the policy." % (
                hca.get("pci_bus_id") or hca.get("name"), port.get("port"), 1 if wanted == "InfiniBand" else 2)))
    return findings


# ---------------------------------------------------------------- HCAs missing

@rule("hardware.fabric_hca_missing", "hardware", "critical",
      "The host has fewer HCAs than fabric.hcas.count, or lacks one of fabric.hcas.names")
def hca_missing(ctx):
    hcas = fabric_hcas(ctx)
    if hcas is None:
        return ()
    wanted = fabric_policy(ctx).get("hcas") or {}
    present = sorted(str(hca.get("name")) for hca in hcas)
    findings = []
    count = wanted.get("count")
    if count is not None and len(hcas) < count:
        findings.append(ctx.finding(
            None, "%d HCA%s found, %d expected (fabric.hcas.count): %s" % (
                len(hcas), "" if len(hcas) == 1 else "s", count, ", ".join(present) or "none"),
            {"setting": "fabric.hcas.count", "expected": count, "found": len(hcas), "present": present},
            "Find the missing card: lspci -d 15b3: lists the Mellanox/NVIDIA devices the kernel sees; a card that "
            "is listed without an RDMA device lacks its driver (mlx5_ib); one that is not listed needs a reseat."))
    for name in wanted.get("names") or ():
        if name not in present:
            findings.append(ctx.finding(
                None, "HCA %s is missing (fabric.hcas.names); the host has %s" % (name, ", ".join(present) or "none"),
                {"name": name, "present": present},
                "Check that the card is seen (lspci -d 15b3:) and its RDMA driver loaded (mlx5_ib); a renamed "
                "device (udev rules, rdma system rename) needs the policy or the rule corrected."))
    return findings


# ---------------------------------------------------------------- GPUDirect RDMA

def gpudirect_facts(ctx):
    fabric = ctx.facts.get("fabric")
    gpudirect = fabric.get("gpudirect") if isinstance(fabric, dict) else None
    return gpudirect if isinstance(gpudirect, dict) else None


def bus_number(bus_id):
    """The bus of a PCI address ("0000:1a:00.0" -> 26), or None."""
    parts = bus_id.split(":") if isinstance(bus_id, str) else ()
    try:
        return int(parts[-2], 16) if len(parts) >= 2 else None
    except ValueError:
        return None


def gpu_and_nic_addresses(ctx):
    addresses = [gpu.get("pci_bus_id") for gpu in ctx.gpus] + [hca.get("pci_bus_id") for hca in fabric_hcas(ctx) or ()]
    return sorted({address for address in addresses if bus_number(address) is not None})


def redirecting_bridges(ctx, acs):
    """[{bdf, acs_ctl, below}] of the bridges with ACS redirect that have a GPU or an HCA behind them (below: their
    addresses), or whose buses are unknown (below: None: it may be in the path)."""
    addresses = gpu_and_nic_addresses(ctx)
    found = []
    for entry in acs or ():
        if not isinstance(entry, dict) or not entry.get("redirect_enabled"):
            continue
        low, high = entry.get("secondary_bus"), entry.get("subordinate_bus")
        if not (isinstance(low, int) and isinstance(high, int)):
            found.append({"bdf": entry.get("bdf"), "acs_ctl": entry.get("acs_ctl"), "below": None})
            continue
        below = [address for address in addresses if low <= bus_number(address) <= high]
        if below:
            found.append({"bdf": entry.get("bdf"), "acs_ctl": entry.get("acs_ctl"), "below": below})
    return found


@rule("hardware.gpudirect", "hardware", "warning",
      "GPUDirect RDMA is not usable where fabric.gpudirect.required: neither nvidia_peermem loaded nor dma-buf "
      "supported, or ACS redirect enabled on a PCIe bridge with a GPU or a NIC behind it")
def gpudirect(ctx):
    gpudirect_seen = gpudirect_facts(ctx)
    if gpudirect_seen is None or not (fabric_policy(ctx).get("gpudirect") or {}).get("required"):
        return ()
    findings = []
    peermem, dmabuf = gpudirect_seen.get("peermem_loaded"), gpudirect_seen.get("dmabuf_supported")
    if True not in (peermem, dmabuf) and False in (peermem, dmabuf):
        findings.append(ctx.finding(
            None, "GPUDirect RDMA unavailable: nvidia_peermem %s, dma-buf %s" % (
                {False: "not loaded", None: "unknown"}[peermem], {False: "not supported", None: "unknown"}[dmabuf]),
            {"setting": "peermem_or_dmabuf", "peermem_loaded": peermem, "dmabuf_supported": dmabuf},
            "Load nvidia_peermem (modprobe nvidia-peermem, and add it to /etc/modules-load.d), or use a driver and "
            "kernel with dma-buf (open kernel modules, kernel 5.12+); without either NCCL copies through host "
            "memory."))
    redirected = redirecting_bridges(ctx, gpudirect_seen.get("acs"))
    if redirected:
        findings.append(ctx.finding(
            None, "ACS redirect enabled on %d PCIe bridge%s above the GPUs or NICs (%s): peer-to-peer goes through "
                  "the root complex" % (len(redirected), "" if len(redirected) == 1 else "s",
                                        ", ".join(str(bridge["bdf"]) for bridge in redirected[:4])),
            {"setting": "acs_redirect", "bridges": redirected[:MAX_LISTED], "count": len(redirected)},
            "Disable ACS on these bridges (setpci -s <bdf> ECAP_ACS+0x6.w=0000 at boot, or the BIOS's ACS setting) "
            "on bare metal; in a VM keep ACS and enable ATS instead."))
    return findings


# ---------------------------------------------------------------- GPU-to-NIC distance

def considered_nics(ctx, topology):
    """The topology's NICs that carry the fabric: those of fabric.hcas.names when set, else those whose HCA has an
    active port, else (no HCA facts) every NIC."""
    nic_names = topology.get("nic_names") or {}
    nics = [device for device in topology.get("devices") or () if str(device).startswith("NIC")]
    names = set((fabric_policy(ctx).get("hcas") or {}).get("names") or ())
    if names:
        return [nic for nic in nics if nic_names.get(nic) in names]
    hcas = fabric_hcas(ctx)
    if hcas:
        active = {hca.get("name") for hca, port in host_ports(hcas) if port.get("state") == ACTIVE}
        return [nic for nic in nics if nic_names.get(nic, nic) in active]
    return nics


def nearest_nic(row, nics):
    """(NIC, path) nearest to a GPU by its topology row, None when no path to a considered NIC is known."""
    paths = [(NIC_DISTANCES.index(row[nic]), nic, row[nic]) for nic in nics if row.get(nic) in NIC_DISTANCES]
    if not paths:
        return None
    _rank, nic, path = min(paths)
    return nic, path


def gpu_bus_id(ctx, device):
    """The bus id of topology device GPU<n> (the GPU of index n in the facts), or None."""
    index = device[3:]
    for gpu in ctx.gpus:
        if str(gpu.get("index")) == index:
            return gpu.get("pci_bus_id")
    return None


@rule("hardware.gpu_nic_distance", "hardware", "warning",
      "A GPU's nearest fabric NIC is farther than fabric.topology.max_nic_distance in nvidia-smi topo -m (by "
      "default: across the CPU interconnect, SYS): its RDMA traffic crosses the host's sockets")
def gpu_nic_distance(ctx):
    fabric = ctx.facts.get("fabric")
    topology = fabric.get("topology") if isinstance(fabric, dict) else None
    if not isinstance(topology, dict):
        return ()
    allowed = (fabric_policy(ctx).get("topology") or {}).get("max_nic_distance") or "NODE"
    nics = considered_nics(ctx, topology)
    matrix = topology.get("matrix") or {}
    nic_names = topology.get("nic_names") or {}
    far = []
    for device in topology.get("devices") or ():
        if not str(device).startswith("GPU") or not isinstance(matrix.get(device), dict):
            continue
        nearest = nearest_nic(matrix[device], nics)
        if nearest is not None and NIC_DISTANCES.index(nearest[1]) > NIC_DISTANCES.index(allowed):
            far.append({"gpu": device, "pci_bus_id": gpu_bus_id(ctx, device), "nearest_nic": nearest[0],
                        "hca": nic_names.get(nearest[0]), "path": nearest[1]})
    if not far:
        return ()
    return [ctx.finding(
        None, "%d GPU%s reach their nearest NIC beyond %s: %s" % (
            len(far), "" if len(far) == 1 else "s", allowed,
            ", ".join("%s->%s %s" % (entry["gpu"], entry["hca"] or entry["nearest_nic"], entry["path"])
                      for entry in far[:8])),
        {"setting": "fabric.topology.max_nic_distance", "allowed": allowed, "gpus": far[:MAX_LISTED],
         "count": len(far)},
        "Bind each rank to the NIC of its GPU's PCIe switch (NCCL_IB_HCA, NCCL_TOPO_FILE) and check that the NICs "
        "sit in the slots the node type's design puts them in; SYS means every RDMA transfer crosses the CPU "
        "interconnect.")]
