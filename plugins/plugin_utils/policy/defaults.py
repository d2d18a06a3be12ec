# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The policy's defaults: every key, with the value it has when no inventory variable sets it (docs/policy.md)."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.gpufleet.core.plugins.module_utils.args_common import WINDOW_HOURS


UNIT_TYPES = ("service", "socket", "target", "timer", "path", "mount", "slice", "scope")
RESTART_VALUES = ("no", "on-success", "on-failure", "on-abnormal", "on-watchdog", "on-abort", "always")
CATALOG_TABLES = ("cuda_min_driver", "xid", "mig_profiles", "gpu_driver_support")
DRAIN_METHODS = ("none", "slurm", "kubernetes", "command")
# quarantine.yml (docs/quarantine.md): how a node is taken out, the repairs it may try, in the order it tries them
CONTAIN_METHODS = ("auto", "slurm", "kubernetes", "services", "none")
REPAIR_STEPS = ("reset", "reboot", "rma")
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")

# The GPU-to-NIC paths of `nvidia-smi topo -m`, nearest first (NV# joins GPUs only): docs/fabric.md.
NIC_DISTANCES = ("PIX", "PXB", "PHB", "NODE", "SYS")
LINK_LAYERS = ("InfiniBand", "Ethernet")

# Growth of an HCA port's error counter between two runs that is a warning / a critical finding
# (hardware.fabric_counter_growth; docs/fabric.md says why each). null: that severity is not judged.
FABRIC_COUNTER_DEFAULTS = {
    "link_downed": {"warning": 1, "critical": 3},
    "link_error_recovery": {"warning": 1, "critical": 10},
    "symbol_error": {"warning": 10, "critical": 1000},
    "port_rcv_errors": {"warning": 10, "critical": 1000},
    "port_rcv_remote_physical_errors": {"warning": 10, "critical": 1000},
    "local_link_integrity_errors": {"warning": 1, "critical": 10},
    "excessive_buffer_overrun_errors": {"warning": 1, "critical": 10},
    "port_xmit_discards": {"warning": 1000, "critical": None},
    "port_rcv_switch_relay_errors": {"warning": None, "critical": None},
    "port_xmit_constraint_errors": {"warning": None, "critical": None},
    "port_rcv_constraint_errors": {"warning": None, "critical": None},
    "VL15_dropped": {"warning": None, "critical": None},
    "port_xmit_wait": {"warning": None, "critical": None},
}


# Clock event reasons that break a load step by default (docs/loadstep.md): the GPU slowed down for power or heat.
LOAD_THROTTLE_REASONS = ("sw_power_cap", "hw_slowdown", "sw_thermal_slowdown", "hw_thermal_slowdown",
                         "hw_power_brake_slowdown")
THROTTLE_REASON_NAMES = ("gpu_idle", "applications_clocks_setting", "sw_power_cap", "hw_slowdown", "sync_boost",
                         "sw_thermal_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown",
                         "display_clock_setting", "board_limit", "reliability")

# A service's load definition for loadstep.yml (docs/loadstep.md).
LOAD_DEFAULTS = {
    "command": None,
    "steps": [1, 2, 4, 8],
    "max_concurrency": None,
    "duration_sec": 30,
    "warmup_sec": 5,
    "idle_sec": 5,
    "total_timeout_sec": 900,
    "limits": {
        "error_pct": 1.0,
        "p95_latency_ms": None,
        "p95_latency_ratio": None,
        "memory_headroom_pct": 10,
        "temperature_c": None,
        "new_xid": True,
        "new_ecc": True,
        "throttle_reasons": list(LOAD_THROTTLE_REASONS),
    },
}

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
    "load": LOAD_DEFAULTS,
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
        "xid_window_hours": WINDOW_HOURS,
        "vbios_mismatch": True,
        # ASHRAE class A2's allowable maximum; DGX-class systems specify 30 C (docs/policy.md)
        "inlet_temperature_c": 35,
        # a host's clock further than this from the controller's is reported (driver.clock_offset)
        "clock_offset_s": 300,
    },
    "persistence_mode": True,
    "compute_mode": None,
    "sharing": {"mode": None},
    "mig": {"config": None, "config_file": None, "selected": None, "allow_drain": False},
    "container_runtime": {"required": False},
    "fabric_manager": {"required": "auto"},
    "workload": {"max_processes_per_gpu": None, "restart_policy_required": True, "crash_loop_restarts": 3,
                 "services": []},
    "host_pressure": {"sample_seconds": 3, "cpu_pressure_pct": 25, "io_pressure_pct": 25, "gpu_idle_pct": 30},
    "catalogs": {table: {} for table in CATALOG_TABLES},
    "custom_rules": [],
    "report": {"fail_severity": "critical", "accept_unreachable": False},
    "remediation": {"batch_size": 1},
    # the run store (docs/store.md): how long facts and runs are kept, in days (0: forever)
    "store": {"retention": {"facts_days": 30, "runs_days": 365}},
    # growth per day of a GPU's error counters across runs (docs/history.md); null turns one rate off
    "trends": {
        "ecc_corrected_per_day": 1000,
        "retired_pages_per_day": 1,
        "remapped_rows_per_day": 1,
        "pcie_replays_per_day": 100,
        "nvlink_errors_per_day": 10,
        "xid_per_day": 2,
        "min_hours": 1,
    },
    "loadstep": {"allowed": False},
    # active checks (validate.yml, docs/active-checks.md): which checks run, and the thresholds their figures are
    # judged by; verify_after: the runs that validate the hosts they changed (remediate, driver_rollout)
    "validation": {
        "verify_after": [],
        "checks": ["dcgm_diag", "nvbandwidth", "nccl_all_reduce"],
        "dcgm_level": 1,
        "bandwidth_min_fraction": 0.7,
        "peer_min_fraction": 0.8,
        "sinking_runs": 3,
        "sinking_fraction": 0.9,
    },
    # the network fabric: InfiniBand/RoCE HCAs and ports, GPUDirect RDMA, the GPU-to-NIC topology (docs/fabric.md)
    "fabric": {
        "hcas": {"count": None, "names": [], "link_layer": None, "rate_gbps": None, "width": None},
        "ports": [],
        "gpudirect": {"required": False},
        "topology": {"max_nic_distance": "NODE"},
        "counters": FABRIC_COUNTER_DEFAULTS,
    },
    "quarantine": {
        # each trigger: rule (an fnmatch pattern of rule ids), min_severity, evidence ({key: [values]}); a finding
        # that matches any trigger takes its node out of service (docs/quarantine.md)
        "triggers": [
            {"rule": "hardware.gpu_lost"},
            {"rule": "hardware.ecc_uncorrected"},
            {"rule": "hardware.row_remap", "min_severity": "critical"},
            # the Xid catalog's critical Xids: the GPU, the node or the VM must be reset or rebooted first
            {"rule": "*.xid", "min_severity": "critical"},
            {"rule": "hardware.recovery_action",
             "evidence": {"recovery_action": ["gpu_reset", "node_reboot", "drain_and_reset"]}},
            {"rule": "hardware.bmc_power_redundancy"},
        ],
        "repairs": {"steps": list(REPAIR_STEPS), "max_failed_repairs": 2},
        # NVSentinel stops cordoning past 50% of a cluster; a fifth of a whole fleet broken at once points at a
        # shared cause (driver, fabric, a rule), not at hardware
        "breaker": {"group": {"max_out_pct": 50, "max_out": None}, "fleet": {"max_out_pct": 20, "max_out": None},
                    "groups": []},
        "contain": {"method": "auto", "services": [], "delegate_to": None,
                    "taint": {"key": "gpufleet.io/quarantine", "effect": "NoSchedule"},
                    "condition_type": "GpufleetQuarantine"},
        "return": {"require_validation": "auto"},
    },
}

# The active checks (gpu_validate's checks) and the runs that may verify their change with them
VALIDATION_CHECKS = ("dcgm_diag", "nvbandwidth", "nccl_all_reduce", "stress")
VALIDATION_VERIFY_AFTER = ("remediate", "driver_rollout")

# Lists of entries identified by their "name": fragments merge them entry by entry instead of replacing them.
NAMED_LISTS = (("workload", "services"), ("custom_rules",))
