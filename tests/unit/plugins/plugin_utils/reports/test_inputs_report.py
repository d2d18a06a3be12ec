"""report.json 1.4 and report.html give each host's inputs (issue 31 section 4): a host with no findings whose
evidence was absent is shown as such, not as a clean host."""

import json
import os

import jsonschema

from ansible_collections.gpufleet.core.plugins.plugin_utils.reports.html import render_html
from ansible_collections.gpufleet.core.plugins.plugin_utils.reports.model import build_report
from ansible_collections.gpufleet.core.plugins.plugin_utils.reports.writer import render_json

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))))
RUN = {"id": "r1", "started_at": "2026-12-06T19:00:00Z", "finished_at": "2026-12-06T19:01:00Z", "tool_version": "1",
       "fail_severity": "critical", "policy_errors": []}
CAPTURED = {"read": ["driver", "kernel_log"], "failed": [], "not_supported": [], "absent": ["bmc", "host_pressure"],
            "capture": {"kind": "nvidia_bug_report", "path": "/srv/nvidia-bug-report.log.gz"}}
LIVE = {"read": ["driver", "kernel_log", "bmc"], "failed": [], "not_supported": [], "absent": [], "capture": None}


def report():
    return build_report(RUN, {"captured": {"status": "ok", "facts_file": "facts/captured.json", "message": None,
                                           "inputs": CAPTURED},
                              "live": {"status": "ok", "facts_file": "facts/live.json", "message": None,
                                       "inputs": LIVE}}, {}, [])


def test_report_json_holds_each_hosts_inputs_and_matches_the_schema():
    document = json.loads(render_json(report()))
    with open(os.path.join(ROOT, "docs", "schema", "report.schema.json")) as stream:
        jsonschema.validate(document, json.load(stream))
    assert document["report_version"] == "2.0"
    assert document["hosts"]["captured"]["inputs"] == CAPTURED


def test_report_html_lists_the_host_whose_inputs_were_absent_and_its_capture_only():
    page = render_html(report())
    section = page[page.index('<section id="inputs">'):]
    section = section[:section.index("</section>")]
    assert "<code>captured</code>" in section and "bmc, host_pressure" in section
    assert "nvidia_bug_report /srv/nvidia-bug-report.log.gz" in section
    assert "<code>live</code>" not in section
