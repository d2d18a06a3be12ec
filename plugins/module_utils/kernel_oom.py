# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The kernel OOM killer's reports: which process it killed, in which cgroup, and whether the limit was
the cgroup's (memcg) or the whole machine's.

One report spans many lines; what names the victim differs by kernel:
- 5.0 and later: `oom-kill:constraint=CONSTRAINT_MEMCG,...,oom_memcg=/x,task_memcg=/x/y,task=NAME,pid=N,uid=U`,
  then `Memory cgroup out of memory: Killed process N (NAME) total-vm:..kB, anon-rss:..kB, ...` (or
  `Out of memory: Killed process ...` for a global OOM);
- older: `Task in /x killed as a result of limit of /x`, `Memory cgroup out of memory: Kill process N (NAME)
  score S or sacrifice child` and `Killed process N (NAME) total-vm:..kB, anon-rss:..kB`.
Each kill is one event, keyed by its pid; lines of any kernel log format (journalctl short-iso, syslog,
dmesg with or without --ctime, /dev/kmsg) are read, their times placed as kernel_log places them.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re
import time

from ansible_collections.gpufleet.core.plugins.module_utils.kernel_log import (  # the kernel log's own clock
    _Clock, _line_time)

_SUMMARY = re.compile(r"oom-kill:(?P<fields>constraint=\S+)")
_KILLED = re.compile(r"(?P<memcg>Memory cgroup out of memory: )?(?P<global>Out of memory(?: \(oom_kill_allocating_task\))?: )?"
                     r"Kill(?:ed)? process (?P<pid>\d+) \((?P<name>[^)]{0,64})\)(?P<rest>.*)")
_TASK_IN = re.compile(r"Task in (?P<task>\S+) killed as a result of limit of (?P<limit>\S+)")
_RSS = re.compile(r"anon-rss:(\d+)kB")
MAX_EVENTS = 64
NAME_LIMIT = 64
PATH_LIMIT = 256


def _clean(text, limit):
    if text is None:
        return None
    return "".join(char if char.isprintable() else "?" for char in text[:limit]) or None


def _summary_fields(text):
    fields = {}
    for part in text.split(","):
        key, _sep, value = part.partition("=")
        fields[key.strip()] = value.strip()
    return fields


def _new_event(pid, time_text):
    return {"time": time_text, "pid": pid, "process": None, "cgroup": None, "limit_cgroup": None,
            "constraint": None, "anon_rss_kib": None}


class _Reports:
    """Assembles events from report lines in log order."""

    def __init__(self):
        self.events = []
        self.by_pid = {}
        self.pending_cgroup = None

    def event(self, pid, time_text):
        event = self.by_pid.get(pid)
        if event is None:
            event = self.by_pid[pid] = _new_event(pid, time_text)
            self.events.append(event)
        return event

    def summary(self, fields, time_text):
        try:
            pid = int(fields.get("pid"))
        except (TypeError, ValueError):
            return
        event = self.event(pid, time_text)
        event["process"] = _clean(fields.get("task"), NAME_LIMIT)
        event["cgroup"] = _clean(fields.get("task_memcg"), PATH_LIMIT)
        event["limit_cgroup"] = _clean(fields.get("oom_memcg"), PATH_LIMIT)
        event["constraint"] = "memcg" if fields.get("constraint") == "CONSTRAINT_MEMCG" else (
            "global" if "global_oom" in fields or fields.get("constraint") == "CONSTRAINT_NONE"
            else (fields.get("constraint") or "").replace("CONSTRAINT_", "").lower() or None)

    def killed(self, match, time_text):
        event = self.event(int(match.group("pid")), time_text)
        event["process"] = event["process"] or _clean(match.group("name"), NAME_LIMIT)
        rss = _RSS.search(match.group("rest") or "")
        if rss:
            event["anon_rss_kib"] = int(rss.group(1))
        if match.group("memcg"):
            event["constraint"] = event["constraint"] or "memcg"
        elif match.group("global"):
            event["constraint"] = event["constraint"] or "global"
        if self.pending_cgroup is not None:
            task, limit = self.pending_cgroup
            event["cgroup"] = event["cgroup"] or task
            event["limit_cgroup"] = event["limit_cgroup"] or limit
            event["constraint"] = event["constraint"] or ("global" if limit == "/" else "memcg")
            self.pending_cgroup = None


def parse_oom_kills(text, now=None, window_seconds=None, boot_time=None):
    """Events of the OOM killer in kernel log text, in log order: {time, pid, process, cgroup (the victim's),
    limit_cgroup (whose limit was hit), constraint (memcg, global, ...), anon_rss_kib}."""
    now = time.time() if now is None else now
    cutoff = now - window_seconds if window_seconds is not None else None
    clock = _Clock(now, boot_time)
    reports = _Reports()
    for line in (text or "").splitlines():
        if not line or ("ill" not in line and "oom-kill:" not in line):
            continue
        epoch, time_text, _kmsg = _line_time(line, clock)
        if cutoff is not None and epoch is not None and epoch < cutoff:
            continue
        summary = _SUMMARY.search(line)
        if summary:
            reports.summary(_summary_fields(summary.group("fields")), time_text)
            continue
        task_in = _TASK_IN.search(line)
        if task_in:
            reports.pending_cgroup = (_clean(task_in.group("task"), PATH_LIMIT), _clean(task_in.group("limit"), PATH_LIMIT))
            continue
        killed = _KILLED.search(line)
        if killed and "reaped process" not in line:
            reports.killed(killed, time_text)
    return reports.events


def cgroup_unit(cgroup):
    """The systemd unit a cgroup path belongs to (the deepest .service or .scope component), or None."""
    for part in reversed((cgroup or "").strip("/").split("/")):
        if part.endswith((".service", ".scope")):
            return part
    return None
