"""driver.client_library_mismatch: one workload on driver libraries of another version than the kernel module,
while the host's own NVML answers. Current (this module, another client) is a finding; history is quiet."""

from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.diagnose import diagnose_fleet
from tests.support.rule_builders import mismatched_node
from tests.support.rule_builders import KNOWLEDGE, findings_of, healthy_node, only, policy

RULE = "driver.client_library_mismatch"
RUNNING = "550.54.15"
CONTAINER_ID = "9be0c7d1" * 8
POD = "/kubepods.slice/kubepods-pod3f2a.slice/cri-containerd-%s.scope" % CONTAINER_ID
LIB = "/usr/lib/x86_64-linux-gnu"


def mismatch_event(client, module=RUNNING, when="2026-11-30T05:41:09Z", process=None, pid=None):
    return {"kind": "api_mismatch", "time": when, "pci_bus_id": None, "client_version": client,
            "kernel_module_version": module, "client_process": process, "client_pid": pid,
            "message": "API mismatch: the client has the version %s, but this kernel module has the version %s.  "
                       "Please make sure that this kernel module and all NVIDIA driver components have the same "
                       "version." % (client, module)}


def client(pid, version, name="python3", container=POD, container_id=CONTAINER_ID, library=None, compat=False):
    library = library or "%s/libcuda.so.%s" % (LIB, version)
    return {"pid": pid, "name": name, "container": container, "container_id": container_id if container else None,
            "library": library, "library_version": version, "compat": compat, "libraries": [library]}


def node(clients=(), events=()):
    """A healthy node on 550.54.15 whose NVML answered, with driver clients scanned."""
    facts = healthy_node(driver=RUNNING)
    facts["gather_subset"] = facts["gather_subset"] + ["driver_clients"]
    facts["driver_clients"] = {"kernel_module_version": RUNNING, "status": "complete", "processes_scanned": 412,
                               "processes_unreadable": 0, "mismatched": list(clients), "mismatched_left_out": 0}
    facts["kernel_events"] = list(events)
    return facts


def test_a_running_pod_with_bundled_libraries_is_critical_and_names_process_container_versions_and_fix():
    facts = node([client(48121, "535.161.08"), client(48190, "535.161.08")],
                 [mismatch_event("535.161.08", process="pt_main_thread", pid=48121)])
    finding = only(facts, RULE)
    assert finding["severity"] == "critical" and finding["layer"] == "driver" and finding["fix"] is None
    evidence = finding["evidence"]
    assert (evidence["client_version"], evidence["kernel_module_version"]) == ("535.161.08", RUNNING)
    assert evidence["pids"] == [48121, 48190] and evidence["process_name"] == "python3"
    assert evidence["container_id"] == CONTAINER_ID and evidence["kernel_log_events"] == 1
    assert "python3 (pid 48121, 48190)" in finding["summary"] and CONTAINER_ID in finding["summary"]
    assert "535.161.08" in finding["summary"] and RUNNING in finding["summary"]
    assert "NVIDIA container toolkit" in finding["action"] and "remove them from the image" in finding["action"]
    assert findings_of(facts, "driver.kernel_userspace_mismatch") == []


def test_a_stale_compat_package_on_the_host_names_the_package_fix():
    stale = client(7001, "535.104.05", name="train", container=None,
                   library="/usr/local/cuda-12.2/compat/libcuda.so.535.104.05", compat=True)
    finding = only(node([stale]), RULE)
    assert finding["severity"] == "critical" and "the host" in finding["summary"]
    assert "cuda-compat" in finding["action"] and "/usr/local/cuda-12.2/compat/libcuda.so.535.104.05" in finding["action"]


def test_forward_compatibility_with_a_newer_compat_libcuda_is_quiet():
    newer = client(7002, "570.124.06", container=None,
                   library="/usr/local/cuda-12.8/compat/libcuda.so.570.124.06", compat=True)
    assert findings_of(node([newer]), RULE) == []


def test_a_logged_client_of_another_version_under_todays_module_is_a_warning():
    events = [mismatch_event("535.161.08", when="2026-11-30T0%d:00:00Z" % hour, process="nvidia-smi", pid=3170 + hour)
              for hour in range(3)]
    finding = only(node(events=events), RULE)
    assert finding["severity"] == "warning"
    assert finding["evidence"]["kernel_log_events"] == 3 and finding["evidence"]["last_logged"] == "2026-11-30T02:00:00Z"
    assert finding["evidence"]["client_version"] == "535.161.08" and finding["evidence"]["kernel_module_version"] == RUNNING
    assert "nvidia-smi (pid 3170)" in finding["summary"]
    assert "container toolkit" in finding["action"] and "cuda-compat" in finding["action"]


def test_a_logged_mismatch_from_before_the_module_was_replaced_is_history():
    """The log of the window still holds the mismatch of the last upgrade: client 550.54.15 (the libraries that
    run now) against the old module 535.161.08. The versions are the host's current ones: no finding."""
    facts = node(events=[mismatch_event(RUNNING, module="535.161.08", when="2026-11-29T22:10:00Z")])
    assert findings_of(facts, RULE) == []


def test_a_logged_mismatch_with_any_other_module_than_the_running_one_is_history():
    facts = node(events=[mismatch_event("535.161.08", module="550.40.07")])
    assert findings_of(facts, RULE) == []


def test_a_host_wide_mismatch_is_left_to_its_own_rule():
    facts = mismatched_node()
    assert findings_of(facts, RULE) == []
    assert only(facts, "driver.kernel_userspace_mismatch")["severity"] == "critical"


def test_a_host_wide_mismatch_known_only_from_the_log_is_not_reported_twice():
    facts = mismatched_node()
    facts["driver"].update(userspace_version=None, mismatch_reason="kernel log: API mismatch")
    assert findings_of(facts, RULE) == []
    assert len(findings_of(facts, "driver.kernel_userspace_mismatch")) == 1


def test_the_host_wide_rule_is_not_triggered_by_one_workload():
    facts = node(events=[mismatch_event("535.161.08")])
    assert findings_of(facts, "driver.kernel_userspace_mismatch") == []


def test_processes_on_the_running_version_and_facts_without_the_subset_are_quiet():
    assert findings_of(node([client(10, RUNNING)]), RULE) == []
    facts = healthy_node(driver=RUNNING)
    assert facts["driver_clients"] is None
    assert findings_of(facts, RULE) == []


def test_two_containers_on_two_versions_are_two_findings():
    other = "0123abcd" * 8
    facts = node([client(1, "535.161.08"), client(2, "545.23.08", name="vllm", container="/docker/" + other,
                                                  container_id=other)])
    found = findings_of(facts, RULE)
    assert sorted((f["evidence"]["client_version"], f["evidence"]["container_id"]) for f in found) == [
        ("535.161.08", CONTAINER_ID), ("545.23.08", other)]


def test_the_finding_fails_the_audit_at_the_default_fail_severity():
    facts = node([client(48121, "535.161.08")])
    findings = diagnose_fleet({"gpu-node": facts}, {"gpu-node": policy()}, KNOWLEDGE)["gpu-node"]
    assert [f["severity"] for f in findings if f["rule"] == RULE] == ["critical"]
