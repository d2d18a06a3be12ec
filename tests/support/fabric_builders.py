"""Fabric facts for the rule tests (issue 32): a healthy 8x H100 node with four NDR InfiniBand HCAs, one per
pair of GPUs behind the same PCIe switch (PXB), in the shape of the facts family `fabric`."""

import copy

from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.diagnose import diagnose_host
from tests.support.rule_builders import KNOWLEDGE, healthy_node, policy
from tests.support.schema_check import assert_valid_facts

HCA_BUS_IDS = ("0000:1a:00.0", "0000:3c:00.0", "0000:9c:00.0", "0000:bc:00.0")
ZERO_COUNTERS = {"symbol_error": 0, "link_downed": 0, "link_error_recovery": 0, "port_rcv_errors": 0,
                 "port_rcv_remote_physical_errors": 0, "port_xmit_discards": 0, "excessive_buffer_overrun_errors": 0,
                 "local_link_integrity_errors": 0, "port_xmit_wait": 0, "port_xmit_data": 0, "port_rcv_data": 0}


def port(number, state="ACTIVE", link_layer="InfiniBand", rate_gbps=400.0, width="4X", netdev=None, **counters):
    return {"port": number, "state": state, "state_code": 4 if state == "ACTIVE" else 1,
            "phys_state": "LinkUp" if state == "ACTIVE" else "Disabled",
            "phys_state_code": 5 if state == "ACTIVE" else 3, "link_layer": link_layer, "rate_gbps": rate_gbps,
            "width": width, "speed": "NDR", "netdev": netdev,
            "counters": dict(ZERO_COUNTERS, **counters), "hw_counters": {}, "ethtool": None}


def hca(index):
    return {"name": "mlx5_%d" % index, "hca_type": "MT4129", "board_id": "MT_0000000838", "fw_ver": "28.39.1002",
            "node_guid": "a088:c203:0054:%04x" % index, "pci_bus_id": HCA_BUS_IDS[index],
            "ports": [port(1, netdev="ibp%d" % index)]}


def acs_bridge(bdf, secondary, subordinate, redirect=False):
    """A PCIe switch port with ACS, and the buses behind it."""
    return {"bdf": bdf, "acs_ctl": "SrcValid+ TransBlk- ReqRedir%s CmpltRedir%s UpstreamFwd+ EgressCtrl- DirectTrans-" % (
        ("+", "+") if redirect else ("-", "-")), "redirect_enabled": redirect, "secondary_bus": secondary,
        "subordinate_bus": subordinate}


def topology():
    """GPU<n> sits behind the PCIe switch of NIC<n // 2> (PXB), the other NIC of its socket is NODE, the other
    socket's SYS."""
    devices = ["GPU%d" % gpu for gpu in range(8)] + ["NIC%d" % nic for nic in range(4)]
    matrix = {}
    for gpu in range(8):
        row = {"GPU%d" % other: "X" if other == gpu else "NV18" for other in range(8)}
        for nic in range(4):
            row["NIC%d" % nic] = "PXB" if nic == gpu // 2 else ("NODE" if nic // 2 == gpu // 4 else "SYS")
        matrix["GPU%d" % gpu] = row
    for nic in range(4):
        matrix["NIC%d" % nic] = {device: matrix[device]["NIC%d" % nic] for device in devices
                                 if device.startswith("GPU")}
        matrix["NIC%d" % nic].update({"NIC%d" % other: "X" if other == nic else "SYS" for other in range(4)})
    return {"devices": devices, "matrix": matrix, "nic_names": {"NIC%d" % nic: "mlx5_%d" % nic for nic in range(4)},
            "cpu_affinity": {"GPU%d" % gpu: "0-47" if gpu < 4 else "48-95" for gpu in range(8)},
            "numa_affinity": {"GPU%d" % gpu: "0" if gpu < 4 else "1" for gpu in range(8)}}


def healthy_fabric():
    return {"hcas": [hca(index) for index in range(4)], "hcas_source": "sysfs",
            "gpudirect": {"peermem_loaded": True, "dmabuf_supported": True, "acs": [
                acs_bridge("0000:17:01.0", 0x18, 0x1a), acs_bridge("0000:2b:01.0", 0x2c, 0x2c)]},
            "topology": topology()}


def fabric_node():
    facts = healthy_node()
    facts["fabric"] = healthy_fabric()
    facts["gather_subset"] = list(facts["gather_subset"]) + ["fabric"]
    return facts


FABRIC_RULES = ("hardware.fabric_", "hardware.gpudirect", "hardware.gpu_nic_distance")


def fabric_findings(facts, the_policy=None, host="gpu-node"):
    """The fabric findings of diagnose on the facts (checked against the facts schema)."""
    assert_valid_facts(facts)
    found = diagnose_host(host, copy.deepcopy(facts), the_policy or policy(), KNOWLEDGE)
    return [finding for finding in found if finding["rule"].startswith(FABRIC_RULES)]
