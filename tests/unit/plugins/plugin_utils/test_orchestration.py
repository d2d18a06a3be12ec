"""run.orchestration: the AWX job variables (awx_meta_vars in AWX's awx/main/models/unified_jobs.py and jobs.py)
and gpufleet's own slice variables, as report.json records them."""

import json
import os

import jsonschema

from ansible_collections.gpufleet.core.plugins.plugin_utils.orchestration import orchestration
from tests.support.schema_check import ROOT


# what AWX passes a slice job of a sliced job template that a schedule launched (both prefixes, as AWX does)
AWX_SLICE_JOB = {}
for _prefix in ("awx", "tower"):
    AWX_SLICE_JOB.update({
        _prefix + "_job_id": 1207, _prefix + "_job_launch_type": "workflow",
        _prefix + "_workflow_job_id": 1204, _prefix + "_workflow_job_name": "gpufleet audit",
        _prefix + "_workflow_job_launch_type": "scheduled",
        _prefix + "_parent_job_schedule_id": 3, _prefix + "_parent_job_schedule_name": "nightly",
        _prefix + "_inventory_id": 2, _prefix + "_inventory_name": "gpu fleet",
        _prefix + "_job_template_id": 9, _prefix + "_job_template_name": "gpufleet audit",
        _prefix + "_project_revision": "0123abcd", _prefix + "_execution_node": "awx-ee-7f9c",
        _prefix + "_user_email": "someone@example.com", _prefix + "_user_name": "someone",
    })


def orchestration_schema():
    with open(os.path.join(ROOT, "docs", "schema", "report.schema.json")) as handle:
        schema = json.load(handle)
    return schema["$defs"]["run"]["properties"]["orchestration"]


def test_a_plain_run_has_none():
    assert orchestration({}) is None
    assert orchestration(None) is None
    assert orchestration({"gpufleet_slice_number": 1}) is None


def test_an_awx_slice_job_is_grouped_by_its_workflow_job():
    record = orchestration(AWX_SLICE_JOB)
    assert record["source"] == "awx"
    assert record["run_group"] == "awx-workflow-job-1204"
    assert record["slice"] is None
    assert record["awx"] == {
        "job_id": 1207, "job_launch_type": "workflow", "workflow_job_id": 1204, "workflow_job_name": "gpufleet audit",
        "workflow_job_launch_type": "scheduled", "parent_job_schedule_id": 3, "parent_job_schedule_name": "nightly",
        "inventory_id": 2, "inventory_name": "gpu fleet", "job_template_id": 9, "job_template_name": "gpufleet audit",
        "project_revision": "0123abcd", "execution_node": "awx-ee-7f9c"}
    jsonschema.validate(record, orchestration_schema())


def test_the_users_name_and_email_are_not_recorded():
    assert "someone" not in json.dumps(orchestration(AWX_SLICE_JOB))


def test_awx_wins_over_tower_and_tower_alone_is_read():
    assert orchestration({"awx_job_id": "12", "tower_job_id": 11})["awx"] == {"job_id": 12}
    assert orchestration({"tower_job_id": 11})["awx"] == {"job_id": 11}


def test_a_job_outside_a_workflow_has_no_group():
    record = orchestration({"awx_job_id": 5, "awx_job_launch_type": "manual"})
    assert (record["run_group"], record["awx"]) == (None, {"job_id": 5, "job_launch_type": "manual"})


def test_slicing_outside_awx():
    record = orchestration({"gpufleet_run_group": "nightly-2026-12-02", "gpufleet_slice_number": "2",
                            "gpufleet_slice_count": 4})
    assert record == {"source": "gpufleet", "run_group": "nightly-2026-12-02", "slice": {"number": 2, "count": 4},
                      "awx": None}
    jsonschema.validate(record, orchestration_schema())


def test_an_explicit_group_wins_over_the_workflow_job():
    record = orchestration(dict(AWX_SLICE_JOB, gpufleet_run_group="fleet-a"))
    assert record["run_group"] == "fleet-a"


def test_an_impossible_slice_is_not_recorded():
    for number, count in ((0, 3), (4, 3), ("x", 3), (1, None)):
        record = orchestration({"gpufleet_slice_number": number, "gpufleet_slice_count": count,
                                "gpufleet_run_group": "g"})
        assert record["slice"] is None, (number, count)


def test_ids_that_are_not_numbers_are_left_out():
    assert orchestration({"awx_job_id": "abc", "awx_job_template_name": "t"})["awx"] == {"job_template_name": "t"}
