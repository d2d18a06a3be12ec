"""restart_policy on the simulated fleet: the scenario's inference.service has Restart=no, and its policy
wants restart on-failure after 5 s (restart_sec 5) with the default start limits.

The stages run once, in order, in the module fixture; each test looks at one of them. The service runs
during the main stages (12 workers of 6000 MiB fit on its GPU), so that the tests see that a running
service is not restarted for its restart policy. The host is put back as the scenario left it at the end.
"""

import json
import types

import pytest

from ansible_collections.gpufleet.core.plugins.plugin_utils.reports.format import expanded

from conftest import scenario_host, unit_properties

UNIT = "inference.service"
DROPIN = "/etc/systemd/system/inference.service.d/50-gpufleet-restart.conf"
TIMER = "gpufleet-recycle-inference.timer"
RECYCLE_FILES = "/etc/systemd/system/gpufleet-recycle-inference.timer /etc/systemd/system/gpufleet-recycle-inference.service"
DRIFT = "/etc/systemd/system/inference.service.d/10-fleet-test-runs.conf"
DRIFT_TEXT = "[Service]\nEnvironment=MEM_PER_WORKER_MIB=6000\n"
EXPECTED_DROPIN = (
    "# Managed by gpufleet (role restart_policy): do not edit, the next run overwrites it.\n"
    "# Source: the effective gpufleet policy, workload.services inference.service "
    "(restart, restart_sec, start_limit_interval_sec, start_limit_burst).\n"
    "# Change the policy (docs/policy.md) and run remediate.yml instead.\n"
    "[Unit]\n"
    "StartLimitIntervalSec=600\n"
    "StartLimitBurst=5\n"
    "\n"
    "[Service]\n"
    "Restart=on-failure\n"
    "RestartSec=5\n")
RECYCLE_FRAGMENT = {"gpufleet_policy_zz_fleet_test": {
    "workload": {"services": {UNIT: {"recycle_calendar": "*-*-* 04:00:00"}}}}}
PLAYBOOK = """\
- name: Apply gpufleet.core.restart_policy
  hosts: all
  gather_facts: false
  roles:
    - gpufleet.core.restart_policy
"""


def wait_until_active(fleet, host, unit, other_than_pid=None):
    """Waits until the unit is active with a main process (other than the one given); returns its pid."""
    command = ("for i in $(seq 60); do pid=$(systemctl show -p MainPID --value %s); "
               "systemctl is-active --quiet %s && [ \"$pid\" != 0 ] && [ \"$pid\" != '%s' ] && echo $pid && exit 0; "
               "sleep 0.5; done; systemctl status --no-pager %s; exit 1" % (unit, unit, other_than_pid, unit))
    return fleet.ssh(host, command, check=True).stdout.strip()


def kill_main_process(fleet, host, unit):
    fleet.ssh(host, "kill -9 $(systemctl show -p MainPID --value %s)" % unit, check=True)


def restore_scenario(fleet, host):
    """No gpufleet file and no test drift: the scenario's own inference.service, restarted."""
    fleet.ssh(host, "systemctl disable --now %s 2>/dev/null; rm -f /etc/systemd/system/%s.d/50-gpufleet-*.conf "
                    "%s %s; systemctl daemon-reload; systemctl reset-failed %s; systemctl restart %s"
              % (TIMER, UNIT, DRIFT, RECYCLE_FILES, UNIT, UNIT), check=True)


def drift(fleet, host):
    restore_scenario(fleet, host)
    fleet.ssh(host, "mkdir -p /etc/systemd/system/%s.d && printf '%s' > %s && systemctl daemon-reload && "
                    "systemctl restart %s" % (UNIT, DRIFT_TEXT.replace("\n", "\\n"), DRIFT, UNIT), check=True)
    return wait_until_active(fleet, host, UNIT)


def audit(fleet, host, report_dir):
    """Runs audit.yml on the host; returns its report.json."""
    run = fleet.playbook("audit.yml", limit=host, extra_vars={"gpufleet_report_dir": str(report_dir)})
    assert run.rc in (0, 2), run.output()
    return expanded(json.loads((report_dir / "latest-partial" / "report.json").read_text()))  # --limit: partial run


def rules(report, host):
    return sorted(finding["rule"] for finding in report["hosts"][host]["findings"])


def diff_after(result):
    return "".join(diff.get("after", "") for item in result.get("results", [])
                   for diff in (item.get("diff") or []) if isinstance(diff, dict))


def changed_items(result):
    return [item["item"] for item in result.get("results", []) if item.get("changed")]


@pytest.fixture(scope="module")
def stages(fleet, tmp_path_factory):
    host = scenario_host(fleet, UNIT)
    playbook = tmp_path_factory.mktemp("restart_policy") / "apply.yml"
    playbook.write_text(PLAYBOOK)

    def apply(**options):
        return fleet.playbook(str(playbook), limit=host, **options)

    found = types.SimpleNamespace(host=host)
    found.pid_before = drift(fleet, host)
    try:
        found.before = audit(fleet, host, tmp_path_factory.mktemp("audit_before"))
        found.check = apply(check=True, diff=True)
        found.after_check = fleet.ssh(host, "test -e %s && echo present || echo absent" % DROPIN).stdout.strip()
        found.restart_after_check = unit_properties(fleet, host, UNIT, "Restart")["Restart"]
        found.first = apply(diff=True)
        found.dropin = fleet.ssh(host, "stat -c %%a:%%U %s && cat %s" % (DROPIN, DROPIN), check=True).stdout
        found.live = unit_properties(fleet, host, UNIT, "Restart", "RestartUSec", "StartLimitBurst",
                                     "StartLimitIntervalUSec", "MainPID", "NRestarts")
        found.second = apply()
        kill_main_process(fleet, host, UNIT)
        found.pid_after_crash = wait_until_active(fleet, host, UNIT, other_than_pid=found.live["MainPID"])
        found.restarts_after_crash = unit_properties(fleet, host, UNIT, "NRestarts")["NRestarts"]
        found.after = audit(fleet, host, tmp_path_factory.mktemp("audit_after"))

        # A crash while the policy is missing leaves the service failed; the role starts it again.
        fleet.ssh(host, "rm %s && systemctl daemon-reload" % DROPIN, check=True)
        kill_main_process(fleet, host, UNIT)
        found.state_crashed = fleet.ssh(host, "sleep 1; systemctl is-active %s" % UNIT).stdout.strip()
        found.recover = apply()
        found.pid_recovered = wait_until_active(fleet, host, UNIT)

        found.recycle = apply(extra_vars=RECYCLE_FRAGMENT, diff=True)
        found.timer_state = fleet.ssh(host, "systemctl is-enabled %s; systemctl is-active %s" % (TIMER, TIMER)).stdout
        found.timer_calendar = unit_properties(fleet, host, TIMER, "TimersCalendar")["TimersCalendar"]
        fleet.ssh(host, "systemctl start gpufleet-recycle-inference.service", check=True)
        found.pid_recycled = wait_until_active(fleet, host, UNIT, other_than_pid=found.pid_recovered)
        found.recycle_again = apply(extra_vars=RECYCLE_FRAGMENT)
        found.unrecycle = apply()
        found.recycle_files_left = fleet.ssh(host, "ls %s 2>/dev/null | wc -l" % RECYCLE_FILES).stdout.strip()
        found.timer_loaded = unit_properties(fleet, host, TIMER, "LoadState")["LoadState"]
        yield found
    finally:
        restore_scenario(fleet, host)


def test_the_audit_first_reports_the_missing_restart_policy(stages):
    findings = [f for f in stages.before["hosts"][stages.host]["findings"] if f["rule"] == "workload.restart_policy"]
    assert len(findings) == 1 and findings[0]["fix"] == "restart_policy"
    assert findings[0]["evidence"]["service"] == UNIT and findings[0]["evidence"]["restart"] == "no"


def test_check_mode_reports_the_dropin_with_its_diff_and_leaves_the_host_as_it_was(stages):
    assert stages.check.rc == 0, stages.check.output()
    written = stages.check.result(stages.host, "Write the restart drop-ins and recycle units")
    assert changed_items(written) and "Restart=on-failure\nRestartSec=5\n" in diff_after(written)
    assert stages.after_check == "absent" and stages.restart_after_check == "no"


def test_first_run_writes_the_dropin_and_systemd_applies_it_without_a_restart(stages):
    assert stages.first.rc == 0, stages.first.output()
    assert stages.dropin == "644:root\n" + EXPECTED_DROPIN
    assert stages.live["Restart"] == "on-failure" and stages.live["RestartUSec"] == "5s"
    assert stages.live["StartLimitBurst"] == "5" and stages.live["StartLimitIntervalUSec"] == "10min"
    assert stages.live["MainPID"] == stages.pid_before and stages.live["NRestarts"] == "0"
    assert "Start the crashed GPU services whose restart policy changed" not in stages.first.changed_tasks(stages.host)


def test_second_run_changes_nothing(stages):
    assert stages.second.rc == 0, stages.second.output()
    assert stages.second.stats[stages.host]["changed"] == 0


def test_a_crash_is_now_followed_by_a_restart(stages):
    assert stages.pid_after_crash != stages.live["MainPID"]
    # systemd restarted it by itself; more than once when a new worker started before the killed one's
    # memory was handed back (the simulated GPU then reports out of memory, as a real one would).
    assert int(stages.restarts_after_crash) >= 1


def test_the_audit_after_remediation_no_longer_reports_the_restart_policy(stages):
    assert "workload.restart_policy" not in rules(stages.after, stages.host)


def test_a_service_that_crashed_without_a_policy_is_started_again_with_it(stages):
    assert stages.state_crashed == "failed"
    assert stages.recover.rc == 0, stages.recover.output()
    started = stages.recover.result(stages.host, "Start the crashed GPU services whose restart policy changed")
    assert changed_items(started) == [UNIT]


def test_recycle_calendar_installs_a_timer_that_restarts_the_service(stages):
    assert stages.recycle.rc == 0, stages.recycle.output()
    assert stages.timer_state.split() == ["enabled", "active"]
    assert "OnCalendar=*-*-* 04:00:00" in stages.timer_calendar
    assert stages.pid_recycled != stages.pid_recovered
    assert stages.recycle_again.stats[stages.host]["changed"] == 0


def test_a_recycle_calendar_taken_out_of_the_policy_removes_the_timer(stages):
    assert stages.unrecycle.rc == 0, stages.unrecycle.output()
    stopped = stages.unrecycle.result(stages.host, "Stop and disable recycle timers the policy no longer wants")
    assert changed_items(stopped) == [TIMER]
    assert stages.recycle_files_left == "0" and stages.timer_loaded == "not-found"
