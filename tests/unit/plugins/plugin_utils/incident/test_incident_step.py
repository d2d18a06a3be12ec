"""The incident's report step (incident/run.py incident_step, the one call of the incident_report action): its
files in the audit's run folder, named by run_folder, and the task's fields and line."""

import os

from ansible_collections.gpufleet.core.plugins.plugin_utils import run_folder
from ansible_collections.gpufleet.core.plugins.plugin_utils.audit.run import run_audit
from ansible_collections.gpufleet.core.plugins.plugin_utils.incident.run import incident_step
from ansible_collections.gpufleet.core.plugins.plugin_utils.policy import validate_policy


def test_the_incident_adds_its_files_to_the_audits_run_folder(tmp_path):
    root = str(tmp_path)
    run_dir = run_folder.new_run_dir(root, "incident", "20261206T161400Z")
    run_audit({"gpu-01": {"unreachable": True, "msg": "no route"}}, {"gpu-01": validate_policy({})}, run_dir, root,
              "2026-12-06T16:14:00Z")
    fields, summary = incident_step(run_dir, root, {})
    assert os.path.basename(run_dir) == "20261206T161400Z-incident"
    assert set(run_folder.RUN_FILES["incident"]) <= set(os.listdir(run_dir))
    assert [os.path.basename(path) for path in fields["files"]] == [
        run_folder.TIMELINE_FILE, run_folder.FAULT_LOG_FILE, "report.html"]
    assert fields["evidence"] == {} and fields["events"] == 0 and fields["changed"] is False
    assert summary == "incident: 0 events on the timeline, 0 pairs close in time; timeline.json, fault-log.md, report.html"
