"""Real captures of the public corpus (/work/shared/realdata, INDEX.md) laid out as a captured root and read through
the real collectors with gpu_facts' capture (docs/offline.md): each file where the host keeps it, its ground truth
asserted from the facts."""

import os

from ansible_collections.gpufleet.core.plugins.module_utils import collector
from ansible_collections.gpufleet.core.plugins.module_utils.capture_host import open_capture
from tests.support.capture_roots import write_file
from tests.support.schema_check import assert_valid_facts

# {path on the captured host: corpus file}
HOST_FILES = {
    "proc/pressure/cpu": "cgroup-v2-root-cpu.pressure_k8s-vm-2vcpu-5.4_some-avg10-46pct_hotsos.txt",
    "proc/pressure/io": "cgroup-v2-root-io.pressure_k8s-vm-2vcpu-5.4_some-29-full-12.6pct_hotsos.txt",
    "proc/pressure/memory": "cgroup-v2-root-memory.pressure_k8s-vm-2vcpu-5.4_low_hotsos.txt",
    "proc/vmstat": "proc-vmstat_openstack-node_swapped-and-compaction-failing_hotsos.txt",
    "sos_commands/nvidia/nvidia-smi_-q_-x": "nvsmi-q-x_tesla-t4_515.105.01_v11_telegraf.xml",
    "proc/modules": "lsmod_nvidia-loaded_azhpcdiag.txt",
}


def captured_root(corpus, root):
    for path, name in HOST_FILES.items():
        write_file(root, path, corpus.read_realdata(name))
    write_file(root, "sos_commands/date/date", "Sun Dec  6 19:27:22 UTC 2026\n")
    return root


def test_real_captures_in_a_captured_root_are_read_by_the_collectors(corpus, tmp_path):
    capture = open_capture(captured_root(corpus, str(tmp_path)))
    facts, _recorded = collector.Collection(capture=capture, gather_subset=["driver", "gpus", "host_pressure"]).run()
    assert_valid_facts(facts)
    # the T4 of the telegraf sample, through nvsmi_xml
    assert [gpu["name"] for gpu in facts["gpus"]] == ["Tesla T4"]
    assert facts["driver"]["version"] == "515.105.01"
    pressure = facts["host_pressure"]["pressure"]
    # the k8s VM's root PSI: cpu some avg10 46.17 %, io some 29.09 % and full 12.60 %
    assert pressure["cpu"]["some_avg10"] == 46.17
    assert (pressure["io"]["some_avg10"], pressure["io"]["full_avg10"]) == (29.09, 12.6)
    # memory pressure low: some 0.03 %, full 0
    assert (pressure["memory"]["some_avg10"], pressure["memory"]["full_avg10"]) == (0.03, 0.0)
    # lsmod's nvidia line, read where /proc/modules is: the module is loaded
    assert {"kind": "kernel_module", "path": "/proc/modules", "detail": "nvidia module loaded"} in facts["nvidia_evidence"]
    steps = dict((entry["input"], entry) for entry in facts["inputs"])
    assert steps["driver"]["status"] == "read" and steps["host_pressure"]["status"] == "read"
    assert not [source for source in steps["host_pressure"]["sources"] if source["source"] == "/proc/vmstat"]
    assert steps["host_pressure"]["sources_read"] >= 4
    assert {"source": "NVML", "status": "not_supported"} in steps["driver"]["sources"]


def test_a_captured_dmesg_T_is_the_kernel_log_counted_from_the_capture_clock(corpus, tmp_path):
    root = str(tmp_path)
    write_file(root, "sos_commands/kernel/dmesg_-T",
               corpus.read_realdata("dmesg-T_xid119-gsp-rpc-timeout_dell-xe9680-h100_gpud.log"))
    # captured the day after the Xids: within the 72-hour window counted from the capture, not from today
    write_file(root, "sos_commands/date/date", "Mon Feb 24 10:00:00 UTC 2025\n")
    facts, _recorded = collector.Collection(capture=open_capture(root), gather_subset=["kernel_log"]).run()
    xids = facts["xid_events"]
    # GPU4's GSP timeout: Xid 119 on PCI 0000:9b:00, read with its -T wall-clock stamp
    assert xids and {(event["xid"], event["pci_bus_id"]) for event in xids} == {(119, "0000:9b:00.0")}
    assert xids[0]["time"].startswith("2025-02-23T16:24:18")
    assert facts["capture"]["kernel_log_files"] == [os.path.join(root, "sos_commands", "kernel", "dmesg_-T")]
