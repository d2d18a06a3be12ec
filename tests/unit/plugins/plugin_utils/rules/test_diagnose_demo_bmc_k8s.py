"""The demo hosts that show the BMC and Kubernetes families: gpu-h100-thermal-05's chassis (a failed fan and a
hot inlet behind its thermal slowdown) and gpu-t4-nvsmi-14, a Kubernetes node whose device plugin still
advertises the replicas of its previous config. Every other demo host reports no BMC device and no node."""

from tests.support.demo_fleet import HOSTS, demo_audit, found

BMC_HOST, K8S_HOST = "gpu-h100-thermal-05", "gpu-t4-nvsmi-14"


def test_thermal_host_bmc_facts():
    bmc = demo_audit()[0][BMC_HOST]["bmc"]
    assert bmc["source"] == "in_band" and bmc["status"] == "complete"
    assert [fan["name"] for fan in bmc["fans"] if fan["failed"]] == ["FAN3"]
    assert bmc["inlet_temperature_c"] == 38.0 and bmc["exhaust_temperature_c"] == 63.0
    assert (bmc["power_draw_w"], bmc["power_draw_source"]) == (5912.0, "dcmi")
    assert bmc["clock_offset_s"] == 3
    assert [event["time"] for event in bmc["sel"]["events"]][-2:] == ["2026-11-30T01:12:37Z", "2026-11-30T01:12:38Z"]


def test_thermal_host_bmc_findings():
    (fan,) = found(BMC_HOST, "hardware.bmc_fan", "critical")
    assert fan["summary"] == "Failed fans: FAN3 1120 RPM (lcr); Fan Redundancy: Redundancy Degraded"
    (inlet,) = found(BMC_HOST, "hardware.bmc_inlet_temperature", "warning")
    assert inlet["evidence"]["inlet_temperature_c"] == 38.0 and inlet["evidence"]["limit_c"] == 35
    (log,) = found(BMC_HOST, "hardware.bmc_event_log", "critical")
    assert [event["id"] for event in log["evidence"]["events"]] == ["3"]
    assert found(BMC_HOST, "hardware.bmc_power_redundancy") == []


def test_kubernetes_node_facts_and_finding():
    kubernetes = demo_audit()[0][K8S_HOST]["kubernetes"]
    assert kubernetes["node"] is True and kubernetes["status"] == "complete"
    assert kubernetes["sharing"]["strategy"] == "time_slicing"
    assert kubernetes["sharing"]["resources"] == [{"name": "nvidia.com/gpu", "replicas": 2}]
    assert kubernetes["resources"] == {"source": "kubelet_checkpoint", "allocatable": {"nvidia.com/gpu": 4},
                                       "capacity": {}}
    (mismatch,) = found(K8S_HOST, "scheduling.k8s_allocatable_mismatch", "warning")
    assert mismatch["evidence"]["differences"] == {"nvidia.com/gpu": {"expected": 2, "advertised": 4}}


def test_other_demo_hosts_have_no_bmc_device_and_are_no_nodes():
    facts = demo_audit()[0]
    for host in HOSTS:
        if host != BMC_HOST:
            assert facts[host]["bmc"]["status"] == "no_device", host
            assert facts[host]["errors"] == [] or all("ipmitool" not in e["call"] for e in facts[host]["errors"])
        if host != K8S_HOST:
            assert facts[host]["kubernetes"]["node"] is False, host
