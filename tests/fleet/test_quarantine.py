"""quarantine.yml against a real Slurm cluster (scenario `slurm`: slurmctld on fleet-01, slurmd on every host):
a node with a lost GPU is drained with a reason naming the finding and the run; the circuit breaker leaves the
node past its limit in service and says why (exit status 2); an operator's drain is kept with its reason; a node
whose audit is clean again returns to service; check mode changes nothing (docs/quarantine.md).
"""

import glob
import json
import os
import tarfile
import tempfile
import time

import pytest

OPERATOR_REASON = "operator: bad fan"
STATE = "/var/lib/gpufleet-sim/state.json"
# the fleet's one inventory group holds the four hosts: with the fleet's limit raised to 75% (3 nodes), the
# group's default 50% (2 of 4) is the limit that refuses
BREAKER_AT_HALF = {"gpufleet_policy_quarantine_test": {"quarantine": {"breaker": {"fleet": {"max_out_pct": 75}}}}}


@pytest.fixture(scope="module")
def slurm_fleet(fleet):
    previous = fleet.scenario
    fleet.use_scenario("slurm")
    wait_for(lambda: set(node_states(fleet).values()) == {"IDLE"}, 60, "every slurmd registered and idle")
    yield fleet
    fleet.use_scenario(previous)


def wait_for(condition, timeout, what):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(1)
    raise AssertionError("timed out after %d s waiting until %s" % (timeout, what))


def node_states(fleet):
    out = fleet.ssh("fleet-01", "sinfo --Node --noheader --format='%N %T'").stdout
    return {name: state.upper() for name, state in (line.split() for line in out.splitlines() if line.strip())}


def slurm_node(fleet, node):
    """(State, Reason without its [user@time] stamp) of `scontrol show node --oneliner`."""
    line = fleet.ssh("fleet-01", "scontrol show node --oneliner %s" % node, check=True).stdout
    state = line.split(" State=", 1)[1].split()[0]
    reason = line.split(" Reason=", 1)[1].rsplit(" [", 1)[0].strip() if " Reason=" in line else None
    return state, reason


def set_gpu_lost(fleet, host, lost, reset_fails=False, reboot_fails=False):
    """Marks the host's second GPU lost (fallen off the bus) or found again, and whether a reset or a reboot brings
    it back (tests/fleet/sim/README.md), as the simulator writes its state."""
    script = ("import json, os; p = %r; s = json.load(open(p)); s['gpus'][1]['lost'] = %r; "
              "s['repair'] = {'reset_fails': %r, 'reboot_fails': %r}; "
              "open(p + '.new', 'w').write(json.dumps(s)); os.rename(p + '.new', p)"
              % (STATE, lost, reset_fails, reboot_fails))
    fleet.ssh(host, "flock /var/lib/gpufleet-sim/state.lock python3 -c \"%s\"" % script, check=True)


@pytest.fixture(scope="module")
def report_dir():
    """One report root for the module's runs: its run store remembers the nodes' service states between them."""
    return tempfile.mkdtemp(prefix="quarantine-")


def quarantine(fleet, report_dir, check=False, extra_vars=None):
    before = set(glob.glob(os.path.join(report_dir, "*-quarantine*")))
    run = fleet.playbook("quarantine.yml", check=check,
                         extra_vars=dict({"gpufleet_report_dir": report_dir}, **(extra_vars or {})))
    found = sorted(set(glob.glob(os.path.join(report_dir, "*-quarantine*"))) - before)
    assert len(found) == 1, run.output()
    with open(os.path.join(found[0], "quarantine.json")) as handle:
        return run, json.load(handle), os.path.basename(found[0])


def service_states(run_dir):
    with open(os.path.join(run_dir, "service.json")) as handle:
        return json.load(handle)["hosts"]


def decided(run, host):
    return run.result(host, "Say what the plan decided for the node")["msg"]


def test_check_mode_shows_the_drain_and_changes_nothing(slurm_fleet, report_dir):
    fleet = slurm_fleet
    set_gpu_lost(fleet, "fleet-02", True)
    run, document, folder = quarantine(fleet, report_dir, check=True)
    assert run.rc == 0, run.output()
    assert folder.endswith("-quarantine-check") and document["check_mode"] is True
    assert document["plan"]["hosts"]["fleet-02"]["action"] == "contain"
    shown = run.result("fleet-02", "Show what would run (check mode)")["msg"]
    assert "scontrol update NodeName=fleet-02 State=DRAIN Reason=gpufleet: hardware.gpu_lost" in shown
    assert set(node_states(fleet).values()) == {"IDLE"}
    assert run.result("fleet-02", "Run the scheduler's commands")["_event"] == "skipped"


def test_a_lost_gpu_is_drained_the_breaker_stops_at_its_limit_and_an_operators_drain_stays(slurm_fleet, report_dir):
    fleet = slurm_fleet
    fleet.ssh("fleet-01", "scontrol update nodename=fleet-03 state=drain reason='%s'" % OPERATOR_REASON, check=True)
    set_gpu_lost(fleet, "fleet-02", True)
    set_gpu_lost(fleet, "fleet-04", True)
    run, document, folder = quarantine(fleet, report_dir, extra_vars=BREAKER_AT_HALF)
    assert run.rc == 2, run.output()
    run_id = document["audit_run"]
    state, reason = slurm_node(fleet, "fleet-02")
    assert "DRAIN" in state.split("+")
    assert reason == ("gpufleet: hardware.gpu_lost GPU 1 (0000:0f:00.0) has fallen off the bus (lost to "
                      "NVML/nvidia-smi) (run %s)" % run_id), reason
    # the breaker: fleet-03 (the operator's) and fleet-02 are out, 2 of the group's 4
    assert slurm_node(fleet, "fleet-04") == ("IDLE", None)
    plan = document["plan"]["hosts"]
    assert plan["fleet-04"]["action"] == "left_in_service"
    assert plan["fleet-04"]["breaker"] == "group fleet has 2 of 4 out, limit 50% (2 nodes)"
    assert "circuit breaker: group fleet has 2 of 4 out" in run.result("fleet-04", "Give each node its verdict")["msg"]
    # the operator's drain: kept, with their reason, never replaced
    assert plan["fleet-03"]["action"] == "operator_out"
    assert "reason: %s" % OPERATOR_REASON in decided(run, "fleet-03")
    assert slurm_node(fleet, "fleet-03") == ("IDLE+DRAIN", OPERATOR_REASON)
    assert run.result("fleet-03", "Take the node out of service")["_event"] == "skipped"
    assert document["outcomes"]["fleet-02"]["failed"] is False
    # the store's service state: fleet-02 quarantined for its finding, fleet-03 out by the operator
    states = service_states(os.path.join(report_dir, folder))
    assert states["fleet-02"]["state"] == "quarantined" and states["fleet-02"]["rule"] == "hardware.gpu_lost"
    assert states["fleet-02"]["reason"] == reason and states["fleet-02"]["scheduler"] == "slurm"
    assert states["fleet-03"]["state"] == "operator_out" and states["fleet-03"]["reason"] == OPERATOR_REASON
    assert states["fleet-04"]["state"] == "in_service"
    assert states["fleet-04"]["last_event"]["reason"] == plan["fleet-04"]["breaker"]


def test_a_quarantined_node_whose_audit_is_clean_returns_to_service(slurm_fleet, report_dir):
    fleet = slurm_fleet
    assert "DRAIN" in slurm_node(fleet, "fleet-02")[0], "the test before drains fleet-02"
    set_gpu_lost(fleet, "fleet-02", False)
    set_gpu_lost(fleet, "fleet-04", False)
    run, document, folder = quarantine(fleet, report_dir, extra_vars=BREAKER_AT_HALF)
    assert run.rc == 0, run.output()
    assert document["plan"]["hosts"]["fleet-02"]["action"] == "return"
    assert slurm_node(fleet, "fleet-02") == ("IDLE", None)
    # never an operator's node
    assert document["plan"]["hosts"]["fleet-03"]["action"] == "operator_out"
    assert slurm_node(fleet, "fleet-03") == ("IDLE+DRAIN", OPERATOR_REASON)
    states = service_states(os.path.join(report_dir, folder))
    assert states["fleet-02"]["state"] == "in_service" and states["fleet-02"]["last_event"]["event"] == "returned"
    assert states["fleet-03"]["state"] == "operator_out"


def test_a_failed_reset_is_followed_by_a_reboot_then_by_the_return_to_vendor_packet(slurm_fleet, report_dir):
    fleet = slurm_fleet
    set_gpu_lost(fleet, "fleet-04", True, reset_fails=True, reboot_fails=True)
    run, document, _folder = quarantine(fleet, report_dir, extra_vars=BREAKER_AT_HALF)
    assert run.rc == 0 and document["plan"]["hosts"]["fleet-04"]["action"] == "contain", run.output()
    steps = []
    for step in ("reset", "reboot"):
        run, document, folder = quarantine(fleet, report_dir, extra_vars=BREAKER_AT_HALF)
        assert run.rc == 0, run.output()
        decision = document["plan"]["hosts"]["fleet-04"]
        assert decision["action"] == "repair" and decision["next_repair"] == step
        assert document["outcomes"]["fleet-04"]["msg"].startswith("%s: failed: " % step)
        steps.append([(r["step"], r["result"]) for r in service_states(os.path.join(report_dir, folder))["fleet-04"]["repairs"]])
        assert "DRAIN" in slurm_node(fleet, "fleet-04")[0].split("+")
    assert steps == [[("reset", "failed")], [("reset", "failed"), ("reboot", "failed")]]
    assert "GPU is lost" in document["outcomes"]["fleet-04"]["msg"] or "nvidia-smi exited" in document["outcomes"]["fleet-04"]["msg"]
    # two failed repairs (the policy's max_failed_repairs): the return-to-vendor packet
    run, document, folder = quarantine(fleet, report_dir, extra_vars=BREAKER_AT_HALF)
    assert run.rc == 0, run.output()
    assert document["plan"]["hosts"]["fleet-04"]["next_repair"] == "rma"
    packet = os.path.join(report_dir, folder, "rma", "fleet-04.tar.gz")
    assert os.path.exists(packet), run.output()
    assert document["outcomes"]["fleet-04"]["msg"] == "rma: passed: %s" % packet
    with tarfile.open(packet) as tar:
        assert "manifest.json" in [os.path.basename(name) for name in tar.getnames()]
    # nothing is left to try: the node stays out until its audit is clean
    run, document, _folder = quarantine(fleet, report_dir, extra_vars=BREAKER_AT_HALF)
    assert document["plan"]["hosts"]["fleet-04"]["next_repair"] is None, run.output()
    assert "DRAIN" in slurm_node(fleet, "fleet-04")[0].split("+")
    set_gpu_lost(fleet, "fleet-04", False)
    run, document, _folder = quarantine(fleet, report_dir, extra_vars=BREAKER_AT_HALF)
    assert run.rc == 0 and document["plan"]["hosts"]["fleet-04"]["action"] == "return", run.output()
    assert slurm_node(fleet, "fleet-04") == ("IDLE", None)


def test_on_a_bare_host_the_policys_gpu_services_are_stopped_and_started_again(slurm_fleet, report_dir):
    fleet = slurm_fleet
    unit = "[Unit]\nDescription=GPU inference (test)\n[Service]\nExecStart=/bin/sleep infinity\n"
    fleet.ssh("fleet-02", "printf '%s' > /etc/systemd/system/gpu-inference.service && systemctl daemon-reload && "
              "systemctl start gpu-inference.service" % unit, check=True)
    bare = {"gpufleet_policy_quarantine_test": {"quarantine": {
        "breaker": {"fleet": {"max_out_pct": 75}},
        "contain": {"method": "services", "services": ["gpu-inference.service"]}}}}
    set_gpu_lost(fleet, "fleet-02", True)
    run, document, folder = quarantine(fleet, report_dir, extra_vars=bare)
    assert run.rc == 0, run.output()
    decision = document["plan"]["hosts"]["fleet-02"]
    assert decision["action"] == "contain" and decision["scheduler"] == "services"
    assert fleet.ssh("fleet-02", "systemctl is-active gpu-inference.service").stdout.strip() == "inactive"
    state = service_states(os.path.join(report_dir, folder))["fleet-02"]
    assert state["state"] == "quarantined" and state["scheduler"] == "services"
    # Slurm was not asked to drain it: the policy's method is services
    assert "DRAIN" not in slurm_node(fleet, "fleet-02")[0].split("+")
    set_gpu_lost(fleet, "fleet-02", False)
    run, document, _folder = quarantine(fleet, report_dir, extra_vars=bare)
    assert run.rc == 0 and document["plan"]["hosts"]["fleet-02"]["action"] == "return", run.output()
    assert fleet.ssh("fleet-02", "systemctl is-active gpu-inference.service").stdout.strip() == "active"
