"""One deadline for every command, whatever the command does: real processes through run_bounded."""

import os
import signal
import sys
import time

import pytest

from ansible_collections.gpufleet.core.plugins.module_utils import collector
from ansible_collections.gpufleet.core.plugins.module_utils.host_io import (
    DeadlineHost, LiveHost, ReplayHost, run_bounded)
from ansible_collections.gpufleet.core.plugins.module_utils.kernel_log import collect_kernel_log
from ansible_collections.gpufleet.core.plugins.module_utils.facts_model import new_facts

# run_bounded gives a command at most its timeout, then up to REAP_SECONDS to die, plus scheduling
MARGIN = 1.5


def script(tmp_path, name, body):
    path = tmp_path / name
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return str(path)


def pid_alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open("/proc/%d/stat" % pid) as handle:
        return handle.read().split(") ", 1)[1][0] != "Z"


def wait_dead(pid, seconds=3.0):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if not pid_alive(pid):
            return True
        time.sleep(0.05)
    return False


def timed(call, *args, **kwargs):
    started = time.monotonic()
    result = call(*args, **kwargs)
    return result, time.monotonic() - started


def test_a_quick_command_answers_with_its_status_and_output(tmp_path):
    command = script(tmp_path, "quick", 'echo "out"; echo "err" >&2; exit 3\n')
    result = run_bounded([command], 5)
    assert (result.rc, result.stdout, result.stderr, result.timed_out) == (3, "out\n", "err\n", False)


def test_a_missing_program_is_reported_as_missing(tmp_path):
    result = run_bounded([str(tmp_path / "absent")], 5)
    assert result.missing and result.rc is None


def test_a_child_holding_stdout_open_after_the_command_exited_costs_no_more_than_the_drain(tmp_path):
    pid_file = tmp_path / "child.pid"
    command = script(tmp_path, "forks", 'sleep 60 & echo $! > "%s"; echo "partial"; exit 0\n' % pid_file)
    result, took = timed(run_bounded, [command], 10)
    assert took < 2.0
    assert result.rc == 0 and result.stdout == "partial\n"
    assert wait_dead(int(pid_file.read_text())), "the child in the command's group was not killed"


def test_a_hung_command_and_its_children_are_killed_at_the_deadline_and_the_output_kept(tmp_path):
    pid_file = tmp_path / "child.pid"
    command = script(tmp_path, "hangs", 'sleep 60 & echo $! > "%s"; echo "so far"; wait\n' % pid_file)
    result, took = timed(run_bounded, [command], 1)
    assert took < 1 + MARGIN
    assert result.timed_out and result.rc is None and result.stdout == "so far\n"
    assert result.describe_failure() == "timed out and was killed"
    assert wait_dead(int(pid_file.read_text()))


def test_a_command_that_ignores_sigterm_is_still_stopped(tmp_path):
    command = script(tmp_path, "stubborn", "trap '' TERM HUP INT; echo started; while :; do sleep 0.1; done\n")
    result, took = timed(run_bounded, [command], 1)
    assert took < 1 + MARGIN
    assert result.timed_out and result.stdout == "started\n"


def test_a_child_that_left_the_group_and_holds_the_pipe_does_not_hold_the_collection(tmp_path):
    """setsid puts the child beyond the group kill: reading must stop at the deadline anyway."""
    pid_file = tmp_path / "escaped.pid"
    escaper = script(tmp_path, "escaper", 'echo $$ > "%s"; exec sleep 30\n' % pid_file)
    command = script(tmp_path, "leaves", '%s -c \'import os, sys; os.setsid(); os.execv("%s", ["%s"])\' &\n'
                                         'echo "before"; sleep 30\n' % (sys.executable, escaper, escaper))
    try:
        result, took = timed(run_bounded, [command], 1)
        assert took < 1 + MARGIN
        assert result.timed_out and result.stdout == "before\n"
    finally:
        if pid_file.exists():
            os.kill(int(pid_file.read_text()), signal.SIGKILL)


def test_a_process_that_cannot_be_killed_is_left_behind_at_the_deadline(tmp_path):
    """A process in uninterruptible sleep (nvidia-smi on a GPU off the bus) ignores even SIGKILL until
    the kernel lets it go. Here the kill is withheld, so the command really stays alive and unreaped
    with its pipes open, as such a process does; the collection returns anyway and says so."""
    withheld = []
    command = script(tmp_path, "d-state", "echo 'stuck'; exec sleep 30\n")
    result, took = timed(run_bounded, [command], 1, kill_group=lambda pgid, sig: withheld.append(pgid))
    try:
        assert took < 1 + MARGIN
        assert result.timed_out and result.rc is None and result.stdout == "stuck\n"
        assert withheld and pid_alive(withheld[0])
    finally:
        for pgid in withheld:
            os.killpg(pgid, signal.SIGKILL)


def test_output_past_the_limit_stops_the_command(tmp_path):
    command = script(tmp_path, "floods", "yes gpufleet\n")
    result, took = timed(run_bounded, [command], 10, max_output=100000)
    assert took < 5
    assert result.timed_out and len(result.stdout) == 100000
    assert "output exceeded 100000 bytes" in result.stderr


def test_invalid_utf8_in_the_output_costs_only_those_bytes(tmp_path):
    command = script(tmp_path, "bytes", "printf 'ok \\377\\376 end\\n'\n")
    result = run_bounded([command], 5)
    assert result.stdout == u"ok \ufffd\ufffd end\n"


def test_commands_after_the_collection_deadline_are_not_started(tmp_path):
    marker = tmp_path / "ran"
    command = script(tmp_path, "late", 'touch "%s"\n' % marker)
    host = DeadlineHost(LiveHost(find_bin=lambda name: None), time.monotonic() - 1)
    result = host.run([command], 10)
    assert result.timed_out and not marker.exists()
    assert "collection timeout was reached" in result.stderr


def test_the_deadline_shortens_a_command_timeout(tmp_path):
    command = script(tmp_path, "slow", "exec sleep 30\n")
    host = DeadlineHost(LiveHost(find_bin=lambda name: None), time.monotonic() + 1)
    result, took = timed(host.run, [command], 20)
    assert result.timed_out and took < 1 + MARGIN


def test_the_whole_collection_keeps_its_timeout_when_every_command_hangs(tmp_path):
    """nvidia-smi and journalctl both hang with children holding their pipes: the collection still ends
    within its timeout, with the host facts it could read and an error for each command."""
    hang = 'sleep 60 & echo "partial output"; wait\n'
    bins = {"nvidia-smi": script(tmp_path, "nvidia-smi", hang), "journalctl": script(tmp_path, "journalctl", hang),
            "dmesg": script(tmp_path, "dmesg", hang), "systemctl": script(tmp_path, "systemctl", hang)}
    host = LiveHost(find_bin=bins.get)
    collection = collector.Collection(source="nvidia_smi", timeout=3, command_timeout=20, host=host)
    facts, took = timed(lambda: collection.run()[0])
    assert took < 3 + MARGIN
    assert facts["host"]["kernel"] == open("/proc/sys/kernel/osrelease").read().strip()
    calls = [error["call"] for error in facts["errors"]]
    assert "nvidia-smi -q -x" in calls
    assert any(call.startswith("journalctl") for call in calls)
    assert facts["collection"]["status"] == "failed"
    assert any("nvidia-smi" in reason for reason in facts["collection"]["reasons"])


def test_a_replayed_host_ignores_the_deadline_wrapper_for_reads():
    host = DeadlineHost(ReplayHost({"files": {"/proc/uptime": "5 5"}}), time.monotonic() - 10)
    assert host.read_text("/proc/uptime") == "5 5"
    facts = new_facts()
    assert collect_kernel_log(host, facts, source="journalctl") == "none"


@pytest.mark.parametrize("timeout", [0, -1])
def test_no_time_left_means_no_start(tmp_path, timeout):
    marker = tmp_path / "ran"
    command = script(tmp_path, "late", 'touch "%s"\n' % marker)
    result = run_bounded([command], timeout)
    assert result.timed_out


def test_the_module_answers_within_its_timeout_when_the_commands_hang(tmp_path, monkeypatch, capsys):
    """The gpu_facts module itself, with an nvidia-smi whose child holds the pipe and a journalctl that
    ignores SIGTERM: it returns valid JSON within its timeout, the facts it could read and the reasons."""
    import json  # pylint: disable=import-outside-toplevel
    from ansible.module_utils.testing import patch_module_args  # pylint: disable=import-outside-toplevel
    from ansible_collections.gpufleet.core.plugins.modules import gpu_facts  # pylint: disable=import-outside-toplevel
    from tests.support.schema_check import assert_valid_facts  # pylint: disable=import-outside-toplevel
    folder = tmp_path / "bin"
    folder.mkdir()
    script(folder, "nvidia-smi", "sleep 60 & echo '<?xml version=\"1.0\" ?>'; wait\n")
    script(folder, "journalctl", "trap '' TERM; sleep 60\n")
    script(folder, "dmesg", "sleep 60\n")
    monkeypatch.setenv("PATH", "%s:%s" % (folder, os.environ["PATH"]))
    started = time.monotonic()
    with patch_module_args({"source": "nvidia_smi", "timeout": 2, "gather_subset": ["all", "!host"]}):
        with pytest.raises(SystemExit):
            gpu_facts.main()
    took = time.monotonic() - started
    facts = json.loads(capsys.readouterr().out)["ansible_facts"]["gpufleet"]
    assert took < 2 + MARGIN
    assert_valid_facts(facts)
    assert facts["collection"]["status"] == "failed"
    assert any(reason.startswith("nvidia-smi -q -x: timed out") for reason in facts["collection"]["reasons"])
    assert any("collection timeout of 2s was reached" in reason for reason in facts["collection"]["reasons"])
