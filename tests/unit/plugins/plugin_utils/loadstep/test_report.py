"""loadstep.json and loadstep.html (plugin_utils/loadstep/report.py, report_loadstep_html.py): the previous run
of the same host and service, the files written, and the HTML section escaped and self-contained."""

import json
import os

from ansible_collections.gpufleet.core.plugins.plugin_utils.loadstep import report
from ansible_collections.gpufleet.core.plugins.plugin_utils.reports.loadstep_html import (
    fragment_yaml, loadstep_section, render_loadstep_html)


def write_run(root, name, runs):
    folder = os.path.join(root, name)
    os.makedirs(folder)
    document = report.build_document(runs, folder, "2026-12-01T00:00:00Z", "2026-12-01T00:05:00Z", "0.1.0")
    report.write_document(document, folder, render_loadstep_html)
    return folder


def entry(host, service, held=None, broke=None, steps=()):
    return {"host": host, "service": service, "mode": "service", "status": "complete", "steps": list(steps),
            "held": held, "broke": broke, "suggestion": None, "idle": None, "host_restored": {"as_it_was": True},
            "comparison": None}


def test_the_previous_run_is_the_newest_earlier_one_of_the_same_host_and_service(tmp_path):
    root = str(tmp_path)
    oldest = write_run(root, "20261201T000000Z-loadstep", [entry("gpu-01", "vllm.service", held={"step": 1, "concurrency": 2})])
    write_run(root, "20261201T010000Z-loadstep", [entry("gpu-02", "vllm.service"), entry("gpu-01", "other.service")])
    newer = write_run(root, "20261201T020000Z-loadstep", [entry("gpu-01", "vllm.service", held={"step": 1, "concurrency": 4})])
    write_run(root, "20261201T030000Z-loadstep", [entry("gpu-01", "vllm.service", held={"step": 1, "concurrency": 8})])
    os.makedirs(os.path.join(root, "20261201T015000Z-loadstep-audit"))
    folder, previous = report.find_previous(root, os.path.join(root, "20261201T025959Z-loadstep"), "gpu-01",
                                            "vllm.service")
    assert folder == newer and previous["held"]["concurrency"] == 4
    folder, previous = report.find_previous(root, os.path.join(root, "20261201T010000Z-loadstep"), "gpu-01",
                                            "vllm.service")
    assert folder == oldest
    assert report.find_previous(root, os.path.join(root, "20261201T000000Z-loadstep"), "gpu-01",
                                "vllm.service") == (None, None)


def test_a_damaged_earlier_document_is_skipped(tmp_path):
    root = str(tmp_path)
    good = write_run(root, "20261201T000000Z-loadstep", [entry("gpu-01", "vllm.service", held={"step": 1, "concurrency": 2})])
    damaged = os.path.join(root, "20261201T010000Z-loadstep")
    os.makedirs(damaged)
    with open(os.path.join(damaged, "loadstep.json"), "w") as handle:
        handle.write('{"schema": "gpufleet.loadstep", "runs": [')
    assert report.find_previous(root, os.path.join(root, "20261201T020000Z-loadstep"), "gpu-01",
                                "vllm.service")[0] == good


def test_the_files_and_the_html_section(tmp_path):
    hostile = entry("gpu-<b>01</b>", "vllm.service", broke={"step": 2, "concurrency": 2, "reason": "oom",
                                                            "layer": "workload", "detail": "<script>x</script>"})
    folder = write_run(str(tmp_path), "20261201T000000Z-loadstep", [hostile])
    with open(os.path.join(folder, "loadstep.json")) as handle:
        document = json.load(handle)
    assert document["schema"] == "gpufleet.loadstep" and document["version"] == "1.0"
    assert document["runs"][0]["broke"]["reason"] == "oom"
    html = open(os.path.join(folder, "loadstep.html")).read()
    assert "<script" not in html and "&lt;script&gt;x&lt;/script&gt;" in html
    assert "gpu-&lt;b&gt;01&lt;/b&gt;" in html
    assert loadstep_section({"runs": []}) == '<section id="loadstep"><h2>Load steps</h2>\n<p>No host was put under load.</p>\n</section>'


def test_the_suggested_fragment_as_yaml():
    text = fragment_yaml({"gpufleet_policy_loadstep": {"workload": {"services": {"vllm.service": {"workers_per_gpu": 3}}}}})
    assert text == ('gpufleet_policy_loadstep:\n  workload:\n    services:\n      "vllm.service":\n'
                    '        workers_per_gpu: 3\n')
