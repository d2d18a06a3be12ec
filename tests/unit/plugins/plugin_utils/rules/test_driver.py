"""Driver-layer rules, each triggered by real version numbers and quiet when the versions fit."""

from ansible_collections.gpufleet.core.plugins.module_utils.facts_model import add_error, new_facts
from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.diagnose import diagnose_fleet
from tests.support.schema_check import assert_valid_facts
from tests.support.rule_builders import KNOWLEDGE, findings_of, healthy_node, only, policy, service
from tests.support.rule_builders import mismatched_node


def test_kernel_module_and_library_mismatch_is_critical_even_without_nvml():
    finding = only(mismatched_node(), "driver.kernel_userspace_mismatch")
    assert finding["severity"] == "critical" and finding["fix"] == "driver"
    assert finding["evidence"]["kernel_module_version"] == "550.54.15"
    assert finding["evidence"]["userspace_version"] == "550.90.07"
    assert finding["evidence"]["api_mismatch_events"] == 1


def test_matching_driver_is_quiet():
    assert findings_of(healthy_node(), "driver.kernel_userspace_mismatch") == []


def test_an_old_api_mismatch_in_the_log_is_quiet_once_the_collector_settled_it():
    """After the reboot that fixed it, the log still holds the message; nvidia-smi answers again."""
    facts = mismatched_node()
    facts.update(source="nvidia_smi", nvidia_present=True)
    facts["driver"].update(kernel_module_version=None, userspace_version="550.90.07", mismatch=False,
                           mismatch_reason=None)
    assert findings_of(facts, "driver.kernel_userspace_mismatch") == []


def test_no_nvidia_stack_where_the_policy_expects_gpus():
    facts = new_facts()
    facts.update(source="none", collected_at="2026-11-30T06:00:00Z", gather_subset=["driver", "gpus"])
    add_error(facts, None, "nvmlInit", "Driver Not Loaded", 9)
    assert findings_of(facts, "driver.nvidia_absent") == []
    finding = only(facts, "driver.nvidia_absent", policy(gpus={"expected_count": 8}))
    assert finding["severity"] == "critical" and finding["evidence"]["errors"][0]["reason"] == "Driver Not Loaded"


def test_mismatch_is_not_also_reported_as_absent():
    assert findings_of(mismatched_node(), "driver.nvidia_absent", policy(gpus={"expected_count": 8})) == []


def test_driver_470_with_cuda_12_4_is_critical():
    facts = healthy_node(driver="470.256.02")
    facts["driver"]["cuda_driver_version"] = "11.4"
    facts["host"]["cuda_toolkits"] = [{"path": "/usr/local/cuda-11.4", "version": "11.4.4"},
                                      {"path": "/usr/local/cuda-12.4", "version": "12.4.1"}]
    finding = only(facts, "driver.cuda_toolkit_unsupported")
    assert finding["severity"] == "critical"
    assert finding["evidence"]["toolkit"] == "12.4.1" and finding["evidence"]["min_driver"] == "550.54.15"
    assert finding["evidence"]["minor_version_compatible"] is False


def test_driver_535_with_cuda_12_4_runs_under_minor_version_compatibility():
    facts = healthy_node(driver="535.183.06")
    finding = only(facts, "driver.cuda_toolkit_unsupported")
    assert finding["severity"] == "warning" and finding["evidence"]["minor_compat_floor"] == "525.60.13"
    assert "minor-version compatibility" in finding["summary"]


def test_policy_toolkit_requirement_counts_too():
    facts = healthy_node(driver="550.90.07")
    finding = only(facts, "driver.cuda_toolkit_unsupported", policy(cuda={"toolkits_required": ["12.8"]}))
    assert finding["evidence"]["toolkit_source"] == "policy cuda.toolkits_required"
    assert finding["evidence"]["min_driver"] == "570.26"


def test_toolkits_the_driver_supports_are_quiet():
    assert findings_of(healthy_node(driver="550.90.07"), "driver.cuda_toolkit_unsupported") == []


def test_driver_branch_that_predates_the_gpu():
    facts = healthy_node(driver="515.105.01")
    facts["host"]["cuda_toolkits"] = []
    finding = only(facts, "driver.gpu_unsupported")
    assert finding["severity"] == "critical" and finding["evidence"]["gpu_name"] == "NVIDIA H100 80GB HBM3"
    assert "R525" in finding["summary"]


def test_driver_branch_after_the_architecture_was_dropped():
    facts = healthy_node(gpus=1, driver="590.44.01")
    gpu = facts["gpus"][0]
    gpu.update(name="Quadro P2000", architecture="pascal", nvlinks=[], fabric=None)
    facts["host"]["cuda_toolkits"] = []
    assert only(facts, "driver.gpu_unsupported")["evidence"]["architecture"] == "pascal"


def test_supported_gpu_is_quiet():
    assert findings_of(healthy_node(), "driver.gpu_unsupported") == []


def test_driver_differs_from_pin_or_branch():
    facts = healthy_node(driver="550.54.15")
    finding = only(facts, "driver.pin_drift", policy(driver={"pin": "550.90.07"}))
    assert finding["evidence"]["pin"] == "550.90.07" and finding["fix"] == "driver"
    finding = only(facts, "driver.pin_drift", policy(driver={"branch": "535"}))
    assert finding["evidence"]["driver_branch"] == "550"


def test_driver_on_pin_is_quiet():
    facts = healthy_node(driver="550.90.07")
    assert findings_of(facts, "driver.pin_drift", policy(driver={"pin": "550.90.07", "branch": "550"})) == []


def test_fabric_manager_failed_on_an_8x_h100_node():
    facts = healthy_node()
    facts["host"]["services"]["fabricmanager"] = service("nvidia-fabricmanager", "failed")
    finding = only(facts, "driver.fabric_manager_down")
    assert finding["severity"] == "critical" and finding["evidence"]["state"] == "failed"


def test_a_fabric_manager_whose_state_was_not_read_is_not_called_down():
    # a bug report holds no systemctl: the services read as unknown, which says nothing of the fabric manager
    facts = healthy_node()
    facts["host"]["services"]["fabricmanager"] = service("nvidia-fabricmanager", "unknown", None)
    assert findings_of(facts, "driver.fabric_manager_down") == []


def test_fabric_manager_is_not_needed_on_a_4_gpu_node():
    facts = healthy_node(gpus=4)
    facts["host"]["services"]["fabricmanager"] = service("nvidia-fabricmanager", "not_found", None)
    the_policy = policy(gpus={"expected_count": 4})
    assert findings_of(facts, "driver.fabric_manager_down", the_policy) == []
    assert len(findings_of(facts, "driver.fabric_manager_down", policy(fabric_manager={"required": True}))) == 1


def test_gpu_not_registered_with_the_fabric():
    facts = healthy_node()
    facts["gpus"][1]["fabric"].update(state="in_progress", status="NVML_ERROR_NOT_READY")
    finding = only(facts, "driver.fabric_registration")
    assert finding["gpu"] == "0000:2a:00.0" and finding["evidence"]["state"] == "in_progress"
    assert findings_of(facts, "driver.fabric_registration", policy(fabric_manager={"required": False})) == []


def test_persistence_mode_off():
    facts = healthy_node()
    facts["gpus"][0]["persistence_mode"] = False
    facts["gpus"][7]["persistence_mode"] = False
    finding = only(facts, "driver.persistence_mode")
    assert finding["fix"] == "gpu_settings" and finding["gpu"] is None
    assert finding["evidence"]["gpus_off"] == ["0000:18:00.0", "0000:db:00.0"]
    assert findings_of(facts, "driver.persistence_mode", policy(persistence_mode=False)) == []


def test_collection_errors_are_info_and_unsupported_calls_are_not_errors():
    facts = healthy_node()
    add_error(facts, 0, "nvmlDeviceGetGpuFabricInfo", "Function Not Found", 13)
    assert findings_of(facts, "driver.collection_errors") == []
    add_error(facts, 5, "nvmlDeviceGetHandleByIndex", "GPU is lost", 15)
    finding = only(facts, "driver.collection_errors")
    assert finding["severity"] == "info" and finding["evidence"]["count"] == 1


def test_driver_versions_skewed_inside_a_group():
    fleet = {"node-1": healthy_node(driver="550.90.07"), "node-2": healthy_node(driver="550.90.07"),
             "node-3": healthy_node(driver="550.54.15"), "node-4": None}
    for facts in fleet.values():
        if facts:
            assert_valid_facts(facts)
    the_policy = policy()
    found = diagnose_fleet(fleet, {host: the_policy for host in fleet}, KNOWLEDGE)
    skew = {host: [f for f in findings if f["rule"] == "driver.version_skew"] for host, findings in found.items()}
    assert [len(skew[host]) for host in sorted(skew)] == [0, 0, 1, 0]
    assert skew["node-3"][0]["evidence"]["group_reference"] == "550.90.07"
    assert skew["node-3"][0]["evidence"]["group_versions"] == {"550.90.07": 2, "550.54.15": 1}


def test_skew_allowed_or_across_groups_is_quiet():
    fleet = {"node-1": healthy_node(driver="550.90.07"), "node-2": healthy_node(driver="550.54.15")}
    allowed = policy(driver={"allow_skew": True})
    found = diagnose_fleet(fleet, {host: allowed for host in fleet}, KNOWLEDGE)
    assert not [f for fs in found.values() for f in fs if f["rule"] == "driver.version_skew"]
    strict = policy()
    found = diagnose_fleet(fleet, {host: strict for host in fleet}, KNOWLEDGE,
                           groups={"rack-a": ["node-1"], "rack-b": ["node-2"]})
    assert not [f for fs in found.values() for f in fs if f["rule"] == "driver.version_skew"]
