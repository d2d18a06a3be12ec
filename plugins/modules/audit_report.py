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
  - Creates the run folder O(run_dir) exclusively (O(run_dir)-2, -3, ... when another audit that started in the
    same second holds the name; RV(run_dir) says which), so concurrent audits into one O(report_root)
    never share a folder; with O(create_run_dir=false) the folder was created so before the collection.
  - Facts files that M(gpufleet.core.gpu_facts) already wrote (its result's C(gpufleet_facts_file)) are not written
    again.
  - Writes C(report.json), C(report.html), C(junit.xml), C(gpufleet.prom) and C(hosts.txt) into the run folder,
    each atomically, with the permissions the umask allows (facts at most 0640, reports at most 0666; never wider
    than the umask). Only then it points C(<report_root>/latest) at the run when the run is V(complete), or
    C(<report_root>/latest-partial) when it is V(partial); a V(failed) run moves neither, and neither link moves
    back to a run that started before the one it points at (overlapping audits end at the newer one).
  - With a store, the run is recorded as C(unfinished) before its reports are written and gets its status once
    they are all in place; its id is the run folder's name, or C(<name>-2), C(-3), ... where a shared store holds
    that id already (the run id in RV(stats) and in every report).
  - The run status, in C(report.json) under C(run.status) and shown by every report - V(complete) when every
    inventory host of O(scope_hosts) was targeted, V(partial) when only some were (C(--limit)), V(failed) when no
    host's facts could be read. A partial or failed run writes no fleet-wide series into its C(gpufleet.prom).
  - Host names become facts file names safely - a name of letters, digits, C(.), C(_) and C(-) (not starting with
    C(.), at most 200 characters) is used as it is; any other name, and names that differ only in case, get a
    sanitized name plus a hash of the real name. C(hosts.<host>.facts_file) in C(report.json) names each file.
  - Prints a short summary (counts per layer and severity, likely causes, unreachable and failed hosts, the
    run status) and one line per host (up to O(host_lines)); with the stdout callback C(gpufleet.core.audit) it
    is printed last, after the hosts' verdicts (O(summary_last)).
  - Does not fail on findings. It returns RV(host_verdicts), which the per-host task
    M(gpufleet.core.audit_verdict) turns into the playbook's exit status, so that the failure is attributed to
    the hosts that have the findings, not to the host that ran this controller step.
  - "Exit status of C(audit.yml) (C(ansible-playbook)): V(0) every targeted host was audited and nothing is at or
    above the fail severity; V(2) findings at or above the fail severity on the hosts marked failed; V(4) the run
    could not do its job - no host matched the pattern and C(--limit), a policy is invalid, a host was unreachable
    (unless its policy sets C(report.accept_unreachable)), a host's collection failed or timed out, or the reports
    could not be written (those hosts are marked unreachable). V(4) wins over V(2). Other non-zero statuses
    are C(ansible-playbook)'s own errors - V(1) (for example a C(--limit) that matches no inventory host), V(5)
    (invalid options), V(99) (interrupted), V(250) (unexpected); a file it cannot parse gives V(4) too."
  - This is an action plugin; it runs on the controller only.
author:
  - gpufleet contributors (!UNKNOWN)
options:
  result_var:
    description: Name of the variable each host of O(hosts) registered the M(gpufleet.core.gpu_facts) result in.
    type: str
    default: gpufleet_collect
  run_marker_var:
    description:
      - Host variable set to O(run_dir) on each host just before its collection in this run. A host without it
        left the playbook before this audit (unreachable or failed earlier), so it is reported as unreachable
        rather than with an older audit's result.
      - When unset, a host counts as collected in this run when it is still active in the play
        (C(ansible_play_hosts)), which needs no task on every host.
    type: str
  policies:
    description: Effective policies by id, as returned by M(gpufleet.core.policy_check) in C(policies).
    type: dict
    required: true
  host_policy:
    description: Policy id of each host, as returned by M(gpufleet.core.policy_check) in C(host_policy).
    type: dict
    required: true
  create_run_dir:
    description:
      - V(true) - create O(run_dir) exclusively here (O(run_dir)-2, -3, ... when the name is taken).
      - V(false) - O(run_dir) was created before the collection (M(gpufleet.core.run_folder), as the audit does, so
        that M(gpufleet.core.gpu_facts) writes each host's facts file as its result arrives) and is used as it is.
    type: bool
    default: true
  scope_hosts:
    description:
      - Every inventory host of the audit's host pattern, without C(--limit)
        (C(query('ansible.builtin.inventory_hostnames', pattern))). When some of them are not in O(hosts), the run
        is V(partial). Not given, O(hosts) is the whole scope.
    type: list
    elements: str
  scope_pattern:
    description: The audit's host pattern, recorded in C(run.scope.pattern).
    type: str
  limit:
    description: The run's C(--limit) (C(ansible_limit)), recorded in C(run.scope.limit).
    type: str
  fail_severity:
    description:
      - A finding at or above this severity gives its host the verdict V(fail). V(none) never does.
      - When not given, the strictest C(report.fail_severity) of the hosts' policies applies (default critical).
    type: str
    choices: [critical, warning, info, none]
  host_lines:
    description: Print one line per host when the audit has at most this many hosts; all lines are in C(hosts.txt).
    type: int
    default: 200
  summary_last:
    description:
      - With the stdout callback C(gpufleet.core.audit) (this project's C(ansible.cfg)), hand the summary to the
        callback in RV(summary_text), which prints it after the playbook's last task, just before the PLAY RECAP.
      - V(false), or any other stdout callback - print the summary when the reports are written (an audit that
        other steps follow, such as the one before a remediation).
    type: bool
    default: true
  compare_with:
    description:
      - Run folder of an earlier audit (the one before a remediation). The findings of both are compared and
        C(remediation.json) is written with the findings cleared, the findings that remain (and why, for
        example that no role fixes it or that the host was not converged) and the new ones. A summary is printed.
      - A host that was not converged (its remediation failed, or this audit could not read it) gets the verdict V(fail).
    type: path
  store:
    description:
      - Write the run into the run store and compare it with the previous complete run of the same scope
        (C(changes) in C(report.json), C(first_seen) and C(runs_open) per finding). V(false) turns the store off.
      - A store that cannot be written never fails the run; C(report.json) says so under C(store). See C(docs/store.md).
    type: bool
    default: true
  store_url:
    description:
      - Database URL of the run store (C(sqlite:///path) or C(postgresql://user:password@host/db)). Playbooks pass
        the inventory variable C(gpufleet_store_url).
      - Not given, the environment variable C(GPUFLEET_STORE_URL) applies, else the SQLite file
        C(<report_root>/gpufleet.sqlite), created on first use.
    type: str
  textfile_dir:
    description:
      - node_exporter's textfile-collector directory (its C(--collector.textfile.directory)). After the reports are
        written, the run's C(gpufleet.prom) is copied there atomically (a temporary file in that directory renamed
        over C(gpufleet.prom), mode V(0644)) - only by a complete run of the whole scope whose O(run_kind) is
        V(audit). A partial (C(--limit)), failed, incident, load-step or remediation run leaves the file as it is,
        and the summary says so (RV(textfile)).
      - The directory must exist; one that does not is refused with a message, never created, and the run's
        reports are written all the same. Playbooks pass the variable C(gpufleet_textfile_dir). See C(docs/monitoring.md).
    type: path
  run_kind:
    description:
      - The kind of run, with its folder suffix (C(audit), C(incident), C(audit-before), C(audit-loadstep-audit)...);
        only V(audit) replaces the file in O(textfile_dir).
    type: str
    default: audit
  not_converged_var:
    description:
      - With O(compare_with), the host variable that is true on hosts whose remediation failed.
    type: str
    default: gpufleet_remediation_failed
  not_acted_var:
    description:
      - With O(compare_with), the host variable that holds, on the hosts the remediation refused to act on (replayed
        facts, a local connection to another machine's facts), the message saying why; C(remediation.json) lists them
        under C(not_acted).
    type: str
    default: gpufleet_remediation_refused
  orchestration:
    description:
      - Variables that say which AWX job, workflow or slice the run is part of - the C(awx_*) (or C(tower_*))
        job variables AWX passes, and C(gpufleet_run_group), C(gpufleet_slice_number), C(gpufleet_slice_count).
      - Recorded in C(report.json) as C(run.orchestration) (null when none is given) - the job, template, workflow,
        schedule and inventory ids and names, the project revision and execution node, the slice and the run group
        that ties the slices of one fleet run together (C(docs/awx.md)). The user's name and e-mail are left out.
    type: dict
    default: {}
  compress_report:
    description:
      - Also write C(report.json.gz), C(report.json) gzip-compressed, beside C(report.json) (which stays). Playbooks
        pass the variable C(gpufleet_report_compress); C(gpufleet audit --compress) sets it.
    type: bool
    default: false
extends_documentation_fragment:
  - gpufleet.core.attributes
  - gpufleet.core.run_folder
  - gpufleet.core.run_folder.started_at
attributes:
  check_mode:
    support: full
    details: Reports are written in check mode too; they change nothing on the hosts.
  diff_mode:
    support: none
notes:
  - Report files are described by C(docs/schema/report.schema.json).
  - node_exporter's textfile collector reads C(<report_root>/latest), which only complete runs move, or the
    directory O(textfile_dir) names.
seealso:
  - module: gpufleet.core.audit_verdict
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
store:
  description: What the run store did with this run (C(report.json) C(store)); V(off), V(written) or V(failed) in C(status).
  returned: always
  type: dict
  sample: {"status": "written", "url": "sqlite:////srv/gpufleet/reports/gpufleet.sqlite", "error": null}
run_dir:
  description: The run folder (created here as O(run_dir), or O(run_dir)-N when that name was taken; O(run_dir) with O(create_run_dir=false)).
  returned: always
  type: str
  sample: /srv/gpufleet/reports/20261130T060000Z
report_dir:
  description: The same as RV(run_dir), under its name before issue 26, for playbooks that read it.
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
diagnosed_in_workers:
  description: How many hosts' own rules ran in their Ansible workers (M(gpufleet.core.gpu_facts) with O(gpufleet.core.gpu_facts#module:policy)), so that
    this task read neither their facts nor their facts files; the other hosts were diagnosed here.
  returned: success
  type: int
  sample: 998
host_fixes:
  description: Remediation roles that can fix each host's findings (hosts without such findings are left out).
  returned: always
  type: dict
  sample: {"gpu-a100-03": ["mig_layout", "worker_limits"]}
run_status:
  description: V(complete), V(partial) or V(failed), as in C(run.status) of C(report.json).
  returned: always
  type: str
  sample: complete
failed_threshold:
  description: Whether a finding at or above the fail severity exists.
  returned: always
  type: bool
host_verdicts:
  description:
    - Each host's verdict for M(gpufleet.core.audit_verdict) - V(ok), V(fail) (findings at or above the fail
      severity, or not converged) or V(not_audited) (unreachable, collection failed), with a message.
  returned: always
  type: dict
  sample: {"gpu-a100-03": {"verdict": "fail", "msg": "1 finding(s) at or above critical: hardware.gpu_lost"}}
stats:
  description: The run's summary for C(ansible.builtin.set_stats) (ansible-runner and AWX artifacts).
  returned: always
  type: dict
  sample: {"run_id": "20261130T060000Z", "run_status": "complete", "failed_threshold": true,
           "findings_by_severity": {"critical": 2, "warning": 11, "info": 3}, "hosts_failing": ["gpu-a100-03"],
           "hosts_not_audited": [], "hosts": {"total": 16, "ok": 16, "unreachable": 0, "failed": 0}}
fixable_roles:
  description:
    - The roles C(remediate.yml) can run, in the order it runs them (also the C(--tags) that select them by hand).
  returned: always
  type: list
  elements: str
  sample: [driver, gpu_settings, mig_layout, worker_limits, restart_policy]
summary_text:
  description: The summary, for the stdout callback C(gpufleet.core.audit) to print last (O(summary_last)).
  returned: when O(summary_last) is true and the stdout callback is C(gpufleet.core.audit)
  type: str
textfile:
  description: With O(textfile_dir), the file there and whether this run replaced it, or why not.
  returned: when O(textfile_dir) is set and the reports were written
  type: dict
  contains:
    path:
      description: The C(gpufleet.prom) node_exporter reads.
      type: str
    written:
      description: Whether this run replaced it.
      type: bool
    reason:
      description: Why it was or was not replaced.
      type: str
  sample: {"path": "/var/lib/prometheus/node-exporter/gpufleet.prom", "written": false,
           "reason": "a partial run (--limit) never replaces it (2 of the pattern's 18 hosts were not targeted (--limit a))"}
remediation:
  description: With O(compare_with), the counts of cleared, remaining and new findings.
  returned: when O(compare_with) is set
  type: dict
  sample: {"cleared": 5, "remaining": 3, "new": 0}
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufleet.core.plugins.module_utils.args_common import run_folder_spec
from ansible_collections.gpufleet.core.plugins.module_utils.vocabulary import FAIL_SEVERITIES

# Also the action plugin's argument spec: one definition for both.
ARGUMENT_SPEC = dict(run_folder_spec(), **{
    "result_var": {"type": "str", "default": "gpufleet_collect"},
    "run_marker_var": {"type": "str"},
    "policies": {"type": "dict", "required": True},
    "host_policy": {"type": "dict", "required": True},
    "create_run_dir": {"type": "bool", "default": True},
    "scope_hosts": {"type": "list", "elements": "str"},
    "scope_pattern": {"type": "str"},
    "limit": {"type": "str"},
    "fail_severity": {"type": "str", "choices": list(FAIL_SEVERITIES)},
    "host_lines": {"type": "int", "default": 200},
    "summary_last": {"type": "bool", "default": True},
    "compare_with": {"type": "path"},
    "not_converged_var": {"type": "str", "default": "gpufleet_remediation_failed"},
    "not_acted_var": {"type": "str", "default": "gpufleet_remediation_refused"},
    "store": {"type": "bool", "default": True},
    "store_url": {"type": "str", "no_log": True},
    "orchestration": {"type": "dict", "default": {}},
    "textfile_dir": {"type": "path"},
    "run_kind": {"type": "str", "default": "audit"},
    "compress_report": {"type": "bool", "default": False},
})


def main():
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    module.fail_json(msg="gpufleet.core.audit_report runs on the controller as an action plugin; "
                         "it cannot run as a module on a host")


if __name__ == "__main__":
    main()
