"""Control characters never reach a terminal, hosts.txt, a report or a log line raw.

Host-controlled text (host names, process and GPU names, versions, collection messages, cause summaries,
policy values) carries ANSI escapes, carriage returns, NUL, bidi overrides and lone surrogates here; every
output shows them as visible escapes (\\x1b, \\r, \\x00, \\u202e, \\udcff) and stays valid in its format.
"""

import json
import os
import unicodedata
from xml.etree import ElementTree

import pytest

from ansible_collections.gpufleet.core.plugins.action.policy_check import failure_result
from ansible_collections.gpufleet.core.plugins.plugin_utils.audit.run import run_audit
from ansible_collections.gpufleet.core.plugins.plugin_utils.audit.host_summary import summary_line
from ansible_collections.gpufleet.core.plugins.plugin_utils.policy import FleetPolicies, validate_policy
from ansible_collections.gpufleet.core.plugins.plugin_utils.reports.format import expanded
from ansible_collections.gpufleet.core.plugins.plugin_utils.reports.html import render_html
from ansible_collections.gpufleet.core.plugins.plugin_utils.reports.junit import render_junit
from ansible_collections.gpufleet.core.plugins.plugin_utils.reports.model import build_report
from ansible_collections.gpufleet.core.plugins.plugin_utils.reports.terminal import render_terminal
from ansible_collections.gpufleet.core.plugins.plugin_utils.reports.writer import render_json
from tests.support.report_inputs import RUN, embedded_data, finding, load_junit_schema
from tests.support.rule_builders import healthy_node

ANSI = "\x1b[2J\x1b[31mOK\x1b[0m"
TITLE = "\x1b]0;pwned\x07"
CR = "ok\rFAILED"
NUL = "a\x00b"
BIDI = "gpu-\u202enimda"
SURROGATE = "bad\udcffname"
C1 = "x\x9b31my"
HOSTILE = (ANSI, TITLE, CR, NUL, BIDI, SURROGATE, C1)
RAW = ("\x1b", "\x07", "\r", "\x00", "\u202e", "\udcff", "\x9b")
VISIBLE = ("\\x1b", "\\x07", "\\r", "\\x00", "\\u202e", "\\udcff", "\\x9b")


def assert_printable(text):
    """No control (but newline), format character, surrogate or separator anywhere in text."""
    bad = [(hex(ord(c)), text[max(0, i - 10):i + 10]) for i, c in enumerate(text)
           if c != "\n" and unicodedata.category(c) in ("Cc", "Cf", "Cs", "Zl", "Zp")]
    assert bad == []


def hostile_facts():
    facts = healthy_node(gpus=2, driver="550.90.07")
    facts["gpus"][0]["name"] = "NVIDIA " + ANSI
    facts["gpus"][1]["name"] = BIDI
    facts["gpus"][0]["processes"][0]["name"] = TITLE + "python"
    facts["gpus"][0]["processes"].append(dict(facts["gpus"][0]["processes"][0], pid=4711, name=BIDI + CR))
    facts["source"] = CR
    facts["driver"].update(mismatch=True, kernel_module_version=NUL, userspace_version=C1)
    return facts


def hostile_results():
    return {
        "gpu" + ANSI: {"ansible_facts": {"gpufleet": hostile_facts()}},
        "failed" + CR: {"failed": True, "msg": "collector crashed:\n" + TITLE + NUL + "\r\n" + SURROGATE},
        "unreachable" + BIDI: {"unreachable": True, "msg": "ssh: " + C1},
    }


@pytest.mark.parametrize("text, visible", list(zip(HOSTILE, VISIBLE)))
def test_summary_line_escapes_host_text_in_every_place(text, visible):
    facts = healthy_node(gpus=1)
    facts["gpus"][0]["name"] = text
    facts["driver"].update(mismatch=True, kernel_module_version=text, userspace_version="x")
    lines = [summary_line(text, {"ansible_facts": {"gpufleet": facts}}),
             summary_line(text, {"failed": True, "msg": text}),
             summary_line(text, {"unreachable": True, "msg": text})]
    for line in lines:
        assert_printable(line)
        assert "\n" not in line and visible in line


def test_summary_line_of_a_failed_host_keeps_the_message_on_one_line():
    line = summary_line("h1", {"failed": True, "msg": "collector crashed:\n  " + ANSI + "\r\n" + NUL})
    assert line == "h1: FAILED - collector crashed: \\x1b[2J\\x1b[31mOK\\x1b[0m a\\x00b"


def test_hosts_txt_and_every_report_file_show_escapes_not_controls(tmp_path):
    results = hostile_results()
    policies = {host: validate_policy({"workload": {"max_processes_per_gpu": 1}}) for host in results}
    report, paths, lines = run_audit(results, policies, str(tmp_path / "run"), str(tmp_path),
                                     "2026-03-01T12:00:00Z")
    hosts_txt = (tmp_path / "run" / "hosts.txt").read_text(encoding="utf-8")
    assert hosts_txt == "\n".join(lines) + "\n"
    assert_printable(hosts_txt)
    assert "gpu\\x1b[2J\\x1b[31mOK\\x1b[0m: ok" in hosts_txt
    assert "failedok\\rFAILED: FAILED - collector crashed: \\x1b]0;pwned\\x07a\\x00b bad\\udcffname" in hosts_txt
    assert "unreachablegpu-\\u202enimda: UNREACHABLE - ssh: x\\x9b31my" in hosts_txt
    for path in paths:
        if path.endswith(".prom"):
            continue  # label values are data for Prometheus, escaped by its own rules (report_prometheus)
        with open(path, encoding="utf-8") as stream:
            assert_printable(stream.read())
    with open(os.path.join(str(tmp_path / "run"), "report.json"), encoding="utf-8") as stream:
        saved = json.load(stream)
    assert set(saved["hosts"]) == set(results)  # the data is exact, only its encoding escapes
    [crowded] = [f for f in saved["findings"] if f["rule"] == "workload.gpu_oversubscribed"]
    assert crowded["evidence"]["names"] == sorted([TITLE + "python", BIDI + CR])
    with open(os.path.join(str(tmp_path / "run"), "report.html"), encoding="utf-8") as stream:
        data = json.loads(embedded_data(stream.read()))
    assert [row[8]["names"] for row in data["rows"] if row[8] and "names" in row[8]] == [
        sorted(["\\x1b]0;pwned\\x07python", "gpu-\\u202enimdaok\\rFAILED"])]
    with open(os.path.join(str(tmp_path / "run"), "junit.xml"), encoding="utf-8") as stream:
        junit = stream.read()
    load_junit_schema().validate(junit)
    assert "GPU 0 (0000:18:00.0, NVIDIA \\x1b[2J\\x1b[31mOK\\x1b[0m) runs 2 processes" in junit  # the GPU name
    terminal = render_terminal(report, paths=paths)
    assert_printable(terminal)
    assert "\\u202e" in terminal


def test_terminal_summary_escapes_hosts_causes_run_id_and_policy_errors():
    hosts = {text: {"status": "unreachable", "facts_file": None, "message": text} for text in HOSTILE}
    cause = {"id": "driver:x", "kind": "driver", "layer": "driver", "severity": "critical",
             "summary": "Xid 79 on " + ANSI + BIDI + C1, "hosts": list(HOSTILE), "evidence": {}, "action": CR}
    run = dict(RUN, id="run" + TITLE, policy_errors=["gpufleet_policy: " + CR + NUL])
    text = render_terminal(build_report(run, hosts, {}, [cause]), run_dir="/r/" + ANSI)
    assert_printable(text)
    for visible in VISIBLE:
        assert visible in text
    assert "Policy errors (1): gpufleet_policy: ok\\rFAILEDa\\x00b" in text


def test_junit_stays_valid_xml_and_shows_each_character():
    hosts = {text: {"status": "failed", "facts_file": None, "message": text} for text in HOSTILE}
    hosts["ok" + ANSI] = {"status": "ok", "facts_file": None, "message": None}
    text = "".join(HOSTILE) + "\ufffe\uffff"
    findings = {"ok" + ANSI: [finding("hardware.xid", "critical", "ok" + ANSI, "0000:18:00.0", text, {text: text})]}
    junit = render_junit(build_report(RUN, hosts, findings, []))
    load_junit_schema().validate(junit)
    root = ElementTree.fromstring(junit.encode("utf-8"))
    message = root.find(".//testcase[@classname='hardware']/failure").text
    assert message.startswith("[critical] hardware.xid, GPU 0000:18:00.0: ")
    message = message.split(": ", 1)[1]
    assert message.startswith("\\x1b[2J\\x1b[31mOK\\x1b[0m\\x1b]0;pwned\\x07ok\\rFAILEDa\\x00b")
    for visible in VISIBLE + ("\\ufffe", "\\uffff"):
        assert visible in message
    assert_printable(junit)
    errors = [case.find("error").get("message") for case in root.iter("testcase") if case.find("error") is not None]
    assert "gpu-\\u202enimda" in errors and "a\\x00b" in errors and "bad\\udcffname" in errors


def test_html_shows_escapes_in_the_page_and_its_data():
    hosts = {text: {"status": "unreachable", "facts_file": None, "message": text} for text in HOSTILE}
    cause = {"id": "c", "kind": "card", "layer": "hardware", "severity": "warning", "summary": BIDI + ANSI,
             "hosts": [BIDI], "evidence": {}, "action": "Look."}
    findings = {BIDI: [finding("hardware.xid", "warning", BIDI, None, CR + NUL, {"name": TITLE})]}
    page = render_html(build_report(RUN, hosts, findings, [cause]))
    assert_printable(page)
    assert "gpu-\\u202enimda\\x1b[2J" in page  # the cause summary, in the page itself
    data = json.loads(embedded_data(page))
    assert "gpu-\\u202enimda" in [host[0] for host in data["hosts"]]
    assert "ok\\rFAILEDa\\x00b" in data["strings"]
    position = [host[0] for host in data["hosts"]].index("gpu-\\u202enimda")
    assert [row[8] for row in data["rows"] if row[0] == position] == [{"name": "\\x1b]0;pwned\\x07"}]


def test_report_json_reads_back_exactly_and_holds_no_raw_control():
    hosts = {text: {"status": "unreachable", "facts_file": None, "message": text} for text in HOSTILE}
    report = build_report(RUN, hosts, {}, [])
    text = render_json(report)
    for raw in RAW:
        assert raw not in text
    assert expanded(json.loads(text))["hosts"] == json.loads(json.dumps(report["hosts"]))


def test_policy_check_message_escapes_host_names_and_values():
    fleet = FleetPolicies(lambda host: {"gpufleet_policy": {"compute_mode": "exclusive" + ANSI}},
                          {}).check(["node" + BIDI, "node" + CR])
    result = failure_result(fleet, 2)
    assert_printable(result["msg"])
    assert "nodeok\\rFAILED" in result["msg"] and "nodegpu-\\u202enimda" in result["msg"]
    assert "\\x1b[2J" in result["msg"]
    assert result["failed_hosts"] == sorted(["node" + BIDI, "node" + CR])  # the data keeps the real names
