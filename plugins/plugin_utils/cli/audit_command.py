# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""`gpufleet audit`: audit.yml through ansible-runner, a progress display fed by its events, then the audit's
terminal summary, and the audit's exit status (README, "Exit status and run status"; docs/cli.md): ansible-playbook's
0, 2 and 4, with 4 for whatever else audited nothing, and 128 + the signal (130 for Ctrl-C) for an interrupted run.

Runner artifacts go to <report root>/runner/artifacts/<ident>/ (ansible-runner's private data folder is
<report root>/runner; the newest RUNNER_KEEP are kept), never into the checkout.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
import os
import shlex
import signal
import sys

from ansible_collections.gpufleet.core.plugins.plugin_utils.audit.remediation import load_report as read_report
from ansible_collections.gpufleet.core.plugins.plugin_utils.cli.progress import AuditProgress, ProgressDisplay
from ansible_collections.gpufleet.core.plugins.plugin_utils.reports.terminal import render_terminal
from ansible_collections.gpufleet.core.plugins.plugin_utils.run_folder import run_stamp

# the exit statuses of the contract (audit.yml's; README "Exit status and run status")
EXIT_PASS = 0
EXIT_FINDINGS = 2
EXIT_NOT_DONE = 4
# a run stopped by a signal exits 128 + the signal, as a shell reports it: 130 for Ctrl-C, 143 for SIGTERM
EXIT_SIGNAL_BASE = 128
INTERRUPT_SIGNALS = (signal.SIGINT, signal.SIGTERM)
RUNNER_FOLDER = "runner"
RUNNER_KEEP = 20
# ansible-playbook's own message (ansible/cli/__init__.py) when --limit leaves no host: it exits 1, which
# the contract counts as "the run could not do its job" when it comes from the audit command
NO_HOSTS_MESSAGE = "leaves us with no hosts to target"
PLAYBOOK_IN_CHECKOUT = "audit.yml"
PLAYBOOK_IN_COLLECTION = "gpufleet.core.audit"
MAX_MESSAGES = 10


def add_parser(subparsers):
    parser = subparsers.add_parser(
        "audit", help="audit the fleet (audit.yml through ansible-runner)",
        description="Runs audit.yml through ansible-runner with a progress display, prints the audit's summary and "
                    "exits 0 (passed), 2 (findings at or above the fail severity) or 4 (the run could not do its job).")
    parser.add_argument("-i", "--inventory", action="append", default=[],
                        help="inventory file or folder (repeatable; default: ansible.cfg's)")
    parser.add_argument("-l", "--limit", help="audit only the hosts of this pattern (a partial run)")
    parser.add_argument("-e", "--extra-vars", action="append", default=[], metavar="VAR=VALUE",
                        help="extra variables, as ansible-playbook -e takes them (repeatable, @file allowed)")
    parser.add_argument("--textfile-dir", metavar="DIR",
                        help="node_exporter's textfile-collector directory (it must exist): a complete run of the "
                             "whole scope replaces gpufleet.prom there (gpufleet_textfile_dir; docs/monitoring.md)")
    parser.add_argument("--compress", action="store_true",
                        help="also write report.json.gz beside report.json (gpufleet_report_compress)")
    parser.add_argument("--progress", choices=["auto", "bar", "plain", "none"], default="auto",
                        help="progress display: auto (a bar on a terminal, plain lines otherwise), bar, plain, none")
    parser.add_argument("--keep-artifacts", type=int, default=RUNNER_KEEP, metavar="N",
                        help="runner artifact folders to keep under <report root>/runner (default: %d)" % RUNNER_KEEP)
    parser.set_defaults(handler=audit)
    return parser


def absolute_extra_var(value, cwd):
    """-e @file relative to where the command was started (the runner runs in the project folder)."""
    if value.startswith("@"):
        return "@" + os.path.join(cwd, value[1:])
    return value


def playbook_arguments(args, report_root, cwd):
    """ansible-playbook arguments besides the playbook and inventory: the user's -e, then the report root
    (last, so --report-root decides where the reports go) and --textfile-dir (relative to where the command was
    started)."""
    extra = []
    for value in args.extra_vars:
        extra += ["-e", absolute_extra_var(value, cwd)]
    extra += ["-e", json.dumps(dict({"gpufleet_report_dir": report_root}, **compress_vars(args)))]
    if getattr(args, "textfile_dir", None):
        extra += ["-e", json.dumps({"gpufleet_textfile_dir": os.path.join(cwd, args.textfile_dir)})]
    return extra


def compress_vars(args):
    return {"gpufleet_report_compress": True} if getattr(args, "compress", False) else {}


def runner_settings(args, checkout, report_root, cwd):
    """The keyword arguments of ansible_runner.run for this audit."""
    project = checkout or cwd
    # the ansible-playbook of this Python's environment first (a virtualenv's bin is often not on PATH under cron)
    envvars = {"ANSIBLE_NOCOLOR": "1",
               "PATH": os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", os.defpath)])}
    if checkout:
        envvars["ANSIBLE_CONFIG"] = os.path.join(checkout, "ansible.cfg")
    elif os.environ.get("ANSIBLE_CONFIG"):
        envvars["ANSIBLE_CONFIG"] = os.environ["ANSIBLE_CONFIG"]
    settings = {
        "private_data_dir": os.path.join(report_root, RUNNER_FOLDER),
        "project_dir": project,
        "playbook": PLAYBOOK_IN_CHECKOUT if checkout else PLAYBOOK_IN_COLLECTION,
        "cmdline": " ".join(shlex.quote(part) for part in playbook_arguments(args, report_root, cwd)),
        "envvars": envvars,
        "ident": "audit-%s-%d" % (run_stamp(), os.getpid()),
        "rotate_artifacts": max(args.keep_artifacts, 1),
        "suppress_env_files": True,
        "quiet": True,
    }
    if args.inventory:
        settings["inventory"] = [os.path.join(cwd, path) for path in args.inventory]
    if args.limit:
        settings["limit"] = args.limit
    return settings


def make_display(mode, stream):
    if mode == "none":
        return None
    tty = {"auto": None, "bar": True, "plain": False}[mode]
    return ProgressDisplay(stream, tty=tty)


def event_handler(progress, display):
    def handle(event):
        what = progress.handle(event)
        if display is not None:
            display.update(progress, what)
        return True
    return handle


def runner_stdout(runner):
    try:
        return runner.stdout.read()
    except (AttributeError, OSError, ValueError):
        return ""


def exit_status(rc, progress, stdout_text):
    """The audit's exit status: ansible-playbook's 0, 2 and 4 as they are, when the run wrote its report; its 1
    for a --limit that matched no host becomes 4 (nothing was audited); anything else stays ansible-playbook's
    own error."""
    if rc == 1 and progress.play == 0 and NO_HOSTS_MESSAGE in stdout_text:
        return EXIT_NOT_DONE
    # 0 and 2 are the audit's verdicts only when the audit wrote its report; ansible-playbook's own usage
    # error is a 2 too (argparse), and nothing was audited then
    if rc in (EXIT_PASS, EXIT_FINDINGS) and not progress.run_dir():
        return EXIT_NOT_DONE
    return rc


def child_process_groups():
    """Process groups of this process's children other than its own: ansible-runner starts ansible-playbook in a
    session of its own (a pseudo-terminal), which a Ctrl-C on this terminal does not reach."""
    own, groups = os.getpgrp(), set()
    try:
        tasks = os.listdir("/proc/self/task")
    except OSError:
        return groups
    for task in tasks:
        try:
            with open("/proc/self/task/%s/children" % task) as handle:
                children = handle.read().split()
        except OSError:
            continue
        for pid in children:
            try:
                groups.add(os.getpgid(int(pid)))
            except OSError:
                pass
    return groups - {own}


class Interruption(object):
    """Ctrl-C (SIGINT) or SIGTERM during the audit. The first is passed on to ansible-playbook as SIGINT, which
    stops it the way Ctrl-C stops it on a terminal (ansible-playbook exits 99); a second one, or a first when
    ansible-playbook cannot be found, has ansible-runner kill it (its cancel callback). Either way the audit
    reports the run as interrupted and exits 128 + the signal."""

    def __init__(self, pass_on=None):
        self.signal = None
        self.count = 0
        self.passed_on = False
        self._pass_on = pass_on or self.pass_on
        self._previous = {}

    @staticmethod
    def pass_on():
        groups = child_process_groups()
        for group in groups:
            try:
                os.killpg(group, signal.SIGINT)
            except OSError:
                pass
        return bool(groups)

    def handle(self, signum, _frame=None):
        self.count += 1
        if self.signal is None:
            self.signal = signum
            self.passed_on = self._pass_on()

    def cancel(self):
        """ansible-runner's cancel callback: True kills ansible-playbook's process group."""
        return self.count > 1 or (self.count == 1 and not self.passed_on)

    @property
    def exit_status(self):
        return EXIT_SIGNAL_BASE + self.signal

    def describe(self):
        return {signal.SIGINT: "Ctrl-C"}.get(self.signal, signal.Signals(self.signal).name)

    def __enter__(self):
        try:
            for signum in INTERRUPT_SIGNALS:
                self._previous[signum] = signal.signal(signum, self.handle)
        except ValueError:  # not the main thread: signals stay as they are
            pass
        return self

    def __exit__(self, *_exc):
        for signum, previous in self._previous.items():
            signal.signal(signum, previous)
        return False


def load_report(run_dir):
    try:
        return read_report(run_dir)
    except (OSError, ValueError):
        return None


def reason_lines(stdout_text):
    """ansible-playbook's own errors and warnings, and an argument parser's error, from its stdout."""
    return [line.strip() for line in stdout_text.splitlines()
            if "ERROR" in line or "WARNING" in line or ": error: " in line][:MAX_MESSAGES]


def summary_text(progress, stdout_text, status, interruption=None):
    """The audit's terminal summary from its report.json, or why there is none."""
    run_dir = progress.run_dir()
    report = load_report(run_dir) if run_dir else None
    lines = []
    if interruption is not None and interruption.signal is not None:
        lines.append("Interrupted (%s): the audit did not finish%s." % (
            interruption.describe(), "; its report was written before" if report is not None else
            ", and no report was written"))
    if report is not None:
        lines.append(render_terminal(report, run_dir=run_dir).rstrip("\n"))
    else:
        lines.append("No report was written by this run.")
    for host, message in sorted(progress.messages.items())[:MAX_MESSAGES]:
        lines.append("  %s: %s: %s" % (host, progress.verdicts.get(host), " ".join(message.split())))
    if len(progress.messages) > MAX_MESSAGES:
        lines.append("  ... and %d more host(s): see the runner's stdout" % (len(progress.messages) - MAX_MESSAGES))
    if status == EXIT_NOT_DONE and not progress.messages:
        reasons = reason_lines(stdout_text)
        lines += ["  " + line for line in reasons] or ["  ansible-playbook gave no reason: see the runner's stdout"]
    return "\n".join(lines) + "\n"


def verdict_line(status, interruption=None):
    if interruption is not None and interruption.signal is not None:
        return "gpufleet audit: exit %d - interrupted (%s) before the audit finished" % (
            status, interruption.describe())
    return {EXIT_PASS: "gpufleet audit: exit 0 - passed",
            EXIT_FINDINGS: "gpufleet audit: exit 2 - findings at or above the fail severity",
            EXIT_NOT_DONE: "gpufleet audit: exit 4 - the run could not do its job (see above)"}.get(
        status, "gpufleet audit: exit %s - ansible-playbook's own error (see the runner's stdout)" % status)


def audit(args, out=None):
    """Runs the audit; returns its exit status."""
    import ansible_runner  # here, so that the other commands work without it

    out = out or sys.stdout
    cwd = os.getcwd()
    report_root = args.report_root
    # 0700: ansible-runner records the whole environment of the run (its `command` file), store URL included
    os.makedirs(os.path.join(report_root, RUNNER_FOLDER), mode=0o700, exist_ok=True)
    settings = runner_settings(args, args.checkout, report_root, cwd)
    progress = AuditProgress()
    display = make_display(args.progress, out)
    with Interruption() as interruption:
        runner = ansible_runner.run(event_handler=event_handler(progress, display),
                                    cancel_callback=interruption.cancel, **settings)
    progress.interrupted = interruption.signal is not None
    if display is not None:
        display.finish(progress)
    stdout_text = runner_stdout(runner)
    status = interruption.exit_status if progress.interrupted else exit_status(runner.rc, progress, stdout_text)
    out.write(summary_text(progress, stdout_text, status, interruption))
    out.write("Runner artifacts: %s\n" % os.path.join(settings["private_data_dir"], "artifacts", settings["ident"]))
    out.write(verdict_line(status, interruption) + "\n")
    out.flush()
    return status
