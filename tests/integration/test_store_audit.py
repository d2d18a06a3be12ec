"""The run store under the real playbook: `make audit` twice remembers the first run; a store that cannot
be written leaves the reports and the exit status as they would be; PostgreSQL by GPUFLEET_STORE_URL."""

import json
import os
import subprocess
import sys

from tests.support.postgres import postgres_cluster  # noqa: F401 pylint: disable=unused-import
from ansible_collections.gpufleet.core.plugins.plugin_utils.reports.format import expanded

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PLAYBOOK_BIN = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")
DEMO_EXIT_STATUS = 2  # the demo fleet has critical findings on purpose


def audit(report_dir, *extra, **environment):
    env = {name: value for name, value in os.environ.items() if name != "GPUFLEET_STORE_URL"}
    env.update(ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_NOCOLOR="1", **environment)
    completed = subprocess.run([PLAYBOOK_BIN, "audit.yml", "-e", "gpufleet_report_dir=%s" % report_dir] + list(extra),
                               cwd=ROOT, env=env, capture_output=True, text=True, timeout=600, check=False)
    with open(os.path.join(report_dir, "latest", "report.json"), encoding="utf-8") as stream:
        return completed, expanded(json.load(stream))


def test_second_audit_shows_the_first_runs_findings_as_persisting(tmp_path):
    first_run, first = audit(str(tmp_path))
    second_run, second = audit(str(tmp_path))
    assert (first_run.returncode, second_run.returncode) == (DEMO_EXIT_STATUS, DEMO_EXIT_STATUS)
    assert os.path.isfile(tmp_path / "gpufleet.sqlite")
    assert first["changes"]["status"] == "first_run" and second["changes"]["status"] == "compared"
    assert second["changes"]["against"] == first["run"]["id"]
    first_ids = {finding["identity"] for finding in first["findings"]}
    assert first_ids and set(second["changes"]["persisting"]) == first_ids
    assert second["changes"]["counts"] == {"new": 0, "persisting": len(first_ids), "cleared": 0}
    for finding in second["findings"]:
        assert finding["first_seen"] == first["run"]["started_at"] and finding["runs_open"] == 2
    assert "Changes since %s: 0 new, 0 cleared, %d persisting" % (first["run"]["id"], len(first_ids)) in second_run.stdout


def test_unwritable_store_keeps_reports_and_exit_status(tmp_path):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    completed, report = audit(str(tmp_path / "reports"), "-e", "gpufleet_store_url=sqlite:///%s/store.sqlite" % blocker)
    assert completed.returncode == DEMO_EXIT_STATUS
    assert report["store"]["status"] == "failed" and report["store"]["source"] == "inventory (gpufleet_store_url)"
    assert report["changes"]["status"] == "unavailable"
    assert "Store: NOT WRITTEN" in completed.stdout
    for name in ("report.html", "junit.xml", "gpufleet.prom"):
        assert os.path.getsize(tmp_path / "reports" / "latest" / name) > 0


def test_store_off_and_postgresql_by_environment(tmp_path, postgres_cluster):  # noqa: F811
    completed, report = audit(str(tmp_path / "off"), "-e", "gpufleet_store=false")
    assert completed.returncode == DEMO_EXIT_STATUS and report["store"]["status"] == "off"
    url = postgres_cluster.new_database()
    completed, report = audit(str(tmp_path / "pg"), GPUFLEET_STORE_URL=url)
    assert completed.returncode == DEMO_EXIT_STATUS
    assert report["store"]["status"] == "written" and report["store"]["source"] == "environment (GPUFLEET_STORE_URL)"
    assert report["store"]["url"].startswith("postgresql+psycopg://") and not os.path.exists(tmp_path / "pg" / "gpufleet.sqlite")
