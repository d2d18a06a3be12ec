"""The version, the playbooks' defaults and the report folder each come from one place (issue 9)."""

import glob
import json
import os
import re
import tomllib

import pytest
import yaml

from ansible_collections.gpufleet.core.plugins.filter.report_root import FilterModule
from ansible_collections.gpufleet.core.plugins.modules import gpu_facts
from ansible_collections.gpufleet.core.plugins.plugin_utils import collection_version
from ansible_collections.gpufleet.core.plugins.plugin_utils.audit import run as audit_run
from tests.support.schema_check import ROOT

PLAYBOOKS = sorted(glob.glob(os.path.join(ROOT, "playbooks", "*.yml")) + glob.glob(os.path.join(ROOT, "playbooks", "tasks", "*.yml")))
DEFAULTS = os.path.join(ROOT, "playbooks", "vars", "defaults.yml")


def read(path):
    with open(path) as handle:
        return handle.read()


def test_the_run_record_carries_galaxy_yml_version():
    galaxy = yaml.safe_load(read(os.path.join(ROOT, "galaxy.yml")))
    assert collection_version.VERSION == galaxy["version"]
    assert audit_run.TOOL_VERSION == galaxy["version"]


def test_pyproject_takes_its_version_from_the_same_reader():
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as handle:
        project = tomllib.load(handle)
    assert "version" not in project["project"] and project["project"]["dynamic"] == ["version"]
    attr = project["tool"]["setuptools"]["dynamic"]["version"]["attr"]
    module, name = attr.rsplit(".", 1)
    assert os.path.isfile(os.path.join(ROOT, *module.split(".")) + ".py")
    assert getattr(collection_version, name) == collection_version.VERSION


@pytest.mark.parametrize("line, version", [
    ("version: 1.4.0\n", "1.4.0"), ("version: '2.0.1'  # released\n", "2.0.1"), ('version: "0.9.0-dev1"\n', "0.9.0-dev1")])
def test_a_checkout_reads_the_version_line_of_galaxy_yml(tmp_path, line, version):
    (tmp_path / "galaxy.yml").write_text("namespace: gpufleet\nname: core\n" + line + "  version: 9.9.9\n")
    assert collection_version.collection_version(str(tmp_path)) == version


def test_an_installed_collection_reads_its_manifest(tmp_path):
    (tmp_path / "MANIFEST.json").write_text(json.dumps({"collection_info": {"version": "3.1.0"}}))
    assert collection_version.collection_version(str(tmp_path)) == "3.1.0"
    os.remove(str(tmp_path / "MANIFEST.json"))
    (tmp_path / "galaxy.yml").write_text("name: core\n")
    with pytest.raises(ValueError, match="no top-level version"):
        collection_version.collection_version(str(tmp_path))


def test_the_report_root_filter_resolves_the_folder(tmp_path, monkeypatch):
    report_root = FilterModule().filters()["report_root"]
    monkeypatch.chdir(str(tmp_path))
    (tmp_path / "real").mkdir()
    os.symlink("real", str(tmp_path / "link"))
    assert report_root(None) == os.path.join(os.path.realpath(str(tmp_path)), "reports")
    assert report_root("link") == os.path.realpath(str(tmp_path / "real"))


def test_no_playbook_writes_the_report_root_or_a_default_again():
    for path in PLAYBOOKS:
        text = read(path)
        assert "realpath" not in text, path
        assert not re.search(r"gpufleet_(collect_timeout|collect_margin|kernel_log_window_hours|report_dir) \| default\((?!none\))", text), path


def test_the_playbook_defaults_agree_with_the_module_defaults_they_stand_for():
    # the playbooks pass these explicitly (the controller's own bound needs the timeout), so they are checked
    text = read(DEFAULTS)
    options = yaml.safe_load(gpu_facts.DOCUMENTATION)["options"]
    assert "gpufleet_collect_timeout | default(%d)" % options["timeout"]["default"] in text
    assert "gpufleet_kernel_log_window_hours | default(%d)" % options["kernel_log_window_hours"]["default"] in text
    assert "gpufleet_collect_margin | default(30)" in text
