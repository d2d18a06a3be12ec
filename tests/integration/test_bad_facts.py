"""One host can never take the fleet's report down: audit.yml, run with ansible-playbook, on replayed hosts beside
one host whose collector answers facts of the wrong types (a string temperature, a numeric name, NaN, Infinity, a
2^64-1 counter), one whose nvidia-smi prints readings that cannot be true (a decimal comma, 10^30 MiB), and one
whose nvidia-smi says 8 GPUs are attached and lists none.

The lying host is that host's failed collection with what is wrong (exit status 4, README "Exit status and run
status"); the garbled readings are null with an entry in the host's errors; the host without its GPUs is a partial
collection with a finding; every other host's report, facts file and store row are written, latest moves, and the
facts files and the store hold strict JSON."""

import copy
import json
import os
import re
import sqlite3
import zlib

from ansible_collections.gpufleet.core.plugins.plugin_utils.reports.format import expanded
from tests.integration.test_exit_status import (
    FIXTURES, HEALTHY, NVSMI, local_host, output, read_json, recap, run_audit, write_inventory)
from tests.support.demo_fleet import demo_audit

LYING = "gpu-lying-21"
GARBLED = "gpu-garbled-22"
GPULESS = "gpu-eight-missing-23"
SMI = "nvidia-smi -q -x"


def refuse_constant(constant):
    raise ValueError("not strict JSON: %s" % constant)


def strict_loads(text):
    return json.loads(text, parse_constant=refuse_constant)


def lying_interpreter(tmp_path):
    """An interpreter that runs no module: it prints a gpu_facts result whose facts have every bad kind."""
    facts = copy.deepcopy(demo_audit()[0][HEALTHY])
    facts["gpus"][0]["temperature"]["gpu_c"] = "45,5"
    facts["gpus"][1]["name"] = 42
    facts["gpus"][2]["power"]["draw_w"] = float("nan")
    facts["collection_seconds"] = float("inf")
    facts["gpus"][3]["ecc"]["aggregate_corrected"] = 2 ** 64 - 1
    answer = tmp_path / "lying-answer.json"
    answer.write_text(json.dumps({"changed": False, "ansible_facts": {"gpufleet": facts}}))  # NaN, Infinity as-is
    interpreter = tmp_path / "lying-python"
    interpreter.write_text("#!/bin/sh\ncat > /dev/null\ncat %s\n" % answer)
    interpreter.chmod(0o755)
    return str(interpreter)


def nvidia_smi_fixture(tmp_path, name, edit):
    """The demo's nvidia-smi host's fixture with its nvidia-smi -q -x report edited."""
    with open(os.path.join(FIXTURES, "%s.json" % NVSMI), encoding="utf-8") as stream:
        fixture = json.load(stream)
    command = fixture["host"]["commands"][SMI]
    edited = edit(command["stdout"])
    assert edited != command["stdout"]
    command["stdout"] = edited
    path = tmp_path / ("%s.json" % name)
    path.write_text(json.dumps(fixture))
    return str(path)


def garbled(report):
    return report.replace("<gpu_temp>47 C</gpu_temp>", "<gpu_temp>45,5 C</gpu_temp>").replace(
        "<total>15360 MiB</total>", "<total>1000000000000000000000000000000 MiB</total>")


def eight_attached_none_listed(report):
    return re.sub(r"<gpu id=.*</gpu>", "", report.replace("<attached_gpus>1</attached_gpus>",
                                                          "<attached_gpus>8</attached_gpus>"), flags=re.DOTALL)


def test_one_hosts_bad_facts_fail_that_host_only_and_every_other_report_is_written(tmp_path):
    hosts = {
        HEALTHY: local_host(HEALTHY),
        NVSMI: local_host(NVSMI),
        LYING: local_host(HEALTHY, ansible_python_interpreter=lying_interpreter(tmp_path)),
        GARBLED: local_host(NVSMI, gpufleet_facts_fixture=nvidia_smi_fixture(tmp_path, GARBLED, garbled)),
        GPULESS: local_host(NVSMI, gpufleet_facts_fixture=nvidia_smi_fixture(tmp_path, GPULESS,
                                                                             eight_attached_none_listed)),
    }
    report_dir = tmp_path / "reports"
    result = run_audit(write_inventory(tmp_path / "hosts.yml", hosts), report_dir)
    assert result.returncode == 4, output(result)[-3000:]
    assert recap(result)[LYING]["unreachable"] == 1
    assert {host: counts["unreachable"] for host, counts in recap(result).items() if host != LYING} == {
        HEALTHY: 0, NVSMI: 0, GARBLED: 0, GPULESS: 0}

    # the run is complete: latest moved, and every host but the lying one was audited
    report = expanded(read_json(report_dir / "latest" / "report.json"))
    assert report["run"]["status"] == "complete"
    assert report["summary"]["failed"] == [LYING]
    message = report["hosts"][LYING]["message"]
    assert "do not match the facts schema" in message
    for problem in ("gpus[0].temperature.gpu_c: '45,5' is not integer or null", "gpus[1].name: 42 is not string",
                    "gpus[2].power.draw_w: nan is not a finite number", "collection_seconds: inf is not a finite",
                    "gpus[3].ecc.aggregate_corrected: 18446744073709551615 is outside the signed 64-bit range"):
        assert problem in message, message
    assert report["hosts"][LYING]["facts_file"] is None
    audited = {HEALTHY, NVSMI, GARBLED, GPULESS}
    assert {host for host, entry in report["hosts"].items() if entry["status"] == "ok"} == audited
    facts_dir = report_dir / "latest" / "facts"
    assert sorted(os.listdir(str(facts_dir))) == sorted("%s.json" % host for host in audited)
    facts = {host: strict_loads((facts_dir / ("%s.json" % host)).read_text(encoding="utf-8")) for host in audited}

    # readings that cannot be true: null, each with an entry in the host's errors
    gpu = facts[GARBLED]["gpus"][0]
    assert (gpu["temperature"]["gpu_c"], gpu["memory"]["total_mib"]) == (None, None)
    assert {error["call"]: error["reason"] for error in facts[GARBLED]["errors"]
            if error["call"].startswith("reading ")} == {
        "reading temperature.gpu_c": "'45,5 C' is not a reading of this field; reported as null",
        "reading memory.total_mib": "'1000000000000000000000000000000 MiB' is not a reading of this field; "
                                    "reported as null"}

    # 8 GPUs attached, none listed: a partial collection with a finding, never a healthy host
    assert facts[GPULESS]["gpus"] == [] and facts[GPULESS]["collection"]["status"] == "partial"
    incomplete = [finding for finding in report["hosts"][GPULESS]["findings"]
                  if finding["rule"] == "driver.collection_incomplete"]
    assert [finding["severity"] for finding in incomplete] == ["warning"]
    assert "states 8 attached GPU(s) but lists 0" in incomplete[0]["summary"]

    # the store has the run and the audited hosts' facts, in strict JSON
    assert report["store"]["status"] == "written", report["store"]
    store = sqlite3.connect(str(report_dir / "gpufleet.sqlite"))
    try:
        [(run_pk, record, summary)] = store.execute("SELECT id, record, summary FROM runs").fetchall()
        assert strict_loads(record)["status"] == "complete" and strict_loads(summary)
        assert dict(store.execute("SELECT host, status FROM hosts WHERE run_pk = ?", (run_pk,)).fetchall()) == dict(
            {host: "ok" for host in audited}, **{LYING: "failed"})
        stored = {host: strict_loads(zlib.decompress(blob).decode("utf-8"))
                  for host, blob in store.execute("SELECT host, data FROM facts WHERE run_pk = ?", (run_pk,))}
        assert stored == facts
        for table in ("findings", "causes"):
            for (data,) in store.execute("SELECT data FROM %s WHERE run_pk = ?" % table, (run_pk,)):
                strict_loads(data)
    finally:
        store.close()
