"""The demo fleet and the real nvidia-smi captures through diagnose and correlate.

Each demo host replays its fixture through the real collectors and must produce the finding its
scenario (hosts.yml gpufleet_demo_scenario) is about; the healthy host nothing above info. Each real
`nvidia-smi -q -x` capture must yield no critical finding: none of them shows a critical problem
(desktop cards without ECC, NVLink or fabric manager, idle GPUs at PCIe gen 1, one A100 in a VM).
"""

import glob
import os

import pytest

from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.diagnose import diagnose_host
from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.findings import at_or_above
from tests.support.corpus import NVSMI_XML_CAPTURES, realdata_path
from tests.support.rule_builders import KNOWLEDGE, policy
from tests.support.demo_fleet import DEMO, HOSTS, demo_audit, found, nvidia_smi_facts
from tests.support.demo_fabric_checks import FABRIC_CHECKS
from tests.support.demo_workload_checks import WORKLOAD_CHECKS


def above_info(host):
    return [f for f in demo_audit()[1][host] if at_or_above(f["severity"], "warning")]


def test_every_demo_host_is_checked_here():
    assert sorted(HOSTS) == sorted(SCENARIO_CHECKS)
    assert sorted(HOSTS) == sorted(os.path.basename(path)[:-5] for path in glob.glob(os.path.join(DEMO, "fixtures", "*.json")))


def check_ok_01():
    assert above_info("gpu-h100-ok-01") == []


def check_xid79_02():
    (lost,) = found("gpu-h100-xid79-02", "hardware.gpu_lost", "critical")
    assert lost["gpu"] == "0000:ab:00.0" and lost["evidence"]["xid"] == 79 and lost["evidence"]["lost"] is True


def check_mismatch_03():
    (mismatch,) = found("gpu-h100-mismatch-03", "driver.kernel_userspace_mismatch", "critical")
    assert mismatch["evidence"]["kernel_module_version"] == "550.54.15"
    assert mismatch["evidence"]["userspace_version"] == "550.90.07"


def check_oldcuda_04():
    (old,) = found("gpu-a100-oldcuda-04", "driver.cuda_toolkit_unsupported", "critical")
    assert old["evidence"]["driver_version"] == "470.256.02" and old["evidence"]["toolkit"].startswith("12.4")


def check_thermal_05():
    slowed = found("gpu-h100-thermal-05", "hardware.clock_events", "critical")
    assert sorted(f["gpu"] for f in slowed) == ["0000:3a:00.0", "0000:5d:00.0", "0000:ba:00.0"]
    capped = found("gpu-h100-thermal-05", "hardware.power_limit", "warning")
    assert len(capped) == 8 and capped[0]["evidence"]["limit_w"] == 500.0
    hot = found("gpu-h100-thermal-05", "hardware.temperature", "warning")
    assert sorted(f["evidence"]["gpu_c"] for f in hot) == [86, 87, 88]


def check_pcie_06():
    (link,) = found("gpu-h100-pcie-06", "hardware.pcie_link", "warning")
    assert link["gpu"] == "0000:5d:00.0" and link["evidence"]["width_current"] == 8
    (replay,) = found("gpu-h100-pcie-06", "hardware.pcie_replay", "warning")
    assert replay["evidence"]["replay_counter"] == 4127
    (aer,) = found("gpu-h100-pcie-06", "hardware.pcie_aer", "warning")
    assert aer["evidence"]["correctable"] == 480


def check_remap_07():
    (remap,) = found("gpu-a100-remap-07", "hardware.row_remap", "warning")
    assert remap["gpu"] == "0000:b7:00.0" and remap["evidence"]["pending"] is True
    assert sorted(f["evidence"]["xid"] for f in found("gpu-a100-remap-07", "hardware.xid")) == [63, 94]


def check_migdrift_08():
    drift = found("gpu-a100-migdrift-08", "scheduling.mig_layout_drift", "warning")
    assert len(drift) == 8
    assert drift[0]["evidence"]["diff"]["devices"]["1g.10gb"] == {"want": 0, "have": 7}


def check_migpending_09():
    pending = found("gpu-a100-migpending-09", "scheduling.mig_pending", "warning")
    assert [f["gpu"] for f in pending] == ["0000:87:00.0", "0000:90:00.0", "0000:b7:00.0", "0000:bd:00.0"]


def check_crowded_10():
    (memory,) = found("gpu-l40s-crowded-10", "workload.memory_near_full", "critical")
    assert memory["gpu"] == "0000:01:00.0" and memory["evidence"]["processes"] == 12
    assert memory["evidence"]["used_mib"] == 45072 and memory["evidence"]["total_mib"] == 46068


def check_mps_11():
    (mps,) = found("gpu-h100-mps-11", "scheduling.mps_daemon", "warning")
    assert mps["evidence"]["mps_daemon_running"] is True and mps["evidence"]["exclusive_process_gpus"] == 8


def check_nvlink_12():
    (down,) = found("gpu-h100-nvlink-12", "hardware.nvlink_inactive", "critical")
    assert down["gpu"] == "0000:3a:00.0" and down["evidence"]["inactive_links"] == [7]
    (xid,) = found("gpu-h100-nvlink-12", "hardware.xid", "critical")
    assert xid["evidence"]["xid"] == 74
    (errors,) = found("gpu-h100-nvlink-12", "hardware.nvlink_errors", "warning")
    assert errors["evidence"]["links"]["6"] == {"replay": 41, "recovery": 3, "crc_flit": 17}
    assert sorted(errors["evidence"]["links"]) == ["6", "7", "8"]


def check_gsp(host, buses):
    def check():
        xids = found(host, "driver.xid", "critical")
        assert sorted(f["gpu"] for f in xids) == buses
        assert all(f["evidence"]["xid"] == 119 and f["evidence"]["explained_by"] == "driver:550.54.15" for f in xids)
        (skew,) = found(host, "driver.version_skew", "warning")
        assert (skew["evidence"]["driver_version"], skew["evidence"]["group_reference"]) == ("550.54.15", "550.90.07")
    return check


def check_nodriver_13():
    facts = demo_audit()[0]["cpu-node-nodriver-13"]
    assert facts["nvidia_present"] is False
    assert above_info("cpu-node-nodriver-13") == []


def check_nvsmi_14():
    facts = demo_audit()[0]["gpu-t4-nvsmi-14"]
    assert facts["replay_of"] == "nvidia_smi" and facts["driver"]["version"] == "515.105.01"
    assert not [f for f in demo_audit()[1]["gpu-t4-nvsmi-14"] if f["severity"] == "critical"]
    (persistence,) = found("gpu-t4-nvsmi-14", "driver.persistence_mode", "warning")
    assert persistence["evidence"]["gpus_off"] == ["0000:00:1e.0"]


SCENARIO_CHECKS = {
    "gpu-h100-ok-01": check_ok_01, "gpu-h100-xid79-02": check_xid79_02, "gpu-h100-mismatch-03": check_mismatch_03,
    "gpu-a100-oldcuda-04": check_oldcuda_04, "gpu-h100-thermal-05": check_thermal_05,
    "gpu-h100-pcie-06": check_pcie_06, "gpu-a100-remap-07": check_remap_07,
    "gpu-a100-migdrift-08": check_migdrift_08, "gpu-a100-migpending-09": check_migpending_09,
    "gpu-l40s-crowded-10": check_crowded_10, "gpu-h100-mps-11": check_mps_11, "gpu-h100-nvlink-12": check_nvlink_12,
    "cpu-node-nodriver-13": check_nodriver_13, "gpu-t4-nvsmi-14": check_nvsmi_14,
    "gpu-h100-gsp-15": check_gsp("gpu-h100-gsp-15", ["0000:2a:00.0", "0000:9a:00.0"]),
    "gpu-h100-gsp-16": check_gsp("gpu-h100-gsp-16", ["0000:18:00.0", "0000:ba:00.0"]),
}
SCENARIO_CHECKS.update(WORKLOAD_CHECKS)
SCENARIO_CHECKS.update(FABRIC_CHECKS)


@pytest.mark.parametrize("host", sorted(SCENARIO_CHECKS))
def test_demo_host_shows_its_scenario(host):
    SCENARIO_CHECKS[host]()


def test_demo_fleet_likely_causes():
    _facts, findings, causes = demo_audit()
    by_id = {cause["id"]: cause for cause in causes}
    assert sorted(by_id) == ["driver:550.54.15", "workload:concurrency"]
    assert by_id["workload:concurrency"]["hosts"] == ["gpu-l40s-crowded-10", "gpu-l40s-workload-17"]
    driver = by_id["driver:550.54.15"]
    assert (driver["kind"], driver["layer"], driver["hosts"]) == ("driver", "driver", ["gpu-h100-gsp-15", "gpu-h100-gsp-16"])
    (memory,) = found("gpu-l40s-crowded-10", "workload.memory_near_full", "critical")
    assert memory["evidence"]["explained_by"] == "workload:concurrency"
    skew = [host for host, fs in findings.items() for f in fs if f["rule"] == "driver.version_skew"]
    assert sorted(skew) == ["gpu-a100-oldcuda-04", "gpu-h100-gsp-15", "gpu-h100-gsp-16"]


# ---------------------------------------------------------------- real captures

def capture_facts(name):
    return nvidia_smi_facts(realdata_path(name))


@pytest.mark.corpus
def test_all_twelve_captures_are_read():
    assert sorted(os.path.basename(p) for p in glob.glob(realdata_path("nvsmi-q-x_*.xml"))) == sorted(NVSMI_XML_CAPTURES)
    assert len(NVSMI_XML_CAPTURES) == 12


@pytest.mark.corpus
@pytest.mark.parametrize("name", NVSMI_XML_CAPTURES)
def test_real_capture_has_no_critical_finding(name):
    findings = diagnose_host("capture", capture_facts(name), policy(), KNOWLEDGE)
    assert [f for f in findings if f["severity"] == "critical"] == []


def capture_findings(name, rule):
    findings = diagnose_host("capture", capture_facts(name), policy(), KNOWLEDGE)
    return [f for f in findings if f["rule"] == rule]


@pytest.mark.corpus
def test_idle_laptop_gpu_at_gen1_is_not_a_gen_problem():
    (link,) = capture_findings("nvsmi-q-x_rtx-3060-laptop_515.65.01_v11_netdata.xml", "hardware.pcie_link")
    assert link["severity"] == "warning" and "gen 1 of 4 while idle" in link["summary"]
    assert link["evidence"]["width_current"] == 8 and link["evidence"]["idle"] is True
    (link,) = capture_findings("nvsmi-q-x_rtx-4090_535.86.05_v12_netdata.xml", "hardware.pcie_link")
    assert link["severity"] == "info"


@pytest.mark.corpus
def test_rtx_3090_capped_at_200_of_350_watts():
    (cap,) = capture_findings("nvsmi-q-x_rtx-3090_525.147.05_v12_telegraf.xml", "hardware.power_limit")
    assert cap["evidence"]["limit_w"] == 200.0 and cap["evidence"]["default_limit_w"] == 350.0


@pytest.mark.corpus
def test_single_a100_in_a_vm_is_only_a_gpu_count_warning():
    findings = diagnose_host("capture", capture_facts(
        "nvsmi-q-x_a100-sxm4-40gb_mig-2x3g.20gb_510.47.03_v11_netdata.xml"), policy(), KNOWLEDGE)
    assert sorted((f["rule"], f["severity"]) for f in findings) == [
        ("driver.persistence_mode", "warning"), ("hardware.gpu_count", "warning")]
