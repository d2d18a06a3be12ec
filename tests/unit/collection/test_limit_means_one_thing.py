"""--limit means the same in every playbook that audits: the audit's scope is its pattern (gpufleet_audit_hosts,
default all), and --limit narrows the hosts targeted inside it, which makes the run partial (README, "Exit status
and run status"). A playbook that took --limit as its scope would call a one-host run complete, move
reports/latest to it and drop every other host's series from gpufleet.prom."""

import glob
import os

import pytest
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
AUDIT_TASKS = ("tasks/audit.yml", "tasks/audit_run.yml")
AUDIT_PATTERN = "{{ gpufleet_audit_hosts | default('all') }}"


def auditing_plays():
    plays = []
    for path in sorted(glob.glob(os.path.join(ROOT, "playbooks", "*.yml"))):
        with open(path, encoding="utf-8") as stream:
            for play in yaml.safe_load(stream) or ():
                if any(task.get("ansible.builtin.import_tasks") in AUDIT_TASKS for task in play.get("tasks") or ()):
                    plays.append((os.path.basename(path), play))
    return plays


def test_every_playbook_that_audits_is_found():
    assert sorted({name for name, _play in auditing_plays()}) == [
        "audit.yml", "incident.yml", "loadstep.yml", "quarantine.yml", "remediate.yml", "validate.yml"]


@pytest.mark.parametrize("name,play", auditing_plays(), ids=lambda value: value if isinstance(value, str) else "")
def test_the_audits_scope_is_its_pattern_never_the_limit(name, play):
    assert play["hosts"] == AUDIT_PATTERN, name
    assert "gpufleet_audit_hosts" not in (play.get("vars") or {}), name
    assert "ansible_limit" not in yaml.safe_dump(play.get("vars") or {}), name
