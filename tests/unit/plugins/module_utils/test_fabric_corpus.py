"""The "Network fabric" captures of the public corpus (/work/shared/realdata, INDEX.md) through the fabric's parsers
and collector, with their values and ground truth asserted. The sysfs dump becomes a captured root read by the real
collection (gather_subset fabric)."""

from ansible_collections.gpufleet.core.plugins.module_utils import collector
from ansible_collections.gpufleet.core.plugins.module_utils import fabric_parsers as parsers
from ansible_collections.gpufleet.core.plugins.module_utils.capture_host import open_capture
from tests.support.capture_roots import write_file
from tests.support.schema_check import assert_valid_facts

SYSFS_DUMP = "sysfs-infiniband-grep-dump_h100-node-8x-cx7-ndr-plus-bond_gpud.txt"


def by_name(hcas):
    return dict((hca["name"], hca) for hca in hcas)


def captured_sysfs(corpus, root):
    """The dump's `path:value` lines as the files of /sys/class/infiniband under a captured root."""
    for line in corpus.read_realdata(SYSFS_DUMP).splitlines():
        path, _sep, value = line.partition(":")
        write_file(root, "sys/class/infiniband/" + path, value + "\n")
    write_file(root, "sos_commands/date/date", "Sun Dec  6 19:27:22 UTC 2026\n")
    return root


def test_gpud_h100_sysfs_tree_through_the_collector(corpus, tmp_path):
    facts, _recorded = collector.Collection(capture=open_capture(captured_sysfs(corpus, str(tmp_path))),
                                            gather_subset=["fabric"]).run()
    assert_valid_facts(facts)
    fabric = facts["fabric"]
    hcas = by_name(fabric["hcas"])
    assert sorted(hcas) == ["mlx5_0", "mlx5_1", "mlx5_4", "mlx5_5", "mlx5_6", "mlx5_7", "mlx5_8", "mlx5_9", "mlx5_bond_0"]
    for name, hca in hcas.items():
        (port,) = hca["ports"]
        if name == "mlx5_bond_0":
            assert (hca["hca_type"], hca["fw_ver"], port["link_layer"], port["rate_gbps"], port["width"]) == (
                "MT41692", "32.38.3056", "Ethernet", 200.0, "2X")
            continue
        assert (hca["hca_type"], hca["fw_ver"], hca["board_id"]) == ("MT4129", "28.41.1000", "MT_0000000838")
        assert (port["state"], port["state_code"], port["phys_state"], port["phys_state_code"]) == (
            "ACTIVE", 4, "LinkUp", 5)
        assert (port["rate_gbps"], port["width"], port["speed"], port["link_layer"]) == (400.0, "4X", "NDR", "InfiniBand")
        # the upstream fixture was replicated: the same error counts on every port
        assert (port["counters"]["port_rcv_errors"], port["counters"]["excessive_buffer_overrun_errors"]) == (14, 15)
        assert port["counters"]["port_xmit_wait"] == 2489603687
    assert hcas["mlx5_1"]["ports"][0]["counters"]["link_downed"] == 255
    assert hcas["mlx5_0"]["ports"][0]["counters"]["link_downed"] == 0
    assert hcas["mlx5_0"]["ports"][0]["hw_counters"]["rx_write_requests"] == 3809045607
    assert hcas["mlx5_0"]["ports"][0]["counters"]["port_rcv_data"] == 230539874932483
    # the dump has no uevent and no net/ folder: unknown, not invented
    assert hcas["mlx5_0"]["pci_bus_id"] is None and hcas["mlx5_0"]["ports"][0]["netdev"] is None
    assert fabric["hcas_source"] == "sysfs" and fabric["topology"] is None


def test_ibstat_with_spaces_roce_cx7_and_a_cx6dx_port_down_cut(corpus):
    hcas, problems = parsers.parse_ibstat(corpus.read_realdata(
        "ibstat_cx7-roce-200g-active-and-cx6dx-port-down-disabled_spaces_issue-quote.txt"))
    assert problems == []
    hcas = by_name(hcas)
    assert sorted(hcas) == ["mlx5_0", "mlx5_1", "mlx5_10"]
    for name in ("mlx5_0", "mlx5_1"):
        (port,) = hcas[name]["ports"]
        assert (hcas[name]["hca_type"], hcas[name]["fw_ver"]) == ("MT4129", "28.39.1002")
        assert (port["state"], port["phys_state"], port["rate_gbps"], port["link_layer"]) == (
            "ACTIVE", "LinkUp", 200.0, "Ethernet")
    assert hcas["mlx5_0"]["node_guid"] == "58a2:e103:00da:e626"
    (down,) = hcas["mlx5_10"]["ports"]
    assert (hcas["mlx5_10"]["hca_type"], hcas["mlx5_10"]["fw_ver"]) == ("MT4125", "22.31.1014")
    # cut after the physical state
    assert (down["state"], down["phys_state"], down["phys_state_code"], down["rate_gbps"], down["link_layer"]) == (
        "DOWN", "Disabled", 3, None, None)


def test_ibstat_redacted_then_ibpanic(corpus):
    hcas, problems = parsers.parse_ibstat(corpus.read_realdata(
        "ibstat_ib-hdr-200-active-then-ibpanic-stat-of-device-failed_tabs-redacted_gpud-issue-quote.txt"))
    (hca,) = hcas
    assert (hca["name"], hca["hca_type"], hca["fw_ver"], hca["node_guid"]) == ("mlx5_7", None, None, None)
    (port,) = hca["ports"]
    assert (port["state"], port["phys_state"], port["rate_gbps"], port["link_layer"]) == (
        "ACTIVE", "LinkUp", 200.0, "InfiniBand")
    assert problems == ["ibpanic: [1323906] main: stat of IB device 'mlx5_8' failed: No such file or directory"]


def test_ibstat_connectx3_two_ports_after_ibwarn_lines(corpus):
    hcas, problems = parsers.parse_ibstat(corpus.read_realdata(
        "ibstat_mlx4-connectx3-port1-down-disabled-port2-fdr56-active_with-ibwarn-debug_rdma-core-pr-quote.txt"))
    assert problems == []
    (hca,) = hcas
    assert (hca["name"], hca["hca_type"], hca["fw_ver"], hca["node_guid"]) == (
        "mlx4_0", "MT4099", "2.42.5000", "f452:1403:007b:e0e0")
    first, second = hca["ports"]
    assert (first["port"], first["state"], first["phys_state"], first["rate_gbps"], first["link_layer"]) == (
        1, "DOWN", "Disabled", 10.0, "InfiniBand")
    # cut after its rate
    assert (second["port"], second["state"], second["phys_state"], second["rate_gbps"], second["link_layer"]) == (
        2, "ACTIVE", "LinkUp", 56.0, None)


def test_ibv_devinfo_roce_port_down_and_a_cut_cx7(corpus):
    hcas, _problems = parsers.parse_ibv_devinfo(corpus.read_realdata(
        "ibv_devinfo_cx6dx-roce-port-down-and-cx7_issue-quote.txt"))
    hcas = by_name(hcas)
    down = hcas["mlx5_12"]
    assert (down["hca_type"], down["fw_ver"], down["board_id"], down["node_guid"]) == (
        "MT4125", "22.38.1900", "MT_0000000436", "a088:c203:0030:9a0d")
    (port,) = down["ports"]
    # transport says InfiniBand; the link layer is what the port runs
    assert (port["state"], port["state_code"], port["link_layer"], port["rate_gbps"]) == ("DOWN", 1, "Ethernet", None)
    assert (hcas["mlx5_13"]["hca_type"], hcas["mlx5_13"]["fw_ver"], hcas["mlx5_13"]["ports"]) == (
        "MT4129", "28.39.2048", [])


def test_ibdev2netdev_of_an_h100_node_with_every_compute_port_down(corpus):
    links = parsers.parse_ibdev2netdev(corpus.read_realdata(
        "ibdev2netdev_h100-node-8x-cx7-ib-2x-cx6-eth-annotated_issue-quote.txt"))
    assert len(links) == 12
    compute = dict((key, link) for key, link in links.items() if link["netdev"].startswith("ib"))
    assert len(compute) == 8 and not any(link["up"] for link in compute.values())
    assert links[("mlx5_0", 1)]["netdev"] == "ibp26s0" and links[("mlx5_11", 1)]["netdev"] == "ibp220s0"
    assert sorted(link["netdev"] for link in links.values() if link["up"]) == ["enp157s0f0np0", "enp27s0f0np0"]


def test_perfquery_extended_counters_all_zero(corpus):
    counters = parsers.parse_perfquery(corpus.read_realdata(
        "perfquery-x_extended-port-counters-all-zero_rhel75_issue-quote.txt"))
    assert len(counters) == 21 and set(counters.values()) == {0}
    assert "symbol_error" in counters and "port_xmit_wait" in counters and "VL15_dropped" in counters


def test_topology_tab_separated_two_gpus_phb(corpus):
    topology, problems = parsers.parse_topology(corpus.read_realdata(
        "nvidia-smi-topo-m_2x-rtx5090-phb-no-nvlink_tab-separated_issue-quote.txt"))
    assert problems == []
    assert topology["devices"] == ["GPU0", "GPU1"]
    assert topology["matrix"] == {"GPU0": {"GPU0": "X", "GPU1": "PHB"}, "GPU1": {"GPU0": "PHB", "GPU1": "X"}}
    assert topology["cpu_affinity"] == {"GPU0": "0-63", "GPU1": "0-63"}
    assert topology["numa_affinity"] == {"GPU0": "0", "GPU1": "0"} and topology["nic_names"] == {}


def test_topology_p2p_matrix_gpu_not_supported(corpus):
    topology, problems = parsers.parse_topology(corpus.read_realdata(
        "nvidia-smi-topo-p2p-rw_2x-rtx5090-gns-gpu-not-supported_issue-quote.txt"))
    assert problems == []
    assert topology["matrix"] == {"GPU0": {"GPU0": "X", "GPU1": "GNS"}, "GPU1": {"GPU0": "GNS", "GPU1": "X"}}


def matrices(text):
    """The quoted matrices of the file, one per "## " block."""
    blocks = text.split("\n## ")[1:]
    return [parsers.parse_topology(block.split("\n", 1)[1]) for block in blocks]


def test_three_space_aligned_8_and_16_gpu_matrices_cut_short(corpus):
    (nv18, nv18_problems), (pcie, pcie_problems), (dgx2, dgx2_problems) = matrices(corpus.read_realdata(
        "nvidia-smi-topo-m_8gpu-matrices-nvlink-nv18-and-pcie-only-sys_space-separated_issue-quotes.txt"))
    assert nv18_problems == pcie_problems == dgx2_problems == []
    # sglang: NV18 everywhere, 9 NICs, GPU3 alone on NUMA 1, rows GPU6-7 cut
    assert nv18["devices"] == ["GPU%d" % i for i in range(8)] + ["NIC%d" % i for i in range(9)]
    assert sorted(nv18["matrix"]) == ["GPU%d" % i for i in range(6)]
    assert set(v for row in nv18["matrix"].values() for k, v in row.items() if k.startswith("GPU")) == {"X", "NV18"}
    assert (nv18["matrix"]["GPU3"]["NIC4"], nv18["matrix"]["GPU3"]["NIC3"], nv18["numa_affinity"]["GPU3"]) == (
        "PIX", "NODE", "1")
    assert nv18["cpu_affinity"]["GPU4"] == "48-71,144-167" and nv18["numa_affinity"]["GPU5"] == "2"
    # DeepEP: no NVLink, each GPU PIX to its own NIC, 10 NICs
    assert len(pcie["devices"]) == 18
    assert all(pcie["matrix"]["GPU%d" % i]["NIC%d" % i] == "PIX" for i in range(6))
    assert all(pcie["matrix"]["GPU0"]["GPU%d" % i] == "SYS" for i in range(1, 8))
    # nccl-tests: 16 GPUs with NV6, mlx5 columns naming themselves, no NUMA columns, rows GPU4-15 cut
    assert len(dgx2["devices"]) == 26 and sorted(dgx2["matrix"]) == ["GPU0", "GPU1", "GPU2", "GPU3"]
    assert (dgx2["matrix"]["GPU2"]["mlx5_1"], dgx2["matrix"]["GPU0"]["mlx5_1"], dgx2["matrix"]["GPU0"]["GPU15"]) == (
        "PIX", "PXB", "NV6")
    assert dgx2["nic_names"]["mlx5_9"] == "mlx5_9" and dgx2["numa_affinity"] == {}
    assert dgx2["cpu_affinity"]["GPU3"] == "0-23,48-71"


# The section's files that are no input of the fabric facts, and why.
NOT_FABRIC_FACTS = {
    # systemd-networkd's carrier lines: the facts keep the port's own cumulative link_downed counter instead
    "syslog_ib6-link-flapping_azure-vm_azure.txt",
    # the fabric manager's service state is the host facts' (host.services.fabricmanager), read by systemctl
    "journalctl_nvidia-fabricmanager-start-failed-nv-warn-nothing-to-do_no-nvswitch_issue-quotes.txt",
}


def section_files(index_text, title):
    section = index_text.split("### " + title + "\n", 1)[1].split("\n### ", 1)[0]
    return set(line.split("|")[1].strip() for line in section.splitlines()
               if line.startswith("| ") and not line.startswith(("| file", "|---")))


def test_every_network_fabric_capture_of_the_index_is_read_here(corpus):
    with open(corpus.realdata("INDEX.md")) as handle:
        files = section_files(handle.read(), "Network fabric")
    with open(__file__) as handle:
        source = handle.read().split("\nNOT_FABRIC_FACTS = ")[0]  # the tests above
    read_here = set(name for name in files if '"%s"' % name in source)
    assert len(files) == 12
    assert files - read_here == NOT_FABRIC_FACTS
