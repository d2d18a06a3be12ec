# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gather_subset fabric: the host's InfiniBand / RoCE HCAs and ports, GPUDirect RDMA readiness and the
GPU-to-NIC topology (facts `fabric`, docs/fabric.md).

Everything is read through the host (host_io), so a live host, a fixture replay and a captured host
(capture_host) give the same facts:
- HCAs and ports from /sys/class/infiniband (files only: the PCI address from device/uevent, the netdev from
  ports/<n>/gid_attrs/ndevs/0 or device/net/); where that folder is missing, `ibstat`, else `ibv_devinfo -v`;
- `ethtool -S <netdev>` for the Ethernet (RoCE) ports only;
- GPUDirect: nvidia_peermem in /proc/modules (or `lsmod`), dma-buf as the driver's flavor and the kernel tell
  it, and the ACS control of the PCI bridges from `lspci -nnvv` (read only; setpci is not used);
- `nvidia-smi topo -m`.
A missing program or folder leaves its part null and is noted in the facts' inputs; a command that fails is an
entry in errors.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re

from ansible_collections.gpufleet.core.plugins.module_utils.facts_model import add_error, normalize_pci_bus_id

# The parsers (fabric_parsers) are imported where the host gave fabric text to parse: every module run compiles the
# collection's module_utils again (AnsiballZ ships sources), and most hosts have no HCA, no RDMA tools, no topology.

SYSFS_IB = "/sys/class/infiniband"
# a host has a few HCAs with one or two ports each; an HCA's counters are a few dozen files per folder
MAX_HCAS = 64
MAX_PORTS = 4
MAX_COUNTERS = 256
MAX_ETHTOOL_PORTS = 32
MAX_PERFQUERY_PORTS = 16
PROC_MODULES = "/proc/modules"
DRIVER_VERSION = "/proc/driver/nvidia/version"
OSRELEASE = "/proc/sys/kernel/osrelease"
# dma-buf GPUDirect RDMA: the NVIDIA open kernel modules and a kernel of 5.12 or later
DMABUF_KERNEL = (5, 12)
OPEN_MODULE_MARK = "Open Kernel Module"
PEERMEM_MODULES = ("nvidia_peermem", "nv_peer_mem")
LSPCI_ARGS = ["-nnvv"]
TOPO_ARGS = ["topo", "-m"]


def collect_fabric(host, facts, timeout):
    """Fills facts['fabric'] = {hcas, hcas_source, gpudirect, topology}."""
    hcas, source = read_hcas(host, facts, timeout)
    if hcas:
        read_ethtool(host, facts, hcas, timeout)
    fabric = {"hcas": hcas, "hcas_source": source,
              "gpudirect": read_gpudirect(host, facts, bool(hcas), timeout),
              "topology": read_topology(host, facts, timeout)}
    facts["fabric"] = fabric
    return fabric


# --- HCAs -----------------------------------------------------------------------------------------

def read_hcas(host, facts, timeout):
    """(hcas, source): sysfs first; ibstat, then ibv_devinfo -v where the folder is missing; (None, None) when
    none of them is there."""
    names = host.listdir(SYSFS_IB)
    if names is not None:
        return [read_sysfs_hca(host, name) for name in names[:MAX_HCAS]], "sysfs"
    for program, args, parser in (("ibstat", [], "parse_ibstat"), ("ibv_devinfo", ["-v"], "parse_ibv_devinfo")):
        hcas = _hcas_from_command(host, facts, program, args, parser, timeout)
        if hcas is not None:
            hcas = hcas[:MAX_HCAS]
            add_netdevs(host, hcas, timeout)
            add_perfquery_counters(host, facts, hcas, timeout)
            return hcas, program
    return None, None


def add_netdevs(host, hcas, timeout):
    """Without sysfs, the ports' netdevs from `ibdev2netdev` (where it is installed, or captured)."""
    program = host.find_bin("ibdev2netdev")
    result = host.run([program], timeout) if program else None
    if result is None or result.rc != 0:
        return
    netdevs = _parsers().parse_ibdev2netdev(result.stdout)
    for hca in hcas:
        for port in hca["ports"]:
            port["netdev"] = port["netdev"] or (netdevs.get((hca["name"], port["port"])) or {}).get("netdev")


def add_perfquery_counters(host, facts, hcas, timeout):
    """Without sysfs, an InfiniBand port's counters from `perfquery -x -C <hca> -P <port>` (where installed or
    captured): the same counters under sysfs's names."""
    ports = [(hca["name"], port) for hca in hcas for port in hca["ports"]
             if port["link_layer"] != "Ethernet"][:MAX_PERFQUERY_PORTS]
    program = host.find_bin("perfquery") if ports else None
    if not program:
        return
    for name, port in ports:
        argv = [program, "-x", "-C", name, "-P", str(port["port"])]
        result = host.run(argv, timeout)
        if result.rc == 0:
            port["counters"] = _parsers().parse_perfquery(result.stdout)
        else:
            command_failed(facts, "perfquery -x -C %s -P %d" % (name, port["port"]), result)


def _hcas_from_command(host, facts, program, args, parser, timeout):
    path = host.find_bin(program)
    if not path:
        return None
    result = host.run([path] + args, timeout)
    if result.rc == 0 and not (result.stdout or "").strip():
        return []
    if result.rc != 0 and not (result.stdout or "").strip():
        command_failed(facts, " ".join([program] + args), result)
        return None
    hcas, problems = getattr(_parsers(), parser)(result.stdout)
    for problem in problems:
        add_error(facts, None, " ".join([program] + args), problem, result.rc)
    if result.rc != 0 and not problems:
        command_failed(facts, " ".join([program] + args), result)
    # ibstat stops at a vanished device (ibpanic) with what it printed until then: those HCAs are kept
    return hcas if hcas or result.rc == 0 else None


def command_failed(facts, call, result):
    """An error entry for a command that ran and failed; one that is not there (a capture without it) is only
    absent in the facts' inputs."""
    if not result.missing:
        add_error(facts, None, call, result.describe_failure(), result.rc)


def _read_value(host, path):
    text = host.read_text(path, 4096)
    if text is None:
        return None
    text = text.strip()
    return text or None


def read_sysfs_hca(host, name):
    folder = "%s/%s" % (SYSFS_IB, name)
    hca = _parsers().new_hca(name)
    for field in ("hca_type", "board_id", "fw_ver"):
        hca[field] = _read_value(host, "%s/%s" % (folder, field))
    hca["node_guid"] = _read_value(host, folder + "/node_guid")
    hca["pci_bus_id"] = pci_slot(host.read_text(folder + "/device/uevent", 4096))
    netdevs = host.listdir(folder + "/device/net") or []
    ports = [number for number in (_port_number(entry) for entry in host.listdir(folder + "/ports") or ())
             if number is not None]
    hca["ports"] = [read_sysfs_port(host, folder, number, netdevs, len(ports))
                    for number in sorted(ports)[:MAX_PORTS]]
    return hca


def pci_slot(uevent):
    for line in (uevent or "").splitlines():
        key, _sep, value = line.partition("=")
        if key.strip() == "PCI_SLOT_NAME":
            return normalize_pci_bus_id(value)
    return None


def _port_number(entry):
    return int(entry) if str(entry).isdigit() else None


def read_sysfs_port(host, folder, number, netdevs, port_count):
    base = "%s/ports/%d" % (folder, number)
    parsers = _parsers()
    port = parsers.new_port(number)
    port.update(parsers.port_state(_read_value(host, base + "/state")))
    port.update(parsers.phys_state(_read_value(host, base + "/phys_state")))
    port.update(parsers.sysfs_rate(_read_value(host, base + "/rate")))
    port["link_layer"] = _read_value(host, base + "/link_layer")
    port["netdev"] = port_netdev(host, folder, port, netdevs, port_count)
    port["counters"] = read_counter_folder(host, base + "/counters")
    port["hw_counters"] = read_counter_folder(host, base + "/hw_counters")
    return port


def port_netdev(host, folder, port, netdevs, port_count):
    """The port's netdev: a RoCE port's gid_attrs/ndevs/0, else the one netdev of a one-port HCA's PCI function
    (an IPoIB interface), else the netdev whose dev_port is the port's (numbered from 0)."""
    number = port["port"]
    if port["link_layer"] == "Ethernet":
        named = _read_value(host, "%s/ports/%d/gid_attrs/ndevs/0" % (folder, number))
        if named:
            return named
    if len(netdevs) == 1 and port_count == 1:
        return netdevs[0]
    for netdev in netdevs:
        dev_port = _read_value(host, "%s/device/net/%s/dev_port" % (folder, netdev))
        if dev_port is not None and dev_port.isdigit() and int(dev_port) == number - 1:
            return netdev
    return None


def read_counter_folder(host, folder):
    """{name: int} of a folder of counter files; a file that does not read as a number is left out."""
    counters = {}
    for name in (host.listdir(folder) or ())[:MAX_COUNTERS]:
        value = _int_or_none(_read_value(host, "%s/%s" % (folder, name)))
        if value is not None:
            counters[name] = value
    return counters


def _int_or_none(text):
    try:
        return int(text)
    except (TypeError, ValueError):
        return None


def read_ethtool(host, facts, hcas, timeout):
    """`ethtool -S` of each Ethernet (RoCE) port's netdev; an InfiniBand port keeps ethtool null."""
    ports = [port for hca in hcas for port in hca["ports"]
             if port["link_layer"] == "Ethernet" and port["netdev"]][:MAX_ETHTOOL_PORTS]
    if not ports:
        return
    ethtool = host.find_bin("ethtool")
    if not ethtool:
        return
    for port in ports:
        result = host.run([ethtool, "-S", port["netdev"]], timeout)
        if result.rc == 0:
            port["ethtool"] = _parsers().parse_ethtool_stats(result.stdout)
        else:
            command_failed(facts, "ethtool -S %s" % port["netdev"], result)


# --- GPUDirect ------------------------------------------------------------------------------------

def read_gpudirect(host, facts, has_hcas, timeout):
    """{peermem_loaded, dmabuf_supported, acs}. The ACS of the bridges is read only on a host with HCAs:
    without a NIC there is no GPUDirect RDMA for it to block."""
    return {"peermem_loaded": peermem_loaded(host, timeout),
            "dmabuf_supported": dmabuf_supported(host),
            "acs": read_acs(host, facts, timeout) if has_hcas else None}


def peermem_loaded(host, timeout):
    text = host.read_text(PROC_MODULES)
    if text is None:
        lsmod = host.find_bin("lsmod")
        result = host.run([lsmod], timeout) if lsmod else None
        text = result.stdout if result is not None and result.rc == 0 else None
    if text is None:
        return None
    return bool(loaded_modules(text) & set(PEERMEM_MODULES))


def dmabuf_supported(host):
    """True when the loaded NVIDIA kernel module is the open flavor and the kernel is 5.12 or later (what
    GPUDirect RDMA over dma-buf needs); False when either is not; None when the driver's version file or the
    kernel release cannot be read."""
    version = host.read_text(DRIVER_VERSION, 4096)
    release = kernel_release_at_least(_read_value(host, OSRELEASE), *DMABUF_KERNEL)
    if version is None or release is None:
        return None
    return OPEN_MODULE_MARK in version and release


def read_acs(host, facts, timeout):
    lspci = host.find_bin("lspci")
    if not lspci:
        return None
    result = host.run([lspci] + LSPCI_ARGS, timeout)
    if result.rc != 0:
        command_failed(facts, "lspci -nnvv", result)
        return None
    bridges, denied = _parsers().parse_lspci_acs(result.stdout, normalize_pci_bus_id)
    if denied and not bridges:
        add_error(facts, None, "lspci -nnvv", "the PCI bridges' ACS control needs root to read (lspci printed "
                  "<access denied>)")
        return None
    return bridges


# --- topology -------------------------------------------------------------------------------------

def read_topology(host, facts, timeout):
    nvidia_smi = host.find_bin("nvidia-smi")
    if not nvidia_smi:
        return None
    result = host.run([nvidia_smi] + TOPO_ARGS, timeout)
    if result.rc != 0:
        command_failed(facts, "nvidia-smi topo -m", result)
        return None
    topology, problems = _parsers().parse_topology(result.stdout)
    for problem in problems:
        add_error(facts, None, "nvidia-smi topo -m", problem)
    return topology


def loaded_modules(text):
    """The module names of /proc/modules (or of `lsmod`, whose header is skipped)."""
    names = set()
    for line in (text or "").splitlines():
        words = line.split()
        if words and words[0] != "Module":
            names.add(words[0])
    return names


def kernel_release_at_least(release, major, minor):
    match = re.match(r"^(\d+)\.(\d+)", (release or "").strip())
    if not match:
        return None
    return (int(match.group(1)), int(match.group(2))) >= (major, minor)


def _parsers():
    # here, not at the top: only a host that gave fabric text compiles the parsers (the note at the top)
    from ansible_collections.gpufleet.core.plugins.module_utils import fabric_parsers
    return fabric_parsers
