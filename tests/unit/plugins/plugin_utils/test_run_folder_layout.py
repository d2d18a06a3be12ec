"""One layout for every kind of run (plugin_utils/run_folder.py): each names its folder through run_folder, as
<report root>/<UTC start time><kind's suffix>[suffix], and nothing else formats a run folder's time."""

import datetime
import glob
import os
import re

import pytest
import yaml

from ansible_collections.gpufleet.core.plugins.filter import run_dir as run_dir_filter
from ansible_collections.gpufleet.core.plugins.plugin_utils import run_folder
from ansible_collections.gpufleet.core.plugins.plugin_utils.reports.writer import RENDERERS
from ansible_collections.gpufleet.core.plugins.plugin_utils.rollout.run import rollout_step
from tests.support.driver_plan_builders import policy

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
# the one pattern of a run folder's name
RUN_NAME = re.compile(r"^\d{8}T\d{6}Z(-[a-z0-9][a-z0-9.-]*)?$")
STARTED = datetime.datetime(2026, 12, 6, 16, 14, 0)
EPOCH = 1796573640  # 2026-12-06T16:14:00Z


@pytest.mark.parametrize("kind", sorted(run_folder.RUN_KINDS))
def test_every_kind_of_run_is_named_by_its_start_then_its_kind(kind):
    for started in (STARTED, EPOCH):
        name = run_folder.run_dir_name(kind, run_folder.run_stamp(started))
        assert RUN_NAME.match(name), name
        assert name == "20261206T161400Z" + ("" if kind == "audit" else "-" + kind)
        assert run_folder.run_started(name) == STARTED
    assert set(run_folder.RUN_FILES) == set(run_folder.RUN_KINDS)


def test_a_suffix_follows_the_kind_and_a_bad_name_is_refused():
    assert run_folder.run_dir_name("audit", "20261206T161400Z", "-before") == "20261206T161400Z-before"
    assert run_folder.run_dir_name("driver-rollout", "20261206T161400Z", "-check") == \
        "20261206T161400Z-driver-rollout-check"
    with pytest.raises(ValueError, match="no such kind of run: 'upgrade'"):
        run_folder.run_dir_name("upgrade")
    with pytest.raises(ValueError, match="without a /"):
        run_folder.run_dir_name("audit", suffix="/../elsewhere")


def test_new_run_dir_creates_the_folder_exclusively(tmp_path):
    first = run_folder.new_run_dir(str(tmp_path), "loadstep", "20261206T161400Z")
    second = run_folder.new_run_dir(str(tmp_path), "loadstep", "20261206T161400Z")
    assert [os.path.basename(first), os.path.basename(second)] == [
        "20261206T161400Z-loadstep", "20261206T161400Z-loadstep-2"]


def test_the_filter_names_what_run_folder_names_and_documents_its_kinds(tmp_path):
    name = os.path.basename(run_dir_filter.run_dir(str(tmp_path), "incident"))
    assert RUN_NAME.match(name) and name.endswith("-incident")
    assert os.path.dirname(run_dir_filter.run_dir(str(tmp_path), "audit", "-after")) == str(tmp_path)
    options = yaml.safe_load(run_dir_filter.DOCUMENTATION)["options"]
    assert options["kind"]["choices"] == list(run_folder.RUN_KINDS)


def test_a_rollout_has_a_run_folder_of_the_same_layout(tmp_path):
    planned = rollout_step({"step": "plan", "hosts": ["h1"], "host_policy": {"h1": "p0"},
                            "policies": {"p0": policy(pin="550.127.05")}, "mode": "rollout",
                            "report_root": str(tmp_path), "refused": {}}, False, now=EPOCH)
    assert os.listdir(str(tmp_path)) == ["20261206T161400Z-driver-rollout"]
    written = rollout_step({"step": "report", "state_file": planned["state_file"]}, False, now=EPOCH + 60)
    assert os.listdir(planned["run_dir"]) == list(run_folder.RUN_FILES["driver-rollout"])
    assert written["path"] == os.path.join(planned["run_dir"], "driver-rollout.json")


def playbook_tasks(path):
    with open(path, encoding="utf-8") as stream:
        return stream.read()


def test_the_playbooks_name_their_run_folders_by_the_filter():
    audit = playbook_tasks(os.path.join(ROOT, "playbooks", "tasks", "audit_run.yml"))
    assert "gpufleet.core.run_dir(gpufleet_run_kind | default('audit')" in audit
    loadstep = yaml.safe_load(playbook_tasks(os.path.join(ROOT, "playbooks", "loadstep.yml")))
    assert "gpufleet.core.run_dir('loadstep')" in str(loadstep)
    incident = yaml.safe_load(playbook_tasks(os.path.join(ROOT, "playbooks", "incident.yml")))
    assert incident[0]["vars"]["gpufleet_run_kind"] == "incident"


def test_nothing_else_formats_a_run_folders_time():
    sources = [path for pattern in ("plugins/**/*.py", "playbooks/**/*.yml", "roles/**/*.yml", "*.yml")
               for path in glob.glob(os.path.join(ROOT, pattern), recursive=True)]
    assert len(sources) > 50
    formatting = [os.path.relpath(path, ROOT) for path in sources
                  if "%Y%m%dT" in playbook_tasks(path) and not path.endswith(os.path.join("plugin_utils", "run_folder.py"))]
    assert formatting == []


def test_an_audits_files_are_the_report_writers_and_hosts_txt():
    assert run_folder.RUN_FILES["audit"] == tuple(name for name, _render in RENDERERS) + ("hosts.txt",)
