"""report.html of a 10,000-host fleet opened and filtered in headless Chromium: the page draws and filters
every row (asserted), and the times the page measures itself (performance.now(): from navigation start to
the first table drawn, and the filter-and-sort pass) are recorded, never asserted (tests/support/timings.py;
the figure is in bench/README.md, section 7)."""

import os
import subprocess
import time

import pytest

from ansible_collections.gpufleet.core.plugins.plugin_utils.reports.html import render_html
from ansible_collections.gpufleet.core.plugins.plugin_utils.reports.model import build_report
from tests.support.report_inputs import large_inputs
from tests.support.timings import record_timing
from tests.support.chromium import Dom, chromium

HOSTS = 10000
FINDINGS_PER_HOST = 5  # about the 46,454 findings of bench/diagnose_bench.py's 10,000 hosts
UNREACHABLE = len([number for number in range(HOSTS) if number % 97 == 5])
# without --virtual-time-budget, so that performance.now() is the real clock; the page draws synchronously
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--disable-quic", "--dump-dom"]
VIEWS = {
    "open": ("", HOSTS * FINDINGS_PER_HOST - UNREACHABLE * (FINDINGS_PER_HOST - 1)),
    "filter": ("#severity=critical&q=node-01", None),
}


@pytest.fixture(scope="module")
def big_page(tmp_path_factory):
    folder = tmp_path_factory.mktemp("html-timing")
    report = build_report(*large_inputs(HOSTS, findings_per_host=FINDINGS_PER_HOST))
    page = folder / "report.html"
    page.write_text(render_html(report), encoding="utf-8")
    critical = [f for f in report["findings"] if f["severity"] == "critical" and "node-01" in f["host"]]
    return page, report, len(critical), folder


def load(page, fragment, folder, name):
    profile = folder / ("profile-" + name)
    profile.mkdir()
    started = time.perf_counter()
    completed = subprocess.run([chromium()] + FLAGS + ["--user-data-dir=%s" % profile, "file://%s%s" % (page, fragment)],
                               capture_output=True, text=True, timeout=300, check=False)
    assert completed.returncode == 0, completed.stderr[-2000:]
    return Dom(completed.stdout), time.perf_counter() - started


@pytest.mark.parametrize("view", sorted(VIEWS))
def test_a_10000_host_page_opens_and_filters_in_chromium(big_page, view):
    page, report, critical_matching, folder = big_page
    fragment, matching = VIEWS[view]
    dom, process_seconds = load(page, fragment, folder, view)
    assert dom.attribute("body", "data-ready") == "1"
    assert dom.attribute("table", "data-matching", "findings") == str(matching or critical_matching)
    assert len(dom.rows) == min(200, matching or critical_matching)
    open_ms = float(dom.attribute("body", "data-open-ms"))
    apply_ms = float(dom.attribute("table", "data-apply-ms", "findings"))
    record_timing("report.html %s, %d hosts" % (view, HOSTS), open_ms / 1000.0, filter_seconds=apply_ms / 1000.0,
                  chromium_process_seconds=round(process_seconds, 3), page_bytes=os.path.getsize(str(page)),
                  findings=len(report["findings"]), rows_matching=matching or critical_matching)
