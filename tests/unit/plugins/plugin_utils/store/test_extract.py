"""The run store's extract of one host (store/extract.py): made by the gpu_facts action in the worker from the facts
file's text, read back by the store in place of compressing the facts and reading the counters again."""

import base64
import zlib

import pytest
from sqlalchemy import text

from ansible_collections.gpufleet.core.plugins.plugin_utils.run_folder import facts_file_text
from ansible_collections.gpufleet.core.plugins.plugin_utils.store.counters import COUNTER_COLUMNS, host_counters
from ansible_collections.gpufleet.core.plugins.plugin_utils.store.engine import make_engine
from ansible_collections.gpufleet.core.plugins.plugin_utils.store.extract import (
    extract_blob, extract_counters, fleet_counters, host_extract)
from ansible_collections.gpufleet.core.plugins.plugin_utils.store.write import facts_blob, facts_from_blob
from tests.support.postgres import postgres_cluster, store_url  # noqa: F401 pylint: disable=unused-import
from ansible_collections.gpufleet.core.plugins.plugin_utils.store.record import StoreSettings
from tests.support.store_runs import BUS, gpu_facts, host_facts, make_run, record, record_run


def facts_of(host="node-1", ecc=3, nvlink=2):
    gpus = [gpu_facts(host + "-S0", BUS[0], ecc=ecc, nvlink=nvlink), gpu_facts(host + "-S1", BUS[1], ecc=ecc, nvlink=nvlink)]
    facts = host_facts(host, "2026-12-01T00:00:00Z", gpus)
    facts["gpus"].append({"index": 2, "lost": True, "pci_bus_id": "00000000:99:00.0", "serial": "gone"})
    facts["notes"] = "é ✓ \udcff"  # a lone surrogate, as a host's JSON can decode
    return facts


def test_the_extract_holds_the_facts_files_bytes_and_the_counters_the_store_would_read():
    facts = facts_of()
    file_text = facts_file_text(facts)
    extract = host_extract(file_text, facts)
    assert zlib.decompress(extract_blob(extract)) == file_text.encode("utf-8", "backslashreplace")
    assert extract_counters(extract) == {key: (None, counters) for key, (_gpu, counters) in host_counters(facts).items()}
    assert sorted(extract["counters"]) == ["serial:node-1-S0", "serial:node-1-S1"]  # the lost GPU has none
    assert extract["counters"]["serial:node-1-S0"] == {
        "ecc_corrected": 3, "retired_pages": 0, "remapped_rows": 0, "pcie_replays": 0, "nvlink_errors": 2}
    assert tuple(extract["counters"]["serial:node-1-S0"]) == COUNTER_COLUMNS
    # the blob the store keeps is the one it would have made from the file
    assert facts_blob(facts, extract=extract) == extract_blob(extract)
    assert facts_from_blob(extract_blob(extract))["gpus"] == facts["gpus"]


GOOD = host_extract(facts_file_text(facts_of()), facts_of())


@pytest.mark.parametrize("extract", [
    None, "text", [], {}, {"facts_zlib": 7}, {"facts_zlib": "not base64!"}, {"facts_zlib": "é"},
])
def test_an_extract_without_a_readable_blob_gives_none_and_the_store_compresses_the_facts(extract):
    assert extract_blob(extract) is None
    facts = facts_of()
    assert zlib.decompress(facts_blob(facts, extract=extract)).decode("utf-8", "backslashreplace").startswith("{")


@pytest.mark.parametrize("counters", [
    None, [], {"serial:S0": [1, 2, 3, 4, 5]}, {7: dict.fromkeys(COUNTER_COLUMNS, 0)},
    {"serial:S0": dict.fromkeys(COUNTER_COLUMNS[:-1], 0)},
    {"serial:S0": dict(dict.fromkeys(COUNTER_COLUMNS[:-1], 0), other=1)},
    {"serial:S0": dict(dict.fromkeys(COUNTER_COLUMNS, 0), ecc_corrected="12")},
    {"serial:S0": dict(dict.fromkeys(COUNTER_COLUMNS, 0), ecc_corrected=True)},
])
def test_counters_of_another_shape_are_read_from_the_facts_instead(counters):
    extract = dict(GOOD, counters=counters)
    assert extract_counters(extract) is None
    facts = facts_of(ecc=9)
    assert fleet_counters({"node-1": facts}, {"node-1": extract}) == {"node-1": host_counters(facts)}


def test_the_store_writes_the_workers_blob_and_counters(store_url):
    facts = facts_of(ecc=11)
    report, facts_by_host = make_run("r1", "2026-12-01T00:00:00Z", {"node-1": []}, facts={"node-1": facts})
    extract = host_extract(facts_file_text(facts), facts)
    extract["counters"]["serial:node-1-S0"]["ecc_corrected"] = 12  # to tell which counters were stored
    written = record_run(StoreSettings(store_url, "test"), report, facts_by_host, extracts={"node-1": extract})
    assert written["store"]["status"] == "written"
    engine = make_engine(store_url)
    with engine.connect() as connection:
        (blob,) = connection.execute(text("SELECT data FROM facts")).one()
        counters = connection.execute(text("SELECT gpu_key, ecc_corrected FROM gpu_counters ORDER BY gpu_key")).all()
    engine.dispose()
    assert bytes(blob) == base64.b64decode(extract["facts_zlib"])
    assert [tuple(row) for row in counters] == [("serial:node-1-S0", 12), ("serial:node-1-S1", 11)]
    # without an extract the same facts are stored compressed here, and both read back as the facts
    report, facts_by_host = make_run("r2", "2026-12-02T00:00:00Z", {"node-1": []}, facts={"node-1": facts})
    assert record(store_url, report, facts_by_host)["store"]["status"] == "written"
    engine = make_engine(store_url)
    with engine.connect() as connection:
        blobs = [bytes(row[0]) for row in connection.execute(text("SELECT data FROM facts ORDER BY run_pk"))]
    engine.dispose()
    assert [facts_from_blob(each) for each in blobs] == [facts, facts]
