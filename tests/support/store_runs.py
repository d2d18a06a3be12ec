"""Runs for the store tests: small reports built from findings, and their facts, with GPU serials."""

import copy

from ansible_collections.gpufleet.core.plugins.plugin_utils.audit.record_step import ReportInputs, build_and_record
from ansible_collections.gpufleet.core.plugins.plugin_utils.reports.model import build_report
from ansible_collections.gpufleet.core.plugins.plugin_utils.store.record import StoreSettings
from tests.support.report_inputs import finding

BUS = ("00000000:1B:00.0", "00000000:43:00.0")


def gpu_facts(serial, bus, **counters):
    gpu = {"index": BUS.index(bus) if bus in BUS else 0, "name": "NVIDIA H100 80GB HBM3", "serial": serial,
           "uuid": "GPU-" + serial, "pci_bus_id": bus,
           "ecc": {"aggregate_corrected": counters.get("ecc", 0)},
           "retired_pages": {"single_bit": counters.get("retired", 0), "double_bit": 0},
           "remapped_rows": {"correctable": counters.get("remapped", 0), "uncorrectable": 0},
           "pcie": {"replay_counter": counters.get("replays", 0)},
           "nvlinks": [{"link": 0, "errors": {"replay": counters.get("nvlink", 0), "recovery": 0}}]}
    return gpu


def host_facts(host, collected_at, gpus=None):
    gpus = gpus if gpus is not None else [gpu_facts(host + "-S0", BUS[0]), gpu_facts(host + "-S1", BUS[1])]
    return {"schema_version": "1.0", "collected_at": collected_at, "nvidia_present": True,
            "driver": {"version": "550.90.07"}, "gpus": gpus}


def make_run(run_id, started_at, findings_by_host, status="complete", pattern="all", facts=None, unreachable=()):
    """(report, facts_by_host) of one run over the hosts named in findings_by_host (and unreachable ones)."""
    hosts = {host: {"status": "ok", "facts_file": "facts/%s.json" % host, "message": None} for host in findings_by_host}
    for host in unreachable:
        hosts[host] = {"status": "unreachable", "facts_file": None, "message": "no route"}
    run = {"id": run_id, "started_at": started_at, "finished_at": started_at, "tool_version": "test",
           "fail_severity": "critical", "policy_errors": [], "status": status, "status_reason": "test",
           "scope": {"pattern": pattern, "limit": None}}
    report = build_report(run, hosts, copy.deepcopy(findings_by_host), [])
    if facts is None:
        facts = {host: host_facts(host, started_at) for host in findings_by_host}
    for host in unreachable:
        facts[host] = None
    return report, facts


def inputs_of(report):
    """The ReportInputs a built report was made from."""
    hosts = {host: {key: entry[key] for key in ("status", "facts_file", "message")}
             for host, entry in report["hosts"].items()}
    findings = {host: list(entry["findings"]) for host, entry in report["hosts"].items()}
    return ReportInputs(report["run"], hosts, findings, report["causes"])


def record_run(settings, report, facts, host_policies=None, **options):
    """The run of a report made by make_run recorded as the audit records its own (audit/record_step.py, with
    the history step), the report replaced in place by the recorded one, which is returned."""
    recorded = build_and_record(settings, inputs_of(report), facts, host_policies, **options)
    report.clear()
    report.update(recorded)
    return report


def record(url, report, facts, **settings):
    return record_run(StoreSettings(url, "test", **settings), report, facts)


def xid(host, gpu=BUS[0], severity="critical"):
    return finding("hardware.xid", severity, host, gpu, "Xid 79 on %s" % host, {"xid": 79, "count": 1})


def pcie(host, gpu=BUS[1]):
    return finding("hardware.pcie_link_degraded", "info", host, gpu, "PCIe x8", {"pcie_width_current": 8})


def host_wide(host, rule="driver.persistence_mode_off", severity="warning"):
    return finding(rule, severity, host, None, "%s on %s" % (rule, host), {})
