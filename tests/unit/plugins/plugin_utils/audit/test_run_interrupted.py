"""An audit killed after the store's commit: the store calls the run complete only once its folder is, and no
temporary file stays behind, whether the kill is a signal while a report file is written or an end between the
reports and the store's last word."""

import os
import signal
import subprocess
import sys
import textwrap

import pytest
from sqlalchemy import select

from ansible_collections.gpufleet.core.plugins.plugin_utils.audit import run as audit_run
from ansible_collections.gpufleet.core.plugins.plugin_utils.policy import validate_policy
from ansible_collections.gpufleet.core.plugins.plugin_utils.store import record as store_record
from ansible_collections.gpufleet.core.plugins.plugin_utils.store.engine import make_engine
from ansible_collections.gpufleet.core.plugins.plugin_utils.store.queries import find_run
from ansible_collections.gpufleet.core.plugins.plugin_utils.store.record import StoreSettings
from ansible_collections.gpufleet.core.plugins.plugin_utils.store.tables import RUNS

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))))
FACTS = {"nvidia_present": False}


def audit(report_root, run_name, started_at):
    run_dir = os.path.join(report_root, run_name)
    os.makedirs(os.path.join(run_dir, "facts"))
    results = {"node-1": {"ansible_facts": {"gpufleet": dict(FACTS)}, "changed": False}}
    store = StoreSettings("sqlite:///%s" % os.path.join(report_root, "gpufleet.sqlite"), "test")
    return audit_run.run_audit(results, {"node-1": validate_policy({})}, run_dir, report_root, started_at,
                               store=store)


def stored_statuses(report_root):
    engine = make_engine("sqlite:///%s" % os.path.join(report_root, "gpufleet.sqlite"))
    try:
        with engine.connect() as connection:
            return {row.run_id: row.status for row in connection.execute(select(RUNS.c.run_id, RUNS.c.status))}
    finally:
        engine.dispose()


def temporary_files(folder):
    return [os.path.join(path, name) for path, _dirs, names in os.walk(folder) for name in names
            if name.endswith(".tmp")]


KILLED_WHILE_WRITING = textwrap.dedent("""
    import os, signal, sys
    sys.path.insert(0, %(collections)r)
    sys.path.insert(0, %(root)r)
    from ansible_collections.gpufleet.core.plugins.plugin_utils import run_folder
    from tests.unit.plugins.plugin_utils.audit.test_run_interrupted import audit

    def killed(_fd):  # SIGTERM (AWX cancelling the job) while report.json's temporary file is open
        os.kill(os.getpid(), signal.SIGTERM)
    run_folder.os.fsync = killed
    audit(sys.argv[1], "20261201T000000Z", "2026-12-01T00:00:00Z")
""")


def test_a_run_terminated_while_writing_its_reports_is_unfinished_in_the_store_and_leaves_no_temporary(tmp_path):
    report_root = str(tmp_path / "reports")
    script = KILLED_WHILE_WRITING % {"collections": os.path.join(ROOT, "collections"), "root": ROOT}
    killed = subprocess.run([sys.executable, "-c", script, report_root], capture_output=True, text=True, timeout=120,
                            check=False)
    assert killed.returncode == -signal.SIGTERM, killed.stderr[-3000:]
    assert temporary_files(report_root) == []
    assert not os.path.lexists(os.path.join(report_root, "latest"))
    assert not os.path.exists(os.path.join(report_root, "20261201T000000Z", "report.json"))
    # the store committed the run before the reports: it says unfinished, and the next run does not compare with it
    assert stored_statuses(report_root) == {"20261201T000000Z": "unfinished"}
    report, _paths, _lines = audit(report_root, "20261202T000000Z", "2026-12-02T00:00:00Z")
    assert report["changes"]["status"] == "first_run"
    assert stored_statuses(report_root) == {"20261201T000000Z": "unfinished", "20261202T000000Z": "complete"}


def test_a_run_ended_between_its_reports_and_the_stores_last_word_is_finished_by_the_next_run(tmp_path, monkeypatch):
    report_root = str(tmp_path / "reports")

    def killed(_settings, _report):
        raise KeyboardInterrupt()
    monkeypatch.setattr(audit_run, "finish_run", killed)
    with pytest.raises(KeyboardInterrupt):
        audit(report_root, "20261201T000000Z", "2026-12-01T00:00:00Z")
    assert stored_statuses(report_root) == {"20261201T000000Z": "unfinished"}
    engine = make_engine("sqlite:///%s" % os.path.join(report_root, "gpufleet.sqlite"))
    with engine.connect() as connection:
        with pytest.raises(Exception, match="no run 'latest'"):
            find_run(connection, "latest")
    engine.dispose()
    monkeypatch.setattr(audit_run, "finish_run", store_record.finish_run)
    # its folder is complete after all: the next run's store transaction gives it its status, and compares with it
    report, _paths, _lines = audit(report_root, "20261202T000000Z", "2026-12-02T00:00:00Z")
    assert stored_statuses(report_root) == {"20261201T000000Z": "complete", "20261202T000000Z": "complete"}
    assert report["changes"]["against"] == "20261201T000000Z"
    assert temporary_files(report_root) == []
