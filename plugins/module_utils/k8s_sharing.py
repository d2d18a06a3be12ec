# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The `kubernetes` facts of a Kubernetes node: how the NVIDIA device plugin shares the GPUs (its config
file or ConfigMap: time slicing or MPS replicas, renameByDefault, failRequestsGreaterThanOne, the MIG
strategy) and what the node advertises (allocatable and capacity of nvidia.com/* resources, from
kubectl, else the devices the plugin registered with the kubelet). Read only; kubectl runs only when
the module's option allows it, with a request timeout."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json

# Any of these on a host makes it a Kubernetes node.
KUBELET_MARKERS = ("/var/lib/kubelet/config.yaml", "/etc/kubernetes/kubelet.conf", "/var/lib/kubelet/kubeconfig")
DEVICE_PLUGIN_FOLDER = "/var/lib/kubelet/device-plugins"
KUBELET_CHECKPOINT = DEVICE_PLUGIN_FOLDER + "/kubelet_internal_checkpoint"
DEFAULT_CONFIG_FILES = ("/etc/nvidia-device-plugin/config.yaml",)
RESOURCE_PREFIX = "nvidia.com/"
CONFIG_LABEL = "nvidia.com/device-plugin.config"
MAX_LABELS = 128
MAX_CONFIG_BYTES = 256 * 1024


def new_kubernetes():
    return {"node": False, "node_name": None, "status": "not_a_node", "sharing": None,
            "resources": None, "labels": {}, "device_health": None, "errors": []}


# ---------------------------------------------------------------- the device plugin's config

def _replicated(section):
    """[{name, replicas}] of a timeSlicing / mps section."""
    resources = []
    for entry in (section or {}).get("resources") or ():
        if isinstance(entry, dict) and entry.get("name"):
            replicas = entry.get("replicas")
            resources.append({"name": str(entry["name"]),
                              "replicas": replicas if isinstance(replicas, int) and not isinstance(replicas, bool) else None})
    return resources


def _shares(resources):
    return any((item["replicas"] or 0) > 1 for item in resources)


def sharing_from_config(document, source, config_name=None):
    """The sharing facts of one device plugin config (a parsed v1 document). The active strategy is mps
    when mps has a resource with replicas > 1, else time_slicing when timeSlicing has, else none (the
    plugin's own order)."""
    sharing = {"source": source, "config_name": config_name, "version": None, "strategy": "none",
               "mig_strategy": None, "resources": [], "rename_by_default": None,
               "fail_requests_greater_than_one": None, "error": None}
    if not isinstance(document, dict):
        sharing["error"] = "the config is not a mapping"
        return sharing
    sharing["version"] = str(document.get("version") or "v1")
    flags = document.get("flags") or {}
    sharing["mig_strategy"] = flags.get("migStrategy") if isinstance(flags, dict) else None
    section = document.get("sharing") or {}
    if not isinstance(section, dict):
        section = {}
    mps, slicing = section.get("mps"), section.get("timeSlicing")
    if isinstance(mps, dict) and _shares(_replicated(mps)):
        chosen, sharing["strategy"] = mps, "mps"
    elif isinstance(slicing, dict) and _shares(_replicated(slicing)):
        chosen, sharing["strategy"] = slicing, "time_slicing"
    else:
        return sharing
    sharing["resources"] = _replicated(chosen)
    sharing["rename_by_default"] = bool(chosen.get("renameByDefault", False))
    fail = chosen.get("failRequestsGreaterThanOne")
    # MPS keeps its historical behaviour: requests greater than one fail unless the config says otherwise
    sharing["fail_requests_greater_than_one"] = bool(fail) if fail is not None else sharing["strategy"] == "mps"
    return sharing


def parse_config_text(text, source, config_name=None):
    # imported here: only a Kubernetes node with a device plugin config pays for compiling the YAML reader
    from ansible_collections.gpufleet.core.plugins.module_utils import simple_yaml
    try:
        document = simple_yaml.load(text)
    except ValueError as exc:
        sharing = sharing_from_config(None, source, config_name)
        sharing["error"] = "cannot be parsed: %s" % exc
        return sharing
    return sharing_from_config(document, source, config_name)


def config_from_configmap(configmap, wanted_key=None):
    """(config name, text) of a ConfigMap (`kubectl get configmap -o json`): the wanted key (the node's
    nvidia.com/device-plugin.config label), else its only key; (None, None) when neither fits."""
    data = (configmap or {}).get("data") or {}
    if wanted_key and wanted_key in data:
        return wanted_key, data[wanted_key]
    if len(data) == 1:
        return next(iter(data.items()))
    return None, None


# ---------------------------------------------------------------- what the node advertises

def _nvidia_quantities(mapping):
    result = {}
    for name, value in (mapping or {}).items():
        if not str(name).startswith(RESOURCE_PREFIX):
            continue
        try:
            result[name] = int(str(value))
        except ValueError:
            continue
    return result


def resources_from_node(node):
    """{source, allocatable, capacity} of `kubectl get node -o json` (only nvidia.com/* resources)."""
    status = (node or {}).get("status") or {}
    return {"source": "kubectl", "allocatable": _nvidia_quantities(status.get("allocatable")),
            "capacity": _nvidia_quantities(status.get("capacity"))}


def nvidia_labels(labels):
    chosen = sorted((key, str(value)) for key, value in (labels or {}).items() if str(key).startswith(RESOURCE_PREFIX))
    return dict(chosen[:MAX_LABELS])


def resources_from_checkpoint(text):
    """The devices the device plugin registered with the kubelet, per resource (the kubelet's
    device-manager checkpoint): what the node offers, healthy or not. None when the text is no checkpoint."""
    try:
        document = json.loads(text)
    except ValueError:
        return None
    data = document.get("Data") if isinstance(document, dict) else None
    registered = (data or {}).get("RegisteredDevices")
    if not isinstance(registered, dict):
        return None
    counts = {name: len(devices or ()) for name, devices in registered.items() if str(name).startswith(RESOURCE_PREFIX)}
    return {"source": "kubelet_checkpoint", "allocatable": counts, "capacity": {}}


def parse_describe_node(text):
    """{"capacity", "allocatable", "labels"} of `kubectl describe node` text (the nvidia.com/* lines)."""
    result = {"capacity": {}, "allocatable": {}, "labels": {}}
    section = None
    for line in (text or "").splitlines():
        stripped = line.strip()
        if line[:1] not in (" ", "\t") and stripped.endswith(":"):
            section = stripped[:-1].lower()
            continue
        if section == "labels" and "=" in stripped:
            key, value = stripped.split("=", 1)
            if key.startswith(RESOURCE_PREFIX):
                result["labels"][key] = value
        elif section in ("capacity", "allocatable") and ":" in stripped:
            key, value = stripped.split(":", 1)
            if key.startswith(RESOURCE_PREFIX):
                try:
                    result[section][key] = int(value.strip())
                except ValueError:
                    pass
    return result


# ---------------------------------------------------------------- collection

class KubernetesOptions:
    """What the module's options say: config files, ConfigMap (namespace/name), kubectl use, kubeconfig,
    node name."""

    def __init__(self, config_files=None, configmap=None, use_kubectl=False, kubeconfig=None, node_name=None):
        self.config_files = list(config_files) if config_files else list(DEFAULT_CONFIG_FILES)
        self.configmap = configmap
        self.use_kubectl = use_kubectl
        self.kubeconfig = kubeconfig
        self.node_name = node_name


def is_node(host):
    if any(host.read_text(path, 4096) is not None for path in KUBELET_MARKERS):
        return True
    return host.listdir(DEVICE_PLUGIN_FOLDER) is not None


def _exists(host, path):
    folder, _sep, name = path.rpartition("/")
    return name in (host.listdir(folder or "/") or ())


def _error(kubernetes, call, reason):
    kubernetes["errors"].append({"call": call, "reason": reason})


class _Kubectl:
    def __init__(self, host, path, kubeconfig, timeout):
        self.host, self.path, self.kubeconfig, self.timeout = host, path, kubeconfig, timeout

    def get_json(self, *args):
        """(document, None) or (None, reason)."""
        argv = [self.path, "--request-timeout=%ds" % max(1, int(self.timeout) - 1)]
        if self.kubeconfig:
            argv.append("--kubeconfig=%s" % self.kubeconfig)
        result = self.host.run(argv + ["get"] + list(args) + ["-o", "json"], self.timeout)
        if result.rc != 0:
            return None, result.describe_failure()
        try:
            return json.loads(result.stdout), None
        except ValueError:
            return None, "the output is not JSON"


def _node_name(host, options):
    if options.node_name:
        return options.node_name
    name = (host.read_text("/proc/sys/kernel/hostname") or "").strip().lower()
    return name or None


def _read_config_files(host, kubernetes, options):
    for path in options.config_files:
        text = host.read_text(path, MAX_CONFIG_BYTES)
        if text is not None:
            return parse_config_text(text, "file:%s" % path)
        if _exists(host, path):
            _error(kubernetes, "read %s" % path, "the file is there but cannot be read (permission)")
    return None


def _from_kubectl(kubectl, kubernetes, options):
    """Node resources and labels, then the ConfigMap's config; errors are entries, never failures."""
    node, reason = kubectl.get_json("node", kubernetes["node_name"])
    if reason:
        _error(kubernetes, "kubectl get node %s" % kubernetes["node_name"], reason)
    else:
        kubernetes["resources"] = resources_from_node(node)
        kubernetes["labels"] = nvidia_labels(((node or {}).get("metadata") or {}).get("labels"))
    if not options.configmap or kubernetes["sharing"] is not None:
        return
    namespace, _sep, name = options.configmap.rpartition("/")
    configmap, reason = kubectl.get_json("configmap", "-n", namespace or "default", name)
    if reason:
        _error(kubernetes, "kubectl get configmap %s" % options.configmap, reason)
        return
    key, text = config_from_configmap(configmap, kubernetes["labels"].get(CONFIG_LABEL))
    if text is None:
        _error(kubernetes, "kubectl get configmap %s" % options.configmap,
               "no config key to use: the node has no %s label naming one of %s" % (
                   CONFIG_LABEL, ", ".join(sorted((configmap.get("data") or {}))) or "no keys"))
        return
    kubernetes["sharing"] = parse_config_text(text, "configmap:%s" % options.configmap, key)


def collect_kubernetes(host, facts, options, timeout):
    """gather_subset kubernetes. A host that is no Kubernetes node gets node=false and nothing else."""
    kubernetes = new_kubernetes()
    facts["kubernetes"] = kubernetes
    if not is_node(host):
        return kubernetes
    kubernetes["node"] = True
    kubernetes["node_name"] = _node_name(host, options)
    kubernetes["sharing"] = _read_config_files(host, kubernetes, options)
    if options.use_kubectl:
        path = host.find_bin("kubectl")
        if path:
            _from_kubectl(_Kubectl(host, path, options.kubeconfig, timeout), kubernetes, options)
        else:
            _error(kubernetes, "kubectl", "kubectl is not installed (kubernetes_kubectl is true)")
    if kubernetes["resources"] is None:
        checkpoint = host.read_text(KUBELET_CHECKPOINT)
        if checkpoint is not None:
            kubernetes["resources"] = resources_from_checkpoint(checkpoint)
        elif _exists(host, KUBELET_CHECKPOINT):
            _error(kubernetes, "read %s" % KUBELET_CHECKPOINT, "the file is there but cannot be read (permission)")
    # imported here: k8s_inputs reads this module's parsers
    from ansible_collections.gpufleet.core.plugins.module_utils.k8s_inputs import read_device_health
    kubernetes["device_health"] = read_device_health(host)
    kubernetes["status"] = "partial" if kubernetes["errors"] else "complete"
    for error in kubernetes["errors"]:
        facts["errors"].append({"gpu": None, "call": error["call"], "reason": error["reason"], "code": None})
    return kubernetes
