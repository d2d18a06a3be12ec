# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
name: report_root
short_description: The folder the playbooks write their run folders and reports in
version_added: 1.0.0
description:
  - Takes C(gpufleet_report_dir) (or null) and returns the report folder as an absolute path with links
    resolved; null or empty gives C(reports), relative to the controller's current directory.
  - The one definition of the report folder for C(audit.yml), C(remediate.yml) and C(driver_rollout.yml).
options:
  _input:
    description: The report folder asked for (C(gpufleet_report_dir)), or null for the default.
    type: path
    required: true
"""

EXAMPLES = r"""
- name: Where the reports go
  ansible.builtin.debug:
    msg: "{{ gpufleet_report_dir | default(none) | gpufleet.core.report_root }}"
"""

RETURN = r"""
_value:
  description: Absolute path of the report folder.
  type: path
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.gpufleet.core.plugins.plugin_utils.run_folder import report_root as _report_root


def report_root(report_dir=None):
    if report_dir is not None and not isinstance(report_dir, str):
        raise AnsibleFilterError("report_root expects a folder name or null, got %s" % type(report_dir).__name__)
    return _report_root(report_dir)


class FilterModule(object):
    def filters(self):
        return {"report_root": report_root}
