# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Kubernetes inputs as they are captured, read as pure functions of their text: a node (`kubectl get node -o
json` or `-o yaml`, a List of nodes, or a pasted fragment of its capacity), the NVIDIA device plugin's config (a
config file, or a ConfigMap whose keys hold configs as YAML text), DRA claims that share a GPU, the GPU Operator's
ClusterPolicy, and what says a GPU is unusable: the device plugin's log (devices marked unhealthy, Xids),
pods rejected at admission (`kubectl describe pod`), the GPU Operator's controller log (states not ready) and
`kubectl get pods` of its namespace (pods crash looping)."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
import re

from ansible_collections.gpufleet.core.plugins.module_utils import simple_yaml
from ansible_collections.gpufleet.core.plugins.module_utils.k8s_sharing import (
    nvidia_labels, parse_config_text, resources_from_node)

MAX_EVENTS = 64
FIELD_LIMIT = 120
# an nvidia.com/* resource name, not the full stop of the sentence it ends
RESOURCE = r"nvidia\.com/[\w.+-]*[\w+]"


# ---------------------------------------------------------------- documents

def load_documents(text):
    """The YAML or JSON documents of text ('---' separated); [] when it does not parse (a fragment)."""
    documents = []
    for part in re.split(r"(?m)^---[ \t]*$", text or ""):
        if not part.strip():
            continue
        try:
            documents.append(simple_yaml.load(part))
        except ValueError:
            return []
    return documents


def _nodes(documents):
    for document in documents:
        if not isinstance(document, dict):
            continue
        if document.get("kind") == "Node":
            yield document
        for item in document.get("items") or () if document.get("kind") == "List" else ():
            if isinstance(item, dict) and item.get("kind", "Node") == "Node":
                yield item


_SECTION = re.compile(r"^\s*(capacity|allocatable|labels)\s*:\s*$", re.IGNORECASE)
_QUANTITY = re.compile(r"^\s*(nvidia\.com/[\w.+-]+)\s*:\s*\"?(\d+)\"?\s*(?:#.*)?$")
_LABEL = re.compile(r"^\s*(nvidia\.com/[\w.+-]+)\s*[=:]\s*\"?([^\"\s#]*)\"?")


def resources_from_fragment(text):
    """{capacity, allocatable, labels} of the nvidia.com/* lines of a node pasted in part (YAML or `kubectl
    describe node`, with '...' elisions); lines before any section header are read as capacity."""
    result = {"capacity": {}, "allocatable": {}, "labels": {}}
    section = "capacity"
    for line in (text or "").splitlines():
        header = _SECTION.match(line)
        if header:
            section = header.group(1).lower()
            continue
        if section == "labels":
            label = _LABEL.match(line)
            if label:
                result["labels"][label.group(1)] = label.group(2)
            continue
        quantity = _QUANTITY.match(line)
        if quantity:
            result[section][quantity.group(1)] = int(quantity.group(2))
    return result


def node_from_text(text):
    """{name, resources: {source, allocatable, capacity}, labels} of a node listing (JSON or YAML, whole or a
    fragment: source kubectl either way), or None when the text holds no nvidia.com/* quantity nor label."""
    for node in _nodes(load_documents(text)):
        metadata = node.get("metadata") or {}
        resources = resources_from_node(node)
        return {"name": metadata.get("name"), "resources": resources, "labels": nvidia_labels(metadata.get("labels"))}
    fragment = resources_from_fragment(text)
    if not any(fragment.values()):
        return None
    return {"name": None, "labels": fragment["labels"],
            "resources": {"source": "kubectl", "allocatable": fragment["allocatable"],
                          "capacity": fragment["capacity"]}}


def device_plugin_configs(text, source):
    """{name: sharing facts} of a device plugin config file ({"config": ...}) or of each key of a ConfigMap
    (whose values are configs as YAML text: read twice)."""
    documents = load_documents(text)
    configmap = next((document for document in documents
                      if isinstance(document, dict) and document.get("kind") == "ConfigMap"), None)
    if configmap is None:
        return {"config": parse_config_text(text, source)}
    return dict((key, parse_config_text(str(value), source, key))
                for key, value in sorted((configmap.get("data") or {}).items()))


def dra_sharing(text):
    """[{claim, kind, strategy, active_thread_percentage, pinned_memory_limit}] of the GPU sharing that DRA
    ResourceClaims and ResourceClaimTemplates configure (NVIDIA DRA driver GpuConfig opaque parameters)."""
    found = []
    for document in load_documents(text):
        if not isinstance(document, dict) or document.get("kind") not in ("ResourceClaim", "ResourceClaimTemplate"):
            continue
        spec = document.get("spec") or {}
        spec = spec.get("spec") or spec if document["kind"] == "ResourceClaimTemplate" else spec
        for config in ((spec.get("devices") or {}).get("config")) or ():
            parameters = ((config or {}).get("opaque") or {}).get("parameters") or {}
            sharing = parameters.get("sharing") or {}
            if not sharing:
                continue
            mps = sharing.get("mpsConfig") or {}
            found.append({"claim": (document.get("metadata") or {}).get("name"), "kind": document["kind"],
                          "strategy": sharing.get("strategy"),
                          "active_thread_percentage": mps.get("defaultActiveThreadPercentage"),
                          "pinned_memory_limit": mps.get("defaultPinnedDeviceMemoryLimit")})
    return found


def cluster_policy(text):
    """{name, mig_strategy, components: {component: enabled}} of a GPU Operator ClusterPolicy, or None."""
    for document in load_documents(text):
        if isinstance(document, dict) and document.get("kind") == "ClusterPolicy":
            spec = document.get("spec") or {}
            components = dict((name, value.get("enabled")) for name, value in sorted(spec.items())
                              if isinstance(value, dict) and isinstance(value.get("enabled"), bool))
            return {"name": (document.get("metadata") or {}).get("name"),
                    "mig_strategy": (spec.get("mig") or {}).get("strategy"), "components": components}
    return None


# ---------------------------------------------------------------- what says a GPU is unusable

_MARKED = re.compile(r"'(?P<resource>[^']+)' device marked (?P<state>unhealthy|healthy): (?P<device>[\w./:-]+)")
_MARKED_OLD = re.compile(r"(?P<resource>" + RESOURCE + r"):(?P<device>[\w./:-]+) device marked (?P<state>unhealthy)")
_XID = re.compile(r"XidCriticalError: Xid=(?P<xid>\d+) on Device=(?P<device>[\w./:-]+?)[;,. ]")
_ADMISSION = re.compile(r"Allocate failed due to (?P<reason>.+?), which is unexpected")
_UNHEALTHY_RESOURCES = re.compile(r"cannot allocate unhealthy devices ((?:" + RESOURCE + r"(?:, )?)+)")
_TOO_LARGE = re.compile(r"request for '(?P<resource>" + RESOURCE + r"): (?P<count>\d+)' too large: maximum request "
                        r"size for shared resources is (?P<limit>\d+)")


def _admission(reason):
    too_large = _TOO_LARGE.search(reason)
    if too_large:
        return {"kind": "shared_request_too_large", "resources": [too_large.group("resource")],
                "requested": int(too_large.group("count")), "limit": int(too_large.group("limit")),
                "reason": reason[:300]}
    unhealthy = _UNHEALTHY_RESOURCES.search(reason)
    if unhealthy or "no healthy devices" in reason:
        return {"kind": "unhealthy_devices", "resources": unhealthy.group(1).split(", ") if unhealthy else [],
                "requested": None, "limit": None, "reason": reason[:300]}
    return {"kind": "other", "resources": sorted(set(re.findall(RESOURCE, reason))),
            "requested": None, "limit": None, "reason": reason[:300]}


def device_events(text):
    """{unhealthy: [{resource, device, xid}], recovered: [device], admission_failures: [...]} of a device plugin
    log (plain, or as the container runtime writes it), kubelet lines or `kubectl describe pod` events. A device
    marked healthy after it was marked unhealthy is recovered, not unhealthy."""
    state, xids, order, failures = {}, {}, [], []
    for line in (text or "").splitlines():
        for pattern in (_MARKED, _MARKED_OLD):
            marked = pattern.search(line)
            if marked:
                device = marked.group("device")[:FIELD_LIMIT]
                if device not in state:
                    order.append(device)
                state[device] = (marked.group("resource")[:FIELD_LIMIT], marked.group("state"))
                break
        xid = _XID.search(line)
        if xid:
            xids[xid.group("device")[:FIELD_LIMIT]] = int(xid.group("xid"))
        admission = _ADMISSION.search(line)
        if admission and len(failures) < MAX_EVENTS:
            failures.append(_admission(admission.group("reason")))
    unhealthy = [{"resource": state[device][0], "device": device, "xid": xids.get(device)}
                 for device in order if state[device][1] == "unhealthy"]
    recovered = [device for device in order if state[device][1] == "healthy"]
    return {"unhealthy": unhealthy[:MAX_EVENTS], "recovered": recovered[:MAX_EVENTS],
            "admission_failures": failures}


_STATES_NOT_READY = re.compile(r"ClusterPolicy is not ready, states not ready: \[([^\]]*)\]")


def operator_status(text):
    """{ready, states_not_ready, steps_not_ready} of the GPU Operator's controller log, JSON lines or the
    console encoding: ready is False when the last word on the ClusterPolicy says it is not, True when it says
    it is, None when the log says neither."""
    ready, states, steps = None, [], 0
    for line in (text or "").splitlines():
        message = line
        if line.lstrip().startswith("{"):
            try:
                record = json.loads(line)
            except ValueError:
                record = None
            if isinstance(record, dict):
                message = str(record.get("msg") or "")
        not_ready = _STATES_NOT_READY.search(message)
        if not_ready:
            ready, states = False, [state[:FIELD_LIMIT] for state in not_ready.group(1).split()[:MAX_EVENTS]]
        elif "ClusterPolicy step wasn't ready" in message:
            steps += 1
            ready = False
        elif re.search(r"ClusterPolicy is ready", message):
            ready, states = True, []
    return {"ready": ready, "states_not_ready": states, "steps_not_ready": steps}


_POD_ROW = re.compile(r"^(?P<name>\S+)\s+(?P<ready>\d+)/(?P<want>\d+)\s+(?P<status>\S+)\s+(?P<restarts>\d+)"
                      r"(?:\s+\([^)]*\))?\s+(?P<age>\S+)\s*$")


def restarting_from_pods(text):
    """The same list as restarting_containers of a captured `kubectl get pods` table (per pod, not container)."""
    return [{"pod": pod["name"], "container": None, "restarts": pod["restarts"]} for pod in pods_not_running(text)
            if pod["restarts"] > 0]


def pods_not_running(text):
    """[{name, ready, status, restarts}] of the pods of a `kubectl get pods` table that are not all ready or not
    Running/Completed (RESTARTS may read "57 (12s ago)")."""
    found = []
    for line in (text or "").splitlines():
        row = _POD_ROW.match(line.strip())
        if not row:
            continue
        healthy = row.group("status") in ("Running", "Completed", "Succeeded") and (
            row.group("ready") == row.group("want") or row.group("status") != "Running")
        if not healthy:
            found.append({"name": row.group("name"), "ready": "%s/%s" % (row.group("ready"), row.group("want")),
                          "status": row.group("status"), "restarts": int(row.group("restarts"))})
    return found


# ---------------------------------------------------------------- collection: the device plugin's own log

POD_LOG_FOLDER = "/var/log/pods"
MAX_LOG_FILES = 8
MAX_LOG_CHARS = 1024 * 1024
# pod folders are <namespace>_<pod>_<uid>: the device plugin's pods, and the GPU Operator's controller (a
# Deployment's pod: gpu-operator-<replicaset hash>-<suffix>, not its node-feature-discovery pods)
DEVICE_PLUGIN_POD = re.compile(r"^[^_]+_nvidia-device-plugin[\w-]*_")
OPERATOR_POD = re.compile(r"^[^_]+_gpu-operator-[0-9a-f]{5,10}-[0-9a-z]{5}_")
# the GPU stack's pods (the operator's namespace, or NVIDIA's and feature discovery's pods anywhere)
GPU_STACK_POD = re.compile(r"^(?:(?:gpu-operator|nvidia-gpu-operator|nvidia-device-plugin)_|[^_]+_(?:nvidia-|gpu-feature-"
                           r"discovery|gpu-operator))")
MAX_RESTARTING = 32


def _log_number(name):
    head = name.split(".", 1)[0]
    return (0, int(head)) if head.isdigit() else (1, name)


def pod_log_files(host, pod_pattern, folder=POD_LOG_FOLDER):
    """The container logs of the pods whose folder matches pod_pattern on this node (/var/log/pods/<ns>_<pod>_
    <uid>/<container>/N.log, the kubelet's layout), oldest first, at most MAX_LOG_FILES."""
    files = []
    for pod in host.listdir(folder) or ():
        if not pod_pattern.match(pod):
            continue
        for container in host.listdir("%s/%s" % (folder, pod)) or ():
            names = sorted((name for name in host.listdir("%s/%s/%s" % (folder, pod, container)) or ()
                            if name.endswith(".log")), key=_log_number)
            files.extend("%s/%s/%s/%s" % (folder, pod, container, name) for name in names)
    return files[-MAX_LOG_FILES:]


def _read_logs(host, files):
    """(text of the files, the newest MAX_LOG_CHARS; True when every one was read)."""
    texts = [host.read_text(path) for path in files]
    return "\n".join(text for text in texts if text)[-MAX_LOG_CHARS:], all(text is not None for text in texts)


def new_device_health(status="not_read"):
    return {"status": status, "sources": [], "unhealthy": [], "recovered": [], "admission_failures": [],
            "operator": None, "restarting": []}


def restarting_containers(host, folder=POD_LOG_FOLDER):
    """[{pod, container, restarts}] of the GPU stack's containers that restarted: the kubelet names a
    container's log after its restart count (N.log), so the highest N is how often it restarted."""
    found = []
    for pod in host.listdir(folder) or ():
        if not GPU_STACK_POD.match(pod):
            continue
        name = pod.split("_")[1] if pod.count("_") >= 2 else pod
        for container in host.listdir("%s/%s" % (folder, pod)) or ():
            counts = [int(entry.split(".", 1)[0]) for entry in host.listdir("%s/%s/%s" % (folder, pod, container)) or ()
                      if entry.split(".", 1)[0].isdigit()]
            if counts and max(counts) > 0:
                found.append({"pod": name, "container": container, "restarts": max(counts)})
    return sorted(found, key=lambda item: -item["restarts"])[:MAX_RESTARTING]


def read_device_health(host):
    """kubernetes.device_health: the devices the device plugin's log marks unhealthy (and healthy again), and
    what the GPU Operator's controller says of its ClusterPolicy when it runs on this node."""
    files = pod_log_files(host, DEVICE_PLUGIN_POD)
    operator_files = pod_log_files(host, OPERATOR_POD)
    restarting = restarting_containers(host)
    if not files and not operator_files:
        record = new_device_health("absent")
        record["restarting"] = restarting
        return record
    text, whole = _read_logs(host, files)
    operator_text, operator_whole = _read_logs(host, operator_files)
    record = new_device_health("read" if whole and operator_whole else "partial")
    record["sources"] = files + operator_files
    record.update(device_events(text))
    if operator_files:
        record["operator"] = operator_status(operator_text)
    record["restarting"] = restarting
    return record
