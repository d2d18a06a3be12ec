"""Demo hosts of the fabric gather_subset (docs/fabric.md).

gpu-h100-fabric-19: an 8x H100 SXM node with eight ConnectX-7 NDR InfiniBand ports (mlx5_0..mlx5_7, one per GPU,
behind the GPU's PCIe switch) and a ConnectX-6 Dx RoCE port (mlx5_8); mlx5_3 trained at 2X width (200 of
400 Gb/s) with symbol errors and link error recoveries, mlx5_6 is down with its physical link Polling (no cable
or a dead transceiver). nvidia_peermem is loaded, the open kernel module on 5.15 offers dma-buf, no PCIe switch
port redirects peer-to-peer traffic (ACS), and every GPU is PIX to its NIC.

The answers follow the formats the kernel and the programs print: /sys/class/infiniband (state "4: ACTIVE",
rate "400 Gb/sec (4X NDR)", device/uevent), `ethtool -S`, `lspci -nnvv`, `nvidia-smi topo -m` (TAB-separated, with
its NIC legend). fabric_host() takes the counters to set, so that a second audit can see them grow.
"""

import demo_scenarios as demo
from ansible_collections.gpufleet.core.plugins.module_utils.fabric_collect import SYSFS_IB

SUBSETS = ["all", "!driver_clients", "!workload", "!host_pressure"]
KERNEL_MODULES = ("nvidia_peermem", "nvidia_uvm", "nvidia_drm", "nvidia_modeset", "nvidia", "mlx5_ib", "ib_uverbs",
                  "ib_core", "mlx5_core", "mlxfw")
IB_COUNTERS = ("VL15_dropped", "excessive_buffer_overrun_errors", "link_downed", "link_error_recovery",
               "local_link_integrity_errors", "multicast_rcv_packets", "multicast_xmit_packets",
               "port_rcv_constraint_errors", "port_rcv_data", "port_rcv_errors", "port_rcv_packets",
               "port_rcv_remote_physical_errors", "port_rcv_switch_relay_errors", "port_xmit_constraint_errors",
               "port_xmit_data", "port_xmit_discards", "port_xmit_packets", "port_xmit_wait", "symbol_error",
               "unicast_rcv_packets", "unicast_xmit_packets")
HW_COUNTERS = ("duplicate_request", "implied_nak_seq_err", "local_ack_timeout_err", "out_of_buffer", "out_of_sequence",
               "packet_seq_err", "req_cqe_error", "req_remote_access_errors", "rnr_nak_retry_err", "roce_adp_retrans",
               "rx_read_requests", "rx_write_requests")
# (HCA, PCI bus of the NIC, PCI bus of the downstream switch port above it): NIC n sits beside GPU n
COMPUTE_NICS = (("mlx5_0", 0x1a, 0x19), ("mlx5_1", 0x2c, 0x2b), ("mlx5_2", 0x3c, 0x3b), ("mlx5_3", 0x5e, 0x5c),
                ("mlx5_4", 0x9c, 0x9b), ("mlx5_5", 0xad, 0xac), ("mlx5_6", 0xbc, 0xbb), ("mlx5_7", 0xdc, 0xda))
ROCE_NIC = ("mlx5_8", 0x1f, "enp31s0f0np0")
ACTIVE, DOWN = "4: ACTIVE", "1: DOWN"
LINK_UP, POLLING = "5: LinkUp", "2: Polling"
NDR_4X, NDR_2X, SDR_4X = "400 Gb/sec (4X NDR)", "200 Gb/sec (2X NDR)", "10 Gb/sec (4X SDR)"


def ib_port(index, state=ACTIVE, phys=LINK_UP, rate=NDR_4X, **counters):
    """The files of one busy compute port; counters override the defaults (all errors 0)."""
    data = 0 if state == DOWN else 212339874932483 + index * 1000003
    values = dict((name, 0) for name in IB_COUNTERS)
    values.update(port_rcv_data=data, port_xmit_data=max(0, data - 97205500644), port_rcv_packets=data // 726,
                  port_xmit_packets=data // 731, unicast_rcv_packets=data // 726, unicast_xmit_packets=data // 731,
                  port_xmit_wait=0 if state == DOWN else 1289603 + 17 * index)
    values.update(counters)
    hw = dict((name, 0) for name in HW_COUNTERS)
    if state != DOWN:
        hw.update(rx_read_requests=9187392 + index, rx_write_requests=3809045607 + index)
    return {"state": state, "phys_state": phys, "rate": rate, "link_layer": "InfiniBand", "counters": values,
            "hw_counters": hw}


def default_ports():
    ports = dict((name, ib_port(index)) for index, (name, _bus, _switch) in enumerate(COMPUTE_NICS))
    ports["mlx5_3"] = ib_port(3, rate=NDR_2X, symbol_error=1432, link_error_recovery=3, link_downed=2,
                              port_rcv_errors=87)
    ports["mlx5_6"] = ib_port(6, state=DOWN, phys=POLLING, rate=SDR_4X, link_downed=6)
    return ports


def uevent(bus, device_id, subsystem):
    return ("DRIVER=mlx5_core\nPCI_CLASS=20700\nPCI_ID=15B3:%s\nPCI_SUBSYS_ID=15B3:%s\nPCI_SLOT_NAME=0000:%02x:00.0\n"
            % (device_id, subsystem, bus))


def sysfs_files(ports):
    """{path: text} of /sys/class/infiniband with the compute ports given ({hca: ib_port(...)}) and the RoCE port."""
    files = {}
    for index, (name, bus, _switch) in enumerate(COMPUTE_NICS):
        folder = "%s/%s" % (SYSFS_IB, name)
        files.update({folder + "/hca_type": "MT4129\n", folder + "/board_id": "MT_0000000838\n",
                      folder + "/fw_ver": "28.39.1002\n", folder + "/node_guid": "a088:c203:00f1:e2d%d\n" % index,
                      folder + "/device/uevent": uevent(bus, "1021", "0041"),
                      folder + "/device/net/ibp%ds0/dev_port" % bus: "0\n"})
        files.update(port_files(folder, ports[name]))
    name, bus, netdev = ROCE_NIC
    folder = "%s/%s" % (SYSFS_IB, name)
    files.update({folder + "/hca_type": "MT4125\n", folder + "/board_id": "MT_0000000359\n",
                  folder + "/fw_ver": "22.39.1002\n", folder + "/node_guid": "1070:fd03:00a1:b2c8\n",
                  folder + "/device/uevent": uevent(bus, "101D", "0016"),
                  folder + "/device/net/%s/dev_port" % netdev: "0\n",
                  folder + "/ports/1/gid_attrs/ndevs/0": netdev + "\n"})
    roce = {"state": ACTIVE, "phys_state": LINK_UP, "rate": "200 Gb/sec (4X HDR)", "link_layer": "Ethernet",
            "counters": dict((counter, 0) for counter in IB_COUNTERS),
            "hw_counters": dict((counter, 0) for counter in HW_COUNTERS)}
    roce["counters"].update(port_rcv_data=48127735, port_xmit_data=45011209, port_rcv_packets=662905,
                            port_xmit_packets=640219)
    roce["hw_counters"].update(roce_adp_retrans=12, out_of_sequence=3)
    files.update(port_files(folder, roce))
    return files


def port_files(folder, port):
    base = folder + "/ports/1"
    files = dict(("%s/%s" % (base, key), "%s\n" % port[key]) for key in ("state", "phys_state", "rate", "link_layer"))
    for kind in ("counters", "hw_counters"):
        files.update(("%s/%s/%s" % (base, kind, name), "%d\n" % value) for name, value in port[kind].items())
    return files


def folders_of(files):
    """{folder: sorted entries} of every folder above the files, as listdir answers."""
    dirs = {}
    for path in files:
        parts = path.split("/")
        for depth in range(len(parts) - 1, 1, -1):
            folder, entry = "/".join(parts[:depth]), parts[depth]
            dirs.setdefault(folder, set()).add(entry)
    return dict((folder, sorted(entries)) for folder, entries in dirs.items() if folder.startswith(SYSFS_IB))


ETHTOOL_ROCE = """NIC statistics:
     rx_packets: 662905
     rx_bytes: 48127735
     tx_packets: 640219
     tx_bytes: 45011209
     rx_crc_errors_phy: 0
     rx_symbol_err_phy: 0
     rx_discards_phy: 0
     tx_discards_phy: 0
     rx_out_of_buffer: 0
     rx_prio3_pause: 1187
     tx_prio3_pause: 0
     np_cnp_sent: 23
     rp_cnp_handled: 41
     link_down_events_phy: 0
"""


def lspci_text():
    """lspci -nnvv of the PCIe switch ports above the NICs (ACS on, no redirect), the NICs and the RoCE card."""
    blocks = []
    for _name, bus, switch in COMPUTE_NICS:
        blocks.append(
            "0000:%02x:00.0 PCI bridge [0604]: Broadcom / LSI PEX890xx PCIe Gen 5 Switch [1000:c030] (rev b0) "
            "(prog-if 00 [Normal decode])\n"
            "\tControl: I/O+ Mem+ BusMaster+ SpecCycle- MemWINV- VGASnoop- ParErr- Stepping- SERR+ FastB2B- DisINTx+\n"
            "\tBus: primary=%02x, secondary=%02x, subordinate=%02x, sec-latency=0\n"
            "\tCapabilities: [1c0 v1] Access Control Services\n"
            "\t\tACSCap:\tSrcValid+ TransBlk+ ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl+ DirectTrans+\n"
            "\t\tACSCtl:\tSrcValid+ TransBlk- ReqRedir- CmpltRedir- UpstreamFwd- EgressCtrl- DirectTrans-\n"
            "\tKernel driver in use: pcieport\n" % (switch, switch - 1, bus, bus))
        blocks.append(
            "0000:%02x:00.0 Infiniband controller [0207]: Mellanox Technologies MT2910 Family [ConnectX-7] [15b3:1021]\n"
            "\tSubsystem: Mellanox Technologies Device [15b3:0041]\n"
            "\tControl: I/O- Mem+ BusMaster+ SpecCycle- MemWINV- VGASnoop- ParErr- Stepping- SERR+ FastB2B- DisINTx+\n"
            "\tKernel driver in use: mlx5_core\n\tKernel modules: mlx5_core\n" % bus)
    blocks.append(
        "0000:1f:00.0 Ethernet controller [0200]: Mellanox Technologies MT2892 Family [ConnectX-6 Dx] [15b3:101d]\n"
        "\tSubsystem: Mellanox Technologies Device [15b3:0016]\n"
        "\tKernel driver in use: mlx5_core\n\tKernel modules: mlx5_core\n")
    return "\n".join(blocks) + "\n"


def topology_text():
    """nvidia-smi topo -m of the node: NV18 between the GPUs, each GPU PIX to its NIC, TAB-separated."""
    gpus = ["GPU%d" % index for index in range(8)]
    nics = ["NIC%d" % index for index in range(9)]
    affinity = ["0-47,96-143"] * 4 + ["48-95,144-191"] * 4
    header = "\t" + "\t".join(gpus + nics) + "\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\n"
    rows = []
    for index, gpu in enumerate(gpus):
        cells = [" X " if other == index else "NV18" for other in range(8)]
        cells += [nic_link(index, nic) for nic in range(9)]
        rows.append("%s\t%s\t%s\t%d\t\tN/A\n" % (gpu, "\t".join(cells), affinity[index], index // 4))
    for nic in range(9):
        cells = [nic_link(gpu, nic) for gpu in range(8)]
        cells += [" X " if other == nic else nic_to_nic(nic, other) for other in range(9)]
        rows.append("NIC%d\t%s\n" % (nic, "\t".join(cells)))
    legend = ("\nLegend:\n\n  X    = Self\n"
              "  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes (e.g., QPI/UPI)\n"
              "  NODE = Connection traversing PCIe as well as the interconnect between PCIe Host Bridges within a NUMA node\n"
              "  PHB  = Connection traversing PCIe as well as a PCIe Host Bridge (typically the CPU)\n"
              "  PXB  = Connection traversing multiple PCIe bridges (without traversing the PCIe Host Bridge)\n"
              "  PIX  = Connection traversing at most a single PCIe bridge\n"
              "  NV#  = Connection traversing a bonded set of # NVLinks\n\nNIC Legend:\n\n")
    names = [name for name, _bus, _switch in COMPUTE_NICS] + [ROCE_NIC[0]]
    legend += "".join("  NIC%d: %s\n" % (index, name) for index, name in enumerate(names))
    return header + "".join(rows) + legend


def nic_link(gpu, nic):
    """GPU n is PIX to NIC n; the RoCE card (NIC8) hangs off socket 0; the rest by socket."""
    if nic == gpu:
        return "PIX"
    socket = 0 if nic == 8 else nic // 4
    return "NODE" if socket == gpu // 4 else "SYS"


def nic_to_nic(nic, other):
    first, second = (0 if nic == 8 else nic // 4), (0 if other == 8 else other // 4)
    return "NODE" if first == second else "SYS"


def add_fabric(host, ports=None):
    """The fabric answers of a SimHost's dict (files, dirs, bins, commands)."""
    files = sysfs_files(ports or default_ports())
    host["files"].update(files)
    host["dirs"].update(folders_of(files))
    host["files"]["/proc/modules"] = "".join(
        "%s 57344 0 - Live 0x0000000000000000\n" % module for module in KERNEL_MODULES)
    host["bins"].update({"ethtool": "/usr/sbin/ethtool", "lspci": "/usr/bin/lspci"})
    host["commands"]["ethtool -S " + ROCE_NIC[2]] = {"rc": 0, "stdout": ETHTOOL_ROCE, "stderr": ""}
    host["commands"]["lspci -nnvv"] = {"rc": 0, "stdout": lspci_text(), "stderr": ""}
    host["commands"]["nvidia-smi topo -m"] = {"rc": 0, "stdout": topology_text(), "stderr": ""}
    return host


def fabric_host(name="gpu-h100-fabric-19", serial_prefix="165242319", ports=None, description=None):
    """An 8x H100 training node with the fabric above; ports ({hca: ib_port(...)}) replaces the compute ports'."""
    scenario = demo.identify(demo.h100_node(), name, serial_prefix)
    for index, gpu in enumerate(scenario["gpus"]):
        demo.training_load(gpu, index, 318301 + index)
    host = demo.training_node(name, scenario).gpu_processes(scenario, "pt_main_thread").to_dict()
    add_fabric(host, ports)
    return dict(name=name, group="h100_fabric", source="nvml", nvml=scenario, host=host, gather_subset=SUBSETS,
                description=description or "InfiniBand mlx5_3 trained at 2X width (200 of 400 Gb/s) with symbol "
                                           "errors; mlx5_6 down, physical link Polling")


def host_h100_fabric_19():
    return fabric_host()


HOST_BUILDERS = (host_h100_fabric_19,)
