# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
name: run_dir
short_description: The run folder a run of some kind proposes in the report root, named by its UTC start time
version_added: 1.0.0
description:
  - Takes the report root (the C(gpufleet.core.report_root) filter's answer) and returns
    C(<report root>/<UTC start time><kind's suffix><suffix>), e.g. C(reports/20261206T161400Z-loadstep), the one
    naming of run folders for every playbook (C(plugins/plugin_utils/run_folder.py), docs/report-format.md).
  - The folder is not created here; M(gpufleet.core.run_folder) or the run's report step creates it exclusively
    (C(-2), C(-3), ... when another run that started in the same second holds the name).
options:
  _input:
    description: The report root.
    type: path
    required: true
  kind:
    description: The kind of run; its suffix follows the start time (V(audit) none).
    type: str
    default: audit
    choices: [audit, incident, loadstep, driver-rollout, driver-rollback, aggregate, validate, quarantine]
  suffix:
    description: Added after the kind's suffix (C(gpufleet_audit_suffix), e.g. V(-before)); no C(/).
    type: str
    default: ""
"""

EXAMPLES = r"""
- name: Name a load step's run folder
  ansible.builtin.set_fact:
    run_dir: "{{ gpufleet_report_root | gpufleet.core.run_dir('loadstep') }}"
"""

RETURN = r"""
_value:
  description: The run folder proposed, C(<report root>/<UTC start time><kind's suffix><suffix>).
  type: path
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.gpufleet.core.plugins.plugin_utils.run_folder import proposed_run_dir


def run_dir(report_root, kind="audit", suffix=""):
    if not isinstance(report_root, str) or not report_root:
        raise AnsibleFilterError("run_dir expects the report root (a folder name), got %r" % (report_root,))
    try:
        return proposed_run_dir(report_root, kind, suffix=suffix or "")
    except ValueError as exc:
        raise AnsibleFilterError("run_dir: %s" % exc)


class FilterModule(object):
    def filters(self):
        return {"run_dir": run_dir}
