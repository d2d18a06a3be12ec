"""The store holds what one host's facts and findings can hold: strict JSON (no NaN, no Infinity, which strict
readers refuse) and error counters whose sums go beyond the signed 64-bit columns, without refusing the run."""

import json

from sqlalchemy import select

from ansible_collections.gpufleet.core.plugins.plugin_utils.store.engine import make_engine
from ansible_collections.gpufleet.core.plugins.plugin_utils.store.tables import CAUSES, FINDINGS, GPU_COUNTERS, RUNS
from ansible_collections.gpufleet.core.plugins.plugin_utils.store.write import facts_from_blob
from ansible_collections.gpufleet.core.plugins.plugin_utils.store.tables import FACTS
from tests.support.postgres import postgres_cluster, store_url  # noqa: F401 pylint: disable=unused-import
from tests.support.report_inputs import finding
from tests.support.store_runs import BUS, gpu_facts, host_facts, make_run, record, xid

INT64_MAX = 2 ** 63 - 1
T1 = "2026-12-01T06:00:00Z"


def strict_loads(text):
    def refuse(constant):
        raise ValueError("not strict JSON: %s" % constant)
    return json.loads(text, parse_constant=refuse)


def rows(url, *columns):
    engine = make_engine(url)
    try:
        with engine.connect() as connection:
            return [tuple(row) for row in connection.execute(select(*columns))]
    finally:
        engine.dispose()


def test_counter_sums_beyond_64_bits_are_stored_at_the_columns_largest_value(store_url):
    gpu = gpu_facts("node-1-S0", BUS[0], retired=INT64_MAX, nvlink=INT64_MAX)
    gpu["retired_pages"]["double_bit"] = 5
    gpu["nvlinks"].append({"link": 1, "errors": {"replay": INT64_MAX, "recovery": 1}})
    report, facts = make_run("r1", T1, {"node-1": [xid("node-1")], "node-2": []},
                             facts={"node-1": host_facts("node-1", T1, [gpu]), "node-2": host_facts("node-2", T1)})
    record(store_url, report, facts)
    assert report["store"]["status"] == "written", report["store"]
    stored = {(host, key): (retired, nvlink) for host, key, retired, nvlink in rows(
        store_url, GPU_COUNTERS.c.host, GPU_COUNTERS.c.gpu_key, GPU_COUNTERS.c.retired_pages,
        GPU_COUNTERS.c.nvlink_errors)}
    assert [value for (host, _key), value in stored.items() if host == "node-1"] == [(INT64_MAX, INT64_MAX)]
    assert len(stored) == 3  # node-2's two GPUs too


def test_a_non_finite_number_in_a_finding_is_stored_as_null_in_strict_json(store_url):
    odd = finding("hardware.power_excursion", "warning", "node-1", BUS[0], "power",
                  {"draw_w": float("nan"), "ratios": [1.5, float("inf")]})
    report, facts = make_run("r1", T1, {"node-1": [odd, xid("node-1")], "node-2": []})
    report["run"]["extra"] = {"seconds": float("-inf")}
    record(store_url, report, facts)
    assert report["store"]["status"] == "written", report["store"]
    documents = [data for (data,) in rows(store_url, FINDINGS.c.data)] + [
        text for (record_text,) in rows(store_url, RUNS.c.record) for text in (record_text,)] + [
        text for (summary,) in rows(store_url, RUNS.c.summary) for text in (summary,)] + [
        data for (data,) in rows(store_url, CAUSES.c.data)]
    parsed = [strict_loads(text) for text in documents]
    evidence = [document["evidence"] for document in parsed if document.get("rule") == "hardware.power_excursion"]
    assert evidence == [{"draw_w": None, "ratios": [1.5, None]}]
    assert [document["extra"] for document in parsed if "extra" in document] == [{"seconds": None}]
    assert all(strict_loads(json.dumps(facts_from_blob(blob))) for (blob,) in rows(store_url, FACTS.c.data))
