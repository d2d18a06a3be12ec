"""incident.yml on a real host of the simulated fleet (scenario `incident`): an Xid in the kernel log, then a
real reboot, then a service killed by the (simulated) OOM killer that systemd really restarts. The timeline
has all of them, in that order, from the host's own journal, boot list and kernel log; the unit file's secret
stays on the host."""

import json
import os
import tempfile
import time

import pytest

HOST = "fleet-01"
KERN_LOG = "/var/log/gpufleet-sim/kern.log"


@pytest.fixture(scope="module")
def incident_fleet(fleet):
    previous = fleet.scenario
    fleet.use_scenario("incident")
    yield fleet
    fleet.use_scenario(previous)


def wait_for(fleet, command, expected, seconds=90):
    """Polls a host until command prints expected (a condition, never a fixed sleep)."""
    deadline = time.monotonic() + seconds
    output = ""
    while time.monotonic() < deadline:
        output = fleet.ssh(HOST, command).stdout.strip()
        if expected(output):
            return output
        time.sleep(1)
    raise AssertionError("%s: %r never gave the expected output; last: %r" % (HOST, command, output))


def restarted_after_oom(fleet):
    return wait_for(fleet, "systemctl show --property=NRestarts,ActiveState,Result oom-worker.service",
                    lambda text: "ActiveState=active" in text and "NRestarts=0" not in text)


@pytest.fixture(scope="module")
def timeline(incident_fleet):
    fleet = incident_fleet
    stamp = fleet.ssh(HOST, "date -u +%Y-%m-%dT%H:%M:%S.%6N+00:00", check=True).stdout.strip()
    fleet.ssh(HOST, "echo '%s %s kernel: NVRM: Xid (PCI:0000:01:00): 13, pid=4242, name=python3, Graphics SM "
                    "Warp Exception on (GPC 0, TPC 0, SM 0)' >> %s" % (stamp, HOST, KERN_LOG), check=True)
    fleet.ssh(HOST, "sleep 1.1")  # the reboot starts after the Xid's second on the host's own clock
    reboot = fleet.ansible(HOST, "ansible.builtin.reboot", {"reboot_timeout": 120})
    assert reboot.result(HOST).get("rebooted") is True, reboot.output()
    restarted_after_oom(fleet)
    report_dir = tempfile.mkdtemp(prefix="incident-fleet-")
    run = fleet.playbook("incident.yml", limit=HOST, extra_vars={"gpufleet_report_dir": report_dir})
    assert run.rc in (0, 2), run.output()
    # a --limit incident is a partial run: latest-partial, never the fleet's latest
    latest = os.path.join(report_dir, "latest-partial")
    with open(os.path.join(latest, "timeline.json")) as stream:
        return json.load(stream), latest, stamp


def first(events, kind, source=None, after=None):
    for event in events:
        if event["kind"] == kind and (source is None or event["source"] == source) and \
                (after is None or event["epoch"] > after["epoch"]):
            return event
    raise AssertionError("no %s event%s in %s" % (kind, " after %s" % after["time"] if after else "",
                                                  [(e["time"], e["kind"]) for e in events]))


def test_xid_reboot_oom_kill_and_restart_are_on_the_timeline_in_order(timeline):
    document, _latest, stamp = timeline
    events = [event for event in document["events"] if event["host"] == HOST]
    xid = first(events, "xid")
    assert xid["time"] == stamp.replace("+00:00", "Z") and xid["details"]["xid"] == 13
    assert xid["evidence"]["file"] == "kernel-log-1.txt"
    boot = first(events, "boot", after=xid)
    oom = first(events, "oom_kill", "kernel", after=boot)
    killed = first(events, "service_exit", "journal", after=oom)
    restart = first(events, "service_restart", after=killed)
    start = first(events, "service_start", after=restart)
    assert xid["epoch"] < boot["epoch"] < oom["epoch"] <= killed["epoch"] < restart["epoch"] <= start["epoch"]
    assert oom["details"]["unit"] == "oom-worker.service" and oom["details"]["process_name"] == "python3"
    assert "code=killed, status=9/KILL" in killed["summary"] and "oom-worker.service" in restart["summary"]
    assert killed["id"] in oom["related"]
    assert boot["source"] == "boots" and boot["evidence"]["file"] == "boots.txt"
    assert document["hosts"][HOST]["sources"]["journal"]["status"] == "ok"


def test_the_bundle_keeps_the_evidence_and_not_the_secret(timeline):
    latest = timeline[1]
    folder = os.path.join(latest, "evidence", HOST)
    with open(os.path.join(folder, "manifest.json")) as stream:
        manifest = json.load(stream)
    files = {entry["name"]: entry for entry in manifest["files"] if entry.get("name")}
    assert files["journal-services.json"]["status"] == "ok"
    assert "-u oom-worker.service" in files["journal-services.json"]["command"]
    assert files["lspci-nvidia.txt"]["status"] == "missing"  # minbase has no pciutils: recorded, not fatal
    with open(os.path.join(folder, "systemctl-cat.txt")) as stream:
        unit = stream.read()
    assert "Environment=API_TOKEN=<redacted>" in unit and "fleet-secret-token" not in unit
    assert os.path.exists(os.path.join(folder, manifest["archive"]))
    with open(os.path.join(latest, "fault-log.md")) as stream:
        assert "Host memory ran out: the OOM killer killed a service process" in stream.read()
