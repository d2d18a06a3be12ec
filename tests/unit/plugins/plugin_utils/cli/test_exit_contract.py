"""The gpufleet command's exit contract (issue 25, section 1): a usage error is 4 ("could not do its job"), never
argparse's 2 ("findings"); an interrupted audit says so and exits 128 + the signal; an audit that exits 4 says
why."""

import io
import signal

import pytest

from ansible_collections.gpufleet.core.plugins.plugin_utils.cli import audit_command
from ansible_collections.gpufleet.core.plugins.plugin_utils.cli.audit_command import (
    Interruption, summary_text, verdict_line)
from ansible_collections.gpufleet.core.plugins.plugin_utils.cli.main import build_parser, main
from ansible_collections.gpufleet.core.plugins.plugin_utils.cli.progress import AuditProgress, ProgressDisplay


@pytest.mark.parametrize("argv, complaint", [
    ([], "the following arguments are required: COMMAND"),
    (["audit", "--no-such-option"], "unrecognized arguments: --no-such-option"),
    (["audit", "--progress", "sideways"], "argument --progress: invalid choice: 'sideways'"),
    (["audit", "--keep-artifacts", "many"], "argument --keep-artifacts: invalid int value: 'many'"),
    (["runs", "--no-such-option"], "unrecognized arguments: --no-such-option"),
    (["no-such-command"], "argument COMMAND: invalid choice: 'no-such-command'"),
])
def test_a_usage_error_exits_4_and_says_what_is_wrong(capsys, argv, complaint):
    with pytest.raises(SystemExit) as stopped:
        main(argv)
    assert stopped.value.code == audit_command.EXIT_NOT_DONE == 4
    error = capsys.readouterr().err
    assert error.startswith("usage: gpufleet") and complaint in error


def test_help_still_exits_0(capsys):
    with pytest.raises(SystemExit) as stopped:
        main(["audit", "--help"])
    assert stopped.value.code == 0 and "usage: gpufleet audit" in capsys.readouterr().out


def test_the_first_interrupt_is_passed_on_to_ansible_playbook_and_a_second_one_cancels():
    passed = []
    interruption = Interruption(pass_on=lambda: passed.append(True) or True)
    assert not interruption.cancel()
    interruption.handle(signal.SIGINT)
    assert passed == [True] and not interruption.cancel()
    interruption.handle(signal.SIGINT)
    assert passed == [True] and interruption.cancel()
    assert (interruption.exit_status, interruption.describe()) == (130, "Ctrl-C")


def test_an_interrupt_with_no_ansible_playbook_to_pass_it_to_cancels_at_once():
    interruption = Interruption(pass_on=lambda: False)
    interruption.handle(signal.SIGTERM)
    assert interruption.cancel() and (interruption.exit_status, interruption.describe()) == (143, "SIGTERM")


def test_the_handlers_are_installed_for_the_run_only():
    before = signal.getsignal(signal.SIGINT)
    with Interruption(pass_on=lambda: True) as interruption:
        assert signal.getsignal(signal.SIGINT) == interruption.handle
        assert signal.getsignal(signal.SIGTERM) == interruption.handle
    assert signal.getsignal(signal.SIGINT) == before


def test_an_interrupted_run_is_reported_as_interrupted_never_finished():
    progress = AuditProgress()
    progress.handle({"event": "playbook_on_play_start", "event_data": {}})
    progress.handle({"event": "runner_on_ok", "event_data": {"host": "h1", "task_action": "gpu_facts"}})
    progress.interrupted = True
    stream = io.StringIO()
    ProgressDisplay(stream, tty=False).finish(progress)
    assert stream.getvalue().endswith(", interrupted\n") and "finished" not in stream.getvalue()
    on_tty = io.StringIO()
    ProgressDisplay(on_tty, tty=True, width=200).finish(progress)
    assert on_tty.getvalue().rstrip("\n").endswith("interrupted")
    interruption = Interruption(pass_on=lambda: True)
    interruption.handle(signal.SIGINT)
    summary = summary_text(progress, "[ERROR]: User interrupted execution\n", 130, interruption)
    assert summary.splitlines()[0] == "Interrupted (Ctrl-C): the audit did not finish, and no report was written."
    assert verdict_line(130, interruption) == "gpufleet audit: exit 130 - interrupted (Ctrl-C) before the audit finished"


def test_an_exit_4_without_a_host_reason_shows_ansible_playbooks_own():
    progress = AuditProgress()
    summary = summary_text(progress, "PLAY [x]\nansible-playbook: error: argument -e: expected one argument\n", 4)
    assert "  ansible-playbook: error: argument -e: expected one argument" in summary.splitlines()
    assert summary_text(progress, "PLAY RECAP\n", 4).splitlines()[-1] == (
        "  ansible-playbook gave no reason: see the runner's stdout")


def test_compress_asks_the_audit_for_report_json_gz():
    args = build_parser().parse_args(["audit", "--compress", "-e", "x=1"])
    assert audit_command.playbook_arguments(args, "/r", "/w") == [
        "-e", "x=1", "-e", '{"gpufleet_report_dir": "/r", "gpufleet_report_compress": true}']
    plain = build_parser().parse_args(["audit"])
    assert audit_command.playbook_arguments(plain, "/r", "/w") == ["-e", '{"gpufleet_report_dir": "/r"}']
