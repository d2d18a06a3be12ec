"""remediate.yml acts only on hosts its first audit could read, whatever --tags or --limit say: an
unreachable host and a host whose collection failed get the first audit's "not audited" verdict, which
takes them out of the run, and no role, also with --tags driver; the run exits 4 (scenario default)."""

import os
import tempfile

import fleet as fleet_module

VERDICT = "Give each host its verdict"
ROLE_TASKS = ("Read the desired driver from gpufleet_policy", "Read the desired state from gpufleet_policy")


def hosts_that_ran(run, task):
    return {event["event_data"]["host"] for event in run.events
            if event.get("event") in ("runner_on_ok", "runner_on_failed", "runner_on_unreachable")
            and event["event_data"].get("task") == task}


def test_hosts_the_first_audit_could_not_read_are_left_alone_whatever_the_tags(fleet):
    # per host through extra vars (they outrank the inventory): fleet-03's collection fails (no such
    # fixture), fleet-04 is unreachable (nothing listens on port 9)
    broken = {
        "gpufleet_facts_source": "{{ 'replay' if inventory_hostname == 'fleet-03' else 'nvidia_smi' }}",
        "gpufleet_facts_fixture": "{{ '/nonexistent/fixture.json' if inventory_hostname == 'fleet-03' else omit }}",
        "ansible_port": "{{ 9 if inventory_hostname == 'fleet-04' else %d + inventory_hostname[-2:] | int }}"
                        % fleet_module.BASE_PORT,
    }
    report_dir = tempfile.mkdtemp(prefix="remediate-unread-")
    run = fleet.playbook("remediate.yml", limit="fleet-02,fleet-03,fleet-04",
                         extra_vars=dict(broken, gpufleet_report_dir=report_dir),
                         extra_args=["--tags", "driver,gpu_settings"])
    # the first audit's verdicts: its failures are not findings (fail severity none), the unread hosts leave
    verdicts = run.results(VERDICT)
    left = {host: result["msg"] for host, result in verdicts.items() if result["_event"] == "unreachable"}
    assert set(left) == {"fleet-03", "fleet-04"}, run.output()
    assert left["fleet-03"].startswith("not audited: failed:") and "/nonexistent/fixture.json" in left["fleet-03"]
    assert left["fleet-04"].startswith("not audited: unreachable:")
    assert run.rc == 4, run.output()
    for task in ROLE_TASKS:
        assert hosts_that_ran(run, task) == {"fleet-02"}, (task, run.output())
    assert run.stats["fleet-03"]["changed"] == 0
    assert os.path.isdir(report_dir)
