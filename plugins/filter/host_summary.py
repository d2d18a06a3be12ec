# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
name: host_summary
short_description: One summary line per host from the registered gpu_facts results
version_added: 1.0.0
description:
  - Takes a mapping of host name to the registered result of M(gpufleet.core.gpu_facts) and returns one line
    per host, sorted by name, that says whether the host answered (ok, UNREACHABLE, FAILED), the driver, CUDA
    version, GPU count and models, a driver mismatch, lost GPUs, the Xids seen and the number of query errors.
options:
  _input:
    description: Mapping of host name to registered result.
    type: dict
    required: true
"""

EXAMPLES = r"""
- name: Print the summary
  ansible.builtin.debug:
    msg: "{{ results | gpufleet.core.host_summary }}"
"""

RETURN = r"""
_value:
  description: One line per host.
  type: list
  elements: str
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.gpufleet.core.plugins.plugin_utils.host_summary import summary_lines


def host_summary(results_by_host):
    if not isinstance(results_by_host, dict):
        raise AnsibleFilterError("host_summary expects a mapping of host name to result, got %s"
                                 % type(results_by_host).__name__)
    return summary_lines(results_by_host)


class FilterModule:
    def filters(self):
        return {"host_summary": host_summary}
