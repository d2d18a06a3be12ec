"""gather_subset fabric (module_utils/fabric_collect.py) through the host abstraction: a live host's sysfs tree, a
recorded fixture, a captured host (docs/offline.md) and a host without any of it."""

import json
import os
import sys

import pynvml

from ansible_collections.gpufleet.core.plugins.module_utils import collector, fabric_collect
from ansible_collections.gpufleet.core.plugins.module_utils.capture_host import open_capture
from ansible_collections.gpufleet.core.plugins.module_utils.host_io import CommandResult, LiveHost, ReplayHost
from tests.support.capture_roots import root_from_fixture, write_file
from tests.support.schema_check import ROOT, assert_valid_facts

SAMPLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fabric_samples")
SYSFS_DUMP = "sysfs-infiniband-grep-dump_own_h100-8x-cx7-mlx5_3-2x-width-mlx5_6-polling_cx6dx-roce.txt"
DEMO_FIXTURE = os.path.join(ROOT, "inventories", "demo", "fixtures", "gpu-h100-fabric-19.json")


def sample(name):
    with open(os.path.join(SAMPLES, name)) as handle:
        return handle.read()


def tree_from_grep_dump(text, root):
    """The files of a `grep -r . *` dump (path:value, one line each; a file of several lines has several)."""
    files = {}
    for line in text.splitlines():
        path, _sep, value = line.partition(":")
        files.setdefault(path, []).append(value)
    for path, lines in files.items():
        write_file(root, path, "\n".join(lines) + "\n")
    return root


def commands_host(answers, bins=("ethtool", "lspci", "nvidia-smi")):
    def run(argv, _timeout):
        key = " ".join([os.path.basename(argv[0])] + list(argv[1:]))
        if isinstance(answers.get(key), CommandResult):
            return answers[key]
        if key in answers:
            return CommandResult(0, answers[key], "")
        return CommandResult(None, "", "no such command", missing=True)
    return LiveHost(find_bin=lambda name: "/usr/bin/" + name if name in bins else None, runner=run)


def ports(fabric):
    return dict((hca["name"], hca["ports"][0]) for hca in fabric["hcas"])


def test_a_live_sysfs_tree_gives_ports_counters_netdevs_and_pci_addresses(tmp_path, monkeypatch):
    monkeypatch.setattr(fabric_collect, "SYSFS_IB", tree_from_grep_dump(sample(SYSFS_DUMP), str(tmp_path)))
    host = commands_host({"ethtool -S enp31s0f0np0": sample("ethtool-S_own_cx6dx-roce-enp31s0f0np0.txt"),
                          "nvidia-smi topo -m": sample("nvidia-smi-topo-m_own_h100-8gpu-nv18-9nic-pix_tabs.txt"),
                          "lspci -nnvv": sample("lspci-nnvv_own_pex-switch-one-port-acs-redirect.txt")})
    facts = {"errors": []}
    fabric = fabric_collect.collect_fabric(host, facts, 5)
    assert facts["errors"] == []
    assert fabric["hcas_source"] == "sysfs"
    hcas = dict((hca["name"], hca) for hca in fabric["hcas"])
    assert (hcas["mlx5_3"]["hca_type"], hcas["mlx5_3"]["fw_ver"], hcas["mlx5_3"]["pci_bus_id"],
            hcas["mlx5_3"]["node_guid"]) == ("MT4129", "28.39.1002", "0000:5e:00.0", "a088:c203:00f1:e2d3")
    by_hca = ports(fabric)
    assert (by_hca["mlx5_3"]["rate_gbps"], by_hca["mlx5_3"]["width"], by_hca["mlx5_3"]["counters"]["symbol_error"]) == (
        200.0, "2X", 1432)
    assert (by_hca["mlx5_6"]["state"], by_hca["mlx5_6"]["phys_state"], by_hca["mlx5_6"]["counters"]["link_downed"]) == (
        "DOWN", "Polling", 6)
    assert by_hca["mlx5_0"]["netdev"] == "ibp26s0" and by_hca["mlx5_0"]["ethtool"] is None
    assert by_hca["mlx5_0"]["hw_counters"]["rx_write_requests"] == 3809045607
    assert by_hca["mlx5_8"]["netdev"] == "enp31s0f0np0" and by_hca["mlx5_8"]["ethtool"]["np_cnp_sent"] == 23
    assert [bridge["bdf"] for bridge in fabric["gpudirect"]["acs"] if bridge["redirect_enabled"]] == [
        "0000:15:01.0", "0000:18:00.0"]
    assert fabric["topology"]["matrix"]["GPU6"]["NIC6"] == "PIX"


def test_ibstat_then_ibv_devinfo_where_sysfs_is_missing(tmp_path, monkeypatch):
    monkeypatch.setattr(fabric_collect, "SYSFS_IB", str(tmp_path / "absent"))
    ibstat = sample("ibstat_own_cx7-ndr-active-and-2x-degraded_cx6dx-roce-down-polling_tabs.txt")
    facts = {"errors": []}
    fabric = fabric_collect.collect_fabric(commands_host({"ibstat": ibstat}, bins=("ibstat",)), facts, 5)
    assert fabric["hcas_source"] == "ibstat" and ports(fabric)["mlx5_3"]["rate_gbps"] == 200.0
    assert fabric["topology"] is None and fabric["gpudirect"]["acs"] is None
    devinfo = sample("ibv_devinfo-v_own_cx7-ndr-active-and-2x-degraded_cx6dx-roce-down-polling.txt")
    fabric = fabric_collect.collect_fabric(commands_host({"ibv_devinfo -v": devinfo}, bins=("ibv_devinfo",)), facts, 5)
    assert fabric["hcas_source"] == "ibv_devinfo" and ports(fabric)["mlx5_3"]["width"] == "2X"
    assert facts["errors"] == []


def test_ibpanic_keeps_the_hcas_read_before_it_and_is_an_error(tmp_path, monkeypatch):
    monkeypatch.setattr(fabric_collect, "SYSFS_IB", str(tmp_path / "absent"))
    text = sample("ibstat_own_cx7-ndr-active-and-2x-degraded_cx6dx-roce-down-polling_tabs.txt")
    text = text[:text.index("CA 'mlx5_8'")] + "ibpanic: [7] main: stat of IB device 'mlx5_8' failed: No such file\n"

    def run(_argv, _timeout):
        return CommandResult(255, text, "")
    facts = {"errors": []}
    host = LiveHost(find_bin=lambda name: "/usr/sbin/ibstat" if name == "ibstat" else None, runner=run)
    fabric = fabric_collect.collect_fabric(host, facts, 5)
    assert [hca["name"] for hca in fabric["hcas"]] == ["mlx5_0", "mlx5_3"]
    assert facts["errors"] == [{"gpu": None, "call": "ibstat", "code": 255,
                                "reason": "ibpanic: [7] main: stat of IB device 'mlx5_8' failed: No such file"}]


def test_a_host_without_fabric_has_null_parts_and_absent_inputs():
    host = ReplayHost({"now": 1764482400, "files": {}, "dirs": {}, "bins": {}, "commands": {}})
    facts, _recorded = collector.Collection(host=host, source="nvidia_smi", gather_subset=["fabric"]).run()
    assert_valid_facts(facts)
    assert facts["fabric"] == {"hcas": None, "hcas_source": None, "topology": None,
                               "gpudirect": {"peermem_loaded": None, "dmabuf_supported": None, "acs": None}}
    (step,) = [entry for entry in facts["inputs"] if entry["input"] == "fabric"]
    assert step["status"] == "absent" and {"source": "/sys/class/infiniband", "status": "absent"} in step["sources"]


def test_failed_commands_are_errors_not_crashes():
    host = ReplayHost({"now": 1764482400, "files": {}, "dirs": {"/sys/class/infiniband": []},
                       "bins": {"nvidia-smi": "/usr/bin/nvidia-smi"},
                       "commands": {"nvidia-smi topo -m": {"rc": 9, "stdout": "", "stderr": "NVIDIA-SMI has failed"}}})
    facts, _recorded = collector.Collection(host=host, source="nvidia_smi", gather_subset=["fabric"]).run()
    assert facts["fabric"]["hcas"] == [] and facts["fabric"]["topology"] is None
    assert {"gpu": None, "call": "nvidia-smi topo -m", "reason": "exit status 9: NVIDIA-SMI has failed", "code": 9} in (
        facts["errors"])


def demo_fixture():
    with open(DEMO_FIXTURE) as handle:
        return json.load(handle)


def test_replay_and_a_captured_root_of_the_same_host_give_the_same_fabric_facts(tmp_path):
    replayed, _recorded = collector.Collection(source="replay", fixture=demo_fixture(), pynvml=pynvml).run()
    capture = open_capture(root_from_fixture(demo_fixture(), str(tmp_path)))
    captured, _recorded = collector.Collection(capture=capture, gather_subset=["fabric"]).run()
    assert_valid_facts(captured)
    assert captured["fabric"] == replayed["fabric"]
    assert ports(captured["fabric"])["mlx5_3"]["width"] == "2X"
    (step,) = [entry for entry in captured["inputs"] if entry["input"] == "fabric"]
    assert step["status"] == "read" and step["sources"] == []


def test_a_sosreport_style_capture_with_ibstat_and_no_sysfs(tmp_path):
    root = str(tmp_path)
    write_file(root, "sos_commands/infiniband/ibstat",
               sample("ibstat_own_cx7-ndr-active-and-2x-degraded_cx6dx-roce-down-polling_tabs.txt"))
    write_file(root, "sos_commands/nvidia/nvidia-smi_topo_-m",
               sample("nvidia-smi-topo-m_own_h100-8gpu-nv18-9nic-pix_tabs.txt"))
    write_file(root, "proc/modules", "nvidia_peermem 16384 0 - Live 0x0\nnvidia 1 1 nvidia_peermem, Live 0x0\n")
    write_file(root, "proc/driver/nvidia/version", "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.90.07\n")
    write_file(root, "proc/sys/kernel/osrelease", "5.15.0-119-generic\n")
    write_file(root, "sos_commands/date/date", "Mon Nov 30 06:00:00 UTC 2026\n")
    facts, _recorded = collector.Collection(capture=open_capture(root), gather_subset=["fabric"]).run()
    assert_valid_facts(facts)
    fabric = facts["fabric"]
    assert fabric["hcas_source"] == "ibstat" and ports(fabric)["mlx5_8"]["phys_state"] == "Polling"
    # the proprietary kernel module: no dma-buf; nvidia_peermem loaded
    assert (fabric["gpudirect"]["peermem_loaded"], fabric["gpudirect"]["dmabuf_supported"]) == (True, False)
    assert fabric["topology"]["nic_names"]["NIC3"] == "mlx5_3"


def test_without_sysfs_ibdev2netdev_names_the_netdevs_and_perfquery_gives_the_counters(tmp_path, monkeypatch):
    monkeypatch.setattr(fabric_collect, "SYSFS_IB", str(tmp_path / "absent"))
    perfquery = sample("perfquery-x_own_mlx5_3-port1-symbol-errors.txt")
    answers = {"ibstat": sample("ibstat_own_cx7-ndr-active-and-2x-degraded_cx6dx-roce-down-polling_tabs.txt"),
               "ibdev2netdev": sample("ibdev2netdev_own_cx7-up-and-roce-down.txt"),
               "perfquery -x -C mlx5_3 -P 1": perfquery,
               "perfquery -x -C mlx5_0 -P 1": CommandResult(255, "", "ibpanic: [5] main: can't resolve self port 1")}
    facts = {"errors": []}
    fabric = fabric_collect.collect_fabric(commands_host(answers, bins=("ibstat", "ibdev2netdev", "perfquery")), facts, 5)
    by_hca = ports(fabric)
    assert [by_hca[name]["netdev"] for name in ("mlx5_0", "mlx5_3", "mlx5_8")] == ["ibp26s0", "ibp94s0", "enp31s0f0np0"]
    assert by_hca["mlx5_3"]["counters"]["symbol_error"] == 1432 and by_hca["mlx5_8"]["counters"] == {}
    # mlx5_0's perfquery failed: an error naming it; mlx5_0's counters stay empty; the Ethernet port is not asked
    assert [error["call"] for error in facts["errors"]] == ["perfquery -x -C mlx5_0 -P 1"]


def test_a_capture_without_the_fabric_commands_has_no_errors_only_absent_inputs(tmp_path):
    root = str(tmp_path)
    # a capture that holds nvidia-smi -q -x (so nvidia-smi "is there") but not its topo -m
    write_file(root, "sos_commands/nvidia/nvidia-smi_-q_-x", "<nvidia_smi_log></nvidia_smi_log>\n")
    write_file(root, "sys/class/infiniband/mlx5_0/ports/1/link_layer", "Ethernet\n")
    write_file(root, "sys/class/infiniband/mlx5_0/ports/1/gid_attrs/ndevs/0", "enp31s0f0np0\n")
    write_file(root, "sos_commands/ethtool/ethtool_-i_enp31s0f0np0", "driver: mlx5_core\n")
    write_file(root, "sos_commands/date/date", "Mon Nov 30 06:00:00 UTC 2026\n")
    facts, _recorded = collector.Collection(capture=open_capture(root), gather_subset=["fabric"]).run()
    assert facts["errors"] == []
    assert facts["fabric"]["topology"] is None and ports(facts["fabric"])["mlx5_0"]["ethtool"] is None
    (step,) = [entry for entry in facts["inputs"] if entry["input"] == "fabric"]
    assert {"source": "nvidia-smi topo -m", "status": "absent"} in step["sources"]
    assert {"source": "ethtool -S enp31s0f0np0", "status": "absent"} in step["sources"]


def test_a_host_without_fabric_text_never_loads_the_parsers(monkeypatch):
    # AnsiballZ compiles every module the collection imports, on every host and run
    parsers = "ansible_collections.gpufleet.core.plugins.module_utils.fabric_parsers"
    monkeypatch.delitem(sys.modules, parsers, raising=False)
    host = ReplayHost({"now": 1764482400, "files": {"/proc/modules": "nvidia 1 0 - Live 0x0\n"}, "dirs": {},
                       "bins": {"nvidia-smi": "/usr/bin/nvidia-smi"},
                       "commands": {"nvidia-smi topo -m": {"rc": 2, "stdout": "", "stderr": "fake: only -q -x"}}})
    facts = {"errors": []}
    fabric = fabric_collect.collect_fabric(host, facts, 5)
    assert fabric["gpudirect"]["peermem_loaded"] is False and fabric["topology"] is None
    assert parsers not in sys.modules
