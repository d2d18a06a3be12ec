#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
---
module: audit_report
short_description: Diagnose the collected GPU facts of a fleet and write the audit reports
version_added: 1.0.0
description:
  - Runs once on the controller after M(gpufleet.core.gpu_facts) has run on every host of the play.
  - Writes each host's facts to C(<run_dir>/facts/<host>.json), checks them against each host's effective
    policy (see M(gpufleet.core.policy_check)), the compatibility matrices, MIG layouts, thresholds and the Xid
    catalog, layer by layer, and correlates across hosts into likely causes.
  - Writes C(report.json), C(report.html), C(junit.xml), C(gpufleet.prom) and C(hosts.txt) into O(run_dir), each
    atomically, and only then points C(<report_root>/latest) at the run.
  - Prints a short summary (counts per layer and severity, likely causes, unreachable and failed hosts) and
    one line per host (up to O(host_lines)).
  - Fails when a finding at or above the fail severity exists, so scheduled runs and CI can act on the exit
    code. The reports are written first.
  - This is an action plugin; it runs on the controller only.
author:
  - gpufleet contributors (!UNKNOWN)
options:
  hosts:
    description: Hosts of the audit; each must have the registered result named by O(result_var).
    type: list
    elements: str
    required: true
  result_var:
    description: Name of the variable each host registered the M(gpufleet.core.gpu_facts) result in.
    type: str
    default: gpufleet_collect
  run_marker_var:
    description:
      - Host variable set to O(run_dir) on each host just before its collection in this run. A host without it
        left the playbook before this audit (unreachable or failed earlier), so it is reported as unreachable
        rather than with an older audit's result.
    type: str
    default: gpufleet_collect_run
  policies:
    description: Effective policies by id, as returned by M(gpufleet.core.policy_check) in C(policies).
    type: dict
    required: true
  host_policy:
    description: Policy id of each host, as returned by M(gpufleet.core.policy_check) in C(host_policy).
    type: dict
    required: true
  run_dir:
    description: Folder of this run; created when missing.
    type: path
    required: true
  report_root:
    description: Folder that holds the run folders and the C(latest) link.
    type: path
    required: true
  started_at:
    description: UTC start time of the run, ISO 8601.
    type: str
    required: true
  fail_severity:
    description:
      - A finding at or above this severity fails the task. V(none) never fails it.
      - When not given, the strictest C(report.fail_severity) of the hosts' policies applies (default critical).
    type: str
    choices: [critical, warning, info, none]
  host_lines:
    description: Print one line per host when the audit has at most this many hosts; all lines are in C(hosts.txt).
    type: int
    default: 200
  compare_with:
    description:
      - Run folder of an earlier audit (the one before a remediation). The findings of both are compared and
        C(remediation.json) is written with the findings cleared, the findings that remain (and why, for
        example that no role fixes it or that the host was not converged) and the new ones. A summary is printed.
      - The task fails when a host was not converged (its remediation failed, or this audit could not read it).
    type: path
  not_converged_var:
    description:
      - With O(compare_with), the host variable that is true on hosts whose remediation failed.
    type: str
    default: gpufleet_remediation_failed
attributes:
  check_mode:
    description: Reports are written in check mode too; they change nothing on the hosts.
    support: full
notes:
  - Report files are described by C(docs/schema/report.schema.json).
seealso:
  - module: gpufleet.core.gpu_facts
  - module: gpufleet.core.policy_check
"""

EXAMPLES = r"""
- name: Diagnose the fleet and write the reports
  gpufleet.core.audit_report:
    hosts: "{{ ansible_play_hosts_all }}"
    policies: "{{ gpufleet_policies.policies }}"
    host_policy: "{{ gpufleet_policies.host_policy }}"
    run_dir: /srv/gpufleet/reports/20261130T060000Z
    report_root: /srv/gpufleet/reports
    started_at: "2026-11-30T06:00:00Z"
  delegate_to: localhost
  run_once: true
"""

RETURN = r"""
report_dir:
  description: The run folder.
  returned: always
  type: str
  sample: /srv/gpufleet/reports/20261130T060000Z
files:
  description: Paths of the report files written.
  returned: always
  type: list
  elements: str
findings_by_severity:
  description: Number of findings per severity; the full report is in C(report.json).
  returned: always
  type: dict
  sample: {"critical": 2, "warning": 11, "info": 3}
causes:
  description: Number of likely causes found across hosts.
  returned: always
  type: int
host_fixes:
  description: Remediation roles that can fix each host's findings (hosts without such findings are left out).
  returned: always
  type: dict
  sample: {"gpu-a100-03": ["mig_layout", "worker_limits"]}
remediation:
  description: With O(compare_with), the counts of cleared, remaining and new findings.
  returned: when O(compare_with) is set
  type: dict
  sample: {"cleared": 5, "remaining": 3, "new": 0}
"""

from ansible.module_utils.basic import AnsibleModule

# Also the action plugin's argument spec: one definition for both.
ARGUMENT_SPEC = {
    "hosts": {"type": "list", "elements": "str", "required": True},
    "result_var": {"type": "str", "default": "gpufleet_collect"},
    "run_marker_var": {"type": "str", "default": "gpufleet_collect_run"},
    "policies": {"type": "dict", "required": True},
    "host_policy": {"type": "dict", "required": True},
    "run_dir": {"type": "path", "required": True},
    "report_root": {"type": "path", "required": True},
    "started_at": {"type": "str", "required": True},
    "fail_severity": {"type": "str", "choices": ["critical", "warning", "info", "none"]},
    "host_lines": {"type": "int", "default": 200},
    "compare_with": {"type": "path"},
    "not_converged_var": {"type": "str", "default": "gpufleet_remediation_failed"},
}


def main():
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    module.fail_json(msg="gpufleet.core.audit_report runs on the controller as an action plugin; "
                         "it cannot run as a module on a host")


if __name__ == "__main__":
    main()
