# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fabric's texts as data: pure functions of the text the host (or a capture) gave.

- sysfs values of /sys/class/infiniband: "4: ACTIVE", "5: LinkUp", "400 Gb/sec (4X NDR)";
- `ibstat` (TAB or space indentation, ibwarn/ibpanic lines, several CAs and ports, output cut anywhere);
- `ibv_devinfo` and `ibv_devinfo -v` ("PORT_ACTIVE (4)", "4X (2)", "25.0 Gbps (32)");
- `ethtool -S <netdev>` ("     rx_packets: 123");
- `nvidia-smi topo -m` (and `topo -p2p`): TAB- or space-separated, the NIC legend, missing columns, cut rows;
- `lspci -nnvv`: the ACSCtl line of every PCI bridge.
Each returns what it could read; what it could not read is a problem text, never an exception.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re

# IB port states (the number sysfs and ibv_devinfo print: enum ib_port_state)
PORT_STATES = {0: "NOP", 1: "DOWN", 2: "INIT", 3: "ARMED", 4: "ACTIVE", 5: "ACTIVE_DEFER"}
# IB physical port states, as sysfs spells them (phys_state_to_str in the kernel's ib core)
PHYS_STATES = {1: "Sleep", 2: "Polling", 3: "Disabled", 4: "PortConfigurationTraining", 5: "LinkUp",
               6: "LinkErrorRecovery", 7: "Phy Test"}
_STATE_CODES = dict((name, code) for code, name in PORT_STATES.items())
_PHYS_CODES = dict((name.lower().replace(" ", "").replace("_", ""), code) for code, name in PHYS_STATES.items())
_PHYS_CODES["linkup"] = 5
# "400 Gb/sec (4X NDR)", "10 Gb/sec (4X)", "2.5 Gb/sec (1X SDR)"
_SYSFS_RATE = re.compile(r"^\s*(?P<rate>\d+(?:\.\d+)?)\s*Gb/sec(?:\s*\((?P<width>\d+X)?\s*(?P<speed>[A-Z]+)?\))?")
_CODED = re.compile(r"^\s*(?:(?P<code>\d+)\s*:\s*)?(?P<name>.*?)\s*$")
_PAREN_CODE = re.compile(r"^\s*(?P<name>.*?)\s*\((?P<code>\d+)\)\s*$")
# ib speeds per lane in Gb/s, the speed word ibv_devinfo -v prints as a number
_LANE_SPEEDS = {2.5: "SDR", 5.0: "DDR", 10.0: "QDR", 14.0: "FDR", 25.0: "EDR", 50.0: "HDR", 100.0: "NDR",
                200.0: "XDR"}
_HEX = re.compile(r"^(?:0x)?[0-9a-fA-F]{16}$")
MAX_MATRIX_DEVICES = 128
MAX_ACS_BRIDGES = 256


def _int(text):
    try:
        return int(str(text).strip(), 0)
    except (TypeError, ValueError):
        return None


def parse_coded(text):
    """(code, name) of a sysfs value such as "4: ACTIVE" or "5: LinkUp"; (None, name) without a number."""
    match = _CODED.match(text or "")
    name = match.group("name") if match else ""
    return (_int(match.group("code")) if match and match.group("code") else None), (name or None)


def port_state(text):
    """{state, state_code} of a state in any of its spellings: "4: ACTIVE", "Active", "PORT_ACTIVE (4)"."""
    code, name = parse_coded(text)
    paren = _PAREN_CODE.match(name or "")
    if paren:
        name, code = paren.group("name"), _int(paren.group("code"))
    name = (name or "").upper()
    if name.startswith("PORT_"):
        name = name[len("PORT_"):]
    if code is None:
        code = _STATE_CODES.get(name)
    if code in PORT_STATES:
        name = PORT_STATES[code]
    return {"state": name or None, "state_code": code}


def phys_state(text):
    """{phys_state, phys_state_code}: "5: LinkUp", "LinkUp", "LINK_UP (5)" -> LinkUp, 5."""
    code, name = parse_coded(text)
    paren = _PAREN_CODE.match(name or "")
    if paren:
        name, code = paren.group("name"), _int(paren.group("code"))
    if code is None:
        code = _PHYS_CODES.get((name or "").lower().replace(" ", "").replace("_", ""))
    if code in PHYS_STATES:
        name = PHYS_STATES[code]
    return {"phys_state": name or None, "phys_state_code": code}


def sysfs_rate(text):
    """{rate_gbps, width, speed} of a sysfs rate: "400 Gb/sec (4X NDR)" -> 400.0, "4X", "NDR"."""
    match = _SYSFS_RATE.match(text or "")
    if not match:
        return {"rate_gbps": None, "width": None, "speed": None}
    return {"rate_gbps": float(match.group("rate")), "width": match.group("width"), "speed": match.group("speed")}


def normalize_guid(text):
    """"0x58a2e10300dae626" or "58a2:e103:00da:e626" -> "58a2:e103:00da:e626" (sysfs's form); None otherwise."""
    digits = (text or "").strip().replace(":", "")
    if not _HEX.match(digits):
        return None
    digits = digits[-16:].lower()
    return ":".join(digits[i:i + 4] for i in range(0, 16, 4))


def new_port(number):
    return {"port": number, "state": None, "state_code": None, "phys_state": None, "phys_state_code": None,
            "link_layer": None, "rate_gbps": None, "width": None, "speed": None, "netdev": None,
            "counters": {}, "hw_counters": {}, "ethtool": None}


def new_hca(name):
    return {"name": name, "hca_type": None, "board_id": None, "fw_ver": None, "node_guid": None,
            "pci_bus_id": None, "ports": []}


def _value(text):
    value = (text or "").strip()
    return None if value in ("", "...") else value


# --- ibstat ---------------------------------------------------------------------------------------

_CA_LINE = re.compile(r"^CA '(?P<name>[^']+)'\s*$")
_PORT_LINE = re.compile(r"^Port (?P<port>\d+):\s*$")
_KEY_VALUE = re.compile(r"^(?P<key>[A-Za-z][A-Za-z _]*?):\s*(?P<value>.*)$")
_IBSTAT_HCA = {"CA type": "hca_type", "Firmware version": "fw_ver", "Node GUID": "node_guid"}


def parse_ibstat(text):
    """(hcas, problems) of `ibstat`'s output. Lines that are not ibstat's own (ibwarn, a shell's echo, an
    elision) are skipped; an ibpanic line is a problem (ibstat stopped there)."""
    hcas, problems = [], []
    hca, port = None, None
    for raw in (text or "").splitlines():
        line = raw.strip()
        if line.startswith("ibpanic:"):
            problems.append(line[:300])
            continue
        ca = _CA_LINE.match(line)
        if ca:
            hca, port = new_hca(ca.group("name")), None
            hcas.append(hca)
            continue
        if hca is None:
            continue
        numbered = _PORT_LINE.match(line)
        if numbered:
            port = new_port(int(numbered.group("port")))
            hca["ports"].append(port)
            continue
        pair = _KEY_VALUE.match(line)
        if not pair:
            continue
        key, value = pair.group("key"), _value(pair.group("value"))
        if port is None:
            _ibstat_hca_field(hca, key, value)
        else:
            _ibstat_port_field(port, key, value)
    return hcas, problems


def _ibstat_hca_field(hca, key, value):
    field = _IBSTAT_HCA.get(key)
    if field == "node_guid":
        hca[field] = normalize_guid(value)
    elif field:
        hca[field] = value


def _ibstat_port_field(port, key, value):
    if key == "State":
        port.update(port_state(value))
    elif key == "Physical state":
        port.update(phys_state(value))
    elif key == "Rate":
        rate = _float(value)
        port["rate_gbps"] = rate
    elif key == "Link layer":
        port["link_layer"] = value


def _float(text):
    try:
        return float(str(text).split()[0])
    except (TypeError, ValueError, IndexError):
        return None


# --- ibv_devinfo ----------------------------------------------------------------------------------

_HCA_ID = re.compile(r"^hca_id:\s*(?P<name>\S+)")
_DEVINFO_PORT = re.compile(r"^port:\s*(?P<port>\d+)\s*$")
_WIDTH = re.compile(r"^(?P<width>\d+X)\b")
_SPEED_GBPS = re.compile(r"^(?P<gbps>\d+(?:\.\d+)?)\s*Gbps")


def parse_ibv_devinfo(text):
    """(hcas, problems) of `ibv_devinfo` or `ibv_devinfo -v`. Its transport says InfiniBand even for a RoCE
    port: link_layer says which it is. With -v, active_width and active_speed give the rate."""
    hcas, problems = [], []
    hca, port = None, None
    for raw in (text or "").splitlines():
        line = raw.strip()
        head = _HCA_ID.match(line)
        if head:
            hca, port = new_hca(head.group("name")), None
            hcas.append(hca)
            continue
        if hca is None:
            continue
        numbered = _DEVINFO_PORT.match(line)
        if numbered:
            port = new_port(int(numbered.group("port")))
            hca["ports"].append(port)
            continue
        key, sep, value = line.partition(":")
        if not sep:
            continue
        key, value = key.strip(), _value(value)
        if port is None:
            _devinfo_hca_field(hca, key, value)
        else:
            _devinfo_port_field(port, key, value)
    for hca in hcas:
        for port in hca["ports"]:
            _settle_devinfo_rate(port)
    return hcas, problems


def _devinfo_hca_field(hca, key, value):
    if key == "fw_ver":
        hca["fw_ver"] = value
    elif key == "node_guid":
        hca["node_guid"] = normalize_guid(value)
    elif key == "board_id":
        hca["board_id"] = value
    elif key == "vendor_part_id" and _int(value) is not None:
        hca["hca_type"] = "MT%d" % _int(value)


def _devinfo_port_field(port, key, value):
    if key == "state":
        port.update(port_state(value))
    elif key == "phys_state":
        port.update(phys_state(value))
    elif key == "link_layer":
        port["link_layer"] = value
    elif key == "active_width":
        match = _WIDTH.match(value or "")
        port["width"] = match.group("width") if match else None
    elif key == "active_speed":
        match = _SPEED_GBPS.match(value or "")
        port["_lane_gbps"] = float(match.group("gbps")) if match else None


def _settle_devinfo_rate(port):
    lane = port.pop("_lane_gbps", None)
    width = _int((port["width"] or "").rstrip("X")) if port["width"] else None
    if lane is not None:
        port["speed"] = _LANE_SPEEDS.get(lane)
        if width:
            port["rate_gbps"] = round(lane * width, 1)


# --- ibdev2netdev, perfquery ---------------------------------------------------------------------

_IBDEV2NETDEV = re.compile(r"^(?P<hca>\S+)\s+port\s+(?P<port>\d+)\s+==>\s+(?P<netdev>\S+)\s+\((?P<link>\w+)\)")


def parse_ibdev2netdev(text):
    """{(hca, port): {netdev, up}} of `ibdev2netdev` ("mlx5_0 port 1 ==> ibp26s0 (Down)"; column -t spacing and a
    comment after it are read too)."""
    found = {}
    for line in (text or "").splitlines():
        match = _IBDEV2NETDEV.match(line.strip())
        if match:
            found[(match.group("hca"), int(match.group("port")))] = {
                "netdev": match.group("netdev"), "up": match.group("link").lower() == "up"}
    return found


# perfquery's names of the PortCounters / PortCountersExtended fields, as sysfs names the same counters
PERFQUERY_NAMES = {
    "SymbolErrorCounter": "symbol_error", "LinkErrorRecoveryCounter": "link_error_recovery",
    "LinkDownedCounter": "link_downed", "PortRcvErrors": "port_rcv_errors",
    "PortRcvRemotePhysicalErrors": "port_rcv_remote_physical_errors",
    "PortRcvSwitchRelayErrors": "port_rcv_switch_relay_errors", "PortXmitDiscards": "port_xmit_discards",
    "PortXmitConstraintErrors": "port_xmit_constraint_errors", "PortRcvConstraintErrors": "port_rcv_constraint_errors",
    "LocalLinkIntegrityErrors": "local_link_integrity_errors",
    "ExcessiveBufferOverrunErrors": "excessive_buffer_overrun_errors", "VL15Dropped": "VL15_dropped",
    "PortXmitWait": "port_xmit_wait", "PortXmitData": "port_xmit_data", "PortRcvData": "port_rcv_data",
    "PortXmitPkts": "port_xmit_packets", "PortRcvPkts": "port_rcv_packets",
    "PortUnicastXmitPkts": "unicast_xmit_packets", "PortUnicastRcvPkts": "unicast_rcv_packets",
    "PortMulticastXmitPkts": "multicast_xmit_packets", "PortMulticastRcvPkts": "multicast_rcv_packets",
}
_PERFQUERY_FIELD = re.compile(r"^(?P<name>[A-Za-z0-9]+):\.*(?P<value>\S+)\s*$")


def parse_perfquery(text):
    """{sysfs counter name: int} of `perfquery` / `perfquery -x` ("SymbolErrorCounter:..........0"); the selector
    fields (PortSelect, CounterSelect) and names without a sysfs twin are left out. perfquery of rdma-core before
    PR #695 printed an extended counter the port does not support as 0: a zero there is not proof of a clean link."""
    counters = {}
    for line in (text or "").splitlines():
        match = _PERFQUERY_FIELD.match(line.strip())
        name = PERFQUERY_NAMES.get(match.group("name")) if match else None
        value = _int(match.group("value")) if name else None
        if value is not None:
            counters[name] = value
    return counters


# --- ethtool -S -----------------------------------------------------------------------------------

def parse_ethtool_stats(text, limit=4096):
    """{name: int} of `ethtool -S`'s "name: value" lines (the header "NIC statistics:" has no value)."""
    stats = {}
    for line in (text or "").splitlines():
        name, sep, value = line.strip().rpartition(":")
        number = _int(value) if sep else None
        if name and number is not None and len(stats) < limit:
            stats[name.strip()] = number
    return stats


# --- nvidia-smi topo -m ---------------------------------------------------------------------------

_DEVICE = re.compile(r"^(?:GPU\d+|NIC\d+|mlx\d+_\d+|mlx\d+_bond_\d+|NVS\d+|CPU\d+)$")
_NIC_LEGEND = re.compile(r"^\s*(?P<nic>NIC\d+)\s*:\s*(?P<name>\S+)\s*$")
_AFFINITY_COLUMNS = ("CPU Affinity", "NUMA Affinity", "GPU NUMA ID")


def parse_topology(text):
    """(topology, problems) of `nvidia-smi topo -m` (or `topo -p2p <x>`): {devices, matrix, nic_names,
    cpu_affinity, numa_affinity}; None when the text holds no matrix. Header cells are split on TABs, else on two
    or more spaces ("CPU Affinity" is one cell); a row's cells on any whitespace (no matrix cell holds a space, and
    an empty cell, two TABs, holds nothing). A row cut short keeps the cells it has."""
    lines = (text or "").splitlines()
    problems = []
    header_at, devices, extras = _topology_header(lines)
    if header_at is None:
        return None, ["no topology matrix header (GPU0 ...) in the output"]
    topology = {"devices": devices, "matrix": {}, "nic_names": {}, "cpu_affinity": {}, "numa_affinity": {}}
    for line in lines[header_at + 1:]:
        cells = line.split()
        if not cells or cells[0] not in devices:
            if cells and cells[0].startswith("Legend"):
                break
            continue
        _topology_row(topology, cells, extras, problems)
    for line in lines[header_at + 1:]:
        legend = _NIC_LEGEND.match(line)
        if legend and legend.group("nic") in devices:
            topology["nic_names"][legend.group("nic")] = legend.group("name")
    for device in devices:
        if not device.startswith(("GPU", "NIC", "NVS", "CPU")):
            topology["nic_names"].setdefault(device, device)
    return topology, problems


def _topology_header(lines):
    for number, line in enumerate(lines):
        cells = [cell.strip() for cell in (line.split("\t") if "\t" in line else re.split(r"\s{2,}", line))]
        cells = [cell for cell in cells if cell]
        devices = [cell for cell in cells if _DEVICE.match(cell)]
        if devices and devices[0] == "GPU0" and cells[0] == "GPU0":
            extras = [cell for cell in cells if cell in _AFFINITY_COLUMNS]
            return number, devices[:MAX_MATRIX_DEVICES], extras
    return None, [], []


def _topology_row(topology, cells, extras, problems):
    name, values = cells[0], cells[1:]
    devices = topology["devices"]
    row = dict(zip(devices, values[:len(devices)]))
    topology["matrix"][name] = row
    if len(values) < len(devices):
        problems.append("%s: %d of %d cells (the row is cut)" % (name, len(values), len(devices)))
        return
    rest = dict(zip(extras, values[len(devices):]))
    if rest.get("CPU Affinity") not in (None, "N/A"):
        topology["cpu_affinity"][name] = rest["CPU Affinity"]
    if rest.get("NUMA Affinity") not in (None, "N/A"):
        topology["numa_affinity"][name] = rest["NUMA Affinity"]


# --- lspci -nnvv: ACS -----------------------------------------------------------------------------

_LSPCI_DEVICE = re.compile(r"^(?P<bdf>(?:[0-9a-fA-F]{4,8}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])\s+(?P<what>.*)$")
_ACS_CTL = re.compile(r"^\s*ACSCtl:\s*(?P<flags>.*?)\s*$")
_BUS_RANGE = re.compile(r"^\s*Bus:.*\bsecondary=(?P<secondary>[0-9a-fA-F]+),\s*subordinate=(?P<subordinate>[0-9a-fA-F]+)")
_BRIDGE_CLASS = "[0604]"


def parse_lspci_acs(text, normalize_bdf):
    """([{bdf, acs_ctl, redirect_enabled, secondary_bus, subordinate_bus}], access_denied) of `lspci -nnvv`: the ACS
    control of every PCI bridge that has one, with the buses behind it (a GPU or NIC whose bus lies in
    secondary..subordinate is below the bridge). ReqRedir+ or CmpltRedir+ sends peer-to-peer requests up to the
    root complex (GPUDirect RDMA between a GPU and a NIC below the same switch then crosses the CPU, or fails).
    access_denied: lspci was not root, so no extended capability (ACS among them) could be read."""
    bridges, bridge, denied = [], None, False
    for line in (text or "").splitlines():
        device = _LSPCI_DEVICE.match(line)
        if device:
            is_bridge = _BRIDGE_CLASS in device.group("what") or "PCI bridge" in device.group("what")
            bridge = {"bdf": normalize_bdf(device.group("bdf")), "secondary_bus": None,
                      "subordinate_bus": None} if is_bridge else None
            continue
        if "<access denied>" in line:
            denied = True
        if bridge is None or not bridge["bdf"]:
            continue
        buses = _BUS_RANGE.match(line)
        if buses:
            bridge["secondary_bus"] = int(buses.group("secondary"), 16)
            bridge["subordinate_bus"] = int(buses.group("subordinate"), 16)
        control = _ACS_CTL.match(line)
        if control and len(bridges) < MAX_ACS_BRIDGES:
            flags = control.group("flags")
            bridge.update(acs_ctl=flags, redirect_enabled="ReqRedir+" in flags or "CmpltRedir+" in flags)
            bridges.append(bridge)
    return bridges, denied
