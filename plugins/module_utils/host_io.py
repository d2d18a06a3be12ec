# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Everything the collectors read from the host goes through one of these objects.

LiveHost reads the real host. RecordingHost wraps it and keeps every answer, so a
fixture recorded on a GPU server can be replayed anywhere by ReplayHost. Collectors
receive the object as an argument and never touch files or processes directly,
which is what lets tests feed recorded outputs through the real parsing code.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os
import selectors
import signal
import subprocess
import time


class CommandResult:
    """Outcome of one external command. rc is None when it could not run or timed out."""

    def __init__(self, rc, stdout="", stderr="", timed_out=False, missing=False):
        self.rc = rc
        self.stdout = stdout
        self.stderr = stderr
        self.timed_out = timed_out
        self.missing = missing

    def to_dict(self):
        return {"rc": self.rc, "stdout": self.stdout, "stderr": self.stderr,
                "timed_out": self.timed_out, "missing": self.missing}

    @classmethod
    def from_dict(cls, data):
        return cls(data.get("rc"), data.get("stdout", ""), data.get("stderr", ""),
                   data.get("timed_out", False), data.get("missing", False))

    def describe_failure(self):
        if self.missing:
            return "command not found"
        if self.timed_out:
            return "timed out and was killed"
        detail = (self.stderr or self.stdout or "").strip().splitlines()
        if self.rc is None:
            return detail[0][:300] if detail else "could not be run"
        return "exit status %s%s" % (self.rc, (": " + detail[0][:300]) if detail else "")


def command_key(argv):
    """Commands are keyed by program name and arguments, not by where the program lives."""
    return " ".join([os.path.basename(argv[0])] + [str(a) for a in argv[1:]])


class LiveHost:
    """Reads the real host. find_bin is AnsibleModule.get_bin_path (or a stand-in), which searches PATH
    and the sbin folders; commands run through run_bounded."""

    def __init__(self, find_bin, now=None, runner=None):
        self._find_bin = find_bin
        self._now = now
        self._runner = runner or run_bounded

    def now(self):
        return self._now if self._now is not None else time.time()

    def find_bin(self, name):
        return self._find_bin(name)

    def euid(self):
        """The effective user id the collection runs as (0: root)."""
        return os.geteuid()

    def read_text(self, path, limit=None):
        """The file's text, or None when it does not exist or cannot be read. Bytes that are not
        UTF-8 become U+FFFD: a damaged file costs its own value, never the facts' JSON."""
        try:
            with open(path, "rb") as handle:
                data = handle.read(limit) if limit else handle.read()
        except (IOError, OSError):
            return None
        return data.decode("utf-8", "replace")

    def listdir(self, path):
        """Sorted entries of a folder, or None when it does not exist."""
        try:
            return sorted(os.listdir(path))
        except (IOError, OSError):
            return None

    def run(self, argv, timeout):
        """Runs argv without a shell; see run_bounded."""
        return self._runner(argv, timeout)


# What one command may print before it is stopped: a kernel log is large, never this large.
MAX_COMMAND_OUTPUT = 64 * 1024 * 1024
# After the command exited, how long a child of it that still holds the pipes open is waited for.
EXIT_DRAIN_SECONDS = 0.5
# After the kill, how long the process is waited for before it is left behind unreaped
# (a process in uninterruptible sleep, a GPU off the bus, cannot die until the kernel lets it).
REAP_SECONDS = 0.5
_C_LOCALE = {"LC_ALL": "C", "LANG": "C"}


def run_bounded(argv, timeout, max_output=MAX_COMMAND_OUTPUT, kill_group=None):
    """Runs argv in a session (process group) of its own and returns within about timeout seconds,
    whatever the command does: at the deadline the whole group is killed and reading stops, even when
    a child that left the group still holds the pipes open or the process cannot be reaped; what it
    printed until then is kept in the result. kill_group(pgid, signal) stands in for os.killpg."""
    if timeout <= 0:
        return CommandResult(None, "", "not started: no time left", timed_out=True)
    deadline = time.monotonic() + timeout
    try:
        # not AnsibleModule.run_command: it reads until the pipes close, which a child holding them never
        # lets happen, and it waits for the process, which one stuck in the kernel never ends
        process = subprocess.Popen(  # pylint: disable=ansible-bad-function
            argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            close_fds=True, start_new_session=True, env=_command_environment())
    except FileNotFoundError as exc:
        return CommandResult(None, "", str(exc), missing=True)
    except (IOError, OSError, ValueError) as exc:
        # there but not runnable: not executable, not a program for this machine
        return CommandResult(None, "", "cannot be run: %s" % exc)
    streams = _read_until(process, deadline, max_output)
    stopped = streams.pop("stopped")
    rc = process.poll()
    if stopped == "eof" and rc is None:
        # it closed its output but still runs: it has until the deadline to exit
        rc = _reap(process, deadline - time.monotonic())
    # whatever ran in its group (children holding the pipes, a command past its deadline) ends now
    _signal_group(kill_group or os.killpg, process.pid)
    if rc is None:
        rc = _reap(process, REAP_SECONDS)
    stdout, stderr = (_decode(streams[name]) for name in ("stdout", "stderr"))
    if stopped == "overflow":
        return CommandResult(None, stdout, "output exceeded %d bytes; stopped" % max_output, timed_out=True)
    if stopped == "deadline" or rc is None:
        return CommandResult(None, stdout, stderr, timed_out=True)
    return CommandResult(rc, stdout, stderr)


def _command_environment():
    environment = dict(os.environ)
    environment.update(_C_LOCALE)
    return environment


def _read_until(process, deadline, max_output):
    """Reads both pipes without blocking until both reach end of file ("eof"), the deadline passes
    ("deadline"), the output grows past max_output ("overflow"), or the command exited and a child
    keeps its pipes open past EXIT_DRAIN_SECONDS ("exited")."""
    chunks = {"stdout": [], "stderr": []}
    sizes = {"stdout": 0, "stderr": 0}
    selector = selectors.DefaultSelector()
    for name in ("stdout", "stderr"):
        stream = getattr(process, name)
        os.set_blocking(stream.fileno(), False)
        selector.register(stream, selectors.EVENT_READ, name)
    stopped, drain_until = "eof", None
    try:
        while selector.get_map():
            now = time.monotonic()
            if now >= deadline:
                stopped = "deadline"
                break
            if drain_until is None and process.poll() is not None:
                drain_until = now + EXIT_DRAIN_SECONDS
            if drain_until is not None and now >= drain_until:
                stopped = "exited"
                break
            limit = min(deadline, drain_until) if drain_until is not None else deadline
            for key, _events in selector.select(min(0.1, max(0.0, limit - now))):
                data = _read_chunk(key.fileobj)
                if data is None:
                    continue
                if not data:
                    selector.unregister(key.fileobj)
                    continue
                chunks[key.data].append(data)
                sizes[key.data] += len(data)
            if sizes["stdout"] + sizes["stderr"] > max_output:
                stopped = "overflow"
                break
    finally:
        selector.close()
        for name in ("stdout", "stderr"):
            getattr(process, name).close()
    result = {name: b"".join(parts)[:max_output] for name, parts in chunks.items()}
    result["stopped"] = stopped
    return result


def _read_chunk(stream):
    """The next bytes of a pipe; b"" at end of file; None when nothing is there yet."""
    try:
        return os.read(stream.fileno(), 65536)
    except BlockingIOError:
        return None
    except (IOError, OSError):
        return b""


def _signal_group(kill_group, pgid):
    try:
        kill_group(pgid, signal.SIGKILL)
    except (IOError, OSError):
        pass  # the group is already gone


def _reap(process, seconds):
    """The exit status, or None when the process did not end within seconds (it is left behind)."""
    try:
        return process.wait(timeout=max(0.0, seconds))
    except subprocess.TimeoutExpired:
        return None


def _decode(data):
    return data.decode("utf-8", "replace")


class DeadlineHost:
    """A host whose commands share one deadline: each runs at most until then, and a command asked for
    after it is not started. Everything else passes through."""

    def __init__(self, inner, deadline):
        self._inner = inner
        self._deadline = deadline

    def __getattr__(self, name):
        return getattr(self._inner, name)

    def run(self, argv, timeout):
        remaining = self._deadline - time.monotonic()
        if remaining <= 0:
            return CommandResult(None, "", "not started: the collection timeout was reached", timed_out=True)
        return self._inner.run(argv, min(timeout, remaining))


def module_host(module, nvidia_smi=None):
    """The LiveHost of a module; nvidia_smi (a path) stands in for the one found on PATH."""
    def find_bin(name):
        if name == "nvidia-smi" and nvidia_smi:
            return nvidia_smi
        return module.get_bin_path(name, required=False)
    return LiveHost(find_bin=find_bin)


def nvidia_smi_module_host(module):
    """(nvidia-smi path, LiveHost) of a module with the options nvidia_smi and timeout; fails the module
    on a timeout that is not positive and when no nvidia-smi is found."""
    if module.params["timeout"] <= 0:
        module.fail_json(msg="timeout must be a positive number of seconds, not %s" % module.params["timeout"])
    nvidia_smi = module.params["nvidia_smi"] or module.get_bin_path("nvidia-smi", required=True)
    return nvidia_smi, module_host(module, nvidia_smi)


class RecordingHost:
    """Passes every call to an inner host and keeps the answers for a fixture."""

    def __init__(self, inner):
        self._inner = inner
        self.files = {}
        self.dirs = {}
        self.commands = {}
        self.bins = {}
        self.recorded_euid = None

    def now(self):
        return self._inner.now()

    def find_bin(self, name):
        path = self._inner.find_bin(name)
        self.bins[name] = path
        return path

    def read_text(self, path, limit=None):
        text = self._inner.read_text(path, limit)
        self.files[path] = text
        return text

    def euid(self):
        self.recorded_euid = self._inner.euid()
        return self.recorded_euid

    def record_file(self, path, text):
        """Keep text as the recorded content of path (a reader that needs only part of a file)."""
        self.files[path] = text

    def listdir(self, path):
        entries = self._inner.listdir(path)
        self.dirs[path] = entries
        return entries

    def run(self, argv, timeout):
        result = self._inner.run(argv, timeout)
        self.commands[command_key(argv)] = result.to_dict()
        return result

    def to_fixture(self):
        recorded = {"now": self._inner.now(), "bins": self.bins, "files": self.files,
                    "dirs": self.dirs, "commands": self.commands}
        if self.recorded_euid is not None:
            recorded["euid"] = self.recorded_euid
        return recorded


class ReplayHost:
    """Answers from a recorded fixture. Reads that were not recorded behave as absent
    files, folders and programs; that is what a host without them answers too."""

    def __init__(self, fixture):
        self._fixture = fixture or {}

    def now(self):
        return self._fixture.get("now") or time.time()

    def find_bin(self, name):
        return self._fixture.get("bins", {}).get(name)

    def euid(self):
        """As recorded; a fixture without it was recorded as root."""
        return self._fixture.get("euid", 0)

    def read_text(self, path, limit=None):
        text = self._fixture.get("files", {}).get(path)
        if text is not None and limit:
            return text[:limit]
        return text

    def listdir(self, path):
        return self._fixture.get("dirs", {}).get(path)

    def run(self, argv, timeout):
        recorded = self._fixture.get("commands", {}).get(command_key(argv))
        if recorded is None:
            return CommandResult(None, "", "not recorded in the fixture: %s" % command_key(argv), missing=True)
        return CommandResult.from_dict(recorded)
