"""Drives the gpu_facts module's main() in-process, as Ansible runs it on a target."""

import os
import stat

import pytest

from ansible_collections.gpufleet.core.plugins.modules import gpu_facts
from tests.support.gpu_facts_module import T4_XML, run_module
from tests.support.schema_check import assert_valid_facts


@pytest.fixture
def fake_nvidia_smi(tmp_path, monkeypatch):
    """An nvidia-smi on PATH that prints the project's T4 sample, as an admin's own binary would be found."""
    folder = tmp_path / "bin"
    folder.mkdir()
    script = folder / "nvidia-smi"
    script.write_text("#!/bin/sh\ncat '%s'\n" % T4_XML)
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", "%s:%s" % (folder, os.environ["PATH"]))
    return script


def test_nvidia_smi_source_returns_schema_valid_facts(capsys, fake_nvidia_smi):
    result = run_module(capsys, source="nvidia_smi", gather_subset=["min"])
    facts = result["ansible_facts"]["gpufleet"]
    assert result["changed"] is False
    assert_valid_facts(facts)
    assert (facts["source"], facts["driver"]["version"], len(facts["gpus"])) == ("nvidia_smi", "515.105.01", 1)
    assert facts["gpus"][0]["name"] == "Tesla T4"
    assert facts["gather_subset"] == ["driver", "gpus"]


def test_record_then_replay_gives_the_same_gpu_facts(capsys, fake_nvidia_smi, tmp_path):
    fixture = tmp_path / "t4.json"
    recorded = run_module(capsys, source="nvidia_smi", record=str(fixture), gather_subset=["min"])
    assert recorded["changed"] is True
    fake_nvidia_smi.unlink()
    replayed = run_module(capsys, source="replay", fixture=str(fixture), gather_subset=["min"])
    live_facts, replay_facts = recorded["ansible_facts"]["gpufleet"], replayed["ansible_facts"]["gpufleet"]
    assert_valid_facts(replay_facts)
    assert (replay_facts["source"], replay_facts["replay_of"]) == ("replay", "nvidia_smi")
    assert replay_facts["driver"] == live_facts["driver"]
    replayed_gpu, live_gpu = replay_facts["gpus"][0], live_facts["gpus"][0]
    assert (replayed_gpu["serial"], live_gpu["serial"]) == ("SCRUBBED00001", "1837777484182")
    assert replayed_gpu["uuid"] == "GPU-00000000-0000-4000-8000-000000000001" != live_gpu["uuid"]
    assert dict(replayed_gpu, serial=None, uuid=None) == dict(live_gpu, serial=None, uuid=None)
    assert "<serial>0000000000000<" not in fixture.read_text()


def test_record_without_scrub_keeps_the_real_identities(capsys, fake_nvidia_smi, tmp_path):
    fixture = tmp_path / "t4.json"
    run_module(capsys, source="nvidia_smi", record=str(fixture), scrub=False, gather_subset=["min"])
    replayed = run_module(capsys, source="replay", fixture=str(fixture), gather_subset=["min"])
    assert replayed["ansible_facts"]["gpufleet"]["gpus"][0]["serial"] == "1837777484182"


def test_check_mode_records_nothing(capsys, fake_nvidia_smi, tmp_path):
    fixture = tmp_path / "t4.json"
    result = run_module(capsys, source="nvidia_smi", record=str(fixture), _ansible_check_mode=True)
    assert result["changed"] is False and not fixture.exists()


def test_no_nvidia_stack_is_a_fact_not_a_failure(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(gpu_facts, "pynvml", None)
    result = run_module(capsys, gather_subset=["min"])
    facts = result["ansible_facts"]["gpufleet"]
    assert "failed" not in result
    assert (facts["nvidia_present"], facts["source"], facts["gpus"]) == (False, "none", [])
    assert_valid_facts(facts)


@pytest.mark.parametrize("args, message", [
    ({"source": "replay"}, "fixture"),
    ({"source": "replay", "fixture": "/nonexistent/f.json"}, "/nonexistent/f.json"),
    ({"gather_subset": ["gpu"]}, "unknown subset 'gpu'"),
    ({"timeout": 0}, "timeout must be a positive"),
    ({"fixture": "/x.json"}, "only read with source=replay"),
])
def test_bad_input_fails_with_a_message_naming_it(capsys, args, message):
    result = run_module(capsys, **args)
    assert result["failed"] is True
    assert message in result["msg"]


def test_garbage_fixture_names_the_file(capsys, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    result = run_module(capsys, source="replay", fixture=str(bad))
    assert result["failed"] is True and str(bad) in result["msg"] and "not valid JSON" in result["msg"]
