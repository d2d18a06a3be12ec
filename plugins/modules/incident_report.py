#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
---
module: incident_report
short_description: Write an incident's evidence bundles, timeline and fault log into the audit's run folder
version_added: 1.1.0
description:
  - Runs on the controller after M(gpufleet.core.audit_report) wrote the audit of the same run (C(incident.yml)).
  - For each host, writes C(evidence/<host>/) from its M(gpufleet.core.gpu_evidence) result - every file, the
    host's facts, C(validation.json) when the facts hold the host's active checks (C(gpufleet_incident_validate);
    manifest layer C(hardware), status C(skipped) with the reason when the node was refused), C(manifest.json)
    (command, exit status, duration, size and sha256 of each file; what is missing and why) and
    C(evidence-<host>.tar.gz) holding them all. A host whose evidence could not be collected gets a
    manifest that says why.
  - Writes C(timeline.json) (every event of the window of every host on one UTC time axis, with host, GPU, layer,
    source, the line it came from and the events close in time across sources), C(fault-log.md) (the method's
    template, filled in as far as the evidence goes; each failed active check with its figures) and C(report.html) again with the timeline view.
  - O(run_dir) is the run folder of the audit (RV(gpufleet.core.audit_report#module:run_dir)); the project's earlier
    runs come from the run folders under O(report_root).
  - This is an action plugin; it runs on the controller only.
author:
  - gpufleet contributors (!UNKNOWN)
options:
  evidence_var:
    description: Name of each host's registered M(gpufleet.core.gpu_evidence) result.
    type: str
    default: gpufleet_evidence
  facts_var:
    description: Name of each host's registered M(gpufleet.core.gpu_facts) result.
    type: str
    default: gpufleet_collect
  run_marker_var:
    description:
      - Host variable that names the run a host's results belong to (older results are not used).
      - Unset, the hosts still active in the play are those this run reached, as for M(gpufleet.core.audit_report).
    type: str
  run_marker:
    description: The value of O(run_marker_var) of the hosts of this run (the proposed run folder).
    type: str
extends_documentation_fragment:
  - gpufleet.core.attributes
  - gpufleet.core.run_folder
attributes:
  check_mode:
    support: full
    details: Writes the same files in check mode; it changes no host.
  diff_mode:
    support: none
seealso:
  - module: gpufleet.core.gpu_evidence
  - module: gpufleet.core.audit_report
"""

EXAMPLES = r"""
- name: Keep the evidence, timeline and fault log
  gpufleet.core.incident_report:
    hosts: "{{ ansible_play_hosts_all }}"
    run_dir: "{{ gpufleet_audit.run_dir }}"
    report_root: "{{ gpufleet_report_root }}"
  delegate_to: localhost
  run_once: true
"""

RETURN = r"""
summary_text:
  description:
    - The line that sums up the incident (events, pairs close in time, files).
    - For the stdout callback C(gpufleet.core.audit) to print after the playbook's last task; with any other
      stdout callback it is printed when this task runs.
  returned: when the stdout callback is C(gpufleet.core.audit)
  type: str
files:
  description: The files written (timeline.json, fault-log.md, report.html).
  returned: success
  type: list
  elements: str
evidence:
  description: Per host, the evidence folder, the archive and the number of files by status.
  returned: success
  type: dict
  sample: {"gpu-01": {"folder": "evidence/gpu-01", "archive": "evidence-gpu-01.tar.gz",
           "by_status": {"ok": 9, "missing": 4}}}
events:
  description: Number of events on the timeline.
  returned: success
  type: int
correlations:
  description: Number of pairs of events marked close in time.
  returned: success
  type: int
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufleet.core.plugins.module_utils.args_common import run_folder_spec

# Also the action plugin's argument spec: one definition for both.
ARGUMENT_SPEC = dict(run_folder_spec(started_at=False), **{
    "evidence_var": {"type": "str", "default": "gpufleet_evidence"},
    "facts_var": {"type": "str", "default": "gpufleet_collect"},
    "run_marker_var": {"type": "str"},
    "run_marker": {"type": "str"},
})


def main():
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    module.fail_json(msg="gpufleet.core.incident_report runs on the controller as an action plugin; "
                         "it cannot run as a module on a host")


if __name__ == "__main__":
    main()
