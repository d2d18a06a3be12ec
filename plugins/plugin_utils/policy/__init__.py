# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The gpufleet policy: defaults, merging of inventory fragments, validation and error locations.

The effective policy of a host is DEFAULT_POLICY deep-merged with the variable ``gpufleet_policy`` and then
with every variable whose name starts with ``gpufleet_policy_``, in sorted name order (docs/policy.md).
validate_policy() returns that effective policy as plain Python data, with every key present, or raises
PolicyError listing every bad key with its path and what is allowed.

Plain Python: what needs Ansible (templating, the file and line of a value) is done by the policy_check
action, which hands the results over as data. The modules of the package:
  problems  Problem, PolicyError, how messages name keys and values
  defaults  DEFAULT_POLICY and the defaults of services and custom rules
  merge     merging fragments, their size bounds
  checks    the checkers the schema is made of (each with its JSON Schema)
  schema    POLICY_SCHEMA, the definition of every key, and json_schema() for docs/schema/policy.schema.json
  validate  validate_policy, validate_fragments, resolve_mig_config, check_catalogs, effective_policy_of
  sources   which fragment, file and line a problem comes from
  fleet     FleetPolicies: a whole fleet, one validation per distinct policy
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.gpufleet.core.plugins.plugin_utils.policy.defaults import (  # noqa: F401
    CATALOG_TABLES, CUSTOM_RULE_DEFAULTS, CUSTOM_RULE_REQUIRED, DEFAULT_POLICY, NAMED_LISTS,
    SERVICE_DEFAULTS)
from ansible_collections.gpufleet.core.plugins.plugin_utils.policy.fleet import (  # noqa: F401
    FleetPolicies, policy_id)
from ansible_collections.gpufleet.core.plugins.plugin_utils.policy.merge import (  # noqa: F401
    check_fragment_sizes, collect_fragments, deep_merge, fragment_names, fragment_size_problem, merge_policies,
    to_plain)
from ansible_collections.gpufleet.core.plugins.plugin_utils.policy.problems import (  # noqa: F401
    FRAGMENT_PREFIX, POLICY_VAR, PolicyError, Problem, format_path)
from ansible_collections.gpufleet.core.plugins.plugin_utils.policy.schema import POLICY_SCHEMA, json_schema  # noqa: F401
from ansible_collections.gpufleet.core.plugins.plugin_utils.policy.sources import (  # noqa: F401
    display_path, find_var_files, lookup_path, source_of, var_file_candidates)
from ansible_collections.gpufleet.core.plugins.plugin_utils.policy.validate import (  # noqa: F401
    check_catalogs, effective_policy_of, policy_from_vars, resolve_mig_config, validate_fragments,
    validate_policy)
