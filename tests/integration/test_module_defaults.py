"""module_defaults for the action group gpufleet.core.gpufleet (meta/runtime.yml) reach the collection's
modules: a playbook on localhost replays a demo fixture with gpu_facts and sets its options only in
module_defaults."""

import json
import os
import subprocess
import sys

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PLAYBOOK_BIN = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")
FIXTURE = os.path.join(ROOT, "inventories", "demo", "fixtures", "gpu-h100-gsp-15.json")
GROUP = "group/gpufleet.core.gpufleet"


def replay_play(group_defaults, task_args=None):
    """A play on localhost: gpu_facts replays FIXTURE and the facts it set are written to facts.json."""
    args = {"source": "replay", "fixture": FIXTURE}
    args.update(task_args or {})
    return [{
        "name": "gpu_facts with the collection's module_defaults group",
        "hosts": "localhost",
        "gather_facts": False,
        "module_defaults": {GROUP: group_defaults},
        "tasks": [
            {"name": "Replay a fixture", "gpufleet.core.gpu_facts": args},
            {"name": "Keep what it collected", "ansible.builtin.copy": {
                "content": "{{ ansible_facts.gpufleet | to_json }}", "dest": "{{ playbook_dir }}/facts.json",
                "mode": "0600"}},
        ],
    }]


def run_play(tmp_path, play):
    playbook = tmp_path / "play.yml"
    playbook.write_text(yaml.safe_dump(play, sort_keys=False))
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_NOCOLOR="1")
    argv = [PLAYBOOK_BIN, "-i", "localhost,", "-c", "local", "-e", "ansible_python_interpreter=%s" % sys.executable,
            str(playbook)]
    return subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)


def collected_facts(tmp_path):
    return json.loads((tmp_path / "facts.json").read_text())


def test_runtime_declares_every_module_in_the_group():
    with open(os.path.join(ROOT, "meta", "runtime.yml")) as handle:
        runtime = yaml.safe_load(handle)
    modules = sorted(name[:-3] for name in os.listdir(os.path.join(ROOT, "plugins", "modules"))
                     if name.endswith(".py") and not name.startswith("_"))
    assert sorted(runtime["action_groups"]["gpufleet"]) == modules


def test_group_default_sets_gpu_facts_options(tmp_path):
    result = run_play(tmp_path, replay_play({"gather_subset": ["driver"], "timeout": 7}))
    assert result.returncode == 0, result.stdout + result.stderr
    facts = collected_facts(tmp_path)
    assert facts["gather_subset"] == ["driver"]
    assert facts["replay_of"]


def test_task_argument_wins_over_group_default(tmp_path):
    result = run_play(tmp_path, replay_play({"gather_subset": ["kernel_log"]}, {"gather_subset": ["driver"]}))
    assert result.returncode == 0, result.stdout + result.stderr
    assert collected_facts(tmp_path)["gather_subset"] == ["driver"]


def test_group_default_timeout_reaches_the_module(tmp_path):
    # The only visible trace of a timeout in a replay is the module refusing a value that is not positive.
    result = run_play(tmp_path, replay_play({"timeout": 0}))
    assert result.returncode == 2, result.stdout + result.stderr
    assert "timeout must be a positive number of seconds or hours, not 0" in result.stdout
    assert not (tmp_path / "facts.json").exists()
