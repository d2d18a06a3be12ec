"""The baseline template (store/baseline_template.py) in report.json and report.html, from the same rows that
`gpufleet baseline show --markdown` prints, on SQLite and PostgreSQL."""

import datetime
import json
import os

import jsonschema

from ansible_collections.gpufleet.core.plugins.plugin_utils.reports.html import render_html
from ansible_collections.gpufleet.core.plugins.plugin_utils.store.baseline import set_baseline
from ansible_collections.gpufleet.core.plugins.plugin_utils.store.baseline_template import markdown, render_markdown
from ansible_collections.gpufleet.core.plugins.plugin_utils.store.engine import make_engine
from ansible_collections.gpufleet.core.plugins.plugin_utils.store.record import StoreSettings
from ansible_collections.gpufleet.core.plugins.plugin_utils.reports.writer import render_json
from tests.support.postgres import postgres_cluster, store_url  # noqa: F401 pylint: disable=unused-import
from tests.support.schema_check import ROOT
from tests.support.store_runs import make_run, record_run, xid

NOW = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
T1, T2 = [(NOW - datetime.timedelta(days=days)).strftime("%Y-%m-%dT%H:%M:%SZ") for days in (2, 1)]
POLICY = {"thresholds": {"memory_used_pct": 92, "temperature_margin_c": 5},
          "workload": {"max_processes_per_gpu": 4, "services": [{"name": "vllm.service", "workers_per_gpu": 2}]}}
HOSTILE_GROUP = '<img src=x onerror="alert(1)">'


def audit(url, run_id, started, groups=None):
    report, facts = make_run(run_id, started, {"node-1": [xid("node-1")], "node-2": []})
    settings = StoreSettings(url, "test", groups_of_host=groups or {})
    return record_run(settings, report, facts, host_policies={"node-1": POLICY, "node-2": POLICY})


def with_baseline(url, group="all", groups=None):
    audit(url, "r1", T1, groups)
    engine = make_engine(url)
    with engine.begin() as connection:
        set_baseline(connection, "r1", group)
    engine.dispose()
    return audit(url, "r2", T2, groups)


def test_the_report_carries_the_template_of_the_baseline_with_real_values(store_url):
    report = with_baseline(store_url)
    (template,) = report["baselines"]
    rows = dict(template["rows"])
    assert (template["group"], template["run"]) == ("all", "r1")
    assert rows["run"].startswith("r1 (started %s, set " % T1)
    assert rows["hosts with facts"] == "2"
    assert rows["GPU models (GPUs)"] == "NVIDIA H100 80GB HBM3 (4)"
    assert rows["GPUs per host (hosts)"] == "2 (2)"
    assert rows["driver (hosts)"] == "550.90.07 (2)"
    assert rows["worker caps (hosts)"] == "vllm.service 2 per GPU; at most 4 processes per GPU (2)"
    assert rows["thresholds (hosts)"] == "memory_used_pct 92, temperature_margin_c 5 (2)"
    document = json.loads(render_json(report))
    with open(os.path.join(ROOT, "docs", "schema", "report.schema.json"), encoding="utf-8") as stream:
        jsonschema.validate(document, json.load(stream))
    engine = make_engine(store_url)
    with engine.connect() as connection:
        assert render_markdown(connection) == markdown(report["baselines"])  # the same rows as the command's
    engine.dispose()


def test_report_html_shows_the_template_as_a_table(store_url):
    page = render_html(with_baseline(store_url))
    section = page[page.index('<section id="baselines">'):]
    section = section[:section.index("</section>")]
    assert '<h3>the whole fleet</h3><table class="baseline" data-group="all">' in section
    assert "<tr><th>GPU models (GPUs)</th><td>NVIDIA H100 80GB HBM3 (4)</td></tr>" in section
    assert "<tr><th>driver (hosts)</th><td>550.90.07 (2)</td></tr>" in section
    assert "<tr><th>worker caps (hosts)</th><td>vllm.service 2 per GPU; at most 4 processes per GPU (2)</td></tr>" in section
    assert page.index('<section id="baselines">') < page.index('<section id="table-section">')


def test_a_group_baseline_is_escaped_and_no_baseline_means_no_section(store_url):
    assert "baselines" not in audit(store_url, "r0", T1) and 'id="baselines"' not in render_html(audit(store_url, "r0b", T1))
    groups = {"node-1": [HOSTILE_GROUP], "node-2": [HOSTILE_GROUP]}
    page = render_html(with_baseline(store_url, HOSTILE_GROUP, groups))
    assert HOSTILE_GROUP not in page
    assert "<h3>group &lt;img src=x onerror=&quot;alert(1)&quot;&gt;</h3>" in page
