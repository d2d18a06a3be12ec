"""Whether active checks may run on a node: the scheduler asked as the driver role asks it, and the result of a
refused node in gpu_validate's shape (the facts schema's validation family)."""

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.gpufleet.core.plugins.filter.validation_gate import validation_gate
from ansible_collections.gpufleet.core.plugins.plugin_utils.policy import validate_policy
from ansible_collections.gpufleet.core.plugins.plugin_utils.rollout.validation_gate import (
    refused_validation, scheduler_refusal, verification_problems)
from tests.support.rule_builders import healthy_node
from tests.support.validation_builders import bare, fail_memory, healthy_validation
from tests.support.schema_check import assert_valid_facts

IDLE = "NodeName=gpu01 Arch=x86_64 State=IDLE ThreadsPerCore=2 Reason=none"
DRAINED = "NodeName=gpu01 Arch=x86_64 State=IDLE+DRAIN ThreadsPerCore=2 Reason=validate [root@2026-12-06T10:00:00]"
DRAINING = "NodeName=gpu01 Arch=x86_64 State=MIXED+DRAIN ThreadsPerCore=2 Reason=validate [root@2026-12-06T10:00:00]"


@pytest.mark.parametrize("method, output, refused", [
    ("slurm", IDLE, "Slurm still places jobs on node gpu01 (State=IDLE): it is not drained"),
    ("slurm", DRAINING, "jobs still run on node gpu01 (State=MIXED+DRAIN): wait until it is DRAINED"),
    ("slurm", DRAINED, ""),
    ("slurm", None, "slurm did not answer for node gpu01: the node cannot be shown to be out of service"),
    ("kubernetes", '{"spec": {}}', "Kubernetes still schedules pods on node gpu01: it is not cordoned"),
    ("kubernetes", '{"spec": {"unschedulable": true}}', ""),
    ("kubernetes", "error: not json", "kubectl's answer for node gpu01 is not a node"),
    ("none", None, ""),
])
def test_the_scheduler_must_no_longer_place_work_on_the_node(method, output, refused):
    assert scheduler_refusal(method, output, "gpu01") == refused
    assert validation_gate({"method": method, "output": output, "node": "gpu01"}, "scheduler") == refused


def test_a_refused_node_gets_every_requested_check_refused_in_the_facts_schemas_shape():
    checks = ["dcgm_diag", "nccl_all_reduce", "nvbandwidth", "stress"]
    validation = validation_gate({"reason": "Slurm still places jobs", "checks": checks,
                                  "now": "2026-12-06T10:00:00Z", "dcgm_level": 2}, "refused")
    assert validation["refused"]["reason"] == "Slurm still places jobs"
    assert {name: check["status"] for name, check in validation["checks"].items()} == {
        "dcgm_diag": "refused", "nccl_all_reduce": "refused", "nvbandwidth": "refused", "stress": "refused"}
    assert validation["checks"]["dcgm_diag"]["level"] == 2
    facts = healthy_node()
    facts["validation"] = validation
    assert_valid_facts(facts)
    assert refused_validation("busy", [], "t")["checks"] == {}


def test_a_bad_input_names_itself():
    with pytest.raises(AnsibleFilterError, match="missing input 'node'"):
        validation_gate({"method": "slurm"}, "scheduler")
    with pytest.raises(AnsibleFilterError, match="step must be scheduler, refused or verdict, got 'other'"):
        validation_gate({}, "other")


def test_the_verification_step_passes_only_checks_that_ran_and_found_nothing():
    the_policy = validate_policy({})
    facts = healthy_node()
    assert verification_problems("gpu01", healthy_validation(), facts, the_policy) == []
    problems = verification_problems("gpu01", fail_memory(healthy_validation(), 3), facts, the_policy)
    assert problems[0] == "dcgm_diag failed"
    assert problems[1].startswith("hardware.validation_dcgm_failed: GPU 3 (%s" % facts["gpus"][3]["pci_bus_id"])
    skipped = healthy_validation()
    skipped["checks"] = {"nvbandwidth": bare("nvbandwidth", "skipped", "nvbandwidth was not found on PATH")}
    assert verification_problems("gpu01", skipped, facts, the_policy)[0] == (
        "nvbandwidth skipped: nvbandwidth was not found on PATH")
    assert verification_problems("gpu01", None, facts, the_policy, "dcgmi hung") == [
        "the active checks gave no result: dcgmi hung"]
