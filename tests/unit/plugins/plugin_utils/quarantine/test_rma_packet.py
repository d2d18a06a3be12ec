"""The return-to-vendor packet: a node's history from the store (SQLite and a real PostgreSQL server), its service
state, its newest incident bundle and fault log, the failing GPUs' identities (also of a GPU that fell off the bus
since its serial was last read), README.txt; check mode writes nothing; a store that knows nothing is an error."""

import hashlib
import io
import json
import os
import tarfile

from ansible_collections.gpufleet.core.plugins.plugin_utils.incident.evidence_bundle import write_bundle
from ansible_collections.gpufleet.core.plugins.plugin_utils.quarantine.rma_packet import (
    build_rma_packet, rma_packet_task)
from ansible_collections.gpufleet.core.plugins.plugin_utils.quarantine.service_state import record_service_events
from ansible_collections.gpufleet.core.plugins.plugin_utils.store.record import StoreSettings
from tests.support.postgres import postgres_cluster, store_url  # noqa: F401 pylint: disable=unused-import
from tests.support.report_inputs import finding
from tests.support.store_runs import BUS, gpu_facts, host_facts, make_run, record, xid

HOST = "node-3"


def lost_gpu_finding():
    return finding("hardware.gpu_lost", "critical", HOST, BUS[1], "GPU 1 has fallen off the bus (Xid 79)", {"xid": 79})


def store_with_history(url):
    """Two audits of node-3 (the second with GPU 1 lost, its serial gone) and its quarantine with two failed repairs."""
    record(url, *make_run("20261206T200000Z", "2026-12-06T20:00:00Z", {HOST: [], "node-4": []}))
    lost = gpu_facts("gone", BUS[1])
    lost.update(serial=None, uuid=None, name=None, lost=True)
    facts = {HOST: host_facts(HOST, "2026-12-06T23:00:00Z", [gpu_facts(HOST + "-S0", BUS[0]), lost])}
    record(url, *make_run("20261206T230000Z", "2026-12-06T23:00:00Z", {HOST: [lost_gpu_finding(), xid(HOST)]},
                          facts=facts))
    record_service_events(StoreSettings(url), [
        {"host": HOST, "event": "quarantined", "at": "2026-12-06T23:01:00Z", "scheduler": "slurm",
         "rule": "hardware.gpu_lost", "reason": "gpufleet: hardware.gpu_lost"},
        {"host": HOST, "event": "repair", "step": "reset", "result": "failed", "at": "2026-12-06T23:05:00Z"},
        {"host": HOST, "event": "repair", "step": "reboot", "result": "failed", "at": "2026-12-06T23:15:00Z"}],
        run_id="20261206T230100Z-quarantine")


def incident_run(report_root):
    """An incident run folder with node-3's evidence bundle and a fault log, as incident.yml leaves them."""
    run_dir = os.path.join(report_root, "20261206T231000Z-incident")
    os.makedirs(run_dir)
    evidence = {"evidence": [{"name": "dmesg.txt", "layer": "hardware", "command": "dmesg", "rc": 0,
                              "content": "NVRM: Xid (PCI:0000:43:00): 79, GPU has fallen off the bus.\n"}],
                "window": None, "host_clock": None}
    write_bundle(run_dir, HOST, HOST, evidence)
    with open(os.path.join(run_dir, "fault-log.md"), "w") as stream:
        stream.write("# Fault log: incident 20261206T231000Z-incident\n")
    return run_dir


def packet_files(path):
    with tarfile.open(path, "r:gz") as archive:
        return {member.name: archive.extractfile(member).read() for member in archive.getmembers()}


def test_the_packet_holds_the_history_the_gpus_the_incident_and_a_readme(store_url, tmp_path):
    store_with_history(store_url)
    report_root = str(tmp_path / "reports")
    incident_run(report_root)
    run_folder = os.path.join(report_root, "20261206T233000Z-quarantine")
    result = build_rma_packet(StoreSettings(store_url), HOST, run_folder, report_root, now="2026-12-06T23:30:00Z")
    assert result["path"] == os.path.join(run_folder, "rma", "node-3.tar.gz")
    files = packet_files(result["path"])
    names = sorted(name.split("/", 1)[1] for name in files)
    assert names == ["README.txt", "facts.json", "history.json", "incident/evidence-manifest.json",
                     "incident/evidence-node-3.tar.gz", "incident/fault-log.md", "manifest.json"]
    manifest = json.loads(files["rma-node-3/manifest.json"])
    assert manifest == result["manifest"]
    assert (manifest["format"], manifest["host"], manifest["latest_run"]) == ("gpufleet-rma", HOST, "20261206T230000Z")
    (lost,) = [gpu for gpu in manifest["failing_gpus"] if gpu["pci_bus_id"] == BUS[1]]
    # the serial and UUID from the first audit, when the GPU still answered; lost from the newest facts
    assert (lost["serial"], lost["uuid"], lost["lost"]) == ("node-3-S1", "GPU-node-3-S1", True)
    assert lost["rules"] == ["hardware.gpu_lost"]
    (xid_gpu,) = [gpu for gpu in manifest["failing_gpus"] if gpu["pci_bus_id"] == BUS[0]]
    assert xid_gpu["serial"] == "node-3-S0" and xid_gpu["rules"] == ["hardware.xid"]
    assert sorted(f["rule"] for f in manifest["findings"]) == ["hardware.gpu_lost", "hardware.xid"]
    assert manifest["service_state"]["failed_repairs"] == 2
    assert manifest["incident"] == {"run": "20261206T231000Z-incident", "bundle": HOST}
    for entry in manifest["files"][:-1]:
        assert hashlib.sha256(files["rma-node-3/" + entry["file"]]).hexdigest() == entry["sha256"]
    history = json.loads(files["rma-node-3/history.json"])
    assert [run["run_id"] for run in history["runs"]] == ["20261206T230000Z", "20261206T200000Z"]
    assert [event["event"] for event in history["service_events"]] == ["quarantined", "repair", "repair"]
    readme = files["rma-node-3/README.txt"].decode()
    assert "serial node-3-S1, UUID GPU-node-3-S1, PCI %s (lost: fell off the bus): hardware.gpu_lost" % BUS[1] in readme
    assert "reset failed at 2026-12-06T23:05:00Z, reboot failed at 2026-12-06T23:15:00Z" in readme
    assert files["rma-node-3/incident/fault-log.md"].decode() == "# Fault log: incident 20261206T231000Z-incident\n"
    with tarfile.open(fileobj=io.BytesIO(files["rma-node-3/incident/evidence-node-3.tar.gz"]), mode="r:gz") as bundle:
        assert "node-3/dmesg.txt" in bundle.getnames()


def test_without_an_incident_the_packet_says_what_is_missing(tmp_path):
    url = "sqlite:///%s" % (tmp_path / "gpufleet.sqlite")
    store_with_history(url)
    result = build_rma_packet(StoreSettings(url), HOST, str(tmp_path / "run"), str(tmp_path / "reports"))
    assert result["manifest"]["incident"] is None
    assert result["manifest"]["missing"] == [
        "evidence bundle and fault log: no incident run under the report root collected one of node-3 "
        "(run incident.yml --limit node-3 first)"]
    assert "Not included:" in packet_files(result["path"])["rma-node-3/README.txt"].decode()


def test_check_mode_writes_nothing(tmp_path):
    url = "sqlite:///%s" % (tmp_path / "gpufleet.sqlite")
    store_with_history(url)
    result = build_rma_packet(StoreSettings(url), HOST, str(tmp_path / "run"), str(tmp_path), check_mode=True)
    assert result["manifest"]["failing_gpus"] and result["msg"].startswith("would write ")
    assert not (tmp_path / "run").exists()


def test_a_node_the_store_does_not_know_or_a_store_that_is_off_fails_the_task(tmp_path):
    args = {"host": "node-9", "run_folder": str(tmp_path / "run"), "report_root": str(tmp_path), "store": True,
            "store_url": None}
    unknown = rma_packet_task(args)
    assert unknown["failed"] is True
    assert unknown["msg"] == ("rma_packet: the run store knows nothing of node-9 (no audit, no service event); "
                              "nothing to send")
    off = rma_packet_task(dict(args, store=False))
    assert off["failed"] is True and "cannot read the history of node-9 from the run store" in off["msg"]
    assert "the run store is off" in off["msg"] and not (tmp_path / "run").exists()
