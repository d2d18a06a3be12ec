# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The policy's defaults: every key, with the value it has when no inventory variable sets it (docs/policy.md)."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type


UNIT_TYPES = ("service", "socket", "target", "timer", "path", "mount", "slice", "scope")
RESTART_VALUES = ("no", "on-success", "on-failure", "on-abnormal", "on-watchdog", "on-abort", "always")
CATALOG_TABLES = ("cuda_min_driver", "xid", "mig_profiles", "gpu_driver_support")
DRAIN_METHODS = ("none", "slurm", "kubernetes", "command")


SERVICE_DEFAULTS = {
    "gpus": "all",
    "workers_per_gpu": None,
    "workers_env": None,
    "workers_arg": None,
    "environment": {},
    "alloc_conf": None,
    "mps": {"active_thread_percentage": None, "pinned_device_mem_limit_mib": None},
    "restart": "on-failure",
    "restart_sec": 10,
    "start_limit_interval_sec": 600,
    "start_limit_burst": 5,
    "timeout_stop_sec": None,
    "runtime_max_sec": None,
    "recycle_calendar": None,
}

CUSTOM_RULE_DEFAULTS = {
    "severity": "warning",
    "scope": "host",
    "fix": None,
}
CUSTOM_RULE_REQUIRED = ("layer", "expression", "summary", "action")

DEFAULT_POLICY = {
    "driver": {
        "pin": None,
        "branch": None,
        "allow_skew": False,
        "package": None,
        "rollout": {
            "batches": [1, "10%", "100%"],
            "max_fail_percentage": 0,
            "reboot": True,
            "force": False,
            "drain": {"method": "none", "command": None, "undrain_command": None, "delegate_to": None},
        },
    },
    "cuda": {"toolkits_required": []},
    "gpus": {"expected_count": None},
    "thresholds": {
        "temperature_margin_c": 5,
        "memory_used_pct": 92,
        "retired_pages_warning": 32,
        "retired_pages_critical": 60,
        "pcie_replay_warning": 100,
        "aer_correctable_warning": 10,
        "nvlink_errors_warning": 1,
        "xid_window_hours": 72,
        "vbios_mismatch": True,
        # ASHRAE class A2's allowable maximum; DGX-class systems specify 30 C (docs/policy.md)
        "inlet_temperature_c": 35,
    },
    "persistence_mode": True,
    "compute_mode": None,
    "sharing": {"mode": None},
    "mig": {"config": None, "config_file": None, "selected": None, "allow_drain": False},
    "container_runtime": {"required": False},
    "fabric_manager": {"required": "auto"},
    "workload": {"max_processes_per_gpu": None, "restart_policy_required": True, "services": []},
    "catalogs": {table: {} for table in CATALOG_TABLES},
    "custom_rules": [],
    "report": {"fail_severity": "critical", "accept_unreachable": False},
    "remediation": {"batch_size": 1},
}

# Lists of entries identified by their "name": fragments merge them entry by entry instead of replacing them.
NAMED_LISTS = (("workload", "services"), ("custom_rules",))
