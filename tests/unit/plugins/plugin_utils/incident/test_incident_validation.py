"""The incident's active checks (incident.yml -e gpufleet_incident_validate=true): the host's gpu_validate result,
which joined its facts, kept in its evidence bundle as validation.json (hardware layer of the manifest), and the
failed or refused checks named in the fault log with their figures, one line each."""

import json
import tarfile

from ansible_collections.gpufleet.core.plugins.plugin_utils.incident.evidence_bundle import write_bundle
from ansible_collections.gpufleet.core.plugins.plugin_utils.incident.fault_log import render_fault_log
from ansible_collections.gpufleet.core.plugins.plugin_utils.rollout.validation_gate import refused_validation
from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.active_checks import validation_summary
from tests.support.validation_builders import fail_memory, fail_nccl, healthy_validation, set_bandwidth

HOST = "gpu-07"
FACTS = {"schema_version": "1.6"}


def failing_validation():
    validation = set_bandwidth(fail_memory(healthy_validation(), 3), "host_to_device_memcpy_ce", 3, 18.0)
    return fail_nccl(validation, "NCCL WARN NET/IB : Got completion with error 12")


def bundle(tmp_path, facts):
    return write_bundle(str(tmp_path), HOST, HOST, {"evidence": []}, facts=facts)


def test_the_bundle_keeps_the_validation_with_its_figures_in_the_hardware_layer(tmp_path):
    validation = failing_validation()
    manifest = bundle(tmp_path, dict(FACTS, validation=validation))
    folder = tmp_path / "evidence" / HOST
    kept = json.loads((folder / "validation.json").read_text())
    assert kept == validation
    assert kept["checks"]["nvbandwidth"]["testcases"][0]["per_gpu"]["3"] == 18.0
    [entry] = [entry for entry in manifest["files"] if entry["file"] == "validation.json"]
    assert (entry["layer"], entry["command"], entry["status"], entry["why"]) == (
        "hardware", "gpufleet.core.gpu_validate", "ok", None)
    with tarfile.open(str(folder / manifest["archive"])) as archive:
        assert "gpu-07/validation.json" in archive.getnames()
    # without active checks the bundle is as before
    assert [entry["file"] for entry in bundle(tmp_path / "off", FACTS)["files"]] == ["facts.json"]
    assert not (tmp_path / "off" / "evidence" / HOST / "validation.json").exists()


def test_a_refused_validation_is_kept_and_says_why(tmp_path):
    refused = refused_validation("2 GPU processes are running", ["dcgm_diag"], "2026-11-30T06:00:00Z")
    manifest = bundle(tmp_path, dict(FACTS, validation=refused))
    [entry] = [entry for entry in manifest["files"] if entry["file"] == "validation.json"]
    assert entry["status"] == "skipped"
    assert entry["why"] == "refused, no check ran: 2 GPU processes are running"
    assert json.loads((tmp_path / "evidence" / HOST / "validation.json").read_text())["refused"]["reason"] == (
        "2 GPU processes are running")


def fault_log(tmp_path, validation):
    facts = dict(FACTS, validation=validation)
    manifest = bundle(tmp_path, facts)
    report = {"run": {"id": "20261130T060000Z-incident", "status": "partial", "rules_run": []},
              "hosts": {HOST: {"status": "ok", "findings": [], "validation": validation_summary(facts)}},
              "findings": [], "causes": [], "summary": {"by_severity": {}}}
    timeline = {"window": {}, "hosts": {HOST: {"status": "ok"}}, "events": [], "correlations": []}
    return render_fault_log(report, timeline, {HOST: (HOST, manifest)}, "2026-11-30T06:01:00Z")


def test_the_fault_log_names_each_failed_check_with_its_figures_in_one_line(tmp_path):
    text = fault_log(tmp_path, failing_validation())
    hardware = text.split("### hardware", 1)[1].split("### driver", 1)[0]
    assert "- gpu-07: `gpufleet.core.gpu_validate`, `evidence/gpu-07/validation.json` (ok)" in hardware
    lines = [line for line in hardware.splitlines() if line.startswith("- gpu-07: `dcgm_diag`")
             or line.startswith("- gpu-07: `nccl_all_reduce`") or line.startswith("- gpu-07: `nvbandwidth`")]
    assert lines == [
        "- gpu-07: `dcgm_diag` failed: level 1; software: pass; memory: fail on GPU 3; pcie: pass "
        "(`evidence/gpu-07/validation.json`)",
        "- gpu-07: `nccl_all_reduce` failed: all\\_reduce\\_perf exited with status 2; 8 GPUs, no bus bandwidth measured; "
        "NCCL WARN NET/IB : Got completion with error 12 (`evidence/gpu-07/validation.json`)"]
    assert "Active checks that failed:" in hardware


def test_the_fault_log_says_when_the_checks_were_refused_and_is_silent_when_they_passed(tmp_path):
    refused = refused_validation("the scheduler still places work", ["dcgm_diag"], "2026-11-30T06:00:00Z")
    text = fault_log(tmp_path / "refused", refused)
    assert ("- gpu-07: refused, no check ran: the scheduler still places work (`evidence/gpu-07/validation.json`)"
            in text)
    passed = fault_log(tmp_path / "passed", healthy_validation())
    assert "Active checks that failed" not in passed
