"""The load step's report step (loadstep/run.py, the one call of the loadstep_report action): the hosts' lines in
check mode without a file, and loadstep.json and loadstep.html in the run's folder otherwise."""

import json
import os

import pytest

from ansible_collections.gpufleet.core.plugins.plugin_utils import run_folder
from ansible_collections.gpufleet.core.plugins.plugin_utils.loadstep.run import IncompleteRun, run_report

REFUSED = {"gpu-01": {"plan": {"service": "vllm.service", "refusals": ["the host is a replay"], "mode": "service",
                               "steps": []}, "status": "refused"}}


def test_in_check_mode_the_lines_come_back_and_nothing_is_written(tmp_path):
    proposed = run_folder.proposed_run_dir(str(tmp_path), "loadstep", "20261206T161400Z")
    result, summary = run_report(REFUSED, str(tmp_path), proposed, "2026-12-06T16:14:00Z", check_mode=True)
    assert summary == "gpu-01: refused: the host is a replay"
    assert result["runs"]["gpu-01"]["refusals"] == ["the host is a replay"] and "run_dir" not in result
    assert os.listdir(str(tmp_path)) == []


def test_the_report_goes_into_the_load_steps_run_folder(tmp_path):
    proposed = run_folder.proposed_run_dir(str(tmp_path), "loadstep", "20261206T161400Z")
    result, _summary = run_report(REFUSED, str(tmp_path), proposed, "2026-12-06T16:14:00Z")
    assert result["run_dir"] == result["report_dir"] == str(tmp_path / "20261206T161400Z-loadstep")
    assert sorted(os.listdir(result["run_dir"])) == sorted(run_folder.RUN_FILES["loadstep"])
    with open(os.path.join(result["run_dir"], "loadstep.json")) as handle:
        assert json.load(handle)["runs"][0]["host"] == "gpu-01"


def test_an_incomplete_recorded_run_is_named_before_anything_is_written(tmp_path):
    with pytest.raises(IncompleteRun, match="policy"):
        run_report({"gpu-01": {"plan": {"service": "vllm.service"}, "measured": [{}]}}, str(tmp_path),
                   str(tmp_path / "run"), "2026-12-06T16:14:00Z")
    assert os.listdir(str(tmp_path)) == []
