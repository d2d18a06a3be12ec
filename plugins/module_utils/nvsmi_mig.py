# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""MIG layout from the text tables of ``nvidia-smi mig -lgi`` and ``-lci``.

nvidia-smi has no XML form of these listings, so each table row is matched by a
regular expression on its own; borders, headers and wrapped second lines are
skipped. Profile names are given without nvidia-smi's "MIG " prefix ("3g.20gb"),
the spelling mig-parted configs use.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re

from ansible_collections.gpufleet.core.plugins.module_utils.facts_model import add_error

# | GPU  Name  Profile-ID  Instance-ID  Start:Size |
_LGI_ROW = re.compile(r"^\|\s*(\d+)\s+([^\d\s].*?)\s+(\d+)\s+(\d+)\s+(\d+):(\d+)\s*\|\s*$")
# | GPU  GPU-instance-ID  Name  Profile-ID  Instance-ID  Start:Size |
_LCI_ROW = re.compile(r"^\|\s*(\d+)\s+(\d+)\s+([^\d\s].*?)\s+(\d+)\s+(\d+)\s+(\d+):(\d+)\s*\|\s*$")

_EMPTY_LISTING_MARKERS = ("No GPU instances found", "No compute instances found", "No MIG-enabled devices found")


def profile_name(printed):
    """'MIG 3g.20gb' -> '3g.20gb'."""
    name = printed.strip()
    if name.upper().startswith("MIG "):
        name = name[4:].strip()
    return name


def _placement(start, size):
    return {"start": int(start), "size": int(size)}


def _table_rows(text):
    return [line.strip() for line in (text or "").splitlines() if line.strip().startswith("|")]


def parse_lgi(text):
    """GPU instances: [{gpu, id, profile_id, profile_name, placement}]."""
    instances = []
    for line in _table_rows(text):
        match = _LGI_ROW.match(line)
        if match:
            gpu, name, profile_id, instance_id, start, size = match.groups()
            instances.append({
                "gpu": int(gpu), "id": int(instance_id), "profile_id": int(profile_id),
                "profile_name": profile_name(name), "placement": _placement(start, size),
            })
    return instances


def parse_lci(text):
    """Compute instances: [{gpu, gpu_instance_id, id, profile_id, profile_name, placement}]."""
    instances = []
    for line in _table_rows(text):
        match = _LCI_ROW.match(line)
        if match:
            gpu, gi_id, name, profile_id, instance_id, start, size = match.groups()
            instances.append({
                "gpu": int(gpu), "gpu_instance_id": int(gi_id), "id": int(instance_id),
                "profile_id": int(profile_id), "profile_name": profile_name(name),
                "placement": _placement(start, size),
            })
    return instances


def _is_empty_listing(text):
    return any(marker in text for marker in _EMPTY_LISTING_MARKERS)


def _run_listing(host, facts, path, flag, timeout):
    """Output of `nvidia-smi mig FLAG`; '' when it lists nothing; None (and an error) when it failed."""
    call = "nvidia-smi mig %s" % flag
    result = host.run([path, "mig", flag], timeout)
    if result.timed_out or result.missing:
        add_error(facts, None, call, result.describe_failure(), None)
        return None
    output = "%s\n%s" % (result.stdout or "", result.stderr or "")
    if _is_empty_listing(output):
        return ""
    if result.rc != 0:
        add_error(facts, None, call, result.describe_failure(), result.rc)
        return None
    return result.stdout or ""


def _compute_instances_of(compute_instances, gpu_index, gi_id):
    return [
        {"id": ci["id"], "profile_id": ci["profile_id"], "profile_name": ci["profile_name"],
         "placement": ci["placement"]}
        for ci in compute_instances if ci["gpu"] == gpu_index and ci["gpu_instance_id"] == gi_id
    ]


def _gpu_instance_record(gi, compute_instances, memory_by_gi):
    return {
        "id": gi["id"], "profile_id": gi["profile_id"], "profile_name": gi["profile_name"],
        "placement": gi["placement"], "memory_mib": memory_by_gi.get(gi["id"]),
        "compute_instances": _compute_instances_of(compute_instances, gi["gpu"], gi["id"]),
    }


def _report_unrecognised(facts, flag, text, rows):
    if not rows and text.strip():
        add_error(facts, None, "nvidia-smi mig %s" % flag, "unrecognised output: %s" % text.strip().splitlines()[0][:200])


def collect_mig_layout(host, facts, timeout, gi_memory_mib=None):
    """Fills gpus[].mig.gpu_instances from `nvidia-smi mig -lgi` and `-lci`, matched by GPU index.

    gi_memory_mib maps a GPU's pci_bus_id to {gpu instance id: MiB} (what the XML report's
    mig_devices say); an instance not in it gets memory_mib None. Returns False when the
    GPU instances could not be listed; every failure is in facts["errors"].
    """
    path = host.find_bin("nvidia-smi")
    if not path:
        add_error(facts, None, "nvidia-smi mig -lgi", "nvidia-smi not found")
        return False
    lgi_text = _run_listing(host, facts, path, "-lgi", timeout)
    if lgi_text is None:
        return False
    gpu_instances = parse_lgi(lgi_text)
    _report_unrecognised(facts, "-lgi", lgi_text, gpu_instances)
    compute_instances = []
    if gpu_instances:
        lci_text = _run_listing(host, facts, path, "-lci", timeout)
        compute_instances = parse_lci(lci_text or "")
        _report_unrecognised(facts, "-lci", lci_text or "", compute_instances)
    _attach_instances(facts, gpu_instances, compute_instances, gi_memory_mib or {})
    return True


def _attach_instances(facts, gpu_instances, compute_instances, gi_memory_mib):
    by_index = dict((gpu["index"], gpu) for gpu in facts["gpus"])
    layouts = dict((gpu["index"], []) for gpu in facts["gpus"] if gpu["mig"]["mode_current"])
    for gi in gpu_instances:
        gpu = by_index.get(gi["gpu"])
        if gpu is None:
            add_error(facts, gi["gpu"], "nvidia-smi mig -lgi", "GPU %d is not in the nvidia-smi -q -x report" % gi["gpu"])
            continue
        memory_by_gi = gi_memory_mib.get(gpu["pci_bus_id"], {})
        layouts.setdefault(gi["gpu"], []).append(_gpu_instance_record(gi, compute_instances, memory_by_gi))
    for index, layout in layouts.items():
        by_index[index]["mig"]["gpu_instances"] = layout
