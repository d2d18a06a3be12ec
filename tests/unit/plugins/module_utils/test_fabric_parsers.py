"""The fabric's parsers (module_utils/fabric_parsers.py) on the project's own samples (fabric_samples/, values of
our own in each program's format) and on the edges real output has: spaces for TABs, ibwarn and ibpanic lines, a
cut output, missing columns."""

import os

import pytest

from ansible_collections.gpufleet.core.plugins.module_utils import fabric_collect
from ansible_collections.gpufleet.core.plugins.module_utils import fabric_parsers as parsers
from ansible_collections.gpufleet.core.plugins.module_utils.facts_model import normalize_pci_bus_id

SAMPLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fabric_samples")


def sample(name):
    with open(os.path.join(SAMPLES, name)) as handle:
        return handle.read()


def by_name(hcas):
    return dict((hca["name"], hca) for hca in hcas)


@pytest.mark.parametrize("text, expected", [
    ("4: ACTIVE", ("ACTIVE", 4)), ("1: DOWN", ("DOWN", 1)), ("Active", ("ACTIVE", 4)), ("Down", ("DOWN", 1)),
    ("PORT_ACTIVE (4)", ("ACTIVE", 4)), ("PORT_DOWN (1)", ("DOWN", 1)), ("Initializing", ("INITIALIZING", None)),
    (None, (None, None)),
])
def test_port_state_in_every_spelling(text, expected):
    state = parsers.port_state(text)
    assert (state["state"], state["state_code"]) == expected


@pytest.mark.parametrize("text, expected", [
    ("5: LinkUp", ("LinkUp", 5)), ("2: Polling", ("Polling", 2)), ("3: Disabled", ("Disabled", 3)),
    ("LinkUp", ("LinkUp", 5)), ("Polling", ("Polling", 2)), ("LINK_UP (5)", ("LinkUp", 5)),
    ("POLLING (2)", ("Polling", 2)), ("DISABLED (3)", ("Disabled", 3)), ("", (None, None)),
])
def test_physical_state_in_every_spelling(text, expected):
    state = parsers.phys_state(text)
    assert (state["phys_state"], state["phys_state_code"]) == expected


@pytest.mark.parametrize("text, expected", [
    ("400 Gb/sec (4X NDR)", (400.0, "4X", "NDR")), ("200 Gb/sec (2X NDR)", (200.0, "2X", "NDR")),
    ("2.5 Gb/sec (1X SDR)", (2.5, "1X", "SDR")), ("10 Gb/sec (4X)", (10.0, "4X", None)),
    ("100 Gb/sec", (100.0, None, None)), ("garbage", (None, None, None)),
])
def test_sysfs_rate_gives_rate_width_and_speed(text, expected):
    rate = parsers.sysfs_rate(text)
    assert (rate["rate_gbps"], rate["width"], rate["speed"]) == expected


def test_guids_take_sysfs_form_and_redactions_are_null():
    assert parsers.normalize_guid("0xA088C20300F1E2D3") == "a088:c203:00f1:e2d3"
    assert parsers.normalize_guid("a088:c203:00f1:e2d3") == "a088:c203:00f1:e2d3"
    assert parsers.normalize_guid("...") is None


def test_own_ibstat_sample_with_tabs():
    hcas, problems = parsers.parse_ibstat(sample(
        "ibstat_own_cx7-ndr-active-and-2x-degraded_cx6dx-roce-down-polling_tabs.txt"))
    assert problems == []
    hcas = by_name(hcas)
    assert sorted(hcas) == ["mlx5_0", "mlx5_3", "mlx5_8"]
    assert (hcas["mlx5_3"]["hca_type"], hcas["mlx5_3"]["fw_ver"], hcas["mlx5_3"]["node_guid"]) == (
        "MT4129", "28.39.1002", "a088:c203:00f1:e2d3")
    degraded = hcas["mlx5_3"]["ports"][0]
    assert (degraded["port"], degraded["state"], degraded["phys_state"], degraded["rate_gbps"],
            degraded["link_layer"]) == (1, "ACTIVE", "LinkUp", 200.0, "InfiniBand")
    down = hcas["mlx5_8"]["ports"][0]
    assert (down["state"], down["state_code"], down["phys_state"], down["phys_state_code"], down["link_layer"]) == (
        "DOWN", 1, "Polling", 2, "Ethernet")
    assert hcas["mlx5_0"]["ports"][0]["rate_gbps"] == 400.0


def test_ibstat_with_spaces_noise_and_a_cut_end():
    text = sample("ibstat_own_cx7-ndr-active-and-2x-degraded_cx6dx-roce-down-polling_tabs.txt").replace("\t", "    ")
    noisy = "+ ibstat\nibwarn: [1234] umad_init: umad_init\n" + text[:text.rindex("Rate: 40")]
    hcas, problems = parsers.parse_ibstat(noisy)
    assert problems == []
    cut = by_name(hcas)["mlx5_8"]["ports"][0]
    assert (cut["state"], cut["phys_state"], cut["rate_gbps"], cut["link_layer"]) == ("DOWN", "Polling", None, None)


def test_ibpanic_mid_output_is_a_problem_and_keeps_what_came_before():
    text = sample("ibstat_own_cx7-ndr-active-and-2x-degraded_cx6dx-roce-down-polling_tabs.txt")
    text = text[:text.index("CA 'mlx5_8'")] + "ibpanic: [99] main: stat of IB device 'mlx5_8' failed: No such file\n"
    hcas, problems = parsers.parse_ibstat(text)
    assert [hca["name"] for hca in hcas] == ["mlx5_0", "mlx5_3"]
    assert problems == ["ibpanic: [99] main: stat of IB device 'mlx5_8' failed: No such file"]


def test_own_ibv_devinfo_verbose_sample_gives_width_speed_and_rate():
    hcas, _problems = parsers.parse_ibv_devinfo(sample(
        "ibv_devinfo-v_own_cx7-ndr-active-and-2x-degraded_cx6dx-roce-down-polling.txt"))
    hcas = by_name(hcas)
    assert (hcas["mlx5_3"]["hca_type"], hcas["mlx5_3"]["board_id"], hcas["mlx5_3"]["node_guid"]) == (
        "MT4129", "MT_0000000838", "a088:c203:00f1:e2d3")
    ports = dict((name, hca["ports"][0]) for name, hca in hcas.items())
    assert (ports["mlx5_0"]["width"], ports["mlx5_0"]["speed"], ports["mlx5_0"]["rate_gbps"]) == ("4X", "NDR", 400.0)
    assert (ports["mlx5_3"]["width"], ports["mlx5_3"]["rate_gbps"], ports["mlx5_3"]["state"]) == ("2X", 200.0, "ACTIVE")
    assert (ports["mlx5_8"]["state"], ports["mlx5_8"]["phys_state"], ports["mlx5_8"]["link_layer"],
            ports["mlx5_8"]["speed"]) == ("DOWN", "Polling", "Ethernet", "QDR")
    assert "_lane_gbps" not in ports["mlx5_8"]


def test_own_ethtool_sample_reads_every_counter_and_skips_the_header():
    stats = parsers.parse_ethtool_stats(sample("ethtool-S_own_cx6dx-roce-enp31s0f0np0.txt"))
    assert stats["rx_packets"] == 662905 and stats["rx_prio3_pause"] == 1187 and stats["np_cnp_sent"] == 23
    assert "NIC statistics" not in stats and len(stats) == 14


def test_own_topology_sample_tab_separated_with_nic_legend():
    topology, problems = parsers.parse_topology(sample("nvidia-smi-topo-m_own_h100-8gpu-nv18-9nic-pix_tabs.txt"))
    assert problems == []
    assert topology["devices"] == ["GPU%d" % i for i in range(8)] + ["NIC%d" % i for i in range(9)]
    assert topology["matrix"]["GPU3"]["NIC3"] == "PIX" and topology["matrix"]["GPU3"]["GPU3"] == "X"
    assert topology["matrix"]["GPU5"]["NIC0"] == "SYS" and topology["matrix"]["GPU0"]["GPU7"] == "NV18"
    assert topology["matrix"]["NIC8"]["GPU0"] == "NODE"
    assert topology["nic_names"]["NIC6"] == "mlx5_6" and topology["nic_names"]["NIC8"] == "mlx5_8"
    assert topology["cpu_affinity"]["GPU4"] == "48-95,144-191" and topology["numa_affinity"]["GPU4"] == "1"
    assert "NIC0" not in topology["cpu_affinity"]


def test_topology_rows_cut_short_keep_their_cells_and_say_so():
    text = sample("nvidia-smi-topo-m_own_h100-8gpu-nv18-9nic-pix_tabs.txt").replace("\t", "    ")
    lines = text.splitlines()
    lines[2] = lines[2][:lines[2].index("NODE")]
    topology, problems = parsers.parse_topology("\n".join(lines[:3]))
    assert sorted(topology["matrix"]) == ["GPU0", "GPU1"]
    assert topology["matrix"]["GPU1"]["GPU0"] == "NV18" and "NIC1" not in topology["matrix"]["GPU1"]
    assert problems == ["GPU1: 8 of 17 cells (the row is cut)"]
    assert topology["nic_names"] == {}


def test_no_matrix_is_none_with_a_reason():
    assert parsers.parse_topology("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.") == (
        None, ["no topology matrix header (GPU0 ...) in the output"])


def test_own_lspci_sample_lists_bridges_with_acs_and_their_buses():
    bridges, denied = parsers.parse_lspci_acs(sample("lspci-nnvv_own_pex-switch-one-port-acs-redirect.txt"),
                                              normalize_pci_bus_id)
    assert denied is False
    assert [(b["bdf"], b["redirect_enabled"], b["secondary_bus"], b["subordinate_bus"]) for b in bridges] == [
        ("0000:15:01.0", True, 0x16, 0x1f), ("0000:18:00.0", True, 0x19, 0x19), ("0000:18:01.0", False, 0x1a, 0x1a)]
    assert bridges[1]["acs_ctl"] == "SrcValid+ TransBlk- ReqRedir+ CmpltRedir+ UpstreamFwd- EgressCtrl- DirectTrans-"


def test_lspci_without_root_reads_no_acs():
    assert parsers.parse_lspci_acs(sample("lspci-nnvv_own_not-root-access-denied.txt"), normalize_pci_bus_id) == (
        [], True)


def test_loaded_modules_of_proc_modules_and_lsmod():
    assert "nvidia_peermem" in fabric_collect.loaded_modules("nvidia_peermem 16384 0 - Live 0x0\nnvidia 1 2 - Live 0x0\n")
    assert fabric_collect.loaded_modules("Module                  Size  Used by\nnv_peer_mem 16384 0\n") == {"nv_peer_mem"}


@pytest.mark.parametrize("release, expected", [("5.15.0-119-generic", True), ("5.12.0", True), ("5.4.0-42", False),
                                               ("4.18.0-513.el8.x86_64", False), ("6.8.0", True), ("", None)])
def test_kernel_release_for_dma_buf(release, expected):
    assert fabric_collect.kernel_release_at_least(release, 5, 12) is expected


def test_own_ibdev2netdev_sample():
    assert parsers.parse_ibdev2netdev(sample("ibdev2netdev_own_cx7-up-and-roce-down.txt")) == {
        ("mlx5_0", 1): {"netdev": "ibp26s0", "up": True}, ("mlx5_3", 1): {"netdev": "ibp94s0", "up": True},
        ("mlx5_8", 1): {"netdev": "enp31s0f0np0", "up": False}}


def test_own_perfquery_sample_under_sysfs_names():
    counters = parsers.parse_perfquery(sample("perfquery-x_own_mlx5_3-port1-symbol-errors.txt"))
    assert (counters["symbol_error"], counters["link_error_recovery"], counters["link_downed"],
            counters["port_rcv_errors"], counters["port_xmit_wait"]) == (1432, 3, 2, 87, 1289654)
    assert counters["port_rcv_data"] == 115231874932483 and counters["unicast_xmit_packets"] == 157517336024
    assert "PortSelect" not in counters and "port_select" not in counters and len(counters) == 21


HOSTILE = ["", "\x00\xff\ufffd", "CA 'mlx5_0'\n\tPort x:\n\t\tState:\n\t\tRate: fast\n", "hca_id:\n\tport:\t\n",
           "\tGPU0\tGPU0\nGPU0\t" + "X\t" * 500, "GPU0 " * 300 + "\nGPU0", "0000:zz:00.0 PCI bridge [0604]\n\tACSCtl:\n",
           "mlx5_0 port one ==> x (Up)", "SymbolErrorCounter:....x\nPortXmitWait:....-1", "a: b: c\n" * 3]


@pytest.mark.parametrize("text", HOSTILE)
def test_every_parser_reads_hostile_text_without_raising(text):
    parsers.parse_ibstat(text)
    parsers.parse_ibv_devinfo(text)
    parsers.parse_ethtool_stats(text)
    parsers.parse_topology(text)
    parsers.parse_lspci_acs(text, normalize_pci_bus_id)
    parsers.parse_ibdev2netdev(text)
    parsers.parse_perfquery(text)
    for reader in (parsers.port_state, parsers.phys_state, parsers.sysfs_rate, parsers.normalize_guid):
        reader(text)
