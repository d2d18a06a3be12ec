# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpufleet.core.policy_check: validate the gpufleet policy of many hosts on the controller.

Documentation: plugins/modules/policy_check.py. The work is done by the plain-Python engine in
plugin_utils/policy/; this plugin adds what needs Ansible: templating a host's variables, and the file and line
Ansible recorded for each part of a value, handed to the engine as data.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from collections import deque
from collections.abc import Mapping

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase

from ansible_collections.gpufleet.core.plugins.modules.policy_check import ARGUMENT_SPEC
from ansible_collections.gpufleet.core.plugins.plugin_utils.policy import FleetPolicies
from ansible_collections.gpufleet.core.plugins.plugin_utils.bounded_data import MAX_NODES
from ansible_collections.gpufleet.core.plugins.plugin_utils.playbook_settings import setting_problems
from ansible_collections.gpufleet.core.plugins.plugin_utils.text_safety import safe_line, safe_text

try:
    # Where Ansible (2.19+) read each inventory value: file, line, column. Not a public API, so only a
    # best effort: without it, the engine searches the group_vars and host_vars files instead.
    from ansible._internal._datatag._tags import Origin
except ImportError:
    Origin = None


FACT_NAME = "gpufleet_effective_policy"


def has_template(value):
    if isinstance(value, str):
        return "{{" in value or "{%" in value or "{#" in value
    if isinstance(value, dict):
        return any(has_template(key) or has_template(item) for key, item in value.items())
    if isinstance(value, (list, tuple)):
        return any(has_template(item) for item in value)
    return False


def value_origin(value):
    """(file or description, line or None) that Ansible recorded for an inventory value, or None."""
    if Origin is None:
        return None
    origin = Origin.get_tag(value)
    if origin is None or origin is Origin.UNKNOWN or not (origin.path or origin.description):
        return None
    return (origin.path or origin.description, origin.line_num)


def value_origins(value, limit=MAX_NODES):
    """{path: (file, line)} for the parts of value that carry an origin, list entries by index, shallow parts
    first. A YAML alias is a second reference to the same mapping or list: it is walked where it first
    appears only (a problem below an alias is placed at the alias), so ten lines of aliases cost ten lines,
    not the 10**9 values they stand for; at most limit parts in all."""
    places, queue, walked = {}, deque([((), value)]), set()
    while queue and len(walked) < limit:
        path, node = queue.popleft()
        origin = value_origin(node)
        if origin:
            places[path] = origin
        if isinstance(node, (Mapping, list, tuple)) and id(node) not in walked:
            walked.add(id(node))
            items = node.items() if isinstance(node, Mapping) else enumerate(node)
            queue.extend((path + (key,), item) for key, item in items)
    return places


class OriginIndex:
    """value_origins of inventory values, once per value object (hosts mostly share their group_vars)."""

    def __init__(self):
        self._known = {}

    def of(self, value):
        if id(value) not in self._known:
            self._known[id(value)] = (value, value_origins(value))  # the value, so that its id stays its own
        return self._known[id(value)][1]


class HostVariables(Mapping):
    """One host's variables; a value is templated (the slow part) only when it holds a template."""

    def __init__(self, hostvars, host, origin_index=None):
        self._hostvars = hostvars
        self._host = host
        self._raw = hostvars.raw_get(host)
        self._origin_index = origin_index or OriginIndex()

    def __getitem__(self, name):
        value = self._raw[name]
        return self._hostvars[self._host][name] if has_template(value) else value

    def __contains__(self, name):
        return name in self._raw  # without templating the value

    def raw_value(self, name):
        return self._raw[name]

    def origins(self, name):
        """{path: (file, line)} of the raw value's parts (see value_origins)."""
        return self._origin_index.of(self._raw[name])

    def __iter__(self):
        return iter(self._raw)

    def __len__(self):
        return len(self._raw)


def hosts_to_check(requested, groups, this_host, with_facts):
    """The requested hosts (default: every inventory host) without repeats; this host too for facts."""
    hosts = list(requested) if requested is not None else list(groups.get("all", []))
    if with_facts and this_host not in hosts:
        hosts.append(this_host)
    return list(dict.fromkeys(hosts))


def search_dirs(variables, playbook_dir):
    """Folders whose group_vars/ and host_vars/ Ansible reads for a host."""
    folders = [variables.get("inventory_dir"), playbook_dir]
    return [folder for folder in dict.fromkeys(folders) if folder]


def failure_result(fleet, checked):
    return {
        "failed": True,
        "msg": safe_text(fleet.failure_message(checked)),  # host names, files and values, shown to people
        "policy_errors": [dict(entry, hosts=sorted(entry["hosts"])) for entry in fleet.errors.values()],
        "failed_hosts": fleet.failed_hosts(),
    }


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False
    _supports_check_mode = True

    def run(self, tmp=None, task_vars=None):
        task_vars = task_vars or {}
        result = super(ActionModule, self).run(tmp, task_vars)
        _validation, args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)
        hostvars = task_vars["hostvars"]
        this_host = task_vars.get("inventory_hostname")
        hosts = hosts_to_check(args["hosts"], task_vars.get("groups", {}), this_host, args["facts"])
        unknown = [host for host in hosts if host not in hostvars]
        if unknown:
            raise AnsibleActionFail("policy_check: not in the inventory: %s" % safe_line(", ".join(unknown)))

        playbook_dir = task_vars.get("playbook_dir")
        origin_index = OriginIndex()
        fleet = FleetPolicies(lambda host: HostVariables(hostvars, host, origin_index), task_vars.get("groups", {}),
                              lambda host: search_dirs(hostvars.raw_get(host), playbook_dir),
                              settings_check=setting_problems if args["settings"] else None).check(hosts)
        result.update(changed=False, policies_checked=len(hosts), distinct_policies=len(fleet.policies))
        if fleet.errors:
            result.update(failure_result(fleet, len(hosts)))
            return result
        result.update(policies=fleet.policies, host_policy=fleet.host_policy)
        if args["facts"]:
            result["ansible_facts"] = {FACT_NAME: fleet.policies[fleet.host_policy[this_host]]}
        return result
