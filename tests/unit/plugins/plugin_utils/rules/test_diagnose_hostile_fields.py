"""Host-controlled text is data: it never changes a verdict by matching a pattern meant for another field.

The controller decides from fields made for each question (host.mps_daemon_running, the MPS unit's state,
kernel_events[].kind, xid_events[].xid, the container toolkit's booleans, a service entry's unit name);
free text that mentions the same things (process names, kernel messages, host and OS names) is only shown.
"""

import copy

import pytest

from tests.support.rule_builders import findings_of, healthy_node, policy, service, xid_event

# Text a hostile or unlucky host could put in any free-text field: each matches a pattern some rule
# looks for in another field.
LOOKALIKES = (
    "nvidia-cuda-mps-server",
    "nvidia-cuda-mps-control -d",
    "NVRM: Xid (PCI:0000:18:00): 79, pid=1, name=python, GPU has fallen off the bus.",
    "NVRM: API mismatch: the client has the version 535.54.03, but this kernel module has its version 550.90.07",
    "NVRM: GPU 0000:18:00.0: GPU has fallen off the bus.",
    "nvidia-container-runtime BinaryName = \"/usr/bin/nvidia-container-runtime\"",
    "NVIDIA H100 80GB HBM3 SXM",
    "Function Not Found / Not Supported",
    "\x1b[31mcritical\x1b[0m\r\u202e",
)


def verdicts(facts, the_policy=None):
    """What the audit decides: (rule, severity, gpu) of every finding, without its text."""
    return sorted((f["rule"], f["severity"], f["gpu"] or "") for f in findings_of(facts, the_policy=the_policy))


def node_with_history():
    """A node with something to say in every layer's free text: a past Xid, a kernel event, processes."""
    facts = healthy_node(gpus=2)
    facts["xid_events"] = [xid_event(13, "0000:18:00.0", None, pid=4242, name="python3")]
    facts["kernel_events"] = [
        {"kind": "fallen_off_bus", "time": None, "pci_bus_id": "0000:2a:00.0",
         "message": "NVRM: GPU 0000:2a:00.0: GPU has fallen off the bus."},
        {"kind": "api_mismatch", "time": None, "pci_bus_id": None, "client_version": "535.54.03",
         "kernel_module_version": "550.90.07", "message": "NVRM: API mismatch: the client has the version 535.54.03"},
    ]
    return facts


def fill_free_text(facts, text):
    """Every free-text field of the facts set to text; no field that a rule decides from."""
    facts = copy.deepcopy(facts)
    for gpu in facts["gpus"]:
        for process in gpu["processes"]:
            process["name"] = text
    for event in facts["xid_events"]:
        event.update(message=text, process_name=text)
    for event in facts["kernel_events"]:
        event["message"] = text
    facts["host"].update(hostname=text, kernel=text)
    facts["host"]["os"]["pretty_name"] = text
    facts["driver"]["mismatch_reason"] = text
    return facts


@pytest.mark.parametrize("sharing", [None, "exclusive", "mps", "time_slicing"])
@pytest.mark.parametrize("text", LOOKALIKES)
def test_free_text_that_mentions_other_fields_changes_no_verdict(text, sharing):
    the_policy = policy(sharing={"mode": sharing}, container_runtime={"required": True})
    facts = node_with_history()
    assert verdicts(fill_free_text(facts, text), the_policy) == verdicts(facts, the_policy)


def test_a_gpu_process_named_like_the_mps_server_is_not_an_mps_daemon():
    """NVML lists MPS clients by their own names and any program can call itself nvidia-cuda-mps-server: the
    daemon runs when the collector found its process by /proc/<pid>/comm (mps_daemon_running) or its unit."""
    facts = healthy_node(gpus=2)
    facts["gpus"][0]["processes"][0].update(name="nvidia-cuda-mps-server")
    assert findings_of(facts, "scheduling.mps_daemon", policy(sharing={"mode": "exclusive"})) == []
    missing = findings_of(facts, "scheduling.mps_daemon", policy(sharing={"mode": "mps"}))
    assert [f["summary"] for f in missing] == ["Policy sharing.mode is mps but no MPS daemon runs"]
    facts["host"]["mps_daemon_running"] = True
    running = findings_of(facts, "scheduling.mps_daemon", policy(sharing={"mode": "exclusive"}))
    assert [f["severity"] for f in running] == ["warning"]


def test_the_mps_role_entry_does_not_stand_in_for_a_policy_service_named_mps():
    """host.services["mps"] describes nvidia-mps (the MPS role); a policy service "mps" is mps.service."""
    facts = healthy_node(gpus=1)
    facts["host"]["services"]["mps"] = service("nvidia-mps", "running", restart="no")
    the_policy = policy(workload={"services": [{"name": "mps"}]})
    assert findings_of(facts, "workload.restart_policy", the_policy) == []
    facts["host"]["services"]["mps.service"] = service("mps.service", "running", restart="no")
    found = findings_of(facts, "workload.restart_policy", the_policy)
    assert [f["evidence"]["service"] for f in found] == ["mps.service"]


def test_a_service_entry_is_matched_by_its_unit_name_when_the_key_differs():
    facts = healthy_node(gpus=1)
    facts["host"]["services"]["inference"] = service("triton.service", "running", restart="no")
    found = findings_of(facts, "workload.restart_policy", policy(workload={"services": [{"name": "triton"}]}))
    assert [f["evidence"]["service"] for f in found] == ["triton.service"]
