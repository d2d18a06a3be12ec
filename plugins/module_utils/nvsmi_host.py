# -*- coding: utf-8 -*-
# Copyright (c) gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the modules that change GPUs with nvidia-smi share: reading the GPUs, selecting them, refusing the ones
that processes use (or whose process list is unknown), and the diff text.

Their shared options are args_common.nvidia_smi_spec, documented once in the doc fragment gpufleet.core.nvidia_smi.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.core.plugins.module_utils.facts_model import new_facts
from ansible_collections.gpufleet.core.plugins.module_utils.gpu_processes import (
    RecordingHost, describe_unknown, mark_unknown)
from ansible_collections.gpufleet.core.plugins.module_utils.nvsmi_xml import collect_nvidia_smi


LOST_EXIT = 15  # nvidia-smi's exit status when it could not open a GPU that is lost (NVML_ERROR_GPU_IS_LOST)


class NvidiaSmiHostError(Exception):
    """Stops the run with this message; each module's error derives from it."""


def read_gpus(host, timeout, what, require_complete=False, lost_answer=False):
    """{index: gpus[] fact} from nvidia-smi -q -x (and the MIG listings); NvidiaSmiHostError naming `what`
    when there is no report, or with require_complete, when any call of the collection failed.

    A GPU whose process list the report did not give completely has "processes" None (unknown). lost_answer: the
    exit status nvidia-smi gives for lost GPUs (15, each lost GPU named) leaves the GPUs that answered known."""
    facts = new_facts()
    recording = RecordingHost(host)
    if not collect_nvidia_smi(recording, facts, timeout) or (require_complete and facts["errors"]):
        reasons = "; ".join("%s: %s" % (error["call"], error["reason"]) for error in facts["errors"])
        raise NvidiaSmiHostError("cannot read %s: %s" % (what, reasons or "nvidia-smi gave no report"))
    if lost_answer:
        facts["errors"] = errors_beside_lost_gpus(facts)
    mark_unknown(facts, recording.last_query_xml)
    return dict((gpu["index"], gpu) for gpu in facts["gpus"])


def errors_beside_lost_gpus(facts):
    """The facts' errors less nvidia-smi's exit status 15 (NVML's "GPU is lost") when lost GPUs explain it."""
    if not any(gpu.get("lost") for gpu in facts["gpus"]):
        return facts["errors"]
    return [error for error in facts["errors"] if not (error.get("gpu") is None and error.get("code") == LOST_EXIT)]


def check_present(gpus, indexes):
    """NvidiaSmiHostError naming the indexes the host does not have."""
    missing = sorted(set(indexes) - set(gpus))
    if missing:
        raise NvidiaSmiHostError("GPU %s not found on this host (it has %s)" % (
            ", ".join(map(str, missing)), ", ".join(map(str, sorted(gpus))) or "no GPU"))


def selected(gpus, wanted_indexes):
    """Sorted indexes to manage: every GPU when wanted_indexes is None."""
    if wanted_indexes is None:
        return sorted(gpus)
    check_present(gpus, wanted_indexes)
    return sorted(set(wanted_indexes))


def pids(gpu):
    return sorted(process["pid"] for process in gpu.get("processes") or [])


def processes_known(gpu):
    return isinstance(gpu.get("processes"), list)


def unknown_among(indexes, gpus):
    """{index: why its process list is unknown} of the given GPUs."""
    return dict((index, gpus[index]["processes_unknown"]) for index in indexes if not processes_known(gpus[index]))


def busy_among(indexes, gpus):
    """{index: pids} of the given GPUs that processes use."""
    return dict((index, pids(gpus[index])) for index in indexes if pids(gpus[index]))


def refuse_unknown(unknown, change, advice):
    """NvidiaSmiHostError: the processes on GPUs whose `change` must change are unknown."""
    raise NvidiaSmiHostError(
        "the processes on GPUs whose %s must change are unknown (%s); nothing was changed. An unread process list "
        "is not an idle GPU%s" % (change, describe_unknown(unknown), advice))


def refuse_busy(busy, change, advice):
    """NvidiaSmiHostError: processes use GPUs whose `change` must change."""
    described = "; ".join("GPU %d: pids %s" % (index, ", ".join(map(str, found))) for index, found in sorted(busy.items()))
    raise NvidiaSmiHostError("processes use GPUs whose %s must change (%s); nothing was changed. %s"
                             % (change, described, advice))


def on_off(value, otherwise):
    return {True: "on", False: "off"}.get(value, otherwise)


def diff_text(by_index, describe):
    """One "gpu N: ..." line per GPU, in index order; describe(values) says the rest of the line."""
    return "".join("gpu %s: %s\n" % (index, describe(values)) for index, values in sorted(by_index.items()))


def stringify(by_index):
    """The same dict with string keys, as module results carry them."""
    return dict((str(index), values) for index, values in by_index.items())
