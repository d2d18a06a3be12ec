"""gpufleet.core.gpu_facts' action plugin: the audit's per-host steps on the controller around the module - the
invalid-policy stop, the BMC read over LAN (a fake ipmitool on PATH answering the project's own samples), and the
facts file written as the result arrives, byte for byte as audit_run.host_status writes it - and the run folder
made before the collection (gpufleet.core.run_folder)."""

import base64
import copy
import json
import os
import subprocess
import sys
import zlib

import pytest

from ansible_collections.gpufleet.core.plugins.action import gpu_facts as action_module
from ansible_collections.gpufleet.core.plugins.action.gpu_facts import ActionModule
from ansible_collections.gpufleet.core.plugins.module_utils.bmc_collect import new_bmc
from ansible_collections.gpufleet.core.plugins.module_utils.facts_model import new_facts, new_gpu
from ansible_collections.gpufleet.core.plugins.action.run_folder import ActionModule as RunFolder
from ansible_collections.gpufleet.core.plugins.plugin_utils.audit import run as audit_run
from ansible_collections.gpufleet.core.plugins.plugin_utils.audit import facts_validation
from ansible_collections.gpufleet.core.plugins.plugin_utils import run_folder
from ansible_collections.gpufleet.core.plugins.plugin_utils.audit.facts_validation import SCHEMA_PATH
from ansible_collections.gpufleet.core.plugins.plugin_utils.rules import diagnose
from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.diagnose import diagnose_fleet
from ansible_collections.gpufleet.core.plugins.plugin_utils.audit.fleet_view import fleet_view
from ansible_collections.gpufleet.core.plugins.plugin_utils.audit.host_step import policy_digest
from ansible_collections.gpufleet.core.plugins.plugin_utils.policy import validate_policy
from tests.support.bmc_samples import SDR_ELIST, SEL_ELIST
from tests.support.validation_builders import fail_memory, healthy_validation
from tests.unit.plugins.action.test_audit_verdict import mode_of, umask  # noqa: F401 pylint: disable=unused-import
from tests.unit.plugins.plugin_utils.audit.test_facts_validation import replaced

HOST = "gpu-h100-ok-01"
PASSWORD = "bmc-Secret-17"


def host_facts():
    """Facts of the schema's shape (the action refuses any other): one GPU with a critical finding, and a name
    outside ASCII for the facts file's encoding."""
    facts = new_facts()
    facts.update(nvidia_present=True, source="nvml", collected_at="2026-12-01T06:00:00Z", gather_subset=["driver", "gpus"],
                 bmc=new_bmc("in_band"))
    facts["driver"].update(version="550.90.07", cuda_driver_version="12.4")
    gpu = new_gpu(0)
    gpu.update(uuid="GPU-0a", name="NVIDIA H100 80GB HBM3 é ✓")
    gpu["temperature"]["gpu_c"] = 41
    gpu["ecc"]["volatile_uncorrected"] = 2
    facts["gpus"] = [gpu]
    return facts


FACTS = host_facts()


@pytest.fixture(autouse=True)
def clock_in_step(monkeypatch):
    """The fixture's collected_at is days before the test runs: the host clock's offset is left out here, so the
    facts file is FACTS byte for byte (the offset's own tests: rules/test_clock.py)."""
    monkeypatch.setattr(action_module, "measured_offset", lambda collected_at, sent, answered: None)


MODULE_RESULT = {"changed": False, "ansible_facts": {"gpufleet": FACTS}}


class FakeTask:
    action = "gpufleet.core.gpu_facts"
    async_val = 0
    check_mode = False

    def __init__(self, args, timeout=None):
        self.args = args
        self.timeout = timeout


class FakeShell:
    tmpdir = None


class FakeConnection:
    _shell = FakeShell()


def run_action(args, module_result=None, hosts=(HOST,), host=HOST, timeout=None):
    """(result, module arguments each module run got); the module returns module_result (MODULE_RESULT)."""
    module_result = MODULE_RESULT if module_result is None else module_result
    calls = []
    action = ActionModule(FakeTask(dict(args), timeout), FakeConnection(), None, None, None)

    def execute_module(module_args=None, task_vars=None, wrap_async=False):
        calls.append(module_args)
        return copy.deepcopy(module_result)

    action._execute_module = execute_module
    action._remove_tmp_path = lambda path: None
    task_vars = {"inventory_hostname": host, "ansible_play_hosts_all": list(hosts)}
    return action.run(task_vars=task_vars), calls


# ---------------------------------------------------------------- the invalid-policy stop


def test_an_invalid_policy_returns_the_stop_without_running_the_module(tmp_path):
    message = "not audited: the policy check failed: gpu-1: thresholds.memory_used_pct: 'high' is not a number"
    result, calls = run_action({"source": "replay", "not_audited_msg": message, "run_dir": str(tmp_path)})
    assert calls == []
    assert result == {"changed": False, "verdict": "not_audited", "msg": message, "unreachable": True}
    assert os.listdir(str(tmp_path)) == []


# ---------------------------------------------------------------- the facts file


@pytest.mark.parametrize("mask, expected_mode", [(0o022, 0o640), (0o077, 0o600)])
def test_the_facts_file_is_written_as_host_status_writes_it(tmp_path, umask, mask, expected_mode):
    umask(mask)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    result, calls = run_action({"source": "nvidia_smi", "timeout": 60, "run_dir": str(run_dir)})
    # the action's own options never reach the module
    assert calls == [{"source": "nvidia_smi", "timeout": 60}]
    assert result["gpufleet_facts_file"] == "facts/%s.json" % HOST
    written = run_dir / "facts" / ("%s.json" % HOST)
    text = written.read_text(encoding="utf-8")
    assert text == json.dumps(FACTS, sort_keys=True, separators=(",", ":")) + "\n"
    assert json.loads(text) == FACTS
    assert mode_of(written) == expected_mode
    # the same bytes and mode as the controller's writer gives the same result
    elsewhere = tmp_path / "controller" / "facts"
    elsewhere.mkdir(parents=True)
    status, facts = audit_run.host_status(HOST, copy.deepcopy(MODULE_RESULT), str(elsewhere))
    assert status == {"status": "ok", "facts_file": "facts/%s.json" % HOST, "message": None} and facts == FACTS
    assert (elsewhere / ("%s.json" % HOST)).read_bytes() == written.read_bytes()
    assert mode_of(elsewhere / ("%s.json" % HOST)) == expected_mode
    # and the controller then takes the worker's file as it is
    status, _facts = audit_run.host_status(HOST, result, str(run_dir / "facts"))
    assert status["facts_file"] == "facts/%s.json" % HOST
    # with the run store's extract of the same text, made in the worker
    assert zlib.decompress(base64.b64decode(result["gpufleet_store_extract"]["facts_zlib"])) == written.read_bytes()
    assert result["gpufleet_store_extract"]["counters"] == {"uuid:GPU-0a": {
        "ecc_corrected": None, "retired_pages": None, "remapped_rows": None, "pcie_replays": None,
        "nvlink_errors": None}}
    assert audit_run.worker_extract(result, status) == result["gpufleet_store_extract"]


def test_keep_facts_false_leaves_the_facts_in_the_file_only(tmp_path):
    result, calls = run_action({"run_dir": str(tmp_path), "keep_facts": False})
    assert calls == [{}]
    assert "ansible_facts" not in result and result["gpufleet_facts_file"] == "facts/%s.json" % HOST
    assert sorted(result) == ["changed", "gpufleet_facts_file", "gpufleet_store_extract"]
    # the controller reads them back from the file, as the worker wrote them
    status, facts = audit_run.host_status(HOST, result, str(tmp_path / "facts"))
    assert status == {"status": "ok", "facts_file": "facts/%s.json" % HOST, "message": None} and facts == FACTS


def test_keep_facts_false_keeps_the_facts_when_no_file_was_written(tmp_path):
    (tmp_path / "facts").write_text("a file where the folder goes")
    result, _calls = run_action({"run_dir": str(tmp_path), "keep_facts": False})
    assert result["ansible_facts"]["gpufleet"] == FACTS and "gpufleet_facts_file" not in result
    failed, _calls = run_action({"keep_facts": False}, module_result={"failed": True, "msg": "timed out"})
    assert failed == {"failed": True, "msg": "timed out"}


def test_a_facts_file_that_is_gone_or_garbled_is_a_failed_host_that_names_it(tmp_path):
    result, _calls = run_action({"run_dir": str(tmp_path), "keep_facts": False})
    facts_dir = tmp_path / "facts"
    (facts_dir / ("%s.json" % HOST)).write_text("[1, 2", encoding="utf-8")
    status, facts = audit_run.host_status(HOST, result, str(facts_dir))
    assert facts is None and status["status"] == "failed" and status["facts_file"] is None
    assert status["message"].startswith("the facts file the collection wrote (facts/%s.json) could not be read: " % HOST)
    (facts_dir / ("%s.json" % HOST)).unlink()
    status, facts = audit_run.host_status(HOST, result, str(facts_dir))
    assert facts is None and status["message"].endswith("could not be read: no such file in the run folder")


def test_with_the_policy_the_host_is_diagnosed_in_the_worker_and_the_report_reads_no_facts(tmp_path):
    policy = validate_policy({})
    result, calls = run_action({"run_dir": str(tmp_path), "keep_facts": False, "policy": policy})
    assert calls == [{}]
    # one JSON text: ansible-playbook keeps it to the end of the play for every host
    assert isinstance(result["gpufleet_diagnosis"], str)
    diagnosis = json.loads(result["gpufleet_diagnosis"])
    assert diagnosis["policy"] == policy_digest(policy)
    assert diagnosis["findings"] == diagnose_fleet({HOST: FACTS}, {HOST: policy})[HOST] != []
    assert diagnosis["view"] == fleet_view(FACTS)
    assert diagnosis["line"] == "%s: ok source=nvml driver=550.90.07 cuda=12.4 gpus=1 [NVIDIA H100 80GB HBM3 é ✓]" % HOST
    assert audit_run.worker_diagnoses({HOST: result}, {HOST: policy}) == {
        HOST: (diagnosis["findings"], diagnosis["view"], diagnosis["line"])}


def test_a_diagnosis_that_fails_in_the_worker_is_left_to_the_report_with_a_warning(tmp_path, monkeypatch):
    def broken(*_args):
        raise KeyError("thresholds")
    monkeypatch.setattr(diagnose, "diagnose_host", broken)
    result, _calls = run_action({"run_dir": str(tmp_path), "policy": {"thresholds": None}})
    assert "gpufleet_diagnosis" not in result and result["ansible_facts"]["gpufleet"] == FACTS
    assert result["warnings"] == ["the host was not diagnosed in the worker: the host's facts could not be diagnosed "
                                  "(KeyError: 'thresholds'); report this with its facts"]


def test_the_file_name_is_the_one_audit_report_gives_among_the_plays_hosts(tmp_path):
    # two names that differ only in case share no file: both get a hashed name
    hosts = ["GPU-1", "gpu-1", HOST]
    result, _calls = run_action({"run_dir": str(tmp_path)}, hosts=hosts, host="gpu-1")
    expected = run_folder.facts_file_names(hosts)["gpu-1"]
    assert expected != "gpu-1" and result["gpufleet_facts_file"] == "facts/%s.json" % expected
    assert os.listdir(str(tmp_path / "facts")) == ["%s.json" % expected]


@pytest.mark.parametrize("module_result", [
    {"failed": True, "msg": "fixture /nowhere.json cannot be read: [Errno 2] No such file or directory"},
    {"failed": True, "msg": "timed out", "ansible_facts": {"gpufleet": FACTS}},
])
def test_a_failed_collection_writes_no_facts_file(tmp_path, module_result):
    result, _calls = run_action({"run_dir": str(tmp_path)}, module_result=module_result)
    assert "gpufleet_facts_file" not in result and result["failed"] is True
    assert not (tmp_path / "facts").exists()


def test_a_facts_file_that_cannot_be_written_is_left_to_the_controller(tmp_path):
    (tmp_path / "facts").write_text("a file where the folder goes")
    result, _calls = run_action({"run_dir": str(tmp_path)})
    assert "gpufleet_facts_file" not in result and "failed" not in result
    assert result["ansible_facts"]["gpufleet"] == FACTS
    assert [warning.split(":")[0] for warning in result["warnings"]] == ["facts file not written in the worker"]


@pytest.mark.parametrize("args", [{}, {"run_dir": "RUN"}])
def test_a_hosts_own_facts_file_or_store_extract_keys_are_dropped(tmp_path, args):
    """A module's result is the host's word: it cannot name a facts file or hand the store an extract."""
    forged = dict(MODULE_RESULT, gpufleet_facts_file="facts/other.json", gpufleet_diagnosis={"findings": []},
                  gpufleet_store_extract={"facts_zlib": base64.b64encode(zlib.compress(b"{}")).decode(), "counters": {}})
    args = {key: str(tmp_path) if value == "RUN" else value for key, value in args.items()}
    result, _calls = run_action(args, module_result=forged)
    if args:
        assert result["gpufleet_facts_file"] == "facts/%s.json" % HOST
        assert zlib.decompress(base64.b64decode(result["gpufleet_store_extract"]["facts_zlib"])) == (
            tmp_path / "facts" / ("%s.json" % HOST)).read_bytes()
    else:
        assert "gpufleet_facts_file" not in result and "gpufleet_store_extract" not in result
    assert "gpufleet_diagnosis" not in result
    assert result["ansible_facts"]["gpufleet"] == FACTS


def facts_with(path, value):
    """FACTS with the value at path (keys and list positions) replaced."""
    return replaced(FACTS, path, value)


@pytest.mark.parametrize("path, value, named", [
    (("gpus", 0, "temperature", "gpu_c"), "45,5", "gpus[0].temperature.gpu_c: '45,5' is not integer or null"),
    (("gpus", 0, "name"), 42, "gpus[0].name: 42 is not string or null"),
    (("gpus", 0, "power", "draw_w"), float("nan"), "gpus[0].power.draw_w: nan is not a finite number"),
    (("collection_seconds",), float("inf"), "collection_seconds: inf is not a finite number"),
    (("gpus", 0, "ecc", "aggregate_corrected"), 2 ** 64 - 1,
     "gpus[0].ecc.aggregate_corrected: 18446744073709551615 is outside the signed 64-bit range"),
    (("gpus", 0, "memory", "total_mib"), 1e30, "gpus[0].memory.total_mib: 1e+30 is not integer or null"),
    (("driver",), None, "driver: None is not object"),
])
def test_facts_that_do_not_match_the_schema_are_the_hosts_failed_collection(tmp_path, path, value, named):
    """One host's facts of the wrong shape are refused in its worker: its collection fails with what is wrong,
    no facts file, store extract or diagnosis is made of them, and they leave the result."""
    result, _calls = run_action({"run_dir": str(tmp_path), "policy": validate_policy({})},
                                module_result={"changed": False, "ansible_facts": {"gpufleet": facts_with(path, value)}})
    assert result["failed"] is True and named in result["msg"], result.get("msg")
    assert "gpu_facts.schema.json" in result["msg"]
    assert "ansible_facts" not in result
    assert not {"gpufleet_facts_file", "gpufleet_store_extract", "gpufleet_diagnosis"} & set(result)
    assert not (tmp_path / "facts").exists()
    assert audit_run.host_status(HOST, result, str(tmp_path / "facts"))[0]["status"] == "failed"


def test_without_run_dir_nothing_is_written(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result, _calls = run_action({"source": "auto"})
    assert result == MODULE_RESULT and os.listdir(str(tmp_path)) == []


# ---------------------------------------------------------------- the BMC over LAN


@pytest.fixture
def fake_ipmitool(tmp_path, monkeypatch):
    """An ipmitool first on PATH that answers the project's SDR and SEL samples, fails the rest, and records its
    arguments and the password file's mode and text."""
    folder = tmp_path / "bin"
    folder.mkdir()
    (folder / "sdr.txt").write_text(SDR_ELIST)
    (folder / "sel.txt").write_text(SEL_ELIST)
    record = tmp_path / "ipmitool-calls"
    script = folder / "ipmitool"
    script.write_text("""#!/bin/sh
echo "ARGS $*" >> {record}
while [ $# -gt 0 ]; do
  if [ "$1" = "-f" ]; then echo "FILE $(stat -c %a "$2") $(cat "$2")" >> {record}; echo "PATH $2" >> {record}; fi
  case "$*" in
    "sdr elist") cat {folder}/sdr.txt; exit 0 ;;
    "sel elist") cat {folder}/sel.txt; exit 0 ;;
  esac
  shift
done
echo "Unable to send command" >&2
exit 1
""".format(record=record, folder=folder))
    script.chmod(0o755)
    monkeypatch.setenv("PATH", "%s:%s" % (folder, os.environ.get("PATH", "")))
    return record


def bmc_args(**extra):
    args = {"source": "nvidia_smi", "kernel_log_window_hours": 96, "bmc_address": "10.1.2.3",
            "bmc_user": "audit", "bmc_password": PASSWORD, "bmc_port": "6230", "bmc_cipher_suite": 17}
    args.update(extra)
    return args


def test_the_bmc_read_over_lan_replaces_the_in_band_facts_and_the_password_stays_out(tmp_path, fake_ipmitool):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    result, calls = run_action(bmc_args(run_dir=str(run_dir)))
    assert calls == [{"source": "nvidia_smi", "kernel_log_window_hours": 96}]
    bmc = result["ansible_facts"]["gpufleet"]["bmc"]
    assert bmc["source"] == "lan" and bmc["address"] == "10.1.2.3"
    fans = {fan["name"]: fan["rpm"] for fan in bmc["fans"]}
    assert fans == {"FAN1": 6000.0, "FAN2": 400.0, "FAN3": 1800.0, "FAN4": None}
    assert [psu["name"] for psu in bmc["power_supplies"] if psu["failed"]] == ["PSU2 Status"]
    assert bmc["inlet_temperature_c"] == 41.0
    # the event log was read (which timed records fall in the window depends on today's date; the untimed one never)
    assert bmc["sel"]["untimed"] == 1
    # the clock and the DCMI reading failed: optional, so the BMC is complete, the power draw from the SDR
    assert bmc["status"] == "complete" and bmc["errors"] == [] and bmc["clock_offset_s"] is None
    assert bmc["power_draw_w"] == 2880.0
    # the other facts are the module's, unchanged
    assert {key: value for key, value in result["ansible_facts"]["gpufleet"].items() if key != "bmc"} == {
        key: value for key, value in FACTS.items() if key != "bmc"}
    # ipmitool got the LAN options and the password only as a file of mode 0600, removed afterwards
    lines = fake_ipmitool.read_text().splitlines()
    argv = [line for line in lines if line.startswith("ARGS ")]
    assert argv[0] == "ARGS -I lanplus -H 10.1.2.3 -p 6230 -U audit -f %s -C 17 -Z sdr elist" % (
        [line for line in lines if line.startswith("PATH ")][0][5:])
    assert {line for line in lines if line.startswith("FILE ")} == {"FILE 600 %s" % PASSWORD}
    assert not any(PASSWORD in line for line in argv)
    assert not any(os.path.exists(line[5:]) for line in lines if line.startswith("PATH "))
    # the facts file holds the BMC read over LAN; the password is nowhere
    written = json.loads((run_dir / result["gpufleet_facts_file"]).read_text())
    assert written["bmc"] == bmc
    assert PASSWORD not in json.dumps(result) and PASSWORD not in (run_dir / result["gpufleet_facts_file"]).read_text()


def test_a_bmc_without_credentials_is_not_read_and_the_host_keeps_its_facts(fake_ipmitool):
    result, _calls = run_action(bmc_args(bmc_password=None))
    assert result["ansible_facts"]["gpufleet"] == FACTS
    assert result["warnings"] == ["the BMC over LAN was not read: bmc_password not set for the BMC at 10.1.2.3"]
    assert not fake_ipmitool.exists()


def test_a_bmc_is_read_only_when_the_collection_returned_facts(fake_ipmitool):
    result, _calls = run_action(bmc_args(), module_result={"failed": True, "msg": "no python"})
    assert result == {"failed": True, "msg": "no python"} and not fake_ipmitool.exists()


def test_a_bmc_read_that_raises_keeps_the_in_band_facts_and_scrubs_the_password(monkeypatch):
    def explode(host, params):
        raise OSError("cannot talk to %s as %s/%s" % (params["address"], params["user"], params["password"]))

    monkeypatch.setattr(action_module, "read_bmc_over_lan", explode)
    result, _calls = run_action(bmc_args())
    assert result["ansible_facts"]["gpufleet"] == FACTS
    assert result["warnings"] == ["the BMC over LAN could not be read: cannot talk to 10.1.2.3 as audit/********"]


def test_an_invalid_bmc_option_fails_the_task_before_the_module_runs():
    result, calls = run_action(bmc_args(bmc_protocol="telnet"))
    assert calls == [] and result["failed"] is True
    assert "bmc_protocol" in result["msg"] and "telnet" in result["msg"] and PASSWORD not in result["msg"]


# ---------------------------------------------------------------- the run folder


class RunFolderTask:
    action = "gpufleet.core.run_folder"
    async_val = 0
    check_mode = False

    def __init__(self, args):
        self.args = args


def create_with_the_action(path):
    action = RunFolder(RunFolderTask({"path": path, "started_at": "2026-12-02T06:00:00Z"}), FakeConnection(),
                       None, None, None)
    return action.run(task_vars={})


def test_the_run_folder_is_made_exclusively_and_named_in_the_controllers_facts(tmp_path):
    proposed = str(tmp_path / "reports" / "20261202T060000Z")
    first, second = create_with_the_action(proposed), create_with_the_action(proposed)
    assert first["path"] == proposed and second["path"] == proposed + "-2"
    assert first["ansible_facts"] == {"gpufleet_run_dir": proposed, "gpufleet_started_at": "2026-12-02T06:00:00Z"}
    assert second["ansible_facts"]["gpufleet_run_dir"] == proposed + "-2" and second["changed"] is True
    assert sorted(os.listdir(str(tmp_path / "reports"))) == ["20261202T060000Z", "20261202T060000Z-2"]


def test_a_run_folder_that_cannot_be_made_fails_and_names_the_folder_proposed(tmp_path):
    (tmp_path / "a-file").write_text("not a folder")
    proposed = str(tmp_path / "a-file" / "reports" / "20261202T060000Z")
    result = create_with_the_action(proposed)
    assert result["failed"] is True and "Not a directory" in result["msg"] and "path" not in result
    assert result["ansible_facts"]["gpufleet_run_dir"] == proposed


def test_the_facts_schema_is_compiled_before_the_workers_fork():
    """The action's module is imported in ansible-playbook's main process: each host's worker, a fork of it, finds
    the schema's checks compiled."""
    code = ("from ansible_collections.gpufleet.core.plugins.action import gpu_facts\n"
            "from ansible_collections.gpufleet.core.plugins.plugin_utils.audit import facts_validation\n"
            "print(sorted(facts_validation._CHECKERS))\n")
    # the folder holding ansible_collections/gpufleet/core/plugins/action/gpu_facts.py (a checkout's collections/,
    # or ansible-test's copy of the collection), then what this process imports from (ansible-test's ansible)
    collections_root = os.path.abspath(action_module.__file__)
    for _level in range(6):
        collections_root = os.path.dirname(collections_root)
    path = os.pathsep.join([collections_root] + [entry for entry in sys.path if entry])
    printed = subprocess.run([sys.executable, "-c", code], env=dict(os.environ, PYTHONPATH=path),
                             capture_output=True, text=True, check=True).stdout
    assert printed == "[%r]\n" % SCHEMA_PATH


def test_a_facts_schema_that_cannot_be_read_takes_no_facts_unchecked(monkeypatch, tmp_path):
    monkeypatch.setattr(facts_validation, "_CHECKERS", {})
    monkeypatch.setattr(facts_validation, "SCHEMA_PATH", str(tmp_path / "missing.json"))
    monkeypatch.setattr(facts_validation.facts_checker, "__defaults__", (str(tmp_path / "missing.json"),))
    result, _calls = run_action({"run_dir": str(tmp_path)})
    assert result["failed"] is True and "the facts schema could not be read" in result["msg"]
    assert "missing.json" in result["msg"] and "ansible_facts" not in result


# ---------------------------------------------------------------- the host's active checks (validate.yml)


def test_the_validation_option_joins_the_facts_and_is_judged_in_the_worker_never_sent_to_the_host(tmp_path):
    # GPU 0, the facts' only GPU, failed DCGM's memory test
    validation = fail_memory(healthy_validation(gpus=1), 0)
    policy = validate_policy({})
    result, calls = run_action({"run_dir": str(tmp_path), "policy": policy, "validation": validation})
    assert calls == [{}]
    assert result["ansible_facts"]["gpufleet"]["validation"] == validation
    findings = json.loads(result["gpufleet_diagnosis"])["findings"]
    assert [(f["rule"], f["gpu"]) for f in findings if "validation" in f["rule"]] == [
        ("hardware.validation_dcgm_failed", FACTS["gpus"][0]["pci_bus_id"])]
