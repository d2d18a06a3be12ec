"""gpufleet.prom's GPU series carry dcgm-exporter's labels for the same GPU (issue 30, section 1): a PromQL join
of a gpufleet series with dcgm-exporter's metrics of the demo host gpu-h100-thermal-05 (our own sample, in
dcgm-exporter's format: tests/fixtures/samples/dcgm-exporter_gpu-h100-thermal-05.metrics) returns the right GPUs,
evaluated by Debian's promtool."""

import os

import pytest
from prometheus_client.parser import text_string_to_metric_families

from ansible_collections.gpufleet.core.plugins.module_utils.facts_model import dcgm_pci_bus_id
from ansible_collections.gpufleet.core.plugins.plugin_utils.reports.model import build_report
from ansible_collections.gpufleet.core.plugins.plugin_utils.reports.prometheus import gpu_inventory, render_prometheus
from tests.support.demo_fleet import demo_audit
from tests.support.promtool import input_series, run_rule_tests
from tests.support.report_inputs import RUN
from tests.support.schema_check import ROOT

HOST = "gpu-h100-thermal-05"
DCGM_SAMPLE = os.path.join(ROOT, "tests", "fixtures", "samples", "dcgm-exporter_gpu-h100-thermal-05.metrics")
MODEL = "NVIDIA H100 80GB HBM3"
# the GPUs of the demo host whose temperature is a finding (hardware.temperature), by index: bus id, UUID, DCGM's
# temperature in the sample
HOT = {"2": ("00000000:3A:00.0", "GPU-b5e21ce2-6770-5fad-b37e-e03625b354e3", 87),
       "3": ("00000000:5D:00.0", "GPU-b4104b1c-9a3f-5100-a62b-d2b276e03a36", 88),
       "6": ("00000000:BA:00.0", "GPU-5c94d630-3b38-51e5-add3-32039c952b94", 86)}


@pytest.fixture(scope="module")
def demo_prom():
    facts, findings, _causes = demo_audit()
    report = build_report(RUN, {HOST: {"status": "ok", "facts_file": None, "message": None}},
                          {HOST: findings[HOST]}, [])
    return render_prometheus(report, gpu_inventory({HOST: facts[HOST]}))


def dcgm_text():
    with open(DCGM_SAMPLE, encoding="utf-8") as handle:
        return handle.read()


@pytest.mark.parametrize("value, expected", [
    ("0000:3b:00.0", "00000000:3B:00.0"), ("00000000:3B:00.0", "00000000:3B:00.0"), ("3b:00", "00000000:3B:00.0"),
    ("0001:c1:00.1", "00000001:C1:00.1"), ("not a bus id", None), (None, None)])
def test_bus_ids_in_dcgm_exporters_form(value, expected):
    assert dcgm_pci_bus_id(value) == expected


def test_finding_series_carry_dcgm_exporters_labels(demo_prom):
    finding = [sample for family in text_string_to_metric_families(demo_prom) if family.name == "gpufleet_finding"
               for sample in family.samples if sample.labels["rule"] == "hardware.temperature"]
    assert sorted((s.labels["gpu"], s.labels["pci_bus_id"], s.labels["UUID"]) for s in finding) == [
        (index, bus_id, uuid) for index, (bus_id, uuid, _temp) in sorted(HOT.items())]
    assert {(s.labels["Hostname"], s.labels["modelName"], s.labels["host"]) for s in finding} == {(HOST, MODEL, HOST)}


def test_gpu_info_lists_every_gpu_with_dcgm_exporters_labels(demo_prom):
    info = [s.labels for family in text_string_to_metric_families(demo_prom) if family.name == "gpufleet_gpu_info"
            for s in family.samples]
    dcgm = [{key: s.labels[key] for key in ("gpu", "UUID", "pci_bus_id", "Hostname", "modelName")}
            for family in text_string_to_metric_families(dcgm_text()) if family.name == "DCGM_FI_DEV_GPU_TEMP"
            for s in family.samples]
    assert {labels.pop("host") for labels in info} == {HOST}
    assert sorted(sorted(labels.items()) for labels in info) == sorted(sorted(labels.items()) for labels in dcgm)


def dcgm_labels(index):
    bus_id, uuid, _temp = HOT[index]
    return ('{gpu="%s",UUID="%s",pci_bus_id="%s",device="nvidia%s",modelName="%s",Hostname="%s",'
            'DCGM_FI_DRIVER_VERSION="550.90.07"' % (index, uuid, bus_id, index, MODEL, HOST))


def test_promql_joins_a_finding_with_dcgm_metrics_of_the_same_gpu(demo_prom, tmp_path):
    series = input_series(demo_prom, dcgm_text())
    tests = [{"interval": "1m", "input_series": series, "promql_expr_test": [
        {   # DCGM's temperature of each GPU with a temperature finding, the finding's rule and severity added
            "expr": 'DCGM_FI_DEV_GPU_TEMP * on(UUID) group_left(rule, severity) '
                    'gpufleet_finding{rule="hardware.temperature"}',
            "eval_time": "5m",
            "exp_samples": [{"labels": dcgm_labels(index) + ',rule="hardware.temperature",severity="warning"}',
                             "value": temp} for index, (_bus, _uuid, temp) in sorted(HOT.items())]},
        {   # the same GPUs by host name and index, and by host name and bus id
            "expr": 'DCGM_FI_DEV_GPU_TEMP and on(Hostname, gpu) gpufleet_finding{rule="hardware.temperature"}',
            "eval_time": "5m",
            "exp_samples": [{"labels": "DCGM_FI_DEV_GPU_TEMP" + dcgm_labels(index) + "}", "value": temp}
                            for index, (_bus, _uuid, temp) in sorted(HOT.items())]},
        {
            "expr": 'count(DCGM_FI_DEV_POWER_USAGE and on(Hostname, pci_bus_id) '
                    'gpufleet_finding{rule="hardware.temperature"})',
            "eval_time": "5m",
            "exp_samples": [{"labels": "{}", "value": 3}]},
    ]}]
    result = run_rule_tests(tmp_path, tests)
    assert result.returncode == 0, result.stdout + result.stderr


def test_facts_without_gpus_or_a_hostname_label_by_bus_id_and_host_name():
    inventory = gpu_inventory({"a": {"gpus": [None, {"index": 1, "pci_bus_id": "not a bus id"}]}, "b": None,
                               "c": {"host": "not an object", "gpus": "not a list"}})
    assert inventory == {"a": (None, {}), "c": (None, {})}
    findings = {"a": [{"rule": "hardware.xid", "layer": "hardware", "severity": "critical", "host": "a",
                       "gpu": "0000:3b:00.0", "summary": "Xid 79", "evidence": {}, "action": "Drain."}]}
    report = build_report(RUN, {"a": {"status": "ok", "facts_file": None, "message": None}}, findings, [])
    series = [s.labels for family in text_string_to_metric_families(render_prometheus(report, inventory))
              if family.name == "gpufleet_finding" for s in family.samples]
    assert series == [{"host": "a", "rule": "hardware.xid", "layer": "hardware", "severity": "critical", "gpu": "",
                       "UUID": "", "pci_bus_id": "00000000:3B:00.0", "Hostname": "a", "modelName": ""}]
