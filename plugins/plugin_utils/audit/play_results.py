# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the controller's actions share about the play's hosts: each host's registered result, read from hostvars
(audit_report, incident_report), whether the host was reached in this run, and a host's verdict as a task result
(audit_verdict, and gpu_facts for a host not audited)."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

NOT_REACHED_MSG = "not reached in this run: the host left the playbook earlier (unreachable or failed)"


def verdict_result(verdict, msg):
    """One host's verdict as its task result: fail fails the task (exit status 2), not_audited marks the host
    unreachable (exit status 4)."""
    result = {"changed": False, "verdict": verdict, "msg": msg or verdict}
    if verdict == "fail":
        result["failed"] = True
    elif verdict == "not_audited":
        result["unreachable"] = True
    return result


def registered_results(hostvars, hosts, name, reached):
    """Each host's registered result, read without templating it again. A host this run did not reach
    (it left the playbook earlier, unreachable or failed) holds only an older audit's result."""
    results = {}
    for host in hosts:
        variables = hostvars.raw_get(host)
        if not reached(host, variables):
            results[host] = {"unreachable": True, "msg": NOT_REACHED_MSG}
        else:
            results[host] = variables.get(name)
    return results


def reached_in_this_run(marker_var, marker, task_vars):
    """reached(host, its variables): by the run marker (the host variable marker_var set to marker) when one is
    named, else by the play's active hosts."""
    if marker_var:
        return lambda host, variables: variables.get(marker_var) == marker
    active = set(task_vars.get("ansible_play_hosts") or ())
    return lambda host, variables: host in active
