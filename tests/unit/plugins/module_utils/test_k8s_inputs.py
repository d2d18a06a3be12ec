"""Kubernetes inputs as captured (k8s_inputs): node listings in JSON, YAML and pasted fragments, device plugin
configs and ConfigMaps holding configs as text, DRA claims, the ClusterPolicy, the device plugin's log of
unhealthy devices, pods rejected at admission, the GPU Operator's controller log and its pods; every Kubernetes
file of the corpus read as its INDEX entry says, and the device plugin's log read on a node."""

import json

import pytest

from ansible_collections.gpufleet.core.plugins.module_utils import k8s_inputs, k8s_sharing
from ansible_collections.gpufleet.core.plugins.module_utils.facts_model import new_facts
from ansible_collections.gpufleet.core.plugins.module_utils.host_io import ReplayHost
from tests.support.k8s_samples import TIME_SLICING

UUID = "GPU-3b7f1d8e-0c55-4e4b-9d2a-7a3f5e1c9b20"
MIG_UUID = "MIG-5c1f2a9e-7b3d-5e8a-a1c4-2d9e6f0b8a71"
# the device plugin's lines as klog and the container runtime (CRI) write them, of two plugin generations
PLUGIN_LOG = "\n".join([
    "2026-11-30T10:00:00.000000001Z stderr F I1130 10:00:00.000001       1 main.go:279] Starting Plugins.",
    "2026-11-30T10:05:00.000000001Z stderr F I1130 10:05:00.000001       1 health.go:159] XidCriticalError: Xid=79 "
    "on Device=%s; marking device as unhealthy." % UUID,
    "2026-11-30T10:05:00.000000002Z stderr F I1130 10:05:00.000002       1 server.go:245] 'nvidia.com/gpu' device "
    "marked unhealthy: %s" % UUID,
    "2026/11/30 10:06:00 'nvidia.com/mig-1g.10gb' device marked unhealthy: %s" % MIG_UUID,
    "2026/11/30 10:09:00 'nvidia.com/mig-1g.10gb' device marked healthy: %s" % MIG_UUID,
])


def test_device_plugin_log_marks_devices_unhealthy_and_healthy_again():
    events = k8s_inputs.device_events(PLUGIN_LOG)
    assert events["unhealthy"] == [{"resource": "nvidia.com/gpu", "device": UUID, "xid": 79}]
    assert events["recovered"] == [MIG_UUID] and events["admission_failures"] == []


def test_admission_failures_by_kind():
    text = ("Warning  UnexpectedAdmissionError  2m  kubelet  Allocate failed due to rpc error: code = Unknown desc = "
            "request for 'nvidia.com/gpu.shared: 4' too large: maximum request size for shared resources is 1, which "
            "is unexpected\nMessage: Pod was rejected: Allocate failed due to no healthy devices present; cannot "
            "allocate unhealthy devices nvidia.com/gpu, which is unexpected\n"
            "Allocate failed due to requested number of devices unavailable for nvidia.com/gpu. Requested: 2, "
            "Available: 1, which is unexpected\n")
    failures = k8s_inputs.device_events(text)["admission_failures"]
    assert [(item["kind"], item["resources"], item["requested"], item["limit"]) for item in failures] == [
        ("shared_request_too_large", ["nvidia.com/gpu.shared"], 4, 1), ("unhealthy_devices", ["nvidia.com/gpu"], None, None),
        ("other", ["nvidia.com/gpu"], None, None)]


def test_node_listing_json_list_and_yaml():
    node = {"kind": "Node", "metadata": {"name": "gpu-7", "labels": {"nvidia.com/gpu.count": "8", "zone": "a"}},
            "status": {"capacity": {"nvidia.com/gpu": "8", "cpu": "96"}, "allocatable": {"nvidia.com/gpu": "7"}}}
    listing = k8s_inputs.node_from_text(json.dumps({"kind": "List", "items": [node]}))
    assert listing == {"name": "gpu-7", "labels": {"nvidia.com/gpu.count": "8"},
                       "resources": {"source": "kubectl", "allocatable": {"nvidia.com/gpu": 7},
                                     "capacity": {"nvidia.com/gpu": 8}}}
    yaml_text = ("apiVersion: v1\nkind: Node\nmetadata:\n  name: gpu-7\nstatus:\n  allocatable:\n    nvidia.com/gpu: \"7\"\n"
                 "  capacity:\n    nvidia.com/gpu: \"8\"\n")
    assert k8s_inputs.node_from_text(yaml_text)["resources"]["allocatable"] == {"nvidia.com/gpu": 7}
    assert k8s_inputs.node_from_text("no node here") is None


def test_a_configmap_holds_configs_as_text():
    configmap = json.dumps({"kind": "ConfigMap", "data": {"t4": TIME_SLICING}})
    configs = k8s_inputs.device_plugin_configs(configmap, "configmap:gpu-operator/plugins")
    assert configs["t4"]["strategy"] == "time_slicing" and configs["t4"]["config_name"] == "t4"


def test_operator_log_says_ready_again():
    text = ('{"level":"info","msg":"ClusterPolicy is not ready, states not ready: [state-driver]"}\n'
            '{"level":"info","msg":"ClusterPolicy is ready as all resources have been successfully reconciled"}\n')
    assert k8s_inputs.operator_status(text) == {"ready": True, "states_not_ready": [], "steps_not_ready": 0}
    assert k8s_inputs.operator_status("nothing")["ready"] is None


# ---------------------------------------------------------------- on a node: the device plugin's own log

POD = "gpu-operator_nvidia-device-plugin-daemonset-x7k2p_0f1e"
OPERATOR = "gpu-operator_gpu-operator-6855b5d55d-kkm7m_77aa"
NFD = "gpu-operator_gpu-operator-node-feature-discovery-worker-cw8qz_88bb"


def plugin_host(files, operator_log=None, extra_dirs=None):
    pods = [POD, NFD, "kube-system_coredns-1_9a"] + ([OPERATOR] if operator_log else [])
    pods += [path.split("/")[4] for path in extra_dirs or () if path.count("/") == 4]
    dirs = {"/var/lib/kubelet/device-plugins": ["kubelet.sock"], "/var/log/pods": sorted(pods),
            "/var/log/pods/" + POD: ["nvidia-device-plugin"], "/var/log/pods/" + NFD: ["worker"],
            "/var/log/pods/%s/worker" % NFD: ["0.log"],
            "/var/log/pods/%s/nvidia-device-plugin" % POD: sorted(files)}
    contents = dict(("/var/log/pods/%s/nvidia-device-plugin/%s" % (POD, name), text) for name, text in files.items())
    contents["/var/log/pods/%s/worker/0.log" % NFD] = "ClusterPolicy is not ready, states not ready: [nfd]"
    if operator_log:
        dirs.update({"/var/log/pods/" + OPERATOR: ["gpu-operator"], "/var/log/pods/%s/gpu-operator" % OPERATOR: ["0.log"]})
        contents["/var/log/pods/%s/gpu-operator/0.log" % OPERATOR] = operator_log
    dirs.update(extra_dirs or {})
    return ReplayHost({"now": 0, "dirs": dirs, "commands": {}, "bins": {}, "files": contents})


def test_the_node_check_reads_the_device_plugins_log_oldest_first():
    host = plugin_host({"0.log": PLUGIN_LOG.split("\n", 3)[3], "1.log": PLUGIN_LOG.split("\n", 3)[2] + "\n"})
    kubernetes = k8s_sharing.collect_kubernetes(host, new_facts(), k8s_sharing.KubernetesOptions(), 10)
    health = kubernetes["device_health"]
    assert health["status"] == "read" and [path.rsplit("/", 1)[1] for path in health["sources"]] == ["0.log", "1.log"]
    assert [item["device"] for item in health["unhealthy"]] == [UUID] and health["recovered"] == [MIG_UUID]
    assert health["operator"] is None


def test_the_node_check_reads_the_operator_controllers_log_when_it_runs_there():
    log = ('2026-11-30T10:00:00.1Z stdout F {"level":"error","logger":"controllers.ClusterPolicy","msg":"ClusterPolicy '
           'is not ready, states not ready: [state-device-plugin]"}\n')
    host = plugin_host({"0.log": PLUGIN_LOG}, operator_log=log)
    health = k8s_sharing.collect_kubernetes(host, new_facts(), k8s_sharing.KubernetesOptions(), 10)["device_health"]
    assert health["operator"] == {"ready": False, "states_not_ready": ["state-device-plugin"], "steps_not_ready": 0}
    assert len(health["sources"]) == 2


def test_restarts_are_read_from_the_kubelets_log_names():
    gfd = "/var/log/pods/gpu-operator_gpu-feature-discovery-kwf5h_12ab"
    host = plugin_host({"0.log": PLUGIN_LOG}, extra_dirs={
        gfd: ["config", "gfd"], gfd + "/gfd": ["56.log", "57.log"], gfd + "/config": ["0.log"],
        "/var/log/pods/%s/worker" % NFD: ["0.log", "1.log"]})
    health = k8s_sharing.collect_kubernetes(host, new_facts(), k8s_sharing.KubernetesOptions(), 10)["device_health"]
    assert health["restarting"] == [
        {"pod": "gpu-feature-discovery-kwf5h", "container": "gfd", "restarts": 57},
        {"pod": "gpu-operator-node-feature-discovery-worker-cw8qz", "container": "worker", "restarts": 1}]


def test_no_device_plugin_pod_log_is_absent():
    host = ReplayHost({"now": 0, "files": {}, "commands": {}, "bins": {},
                       "dirs": {"/var/lib/kubelet/device-plugins": ["kubelet.sock"]}})
    kubernetes = k8s_sharing.collect_kubernetes(host, new_facts(), k8s_sharing.KubernetesOptions(), 10)
    assert kubernetes["device_health"] == k8s_inputs.new_device_health("absent")


# ---------------------------------------------------------------- the corpus, each Kubernetes file

def read(corpus, name):
    return corpus.read_realdata(name)


@pytest.mark.corpus
def test_corpus_mps_config_replicas_10(corpus):
    name = "device-plugin-config_sharing-mps-replicas10_k8s-device-plugin-readme.yaml"
    (sharing,) = k8s_inputs.device_plugin_configs(read(corpus, name), "file:x").values()
    assert (sharing["strategy"], sharing["resources"], sharing["error"]) == (
        "mps", [{"name": "nvidia.com/gpu", "replicas": 10}], None)


@pytest.mark.corpus
def test_corpus_configmap_per_node_configs_parsed_twice(corpus):
    configs = k8s_inputs.device_plugin_configs(read(
        corpus, "device-plugin-configmap_time-slicing-per-node-a100-mig-mixed-t4_nvidia-cloud-native-docs.yaml"), "cm")
    assert sorted(configs) == ["a100-40gb", "tesla-t4"]
    a100, t4 = configs["a100-40gb"], configs["tesla-t4"]
    assert (a100["strategy"], a100["mig_strategy"]) == ("time_slicing", "mixed")
    assert dict((item["name"], item["replicas"]) for item in a100["resources"]) == {
        "nvidia.com/gpu": 8, "nvidia.com/mig-1g.5gb": 2, "nvidia.com/mig-2g.10gb": 2, "nvidia.com/mig-3g.20gb": 3,
        "nvidia.com/mig-7g.40gb": 7}
    assert (t4["mig_strategy"], t4["resources"]) == ("none", [{"name": "nvidia.com/gpu", "replicas": 4}])


@pytest.mark.corpus
def test_corpus_dra_claim_template_shares_by_mps(corpus):
    assert k8s_inputs.dra_sharing(read(
        corpus, "k8s-dra-resourceclaimtemplate-and-pod_gpu-sharing-mps-50pct-10gi_nvidia-dra-driver-demo.yaml")) == [
        {"claim": "shared-gpu", "kind": "ResourceClaimTemplate", "strategy": "MPS", "active_thread_percentage": 50,
         "pinned_memory_limit": "10Gi"}]


@pytest.mark.corpus
def test_corpus_cluster_policy_sample(corpus):
    policy = k8s_inputs.cluster_policy(read(corpus, "gpu-operator-clusterpolicy_sample-spec-mig-single_"
                                                    "nvidia-gpu-operator.yaml"))
    assert policy["mig_strategy"] == "single" and policy["components"]["devicePlugin"] is True
    assert policy["components"]["gds"] is False


@pytest.mark.corpus
def test_corpus_operator_log_not_ready_in_both_encodings(corpus):
    text = read(corpus, "gpu-operator-controller-log_clusterpolicy-not-ready_json-and-console_issue-quotes.txt")
    json_block, console_block = (block.split("\n", 1)[1] for block in text.split("\n## ")[1:])
    assert k8s_inputs.operator_status(json_block) == {
        "ready": False, "steps_not_ready": 0, "states_not_ready": [
            "state-operator-validation", "state-device-plugin", "state-dcgm-exporter", "gpu-feature-discovery",
            "state-mig-manager"]}
    assert k8s_inputs.operator_status(console_block) == {"ready": False, "states_not_ready": [], "steps_not_ready": 1}


@pytest.mark.corpus
def test_corpus_capacity_fragments_mig_mixed(corpus):
    blocks = read(corpus, "k8s-node-gpu-capacity-fragments_mig-mixed-h100-and-a100-80gb_issue-quotes.txt").split("\n## ")
    h100, a100 = (k8s_inputs.node_from_text(block.split("\n", 1)[1]) for block in blocks[1:])
    assert h100["resources"]["capacity"] == {"nvidia.com/gpu": 0, "nvidia.com/mig-1g.12gb": 2,
                                             "nvidia.com/mig-2g.24gb": 1, "nvidia.com/mig-3g.47gb": 1}
    assert a100["resources"]["capacity"] == {"nvidia.com/gpu": 0, "nvidia.com/mig-1g.10gb": 12,
                                             "nvidia.com/mig-1g.20gb": 2}


@pytest.mark.corpus
def test_corpus_resourceslice_fragment_is_no_node_and_no_error(corpus):
    text = read(corpus, "k8s-resourceslice-yaml-fragment_nvidia-dra-driver_aks-a100-80gb-and-mig-pool_issue-quote.yaml")
    assert k8s_inputs.load_documents(text) == [] and k8s_inputs.node_from_text(text) is None


@pytest.mark.corpus
def test_corpus_node_yaml_allocatable_equals_capacity(corpus):
    node = k8s_inputs.node_from_text(read(
        corpus, "kubectl-get-node-o-yaml_1-gpu-node-allocatable-equals-capacity_issue-quote.yaml"))
    assert node["name"] == "192.168.13.64"
    assert node["resources"] == {"source": "kubectl", "allocatable": {"nvidia.com/gpu": 1},
                                 "capacity": {"nvidia.com/gpu": 1}}


@pytest.mark.corpus
def test_corpus_pod_rejected_for_unhealthy_mig_devices_and_gfd_crash_looping(corpus):
    text = read(corpus, "kubectl_pod-rejected-allocate-failed-no-healthy-mig-devices_gpu-operator-gfd-crashloop_"
                        "issue-quote.txt")
    (failure,) = k8s_inputs.device_events(text)["admission_failures"]
    assert (failure["kind"], failure["resources"]) == ("unhealthy_devices", ["nvidia.com/mig-1g.5gb"])
    assert k8s_inputs.pods_not_running(text) == [
        {"name": "gpu-feature-discovery-kwf5h", "ready": "0/2", "status": "CrashLoopBackOff", "restarts": 57}]


@pytest.mark.corpus
def test_corpus_pod_asking_two_shared_gpus(corpus):
    (failure,) = k8s_inputs.device_events(read(
        corpus, "kubectl-describe-pod_unexpectedadmissionerror-shared-gpu-too-large_k8s-device-plugin-readme.txt"
    ))["admission_failures"]
    assert (failure["kind"], failure["resources"], failure["requested"], failure["limit"]) == (
        "shared_request_too_large", ["nvidia.com/gpu"], 2, 1)


def test_host_text_kept_of_the_plugins_log_is_bounded():
    events = k8s_inputs.device_events("'nvidia.com/gpu' device marked unhealthy: GPU-%s" % ("a" * 500))
    assert len(events["unhealthy"][0]["device"]) == k8s_inputs.FIELD_LIMIT
