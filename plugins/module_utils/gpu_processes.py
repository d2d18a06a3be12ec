# -*- coding: utf-8 -*-
# Copyright (c) gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which processes use the GPUs, and whether that is known at all.

Remediation refuses to change a GPU that processes use. An empty process list only means "idle" when the
list was actually read: a collection that failed, timed out or stopped halfway, a backend error on the
process query, or a report without a process section leaves it unknown, and unknown is never zero.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import xml.etree.ElementTree as ET

# Host-wide errors of these calls, per backend, mean its GPU list (and so the processes) is incomplete.
_BACKEND_CALLS = {"nvml": ("nvml", "import pynvml", "load "), "nvidia_smi": ("nvidia-smi -q", "nvidia_smi")}
_INCOMPLETE_COLLECTIONS = ("partial", "failed")


def _listing_calls(facts):
    """The calls whose host-wide failure leaves the GPU list incomplete: those of the backend that gave the
    facts (a backend tried before it and given up, such as NVML without pynvml, does not count), or of every
    backend when none answered."""
    source = facts.get("source")
    if source == "replay":
        source = facts.get("replay_of")
    if source in _BACKEND_CALLS:
        return _BACKEND_CALLS[source]
    return tuple(call for calls in _BACKEND_CALLS.values() for call in calls)


def _lists_gpus(call, listing_calls):
    call = (call or "").strip().lower()
    return any(call == prefix.strip() or call.startswith(prefix) for prefix in listing_calls)


def _add_reason(reasons, gpu, why):
    reasons[gpu] = "%s; %s" % (reasons[gpu], why) if gpu in reasons else why


def _about_processes(call):
    return "process" in (call or "").lower()


def unknown_processes(facts):
    """{gpu index or None (every GPU): why its process list is unknown} for gpu_facts-shaped facts.

    Empty when every GPU's process list was read. Unknown: the facts or their GPU list are missing; the
    collection is marked partial or failed; a host-wide error of the GPU listing (NVML, nvidia-smi -q);
    an error of a process query on one GPU; a GPU whose processes are missing or null.
    """
    if not isinstance(facts, dict):
        return {None: "no GPU facts were collected"}
    reasons = {}
    collection = facts.get("collection")
    status = collection.get("status") if isinstance(collection, dict) else collection
    if status in _INCOMPLETE_COLLECTIONS:
        reasons[None] = "the collection was %s" % status
    listing_calls = _listing_calls(facts)
    for error in facts.get("errors") or []:
        if not isinstance(error, dict):
            continue
        gpu, call = error.get("gpu"), error.get("call")
        if gpu is None and _lists_gpus(call, listing_calls):
            _add_reason(reasons, None, "%s failed: %s" % (call, error.get("reason")))
        elif gpu is not None and _about_processes(call):
            _add_reason(reasons, gpu, "%s failed: %s" % (call, error.get("reason")))
    gpus = facts.get("gpus")
    if not isinstance(gpus, list):
        reasons.setdefault(None, "the GPU list is missing")
        return reasons
    for gpu in gpus:
        if isinstance(gpu, dict) and not isinstance(gpu.get("processes"), list):
            reasons.setdefault(gpu.get("index"), "its process list is missing")
    return reasons


def gpus_without_process_section(xml_text):
    """Indexes of the <gpu> elements of an `nvidia-smi -q -x` report that have no <processes> element.

    Every GPU of a complete report has one (empty when idle); the parser reads a missing one as "no
    process", so callers that must not act on busy GPUs check the raw report with this. A report that does
    not parse names no GPU here: the parser has already failed on it.
    """
    if isinstance(xml_text, bytes):
        xml_text = xml_text.decode("utf-8", "replace")
    start = (xml_text or "").find("<nvidia_smi_log")
    end = (xml_text or "").rfind("</nvidia_smi_log>")
    if start < 0 or end < 0:
        return []
    try:
        root = ET.fromstring(xml_text[start:end + len("</nvidia_smi_log>")])
    except (ET.ParseError, ValueError):
        return []
    return [index for index, gpu in enumerate(root.findall("gpu")) if gpu.find("processes") is None]


def mark_unknown(facts, xml_text=None):
    """Sets "processes" to None and "processes_unknown" to the reason on every GPU of the facts whose process
    list is unknown (unknown_processes, and GPUs without a process section in the raw report)."""
    unknown = unknown_processes(facts)
    for index in gpus_without_process_section(xml_text):
        unknown.setdefault(index, "the nvidia-smi -q -x report has no process section for it")
    for gpu in facts.get("gpus") or []:
        why = unknown.get(gpu.get("index")) or unknown.get(None)
        if why:
            gpu["processes"] = None
            gpu["processes_unknown"] = why
    return facts


def process_pids(facts):
    """Sorted pids of every process the facts list on any GPU."""
    found = set()
    for gpu in (facts or {}).get("gpus") or []:
        for process in (gpu or {}).get("processes") or []:
            if isinstance(process, dict) and process.get("pid") is not None:
                found.add(process["pid"])
    return sorted(found)


def describe_unknown(reasons):
    """One line naming each GPU whose process list is unknown and why."""
    return "; ".join("%s: %s" % ("every GPU" if gpu is None else "GPU %s" % gpu, why)
                     for gpu, why in sorted(reasons.items(), key=lambda item: (item[0] is not None, item[0] or 0)))


class RecordingHost:
    """Wraps a host_io host and keeps the stdout of the last `nvidia-smi -q -x` it ran."""

    def __init__(self, host):
        self._host = host
        self.last_query_xml = None

    def run(self, argv, timeout, *args, **kwargs):
        result = self._host.run(argv, timeout, *args, **kwargs)
        if list(argv[1:3]) == ["-q", "-x"]:
            self.last_query_xml = result.stdout
        return result

    def __getattr__(self, name):
        return getattr(self._host, name)
