"""The network fabric's rules (issue 32): ports down or degraded, HCAs missing, GPUDirect, the GPU-to-NIC distance."""

import copy

import pytest

from tests.support.fabric_builders import acs_bridge, fabric_findings, fabric_node, hca, port
from tests.support.rule_builders import policy


def rules_of(findings):
    return sorted(finding["rule"] for finding in findings)


def test_a_healthy_fabric_gives_no_fabric_finding_even_with_the_strictest_policy():
    strict = policy(fabric={"hcas": {"count": 4, "names": ["mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3"],
                                     "link_layer": "InfiniBand", "rate_gbps": 400, "width": "4X"},
                            "gpudirect": {"required": True}, "topology": {"max_nic_distance": "PXB"}})
    assert fabric_findings(fabric_node(), strict) == []


def test_an_expected_port_down_is_critical_and_an_unexpected_one_is_no_finding():
    facts = fabric_node()
    facts["fabric"]["hcas"][1]["ports"][0].update(state="DOWN", state_code=1, phys_state="Polling",
                                                  phys_state_code=2, rate_gbps=None, width=None)
    assert fabric_findings(facts) == []  # the default policy expects no port
    down = fabric_findings(facts, policy(fabric={"ports": ["mlx5_1/1"]}))
    assert rules_of(down) == ["hardware.fabric_port_down"]
    assert down[0]["severity"] == "critical"
    assert down[0]["evidence"] == {"link": "mlx5_1/1", "hca": "mlx5_1", "port": 1, "state": "DOWN",
                                   "phys_state": "Polling", "link_layer": "InfiniBand", "expected_by": "fabric.ports",
                                   "netdev": "ibp1"}
    assert down[0]["summary"] == "HCA port mlx5_1/1 is DOWN (physical state Polling) but fabric.ports expects it up"
    by_name = fabric_findings(facts, policy(fabric={"hcas": {"names": ["mlx5_1"]}}))
    assert [finding["evidence"]["expected_by"] for finding in by_name
            if finding["rule"] == "hardware.fabric_port_down"] == ["fabric.hcas.names"]
    assert fabric_findings(facts, policy(fabric={"ports": ["mlx5_0"]})) == []


def test_a_port_that_trained_down_is_compared_with_its_peers():
    facts = fabric_node()
    facts["fabric"]["hcas"][2]["ports"][0].update(rate_gbps=200.0, width="2X", speed="NDR")
    degraded = fabric_findings(facts)
    assert rules_of(degraded) == ["hardware.fabric_port_degraded"]
    finding = degraded[0]
    assert finding["severity"] == "warning"  # no port is expected by the default policy
    evidence = finding["evidence"]
    assert (evidence["link"], evidence["rate_gbps"], evidence["expected_rate_gbps"], evidence["width"],
            evidence["expected_width"], evidence["reference"]) == ("mlx5_2/1", 200.0, 400.0, "2X", "4X", "peers")
    assert finding["summary"] == ("HCA port mlx5_2/1 runs at 2X 200.0 Gb/s where 4X 400.0 Gb/s is expected "
                                  "(the host's other ports)")
    expected = fabric_findings(facts, policy(fabric={"ports": ["mlx5_2"]}))
    assert [finding["severity"] for finding in expected] == ["critical"]


def test_the_policy_rate_judges_every_port_of_its_link_layer():
    facts = fabric_node()  # every port at 400 Gb/s
    slow = fabric_findings(facts, policy(fabric={"hcas": {"rate_gbps": 800, "link_layer": "InfiniBand"}}))
    assert [finding["evidence"]["link"] for finding in slow] == ["mlx5_0/1", "mlx5_1/1", "mlx5_2/1", "mlx5_3/1"]
    assert {finding["evidence"]["reference"] for finding in slow} == {"policy"}
    assert {finding["evidence"]["expected_rate_gbps"] for finding in slow} == {800}
    # a RoCE port on its own is judged by its own link layer's peers, not by the InfiniBand rate
    roce = dict(hca(0), name="mlx5_4", pci_bus_id="0000:c1:00.0",
                ports=[port(1, link_layer="Ethernet", rate_gbps=100.0, netdev="eth4")])
    facts["fabric"]["hcas"].append(roce)
    assert [f["evidence"]["link"] for f in fabric_findings(
        facts, policy(fabric={"hcas": {"rate_gbps": 400, "link_layer": "InfiniBand"}}))] == []


def test_a_port_on_the_wrong_link_layer():
    facts = fabric_node()
    facts["fabric"]["hcas"][3]["ports"][0]["link_layer"] = "Ethernet"
    assert fabric_findings(facts, policy(fabric={"hcas": {"link_layer": "InfiniBand"}})) == []  # no port expected
    found = fabric_findings(facts, policy(fabric={"hcas": {"link_layer": "InfiniBand"}, "ports": ["mlx5_2", "mlx5_3"]}))
    assert [(f["rule"], f["evidence"]["link"]) for f in found] == [("hardware.fabric_link_layer", "mlx5_3/1")]
    assert found[0]["summary"] == "HCA port mlx5_3/1 runs Ethernet; the policy expects InfiniBand"


def test_a_missing_hca_by_count_and_by_name():
    facts = fabric_node()
    del facts["fabric"]["hcas"][3]
    found = fabric_findings(facts, policy(fabric={"hcas": {"count": 4, "names": ["mlx5_0", "mlx5_3"]}}))
    assert rules_of(found) == ["hardware.fabric_hca_missing"] * 2
    by_count, by_name = found
    assert by_count["evidence"] == {"setting": "fabric.hcas.count", "expected": 4, "found": 3,
                                    "present": ["mlx5_0", "mlx5_1", "mlx5_2"]}
    assert by_name["evidence"]["name"] == "mlx5_3" and by_name["severity"] == "critical"
    facts["fabric"]["hcas"] = None  # unreadable: the inputs ledger says why, no verdict here
    assert fabric_findings(facts, policy(fabric={"hcas": {"count": 4}})) == []


@pytest.mark.parametrize("peermem, dmabuf, fires", [
    (False, False, True), (False, None, True), (None, False, True),
    (True, False, False), (False, True, False), (None, None, False)])
def test_gpudirect_without_peermem_or_dmabuf(peermem, dmabuf, fires):
    facts = fabric_node()
    facts["fabric"]["gpudirect"].update(peermem_loaded=peermem, dmabuf_supported=dmabuf)
    required = policy(fabric={"gpudirect": {"required": True}})
    found = fabric_findings(facts, required)
    assert [f["evidence"]["setting"] for f in found] == (["peermem_or_dmabuf"] if fires else [])
    assert fabric_findings(facts) == []  # not required by default


def test_acs_redirect_on_a_bridge_above_a_gpu_or_a_nic():
    facts = fabric_node()
    facts["fabric"]["gpudirect"]["acs"] = [
        acs_bridge("0000:17:01.0", 0x18, 0x1a, redirect=True),  # GPU0 (0x18) and mlx5_0 (0x1a) behind it
        acs_bridge("0000:3b:01.0", 0x3c, 0x3c),  # mlx5_1's switch port, no redirect
        acs_bridge("0000:60:01.0", 0x61, 0x61, redirect=True),  # nothing of ours behind it (an NVMe switch)
        acs_bridge("0000:70:01.0", None, None, redirect=True)]  # buses unknown: counted, it may be in the path
    found = fabric_findings(facts, policy(fabric={"gpudirect": {"required": True}}))
    assert len(found) == 1 and found[0]["rule"] == "hardware.gpudirect"
    assert found[0]["evidence"]["bridges"] == [
        {"bdf": "0000:17:01.0", "acs_ctl": facts["fabric"]["gpudirect"]["acs"][0]["acs_ctl"],
         "below": ["0000:18:00.0", "0000:1a:00.0"]},
        {"bdf": "0000:70:01.0", "acs_ctl": facts["fabric"]["gpudirect"]["acs"][3]["acs_ctl"], "below": None}]
    assert "ACS redirect enabled on 2 PCIe bridges above the GPUs or NICs (0000:17:01.0, 0000:70:01.0)" in \
        found[0]["summary"]
    facts["fabric"]["gpudirect"]["acs"] = None  # lspci could not read ACS (not root): not judged
    assert fabric_findings(facts, policy(fabric={"gpudirect": {"required": True}})) == []


def test_a_gpu_whose_nearest_nic_is_across_the_cpu_interconnect():
    facts = fabric_node()
    row = facts["fabric"]["topology"]["matrix"]["GPU1"]
    row.update(NIC0="SYS", NIC1="SYS", NIC2="SYS", NIC3="SYS")
    found = fabric_findings(facts)
    assert rules_of(found) == ["hardware.gpu_nic_distance"]
    assert found[0]["evidence"]["gpus"] == [{"gpu": "GPU1", "pci_bus_id": "0000:2a:00.0", "nearest_nic": "NIC0",
                                             "hca": "mlx5_0", "path": "SYS"}]
    assert found[0]["evidence"]["allowed"] == "NODE"
    # PXB allowed: GPU1 (SYS) and the GPUs whose nearest NIC is NODE are beyond it
    strict = fabric_findings(copy.deepcopy(facts), policy(fabric={"topology": {"max_nic_distance": "PXB"}}))
    assert [entry["gpu"] for entry in strict[0]["evidence"]["gpus"]] == ["GPU1"]
    # an unused NIC (its port down) near the GPU does not count as its NIC
    facts["fabric"]["topology"]["matrix"]["GPU0"]["NIC0"] = "PIX"
    facts["fabric"]["hcas"][0]["ports"][0]["state"] = "DOWN"
    facts["fabric"]["topology"]["matrix"]["GPU0"].update(NIC1="SYS", NIC2="SYS", NIC3="SYS")
    assert [entry["gpu"] for entry in fabric_findings(facts)[0]["evidence"]["gpus"]] == ["GPU0", "GPU1"]


def test_no_fabric_family_no_fabric_finding():
    facts = fabric_node()
    del facts["fabric"]
    assert fabric_findings(facts, policy(fabric={"hcas": {"count": 4}, "gpudirect": {"required": True},
                                                 "ports": ["mlx5_0"]})) == []
