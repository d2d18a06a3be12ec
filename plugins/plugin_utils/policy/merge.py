# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Merging the inventory fragments of one host: gpufleet_policy, then gpufleet_policy_* in sorted name order.

Sizes are checked before anything walks a fragment (templating, merging, JSON encoding).
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import copy

from ansible_collections.gpufleet.core.plugins.plugin_utils.bounded_data import expanded_size_problem
from ansible_collections.gpufleet.core.plugins.plugin_utils.policy.defaults import DEFAULT_POLICY, NAMED_LISTS
from ansible_collections.gpufleet.core.plugins.plugin_utils.policy.problems import (
    FRAGMENT_PREFIX, POLICY_VAR, PolicyError, Problem)


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
