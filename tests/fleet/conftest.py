"""Fixtures for the tests that run on the simulated fleet (see README.md beside this file).

`make test-fleet` brings the fleet up before pytest and takes it down after. Run alone,
`pytest tests/fleet` brings it up itself when it is not running and takes it down at the end
(FLEET_KEEP=1 leaves it running). FLEET_HOSTS and FLEET_SCENARIO choose what a self-started fleet runs.

The `fleet` fixture is the entry point:

    def test_something(fleet):
        fleet.hosts                                   # ["fleet-01", ...]
        fleet.ssh("fleet-01", "systemctl is-active inference")          # a CompletedProcess
        fleet.ansible("fleet", "ansible.builtin.ping").result("fleet-01")  # Ansible's result dict
        run = fleet.playbook("playbooks/remediate.yml", limit="fleet-02", check=True, diff=True)
        run.rc, run.stats["fleet-02"]["changed"], run.changed_tasks("fleet-02"), run.output()

ansible and ansible-playbook run through ansible-runner (a project dependency), so every task result
is available as data, and run.stdout holds the usual screen output.
"""

import json
import os
import shlex
import shutil
import sys
import tempfile

import ansible_runner
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fleet as fleet_module  # noqa: E402  (the directory is not a package)

ROOT = str(fleet_module.REPO_ROOT)
BIN = os.path.dirname(sys.executable)

# ansible-runner finds ansible and ansible-playbook on this PATH: the ones beside the running Python.
ANSIBLE_ENV = {"ANSIBLE_CONFIG": os.path.join(ROOT, "ansible.cfg"), "ANSIBLE_NOCOLOR": "1",
               "ANSIBLE_FORCE_COLOR": "0", "ANSIBLE_HOST_KEY_CHECKING": "False",
               "ANSIBLE_RETRY_FILES_ENABLED": "0", "PATH": BIN + os.pathsep + os.environ.get("PATH", "")}

# The cached root filesystem holds a whole Debian system, test_*.py files of its Python included.
collect_ignore = ["work"]


class AnsibleRun:
    """One ansible or ansible-playbook run through ansible-runner: exit status, output and every event."""

    def __init__(self, runner):
        self.argv = list(runner.config.command)
        self.rc = runner.rc
        self.status = runner.status
        self.stdout = runner.stdout.read()
        self.events = list(runner.events)
        self.stats = per_host_stats(runner.stats or {})

    def results(self, task=None):
        """{host: result} of the task named `task` (the last task run on each host when None).

        A result is Ansible's own dict (changed, failed, msg, ansible_facts, diff...) plus `_event`:
        ok, failed, skipped or unreachable."""
        found = {}
        for event in self.events:
            kind = event.get("event", "")
            data = event.get("event_data", {})
            if kind in RESULT_EVENTS and (task is None or data.get("task") == task):
                found[data["host"]] = dict(data.get("res") or {}, _event=RESULT_EVENTS[kind])
        if not found:
            raise AssertionError("no result for task %r in this run:\n%s" % (task, self.output()))
        return found

    def result(self, host, task=None):
        return self.results(task)[host]

    def changed_tasks(self, host):
        """Names of the tasks that reported a change on this host, in order."""
        return [event["event_data"]["task"] for event in self.events
                if event.get("event") == "runner_on_ok" and event["event_data"].get("host") == host
                and (event["event_data"].get("res") or {}).get("changed")]

    def output(self, limit=8000):
        return ("$ %s (exit %s, %s)\n%s" % (" ".join(self.argv), self.rc, self.status, self.stdout))[-limit:]


RESULT_EVENTS = {"runner_on_ok": "ok", "runner_on_failed": "failed", "runner_on_skipped": "skipped",
                 "runner_on_unreachable": "unreachable"}
STAT_NAMES = {"ok": "ok", "changed": "changed", "failures": "failed", "dark": "unreachable",
              "skipped": "skipped", "rescued": "rescued", "ignored": "ignored"}


def per_host_stats(stats):
    """ansible-runner's {category: {host: count}} as {host: {ok, changed, failed, unreachable, ...}}."""
    hosts = set()
    for counts in stats.values():
        hosts.update(counts or {})
    return {host: {name: (stats.get(category) or {}).get(host, 0) for category, name in STAT_NAMES.items()}
            for host in hosts}


class Fleet:
    """The running fleet: its hosts, ssh into them, ansible and ansible-playbook against them."""

    def __init__(self):
        state = fleet_module.read_fleet_state()
        self.inventory = str(fleet_module.INVENTORY)
        self.scenario = state["scenario"]
        self.hosts = list(state["hosts"])
        self.key = str(fleet_module.KEY)

    def recreate(self):
        """Every host rebuilt fresh from the scenario (a few seconds), for a test that needs the start state."""
        self.use_scenario(self.scenario)

    def use_scenario(self, name):
        """Every host rebuilt fresh from another scenario (tests/fleet/scenarios/<name>.json)."""
        with fleet_module.fleet_lock():
            fleet_module.up(len(self.hosts), name, fresh=True)
        self.scenario = name

    def port(self, host):
        return fleet_module.Host.named(host).port

    def ssh(self, host, command, timeout=60, check=False):
        """Runs a shell command as root on a host; check=True fails the test on a non-zero exit."""
        result = fleet_module.ssh(fleet_module.Host.named(host), command, timeout=timeout)
        if check and result.returncode != 0:
            raise AssertionError("%s: %r exited %d\n%s%s" % (host, command, result.returncode,
                                                             result.stdout, result.stderr))
        return result

    def _run(self, options, limit, extra_vars, check, diff, extra_args, timeout):
        cmdline = list(extra_args) + (["--check"] if check else []) + (["--diff"] if diff else [])
        if limit:
            cmdline += ["--limit", limit if isinstance(limit, str) else ",".join(limit)]
        private_dir = tempfile.mkdtemp(prefix="ansible-run-")
        try:
            runner = ansible_runner.run(
                private_data_dir=private_dir, project_dir=ROOT, inventory=self.inventory,
                extravars=extra_vars or None, cmdline=" ".join(shlex.quote(arg) for arg in cmdline) or None,
                envvars=ANSIBLE_ENV, quiet=True, timeout=timeout, **options)
            return AnsibleRun(runner)
        finally:
            shutil.rmtree(private_dir, ignore_errors=True)

    def ansible(self, pattern, module, args=None, limit=None, extra_vars=None, check=False, diff=False,
                extra_args=(), timeout=300):
        """`ansible PATTERN -m MODULE -a ARGS` on the fleet; args may be key=value text or a dict."""
        if isinstance(args, dict):
            args = json.dumps(args)
        options = {"host_pattern": pattern, "module": module, "module_args": args}
        return self._run(options, limit, extra_vars, check, diff, extra_args, timeout)

    def playbook(self, playbook, limit=None, extra_vars=None, check=False, diff=False, extra_args=(),
                 timeout=600):
        """`ansible-playbook PLAYBOOK` on the fleet; a relative path is taken from the repository root."""
        options = {"playbook": os.path.join(ROOT, playbook)}
        return self._run(options, limit, extra_vars, check, diff, extra_args, timeout)


def fleet_is_up():
    return fleet_module.fleet_status()[0]


@pytest.fixture(scope="session")
def fleet():
    """The running fleet; started here (and stopped at the end) when it was not up already."""
    started_here = False
    if not fleet_is_up():
        if os.geteuid() != 0:
            pytest.fail("the fleet is not running and only root can start it: run 'make fleet-up' as root")
        try:
            with fleet_module.fleet_lock():
                fleet_module.up(int(os.environ.get("FLEET_HOSTS", fleet_module.DEFAULT_HOSTS)),
                                os.environ.get("FLEET_SCENARIO", fleet_module.DEFAULT_SCENARIO))
        except fleet_module.FleetError as error:
            pytest.fail("the fleet did not come up: %s" % error)
        started_here = True
    yield Fleet()
    if started_here and not os.environ.get("FLEET_KEEP"):
        with fleet_module.fleet_lock():
            fleet_module.down()


@pytest.fixture(scope="session")
def fleet_inventory(fleet):
    """Path of the fleet's inventory, for tests that build their own command lines."""
    return fleet.inventory


def scenario_host(fleet, unit):
    """The first host whose scenario installs the unit."""
    hosts = fleet_module.load_scenario(fleet.scenario).get("hosts", {})
    found = [name for name in fleet.hosts if unit in (hosts.get(name) or {}).get("units", [])]
    assert found, "scenario %s has no host with %s" % (fleet.scenario, unit)
    return found[0]


def unit_properties(fleet, host, unit, *names):
    """{property: value} of `systemctl show` for a unit on a host."""
    shown = fleet.ssh(host, "systemctl show --property=%s -- %s" % (",".join(names), unit), check=True).stdout
    return dict(line.split("=", 1) for line in shown.splitlines() if "=" in line)
