"""The service state under the real audit playbook: after quarantine recorded service events in the store under the
report root, the demo fleet's audit shows the node's state in report.json, report.html and gpufleet.prom."""

import json
import os
import subprocess
import sys

from prometheus_client.parser import text_string_to_metric_families

from ansible_collections.gpufleet.core.plugins.plugin_utils.quarantine.service_state import record_service_events
from ansible_collections.gpufleet.core.plugins.plugin_utils.reports.format import expanded
from ansible_collections.gpufleet.core.plugins.plugin_utils.store.record import StoreSettings

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PLAYBOOK_BIN = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")
HOST = "gpu-h100-gsp-15"


def test_the_audit_reports_the_service_state_quarantine_recorded(tmp_path):
    record_service_events(StoreSettings("sqlite:///%s" % (tmp_path / "gpufleet.sqlite")), [
        {"host": HOST, "event": "quarantined", "at": "2026-12-06T23:00:00Z", "scheduler": "slurm",
         "rule": "hardware.gpu_lost", "reason": "gpufleet: hardware.gpu_lost (run q1)"},
        {"host": HOST, "event": "repair", "step": "reset", "result": "failed", "at": "2026-12-06T23:05:00Z"}],
        run_id="q1")
    env = {name: value for name, value in os.environ.items() if name != "GPUFLEET_STORE_URL"}
    env.update(ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_NOCOLOR="1")
    completed = subprocess.run([PLAYBOOK_BIN, "audit.yml", "-e", "gpufleet_report_dir=%s" % tmp_path], cwd=ROOT, env=env,
                               capture_output=True, text=True, timeout=600, check=False)
    latest = tmp_path / "latest"
    assert (latest / "report.json").exists(), completed.stdout[-3000:] + completed.stderr[-3000:]
    hosts = expanded(json.loads((latest / "report.json").read_text()))["hosts"]
    service = hosts[HOST]["service"]
    assert (service["state"], service["since"], service["rule"], service["failed_repairs"]) == (
        "quarantined", "2026-12-06T23:00:00Z", "hardware.gpu_lost", 1)
    assert [name for name, entry in hosts.items() if "service" in entry] == [HOST]
    html = (latest / "report.html").read_text()
    assert '<section id="service">' in html and "gpufleet: hardware.gpu_lost (run q1)" in html
    samples = {(sample.name, tuple(sorted(sample.labels.items()))): sample.value
               for family in text_string_to_metric_families((latest / "gpufleet.prom").read_text())
               for sample in family.samples}
    assert samples[("gpufleet_node_in_service", (("host", HOST),))] == 0
    assert samples[("gpufleet_node_repairs_total", (("host", HOST), ("result", "failed"), ("step", "reset")))] == 1
