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
import threading
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
        return "exit status %s%s" % (self.rc, (": " + detail[0][:300]) if detail else "")


def command_key(argv):
    """Commands are keyed by program name and arguments, not by where the program lives."""
    return " ".join([os.path.basename(argv[0])] + [str(a) for a in argv[1:]])


class LiveHost:
    """Reads the real host. run_command is AnsibleModule.run_command (or a stand-in with the same
    signature); find_bin is AnsibleModule.get_bin_path, which searches PATH and the sbin folders."""

    def __init__(self, run_command, find_bin, now=None):
        self._run_command = run_command
        self._find_bin = find_bin
        self._now = now

    def now(self):
        return self._now if self._now is not None else time.time()

    def find_bin(self, name):
        return self._find_bin(name)

    def read_text(self, path, limit=None):
        """The file's text, or None when it does not exist or cannot be read."""
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
        """Runs argv without a shell; a command still running after timeout seconds is killed."""
        watchdog = _Watchdog(timeout)
        try:
            rc, out, err = self._run_command(
                argv, check_rc=False, environ_update={"LC_ALL": "C", "LANG": "C"},
                errors="surrogate_or_replace", before_communicate_callback=watchdog.arm,
                handle_exceptions=False)
        except (IOError, OSError) as exc:
            return CommandResult(None, "", str(exc), missing=True)
        finally:
            watchdog.disarm()
        if watchdog.fired:
            return CommandResult(None, out or "", err or "", timed_out=True)
        return CommandResult(rc, out or "", err or "")


def module_host(module, nvidia_smi=None):
    """The LiveHost of a module; nvidia_smi (a path) stands in for the one found on PATH."""
    def find_bin(name):
        if name == "nvidia-smi" and nvidia_smi:
            return nvidia_smi
        return module.get_bin_path(name, required=False)
    return LiveHost(run_command=module.run_command, find_bin=find_bin)


def nvidia_smi_module_host(module):
    """(nvidia-smi path, LiveHost) of a module with the options nvidia_smi and timeout; fails the module
    on a timeout that is not positive and when no nvidia-smi is found."""
    if module.params["timeout"] <= 0:
        module.fail_json(msg="timeout must be a positive number of seconds, not %s" % module.params["timeout"])
    nvidia_smi = module.params["nvidia_smi"] or module.get_bin_path("nvidia-smi", required=True)
    return nvidia_smi, module_host(module, nvidia_smi)


class _Watchdog:
    """Kills the command's process when it outlives its timeout."""

    def __init__(self, timeout):
        self.timeout = timeout
        self.fired = False
        self._timer = None

    def arm(self, process):
        self._timer = threading.Timer(self.timeout, self._kill, (process,))
        self._timer.daemon = True
        self._timer.start()

    def _kill(self, process):
        self.fired = True
        try:
            process.kill()
        except (IOError, OSError):
            pass

    def disarm(self):
        if self._timer is not None:
            self._timer.cancel()


class RecordingHost:
    """Passes every call to an inner host and keeps the answers for a fixture."""

    def __init__(self, inner):
        self._inner = inner
        self.files = {}
        self.dirs = {}
        self.commands = {}
        self.bins = {}

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

    def listdir(self, path):
        entries = self._inner.listdir(path)
        self.dirs[path] = entries
        return entries

    def run(self, argv, timeout):
        result = self._inner.run(argv, timeout)
        self.commands[command_key(argv)] = result.to_dict()
        return result

    def to_fixture(self):
        return {"now": self._inner.now(), "bins": self.bins, "files": self.files,
                "dirs": self.dirs, "commands": self.commands}


class ReplayHost:
    """Answers from a recorded fixture. Reads that were not recorded behave as absent
    files, folders and programs; that is what a host without them answers too."""

    def __init__(self, fixture):
        self._fixture = fixture or {}

    def now(self):
        return self._fixture.get("now") or time.time()

    def find_bin(self, name):
        return self._fixture.get("bins", {}).get(name)

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
