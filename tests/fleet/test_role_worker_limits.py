"""worker_limits on the simulated fleet: the inference host of the scenario runs 12 workers on one GPU where
its policy allows 4 (gpus [0] x workers_per_gpu 4, through the WORKERS variable).

The stages run once, in order, in the module fixture (audit, check mode, first run, second run, audit);
each test looks at one of them. The host is put back as the scenario left it at the end.
"""

import json
import types

import pytest

from ansible_collections.gpufleet.core.plugins.plugin_utils.reports.format import expanded

from conftest import scenario_host, unit_properties

UNIT = "inference.service"
DROPIN = "/etc/systemd/system/inference.service.d/50-gpufleet-workers.conf"
# 6000 MiB per worker (what the scenario's unit sets too) keeps all 12 workers on the 80 GB GPU running,
# oversubscribed, as on a real host before the OOM, whatever the unit's own default becomes.
DRIFT = "/etc/systemd/system/inference.service.d/10-fleet-test-oversubscribed.conf"
DRIFT_TEXT = "[Service]\nEnvironment=MEM_PER_WORKER_MIB=6000\n"
EXPECTED_DROPIN = (
    "# Managed by gpufleet (role worker_limits): do not edit, the next run overwrites it.\n"
    "# Source: the effective gpufleet policy, workload.services inference.service "
    "(workers_per_gpu, workers_env, gpus).\n"
    "# Change the policy (docs/policy.md) and run remediate.yml instead.\n"
    "# Workers: 4 = 1 GPU x 4 workers_per_gpu.\n"
    "[Service]\n"
    'Environment="CUDA_VISIBLE_DEVICES=0"\n'
    'Environment="WORKERS=4"\n')
PLAYBOOK = """\
- name: Apply gpufleet.core.worker_limits
  hosts: all
  gather_facts: false
  roles:
    - gpufleet.core.worker_limits
"""


def wait_for_workers(fleet, host, unit, count):
    """Waits until the unit runs and count workers of it are registered with the simulated GPUs."""
    command = ("for i in $(seq 60); do systemctl is-active --quiet %s && "
               "[ $(pgrep -c -P $(systemctl show -p MainPID --value %s)) -eq %d ] && exit 0; sleep 0.5; done; "
               "systemctl status --no-pager %s; exit 1" % (unit, unit, count, unit))
    fleet.ssh(host, command, check=True)


def restore_scenario(fleet, host):
    """No gpufleet drop-in and no test drift: the scenario's own inference.service, restarted."""
    fleet.ssh(host, "rm -f /etc/systemd/system/%s.d/50-gpufleet-*.conf %s; systemctl daemon-reload; "
                    "systemctl reset-failed %s; systemctl restart %s" % (UNIT, DRIFT, UNIT, UNIT), check=True)


def drift(fleet, host):
    restore_scenario(fleet, host)
    fleet.ssh(host, "mkdir -p /etc/systemd/system/%s.d && printf '%s' > %s && systemctl daemon-reload && "
                    "systemctl restart %s" % (UNIT, DRIFT_TEXT.replace("\n", "\\n"), DRIFT, UNIT), check=True)
    wait_for_workers(fleet, host, UNIT, 12)


def audit(fleet, host, report_dir):
    """Runs audit.yml on the host; returns its report.json and the host's facts."""
    run = fleet.playbook("audit.yml", limit=host, extra_vars={"gpufleet_report_dir": str(report_dir)})
    assert run.rc in (0, 2), run.output()
    latest = report_dir / "latest-partial"  # --limit: a partial run
    report = expanded(json.loads((latest / "report.json").read_text()))
    facts = json.loads((latest / "facts" / ("%s.json" % host)).read_text())
    return report, facts


def rules(report, host):
    return sorted(finding["rule"] for finding in report["hosts"][host]["findings"])


def worker_processes(facts, gpu_index, name="inference-worker"):
    gpu = [gpu for gpu in facts["gpus"] if gpu["index"] == gpu_index][0]
    return [process for process in gpu["processes"] if process["name"] == name]


def diff_after(result):
    return "".join(diff.get("after", "") for item in result.get("results", [])
                   for diff in (item.get("diff") or []) if isinstance(diff, dict))


@pytest.fixture(scope="module")
def stages(fleet, tmp_path_factory):
    host = scenario_host(fleet, UNIT)
    playbook = tmp_path_factory.mktemp("worker_limits") / "apply.yml"
    playbook.write_text(PLAYBOOK)
    found = types.SimpleNamespace(host=host)
    drift(fleet, host)
    try:
        found.before, found.facts_before = audit(fleet, host, tmp_path_factory.mktemp("audit_before"))
        found.pid_before = unit_properties(fleet, host, UNIT, "MainPID")["MainPID"]
        found.check = fleet.playbook(str(playbook), limit=host, check=True, diff=True)
        found.after_check = fleet.ssh(host, "test -e %s && echo present || echo absent" % DROPIN).stdout.strip()
        found.pid_after_check = unit_properties(fleet, host, UNIT, "MainPID")["MainPID"]
        found.first = fleet.playbook(str(playbook), limit=host, diff=True)
        wait_for_workers(fleet, host, UNIT, 4)
        found.dropin = fleet.ssh(host, "stat -c %%a:%%U %s && cat %s" % (DROPIN, DROPIN), check=True).stdout
        found.environment = unit_properties(fleet, host, UNIT, "Environment")["Environment"]
        found.pid_after_first = unit_properties(fleet, host, UNIT, "MainPID")["MainPID"]
        found.second = fleet.playbook(str(playbook), limit=host)
        found.after, found.facts_after = audit(fleet, host, tmp_path_factory.mktemp("audit_after"))
        yield found
    finally:
        restore_scenario(fleet, host)


def test_the_audit_first_reports_the_oversubscribed_gpu(stages):
    assert "workload.gpu_oversubscribed" in rules(stages.before, stages.host)
    finding = [f for f in stages.before["hosts"][stages.host]["findings"] if f["rule"] == "workload.gpu_oversubscribed"][0]
    assert finding["fix"] == "worker_limits"
    assert finding["evidence"]["processes"] == 12 and finding["evidence"]["limit"] == 4
    assert len(worker_processes(stages.facts_before, 0)) == 12


def test_check_mode_reports_the_dropin_with_its_diff_and_leaves_the_host_as_it_was(stages):
    assert stages.check.rc == 0, stages.check.output()
    assert stages.check.stats[stages.host]["changed"] > 0
    written = stages.check.result(stages.host, "Write the worker drop-ins")
    assert written["changed"] is True
    assert 'Environment="WORKERS=4"' in diff_after(written)
    assert stages.after_check == "absent"
    assert stages.pid_after_check == stages.pid_before


def test_first_run_writes_the_dropin_and_restarts_the_service_with_four_workers(stages):
    assert stages.first.rc == 0, stages.first.output()
    assert stages.dropin == "644:root\n" + EXPECTED_DROPIN
    assert "WORKERS=4" in stages.environment.split() and "CUDA_VISIBLE_DEVICES=0" in stages.environment.split()
    restarted = stages.first.result(stages.host, "Restart the GPU services whose worker drop-in changed")
    assert [item["item"] for item in restarted["results"] if item["changed"]] == [UNIT]
    assert stages.pid_after_first != stages.pid_before


def test_second_run_changes_nothing(stages):
    assert stages.second.rc == 0, stages.second.output()
    assert stages.second.stats[stages.host]["changed"] == 0


def test_the_audit_after_remediation_no_longer_reports_the_oversubscription(stages):
    assert "workload.gpu_oversubscribed" not in rules(stages.after, stages.host)
    workers = worker_processes(stages.facts_after, 0)
    assert len(workers) == 4 and {process["used_memory_mib"] for process in workers} == {6000}
