# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A whole fleet, once, before any host is contacted: one validation per distinct set of fragments, and every
problem once, with the file and line it comes from and the hosts it concerns.

A host's variables are a mapping (hostvars[host]); they may also offer raw_value(name), the value before
templating, and origins(name), {path: (file, line)} of the value's parts (see sources).
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import collections
import hashlib
import json

from ansible_collections.gpufleet.core.plugins.plugin_utils.policy.merge import fragment_names, fragment_size_problem
from ansible_collections.gpufleet.core.plugins.plugin_utils.policy.problems import (
    POLICY_VAR, PolicyError, Problem, format_path, one_line)
from ansible_collections.gpufleet.core.plugins.plugin_utils.policy.sources import (
    display_path, find_var_files, format_origin, origin_of_problem, var_file_candidates)
from ansible_collections.gpufleet.core.plugins.plugin_utils.policy.validate import effective_policy_of


def policy_id(policy):
    """Short stable id of an effective policy (same content, same id)."""
    canonical = json.dumps(policy, sort_keys=True, separators=(",", ":"), default=str)
    return "p-" + hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:12]


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
                problem = Problem((), "cannot be read: %s" % one_line(error), name)
            else:
                problem = fragment_size_problem(name, value, checked)
                if problem is None:
                    fragments.append((name, value))
                    continue
        problems.append(problem)
        if hasattr(variables, "raw_value"):
            fragments.append((name, raw))  # only to locate the problem
    return fragments, problems


def _fragments_key(fragments, origins, base_dir):
    """Hosts with the same fragments, written in the same places, share one validation."""
    places = [(origins.get(name) or {}).get(()) for name, _value in fragments]
    content = json.dumps(fragments, sort_keys=True, default=str)
    return (content, json.dumps(places, default=str), base_dir)


def _origins(variables, fragments):
    """{variable: {path: (file, line)}} for the fragments, when the variables know where they were written."""
    if not hasattr(variables, "origins"):
        return {}
    return {name: variables.origins(name) for name, _value in fragments}


class FleetPolicies:
    """Validates the policy of many hosts, once per distinct set of fragments.

    variables_of(host) -> the host's variables (hostvars[host]); groups: {group: [hosts]} for naming
    the group behind an error; base_dirs_of(host) -> folders whose group_vars/host_vars are searched
    when Ansible recorded no origin for a value; settings_check(variables) -> [Problem] of the playbooks'
    settings (plugin_utils/playbook_settings), listed with the policy's problems, when given.
    """

    def __init__(self, variables_of, groups=None, base_dirs_of=None, mig_loader=None, knowledge_loader=None,
                 settings_check=None):
        self.variables_of = variables_of
        self.settings_check = settings_check
        self.groups = groups or {}
        self.base_dirs_of = base_dirs_of or (lambda host: [])
        self.loaders = (mig_loader, knowledge_loader)
        self.policies = {}
        self.host_policy = {}
        self.errors = collections.OrderedDict()
        self.setting_errors = set()  # keys of errors that are the playbooks' settings, not the policy
        self._cache = {}
        self._sizes = {}

    def check(self, hosts):
        for host in hosts:
            self._check_host(host)
        return self

    def _check_host(self, host):
        variables = self.variables_of(host)
        setting_problems = self.settings_check(variables) if self.settings_check else None
        if setting_problems:
            self.add_setting_problems(host, setting_problems, variables)
        fragments, unreadable = _read_fragments(variables, self._sizes)
        origins = _origins(variables, fragments)
        if unreadable:
            self._add_errors(host, PolicyError(unreadable), fragments, variables, origins)
            return
        base_dir = variables.get("inventory_dir") if hasattr(variables, "get") else None
        key = _fragments_key(fragments, origins, base_dir)
        if key not in self._cache:
            self._cache[key] = self._validate(fragments, base_dir)
        outcome = self._cache[key]
        if isinstance(outcome, PolicyError):
            self._add_errors(host, outcome, fragments, variables, origins)
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

    def add_setting_problems(self, host, problems, variables):
        """Problems of the playbooks' settings (plugin_utils/playbook_settings), listed with the policy's."""
        names = sorted({problem.variable for problem in problems})
        fragments = [(name, variables.raw_value(name) if hasattr(variables, "raw_value") else None) for name in names]
        self.setting_errors.update(self._add_errors(host, PolicyError(problems), fragments, variables,
                                                    _origins(variables, fragments)))

    def _add_errors(self, host, error, fragments, variables, origins):
        """Records each problem for the host; returns the keys of the errors it went to."""
        keys = []
        for problem, line in zip(error.problems, error.lines()):
            place = self._locate(problem, fragments, origins, host, variables)
            keys.append((line, place))
            entry = self.errors.setdefault((line, place), {
                "message": line, "variable": problem.variable or POLICY_VAR,
                "path": format_path(problem.path, problem.variable or POLICY_VAR),
                "file": place, "hosts": []})
            entry["hosts"].append(host)
        return keys

    def _locate(self, problem, fragments, origins, host, variables):
        origin = origin_of_problem(problem, fragments, origins)
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

    def _what_is_invalid(self):
        if not self.setting_errors:
            return "policy"
        return "settings" if set(self.errors) == self.setting_errors else "settings and policy"

    def failure_message(self, checked):
        failed = self.failed_hosts()
        header = ("Invalid gpufleet %s for %d of %d host%s (no host was contacted); fix these %s:"
                  % (self._what_is_invalid(), len(failed), checked, "" if checked == 1 else "s",
                     "variables" if self.setting_errors else "keys"))
        return "\n".join([header] + ["- " + line for line in self.error_lines()])
