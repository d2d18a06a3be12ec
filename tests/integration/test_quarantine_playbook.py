"""quarantine.yml without the simulated fleet (docs/quarantine.md).

On the demo inventory (replayed facts, local connection) it asks no scheduler and changes nothing: every node is
"not acted on", the plan still names what would trigger, and the run exits 4. On this controller, audited live
through the local connection, it takes its Kubernetes node out and returns it through the kubectl stand-in
(tests/integration/kubectl_standin): cordon, the taint and the node condition, then uncordon, the taint removed and
the condition False; check mode sends no change.
"""

import glob
import json
import os
import subprocess

import pytest

from tests.integration.test_acting_playbooks import PLAYBOOK_BIN, ROOT, WATCHED_PROGRAMS, recorded, roles_paths
from tests.integration.test_exit_status import LOST_GPU, output, playbook_env, write_inventory

STANDIN = os.path.join(ROOT, "tests", "integration", "kubectl_standin")
NODE = "gpu-node-01"
# this controller has no NVIDIA driver: driver.nvidia_absent is the finding the test's policy quarantines on; the
# only repair allowed is a GPU reset (which fails here, without nvidia-smi): never a reboot of this machine
POLICY = {"gpus": {"expected_count": 2},
          "quarantine": {"triggers": [{"rule": "driver.nvidia_absent"}], "contain": {"method": "kubernetes"},
                         "repairs": {"steps": ["reset"]}}}
CLEAN_NOW = {"gpufleet_policy_zz_clean": {"quarantine": {"triggers": [{"rule": "hardware.gpu_lost"}]}}}
# this controller has no GPU to run active diagnostics on: the return rests on the clean audit alone
NO_VALIDATION = {"gpufleet_policy_zz_clean": {"quarantine": {"triggers": [{"rule": "hardware.gpu_lost"}],
                                                             "return": {"require_validation": False}}}}


def run_quarantine(inventory, report_dir, env, *extra):
    argv = [PLAYBOOK_BIN, "quarantine.yml", "-i", inventory, "-e", "gpufleet_report_dir=%s" % report_dir] + list(extra)
    return subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=400, check=False)


def latest_quarantine(report_dir):
    with open(os.path.join(sorted(glob.glob(os.path.join(str(report_dir), "*-quarantine*")))[-1],
                           "quarantine.json")) as handle:
        return json.load(handle)


def test_on_the_demo_no_scheduler_is_asked_and_nothing_is_decided(tmp_path):
    folder = tmp_path / "watched-bin"
    folder.mkdir()
    calls = tmp_path / "calls.log"
    for program in WATCHED_PROGRAMS:
        stand_in = folder / program
        stand_in.write_text('#!/bin/sh\necho "$(basename "$0") $*" >> %s\nexit 1\n' % calls)
        stand_in.chmod(0o755)
    before = roles_paths()
    env = playbook_env(PATH="%s:%s" % (folder, os.environ.get("PATH", "")))
    result = run_quarantine(os.path.join(ROOT, "inventories", "demo"), tmp_path / "reports", env)
    assert result.returncode == 4, output(result)[-4000:]
    assert recorded(calls) == [] and roles_paths() == before
    plan = latest_quarantine(tmp_path / "reports")["plan"]["hosts"]
    assert {decision["action"] for decision in plan.values()} == {"unverified"}
    lost = plan[LOST_GPU]
    assert lost["why"].startswith("nothing decided: not acted on: its facts are replayed from a recorded fixture")
    assert [trigger["rule"] for trigger in lost["triggers"]] == ["hardware.gpu_lost"]


@pytest.fixture
def kubernetes(tmp_path):
    """(inventory, environment with the kubectl stand-in first on PATH, the stand-in's folder)."""
    state = tmp_path / "kube"
    (state / "nodes").mkdir(parents=True)
    node = {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": NODE, "resourceVersion": "4711", "labels": {"nvidia.com/gpu.count": "2"}},
            "spec": {"podCIDR": "10.244.1.0/24"},
            "status": {"conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                                       "message": "kubelet is posting ready status"}],
                       "capacity": {"nvidia.com/gpu": "2"}}}
    (state / "nodes" / ("%s.json" % NODE)).write_text(json.dumps(node))
    inventory = write_inventory(tmp_path / "hosts.yml", {"localhost": {
        "ansible_connection": "local", "ansible_python_interpreter": "{{ ansible_playbook_python }}",
        "gpufleet_kubernetes_node_name": NODE, "gpufleet_policy": POLICY}})
    env = playbook_env(PATH="%s:%s" % (STANDIN, os.environ.get("PATH", "")), KUBECTL_STANDIN_DIR=str(state))
    return inventory, env, state


def node_now(state):
    return json.loads((state / "nodes" / ("%s.json" % NODE)).read_text())


def requests(state):
    path = state / "requests.jsonl"
    return [json.loads(line)["call"] for line in path.read_text().splitlines()] if path.exists() else []


def own_condition(node):
    return [c for c in node["status"]["conditions"] if c["type"] == "GpufleetQuarantine"]


def test_kubernetes_cordon_taint_condition_and_return_through_the_stand_in(tmp_path, kubernetes):
    inventory, env, state = kubernetes
    reports = tmp_path / "reports"
    checked = run_quarantine(inventory, reports, env, "--check")
    assert checked.returncode == 0, output(checked)[-4000:]
    assert requests(state) == ["get"] and node_now(state)["metadata"]["resourceVersion"] == "4711"
    assert "kubectl cordon %s" % NODE in checked.stdout

    result = run_quarantine(inventory, reports, env)
    assert result.returncode == 0, output(result)[-4000:]
    node = node_now(state)
    assert node["spec"]["unschedulable"] is True
    assert node["spec"]["taints"] == [{"key": "gpufleet.io/quarantine", "value": "driver.nvidia_absent",
                                       "effect": "NoSchedule"}]
    [condition] = own_condition(node)
    assert condition["status"] == "True" and condition["reason"] == "DriverNvidiaAbsent"
    run_id = latest_quarantine(reports)["audit_run"]
    assert condition["message"].startswith("gpufleet: driver.nvidia_absent ")
    assert condition["message"].endswith("(run %s)" % run_id)
    assert requests(state) == ["get", "get", "cordon", "taint", "patch_status"]

    again = run_quarantine(inventory, reports, env)
    assert again.returncode == 0, output(again)[-4000:]
    repaired = latest_quarantine(reports)
    assert repaired["plan"]["hosts"]["localhost"]["action"] == "repair"
    assert repaired["plan"]["hosts"]["localhost"]["next_repair"] == "reset"
    # no nvidia-smi here: the reset is a failed repair, recorded, and the node stays out
    assert repaired["outcomes"]["localhost"]["msg"].startswith("reset: failed: ")
    assert repaired["outcomes"]["localhost"]["repairs"][0]["result"] == "failed"
    assert node_now(state)["spec"]["unschedulable"] is True

    held = run_quarantine(inventory, reports, env, "-e", json.dumps(CLEAN_NOW))
    assert held.returncode == 0, output(held)[-4000:]
    decided = latest_quarantine(reports)
    assert decided["plan"]["hosts"]["localhost"]["action"] == "return"
    assert decided["plan"]["hosts"]["localhost"]["validation"] == "run"
    assert decided["outcomes"]["localhost"]["msg"].startswith("not returned: the active diagnostics did not pass")
    assert node_now(state)["spec"]["unschedulable"] is True

    back = run_quarantine(inventory, reports, env, "-e", json.dumps(NO_VALIDATION))
    assert back.returncode == 0, output(back)[-4000:]
    assert latest_quarantine(reports)["plan"]["hosts"]["localhost"]["action"] == "return"
    node = node_now(state)
    assert "unschedulable" not in node["spec"] and "taints" not in node["spec"]
    [condition] = own_condition(node)
    assert condition["status"] == "False" and condition["reason"] == "ReturnedToService"
    assert requests(state)[-3:] == ["uncordon", "untaint", "patch_status"]


def test_an_operators_cordon_is_kept(tmp_path, kubernetes):
    inventory, env, state = kubernetes
    node = node_now(state)
    node["spec"]["unschedulable"] = True
    (state / "nodes" / ("%s.json" % NODE)).write_text(json.dumps(node))
    result = run_quarantine(inventory, tmp_path / "reports", env)
    assert result.returncode == 0, output(result)[-4000:]
    decision = latest_quarantine(tmp_path / "reports")["plan"]["hosts"]["localhost"]
    assert decision["action"] == "operator_out"
    assert decision["node_reason"] == "cordoned (spec.unschedulable)"
    assert requests(state) == ["get"] and "taints" not in node_now(state)["spec"]


def test_the_stand_in_fails_on_a_call_it_has_no_record_of(kubernetes):
    _inventory, env, _state = kubernetes
    result = subprocess.run([os.path.join(STANDIN, "kubectl"), "drain", NODE], env=env, capture_output=True,
                            text=True, check=False)
    assert result.returncode == 1
    assert result.stderr == "error: kubectl stand-in: no recorded exchange for: drain %s\n" % NODE
