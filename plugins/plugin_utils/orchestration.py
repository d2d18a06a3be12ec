# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which job, workflow and slice a run belongs to (report.json run.orchestration; docs/awx.md).

AWX and automation controller pass every job its identifiers as extra variables, each under the prefixes
awx_ and tower_ (awx/main/models/unified_jobs.py and jobs.py, awx_meta_vars). They name no slice: a sliced job
is a workflow job whose nodes are the slice jobs, each run on hosts[n-1::count] of the inventory's enabled hosts
by name; the slices share awx_workflow_job_id. So a run's group (run_group) is, first match wins:
gpufleet_run_group (set by whoever slices outside AWX, with gpufleet_slice_number and gpufleet_slice_count),
else the AWX workflow job the run is a node of, else none.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

JOB_VARIABLE_PREFIXES = ("awx", "tower")
# the identifiers recorded (the user's name and e-mail that AWX passes too are left out)
AWX_FIELDS = {
    "job_id": int,
    "job_launch_type": str,
    "job_template_id": int,
    "job_template_name": str,
    "workflow_job_id": int,
    "workflow_job_name": str,
    "workflow_job_launch_type": str,
    "schedule_id": int,
    "schedule_name": str,
    "parent_job_schedule_id": int,
    "parent_job_schedule_name": str,
    "inventory_id": int,
    "inventory_name": str,
    "project_revision": str,
    "execution_node": str,
}
RUN_GROUP = "gpufleet_run_group"
SLICE_NUMBER = "gpufleet_slice_number"
SLICE_COUNT = "gpufleet_slice_count"


def _typed(kind, value):
    if value is None or value == "":
        return None
    try:
        return kind(value)
    except (TypeError, ValueError):
        return None


def awx_identifiers(variables):
    """{field: value} of the AWX job variables present (awx_ before tower_), typed; {} outside AWX."""
    found = {}
    for field, kind in AWX_FIELDS.items():
        for prefix in JOB_VARIABLE_PREFIXES:
            value = _typed(kind, variables.get("%s_%s" % (prefix, field)))
            if value is not None:
                found[field] = value
                break
    return found


def slice_of(variables):
    """{"number": n, "count": m} from gpufleet_slice_number and gpufleet_slice_count, or None when either is
    missing or they are not 1 <= n <= m."""
    number = _typed(int, variables.get(SLICE_NUMBER))
    count = _typed(int, variables.get(SLICE_COUNT))
    if number is None or count is None or not 1 <= number <= count:
        return None
    return {"number": number, "count": count}


def run_group(variables, awx):
    explicit = _typed(str, variables.get(RUN_GROUP))
    if explicit:
        return explicit
    if awx.get("workflow_job_id") is not None:
        return "awx-workflow-job-%d" % awx["workflow_job_id"]
    return None


def orchestration(variables):
    """The run's orchestration record for report.json, or None when nothing orchestrated it."""
    variables = variables or {}
    awx = awx_identifiers(variables)
    part = slice_of(variables)
    group = run_group(variables, awx)
    if not (awx or part or group):
        return None
    return {"source": "awx" if awx else "gpufleet", "run_group": group, "slice": part, "awx": awx or None}
