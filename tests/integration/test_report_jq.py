"""report.json 2.0 as a user's script reads it: the README's jq one-liners, run with the real jq on a demo audit
(the demo fleet plus one unreachable host), print what the report holds; findings.ndjson and report.json.gz
beside it; junit.xml's failure texts the same in two audits of the same fleet, warnings passing by default."""

import gzip
import json
import os
import re
import shutil
import subprocess
import sys
from xml.etree import ElementTree

import pytest

from ansible_collections.gpufleet.core.plugins.plugin_utils.reports.format import expanded
from tests.integration.test_exit_status import playbook_env, unreachable_host, write_inventory
from tests.support.report_inputs import load_junit_schema

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEMO = os.path.join(ROOT, "inventories", "demo")
GONE = "gpu-gone-98"
ONE_HOST = "gpu-h100-xid79-02"


PLAYBOOK_BIN = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")


def audit(report_dir, extra_inventory, *extra):
    argv = [PLAYBOOK_BIN, "audit.yml", "-i", DEMO, "-i", extra_inventory,
            "-e", "gpufleet_report_dir=%s" % report_dir] + list(extra)
    return subprocess.run(argv, cwd=ROOT, env=playbook_env(), capture_output=True, text=True, timeout=600, check=False)


@pytest.fixture(scope="module")
def two_audits(tmp_path_factory):
    """Two audits of the same fleet into one report folder (the store remembers the first); the second compressed."""
    base = tmp_path_factory.mktemp("jq")
    extra_inventory = write_inventory(base / "gone.yml", {GONE: unreachable_host()})
    report_dir = base / "reports"
    folders = []
    for extra in ((), ("-e", "gpufleet_report_compress=true")):
        result = audit(str(report_dir), extra_inventory, *extra)
        assert result.returncode == 4, (result.stdout + result.stderr)[-3000:]  # the unreachable host
        folders.append(sorted(path for path in report_dir.iterdir() if re.fullmatch(r"\d{8}T\d{6}Z(-\d+)?", path.name))[-1])
    assert len(set(folders)) == 2
    return folders


def readme_one_liners():
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as stream:
        text = stream.read()
    section = text[text.index("### Reading report.json with jq"):]
    block = section[section.index("```sh\n") + len("```sh\n"):section.index("\n```\n")]
    return block.splitlines()


def run_line(line, folder):
    result = subprocess.run(["bash", "-o", "pipefail", "-c", line], cwd=str(folder), capture_output=True, text=True,
                            timeout=60, check=False)
    assert result.returncode == 0, (line, result.stderr)
    return result.stdout


def json_values(text):
    decoder, values, position = json.JSONDecoder(), [], 0
    text = text.strip()
    while position < len(text):
        value, position = decoder.raw_decode(text, position)
        values.append(value)
        position = len(text) - len(text[position:].lstrip())
    return values


def test_every_readme_one_liner_prints_what_the_report_holds(two_audits):
    folder = two_audits[1]
    with open(folder / "report.json", encoding="utf-8") as stream:
        report = expanded(json.load(stream))
    findings = report["findings"]
    critical = [f for f in findings if f["severity"] == "critical"]
    assert shutil.which("jq"), "jq is a system package of the tests (tools/ensure_system_packages.sh)"
    lines = readme_one_liners()
    outputs = [run_line(line, folder) for line in lines]
    assert len(outputs) == 9
    assert json_values(outputs[0]) == critical and len(critical) == 20
    assert outputs[1].splitlines() == ["\t".join([f["host"], f["rule"], f["gpu"] or "-", f["summary"]]) for f in critical]
    one_host = [f for f in findings if f["host"] == ONE_HOST]
    assert json_values(outputs[2]) == one_host and one_host
    by_layer = {layer: sum(counts.values()) for layer, counts in report["summary"]["by_layer"].items() if sum(counts.values())}
    assert json_values(outputs[3]) == [by_layer]
    assert by_layer == {"driver": 12, "hardware": 37, "scheduling": 18, "workload": 12}
    not_collected = outputs[4].splitlines()
    assert [line.split("\t")[:2] for line in not_collected] == [[GONE, "unreachable"]]
    assert outputs[5].splitlines() == sorted({f["host"] for f in critical})
    assert json_values(outputs[6]) == [{"status": report["run"]["status"], "failed": True,
                                        "by_severity": report["summary"]["by_severity"]}]
    hardware = json_values(outputs[7])
    assert [(r["host"], r["rule"], r["summary"]) for r in hardware] == [
        (f["host"], f["rule"], f["summary"]) for f in findings if f["layer"] == "hardware"]
    assert {(r["run_id"], r["time"]) for r in hardware} == {(report["run"]["id"], report["run"]["finished_at"])}
    assert json_values(outputs[8]) == [report["summary"]["by_severity"]]


def test_the_stream_and_the_compressed_copy_hold_the_report(two_audits):
    first, second = two_audits
    plain = (second / "report.json").read_bytes()
    assert gzip.decompress((second / "report.json.gz").read_bytes()) == plain
    assert not (first / "report.json.gz").exists()
    report = json.loads(plain)
    records = [json.loads(line) for line in (second / "findings.ndjson").read_text(encoding="utf-8").splitlines()]
    assert [{k: v for k, v in r.items() if k not in ("run_id", "time")} for r in records] == report["findings"]


def failures(folder):
    root = ElementTree.parse(str(folder / "junit.xml")).getroot()
    return [(case.get("classname"), case.get("name"), failure.get("type"), failure.get("message"), failure.text)
            for case in root.iter("testcase") for failure in case.findall("failure")]


def test_junit_failure_texts_are_the_same_in_two_audits_and_warnings_pass(two_audits):
    first, second = two_audits
    with open(second / "report.json", encoding="utf-8") as stream:
        report = json.load(stream)
    assert {f["runs_open"] for f in report["findings"]} == {2}  # the store knows them from the first audit
    assert failures(first) == failures(second)
    assert (first / "junit.xml").read_bytes().count(b"<failure ") == len(failures(first))
    failing_hosts = {host for _family, host, *_rest in failures(second)}
    assert failing_hosts == {f["host"] for f in report["findings"] if f["severity"] == "critical"}
    assert {kind for _family, _host, kind, _message, _text in failures(second)} == {"critical"}
    root = ElementTree.parse(str(second / "junit.xml")).getroot()
    hosts = set(report["hosts"])
    for suite in root:
        assert {case.get("name") for case in suite.iter("testcase")} == hosts  # every host, passing ones too
    load_junit_schema().validate(str(second / "junit.xml"))
