"""The scheduled audit of contrib/systemd on the simulated fleet: fleet-01 acts as the controller, the timer
fires, gpufleet-audit.service runs `gpufleet audit` of the other hosts over ssh, and their audit lands in the
report root that contrib/systemd/audit.env names.

The containers are Debian bookworm with Python 3.11 and ansible-core 2.20+ needs 3.12, so the controller sees
this machine's Python 3.12 (sys.base_prefix) and the checkout with its .venv read-only at the same paths (the
scenario's bind_ro). /opt/gpufleet, where the units expect the checkout, is a link to it. Two test-only drop-ins:
the timer fires 2 s after it starts instead of at 06:00, and the service runs as root, who owns the fleet's key.
"""

import json
import os
import shlex
import sys
import time

import pytest
import yaml

import fleet as fleet_module

ROOT = str(fleet_module.REPO_ROOT)
CONTROLLER = "fleet-01"
CONTRIB = os.path.join(ROOT, "contrib", "systemd")
REPORT_ROOT = "/var/lib/gpufleet/reports"
TIMER_DROPIN = "[Timer]\nOnCalendar=\nOnActiveSec=2\nRandomizedDelaySec=0\n"
# the service runs as root and, for a checkout under /tmp (which the unit's PrivateTmp= would hide), with the shared /tmp
SERVICE_DROPIN = "[Service]\nUser=root\nGroup=root\n" + ("PrivateTmp=no\n" if ROOT.startswith("/tmp/") else "")
WAIT_S = 420


def controller_scenario(tmp_path, base_name):
    scenario = fleet_module.load_scenario(base_name)
    scenario.pop("name")
    hosts = scenario.setdefault("hosts", {})
    spec = dict(hosts.get(CONTROLLER, scenario.get("default_host", {})))
    spec["bind_ro"] = [sys.base_prefix, ROOT]
    hosts[CONTROLLER] = spec
    path = tmp_path / "scheduled.json"
    path.write_text(json.dumps(scenario))
    return str(path)


def audited_inventory(inventory_path):
    """The fleet's inventory without the controller."""
    with open(inventory_path) as handle:
        inventory = yaml.safe_load(handle)
    fleet_group = inventory["all"]["children"]["fleet"]
    fleet_group["hosts"].pop(CONTROLLER)
    for group in (fleet_group.get("children") or {}).values():
        (group.get("hosts") or {}).pop(CONTROLLER, None)
    return inventory


def put_file(fleet, path, content):
    fleet.ssh(CONTROLLER, "mkdir -p %s && printf %%s %s > %s" % (
        shlex.quote(os.path.dirname(path)), shlex.quote(content), shlex.quote(path)), check=True)


def unit_show(fleet, unit, *names):
    shown = fleet.ssh(CONTROLLER, "systemctl show --property=%s %s" % (",".join(names), unit), check=True).stdout
    return dict(line.split("=", 1) for line in shown.splitlines() if "=" in line)


@pytest.fixture(scope="module")
def controller(fleet, tmp_path_factory):
    previous = fleet.scenario
    fleet.use_scenario(controller_scenario(tmp_path_factory.mktemp("scenario"), previous))
    try:
        yield fleet
    finally:
        fleet.use_scenario(previous)


def install_units(fleet):
    put_file(fleet, "/etc/gpufleet/inventory.yml", yaml.safe_dump(audited_inventory(fleet.inventory)))
    with open(os.path.join(CONTRIB, "audit.env")) as handle:
        put_file(fleet, "/etc/gpufleet/audit.env", handle.read())
    for unit in ("gpufleet-audit.service", "gpufleet-audit.timer"):
        with open(os.path.join(CONTRIB, unit)) as handle:
            put_file(fleet, "/etc/systemd/system/" + unit, handle.read())
    put_file(fleet, "/etc/systemd/system/gpufleet-audit.timer.d/test.conf", TIMER_DROPIN)
    put_file(fleet, "/etc/systemd/system/gpufleet-audit.service.d/test.conf", SERVICE_DROPIN)
    fleet.ssh(CONTROLLER, "ln -sfn %s /opt/gpufleet && systemctl daemon-reload" % shlex.quote(ROOT), check=True)


def wait_for_the_audit(fleet):
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        state = unit_show(fleet, "gpufleet-audit.service", "ActiveState", "ExecMainExitTimestampMonotonic")
        if state["ActiveState"] in ("inactive", "failed") and state["ExecMainExitTimestampMonotonic"] != "0":
            return
        time.sleep(2)
    pytest.fail("gpufleet-audit.service did not finish within %d s:\n%s" % (WAIT_S, journal(fleet)))


def journal(fleet):
    return fleet.ssh(CONTROLLER, "journalctl --no-pager -o cat -u gpufleet-audit.service").stdout


def test_the_timer_fires_and_the_audit_of_the_other_hosts_lands_in_the_report_root(controller):
    fleet = controller
    others = [host for host in fleet.hosts if host != CONTROLLER]
    install_units(fleet)
    python = fleet.ssh(CONTROLLER, "/opt/gpufleet/.venv/bin/python -c 'import sys; print(sys.version_info[:2])'")
    assert python.stdout.strip() == "(3, 12)", python.stdout + python.stderr
    fleet.ssh(CONTROLLER, "systemctl enable --now gpufleet-audit.timer", check=True)
    wait_for_the_audit(fleet)
    timer = unit_show(fleet, "gpufleet-audit.timer", "LastTriggerUSecMonotonic", "UnitFileState")
    assert timer["LastTriggerUSecMonotonic"] != "0" and timer["UnitFileState"] == "enabled"
    service = unit_show(fleet, "gpufleet-audit.service", "Result", "ExecMainStatus")
    log = journal(fleet)
    assert service["Result"] == "success", log
    assert service["ExecMainStatus"] in ("0", "2"), log
    assert "gpufleet audit: %d/%d hosts done, 0 failed, 0 unreachable" % (len(others), len(others)) in log
    assert "gpufleet audit: exit %s - " % service["ExecMainStatus"] in log
    report = json.loads(fleet.ssh(CONTROLLER, "cat %s/latest/report.json" % REPORT_ROOT, check=True).stdout)
    assert sorted(report["hosts"]) == others
    assert report["run"]["status"] == "complete"
    assert all(entry["status"] == "ok" for entry in report["hosts"].values())
    runner = fleet.ssh(CONTROLLER, "ls %s/runner/artifacts" % REPORT_ROOT, check=True).stdout.split()
    assert len(runner) == 1 and runner[0].startswith("audit-")
