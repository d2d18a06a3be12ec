"""gpu_facts' main() with gather_subset workload and host_pressure, as Ansible runs it on a target that has
nvidia-smi but neither systemctl, journalctl nor dmesg: the facts say what could not be read, and the module
succeeds."""

import stat

import pytest

from ansible_collections.gpufleet.core.plugins.modules import gpu_facts
from tests.support.gpu_facts_module import T4_XML, run_module
from tests.support.schema_check import assert_valid_facts


@pytest.fixture
def only_nvidia_smi(tmp_path, monkeypatch):
    """PATH holds only an nvidia-smi: the T4 sample, and 7% utilization when queried."""
    folder = tmp_path / "bin"
    folder.mkdir()
    script = folder / "nvidia-smi"
    script.write_text("#!/bin/sh\ncase \"$1\" in --query-gpu=*) echo '0, 7' ;; *) /bin/cat '%s' ;; esac\n" % T4_XML)
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", str(folder))
    return folder


def test_a_host_without_systemd_tools_reports_errors_not_a_failure(capsys, only_nvidia_smi):
    result = run_module(capsys, source="nvidia_smi", gather_subset=["workload", "host_pressure"],
                        services=["vllm"], pressure_sample_seconds=0)
    assert "failed" not in result
    facts = result["ansible_facts"]["gpufleet"]
    assert_valid_facts(facts)
    assert facts["gather_subset"] == ["driver", "gpus", "processes", "workload", "host_pressure"]
    (vllm,) = facts["workload"]["services"]
    assert (vllm["unit"], vllm["sources"], vllm["restarts"]) == ("vllm.service", ["policy"], None)
    assert vllm["journal"]["status"] == "unavailable" and vllm["oom_kills"]["read"] is False
    calls = {error["call"] for error in facts["errors"]}
    assert {"workload: systemctl", "workload: kernel log"} <= calls
    assert facts["host_pressure"]["gpu_utilization"] == [
        {"index": 0, "mean_pct": 7.0, "min_pct": 7, "max_pct": 7, "samples": 1}]
    assert facts["host_pressure"]["gpu_utilization_source"] == "nvidia-smi"


@pytest.mark.parametrize("seconds", [-1, 61])
def test_a_sample_outside_0_to_60_seconds_is_refused(capsys, only_nvidia_smi, seconds):
    result = run_module(capsys, gather_subset=["host_pressure"], pressure_sample_seconds=seconds)
    assert result["failed"] is True
    assert "pressure_sample_seconds must be 0 to 60, not %d" % seconds in result["msg"]


def test_the_subsets_are_documented_and_unknown_ones_refused(capsys, only_nvidia_smi):
    assert "V(workload)" in gpu_facts.DOCUMENTATION and "V(host_pressure)" in gpu_facts.DOCUMENTATION
    assert "pressure_sample_seconds:" in gpu_facts.DOCUMENTATION
    result = run_module(capsys, gather_subset=["workloads"])
    assert "unknown subset 'workloads'" in result["msg"] and "workload, host_pressure" in result["msg"]
