"""The audit's report step (audit/report_step.py, the one call of the audit_report action) on plain data: the
run folder it creates, the lines it prints, and the artifact naming the run folder run_dir."""

import os

import pytest

from ansible_collections.gpufleet.core.plugins.modules.audit_report import ARGUMENT_SPEC
from ansible_collections.gpufleet.core.plugins.plugin_utils import run_folder
from ansible_collections.gpufleet.core.plugins.plugin_utils.audit.report_step import AuditReportError, report_step
from ansible_collections.gpufleet.core.plugins.plugin_utils.policy import validate_policy

HOSTS = ["gpu-01", "gpu-02"]


def arguments(root, **changed):
    args = {name: spec.get("default") for name, spec in ARGUMENT_SPEC.items()}
    policy = validate_policy({})
    args.update(hosts=HOSTS, policies={"p0": policy}, host_policy=dict.fromkeys(HOSTS, "p0"), store=False,
                run_dir=run_folder.proposed_run_dir(root, "audit", "20261206T161400Z"), report_root=root,
                started_at="2026-12-06T16:14:00Z", scope_hosts=HOSTS, scope_pattern="all")
    args.update(changed)
    return args


RESULTS = {host: {"failed": True, "msg": "timed out"} for host in HOSTS}


def test_two_audits_of_one_second_print_their_own_folders(tmp_path):
    root = str(tmp_path)
    first, second = {}, {}
    report_step(first, arguments(root), RESULTS)
    summary = []
    report_step(second, arguments(root, host_lines=1), RESULTS, summary=summary)
    assert first["run_dir"] == os.path.join(root, "20261206T161400Z")
    assert second["run_dir"] == os.path.join(root, "20261206T161400Z-2") == second["report_dir"]
    assert summary[0] == "2 hosts: one line each in %s/hosts.txt" % second["run_dir"]
    assert second["stats"]["run_dir"] == second["stats"]["report_dir"] == second["run_dir"]
    assert second["host_verdicts"]["gpu-01"]["verdict"] == "not_audited"


def test_a_host_without_a_checked_policy_is_named(tmp_path):
    with pytest.raises(AuditReportError, match="no checked policy for gpu-02"):
        report_step({}, arguments(str(tmp_path), host_policy={"gpu-01": "p0"}), RESULTS)
    assert os.listdir(str(tmp_path)) == []
