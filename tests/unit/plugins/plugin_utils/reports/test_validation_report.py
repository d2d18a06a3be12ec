"""report.json 1.5 and report.html give each host's active checks (issue 28): per check its status and its
figures, measured against expected, next to the findings that judge them."""

import json
import os

import jsonschema

from ansible_collections.gpufleet.core.plugins.plugin_utils.reports.html import render_html
from ansible_collections.gpufleet.core.plugins.plugin_utils.reports.model import build_report
from ansible_collections.gpufleet.core.plugins.plugin_utils.reports.writer import render_json
from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.active_checks import validation_summary
from tests.support.rule_builders import healthy_node
from tests.support.validation_builders import (
    fail_memory, fail_nccl, healthy_validation, set_bandwidth, with_validation)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))))
RUN = {"id": "r1", "started_at": "2026-12-06T19:00:00Z", "finished_at": "2026-12-06T19:01:00Z", "tool_version": "1",
       "fail_severity": "critical", "policy_errors": []}


def failing_validation():
    validation = fail_memory(healthy_validation(), 3)
    set_bandwidth(validation, "host_to_device_memcpy_ce", 2, 20.1)
    return fail_nccl(validation, "NCCL WARN Cuda failure 'invalid device ordinal'")


def report():
    busy = healthy_validation()
    busy["refused"] = {"reason": "1 GPU process is running", "how_to_proceed": "drain the node first",
                       "gpu_processes": []}
    hosts = {"bad": with_validation(healthy_node(), failing_validation()),
             "good": with_validation(healthy_node(), healthy_validation()),
             "busy": with_validation(healthy_node(), busy), "plain": healthy_node()}
    return build_report(RUN, dict((name, {"status": "ok", "facts_file": "facts/%s.json" % name, "message": None,
                                          "validation": validation_summary(facts)})
                                  for name, facts in hosts.items()), {}, [])


def test_report_json_holds_each_hosts_validation_and_matches_the_schema():
    document = json.loads(render_json(report()))
    with open(os.path.join(ROOT, "docs", "schema", "report.schema.json")) as stream:
        jsonschema.validate(document, json.load(stream))
    bad = document["hosts"]["bad"]["validation"]["checks"]
    assert bad["dcgm_diag"]["status"] == "failed" and bad["nccl_all_reduce"]["status"] == "failed"
    assert {"testcase": "host_to_device_memcpy_ce", "gpu_index": 2, "measured_gbs": 20.1, "expected_gbs": 50.41,
            "link": "PCIe Gen5 x16"} in bad["nvbandwidth"]["figures"]
    assert document["hosts"]["busy"]["validation"]["refused"]["how_to_proceed"] == "drain the node first"
    assert "validation" not in document["hosts"]["plain"]


def test_report_html_shows_each_node_and_check_with_its_figures():
    page = render_html(report())
    section = page[page.index('<section id="validation">'):]
    section = section[:section.index("</section>")]
    assert "(3 hosts)" in section and "<code>plain</code>" not in section
    assert "memory: fail on GPU 3" in section
    assert "host_to_device_memcpy_ce GPU 2: 20.10 GB/s of 50.41 expected (PCIe Gen5 x16)" in section
    assert "NCCL WARN Cuda failure &#x27;invalid device ordinal&#x27;" in section
    assert 'class="validation-passed">passed' in section
    assert "refused" in section and "drain the node first" in section
