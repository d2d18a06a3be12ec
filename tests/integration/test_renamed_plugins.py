"""A plugin renamed for one name per concept keeps working under its old name, deprecated (meta/runtime.yml
plugin_routing): the module load_step is gpufleet.core.loadstep, as the loadstep playbook, the loadstep/ wing and
loadstep_report; the filter mig_desired is gpufleet.core.desired_mig_layout, as the MIG layout it gives
(issue 26). An option renamed keeps its old name as a deprecated alias: driver_rollout's report_dir is report_root."""

import os
import subprocess
import sys

import yaml

from tests.support.driver_plan_builders import policy

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PLAYBOOK_BIN = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")


def run_check_mode(tmp_path, play):
    playbook = tmp_path / "play.yml"
    playbook.write_text(yaml.safe_dump(play, sort_keys=False))
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_DEPRECATION_WARNINGS="true")
    argv = [PLAYBOOK_BIN, "-i", "localhost,", "-c", "local", "--check", "-e",
            "ansible_python_interpreter=%s" % sys.executable, str(playbook)]
    return subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)


def test_the_old_module_name_runs_loadstep_with_a_deprecation_warning(tmp_path):
    play = [{
        "hosts": "localhost",
        "gather_facts": False,
        # the group reaches the module under its old name too
        "module_defaults": {"group/gpufleet.core.gpufleet": {"interval": 2.5}},
        "tasks": [
            {"name": "The plan of one idle step", "gpufleet.core.load_step": {"duration": 5}, "register": "old"},
            {"name": "Keep it", "ansible.builtin.copy": {
                "content": "{{ old.plan | to_json }}", "dest": "{{ playbook_dir }}/plan.json", "mode": "0600"},
                "check_mode": False},
        ],
    }]
    result = run_check_mode(tmp_path, play)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert "gpufleet.core.load_step has been deprecated. The module is named gpufleet.core.loadstep" in output
    assert "removed from collection 'gpufleet.core' version 2.0.0" in output
    plan = yaml.safe_load((tmp_path / "plan.json").read_text())
    assert (plan["seconds"], plan["interval"], plan["argv"]) == (5, 2.5, [])


def test_the_playbooks_call_the_module_by_its_name():
    for path in ("loadstep.yml", os.path.join("tasks", "loadstep_step.yml")):
        with open(os.path.join(ROOT, "playbooks", path)) as handle:
            text = handle.read()
        assert "gpufleet.core.loadstep:" in text, path
        assert "gpufleet.core.load_step:" not in text, path


def test_the_old_filter_name_gives_the_desired_mig_layout_with_a_deprecation_warning(tmp_path):
    play = [{
        "hosts": "localhost",
        "gather_facts": False,
        "tasks": [{"name": "Keep the layout", "ansible.builtin.copy": {
            "content": "{{ {'gpus': []} | gpufleet.core.mig_desired({'mig': {'config': none, 'selected': 'x'}})"
                       " | to_json }}",
            "dest": "{{ playbook_dir }}/layout.json", "mode": "0600"}, "check_mode": False}],
    }]
    result = run_check_mode(tmp_path, play)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert ('"gpufleet.core.mig_desired" has been deprecated. The filter is named gpufleet.core.desired_mig_layout'
            in output)
    layout = yaml.safe_load((tmp_path / "layout.json").read_text())
    assert layout == {"selected": "x", "gpus": [], "profiles": None, "models": {}}


def test_the_mig_layout_role_calls_the_filter_by_its_name():
    with open(os.path.join(ROOT, "roles", "mig_layout", "tasks", "main.yml")) as handle:
        text = handle.read()
    assert "gpufleet.core.desired_mig_layout(" in text
    assert "mig_desired(" not in text


def test_the_old_rollout_option_report_dir_still_names_the_report_root_with_a_deprecation_warning(tmp_path):
    policies = {"p0": policy(pin="550.127.05")}
    play = [{
        "hosts": "localhost",
        "gather_facts": False,
        "tasks": [
            {"name": "Plan under the old option name", "gpufleet.core.driver_rollout": {
                "step": "plan", "hosts": ["localhost"], "policies": policies, "host_policy": {"localhost": "p0"},
                "report_dir": str(tmp_path / "reports")}, "register": "planned"},
            {"name": "Keep the plan", "ansible.builtin.copy": {
                "content": "{{ planned | to_json }}", "dest": "{{ playbook_dir }}/plan.json", "mode": "0600"},
                "check_mode": False},
        ],
    }]
    result = run_check_mode(tmp_path, play)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert "Alias 'report_dir' is deprecated" in output
    assert "removed from collection 'gpufleet.core' version 2.0.0" in output
    planned = yaml.safe_load((tmp_path / "plan.json").read_text())
    assert os.path.dirname(planned["run_dir"]) == str(tmp_path / "reports")


def test_the_rollout_playbook_passes_the_report_root_by_its_name():
    with open(os.path.join(ROOT, "playbooks", "driver_rollout.yml")) as handle:
        text = handle.read()
    assert "report_root: \"{{ gpufleet_report_dir" in text
    assert "report_dir:" not in text
