"""report.html opened in headless Chromium (Debian package `chromium`): the table renders from its data,
filters and sorting work, paging keeps big fleets light, and strings from hosts stay text.

Chromium is required, not optional: CI installs it (apt-get install -y chromium), so a missing browser
fails these tests instead of skipping them.
"""

import os
import tempfile

import pytest

from ansible_collections.gpufleet.core.plugins.plugin_utils.reports.html import render_html
from ansible_collections.gpufleet.core.plugins.plugin_utils.reports.model import build_report
from tests.support.chromium import Dom, start_chromium
from tests.support.report_inputs import HOSTILE_HOST, HOSTILE_PROCESS, hostile_inputs, large_inputs


@pytest.fixture(scope="module")
def doms():
    """Dumped DOMs of the pages below, loaded by parallel Chromium processes."""
    with tempfile.TemporaryDirectory() as folder:
        hostile = os.path.join(folder, "hostile.html")
        with open(hostile, "w", encoding="utf-8") as stream:
            stream.write(render_html(build_report(*hostile_inputs())))
        big = os.path.join(folder, "big.html")
        with open(big, "w", encoding="utf-8") as stream:
            stream.write(render_html(build_report(*large_inputs(1000))))
        pages = {
            "hostile": (hostile, ""),
            "filtered": (hostile, "#severity=critical&sort=host&dir=desc"),
            "searched": (hostile, "#q=INFER-04%20threshold_pct&layer=workload"),
            "big": (big, ""),
        }
        runs = {}
        for name, (page, fragment) in pages.items():
            profile = os.path.join(folder, "profile-" + name)
            os.mkdir(profile)
            runs[name] = start_chromium(page, fragment, profile)
        results = {}
        for name, process in runs.items():
            stdout, stderr = process.communicate(timeout=120)
            assert process.returncode == 0, stderr[-2000:]
            results[name] = Dom(stdout)
        return results


def test_the_table_renders_every_row(doms):
    dom = doms["hostile"]
    assert dom.attribute("body", "data-ready") == "1"
    assert dom.attribute("table", "data-matching", "findings") == "11"
    assert len(dom.rows) == 11
    assert dom.column(0) == ["critical"] * 3 + ["unreachable", "failed"] + ["warning"] * 4 + ["info", "none"]
    assert dom.column(2)[3:5] == ["dgx-h100-08", "dgx-h100-09"]
    assert "Showing 11 of 11 matching rows (8 findings and 3 hosts without findings in all)" in dom.texts
    heading = [text for text in dom.texts if text.startswith("(") and "findings on" in text]
    assert heading == ["(8 findings on 9 hosts)"]


def test_host_strings_stay_text(doms):
    dom = doms["hostile"]
    assert len(dom.tags("script")) == 2
    assert dom.tags("img") == []
    assert not any("data-pwned" in attrs for _tag, attrs in dom.elements)
    assert not any(name.startswith("on") for _tag, attrs in dom.elements for name in attrs)
    assert HOSTILE_HOST in dom.column(2)
    assert any(HOSTILE_PROCESS in text for text in dom.texts)
    assert dom.attribute("html", "data-pwned") is None
    assert "".join(dom.texts).count("gpufleet audit 20260301T120000Z") == 1


def test_filter_and_sort_from_the_address(doms):
    dom = doms["filtered"]
    assert dom.attribute("table", "data-matching", "findings") == "3"
    assert dom.column(2) == [HOSTILE_HOST, "dgx-h100-02", "dgx-h100-01"]
    assert set(dom.column(0)) == {"critical"}
    sorted_header = [attrs for attrs in dom.tags("th") if attrs.get("aria-sort") == "descending"]
    assert [attrs["data-column"] for attrs in sorted_header] == ["host"]


def test_text_search_is_case_insensitive_and_combines_with_the_layer(doms):
    dom = doms["searched"]
    assert dom.attribute("table", "data-matching", "findings") == "1"
    assert dom.column(5) == ["workload.memory_near_full"]


def test_a_big_fleet_draws_one_page(doms):
    dom = doms["big"]
    assert dom.attribute("table", "data-matching", "findings") == str(3 * (1000 - 11) + 11)
    assert dom.attribute("table", "data-shown", "findings") == "200"
    assert len(dom.rows) == 200
