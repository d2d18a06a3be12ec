"""Scheduling rules on a Kubernetes node's GPU sharing, each with a triggering and a non-triggering case:
advertised resources against the GPUs, sharing against the policy's sharing.mode, sharing across a group."""

import copy

import pytest

from ansible_collections.gpufleet.core.plugins.module_utils import k8s_inputs
from ansible_collections.gpufleet.core.plugins.module_utils.k8s_sharing import parse_config_text
from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.diagnose import diagnose_fleet
from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.k8s import expected_resources
from tests.support.rule_builders import findings_of, healthy_node, only, policy
from tests.support.k8s_samples import MIXED_MIG, MPS, NO_SHARING, TIME_SLICING

K8S_RULES = ("scheduling.k8s_allocatable_mismatch", "scheduling.k8s_sharing_policy", "scheduling.k8s_sharing_skew",
             "scheduling.k8s_device_unhealthy", "scheduling.k8s_admission_rejected", "scheduling.k8s_operator_not_ready",
             "scheduling.k8s_gpu_stack_restarting")


def k8s_node(config=TIME_SLICING, allocatable=None, gpus=8, labels=None):
    facts = healthy_node(gpus=gpus)
    facts["gather_subset"].append("kubernetes")
    facts["kubernetes"] = {
        "node": True, "node_name": "gpu-node", "status": "complete",
        "sharing": parse_config_text(config, "file:/etc/nvidia-device-plugin/config.yaml") if config else None,
        "resources": {"source": "kubectl", "allocatable": dict(allocatable or {}), "capacity": dict(allocatable or {})},
        "labels": dict(labels or {}), "errors": []}
    return facts


def mig_gpu(gpu, profiles):
    gpu["mig"]["mode_current"] = gpu["mig"]["mode_pending"] = True
    gpu["mig"]["gpu_instances"] = [
        {"id": number, "profile_id": None, "profile_name": profile, "placement": None, "memory_mib": None,
         "compute_instances": [{"id": 0, "profile_id": None, "profile_name": profile, "placement": None}]}
        for number, profile in enumerate(profiles, 1)]


def test_time_slicing_node_advertising_gpus_times_replicas_is_fine():
    facts = k8s_node(TIME_SLICING, {"nvidia.com/gpu": 32})
    assert findings_of(facts, "scheduling.k8s_allocatable_mismatch") == []


def test_a_gpu_missing_from_allocatable():
    facts = k8s_node(TIME_SLICING, {"nvidia.com/gpu": 28})
    facts["gpus"][3]["lost"] = True
    finding = only(facts, "scheduling.k8s_allocatable_mismatch")
    assert finding["evidence"]["differences"] == {"nvidia.com/gpu": {"expected": 32, "advertised": 28}}
    assert finding["evidence"]["lost_gpus"] == [facts["gpus"][3]["pci_bus_id"]]
    assert "nvidia.com/gpu 28, expected 32" in finding["summary"] and "1 lost" in finding["summary"]
    assert finding["action"].startswith("A GPU is missing")


def test_renamed_shared_resource():
    renamed = TIME_SLICING.replace("renameByDefault: false", "renameByDefault: true")
    assert findings_of(k8s_node(renamed, {"nvidia.com/gpu": 0, "nvidia.com/gpu.shared": 32}),
                       "scheduling.k8s_allocatable_mismatch") == []
    finding = only(k8s_node(renamed, {"nvidia.com/gpu": 32}), "scheduling.k8s_allocatable_mismatch")
    assert finding["evidence"]["differences"] == {"nvidia.com/gpu": {"expected": 0, "advertised": 32},
                                                  "nvidia.com/gpu.shared": {"expected": 32, "advertised": 0}}


def test_plugin_without_sharing_config_but_replicas_advertised():
    finding = only(k8s_node(None, {"nvidia.com/gpu": 32}), "scheduling.k8s_allocatable_mismatch")
    assert finding["evidence"]["differences"] == {"nvidia.com/gpu": {"expected": 8, "advertised": 32}}
    assert finding["action"].startswith("The device plugin advertises more")


def test_mixed_mig_strategy_counts_profiles_and_replicas():
    facts = k8s_node(MIXED_MIG, {"nvidia.com/gpu": 12, "nvidia.com/mig-1g.10gb": 8, "nvidia.com/mig-3g.40gb": 2})
    mig_gpu(facts["gpus"][0], ["1g.10gb", "1g.10gb", "3g.40gb"])
    mig_gpu(facts["gpus"][1], ["3g.40gb"])
    assert expected_resources(facts["gpus"], facts["kubernetes"]) == {
        "nvidia.com/gpu": 12, "nvidia.com/mig-1g.10gb": 8, "nvidia.com/mig-3g.40gb": 2}
    assert findings_of(facts, "scheduling.k8s_allocatable_mismatch") == []


def test_single_mig_strategy_from_the_label():
    facts = k8s_node(NO_SHARING.replace("  migStrategy: single\n", ""), {"nvidia.com/gpu": 14},
                     labels={"nvidia.com/mig.strategy": "single"})
    mig_gpu(facts["gpus"][0], ["1g.10gb"] * 7)
    assert findings_of(facts, "scheduling.k8s_allocatable_mismatch") == []


def test_no_resources_read_is_no_finding():
    facts = k8s_node(TIME_SLICING)
    facts["kubernetes"]["resources"] = None
    facts["kubernetes"]["device_health"] = k8s_inputs.new_device_health("absent")
    assert [finding for finding in findings_of(facts) if finding["rule"] in K8S_RULES] == []


@pytest.mark.parametrize("config, mode", [(TIME_SLICING, "exclusive"), (MPS, "exclusive"), (TIME_SLICING, "mps"),
                                          (TIME_SLICING, "mig")])
def test_sharing_against_the_policy(config, mode):
    finding = only(k8s_node(config, None), "scheduling.k8s_sharing_policy", the_policy=policy(sharing={"mode": mode}))
    assert finding["severity"] == "warning" and finding["evidence"]["sharing_mode"] == mode
    assert "nvidia.com/gpu x" in finding["summary"]


@pytest.mark.parametrize("config, mode", [(TIME_SLICING, "time_slicing"), (MPS, "mps"), (NO_SHARING, "exclusive"),
                                          (TIME_SLICING, None)])
def test_sharing_the_policy_allows(config, mode):
    the_policy = policy(sharing={"mode": mode}) if mode else policy()
    assert findings_of(k8s_node(config, None), "scheduling.k8s_sharing_policy", the_policy=the_policy) == []


def fleet(configs):
    hosts = {}
    for number, config in enumerate(configs):
        facts = k8s_node(config, None)
        facts["kubernetes"]["node_name"] = "node-%d" % number
        hosts["node-%d" % number] = facts
    return hosts


def skew_findings(hosts):
    found = diagnose_fleet(hosts, {})
    return {host: [finding for finding in items if finding["rule"] == "scheduling.k8s_sharing_skew"]
            for host, items in found.items()}


def test_one_node_of_a_group_shares_differently():
    other = TIME_SLICING.replace("replicas: 4", "replicas: 8")
    found = skew_findings(fleet([TIME_SLICING, TIME_SLICING, other]))
    assert found["node-0"] == [] and found["node-1"] == []
    finding, = found["node-2"]
    assert "time slicing nvidia.com/gpu x8" in finding["summary"]
    assert finding["evidence"]["group_reference"]["replicas"] == [["nvidia.com/gpu", 4]]


def test_a_group_sharing_alike_is_no_finding():
    found = skew_findings(fleet([MPS, MPS, copy.deepcopy(MPS)]))
    assert all(items == [] for items in found.values())


def test_nodes_without_a_config_are_left_out_of_the_comparison():
    found = skew_findings(fleet([TIME_SLICING, None, TIME_SLICING]))
    assert all(items == [] for items in found.values())


# ---------------------------------------------------------------- what the device plugin's log says


def with_device_health(facts, text):
    facts["kubernetes"]["device_health"] = dict(k8s_inputs.new_device_health("read"), sources=["/var/log/pods/x/0.log"],
                                                **k8s_inputs.device_events(text))
    return facts


MARKED = "I1130 10:05:00.000002 1 server.go:245] 'nvidia.com/gpu' device marked unhealthy: GPU-3b7f"
XID = "I1130 10:05:00.000001 1 health.go:159] XidCriticalError: Xid=79 on Device=GPU-3b7f; marking device as unhealthy."


def test_a_device_marked_unhealthy_and_gone_from_allocatable_is_critical():
    facts = with_device_health(k8s_node(NO_SHARING, {"nvidia.com/gpu": 8}), XID + "\n" + MARKED)
    facts["kubernetes"]["resources"]["allocatable"]["nvidia.com/gpu"] = 7
    finding = only(facts, "scheduling.k8s_device_unhealthy")
    assert (finding["layer"], finding["severity"]) == ("scheduling", "critical")
    assert "GPU-3b7f (Xid 79)" in finding["summary"] and finding["evidence"]["fewer_allocatable"] == ["nvidia.com/gpu"]


def test_a_device_marked_unhealthy_still_allocatable_is_a_warning_and_a_recovered_one_nothing():
    facts = with_device_health(k8s_node(NO_SHARING, {"nvidia.com/gpu": 8}), MARKED)
    assert only(facts, "scheduling.k8s_device_unhealthy")["severity"] == "warning"
    healthy = MARKED.replace("unhealthy", "healthy")
    assert findings_of(with_device_health(k8s_node(NO_SHARING, {"nvidia.com/gpu": 8}), MARKED + "\n" + healthy),
                       "scheduling.k8s_device_unhealthy") == []


def test_a_request_for_two_shared_gpus_is_the_jobs():
    text = ("Allocate failed due to rpc error: code = Unknown desc = request for 'nvidia.com/gpu: 2' too large: "
            "maximum request size for shared resources is 1, which is unexpected")
    facts = with_device_health(k8s_node(TIME_SLICING, {"nvidia.com/gpu": 32}), text)
    finding = only(facts, "scheduling.k8s_admission_rejected")
    assert finding["severity"] == "warning" and "nvidia.com/gpu x2 where a shared resource allows 1" in finding["summary"]
    assert findings_of(facts, "scheduling.k8s_device_unhealthy") == []


@pytest.mark.corpus
@pytest.mark.parametrize("name, rule, severity", [
    ("kubectl_pod-rejected-allocate-failed-no-healthy-mig-devices_gpu-operator-gfd-crashloop_issue-quote.txt",
     "scheduling.k8s_device_unhealthy", "critical"),
    ("kubectl-describe-pod_unexpectedadmissionerror-shared-gpu-too-large_k8s-device-plugin-readme.txt",
     "scheduling.k8s_admission_rejected", "warning"),
])
def test_corpus_rejected_pods_get_their_verdict(corpus, name, rule, severity):
    """The INDEX: unhealthy MIG slices, warning -> critical when persistent (a pod rejected at admission is never
    retried, so a rejection is taken as persistent); a pod asking two shared GPUs, warning (the job's spec)."""
    facts = with_device_health(k8s_node(NO_SHARING, {"nvidia.com/gpu": 8}), corpus.read_realdata(name))
    assert only(facts, rule)["severity"] == severity


@pytest.mark.corpus
@pytest.mark.parametrize("name", [
    "kubectl-get-node-o-yaml_1-gpu-node-allocatable-equals-capacity_issue-quote.yaml",
])
def test_corpus_healthy_node_listing_has_no_finding(corpus, name):
    """allocatable == capacity on a 1-GPU node without sharing: nothing to say (INDEX: none)."""
    node = k8s_inputs.node_from_text(corpus.read_realdata(name))
    facts = k8s_node(NO_SHARING, gpus=1)
    facts["kubernetes"]["resources"] = node["resources"]
    assert [finding["rule"] for finding in findings_of(facts) if finding["rule"].startswith("scheduling.k8s")] == []


@pytest.mark.corpus
def test_corpus_mig_mixed_capacity_with_no_whole_gpu_is_healthy(corpus):
    """The INDEX: nvidia.com/gpu 0 is expected under the mixed strategy; the H100's four MIG devices match."""
    text = corpus.read_realdata("k8s-node-gpu-capacity-fragments_mig-mixed-h100-and-a100-80gb_issue-quotes.txt")
    fragment = k8s_inputs.node_from_text(text.split("\n## ")[1].split("\n", 1)[1])["resources"]["capacity"]
    facts = k8s_node(None, fragment, gpus=1, labels={"nvidia.com/mig.strategy": "mixed"})
    mig_gpu(facts["gpus"][0], ["1g.12gb", "1g.12gb", "2g.24gb", "3g.47gb"])
    assert findings_of(facts, "scheduling.k8s_allocatable_mismatch") == []
    facts["kubernetes"]["resources"]["allocatable"]["nvidia.com/mig-1g.12gb"] = 1
    assert only(facts, "scheduling.k8s_allocatable_mismatch")["evidence"]["differences"] == {
        "nvidia.com/mig-1g.12gb": {"expected": 2, "advertised": 1}}


@pytest.mark.corpus
def test_corpus_operator_not_ready_is_a_warning_naming_the_states(corpus):
    text = corpus.read_realdata("gpu-operator-controller-log_clusterpolicy-not-ready_json-and-console_issue-quotes.txt")
    facts = k8s_node(NO_SHARING, {"nvidia.com/gpu": 8})
    facts["kubernetes"]["device_health"] = dict(k8s_inputs.new_device_health("read"),
                                                operator=k8s_inputs.operator_status(text.split("\n## ")[1]))
    finding = only(facts, "scheduling.k8s_operator_not_ready")
    assert finding["severity"] == "warning" and "state-device-plugin, state-dcgm-exporter, gpu-feature-discovery" in finding["summary"]
    facts["kubernetes"]["device_health"]["operator"] = {"ready": True, "states_not_ready": [], "steps_not_ready": 0}
    assert findings_of(facts, "scheduling.k8s_operator_not_ready") == []


def test_a_device_plugin_crash_looping_is_critical_a_validator_a_warning():
    facts = k8s_node(NO_SHARING, {"nvidia.com/gpu": 8})
    facts["kubernetes"]["device_health"] = dict(k8s_inputs.new_device_health("absent"), restarting=[
        {"pod": "nvidia-operator-validator-x1", "container": "plugin-validation", "restarts": 12},
        {"pod": "nvidia-dcgm-exporter-q2", "container": "exporter", "restarts": 2}])
    finding = only(facts, "scheduling.k8s_gpu_stack_restarting")
    assert finding["severity"] == "warning" and "nvidia-operator-validator-x1/plugin-validation 12 times" in finding["summary"]
    facts["kubernetes"]["device_health"]["restarting"].append(
        {"pod": "nvidia-device-plugin-daemonset-7", "container": "nvidia-device-plugin", "restarts": 6})
    assert only(facts, "scheduling.k8s_gpu_stack_restarting")["severity"] == "critical"


@pytest.mark.corpus
def test_corpus_feature_discovery_crash_loop_from_the_pods_table(corpus):
    text = corpus.read_realdata(
        "kubectl_pod-rejected-allocate-failed-no-healthy-mig-devices_gpu-operator-gfd-crashloop_issue-quote.txt")
    facts = k8s_node(NO_SHARING, {"nvidia.com/gpu": 8})
    facts["kubernetes"]["device_health"] = dict(k8s_inputs.new_device_health("read"),
                                                restarting=k8s_inputs.restarting_from_pods(text))
    finding = only(facts, "scheduling.k8s_gpu_stack_restarting")
    assert finding["severity"] == "warning" and "gpu-feature-discovery-kwf5h 57 times" in finding["summary"]
