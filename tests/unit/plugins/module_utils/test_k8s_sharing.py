"""The NVIDIA device plugin's sharing config, the node's advertised resources (kubectl JSON, describe
output, the kubelet's checkpoint) and the kubernetes subset on a simulated host: the project's own
samples in the formats the plugin documents, and the corpus's node listings read in place."""

import json

import pytest
import yaml

from ansible_collections.gpufleet.core.plugins.module_utils import k8s_sharing, simple_yaml
from ansible_collections.gpufleet.core.plugins.module_utils.facts_model import new_facts
from ansible_collections.gpufleet.core.plugins.module_utils.host_io import ReplayHost, command_key
from tests.support.k8s_samples import MIXED_MIG, MPS, NO_SHARING, TIME_SLICING


@pytest.mark.parametrize("text", [TIME_SLICING, MPS, MIXED_MIG, NO_SHARING])
def test_yaml_subset_reads_what_pyyaml_reads(text):
    assert simple_yaml.load_without_pyyaml(text) == yaml.safe_load(text)


def test_yaml_subset_refuses_what_it_cannot_read():
    with pytest.raises(ValueError):
        simple_yaml.load_without_pyyaml("sharing:\n  timeSlicing:\n resources: 3\n  oops\n")


def test_time_slicing_config():
    sharing = k8s_sharing.parse_config_text(TIME_SLICING, "file:/x")
    assert sharing["strategy"] == "time_slicing" and sharing["mig_strategy"] == "none"
    assert sharing["resources"] == [{"name": "nvidia.com/gpu", "replicas": 4}]
    assert sharing["rename_by_default"] is False and sharing["fail_requests_greater_than_one"] is True


def test_mps_config_keeps_its_historical_fail_requests_default():
    sharing = k8s_sharing.parse_config_text(MPS, "file:/x")
    assert sharing["strategy"] == "mps" and sharing["rename_by_default"] is True
    assert sharing["fail_requests_greater_than_one"] is True
    assert sharing["resources"] == [{"name": "nvidia.com/gpu", "replicas": 10}]


def test_mixed_mig_time_slicing():
    sharing = k8s_sharing.parse_config_text(MIXED_MIG, "configmap:gpu-operator/ts", "a100")
    assert sharing["mig_strategy"] == "mixed" and sharing["config_name"] == "a100"
    assert [item["replicas"] for item in sharing["resources"]] == [2, 4]
    assert sharing["fail_requests_greater_than_one"] is False


def test_no_sharing_and_bad_configs():
    assert k8s_sharing.parse_config_text(NO_SHARING, "file:/x")["strategy"] == "none"
    broken = k8s_sharing.parse_config_text("sharing: [unclosed\n", "file:/x")
    assert broken["error"].startswith("cannot be parsed") and broken["strategy"] == "none"
    assert k8s_sharing.parse_config_text("- a\n- b\n", "file:/x")["error"] == "the config is not a mapping"
    one_replica = TIME_SLICING.replace("replicas: 4", "replicas: 1")
    assert k8s_sharing.parse_config_text(one_replica, "file:/x")["strategy"] == "none"


def test_configmap_key_follows_the_node_label():
    configmap = {"data": {"a100": MIXED_MIG, "t4": TIME_SLICING}}
    assert k8s_sharing.config_from_configmap(configmap, "t4") == ("t4", TIME_SLICING)
    assert k8s_sharing.config_from_configmap(configmap, None) == (None, None)
    assert k8s_sharing.config_from_configmap({"data": {"any": MPS}}, "t4") == ("any", MPS)


def node_json(allocatable, labels=None):
    return {"metadata": {"name": "gpu-node-1", "labels": labels or {}},
            "status": {"allocatable": dict(allocatable, cpu="94", memory="1056Gi"),
                       "capacity": dict(allocatable, cpu="96")}}


def test_kubectl_node_resources_keep_only_nvidia():
    node = node_json({"nvidia.com/gpu": "32"}, {"nvidia.com/gpu.replicas": "4", "kubernetes.io/os": "linux"})
    assert k8s_sharing.resources_from_node(node) == {
        "source": "kubectl", "allocatable": {"nvidia.com/gpu": 32}, "capacity": {"nvidia.com/gpu": 32}}
    assert k8s_sharing.nvidia_labels(node["metadata"]["labels"]) == {"nvidia.com/gpu.replicas": "4"}


def test_kubelet_checkpoint_counts_registered_devices():
    checkpoint = json.dumps({"Data": {"PodDeviceEntries": None, "RegisteredDevices": {
        "nvidia.com/gpu": ["GPU-0::%d" % replica for replica in range(4)] + ["GPU-1::%d" % r for r in range(4)]}},
        "Checksum": 1234})
    assert k8s_sharing.resources_from_checkpoint(checkpoint) == {
        "source": "kubelet_checkpoint", "allocatable": {"nvidia.com/gpu": 8}, "capacity": {}}
    assert k8s_sharing.resources_from_checkpoint("garbage") is None


KUBECTL = "/usr/bin/kubectl"


def node_host(files=None, commands=None, kubectl=True):
    files = dict({"/var/lib/kubelet/config.yaml": "kind: KubeletConfiguration\n",
                  "/proc/sys/kernel/hostname": "GPU-Node-1\n"}, **(files or {}))
    dirs = {"/var/lib/kubelet/device-plugins": ["kubelet.sock", "nvidia-gpu.sock"]}
    for path in files:
        folder, _sep, name = path.rpartition("/")
        dirs.setdefault(folder, []).append(name)
    return ReplayHost({"now": 0, "files": files, "dirs": dirs, "commands": commands or {},
                       "bins": {"kubectl": KUBECTL} if kubectl else {}})


def kubectl_key(*args):
    return command_key([KUBECTL, "--request-timeout=9s"] + list(args) + ["-o", "json"])


def test_subset_on_a_host_that_is_no_node():
    facts = new_facts()
    host = ReplayHost({"files": {}, "dirs": {}, "commands": {}, "bins": {}})
    kubernetes = k8s_sharing.collect_kubernetes(host, facts, k8s_sharing.KubernetesOptions(use_kubectl=True), 10)
    assert kubernetes["node"] is False and kubernetes["status"] == "not_a_node" and facts["errors"] == []


def test_subset_reads_config_file_and_kubectl():
    node = node_json({"nvidia.com/gpu": "16"}, {"nvidia.com/device-plugin.config": "t4"})
    host = node_host(files={"/etc/nvidia-device-plugin/config.yaml": TIME_SLICING},
                     commands={kubectl_key("get", "node", "gpu-node-1"): {"rc": 0, "stdout": json.dumps(node)}})
    facts = new_facts()
    kubernetes = k8s_sharing.collect_kubernetes(host, facts, k8s_sharing.KubernetesOptions(use_kubectl=True), 10)
    assert kubernetes["status"] == "complete" and kubernetes["node_name"] == "gpu-node-1"
    assert kubernetes["sharing"]["source"] == "file:/etc/nvidia-device-plugin/config.yaml"
    assert kubernetes["resources"]["allocatable"] == {"nvidia.com/gpu": 16}
    assert kubernetes["labels"] == {"nvidia.com/device-plugin.config": "t4"}


def test_subset_reads_the_configmap_key_named_by_the_label():
    node = node_json({"nvidia.com/gpu": "32"}, {"nvidia.com/device-plugin.config": "h100"})
    configmap = {"data": {"h100": MPS, "t4": TIME_SLICING}}
    host = node_host(commands={
        kubectl_key("get", "node", "gpu-node-1"): {"rc": 0, "stdout": json.dumps(node)},
        kubectl_key("get", "configmap", "-n", "gpu-operator", "plugin-config"): {"rc": 0, "stdout": json.dumps(configmap)}})
    options = k8s_sharing.KubernetesOptions(use_kubectl=True, configmap="gpu-operator/plugin-config", config_files=["/nope"])
    kubernetes = k8s_sharing.collect_kubernetes(host, new_facts(), options, 10)
    assert kubernetes["sharing"]["strategy"] == "mps" and kubernetes["sharing"]["config_name"] == "h100"
    assert kubernetes["sharing"]["source"] == "configmap:gpu-operator/plugin-config"


def test_kubectl_refused_is_an_error_entry_and_the_checkpoint_still_counts():
    checkpoint = json.dumps({"Data": {"RegisteredDevices": {"nvidia.com/gpu": ["GPU-a", "GPU-b"]}}, "Checksum": 1})
    host = node_host(files={"/var/lib/kubelet/device-plugins/kubelet_internal_checkpoint": checkpoint},
                     commands={kubectl_key("get", "node", "gpu-node-1"): {
                         "rc": 1, "stdout": "", "stderr": 'Error from server (Forbidden): nodes "gpu-node-1" is forbidden'}})
    facts = new_facts()
    kubernetes = k8s_sharing.collect_kubernetes(host, facts, k8s_sharing.KubernetesOptions(use_kubectl=True), 10)
    assert kubernetes["status"] == "partial"
    assert kubernetes["resources"] == {"source": "kubelet_checkpoint", "allocatable": {"nvidia.com/gpu": 2}, "capacity": {}}
    assert facts["errors"][0]["call"] == "kubectl get node gpu-node-1"
    assert "Forbidden" in facts["errors"][0]["reason"]


def test_kubectl_missing_is_an_error_entry():
    facts = new_facts()
    kubernetes = k8s_sharing.collect_kubernetes(node_host(kubectl=False), facts,
                                                k8s_sharing.KubernetesOptions(use_kubectl=True), 10)
    assert kubernetes["status"] == "partial" and facts["errors"][0]["call"] == "kubectl"
    assert kubernetes["resources"] is None and kubernetes["sharing"] is None


def test_kubectl_not_allowed_is_not_run():
    facts = new_facts()
    kubernetes = k8s_sharing.collect_kubernetes(node_host(), facts, k8s_sharing.KubernetesOptions(), 10)
    assert kubernetes["status"] == "complete" and facts["errors"] == [] and kubernetes["resources"] is None


# ---------------------------------------------------------------- the public corpus, read in place

def test_corpus_describe_node_time_slicing(corpus):
    parsed = k8s_sharing.parse_describe_node(corpus.read_realdata(
        "kubectl-describe-node-excerpt_tesla-t4x4_time-slicing-replicas4_nvidia-cloud-native-docs.txt"))
    assert parsed["allocatable"] == {"nvidia.com/gpu": 16} and parsed["capacity"] == {"nvidia.com/gpu": 16}
    assert parsed["labels"]["nvidia.com/gpu.replicas"] == "4" and parsed["labels"]["nvidia.com/gpu.count"] == "4"


def test_corpus_describe_node_renamed_shared(corpus):
    parsed = k8s_sharing.parse_describe_node(corpus.read_realdata(
        "kubectl-describe-node-excerpt_tesla-t4x4_time-slicing-renamed-gpu.shared_nvidia-cloud-native-docs.txt"))
    assert parsed["allocatable"] == {"nvidia.com/gpu": 0, "nvidia.com/gpu.shared": 16}
    assert parsed["labels"]["nvidia.com/gpu.product"] == "Tesla-T4"


def test_corpus_describe_node_mig_mixed(corpus):
    parsed = k8s_sharing.parse_describe_node(corpus.read_realdata(
        "kubectl-describe-node-excerpt_a100-sxm4-40gb_mig-mixed_nvidia-cloud-native-docs.txt"))
    assert parsed["allocatable"] == {"nvidia.com/mig-1g.5gb": 1, "nvidia.com/mig-2g.10gb": 1, "nvidia.com/mig-3g.20gb": 1}


@pytest.mark.parametrize("name, strategy, count", [
    ("k8s-node-labels-json_h100-80gb-hbm3_mig-all-disabled_nvidia-cloud-native-docs.json", "single", "1"),
    ("k8s-node-labels-json_h100-80gb-hbm3_mig-mixed-all-balanced_nvidia-cloud-native-docs.json", "mixed", "1"),
    ("k8s-node-labels-json-nvidia-only_a100-sxm4-40gb-dgx_mig-mixed_nvidia-cloud-native-docs.json", "mixed", "1"),
])
def test_corpus_node_labels(corpus, name, strategy, count):
    labels = k8s_sharing.nvidia_labels(json.loads(corpus.read_realdata(name)))
    assert labels["nvidia.com/mig.strategy"] == strategy and labels["nvidia.com/gpu.count"] == count
    assert all(key.startswith("nvidia.com/") for key in labels)


def test_corpus_mixed_labels_count_mig_devices(corpus):
    labels = k8s_sharing.nvidia_labels(json.loads(corpus.read_realdata(
        "k8s-node-labels-json_h100-80gb-hbm3_mig-mixed-all-balanced_nvidia-cloud-native-docs.json")))
    counts = {key[len("nvidia.com/"):-len(".count")]: int(value) for key, value in labels.items()
              if key.startswith("nvidia.com/mig-") and key.endswith(".count")}
    assert counts == {"mig-1g.10gb": 2, "mig-2g.20gb": 1, "mig-3g.40gb": 1}


def test_corpus_reference_examples_parse(corpus):
    with open(corpus.reference("k8s_device_plugin_sharing.yaml")) as handle:
        examples = yaml.safe_load(handle)["sharing"]["examples"]
    strategies = [k8s_sharing.sharing_from_config(example, "reference")["strategy"] for example in examples]
    assert strategies == ["time_slicing", "mps", "time_slicing"]
    for example in examples:
        text = yaml.safe_dump(example, default_flow_style=False)
        assert simple_yaml.load_without_pyyaml(text) == example
