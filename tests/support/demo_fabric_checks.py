"""What the demo host of the fabric subset must show (tests/unit/tools/test_demo_fleet.py: its facts;
tests/unit/plugins/plugin_utils/rules/test_diagnose_demo.py: its findings)."""

from tests.support.demo_fleet import demo_audit

HOST = "gpu-h100-fabric-19"


def ports_by_hca(facts):
    return dict((hca["name"], hca["ports"][0]) for hca in facts["fabric"]["hcas"])


def facts_fabric_19(facts):
    fabric = facts["fabric"]
    assert fabric["hcas_source"] == "sysfs"
    ports = ports_by_hca(facts)
    assert sorted(ports) == ["mlx5_%d" % index for index in range(9)]
    degraded, down = ports["mlx5_3"], ports["mlx5_6"]
    assert (degraded["state"], degraded["rate_gbps"], degraded["width"], degraded["speed"]) == ("ACTIVE", 200.0, "2X", "NDR")
    assert (degraded["counters"]["symbol_error"], degraded["counters"]["link_error_recovery"],
            degraded["counters"]["link_downed"]) == (1432, 3, 2)
    assert (down["state"], down["phys_state"], down["phys_state_code"]) == ("DOWN", "Polling", 2)
    healthy = [name for name, port in ports.items() if port["rate_gbps"] == 400.0 and port["state"] == "ACTIVE"]
    assert healthy == ["mlx5_0", "mlx5_1", "mlx5_2", "mlx5_4", "mlx5_5", "mlx5_7"]
    assert all(port["counters"]["symbol_error"] == 0 for name, port in ports.items() if name in healthy)
    roce = ports["mlx5_8"]
    assert (roce["link_layer"], roce["netdev"], roce["ethtool"]["rx_prio3_pause"]) == ("Ethernet", "enp31s0f0np0", 1187)
    assert ports["mlx5_0"]["netdev"] == "ibp26s0" and ports["mlx5_0"]["ethtool"] is None
    assert fabric["gpudirect"]["peermem_loaded"] is True and fabric["gpudirect"]["dmabuf_supported"] is True
    assert len(fabric["gpudirect"]["acs"]) == 8 and not any(b["redirect_enabled"] for b in fabric["gpudirect"]["acs"])
    matrix = fabric["topology"]["matrix"]
    assert [matrix["GPU%d" % index]["NIC%d" % index] for index in range(8)] == ["PIX"] * 8
    assert fabric["topology"]["nic_names"]["NIC3"] == "mlx5_3"


def check_fabric_19():
    """The node is otherwise healthy: whatever is above info is the fabric's, in the hardware layer (the fabric
    rules, docs/fabric.md, judge the ports)."""
    findings = [f for f in demo_audit()[1][HOST] if f["severity"] in ("critical", "warning")]
    assert [f["rule"] for f in findings if f["layer"] != "hardware"] == []
    facts_fabric_19(demo_audit()[0][HOST])


FABRIC_FACT_CHECKS = {HOST: facts_fabric_19}
FABRIC_CHECKS = {HOST: check_fabric_19}
