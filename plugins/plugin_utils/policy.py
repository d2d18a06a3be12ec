# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The gpufleet policy: defaults, merging of inventory fragments, validation and error locations.

The effective policy of a host is DEFAULT_POLICY deep-merged with the variable ``gpufleet_policy`` and then
with every variable whose name starts with ``gpufleet_policy_``, in sorted name order (docs/policy.md).
validate_policy() returns that effective policy as plain Python data, with every key present, or raises
PolicyError listing every bad key with its path and what is allowed.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import collections
import copy
import difflib
import glob
import hashlib
import json
import os
import re

import yaml

from ansible_collections.gpufleet.core.plugins.plugin_utils.bounded_data import (
    FileLimitError, expanded_size_problem, load as load_bounded_yaml, read_bounded_file, yaml_error_text)
from ansible_collections.gpufleet.core.plugins.module_utils.vocabulary import FIX_ROLES, LAYERS, SEVERITIES
from ansible_collections.gpufleet.core.plugins.plugin_utils.rules_custom import expression_problem

try:
    import jmespath
except ImportError:  # a dependency of the project; guarded so that Ansible can load the plugins without it
    jmespath = None

try:
    # Where Ansible (2.19+) read each inventory value: file, line, column. Not a public API, so only a
    # best effort: without it, the group_vars and host_vars files are searched instead.
    from ansible._internal._datatag._tags import Origin
except ImportError:
    Origin = None

POLICY_VAR = "gpufleet_policy"
FRAGMENT_PREFIX = "gpufleet_policy_"
FAIL_SEVERITIES = SEVERITIES + ("none",)
UNIT_TYPES = ("service", "socket", "target", "timer", "path", "mount", "slice", "scope")
RESTART_VALUES = ("no", "on-success", "on-failure", "on-abnormal", "on-watchdog", "on-abort", "always")
CATALOG_TABLES = ("cuda_min_driver", "xid", "mig_profiles", "gpu_driver_support")

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

Problem = collections.namedtuple("Problem", "path message variable")
Problem.__new__.__defaults__ = (None,)


class PolicyError(ValueError):
    """Every problem found in one policy; str() has one line per problem."""

    def __init__(self, problems, where=POLICY_VAR):
        self.problems = list(problems)
        self.where = where
        super(PolicyError, self).__init__("\n".join(self.lines()))

    def lines(self):
        return ["%s: %s" % (format_path(problem.path, problem.variable or self.where), problem.message)
                for problem in self.problems]


# ---------------------------------------------------------------------------------------------------------
# Paths and values in messages

_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def format_path(path, prefix=POLICY_VAR):
    text = prefix
    for key in path:
        if isinstance(key, int) and not isinstance(key, bool):
            text += "[%d]" % key
        elif _IDENTIFIER.match(str(key)):
            text += ".%s" % key
        else:
            text += "[%r]" % str(key)
    return text


def describe_value(value):
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, (list, tuple)):
        return "a list"
    if isinstance(value, str):
        text = str(value)
        return repr(text if len(text) <= 60 else text[:57] + "...")
    return str(value)


def _one_line(error):
    return " ".join(str(error).split())


def closest(word, allowed):
    matches = difflib.get_close_matches(str(word), [str(option) for option in allowed], n=1, cutoff=0.6)
    return matches[0] if matches else None


def _did_you_mean(word, allowed):
    match = closest(word, allowed)
    return " (did you mean %r?)" % match if match else ""


# ---------------------------------------------------------------------------------------------------------
# Merging

def to_plain(value):
    """A copy made of plain dict/list/str/int/float/bool/None (inventory values arrive as subclasses)."""
    if isinstance(value, dict):
        return {to_plain(key) if not isinstance(key, str) else str(key): to_plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_plain(item) for item in value]
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, str):
        return str(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    return copy.deepcopy(value)


def deep_merge(base, override):
    """New dict: mappings merge key by key, anything else in override replaces what base has."""
    if not (isinstance(base, dict) and isinstance(override, dict)):
        return to_plain(override)
    merged = to_plain(base)
    for key, value in override.items():
        key = str(key) if isinstance(key, str) else to_plain(key)
        merged[key] = deep_merge(merged[key], value) if key in merged else to_plain(value)
    return merged


def named_list_as_mapping(value):
    """A list of entries that each have a unique string "name", as {name: entry}; anything else unchanged."""
    if not isinstance(value, list):
        return value
    mapping = {}
    for entry in value:
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str) or entry["name"] in mapping:
            return value
        mapping[str(entry["name"])] = {key: item for key, item in entry.items() if key != "name"}
    return mapping


def _nulls_as_empty(policy, defaults):
    """A section or list written as null (``thresholds:`` with nothing below) counts as empty."""
    result = {}
    for key, value in policy.items():
        default = defaults.get(key) if isinstance(defaults, dict) else None
        if value is None and isinstance(default, (dict, list)):
            value = type(default)()
        elif isinstance(value, dict) and isinstance(default, dict):
            value = _nulls_as_empty(value, default)
        result[key] = value
    return result


def _get_path(document, path):
    for key in path:
        if not isinstance(document, dict) or key not in document:
            return None
        document = document[key]
    return document


def _named_lists_as_mappings(policy):
    policy = to_plain(policy)
    for path in NAMED_LISTS:
        parent = _get_path(policy, path[:-1])
        if isinstance(parent, dict) and path[-1] in parent:
            parent[path[-1]] = named_list_as_mapping(parent[path[-1]])
    return policy


def merge_policies(*policies):
    """Deep merge of raw policies in order. Named lists merge entry by entry; an empty one clears the list.
    None counts as an empty policy."""
    merged = {}
    for policy in policies:
        if policy is None:
            continue
        if not isinstance(policy, dict):
            merged = to_plain(policy)
            continue
        policy = _named_lists_as_mappings(_nulls_as_empty(policy, DEFAULT_POLICY))
        merged = deep_merge(merged, policy)
        for path in NAMED_LISTS:
            if _get_path(policy, path) == {} and isinstance(_get_path(merged, path[:-1]), dict):
                _get_path(merged, path[:-1])[path[-1]] = {}
    return merged


def is_fragment_name(name):
    return name == POLICY_VAR or (name.startswith(FRAGMENT_PREFIX) and len(name) > len(FRAGMENT_PREFIX))


def fragment_names(variables):
    """gpufleet_policy first, then the gpufleet_policy_* variables in sorted name order."""
    names = [name for name in variables if isinstance(name, str) and is_fragment_name(name)]
    return sorted(names, key=lambda name: (name != POLICY_VAR, name))


def collect_fragments(variables):
    """[(variable name, value)] in merge order, from a mapping of variables such as hostvars[host]."""
    return [(name, variables[name]) for name in fragment_names(variables)]


# ---------------------------------------------------------------------------------------------------------
# Checkers: check(value, path, problems) -> normalised value (problems collects what is wrong)

_DRIVER_VERSION = re.compile(r"^\d{3,4}\.\d{1,3}(\.\d{1,3})?$")
_DRIVER_BRANCH = re.compile(r"^\d{3,4}$")
_CUDA_VERSION = re.compile(r"^\d{1,2}\.\d{1,2}(\.\d{1,4})?$")
_UNIT_NAME = re.compile(r"^[A-Za-z0-9:_.@\\-]+$")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_ARGUMENT = re.compile(r"^--?[A-Za-z0-9][A-Za-z0-9_.-]*$")
_RULE_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
_PERCENT = re.compile(r"^(\d{1,3})%$")
_PACKAGE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9+._-]*$")
DRAIN_METHODS = ("none", "slurm", "kubernetes", "command")


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _fail(problems, path, expected, value, hint=""):
    problems.append(Problem(tuple(path), "must be %s, got %s%s" % (expected, describe_value(value), hint)))
    return value


def _or_null(expected, nullable):
    return "null or " + expected if nullable else expected


def _range_text(low, high):
    if high is None:
        return "%s or more" % low
    return "between %s and %s" % (low, high)


def boolean(nullable=False):
    def check(value, path, problems):
        if isinstance(value, bool) or (nullable and value is None):
            return value
        return _fail(problems, path, _or_null("true or false", nullable), value)
    return check


def integer(low, high=None, nullable=False):
    expected = "a whole number " + _range_text(low, high)

    def check(value, path, problems):
        if nullable and value is None:
            return None
        if _is_int(value) and value >= low and (high is None or value <= high):
            return int(value)
        return _fail(problems, path, _or_null(expected, nullable), value)
    return check


def number(low, high, nullable=False):
    expected = "a number " + _range_text(low, high)

    def check(value, path, problems):
        if nullable and value is None:
            return None
        if _is_number(value) and low <= value <= high:
            return value
        return _fail(problems, path, _or_null(expected, nullable), value)
    return check


def choice(options):
    """One of options (which may hold None, True, False); strings get a did-you-mean."""
    expected = "one of " + ", ".join(describe_value(option) for option in options)

    def check(value, path, problems):
        for option in options:
            if value is option or (isinstance(value, str) and isinstance(option, str) and value == option):
                return option
        strings = [option for option in options if isinstance(option, str)]
        hint = _did_you_mean(value, strings) if isinstance(value, str) else ""
        return _fail(problems, path, expected, value, hint)
    return check


def text(pattern, expected, nullable=False, hint_float=None):
    def check(value, path, problems):
        if nullable and value is None:
            return None
        if isinstance(value, str) and pattern.match(value):
            return str(value)
        hint = ""
        if isinstance(value, float) and hint_float:
            hint = " (YAML read it as a number: quote it, e.g. %s)" % hint_float
        return _fail(problems, path, _or_null(expected, nullable), value, hint)
    return check


def non_empty_text(nullable=False):
    def check(value, path, problems):
        if nullable and value is None:
            return None
        if isinstance(value, str) and value.strip():
            return str(value)
        return _fail(problems, path, _or_null("a non-empty string", nullable), value)
    return check


def driver_branch():
    check_text = text(_DRIVER_BRANCH, "a driver branch such as '550'", nullable=True)

    def check(value, path, problems):
        if _is_int(value):
            value = str(value)
        return check_text(value, path, problems)
    return check


def list_of(item_check):
    def check(value, path, problems):
        if not isinstance(value, list):
            return _fail(problems, path, "a list", value)
        return [item_check(item, tuple(path) + (index,), problems) for index, item in enumerate(value)]
    return check


def any_mapping(nullable=False):
    def check(value, path, problems):
        if (nullable and value is None) or isinstance(value, dict):
            return to_plain(value)
        return _fail(problems, path, _or_null("a mapping", nullable), value)
    return check


def unknown_key(problems, path, key, allowed):
    problems.append(Problem(tuple(path) + (key,), "unknown key%s; allowed keys: %s"
                            % (_did_you_mean(key, allowed), ", ".join(sorted(allowed)))))


def section(fields, required=()):
    def check(value, path, problems):
        if value is None and not required:
            value = {}
        if not isinstance(value, dict):
            return _fail(problems, path, "a mapping", value)
        result = {}
        for key, item in value.items():
            if key in fields:
                result[key] = fields[key](item, tuple(path) + (key,), problems)
            else:
                unknown_key(problems, path, key, fields)
        for key in required:
            if key not in value:
                problems.append(Problem(tuple(path) + (key,), "is required"))
        return result
    return check


def named_list(entry_check, defaults, normalise_name, describe_name):
    """Entries as a list of mappings with "name", or a mapping name -> settings; returns a list."""
    def check(value, path, problems):
        if isinstance(value, list):
            value = _named_entries_from_list(value, path, problems)
        elif isinstance(value, dict):
            value = _named_entries_from_mapping(value, path, problems)
        else:
            return _fail(problems, path, "a list of mappings with a name, or a mapping of name to settings", value)
        entries = []
        for key, name, entry in value:
            entry_path = tuple(path) + (key,)
            if entry is None:
                entry = {}
            if not isinstance(entry, dict):
                _fail(problems, entry_path, "a mapping", entry)
                continue
            entry = {item: setting for item, setting in entry.items() if item != "name"}
            checked = entry_check(deep_merge(defaults, entry), entry_path, problems)
            if not (isinstance(name, str) and describe_name[0].match(name)):
                _fail(problems, entry_path + ("name",), describe_name[1], name)
                continue
            entries.append(dict(name=normalise_name(str(name)), **checked))
        return entries
    return check


def _named_entries_from_mapping(value, path, problems):
    entries = []
    for key, entry in value.items():
        if isinstance(entry, dict) and "name" in entry and entry["name"] != key:
            problems.append(Problem(tuple(path) + (key, "name"), "%s differs from the key %s it is under"
                                    % (describe_value(entry["name"]), describe_value(key))))
            continue
        entries.append((key, key, entry))
    return entries


def _named_entries_from_list(value, path, problems):
    entries, seen = [], set()
    for index, entry in enumerate(value):
        if not isinstance(entry, dict):
            _fail(problems, tuple(path) + (index,), "a mapping", entry)
            continue
        name = entry.get("name")
        if isinstance(name, str):
            if name in seen:
                problems.append(Problem(tuple(path) + (index, "name"), "duplicate name %r" % name))
                continue
            seen.add(name)
        entries.append((index, name, entry))
    return entries


def unit_name(name):
    """systemd reads "vllm" as "vllm.service"; the effective policy always holds the full unit name."""
    suffix = name.rsplit(".", 1)[-1] if "." in name else ""
    return name if suffix in UNIT_TYPES else name + ".service"


def environment():
    def check(value, path, problems):
        if not isinstance(value, dict):
            return _fail(problems, path, "a mapping of variable name to value", value)
        result = {}
        for key, item in value.items():
            if not (isinstance(key, str) and _ENV_NAME.match(key)):
                problems.append(Problem(tuple(path) + (key,), "is not an environment variable name"))
            elif isinstance(item, (str, int, float)) and not isinstance(item, bool):
                result[str(key)] = str(item)
            else:
                _fail(problems, tuple(path) + (key,), "a string or a number", item)
        return result
    return check


def gpu_selection():
    def check(value, path, problems):
        if value is None or value == "all":
            return value
        if isinstance(value, list) and value and all(_is_int(item) and 0 <= item < 64 for item in value):
            if len(set(value)) == len(value):
                return [int(item) for item in value]
        return _fail(problems, path, "'all', null or a list of distinct GPU indexes (0-63)", value)
    return check


def batch_size():
    def check(value, path, problems):
        if _is_int(value) and value >= 1:
            return int(value)
        match = _PERCENT.match(value) if isinstance(value, str) else None
        if match and 1 <= int(match.group(1)) <= 100:
            return str(value)
        return _fail(problems, path, "a whole number 1 or more, or a percentage such as '25%'", value)
    return check


def batch_list():
    """serial-style batches: a non-empty list of batch sizes (numbers or percentages); the last repeats."""
    item = batch_size()

    def check(value, path, problems):
        if isinstance(value, list) and value:
            return [item(entry, tuple(path) + (index,), problems) for index, entry in enumerate(value)]
        return _fail(problems, path, "a non-empty list of batch sizes such as [1, '10%', '100%']", value)
    return check


def jmespath_expression():
    def check(value, path, problems):
        if not (isinstance(value, str) and value.strip()):
            return _fail(problems, path, "a JMESPath expression (string)", value)
        if jmespath is None:
            problems.append(Problem(tuple(path), "cannot be checked: the Python package jmespath is missing "
                                                 "on the controller"))
            return str(value)
        too_big = expression_problem(str(value))
        if too_big:
            problems.append(Problem(tuple(path), "JMESPath expression %s: %s" % (describe_value(str(value)), too_big)))
            return str(value)
        try:
            jmespath.compile(str(value))
        except jmespath.exceptions.JMESPathError as error:
            problems.append(Problem(tuple(path), "JMESPath expression %r does not compile: %s"
                                    % (str(value), jmespath_error_text(error))))
        return str(value)
    return check


def jmespath_error_text(error):
    if isinstance(error, jmespath.exceptions.IncompleteExpressionError):
        return "the expression is incomplete"
    position = getattr(error, "lex_position", getattr(error, "lexer_position", None))
    message = getattr(error, "message", None) or getattr(error, "msg", None) or str(error).splitlines()[0]
    return "%s at position %s" % (message, position) if position is not None else str(message)


def catalogs():
    tables = {table: any_mapping() for table in CATALOG_TABLES}
    return section(tables)


SERVICE_SCHEMA = section({
    "gpus": gpu_selection(),
    "workers_per_gpu": integer(1, 1024, nullable=True),
    "workers_env": text(_ENV_NAME, "an environment variable name such as 'NUM_WORKERS'", nullable=True),
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

POLICY_SCHEMA = section({
    "driver": section({
        "pin": text(_DRIVER_VERSION, "a driver version such as '550.90.07'", nullable=True, hint_float="'550.90'"),
        "branch": driver_branch(),
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
        "services": named_list(SERVICE_SCHEMA, SERVICE_DEFAULTS, unit_name,
                               (_UNIT_NAME, "a systemd unit name such as 'vllm.service'")),
    }),
    "catalogs": catalogs(),
    "custom_rules": named_list(CUSTOM_RULE_SCHEMA, CUSTOM_RULE_DEFAULTS, str,
                               (_RULE_NAME, "a rule name of lower-case letters, digits and '_'")),
    "report": section({"fail_severity": choice(FAIL_SEVERITIES), "accept_unreachable": boolean()}),
    "remediation": section({"batch_size": batch_size()}),
})


# ---------------------------------------------------------------------------------------------------------
# Checks across keys, on the effective policy

def _check_thresholds(policy, problems):
    thresholds = policy["thresholds"]
    if thresholds["retired_pages_critical"] < thresholds["retired_pages_warning"]:
        problems.append(Problem(("thresholds", "retired_pages_critical"),
                                "must not be below thresholds.retired_pages_warning (%d), got %d"
                                % (thresholds["retired_pages_warning"], thresholds["retired_pages_critical"])))


def _check_driver(policy, problems):
    pin, branch = policy["driver"]["pin"], policy["driver"]["branch"]
    if pin and branch and pin.split(".")[0] != branch:
        problems.append(Problem(("driver", "pin"), "%r is not on driver.branch %r" % (pin, branch)))
    _check_drain(policy["driver"]["rollout"]["drain"], problems)


def _check_drain(drain, problems):
    path = ("driver", "rollout", "drain")
    if drain["method"] == "command" and drain["command"] is None:
        problems.append(Problem(path + ("command",), "is required with method 'command'"))
    if drain["method"] == "kubernetes" and drain["delegate_to"] is None:
        problems.append(Problem(path + ("delegate_to",), "is required with method 'kubernetes': the host "
                                                         "that runs kubectl"))
    if drain["method"] != "command":
        for key in ("command", "undrain_command"):
            if drain[key] is not None:
                problems.append(Problem(path + (key,), "is only used with method 'command', not %r"
                                        % drain["method"]))


def _check_mig(policy, problems):
    """Structure only; resolve_mig_config loads the document (from mig.config_file too) and checks it."""
    mig = policy["mig"]
    if mig["selected"] is not None and mig["config"] is None and mig["config_file"] is None:
        problems.append(Problem(("mig", "selected"), "needs mig.config or mig.config_file to select from"))
    elif mig["config_file"] is None and isinstance(mig["config"], dict) and "mig-configs" in mig["config"]:
        mig["selected"] = select_mig_config(mig["config"], mig["selected"], ("mig", "config"), problems)


def _reject_two_mig_sources(raw):
    mig = raw.get("mig") if isinstance(raw, dict) else None
    if isinstance(mig, dict) and mig.get("config") is not None and mig.get("config_file") is not None:
        raise PolicyError([Problem(("mig", "config_file"), "set either mig.config or mig.config_file, not both")])


def select_mig_config(document, selected, path, problems):
    """The name of the selected mig-config: checks it exists; the only one when none is named."""
    configs = document.get("mig-configs") if isinstance(document, dict) else None
    if not isinstance(configs, dict) or not configs:
        problems.append(Problem(tuple(path), "must be an nvidia-mig-parted document (version: v1) with a "
                                             "non-empty 'mig-configs' mapping"))
        return selected
    if selected is None:
        return str(next(iter(configs))) if len(configs) == 1 else None
    if selected not in configs:
        problems.append(Problem(("mig", "selected"), "no mig-config named %r%s; the config has %s"
                                % (selected, _did_you_mean(selected, configs), ", ".join(sorted(map(str, configs))))))
    return selected


def _check_services(policy, problems):
    for service in policy["workload"]["services"]:
        if service["workers_env"] and service["workers_arg"]:
            problems.append(Problem(("workload", "services", service["name"], "workers_arg"),
                                    "set either workers_env or workers_arg, not both"))


def _check_consistency(policy, problems):
    _check_thresholds(policy, problems)
    _check_driver(policy, problems)
    _check_mig(policy, problems)
    _check_services(policy, problems)


# ---------------------------------------------------------------------------------------------------------
# Validation

def validate_policy(policy, where=POLICY_VAR):
    """The effective policy: DEFAULT_POLICY deep-merged with policy, validated. Never changes policy.

    Raises PolicyError naming every bad key (path under `where`) and what is allowed.
    """
    if policy is None:
        policy = {}
    if not isinstance(policy, dict):
        raise PolicyError([Problem((), "must be a mapping, got %s" % describe_value(policy))], where)
    problems = []
    effective = POLICY_SCHEMA(merge_policies(DEFAULT_POLICY, policy), (), problems)
    if not problems:
        _check_consistency(effective, problems)
    if problems:
        raise PolicyError(problems, where)
    return effective


def validate_fragments(fragments, where=POLICY_VAR):
    """Effective policy from [(variable, value)] (see collect_fragments); problems name their variable."""
    check_fragment_sizes(fragments, where)
    problems = []
    for name, value in fragments:
        if value is not None and not isinstance(value, dict):
            problems.append(Problem((), "must be a mapping, got %s" % describe_value(value), name))
    if problems:
        raise PolicyError(problems, where)
    try:
        merged = merge_policies(*[value for _name, value in fragments])
        _reject_two_mig_sources(merged)
        return validate_policy(merged, where)
    except PolicyError as error:
        raise PolicyError([attribute_problem(problem, fragments) for problem in error.problems], where)


def policy_from_vars(variables, where=POLICY_VAR):
    """Effective policy of one host from its variables (a mapping such as hostvars[host])."""
    return validate_fragments(collect_fragments(variables), where)


def lookup_path(document, path):
    """(True, value) when path exists in a raw document; named-list entries match by key or by "name"."""
    node = document
    for key in path:
        if isinstance(node, dict) and key in node:
            node = node[key]
        elif isinstance(node, list) and _is_int(key) and 0 <= key < len(node):
            node = node[key]
        elif isinstance(node, list) and isinstance(key, str):
            matches = [entry for entry in node if isinstance(entry, dict) and entry.get("name") == key]
            if not matches:
                return False, None
            node = matches[0]
        else:
            return False, None
    return True, node


def source_of(path, fragments):
    """(variable, path found) of the fragment that set path, or the longest part of it that some fragment sets."""
    for length in range(len(path), 0, -1):
        for name, value in reversed(fragments):
            found, _node = lookup_path(value, path[:length])
            if found:
                return name, tuple(path[:length])
    return (fragments[-1][0], ()) if fragments else (None, ())


def attribute_problem(problem, fragments):
    name, _found = source_of(problem.path, fragments)
    return problem._replace(variable=name) if name else problem


# ---------------------------------------------------------------------------------------------------------
# Where a value was set

def value_origin(value):
    """(file or description, line or None) that Ansible recorded for an inventory value, or None."""
    if Origin is None:
        return None
    origin = Origin.get_tag(value)
    if origin is None or origin is Origin.UNKNOWN or not (origin.path or origin.description):
        return None
    return (origin.path or origin.description, origin.line_num)


def origin_of_problem(problem, fragments):
    """(file, line) where the value behind a problem was written, from the fragments' origin tags, or None."""
    by_name = dict(fragments)
    if problem.variable not in by_name:
        return None
    document = by_name[problem.variable]
    for length in range(len(problem.path), -1, -1):
        found, node = lookup_path(document, problem.path[:length])
        origin = value_origin(node) if found else None
        if origin:
            return origin
    return None


def format_origin(origin):
    place, line = origin
    place = display_path(place) if os.path.isabs(place) else place
    return "%s, line %d" % (place, line) if line else place


def var_file_candidates(base_dirs, host, group_names):
    """group_vars and host_vars files Ansible reads for a host: host_vars, the host's groups (in reverse
    name order: Ansible's own precedence also weighs group depth, which variables do not show), then all."""
    names = [("host_vars", host)] + [("group_vars", group) for group in sorted(group_names, reverse=True)
                                     if group != "all"] + [("group_vars", "all")]
    files = []
    for base in base_dirs:
        for folder, name in names:
            stem = os.path.join(base, folder, name)
            for candidate in (stem, stem + ".yml", stem + ".yaml", stem + ".json"):
                if os.path.isfile(candidate):
                    files.append(candidate)
            if os.path.isdir(stem):
                files.extend(sorted(path for path in glob.glob(os.path.join(stem, "**", "*"), recursive=True)
                                    if os.path.isfile(path)))
    return files


_FILE_CACHE = {}


def _load_var_file(path):
    try:
        stamp = os.stat(path).st_mtime_ns
    except OSError:
        return None
    cached = _FILE_CACHE.get(path)
    if cached and cached[0] == stamp:
        return cached[1]
    try:
        # Not bounded_data's loader: this document is only looked up along a path, never walked, so its
        # aliases cost nothing here, and a file that a bounded loader refuses must still be found to be named.
        with open(path, encoding="utf-8") as handle:
            document = yaml.safe_load(handle)
    except (OSError, UnicodeDecodeError, yaml.YAMLError):  # a vault file or a broken one: not searchable
        document = None
    _FILE_CACHE[path] = (stamp, document)
    return document


def find_var_files(variable, path, candidates):
    """Candidate files that set `variable` with `path` inside it; when none has the path, those setting variable."""
    defining, with_path = [], []
    for candidate in candidates:
        document = _load_var_file(candidate)
        if not isinstance(document, dict) or variable not in document:
            continue
        defining.append(candidate)
        if lookup_path(document[variable], path)[0]:
            with_path.append(candidate)
    return with_path or defining


def display_path(path, start=None):
    """path relative to start (default: current folder) when it lies below it."""
    start = start or os.getcwd()
    try:
        relative = os.path.relpath(path, start)
    except ValueError:
        return path
    return path if relative.startswith("..") else relative


# ---------------------------------------------------------------------------------------------------------
# After validation: the MIG document and the catalogs, checked by the modules that own them

def _default_mig_loader():
    try:
        from ansible_collections.gpufleet.core.plugins.plugin_utils.mig_config import load_mig_parted_config
    except ImportError:
        return None
    return load_mig_parted_config


def _default_knowledge_loader():
    try:
        from ansible_collections.gpufleet.core.plugins.plugin_utils.knowledge import load_knowledge
    except ImportError:
        return None
    return lambda tables: load_knowledge(overrides=tables)


def _read_text(path, where):
    """The file's text; errors name the file and what is wrong, never a byte of it (it may be any file)."""
    try:
        return read_bounded_file(path).decode("utf-8")
    except FileLimitError as error:
        reason = error.reason
    except OSError as error:
        reason = error.strerror or _one_line(error)
    except UnicodeDecodeError as error:
        reason = "not UTF-8 text (byte %d)" % error.start
    raise PolicyError([Problem(("mig", "config_file"), "cannot read %s: %s" % (path, reason))], where)


def _load_mig_document(source, label, key, where, mig_loader):
    """The document as mig_config loads it (ConfigMap unwrapped, profiles canonical); plain YAML without it."""
    try:
        if mig_loader is not None:
            return mig_loader(source, label)
        return load_bounded_yaml(source) if isinstance(source, str) else source
    except (ValueError, yaml.YAMLError) as error:
        message = "%s: not valid YAML: %s" % (label, yaml_error_text(error)) if isinstance(error, yaml.YAMLError) \
            else _one_line(error)
        if key == "config" and message.startswith(label + ": "):
            message = message[len(label) + 2:]
        raise PolicyError([Problem(("mig", key), message)], where)


def resolve_mig_config(policy, base_dir=None, where=POLICY_VAR, mig_loader=None):
    """Copy of policy whose mig.config holds the loaded document (read from mig.config_file when set; a
    relative path is taken from base_dir and made absolute) and mig.selected the selected name."""
    mig = policy["mig"]
    if mig["config"] is None and mig["config_file"] is None:
        return policy
    mig_loader = mig_loader or _default_mig_loader()
    resolved = copy.deepcopy(policy)
    if mig["config_file"] is not None:
        path = mig["config_file"]
        path = os.path.abspath(os.path.join(base_dir, path) if base_dir and not os.path.isabs(path) else path)
        document = _load_mig_document(_read_text(path, where), display_path(path), "config_file", where, mig_loader)
        resolved["mig"]["config_file"] = path
        key = "config_file"
    else:
        document = _load_mig_document(mig["config"], "mig.config", "config", where, mig_loader)
        key = "config"
    problems = []
    resolved["mig"]["config"] = document
    resolved["mig"]["selected"] = select_mig_config(document, mig["selected"], ("mig", key), problems)
    if problems:
        raise PolicyError(problems, where)
    return resolved


def check_catalogs(policy, where=POLICY_VAR, knowledge_loader=None):
    """The catalog overrides, loaded by the knowledge module (which raises ValueError for a bad entry)."""
    knowledge_loader = knowledge_loader or _default_knowledge_loader()
    if any(policy["catalogs"].values()) and knowledge_loader is not None:
        try:
            knowledge_loader(policy["catalogs"])
        except ValueError as error:
            message = _one_line(error)
            if message.startswith("catalogs."):
                message = message[len("catalogs."):]
            raise PolicyError([Problem(("catalogs",), message)], where)
    return policy


# ---------------------------------------------------------------------------------------------------------
# For the rules and the remediation roles

def compile_custom_rules(policy):
    """[(rule, compiled JMESPath expression)] for the effective policy's custom_rules, in order."""
    if jmespath is None and policy["custom_rules"]:
        raise PolicyError([Problem(("custom_rules",), "need the Python package jmespath on the controller")])
    return [(rule, jmespath.compile(rule["expression"])) for rule in policy["custom_rules"]]


def process_limit_per_gpu(policy):
    """Most processes one GPU should run: workload.max_processes_per_gpu, else the sum of the services'
    workers_per_gpu when any service sets one, else None (no limit)."""
    workload = policy["workload"]
    if workload["max_processes_per_gpu"] is not None:
        return workload["max_processes_per_gpu"]
    limits = [service["workers_per_gpu"] for service in workload["services"] if service["workers_per_gpu"]]
    return sum(limits) if limits else None


def policy_id(policy):
    """Short stable id of an effective policy (same content, same id)."""
    canonical = json.dumps(policy, sort_keys=True, separators=(",", ":"), default=str)
    return "p-" + hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:12]


# ---------------------------------------------------------------------------------------------------------
# Bounds: checked before anything walks a fragment (templating, merging, JSON encoding)

def fragment_size_problem(name, value, checked=None):
    """A Problem naming the variable when its value holds too many values or nests too deep once YAML aliases
    are expanded (a "billion laughs" in group_vars: see bounded_data), else None. The cost is bounded by the
    limit, whatever the value. checked: a memo {(name, id(value)): (value, problem)} for a fleet, whose hosts
    mostly share the very same group_vars objects."""
    key = (name, id(value))
    if checked is not None and key in checked:
        return checked[key][1]
    message = expanded_size_problem(value)
    problem = Problem((), message, name) if message else None
    if checked is not None:
        checked[key] = (value, problem)
    return problem


def check_fragment_sizes(fragments, where=POLICY_VAR):
    """PolicyError naming every fragment that is too big once YAML aliases are expanded."""
    problems = [problem for problem in (fragment_size_problem(name, value) for name, value in fragments) if problem]
    if problems:
        raise PolicyError(problems, where)


# ---------------------------------------------------------------------------------------------------------
# A whole fleet, once, before any host is contacted


def _read_fragments(variables, checked=None):
    """Fragments of one host, and problems for fragments that cannot be read (templating errors) or are too
    big once YAML aliases are expanded (checked before templating, which walks the whole value)."""
    fragments, problems = [], []
    for name in fragment_names(variables):
        raw = variables.raw_value(name) if hasattr(variables, "raw_value") else None
        problem = fragment_size_problem(name, raw, checked)
        if problem is None:
            try:
                value = variables[name]
            except Exception as error:  # pylint: disable=broad-except  # Ansible templating raises its own errors
                problem = Problem((), "cannot be read: %s" % _one_line(error), name)
            else:
                problem = fragment_size_problem(name, value, checked)
                if problem is None:
                    fragments.append((name, value))
                    continue
        problems.append(problem)
        if hasattr(variables, "raw_value"):
            fragments.append((name, raw))  # only to locate the problem
    return fragments, problems


def _fragments_key(fragments, base_dir):
    """Hosts with the same fragments, written in the same places, share one validation."""
    origins = [value_origin(value) for _name, value in fragments]
    content = json.dumps(fragments, sort_keys=True, default=str)
    return (content, json.dumps(origins, default=str), base_dir)


def effective_policy_of(fragments, base_dir=None, where=POLICY_VAR, mig_loader=None, knowledge_loader=None):
    """Validated effective policy of one host, with its MIG document loaded and its catalogs checked."""
    try:
        policy = validate_fragments(fragments, where)
        policy = resolve_mig_config(policy, base_dir, where, mig_loader)
        return check_catalogs(policy, where, knowledge_loader)
    except PolicyError as error:
        raise PolicyError([attribute_problem(problem, fragments) for problem in error.problems], where)


class FleetPolicies:
    """Validates the policy of many hosts, once per distinct set of fragments.

    variables_of(host) -> the host's variables (hostvars[host]); groups: {group: [hosts]} for naming
    the group behind an error; base_dirs_of(host) -> folders whose group_vars/host_vars are searched
    when Ansible recorded no origin for a value.
    """

    def __init__(self, variables_of, groups=None, base_dirs_of=None, mig_loader=None, knowledge_loader=None):
        self.variables_of = variables_of
        self.groups = groups or {}
        self.base_dirs_of = base_dirs_of or (lambda host: [])
        self.loaders = (mig_loader, knowledge_loader)
        self.policies = {}
        self.host_policy = {}
        self.errors = collections.OrderedDict()
        self._cache = {}
        self._sizes = {}

    def check(self, hosts):
        for host in hosts:
            self._check_host(host)
        return self

    def _check_host(self, host):
        variables = self.variables_of(host)
        fragments, unreadable = _read_fragments(variables, self._sizes)
        if unreadable:
            self._add_errors(host, PolicyError(unreadable), fragments, variables)
            return
        base_dir = variables.get("inventory_dir") if hasattr(variables, "get") else None
        key = _fragments_key(fragments, base_dir)
        if key not in self._cache:
            self._cache[key] = self._validate(fragments, base_dir)
        outcome = self._cache[key]
        if isinstance(outcome, PolicyError):
            self._add_errors(host, outcome, fragments, variables)
        else:
            identifier, policy = outcome
            self.policies[identifier] = policy
            self.host_policy[host] = identifier

    def _validate(self, fragments, base_dir):
        try:
            policy = effective_policy_of(fragments, base_dir, POLICY_VAR, *self.loaders)
        except PolicyError as error:
            return error
        return policy_id(policy), policy

    def _add_errors(self, host, error, fragments, variables):
        for problem, line in zip(error.problems, error.lines()):
            place = self._locate(problem, fragments, host, variables)
            entry = self.errors.setdefault((line, place), {
                "message": line, "variable": problem.variable or POLICY_VAR,
                "path": format_path(problem.path, problem.variable or POLICY_VAR),
                "file": place, "hosts": []})
            entry["hosts"].append(host)

    def _locate(self, problem, fragments, host, variables):
        origin = origin_of_problem(problem, fragments)
        if origin:
            return format_origin(origin)
        group_names = variables.get("group_names", []) if hasattr(variables, "get") else []
        candidates = var_file_candidates(self.base_dirs_of(host), host, group_names)
        files = find_var_files(problem.variable or POLICY_VAR, problem.path, candidates)
        if len(files) == 1:
            return display_path(files[0])
        if files:
            return "one of " + ", ".join(display_path(path) for path in files)
        return None

    def describe_hosts(self, hosts):
        """'3 hosts: a, b, c', or 'every host of group a100 (10000 hosts)'."""
        group = self._group_of(hosts)
        count = "%d host%s" % (len(hosts), "" if len(hosts) == 1 else "s")
        if group:
            return "%s: every host of group %s" % (count, group) if len(hosts) > 1 else "%s: %s" % (count, hosts[0])
        shown = ", ".join(hosts[:5])
        return "%s: %s%s" % (count, shown, " and %d more" % (len(hosts) - 5) if len(hosts) > 5 else "")

    def _group_of(self, hosts):
        wanted = set(hosts)
        for group in sorted(self.groups, key=lambda name: (name in ("all", "ungrouped"), name)):
            members = self.groups[group]
            if len(members) == len(wanted) and set(members) == wanted:
                return group
        return None

    def error_lines(self):
        lines = []
        for entry in self.errors.values():
            place = " (in %s)" % entry["file"] if entry["file"] else ""
            lines.append("%s%s - %s" % (entry["message"], place, self.describe_hosts(entry["hosts"])))
        return lines

    def failed_hosts(self):
        return sorted({host for entry in self.errors.values() for host in entry["hosts"]})

    def failure_message(self, checked):
        failed = self.failed_hosts()
        header = ("Invalid gpufleet policy for %d of %d host%s (no host was contacted); fix these keys:"
                  % (len(failed), checked, "" if checked == 1 else "s"))
        return "\n".join([header] + ["- " + line for line in self.error_lines()])
