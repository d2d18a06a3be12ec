"""gpufleet.core.service_state as a playbook runs it on the controller: events recorded in the default store
under the report root, every node's state returned and written to service.json; check mode records nothing; a
bad event fails the task naming it."""

import json
import os
import subprocess
import sys

import yaml

from ansible_collections.gpufleet.core.plugins.plugin_utils.quarantine.service_state import service_states
from ansible_collections.gpufleet.core.plugins.plugin_utils.store.record import StoreSettings

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PLAYBOOK_BIN = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")
DRAIN = {"host": "node-3", "event": "quarantined", "scheduler": "slurm", "rule": "hardware.gpu_lost",
         "finding": "GPU 0000:17:00.0 fell off the bus", "reason": "gpufleet: hardware.gpu_lost"}


def run_task(tmp_path, args, check=False):
    play = [{"hosts": "localhost", "gather_facts": False, "tasks": [
        {"name": "Service state", "gpufleet.core.service_state": args, "register": "service"},
        {"name": "Keep the result", "ansible.builtin.copy": {
            "content": "{{ service | to_json }}", "dest": str(tmp_path / "result.json"), "mode": "0600"},
         "check_mode": False}]}]
    playbook = tmp_path / "play.yml"
    playbook.write_text(yaml.safe_dump(play, sort_keys=False))
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_NOCOLOR="1")
    argv = [PLAYBOOK_BIN, "-i", "localhost,", "-c", "local", "-e", "ansible_python_interpreter=%s" % sys.executable,
            str(playbook)] + (["--check"] if check else [])
    return subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)


def test_the_task_records_returns_and_writes_service_json(tmp_path):
    args = {"report_root": str(tmp_path / "reports"), "run_folder": str(tmp_path / "reports" / "q1"),
            "run_id": "q1", "events": [DRAIN]}
    checked = run_task(tmp_path, args, check=True)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert json.loads((tmp_path / "result.json").read_text())["states"]["node-3"]["state"] == "quarantined"
    assert not (tmp_path / "reports" / "q1").exists()

    result = run_task(tmp_path, args)
    assert result.returncode == 0, result.stdout + result.stderr
    returned = json.loads((tmp_path / "result.json").read_text())
    assert returned["changed"] is True and returned["recorded"] == 1
    assert returned["states"]["node-3"]["reason"] == "gpufleet: hardware.gpu_lost"
    written = json.loads((tmp_path / "reports" / "q1" / "service.json").read_text())
    assert written["hosts"]["node-3"]["run_id"] == "q1"
    settings = StoreSettings("sqlite:///%s" % (tmp_path / "reports" / "gpufleet.sqlite"))
    assert service_states(settings)["node-3"]["state"] == "quarantined"


def test_a_bad_event_fails_the_task_and_names_it(tmp_path):
    args = {"report_root": str(tmp_path), "events": [DRAIN, {"host": "node-4", "event": "repair", "step": "reset"}]}
    result = run_task(tmp_path, args)
    assert result.returncode != 0
    assert "event 2 (host node-4) a repair's result None is not one of passed, failed" in result.stdout
