"""Active checks (facts.validation, issue 28) judged as findings: DCGM per GPU, harness failures, nothing tested,
stress, NCCL classified as the project classifies NCCL errors, bandwidth against the sourced figure and the run's
peers."""

from ansible_collections.gpufleet.core.plugins.plugin_utils.rules import active_checks
from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.diagnose import diagnose_fleet
from tests.support.rule_builders import findings_of as checked_findings_of, healthy_node, policy
from tests.support.validation_builders import (
    H2D_HEALTHY, bare, check, fail_memory, fail_nccl, healthy_validation, set_bandwidth, with_validation)


def findings_of(facts, the_policy=None):
    """The host's findings, its facts (validation included) checked against the facts schema."""
    return checked_findings_of(facts, the_policy=the_policy)


def validated(validation=None):
    return with_validation(healthy_node(), validation or healthy_validation())


def validation_findings(facts):
    return [finding for finding in findings_of(facts) if "validation" in finding["rule"]]


def test_a_healthy_validation_gives_no_finding():
    assert validation_findings(validated()) == []


def test_a_failed_memory_test_is_a_critical_hardware_finding_on_that_gpu():
    facts = validated(fail_memory(healthy_validation(), 3))
    [finding] = validation_findings(facts)
    assert (finding["rule"], finding["layer"], finding["severity"]) == (
        "hardware.validation_dcgm_failed", "hardware", "critical")
    assert finding["gpu"] == facts["gpus"][3]["pci_bus_id"]
    assert finding["evidence"]["test"] == "memory" and finding["evidence"]["gpu_index"] == 3
    assert finding["evidence"]["messages"] == ["Memory test failed: miscompare at 0x1f000"]


def test_a_test_that_fails_with_every_gpu_passing_is_a_harness_warning_not_a_gpu_fault():
    validation = healthy_validation()
    pcie = validation["checks"]["dcgm_diag"]["tests"][2]
    pcie.update(status="fail", messages=["There was an internal error during the test: 'A child process (152) "
                                         "exited with non-zero status 1'"])
    [finding] = validation_findings(validated(validation))
    assert (finding["rule"], finding["severity"], finding["gpu"]) == ("driver.validation_harness_error", "warning", None)
    assert finding["evidence"]["failures"] == [{"check": "dcgm_diag", "what": "test pcie failed with every GPU passing"}]


def test_cuda_not_initialised_is_the_driver_layer_not_eight_memory_faults():
    validation = healthy_validation()
    memory = validation["checks"]["dcgm_diag"]["tests"][1]
    memory["status"] = "fail"
    for index in range(8):
        memory["gpus"][str(index)] = {"status": "fail", "messages": ["cuInit failed: 'system not yet initialized'"]}
    fail_nccl(validation, "Test CUDA failure common.cu:941 'system not yet initialized'")
    findings = validation_findings(validated(validation))
    assert [(f["rule"], f["severity"]) for f in findings] == [("driver.validation_cuda_not_ready", "critical")]
    assert [entry["check"] for entry in findings[0]["evidence"]["checks"]] == ["dcgm_diag", "nccl_all_reduce"]


def test_every_check_skipped_is_nothing_tested():
    validation = healthy_validation()
    validation["checks"] = {name: bare(name, "skipped", "%s not found" % name) for name in ("dcgm_diag", "nvbandwidth")}
    [finding] = validation_findings(validated(validation))
    assert finding["rule"] == "driver.validation_not_run" and finding["severity"] == "warning"
    assert finding["summary"].startswith("Nothing was tested: every check was skipped (dcgm_diag: dcgm_diag not found")


def test_every_dcgm_test_skipped_is_nothing_tested_though_dcgm_passed():
    validation = healthy_validation()
    validation["checks"] = {"dcgm_diag": validation["checks"]["dcgm_diag"]}
    for test in validation["checks"]["dcgm_diag"]["tests"]:
        test["status"] = "skip"
    [finding] = validation_findings(validated(validation))
    assert finding["evidence"]["reason"] == "DCGM skipped every test of its diagnostic"


def test_a_refused_node_is_not_a_pass_and_says_how_to_proceed():
    validation = healthy_validation()
    validation["refused"] = {"reason": "2 GPU processes are running", "how_to_proceed": "drain the node first",
                             "gpu_processes": [{"pid": 4242, "name": "python3", "gpu": 0}]}
    validation["checks"] = {name: bare(name, "refused", "the node is busy") for name in ("dcgm_diag", "nvbandwidth")}
    [finding] = validation_findings(validated(validation))
    assert finding["rule"] == "driver.validation_not_run"
    assert finding["action"] == "drain the node first"
    assert finding["evidence"]["gpu_processes"] == [{"pid": 4242, "name": "python3", "gpu": 0}]


def test_a_timed_out_check_gives_no_verdict():
    validation = healthy_validation()
    validation["checks"]["nvbandwidth"] = bare("nvbandwidth", "timeout", "killed after 300 s")
    [finding] = validation_findings(validated(validation))
    assert finding["rule"] == "driver.validation_harness_error"
    assert finding["evidence"]["failures"] == [{"check": "nvbandwidth", "what": "timeout: killed after 300 s"}]


def test_gpu_burn_faulty_is_critical_hardware_per_gpu():
    validation = healthy_validation()
    validation["checks"]["stress"] = check("failed", "GPU 5 faulty", tool="gpu_burn", seconds=60, per_gpu={
        "4": {"result": "ok", "errors": 0}, "5": {"result": "faulty", "errors": 1874}})
    facts = validated(validation)
    [finding] = validation_findings(facts)
    assert (finding["rule"], finding["severity"], finding["gpu"]) == (
        "hardware.validation_stress_failed", "critical", facts["gpus"][5]["pci_bus_id"])
    assert (finding["evidence"]["result"], finding["evidence"]["errors"]) == ("faulty", 1874)


def nccl_finding(error_text):
    [finding] = validation_findings(validated(fail_nccl(healthy_validation(), error_text)))
    return finding


def test_nccl_failures_are_classified_as_the_services_ones():
    network = nccl_finding("host:4242:4300 [0] NCCL WARN NET/IB : Got completion from peer 10.0.0.2<4242> with status=12 opcode=0 len=0 "
                           "vendor err 129 (Recv)")
    assert (network["rule"], network["evidence"]["kind"]) == ("hardware.validation_nccl_failed", "nccl_network")
    cuda = nccl_finding("NCCL WARN Cuda failure 'invalid device ordinal'")
    assert (cuda["rule"], cuda["layer"], cuda["evidence"]["kind"]) == ("driver.validation_nccl_failed", "driver",
                                                                       "nccl_cuda")
    other = nccl_finding("NCCL failure common.cu:1005 'internal error - please report this issue to the NCCL "
                         "developers'")
    assert (other["rule"], other["evidence"]["kind"]) == ("workload.validation_nccl_failed", "nccl_error")


def test_wrong_all_reduce_results_are_critical_hardware():
    validation = healthy_validation()
    validation["checks"]["nccl_all_reduce"]["rows"][0]["wrong"] = 12
    [finding] = validation_findings(validated(validation))
    assert (finding["rule"], finding["severity"]) == ("hardware.validation_nccl_wrong", "critical")


def test_host_to_device_far_below_its_pcie_gen5_x16_link_is_hardware_with_the_figures():
    facts = validated(set_bandwidth(healthy_validation(), "host_to_device_memcpy_ce", 2, 20.1))
    [finding] = [f for f in validation_findings(facts) if f["rule"] == "hardware.validation_bandwidth_low"]
    evidence = finding["evidence"]
    assert finding["gpu"] == facts["gpus"][2]["pci_bus_id"]
    # Gen5: 3.938 GB/s a lane, x16 = 63.01 GB/s, 0.8 of it expected, 0.7 of that the threshold
    assert (evidence["link"], evidence["nominal_gbs"], evidence["expected_gbs"], evidence["threshold_gbs"]) == (
        "PCIe Gen5 x16", 63.01, 50.41, 35.29)
    assert evidence["measured_gbs"] == 20.1
    assert "20.10 GB/s, expected 50.41 GB/s on PCIe Gen5 x16" in finding["summary"]


def test_device_to_device_below_its_nvlink_class_and_a_healthy_figure_is_not():
    facts = validated(set_bandwidth(healthy_validation(), "device_to_device_memcpy_read_ce", 6, 120.0))
    [finding] = [f for f in validation_findings(facts) if f["rule"] == "hardware.validation_bandwidth_low"]
    assert (finding["evidence"]["link"], finding["evidence"]["expected_gbs"]) == ("NVLink 4 (H100/H200 SXM)", 225.0)
    assert active_checks.expected_figure(facts["gpus"][0], "host_to_device_bidirectional_memcpy_ce") is None


def test_the_policy_sets_how_far_below_is_too_far():
    facts = validated(set_bandwidth(healthy_validation(), "host_to_device_memcpy_ce", 2, 40.0))
    loose = policy(validation={"bandwidth_min_fraction": 0.7})
    strict = policy(validation={"bandwidth_min_fraction": 0.9})
    assert not [f for f in findings_of(facts, the_policy=loose) if f["rule"] == "hardware.validation_bandwidth_low"]
    assert [f["gpu"] for f in findings_of(facts, the_policy=strict)
            if f["rule"] == "hardware.validation_bandwidth_low"] == [facts["gpus"][2]["pci_bus_id"]]


def test_a_gpu_below_its_peers_of_the_same_model_and_link_is_a_fleet_warning():
    hosts = {"node-%d" % number: validated() for number in range(3)}
    # 44 GB/s passes the expected figure (35.29 GB/s threshold) but is 83% of its peers' 53.2: above 0.8
    hosts["node-1"] = validated(set_bandwidth(healthy_validation(), "host_to_device_memcpy_ce", 4, 44.0))
    hosts["node-2"] = validated(set_bandwidth(healthy_validation(), "host_to_device_memcpy_ce", 1, 40.0))
    findings = diagnose_fleet(hosts, {})
    below = [(host, f) for host, found in findings.items() for f in found if f["rule"] == "hardware.validation_below_peers"]
    assert [(host, f["gpu"]) for host, f in below] == [("node-2", hosts["node-2"]["gpus"][1]["pci_bus_id"])]
    evidence = below[0][1]["evidence"]
    assert (evidence["peer_median_gbs"], evidence["peers"], evidence["link"], evidence["measured_gbs"]) == (
        H2D_HEALTHY, 23, "PCIe Gen5 x16", 40.0)


def test_the_summary_holds_each_check_with_measured_and_expected_figures():
    summary = active_checks.validation_summary(validated(fail_memory(healthy_validation(), 3)))
    assert summary["checks"]["dcgm_diag"]["tests"][1] == {"name": "memory", "status": "fail", "failed_gpus": [3]}
    assert summary["checks"]["nvbandwidth"]["figures"][0] == {
        "testcase": "host_to_device_memcpy_ce", "gpu_index": 0, "measured_gbs": H2D_HEALTHY, "expected_gbs": 50.41,
        "link": "PCIe Gen5 x16"}
    assert summary["checks"]["nccl_all_reduce"]["peak_busbw_gbs"] == 234.9
    assert active_checks.validation_summary(healthy_node()) is None


def test_the_expected_figures_name_their_sources():
    data = active_checks.expectations()
    assert set(data["sources"]) == {"pcie_lane", "pcie_efficiency", "nvlink", "nvlink_efficiency"}
    assert "PCI-SIG" in data["sources"]["pcie_lane"] and "assumption" in data["sources"]["nvlink_efficiency"]


def validated_at(h2d):
    return validated(set_bandwidth(healthy_validation(), "host_to_device_memcpy_ce", 5, h2d))


def test_a_figure_that_sinks_run_after_run_is_a_warning_before_it_fails():
    earlier = [("run-3", validated_at(50.0)), ("run-2", healthy_node()), ("run-1", validated_at(53.0))]
    [finding] = active_checks.bandwidth_sinking("gpu-node", validated_at(45.0), earlier, policy())
    assert (finding["rule"], finding["severity"]) == ("hardware.validation_bandwidth_sinking", "warning")
    assert finding["gpu"] == healthy_node()["gpus"][5]["pci_bus_id"]
    assert finding["evidence"]["series_gbs"] == [53.0, 50.0, 45.0] and finding["evidence"]["runs"] == ["run-1", "run-3"]
    # 45 is above the expected figure's threshold: only its history tells
    assert not [f for f in findings_of(validated_at(45.0)) if f["rule"] == "hardware.validation_bandwidth_low"]


def test_a_figure_that_wobbles_or_fell_little_or_has_too_few_runs_is_not_sinking():
    now = validated_at(45.0)
    assert active_checks.bandwidth_sinking("h", now, [("r2", validated_at(44.0)), ("r1", validated_at(53.0))],
                                           policy()) == []
    fell_little = [("r2", validated_at(52.0)), ("r1", validated_at(53.0))]
    assert active_checks.bandwidth_sinking("h", validated_at(51.0), fell_little, policy()) == []
    assert active_checks.bandwidth_sinking("h", now, [("r1", validated_at(53.0))], policy()) == []
