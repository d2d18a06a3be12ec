# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The policy's keys: what each one accepts (POLICY_SCHEMA checks a merged policy) and the JSON Schema of
an inventory file that sets them, both from the one definition below."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re

from ansible_collections.gpufleet.core.plugins.module_utils.vocabulary import FAIL_SEVERITIES, FIX_ROLES, LAYERS, SEVERITIES
from ansible_collections.gpufleet.core.plugins.plugin_utils.policy.checks import (
    ENV_NAME, TEMPLATE, any_mapping, batch_list, batch_size, boolean, choice, digits_text, environment, gpu_selection,
    integer, jmespath_expression, list_of, named_list, non_empty_text, number, section, text)
from ansible_collections.gpufleet.core.plugins.plugin_utils.policy.defaults import (
    CATALOG_TABLES, CONTAIN_METHODS, CUSTOM_RULE_DEFAULTS, CUSTOM_RULE_REQUIRED, DRAIN_METHODS, FABRIC_COUNTER_DEFAULTS,
    LINK_LAYERS, NIC_DISTANCES, REPAIR_STEPS, RESTART_VALUES, SERVICE_DEFAULTS, TAINT_EFFECTS, THROTTLE_REASON_NAMES,
    UNIT_TYPES, VALIDATION_CHECKS, VALIDATION_VERIFY_AFTER)
from ansible_collections.gpufleet.core.plugins.plugin_utils.policy.problems import FRAGMENT_PREFIX, POLICY_VAR

SCHEMA_ID = "https://gpufleet.example/schema/policy/1.json"

_DRIVER_VERSION = re.compile(r"^\d{3,4}\.\d{1,3}(\.\d{1,3})?$")
_DRIVER_BRANCH = re.compile(r"^\d{3,4}$")
_CUDA_VERSION = re.compile(r"^\d{1,2}\.\d{1,2}(\.\d{1,4})?$")
_UNIT_NAME = re.compile(r"^[A-Za-z0-9:_.@\\-]+$")
_ARGUMENT = re.compile(r"^--?[A-Za-z0-9][A-Za-z0-9_.-]*$")
_RULE_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
_PACKAGE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9+._-]*$")
_HCA_NAME = re.compile(r"^[A-Za-z0-9_.-]+$")
_HCA_PORT = re.compile(r"^[A-Za-z0-9_.-]+(/[0-9]{1,3})?$")
_LINK_WIDTH = re.compile(r"^[0-9]{1,2}X$")
_RULE_PATTERN = re.compile(r"^[a-z*?\[][a-z0-9_.*?\[\]!-]*$")
_TAINT_KEY = re.compile(r"^([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
_CONDITION_TYPE = re.compile(r"^[A-Za-z][A-Za-z0-9]*$")


def unit_name(name):
    """systemd reads "vllm" as "vllm.service"; the effective policy always holds the full unit name."""
    suffix = name.rsplit(".", 1)[-1] if "." in name else ""
    return name if suffix in UNIT_TYPES else name + ".service"


LOAD_SCHEMA = section({
    "command": non_empty_text(nullable=True),
    "steps": list_of(integer(1, 4096)),
    "max_concurrency": integer(1, 4096, nullable=True),
    "duration_sec": integer(1, 3600),
    "warmup_sec": integer(0, 600),
    "idle_sec": integer(1, 600),
    "total_timeout_sec": integer(10, 86400),
    "limits": section({
        "error_pct": number(0, 100),
        "p95_latency_ms": number(0, 3600000, nullable=True),
        "p95_latency_ratio": number(1, 1000, nullable=True),
        "memory_headroom_pct": number(0, 90),
        "temperature_c": integer(20, 120, nullable=True),
        "new_xid": boolean(),
        "new_ecc": boolean(),
        "throttle_reasons": list_of(choice(THROTTLE_REASON_NAMES)),
    }),
})

SERVICE_SCHEMA = section({
    "gpus": gpu_selection(),
    "workers_per_gpu": integer(1, 1024, nullable=True),
    "workers_env": text(ENV_NAME, "an environment variable name such as 'NUM_WORKERS'", nullable=True),
    "workers_arg": text(_ARGUMENT, "a command-line option such as '--workers'", nullable=True),
    "environment": environment(),
    "alloc_conf": non_empty_text(nullable=True),
    "mps": section({
        "active_thread_percentage": integer(1, 100, nullable=True),
        "pinned_device_mem_limit_mib": integer(1, nullable=True),
    }),
    "restart": choice((None,) + RESTART_VALUES),
    "restart_sec": integer(0, 86400),
    "start_limit_interval_sec": integer(0, 86400),
    "start_limit_burst": integer(0, 1000),
    "timeout_stop_sec": integer(1, 86400, nullable=True),
    "runtime_max_sec": integer(60, nullable=True),
    "recycle_calendar": non_empty_text(nullable=True),
    "load": LOAD_SCHEMA,
})

CUSTOM_RULE_SCHEMA = section({
    "layer": choice(LAYERS),
    "severity": choice(SEVERITIES),
    "scope": choice(("host", "gpu")),
    "expression": jmespath_expression(),
    "summary": non_empty_text(),
    "action": non_empty_text(),
    "fix": choice((None,) + FIX_ROLES),
}, required=CUSTOM_RULE_REQUIRED)

COUNTER_GROWTH_SCHEMA = section({"warning": integer(1, nullable=True), "critical": integer(1, nullable=True)})

FABRIC_SCHEMA = section({
    "hcas": section({
        "count": integer(0, 64, nullable=True),
        "names": list_of(text(_HCA_NAME, "an HCA name such as 'mlx5_0'")),
        "link_layer": choice((None,) + LINK_LAYERS),
        "rate_gbps": number(1, 100000, nullable=True),
        "width": text(_LINK_WIDTH, "a link width such as '4X'", nullable=True),
    }),
    "ports": list_of(text(_HCA_PORT, "an HCA or one of its ports such as 'mlx5_0' or 'mlx5_0/1'")),
    "gpudirect": section({"required": boolean()}),
    "topology": section({"max_nic_distance": choice(NIC_DISTANCES)}),
    "counters": section({name: COUNTER_GROWTH_SCHEMA for name in FABRIC_COUNTER_DEFAULTS}),
})

BREAKER_LIMIT_SCHEMA = section({"max_out_pct": number(0, 100, nullable=True), "max_out": integer(0, nullable=True)})

QUARANTINE_SCHEMA = section({
    "triggers": list_of(section({
        "rule": text(_RULE_PATTERN, "a rule id or an fnmatch pattern of rule ids such as 'hardware.gpu_lost' or '*.xid'"),
        "min_severity": choice((None,) + SEVERITIES),
        "evidence": any_mapping(nullable=True),
    }, required=("rule",))),
    "repairs": section({
        "steps": list_of(choice(REPAIR_STEPS)),
        "max_failed_repairs": integer(1, 100),
    }),
    "breaker": section({
        "group": BREAKER_LIMIT_SCHEMA,
        "fleet": BREAKER_LIMIT_SCHEMA,
        "groups": list_of(non_empty_text()),
    }),
    "contain": section({
        "method": choice(CONTAIN_METHODS),
        "services": list_of(text(_UNIT_NAME, "a systemd unit name such as 'vllm.service'")),
        "delegate_to": non_empty_text(nullable=True),
        "taint": section({
            "key": text(_TAINT_KEY, "a Kubernetes taint key such as 'gpufleet.io/quarantine'"),
            "effect": choice(TAINT_EFFECTS),
        }),
        "condition_type": text(_CONDITION_TYPE, "a node condition type such as 'GpufleetQuarantine'"),
    }),
    "return": section({"require_validation": choice(("auto", True, False))}),
})

POLICY_SCHEMA = section({
    "driver": section({
        "pin": text(_DRIVER_VERSION, "a driver version such as '550.90.07'", nullable=True, hint_float="'550.90'"),
        "branch": digits_text(_DRIVER_BRANCH, "a driver branch such as '550'", 100, 9999),
        "allow_skew": boolean(),
        "package": text(_PACKAGE_NAME, "a package name such as 'nvidia-driver'", nullable=True),
        "rollout": section({
            "batches": batch_list(),
            "max_fail_percentage": number(0, 100),
            "reboot": boolean(),
            "force": boolean(),
            "drain": section({
                "method": choice(DRAIN_METHODS),
                "command": non_empty_text(nullable=True),
                "undrain_command": non_empty_text(nullable=True),
                "delegate_to": non_empty_text(nullable=True),
            }),
        }),
    }),
    "cuda": section({
        "toolkits_required": list_of(text(_CUDA_VERSION, "a CUDA version such as '12.4'", hint_float="'12.4'")),
    }),
    "gpus": section({"expected_count": integer(0, 64, nullable=True)}),
    "thresholds": section({
        "temperature_margin_c": integer(0, 60),
        "memory_used_pct": number(1, 100),
        "retired_pages_warning": integer(0),
        "retired_pages_critical": integer(0),
        "pcie_replay_warning": integer(0),
        "aer_correctable_warning": integer(0),
        "nvlink_errors_warning": integer(0),
        "xid_window_hours": integer(1, 8760),
        "vbios_mismatch": boolean(),
        "inlet_temperature_c": number(10, 60),
        "clock_offset_s": integer(1, 31622400),
    }),
    "persistence_mode": boolean(nullable=True),
    "compute_mode": choice((None, "default", "exclusive_process", "prohibited")),
    "sharing": section({"mode": choice((None, "exclusive", "mps", "time_slicing", "mig"))}),
    "mig": section({
        "config": any_mapping(nullable=True),
        "config_file": non_empty_text(nullable=True),
        "selected": non_empty_text(nullable=True),
        "allow_drain": boolean(),
    }),
    "container_runtime": section({"required": boolean()}),
    "fabric_manager": section({"required": choice(("auto", True, False))}),
    "workload": section({
        "max_processes_per_gpu": integer(1, 1024, nullable=True),
        "restart_policy_required": boolean(),
        "crash_loop_restarts": integer(1, 100000),
        "services": named_list(SERVICE_SCHEMA, SERVICE_DEFAULTS, unit_name, _UNIT_NAME,
                               "a systemd unit name such as 'vllm.service'"),
    }),
    "host_pressure": section({
        "sample_seconds": integer(0, 60),
        "cpu_pressure_pct": number(1, 100),
        "io_pressure_pct": number(1, 100),
        "gpu_idle_pct": number(1, 100),
    }),
    "catalogs": section({table: any_mapping() for table in CATALOG_TABLES}),
    "custom_rules": named_list(CUSTOM_RULE_SCHEMA, CUSTOM_RULE_DEFAULTS, str, _RULE_NAME,
                               "a rule name of lower-case letters, digits and '_'"),
    "report": section({"fail_severity": choice(FAIL_SEVERITIES), "accept_unreachable": boolean()}),
    "remediation": section({"batch_size": batch_size()}),
    "store": section({"retention": section({"facts_days": integer(0, 36500), "runs_days": integer(0, 36500)})}),
    "trends": section({
        "ecc_corrected_per_day": number(0, 10 ** 9, nullable=True),
        "retired_pages_per_day": number(0, 10 ** 9, nullable=True),
        "remapped_rows_per_day": number(0, 10 ** 9, nullable=True),
        "pcie_replays_per_day": number(0, 10 ** 9, nullable=True),
        "nvlink_errors_per_day": number(0, 10 ** 9, nullable=True),
        "xid_per_day": number(0, 10 ** 9, nullable=True),
        "min_hours": number(0, 8760),
    }),
    "loadstep": section({"allowed": boolean()}),
    "validation": section({
        "verify_after": list_of(choice(VALIDATION_VERIFY_AFTER)),
        "checks": list_of(choice(VALIDATION_CHECKS)),
        "dcgm_level": integer(1, 4),
        "bandwidth_min_fraction": number(0, 1),
        "peer_min_fraction": number(0, 1),
        "sinking_runs": integer(2, 100),
        "sinking_fraction": number(0, 1),
    }),
    "fabric": FABRIC_SCHEMA,
    "quarantine": QUARANTINE_SCHEMA,
})


def json_schema():
    """JSON Schema (draft-07) of an inventory variables file (group_vars, host_vars): every gpufleet_policy
    and gpufleet_policy_* variable in it must hold keys that POLICY_SCHEMA accepts; other variables are free."""
    fragment = dict(POLICY_SCHEMA.json_value, description="A gpufleet policy fragment (docs/policy.md)")
    fragment_names = "^%s(%s.+)?$" % (POLICY_VAR, FRAGMENT_PREFIX[len(POLICY_VAR):])
    return {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "$id": SCHEMA_ID,
        "title": "gpufleet policy in inventory variables",
        "description": "Generated by tools/policy_schema.py from plugins/plugin_utils/policy/schema.py; "
                       "do not edit. Validates the variables %s and %s* of a group_vars or host_vars file."
                       % (POLICY_VAR, FRAGMENT_PREFIX),
        "type": ["object", "null"],
        "definitions": {"policy_fragment": fragment, "template": TEMPLATE},
        "patternProperties": {fragment_names: {"$ref": "#/definitions/policy_fragment"}},
    }
