# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The argument specs several modules (and the gpu_facts action plugin) share, each documented once by its twin
in plugins/doc_fragments/ (as kubernetes.core's args_common.py and its k8s_* fragments):

- nvidia_smi_spec: gpu_mode and mig_layout; doc fragment gpufleet.core.nvidia_smi.
- BMC_CONNECTION_SPEC: how to reach a BMC over the network (bmc_facts); doc fragment gpufleet.core.bmc_connection.
- inventory_bmc_spec(): the same options named bmc_*, none required, as gpu_facts (its action plugin) takes them from
  the inventory; doc fragment gpufleet.core.bmc_connection.inventory.
- kernel_log_spec(): where the kernel log is read from (gpu_facts, gpu_evidence); doc fragment gpufleet.core.kernel_log.
- run_folder_spec(): the run folder a controller step writes its reports in and the hosts it reports on (audit_report,
  incident_report, loadstep_report); doc fragments gpufleet.core.run_folder and gpufleet.core.run_folder.started_at.
- WINDOW_HOURS: how many hours back events count when nothing says otherwise (the kernel log gpu_facts reads, the
  BMC event log bmc_facts reads, the policy's thresholds.xid_window_hours). A module's documentation cannot import it,
  so tests/unit/plugins/doc_fragments/test_args_common.py checks every documented default against it.

Plain data, so a module's argument spec may import it on a host.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import copy

WINDOW_HOURS = 72

BMC_PROTOCOLS = ["ipmi", "redfish"]
IPMI_INTERFACES = ["lanplus", "lan"]
BMC_CONNECTION_SPEC = dict(
    address=dict(type="str", required=True),
    user=dict(type="str", required=True),
    password=dict(type="str", required=True, no_log=True),
    protocol=dict(type="str", default="ipmi", choices=BMC_PROTOCOLS),
    port=dict(type="int"),
    interface=dict(type="str", default="lanplus", choices=IPMI_INTERFACES),
    cipher_suite=dict(type="int"),
)
INVENTORY_BMC_PREFIX = "bmc_"

KERNEL_LOG_SOURCES = ("auto", "journalctl", "dmesg", "files")


def inventory_bmc_spec():
    """BMC_CONNECTION_SPEC with each option named bmc_<option> and none required: a host the inventory gives no
    BMC is not read over the network."""
    spec = {}
    for name, argument in BMC_CONNECTION_SPEC.items():
        argument = copy.deepcopy(argument)
        argument.pop("required", None)
        spec[INVENTORY_BMC_PREFIX + name] = argument
    return spec


def kernel_log_spec():
    """The options that say where the kernel log is read from."""
    return dict(
        kernel_log_source=dict(type="str", default="auto", choices=list(KERNEL_LOG_SOURCES)),
        kernel_log_files=dict(type="list", elements="path", default=[]),
    )


def nvidia_smi_spec(timeout=60):
    """The options of the modules that change GPUs with nvidia-smi; timeout is the module's default."""
    return dict(
        nvidia_smi=dict(type="path"),
        timeout=dict(type="int", default=timeout),
    )


def run_folder_spec(started_at=True):
    """The options of a step that writes a run's reports: its hosts, its run folder and the report root that holds
    it, and (started_at) when the run started."""
    spec = dict(
        hosts=dict(type="list", elements="str", required=True),
        run_dir=dict(type="path", required=True),
        report_root=dict(type="path", required=True),
    )
    if started_at:
        spec["started_at"] = dict(type="str", required=True)
    return spec
