# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which inputs a collection read, found absent, or could not read (facts `inputs`, docs/offline.md).

InputLedger wraps the collection's host and notes every file, folder and command a collector asked for, under
the step (gather subset) that asked. A clean report then tells "looked and found nothing wrong" from "never
looked": a subset whose every source was absent or not supported says so.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os
import re

READ = "read"
ABSENT = "absent"
FAILED = "failed"
NOT_SUPPORTED = "not_supported"
# a step's status: the first of these that one of its sources has (a step with an absent source and an unsupported one
# is absent: what the capture or host lacks, not what cannot be read, decides)
STATUS_ORDER = (READ, FAILED, ABSENT, NOT_SUPPORTED)
MAX_SOURCES = 20
NOT_SUPPORTED_MARK = "not supported offline"
_PID_PATH = re.compile(r"^/proc/\d+/")
_PCI_PATH = re.compile(r"^/sys/bus/pci/devices/[^/]+/")
# arguments that change with every run (a window, a property list, a script): left out of the source's name
_VARYING = re.compile(r"^--(since|until|lines|property)=")


def file_source(path):
    path = _PID_PATH.sub("/proc/<pid>/", str(path))
    return _PCI_PATH.sub("/sys/bus/pci/devices/<bus id>/", path)


def command_source(argv):
    words = [os.path.basename(str(argv[0]))]
    for word in argv[1:]:
        word = str(word)
        if words[-1] == "-c" and words[0].startswith("python"):
            words.append("<probe>")
            break
        if not _VARYING.match(word):
            words.append(word)
    return " ".join(words)[:120]


def command_status(result):
    if result.rc == 0:
        return READ
    if NOT_SUPPORTED_MARK in (result.stderr or ""):
        return NOT_SUPPORTED
    if result.missing:
        return ABSENT
    return FAILED


class InputLedger:
    """Passes every call to the inner host and notes what it answered under the current step."""

    def __init__(self, inner):
        self._inner = inner
        self.step = None
        self._seen = {}

    def __getattr__(self, name):
        return getattr(self._inner, name)

    def note(self, source, status, step=None):
        sources = self._seen.setdefault(step or self.step, {})
        previous = sources.get(source)
        if previous is None or STATUS_ORDER.index(status) < STATUS_ORDER.index(previous):
            sources[source] = status

    def read_text(self, path, limit=None):
        text = self._inner.read_text(path, limit)
        self.note(file_source(path), READ if text is not None else ABSENT)
        return text

    def listdir(self, path):
        entries = self._inner.listdir(path)
        self.note(file_source(path), READ if entries is not None else ABSENT)
        return entries

    def find_bin(self, name):
        path = self._inner.find_bin(name)
        if path is None:
            self.note(name, ABSENT)
        return path

    def run(self, argv, timeout):
        result = self._inner.run(argv, timeout)
        self.note(command_source(argv), command_status(result))
        return result

    def summary(self, steps):
        """[{input, status, sources_read, sources, sources_left_out}] for the steps that ran, in their order: the
        count of sources read and each source that was not (absent, failed, not supported), what a reader of the
        report needs; a step that asked for nothing (a capture with no kernel log file to name) is absent."""
        inputs = []
        for step in steps:
            sources = self._seen.get(step) or {}
            statuses = set(sources.values())
            status = next((name for name in STATUS_ORDER if name in statuses), ABSENT)
            unread = [{"source": source, "status": sources[source]} for source in sorted(sources)
                      if sources[source] != READ]
            inputs.append({"input": step, "status": status, "sources_read": len(sources) - len(unread),
                           "sources": unread[:MAX_SOURCES], "sources_left_out": max(0, len(unread) - MAX_SOURCES)})
        return inputs
