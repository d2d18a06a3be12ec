# -*- coding: utf-8 -*-
# Copyright (c) gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""GPU reset (gpufleet.core.gpu_reset, docs/quarantine.md "GPU reset"): refuse while GPU processes run, reset each
GPU with nvidia-smi -r, then check that it answers nvidia-smi -q again.

A GPU is named to nvidia-smi by its PCI bus id, never by its index: nvidia-smi numbers only the GPUs it can open,
so while one is lost the others' indexes shift, and a lost GPU has a bus id but no index of its own. The indexes
this module takes and returns are the audit's: positions in PCI order, lost GPUs included (nvsmi_xml)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import xml.etree.ElementTree as ET

from ansible_collections.gpufleet.core.plugins.module_utils.facts_model import dcgm_pci_bus_id
from ansible_collections.gpufleet.core.plugins.module_utils.gpu_processes import describe_unknown
from ansible_collections.gpufleet.core.plugins.module_utils.nvsmi_host import (
    NvidiaSmiHostError, check_present, pids, processes_known, read_gpus)

ALL = "all"
WHAT_IS_READ = "the GPUs and their processes"


class GpuResetRequestError(NvidiaSmiHostError):
    """The task's options name what this host does not have; the module fails with this message."""


def bus_key(bus_id):
    """A PCI bus id in nvidia-smi's spelling ("00000000:07:00.0"; the kernel writes "0000:07:00.0"); text that is
    no bus id, upper-cased as it is."""
    return dcgm_pci_bus_id(bus_id) or str(bus_id or "").strip().upper()


def wanted_indexes(option, gpus):
    """Sorted indexes of the GPUs to reset: option is "all" or a list of indexes (ints or digit strings)."""
    if option is None or (isinstance(option, str) and option.strip().lower() == ALL):
        return sorted(gpus)
    values = option if isinstance(option, list) else [option]
    indexes = []
    for value in values:
        text = str(value).strip()
        if not text.isdigit():
            raise GpuResetRequestError("gpus must be \"all\" or a list of GPU indexes, not %r" % (value,))
        indexes.append(int(text))
    check_present(gpus, indexes)
    return sorted(set(indexes))


def refusal(gpus, indexes):
    """Why the reset must not run (None: it may): a process on any GPU of the host (a reset takes the GPUs from
    under it, and on NVLink and NVSwitch systems a reset reaches the GPU's peers), or an unread process list of a
    GPU that answers. A lost GPU's processes cannot be read: that is why it is reset."""
    busy = dict((index, pids(gpu)) for index, gpu in gpus.items() if not gpu.get("lost") and pids(gpu))
    if busy:
        return "GPU processes run on this host (%s): drain the node and stop its GPU services first" % "; ".join(
            "GPU %d: pids %s" % (index, ", ".join(map(str, found))) for index, found in sorted(busy.items()))
    unknown = dict((index, gpus[index].get("processes_unknown")) for index in indexes
                   if not gpus[index].get("lost") and not processes_known(gpus[index]))
    if unknown:
        return "the processes on the GPUs are unknown (%s); an unread process list is not an idle GPU" % (
            describe_unknown(unknown))
    return None


def reset_args(gpu):
    return ["-r", "-i", bus_key(gpu["pci_bus_id"])]


def query_args(gpu):
    return ["-q", "-x", "-i", bus_key(gpu["pci_bus_id"])]


def command_text(args):
    return "nvidia-smi " + " ".join(args)


def answered(result, bus_id):
    """(True, "") when nvidia-smi -q -x reported the GPU (also when it exits 15 for another GPU that is still lost),
    else (False, why)."""
    try:
        root = ET.fromstring(result.stdout) if (result.stdout or "").strip() else None
    except ET.ParseError:
        root = None
    ids = [bus_key(gpu.get("id")) for gpu in root.findall("gpu")] if root is not None else []
    lost_here = bus_key(bus_id) in [bus_key(word.rstrip(":")) for word in (result.stderr or "").split()
                                    if word.count(":") >= 2]
    if bus_key(bus_id) in ids and not lost_here:
        return True, ""
    return False, "does not answer %s: %s" % (command_text(["-q", "-x", "-i", bus_key(bus_id)]), result.describe_failure())


def reset_one(host, nvidia_smi, gpu, timeout):
    """{index, pci_bus_id, result, detail} of one GPU's reset and check."""
    entry = {"index": gpu["index"], "pci_bus_id": bus_key(gpu["pci_bus_id"])}
    done = host.run([nvidia_smi] + reset_args(gpu), timeout)
    if done.rc != 0:
        output = " ".join(line.strip() for line in (done.stdout or "").splitlines() if line.strip())
        return dict(entry, result="failed", detail="%s failed: %s%s" % (
            command_text(reset_args(gpu)), done.describe_failure(), (" (%s)" % output[:300]) if output else ""))
    ok, why = answered(host.run([nvidia_smi] + query_args(gpu), timeout), gpu["pci_bus_id"])
    if not ok:
        return dict(entry, result="failed", detail="reset, but the GPU %s" % why)
    return dict(entry, result="passed", detail="reset; it answers nvidia-smi -q again")


def reset_gpus(host, nvidia_smi, option, timeout, check_mode=False):
    """The module's result: outcome passed | failed | refused (would_reset in check mode), per GPU results, the
    commands run (or that would run). GpuResetRequestError for options this host cannot satisfy."""
    try:
        gpus = read_gpus(host, timeout, WHAT_IS_READ, lost_answer=True)
    except NvidiaSmiHostError as exc:
        return refused([], "cannot verify that the GPUs are idle: %s" % exc)
    indexes = wanted_indexes(option, gpus)
    if not indexes:
        raise GpuResetRequestError("this host has no GPU to reset")
    targets = [gpus[index] for index in indexes]
    unnamed = [gpu["index"] for gpu in targets if not gpu.get("pci_bus_id")]
    if unnamed:
        return refused([], "GPU %s has no PCI bus id to name it to nvidia-smi" % ", ".join(map(str, unnamed)))
    why = refusal(gpus, indexes)
    if why:
        return refused(targets, why)
    commands = [command_text(reset_args(gpu)) for gpu in targets]
    if check_mode:
        return {"changed": True, "outcome": "would_reset", "commands": commands, "reason": None,
                "gpus": [{"index": gpu["index"], "pci_bus_id": bus_key(gpu["pci_bus_id"]), "result": "would_reset",
                          "detail": "lost" if gpu.get("lost") else ""} for gpu in targets],
                "msg": "would reset GPU %s" % ", ".join(str(gpu["index"]) for gpu in targets)}
    results = [reset_one(host, nvidia_smi, gpu, timeout) for gpu in targets]
    failed = [entry for entry in results if entry["result"] == "failed"]
    return {"changed": True, "outcome": "failed" if failed else "passed", "commands": commands, "reason": None,
            "gpus": results,
            "msg": ("reset failed on GPU %s" % ", ".join(str(entry["index"]) for entry in failed)) if failed
            else "GPU %s reset and answering" % ", ".join(str(entry["index"]) for entry in results)}


def refused(targets, reason):
    return {"changed": False, "outcome": "refused", "reason": reason, "commands": [],
            "gpus": [{"index": gpu["index"], "pci_bus_id": bus_key(gpu["pci_bus_id"]) if gpu.get("pci_bus_id") else None,
                      "result": "refused", "detail": reason}
                     for gpu in targets],
            "msg": "GPU reset refused: %s" % reason}
