# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type


class ModuleDocFragment(object):
    """The run folder a controller step writes its reports in: module_utils/args_common.py's run_folder_spec()
    (DOCUMENTATION, and STARTED_AT for started_at)."""

    DOCUMENTATION = r"""
options:
  hosts:
    description:
      - The hosts of the run (C(ansible_play_hosts_all)); each host's registered results are read from its host
        variables.
    type: list
    elements: str
    required: true
  run_dir:
    description: The folder of this run, in O(report_root), where its reports are written.
    type: path
    required: true
  report_root:
    description:
      - The report root, the folder that holds the run folders (as the C(gpufleet.core.report_root) filter resolves
        it); the earlier runs are read from it.
    type: path
    required: true
"""

    STARTED_AT = r"""
options:
  started_at:
    description: When the run started (UTC, ISO 8601).
    type: str
    required: true
"""
