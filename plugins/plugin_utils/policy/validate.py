# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Validation: the effective policy of one host from its fragments, checked key by key and across keys, with
its MIG document loaded (once, here: the rules and the desired_mig_layout filter read it from the policy) and its
catalog overrides checked by the modules that own them."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import copy
import os

import yaml

from ansible_collections.gpufleet.core.plugins.plugin_utils.bounded_data import (
    FileLimitError, load as load_bounded_yaml, read_bounded_file, yaml_error_text)
from ansible_collections.gpufleet.core.plugins.plugin_utils.policy.defaults import DEFAULT_POLICY
from ansible_collections.gpufleet.core.plugins.plugin_utils.policy.merge import (
    check_fragment_sizes, collect_fragments, merge_policies)
from ansible_collections.gpufleet.core.plugins.plugin_utils.policy.problems import (
    POLICY_VAR, PolicyError, Problem, describe_value, did_you_mean, one_line)
from ansible_collections.gpufleet.core.plugins.plugin_utils.policy.schema import POLICY_SCHEMA
from ansible_collections.gpufleet.core.plugins.plugin_utils.policy.sources import attribute_problem, display_path
from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.knowledge import load_knowledge
from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.mig_config import load_mig_parted_config


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
                                % (selected, did_you_mean(selected, configs), ", ".join(sorted(map(str, configs))))))
    return selected


def _check_services(policy, problems):
    for service in policy["workload"]["services"]:
        if service["workers_env"] and service["workers_arg"]:
            problems.append(Problem(("workload", "services", service["name"], "workers_arg"),
                                    "set either workers_env or workers_arg, not both"))
        _check_load(service, problems)


def _check_load(service, problems):
    load, path = service["load"], ("workload", "services", service["name"], "load")
    if not load["steps"]:
        problems.append(Problem(path + ("steps",), "must list at least one concurrency"))
    elif load["steps"] != sorted(set(load["steps"])):
        problems.append(Problem(path + ("steps",), "must rise step by step without repeats, got %s" % load["steps"]))


def _check_consistency(policy, problems):
    _check_thresholds(policy, problems)
    _check_driver(policy, problems)
    _check_mig(policy, problems)
    _check_services(policy, problems)


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


# After validation: the MIG document and the catalogs, checked by the modules that own them

def _default_knowledge_loader():
    return lambda tables: load_knowledge(overrides=tables)


def _read_text(path, where):
    """The file's text; errors name the file and what is wrong, never a byte of it (it may be any file)."""
    try:
        return read_bounded_file(path).decode("utf-8")
    except FileLimitError as error:
        reason = error.reason
    except OSError as error:
        reason = error.strerror or one_line(error)
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
            else one_line(error)
        if key == "config" and message.startswith(label + ": "):
            message = message[len(label) + 2:]
        raise PolicyError([Problem(("mig", key), message)], where)


def resolve_mig_config(policy, base_dir=None, where=POLICY_VAR, mig_loader=None):
    """Copy of policy whose mig.config holds the loaded document (read from mig.config_file when set; a
    relative path is taken from base_dir and made absolute) and mig.selected the selected name."""
    mig = policy["mig"]
    if mig["config"] is None and mig["config_file"] is None:
        return policy
    mig_loader = mig_loader or load_mig_parted_config
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
            message = one_line(error)
            if message.startswith("catalogs."):
                message = message[len("catalogs."):]
            raise PolicyError([Problem(("catalogs",), message)], where)
    return policy


def effective_policy_of(fragments, base_dir=None, where=POLICY_VAR, mig_loader=None, knowledge_loader=None):
    """Validated effective policy of one host, with its MIG document loaded and its catalogs checked."""
    try:
        policy = validate_fragments(fragments, where)
        policy = resolve_mig_config(policy, base_dir, where, mig_loader)
        return check_catalogs(policy, where, knowledge_loader)
    except PolicyError as error:
        raise PolicyError([attribute_problem(problem, fragments) for problem in error.problems], where)
