"""A collection that failed is never healthy: NVIDIA evidence, collection status and the rule that reads them.

Hosts are the real collector over a host whose files are given here and whose nvidia-smi is a real
program that misbehaves (garbage, crash, hang, not executable)."""

import time

import pynvml
import pytest

from ansible_collections.gpufleet.core.plugins.module_utils import collector
from ansible_collections.gpufleet.core.plugins.module_utils.host_io import LiveHost, ReplayHost
from ansible_collections.gpufleet.core.plugins.module_utils.nvidia_presence import collect_nvidia_evidence
from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.diagnose import diagnose_host
from simulator.nvml_sim import SimulatedNvmlLibrary, scenario_h100_node
from tests.support.schema_check import assert_valid_facts
from tests.support.hanging_host import HangingOn
from tests.support.demo_fleet import demo_audit
from tests.support.rule_builders import KNOWLEDGE, policy

RULE = "driver.collection_incomplete"  # the rule under test
GPU_SYSFS = {
    "dirs": {"/sys/bus/pci/devices": ["0000:00:1f.0", "0000:3b:00.0", "0000:3b:00.1"]},
    "files": {
        "/sys/bus/pci/devices/0000:00:1f.0/vendor": "0x8086\n",
        "/sys/bus/pci/devices/0000:3b:00.0/vendor": "0x10de\n",
        "/sys/bus/pci/devices/0000:3b:00.0/class": "0x030200\n",
        "/sys/bus/pci/devices/0000:3b:00.1/vendor": "0x10de\n",
        "/sys/bus/pci/devices/0000:3b:00.1/class": "0x040300\n",
        "/proc/modules": "nvme 61440 2 - Live 0x0\nnvidia 56512512 80 nvidia_uvm, Live 0x0\n",
        "/proc/driver/nvidia/version": "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 2024\n",
    },
}


class FilesAndRealCommands(LiveHost):
    """Files and folders from a dict, programs for real."""

    def __init__(self, recorded, bins):
        LiveHost.__init__(self, find_bin=bins.get)
        self._replay = ReplayHost(recorded)

    def read_text(self, path, limit=None):
        return self._replay.read_text(path, limit)

    def listdir(self, path):
        return self._replay.listdir(path)


def program(tmp_path, body, mode=0o755):
    path = tmp_path / "nvidia-smi"
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(mode)
    return str(path)


def collect(host, **options):
    options.setdefault("gather_subset", ["driver", "gpus", "host"])
    facts = collector.Collection(host=host, **options).run()[0]
    assert_valid_facts(facts)
    return facts


def findings(facts, rule=RULE):
    return [f for f in diagnose_host("h1", facts, policy(), KNOWLEDGE) if f["rule"] == rule]


def failed_with(tmp_path, body, mode=0o755, timeout=10):
    host = FilesAndRealCommands(GPU_SYSFS, {"nvidia-smi": program(tmp_path, body, mode)})
    return collect(host, source="auto", timeout=timeout, command_timeout=timeout)


def test_evidence_names_every_nvidia_sign_and_only_those():
    host = ReplayHost(dict(GPU_SYSFS, bins={"nvidia-smi": "/usr/bin/nvidia-smi"},
                           files=dict(GPU_SYSFS["files"], **{"/usr/lib64/libnvidia-ml.so.1": "\x7fELF"})))
    evidence = collect_nvidia_evidence(host)
    assert [(item["kind"], item["path"]) for item in evidence] == [
        ("pci_device", "/sys/bus/pci/devices/0000:3b:00.0"),
        ("pci_device", "/sys/bus/pci/devices/0000:3b:00.1"),
        ("kernel_module", "/proc/modules"),
        ("proc_driver", "/proc/driver/nvidia/version"),
        ("binary", "/usr/bin/nvidia-smi"),
        ("library", "/usr/lib64/libnvidia-ml.so.1")]
    assert evidence[0]["detail"] == "3D controller, class 0x030200"
    assert evidence[1]["detail"] == "audio device, class 0x040300"


def test_the_kernel_module_folder_counts_as_evidence():
    host = ReplayHost({"dirs": {"/sys/module/nvidia": ["parameters", "version"]}})
    assert [item["kind"] for item in collect_nvidia_evidence(host)] == ["kernel_module"]


def test_a_host_without_any_nvidia_sign_is_complete_with_no_stack_and_no_finding():
    facts = collect(ReplayHost({"dirs": {"/sys/bus/pci/devices": ["0000:00:1f.0"]},
                                "files": {"/sys/bus/pci/devices/0000:00:1f.0/vendor": "0x8086\n"}}))
    assert facts["nvidia_present"] is False and facts["nvidia_evidence"] == []
    assert facts["collection"] == {"status": "complete", "reasons": []}
    assert diagnose_host("h1", facts, policy(), KNOWLEDGE) == []


def test_garbage_on_stdout_is_a_failed_collection_and_a_critical_finding(tmp_path):
    facts = failed_with(tmp_path, "echo 'Segmentation fault in libnvidia-ml'; echo '<<<>>>'\n")
    assert facts["nvidia_present"] is False
    assert facts["collection"]["status"] == "failed"
    assert any(reason.startswith("GPU facts: nvidia-smi -q -x:") for reason in facts["collection"]["reasons"])
    assert any("pynvml" in reason for reason in facts["collection"]["reasons"])
    (finding,) = findings(facts)
    assert finding["severity"] == "critical"
    assert "no GPU facts could be read" in finding["summary"]
    assert "kernel_module" in finding["summary"] and "pci_device" in finding["summary"]
    assert "pci_device /sys/bus/pci/devices/0000:3b:00.0" in finding["evidence"]["nvidia_evidence"]


def test_a_crashing_nvidia_smi_names_its_exit_status(tmp_path):
    facts = failed_with(tmp_path, "kill -SEGV $$\n")
    assert facts["collection"]["status"] == "failed"
    assert any("exit status -11" in reason for reason in facts["collection"]["reasons"])
    assert findings(facts)[0]["severity"] == "critical"


def test_an_nvidia_smi_that_cannot_be_executed_says_why(tmp_path):
    facts = failed_with(tmp_path, "exit 0\n", mode=0o644)
    assert facts["collection"]["status"] == "failed"
    assert any("Permission denied" in reason for reason in facts["collection"]["reasons"])
    assert findings(facts)[0]["severity"] == "critical"


def test_a_hung_nvidia_smi_is_killed_and_the_host_is_not_healthy(tmp_path):
    started = time.monotonic()
    facts = failed_with(tmp_path, "sleep 60 & wait\n", timeout=1)
    assert time.monotonic() - started < 3
    assert facts["collection"]["status"] == "failed"
    assert any("timed out" in reason for reason in facts["collection"]["reasons"])
    assert findings(facts)[0]["severity"] == "critical"


def test_a_loaded_module_without_any_userspace_tool_is_a_failed_collection():
    facts = collect(ReplayHost({"files": {"/proc/modules": "nvidia 56512512 0 - Live 0x0\n"}}))
    assert facts["collection"]["status"] == "failed"
    assert "GPU facts: nvidia-smi is not on PATH" in facts["collection"]["reasons"]
    (finding,) = findings(facts)
    assert finding["severity"] == "critical"


def test_a_failed_collection_replaces_the_no_stack_finding_where_gpus_are_expected(tmp_path):
    facts = failed_with(tmp_path, "exit 9\n")
    rules = {f["rule"] for f in diagnose_host("h1", facts, policy(gpus={"expected_count": 8}), KNOWLEDGE)}
    assert RULE in rules and "driver.nvidia_absent" not in rules


def test_the_no_stack_finding_stays_for_a_host_without_evidence_where_gpus_are_expected():
    facts = collect(ReplayHost({}))
    rules = [f["rule"] for f in diagnose_host("h1", facts, policy(gpus={"expected_count": 8}), KNOWLEDGE)]
    assert rules == ["driver.nvidia_absent"]


def test_nvml_that_hangs_half_way_is_a_partial_collection_and_a_warning():
    library = HangingOn(SimulatedNvmlLibrary(scenario_h100_node(4)), "nvmlDeviceGetHandleByIndex_v2", 2, 30)
    facts = collect(ReplayHost({}), source="nvml", gather_subset=["min"], timeout=2, pynvml=pynvml,
                    nvml_library=library)
    assert len(facts["gpus"]) == 2
    assert facts["collection"]["status"] == "partial"
    assert any("did not answer" in reason for reason in facts["collection"]["reasons"])
    assert any("timeout of 2s was reached" in reason for reason in facts["collection"]["reasons"])
    (finding,) = findings(facts)
    assert finding["severity"] == "warning" and finding["evidence"]["gpus_read"] == 2


def test_a_complete_nvml_collection_has_no_collection_finding():
    facts = collect(ReplayHost({}), source="nvml", gather_subset=["min"], pynvml=pynvml,
                    nvml_library=SimulatedNvmlLibrary(scenario_h100_node(2)))
    assert facts["collection"] == {"status": "complete", "reasons": []}
    assert findings(facts) == []


def test_an_unreadable_kernel_log_on_a_gpu_host_is_partial(tmp_path):
    journalctl = tmp_path / "journalctl"
    journalctl.write_text("#!/bin/sh\necho 'No journal files were opened due to insufficient permissions.' >&2\n"
                          "exit 1\n")
    journalctl.chmod(0o755)
    host = FilesAndRealCommands({}, {"journalctl": str(journalctl)})
    facts = collect(host, source="nvml", gather_subset=["min", "kernel_log"], pynvml=pynvml,
                    kernel_log_source="journalctl", nvml_library=SimulatedNvmlLibrary(scenario_h100_node(1)))
    assert facts["collection"]["status"] == "partial"
    (reason,) = facts["collection"]["reasons"]
    assert reason.startswith("kernel log: no source could be read (journalctl")
    assert "insufficient permissions" in reason


def test_a_driver_mismatch_is_reported_by_the_mismatch_rule_alone():
    facts = collect(ReplayHost({"files": GPU_SYSFS["files"]}), source="nvml", gather_subset=["min"],
                    pynvml=pynvml, nvml_library=SimulatedNvmlLibrary(dict(scenario_h100_node(1),
                                                                          init_error=pynvml.NVML_ERROR_LIB_RM_VERSION_MISMATCH)))
    assert facts["driver"]["mismatch"] is True and facts["collection"]["status"] == "failed"
    rules = [f["rule"] for f in diagnose_host("h1", facts, policy(), KNOWLEDGE)]
    assert "driver.kernel_userspace_mismatch" in rules and RULE not in rules


@pytest.mark.parametrize("collection", [None, {"status": "complete", "reasons": []}])
def test_facts_without_a_failed_status_give_no_collection_finding(collection):
    facts = collect(ReplayHost({}))
    if collection is None:
        del facts["collection"]
    else:
        facts["collection"] = collection
    assert findings(facts) == []


def test_the_demo_host_without_a_stack_has_no_collection_finding():
    facts, found, _causes = demo_audit()
    assert facts["cpu-node-nodriver-13"]["collection"] == {"status": "complete", "reasons": []}
    assert facts["cpu-node-nodriver-13"]["nvidia_evidence"] == []
    assert [f for f in found["cpu-node-nodriver-13"] if f["rule"] == RULE] == []
    assert [host for host, host_findings in found.items() if any(f["rule"] == RULE for f in host_findings)] == []
