"""The baseline template in report.html, opened in headless Chromium (as test_report_html_timeline_chromium.py
does for the timeline): one table per group with its rows, text from the store stays text, and the page's
own script still runs beside it."""

import pytest

from ansible_collections.gpufleet.core.plugins.plugin_utils.reports.html import render_html
from ansible_collections.gpufleet.core.plugins.plugin_utils.reports.model import build_report
from ansible_collections.gpufleet.core.plugins.plugin_utils.store.baseline_template import group_template
from tests.support.chromium import rendered_dom
from tests.support.report_inputs import hostile_inputs

HOSTILE = '<img src=x onerror="document.documentElement.dataset.pwned=1"></script><b>'
FACTS = {"gpu-a100-01": {"driver": {"version": "550.90.07", "cuda_driver_version": "12.4"},
                         "gpus": [{"name": "NVIDIA A100-SXM4-80GB", "compute_mode": "Default", "persistence_mode": True,
                                   "mig": {"mode_current": False}}] * 8}}
POLICY = {"thresholds": {"memory_used_pct": 90}, "workload": {"services": [{"name": HOSTILE, "workers_per_gpu": 1}]}}


@pytest.fixture(scope="module")
def dom():
    report = build_report(*hostile_inputs())
    report["baselines"] = [
        group_template("all", "2026-11-20T060000Z", "2026-11-20T06:00:00Z", "2026-11-21T09:00:00Z", FACTS, [POLICY]),
        group_template(HOSTILE, HOSTILE, "2026-11-22T06:00:00Z", "2026-11-22T07:00:00Z", {}, [])]
    return rendered_dom(render_html(report))


def test_each_group_is_a_table_with_its_rows(dom):
    tables = [attrs for tag, attrs in dom.elements if tag == "table" and attrs.get("class") == "baseline"]
    assert [table["data-group"] for table in tables] == ["all", HOSTILE]
    assert dom.attribute("section", "id", "baselines") == "baselines"
    texts = [text.strip() for text in dom.texts]
    for label, value in (("GPU models (GPUs)", "NVIDIA A100-SXM4-80GB (8)"), ("driver (hosts)", "550.90.07 (1)"),
                         ("CUDA driver API (hosts)", "12.4 (1)"), ("GPUs per host (hosts)", "8 (1)"),
                         ("isolation (GPUs)", "no MIG, compute mode Default (8)"),
                         ("thresholds (hosts)", "memory_used_pct 90 (1)")):
        assert texts[texts.index(label) + 1] == value
    assert "the whole fleet" in texts and "group " + HOSTILE in texts
    assert texts.count("unknown (facts no longer kept)") == 6  # the second group's run kept no facts


def test_text_from_the_store_stays_text_and_the_table_still_runs(dom):
    assert dom.tags("img") == []
    assert dom.attribute("html", "data-pwned") is None
    assert not any(name.startswith("on") for _tag, attrs in dom.elements for name in attrs)
    assert "%s 1 per GPU (1)" % HOSTILE in [text.strip() for text in dom.texts]
    assert dom.attribute("body", "data-ready") == "1"
