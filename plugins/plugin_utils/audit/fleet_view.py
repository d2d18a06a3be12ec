# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the fleet-wide steps of an audit read of one host's facts, so that the audit holds this instead of every
host's whole facts (a tenth of them for an 8-GPU host) while it reads the fleet's facts files one by one.

The per-host rules (diagnose_host) see the whole facts; what runs after them on many hosts at once sees this view:
the fleet rules (diagnose.fleet_findings: driver and sharing skew, framework skew), the correlation
(correlate.py: drivers, VBIOS, processes per GPU or MIG device), the run store's drift and trend rules
(rules/drift_trend.py, audit/record_step.py) and the baseline templates (store/baseline_template.py). A field
any of them reads must be kept here; tests/unit/plugins/plugin_utils/audit/test_run_stream.py checks that an
audit of views writes the same reports as an audit of the whole facts.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.gpufleet.core.plugins.plugin_utils.reports.coverage import host_inputs

# host-level parts only per-host rules and the facts file need (the large ones): left out of the view
HOST_PARTS_LEFT_OUT = frozenset(("kernel_log", "kernel_events", "host_pressure", "bmc", "nvidia_evidence", "errors",
                                 "inputs", "capture"))
# whole GPU fields kept: identity and label (store.identity.gpu_key, findings.gpu_label), drift, correlation
GPU_FIELDS = ("index", "name", "uuid", "serial", "pci_bus_id", "lost", "vbios_version", "persistence_mode",
              "compute_mode", "processes")
# GPU fields of which the view keeps some keys
GPU_SUBFIELDS = {"power": ("limit_w",), "ecc": ("mode_current",),
                 # the link an active check's bandwidth is compared on (rules/active_checks.py, below_peers)
                 "pcie": ("gen_max", "width_max")}


def gpu_view(gpu):
    if not isinstance(gpu, dict):
        return gpu
    view = {field: gpu[field] for field in GPU_FIELDS if field in gpu}
    for field, keys in GPU_SUBFIELDS.items():
        part = gpu.get(field)
        if isinstance(part, dict):
            view[field] = {key: part[key] for key in keys if key in part}
        elif field in gpu:
            view[field] = part
    mig = gpu.get("mig")
    if isinstance(mig, dict):
        view["mig"] = {"mode_current": mig.get("mode_current"),
                       "gpu_instances": [{"profile_name": instance.get("profile_name")}
                                         if isinstance(instance, dict) else instance
                                         for instance in mig.get("gpu_instances") or ()]}
    elif "mig" in gpu:
        view["mig"] = mig
    return view


def fleet_view(facts):
    """The part of a host's facts (None: None) that the fleet-wide steps read."""
    if not isinstance(facts, dict):
        return facts
    view = {key: value for key, value in facts.items() if key not in HOST_PARTS_LEFT_OUT and key != "gpus"}
    # the report's hosts.<host>.inputs, not the sources behind it
    view["coverage"] = host_inputs(facts)
    if "gpus" in facts:
        gpus = facts["gpus"]
        view["gpus"] = [gpu_view(gpu) for gpu in gpus] if isinstance(gpus, list) else gpus
    return view
