# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The kernel OOM killer's reports: which process it killed, in which cgroup, and whether the limit was
the cgroup's (memcg) or the whole machine's.

One report spans many lines; what names the victim differs by kernel:
- 5.0 and later: `oom-kill:constraint=CONSTRAINT_MEMCG,...,oom_memcg=/x,task_memcg=/x/y,task=NAME,pid=N,uid=U`,
  then `Memory cgroup out of memory: Killed process N (NAME) total-vm:..kB, anon-rss:..kB, ...` (or
  `Out of memory: Killed process ...` for a global OOM);
- older: `Task in /x killed as a result of limit of /x` (or `Memory cgroup stats for /x:` before the kill lines),
  `Memory cgroup out of memory: Kill process N (NAME) score S or sacrifice child` (the victim chosen) and
  `Killed process M (NAME) total-vm:..kB, anon-rss:..kB` (the one killed: M is a child of N when the kernel
  sacrificed one); RHEL 5 and 6 wrote `Out of memory: Killed process N, UID U, (NAME).`
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
_KILLED = re.compile(r"(?P<memcg>Memory cgroup out of memory: )?"
                     r"(?P<global>Out of memory(?: \(oom_kill_allocating_task\))?: )?"
                     r"Kill(?P<past>ed)? process (?P<pid>\d+)(?:, UID \d+,)? \((?P<name>[^)]{0,64})\)(?P<rest>.*)")
_STATS_FOR = re.compile(r"Memory cgroup stats for (?P<cgroup>/\S*?):?(?:\s|$)")
_REPORT_START = "invoked oom-killer"
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
        self.stats_cgroup = None  # "Memory cgroup stats for": the memcg of this report's kills
        self.chosen = None  # the event of "Kill process N ... or sacrifice child", until its "Killed process"

    def new_report(self):
        self.pending_cgroup = self.stats_cgroup = self.chosen = None

    def stats(self, cgroup):
        """A report prints the stats of the limit's cgroup and those below it: a 'Task in' whose limit is not
        above this cgroup belongs to an earlier report."""
        self.stats_cgroup = cgroup
        if self.pending_cgroup is not None and not cgroup.startswith(self.pending_cgroup[1] or "/"):
            self.pending_cgroup = None

    def _sacrificed_child(self, pid):
        """The chosen event, re-keyed to the child the kernel killed instead (another pid), else None."""
        chosen, self.chosen = self.chosen, None
        if chosen is None or chosen["pid"] == pid or pid in self.by_pid:
            return None
        del self.by_pid[chosen["pid"]]
        chosen["pid"], chosen["process"] = pid, None
        self.by_pid[pid] = chosen
        return chosen

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
        pid = int(match.group("pid"))
        event = (self._sacrificed_child(pid) if match.group("past") else None) or self.event(pid, time_text)
        if not match.group("past"):
            self.chosen = event
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
        if self.stats_cgroup is not None:
            event["cgroup"] = event["cgroup"] or self.stats_cgroup
            event["constraint"] = event["constraint"] or "memcg"


def parse_oom_kills(text, now=None, window_seconds=None, boot_time=None):
    """Events of the OOM killer in kernel log text, in log order: {time, pid, process, cgroup (the victim's),
    limit_cgroup (whose limit was hit), constraint (memcg, global, ...), anon_rss_kib}."""
    now = time.time() if now is None else now
    cutoff = now - window_seconds if window_seconds is not None else None
    clock = _Clock(now, boot_time)
    reports = _Reports()
    for line in (text or "").splitlines():
        if not line or ("ill" not in line and "oom-kill:" not in line and "cgroup stats" not in line):
            continue
        epoch, time_text, _kmsg = _line_time(line, clock)
        if cutoff is not None and epoch is not None and epoch < cutoff:
            continue
        if _REPORT_START in line:
            reports.new_report()
            continue
        stats = _STATS_FOR.search(line)
        if stats:
            reports.stats(_clean(stats.group("cgroup"), PATH_LIMIT))
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


# Kubernetes pod slices (kubepods-burstable-pod<uid>.slice, /kubepods/pod<uid>) and container ids of the
# runtimes (cri-containerd-<id>.scope, docker-<id>.scope, crio-<id>.scope, /docker/<id>, /<id>)
_POD_UID = re.compile(r"pod([0-9a-f]{8}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{12})")
_CONTAINER = re.compile(r"^(?:(?:cri-containerd|containerd|docker|crio|libpod)-)?([0-9a-f]{64})(?:\.scope)?$")
MAX_HOST_EVENTS = 10


def oom_attribution(cgroup):
    """{unit, pod_uid, container_id} a victim's cgroup path names (each None where it names none): a container's
    transient scope is its container, not a unit."""
    parts = (cgroup or "").strip("/").split("/")
    pod = _POD_UID.search(cgroup or "")
    container = _CONTAINER.match(parts[-1]) if parts else None
    return {"unit": None if container else cgroup_unit(cgroup),
            "pod_uid": pod.group(1).replace("_", "-") if pod else None,
            "container_id": container.group(1) if container else None}


def host_oom_record(events):
    """kernel_log.oom_kills: every OOM kill of the window counted, named or not, the first and the last kept
    with what their cgroup says of them (oom_attribution)."""
    kept = list(events) if len(events) <= MAX_HOST_EVENTS else list(events[:MAX_HOST_EVENTS - 1]) + [events[-1]]
    return {"count": len(events),
            "global": sum(1 for event in events if event.get("constraint") == "global"),
            "events": [dict(event, **oom_attribution(event.get("cgroup") or event.get("limit_cgroup")))
                       for event in kept]}
