"""gpufleet.core.gpu_reset on the simulated fleet (default scenario): a GPU of fleet-02 falls off the bus (injected in
the host's simulator state); the reset is refused while trainer.service runs on the GPUs; on the idle node it brings
the GPU back and a re-audit finds what it found before the GPU fell off; a reset that fails is reported failed and a
reboot brings the GPU back; a reboot that fails leaves it lost."""

import json
import shlex
import tempfile

import pytest

from ansible_collections.gpufleet.core.plugins.plugin_utils.reports.format import expanded

HOST = "fleet-02"
LOST = 1
SERVICE = "trainer.service"


@pytest.fixture(scope="module")
def node(fleet):
    if fleet.scenario != "default":
        pytest.fail("test_gpu_reset needs the default scenario, not %s" % fleet.scenario)
    fleet.recreate()
    return fleet


def change_state(fleet, lost, **repair):
    """GPU LOST lost or back, and the state's repair switches, under the simulator's own lock."""
    script = ("import sys; sys.path.insert(0, '/usr/lib/gpufleet-sim'); import nvidia_smi as sim\n"
              "with sim.StateLock(exclusive=True):\n"
              "    state = sim.load_state()\n"
              "    state['gpus'][%d]['lost'] = %r\n"
              "    state['repair'] = %r\n"
              "    sim.save_state(state)\n" % (LOST, lost, repair))
    fleet.ssh(HOST, "python3 -c %s" % shlex.quote(script), check=True)


def gpus_answering(fleet):
    """(nvidia-smi -L exit status, GPUs listed)."""
    listing = fleet.ssh(HOST, "nvidia-smi -L")
    return listing.returncode, listing.stdout.count("GPU ")


def reset(fleet, gpus, check=False):
    run = fleet.ansible(HOST, "gpufleet.core.gpu_reset", {"gpus": gpus}, check=check)
    return run.result(HOST), run


def audit_rules(fleet):
    report_dir = tempfile.mkdtemp(prefix="gpu-reset-")
    run = fleet.playbook("audit.yml", limit=HOST, extra_vars={"gpufleet_report_dir": report_dir})
    assert run.rc in (0, 2), run.output()
    with open("%s/latest-partial/report.json" % report_dir) as stream:  # --limit: a partial run
        report = expanded(json.load(stream))
    return sorted((finding["rule"], finding.get("gpu") or "") for finding in report["hosts"][HOST]["findings"])


def reboot(fleet):
    run = fleet.ansible(HOST, "ansible.builtin.reboot", {"reboot_timeout": 120})
    assert run.result(HOST).get("rebooted") is True, run.output()


def test_refused_while_a_gpu_service_runs(node):
    assert node.ssh(HOST, "systemctl is-active %s" % SERVICE).stdout.strip() == "active"
    change_state(node, lost=True)
    result, run = reset(node, "all")
    assert result["_event"] == "ok" and not result.get("failed"), run.output()
    assert (result["outcome"], result["changed"], result["commands"]) == ("refused", False, [])
    assert "GPU processes run on this host" in result["reason"] and "pids" in result["reason"]
    assert gpus_answering(node) == (15, 1)  # nothing was reset


def test_a_reset_brings_the_lost_gpu_back_and_the_reaudit_is_clean(node):
    node.ssh(HOST, "systemctl stop %s" % SERVICE, check=True)
    change_state(node, lost=False)
    before = audit_rules(node)
    change_state(node, lost=True)
    assert any(rule == "hardware.gpu_lost" for rule, _gpu in audit_rules(node))

    checked, run = reset(node, [LOST], check=True)
    assert checked["outcome"] == "would_reset" and checked["commands"][0].startswith("nvidia-smi -r -i "), run.output()
    assert gpus_answering(node) == (15, 1)

    result, run = reset(node, [LOST])
    assert (result["outcome"], result["changed"]) == ("passed", True), run.output()
    assert [(entry["index"], entry["result"]) for entry in result["gpus"]] == [(LOST, "passed")]
    assert gpus_answering(node) == (0, 2)
    assert audit_rules(node) == before


def test_a_failing_reset_is_reported_failed_and_a_reboot_brings_the_gpu_back(node):
    change_state(node, lost=True, reset_fails=True)
    result, run = reset(node, [LOST])
    assert not result.get("failed") and result["outcome"] == "failed", run.output()
    (entry,) = result["gpus"]
    assert entry["result"] == "failed" and "Unable to reset GPU" in entry["detail"] and "GPU is lost" in entry["detail"]
    assert gpus_answering(node) == (15, 1)
    reboot(node)
    assert gpus_answering(node) == (0, 2)
    assert not [rule for rule, _gpu in audit_rules(node) if rule == "hardware.gpu_lost"]


def test_a_reboot_that_fails_leaves_the_gpu_lost(node):
    change_state(node, lost=True, reboot_fails=True)
    reboot(node)
    assert gpus_answering(node) == (15, 1)
    change_state(node, lost=False)
