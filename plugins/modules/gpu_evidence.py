#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
---
module: gpu_evidence
short_description: Keep the raw evidence of an incident window from a GPU host, changing nothing
version_added: 1.1.0
description:
  - Runs a bounded list of read-only commands and file reads on the host and returns their outputs, each with
    what produced it, its exit status, duration, size and sha256, so that the controller can keep them as an
    evidence bundle (C(incident.yml), M(gpufleet.core.incident_report)).
  - The evidence is C(nvidia-smi -q) and C(nvidia-smi -q -x); the kernel log of the window (C(journalctl), else
    C(dmesg), or O(kernel_log_files)); the journal of the GPU services in the window as JSON (O(services), the
    units of the processes O(pids) and the NVIDIA services), their unit files and state; the kernel's and
    systemd's OOM messages; the boot list; C(/var/log/dpkg.log) and C(/var/log/dnf.rpm.log); C(lspci -vvv)
    of the NVIDIA devices and the PCI bridges; C(ipmitool sel elist), C(sel time get) and C(sdr elist) when
    C(ipmitool) works.
  - A tool that is missing, fails or times out is an item with status V(missing), V(failed) or V(timed_out) and
    the reason; the module itself succeeds.
  - Each output is capped at O(max_file_bytes) (logs keep their end, other outputs their start) and the bundle at
    O(max_total_bytes); the cut is recorded in the item.
  - The values of C(Environment=) lines in unit files and of environment properties in C(systemctl show) are
    replaced by C(<redacted>); process environments are never read.
  - Changes nothing on the host. Only O(bug_report) writes, into a temporary folder that is removed before
    the module returns.
author:
  - gpufleet contributors (!UNKNOWN)
requirements:
  - Python 3.9 or newer on the target.
options:
  since:
    description:
      - Start of the window, ISO 8601 (C(2026-11-30T06:00:00Z), an offset or none for UTC) or epoch seconds.
      - Default is O(window_hours) before O(until).
    type: str
  until:
    description:
      - End of the window, as O(since). Default is the host's current time (a replay's recorded time).
    type: str
  window_hours:
    description: Hours of window before O(until) when O(since) is not given.
    type: int
    default: 24
  clock_offset_s:
    description:
      - The host's clock minus the controller's, in seconds (C(clock_offset_s) of the facts of
        M(gpufleet.core.gpu_facts)). O(since) and O(until) are moved by it onto the host's clock, since the host
        stamps its logs with its own clock, so a host whose clock is hours off gives the logs of the window asked for.
      - The window in the result is on the host's clock.
    type: int
    default: 0
  services:
    description: systemd units whose journal, unit file and state are kept (the policy's workload services).
    type: list
    elements: str
    default: []
  pids:
    description: Processes found on the GPUs; the units they run in (from C(/proc/<pid>/cgroup)) are added.
    type: list
    elements: int
    default: []
  dcgm_diag:
    description:
      - Also run C(dcgmi diag -r 1) (the quick, non-invasive level, at most 300 seconds) when DCGM is installed and
        MIG is off on every GPU.
    type: bool
    default: false
  bug_report:
    description:
      - Also run C(nvidia-bug-report.sh) (at most 600 seconds) and keep its compressed report. It writes into a
        temporary folder that is removed afterwards. Off by default; never in check mode or replay.
    type: bool
    default: false
  timeout:
    description: Seconds the whole collection may take; commands not started by then are recorded as V(timed_out).
    type: int
    default: 180
  command_timeout:
    description: Seconds one command may take (longer for the optional diagnostics), within O(timeout).
    type: int
    default: 30
  max_file_bytes:
    description: Bytes one piece of evidence keeps.
    type: int
    default: 4194304
  max_total_bytes:
    description: Bytes the whole bundle keeps.
    type: int
    default: 33554432
  source:
    description:
      - V(live) reads the host. V(replay) answers every command and file from the C(host) part of the
        M(gpufleet.core.gpu_facts) fixture O(fixture) (the demo fleet); what it did not record is missing. A
        window-bound command recorded with another window answers with the recorded one (the controller keeps
        only the events inside the asked window).
    type: str
    choices: [live, replay]
    default: live
  fixture:
    description: Fixture file on the target, for O(source=replay).
    type: path
extends_documentation_fragment:
  - gpufleet.core.kernel_log
  - gpufleet.core.attributes
  - gpufleet.core.attributes.platform
attributes:
  check_mode:
    support: full
    details: Runs the same read-only commands in check mode; O(bug_report) is skipped.
  diff_mode:
    support: none
  platform:
    platforms: linux
notes:
  - Reading the whole journal and the BMC usually needs root (C(become)).
seealso:
  - module: gpufleet.core.gpu_facts
  - module: gpufleet.core.incident_report
"""

EXAMPLES = r"""
- name: Keep the evidence of the last 24 hours
  gpufleet.core.gpu_evidence:
    services: [inference.service]
  become: true
  register: evidence

- name: A fixed window, with the quick DCGM diagnostic
  gpufleet.core.gpu_evidence:
    since: "2026-11-29T20:00:00Z"
    until: "2026-11-29T23:00:00Z"
    dcgm_diag: true
"""

RETURN = r"""
window:
  description: The window read, epoch seconds.
  returned: always
  type: dict
  contains:
    since:
      description: Start of the window.
      type: float
      returned: always
    until:
      description: End of the window.
      type: float
      returned: always
host_clock:
  description: The host's clock when the collection started (C(now), epoch seconds) and its local offset from UTC.
  returned: always
  type: dict
units:
  description: The systemd units whose journal and unit files were read.
  returned: always
  type: list
  elements: str
pid_units:
  description: Unit of each GPU process found in its cgroup, by pid.
  returned: always
  type: dict
kernel_log_source:
  description: The kernel log source asked for.
  returned: always
  type: str
evidence:
  description: One entry per piece of evidence.
  returned: always
  type: list
  elements: dict
  contains:
    name:
      description: File name of the evidence in the bundle.
      type: str
      returned: always
    layer:
      description: The layer it is evidence for (hardware, driver, scheduling, workload).
      type: str
      returned: always
    command:
      description: The command line or file read that produced it.
      type: str
      returned: always
    status:
      description: ok, failed, missing, skipped or timed_out.
      type: str
      returned: always
    why:
      description: Why it is not ok; null when it is.
      type: str
      returned: always
    rc:
      description: Exit status of the command; null when it did not run or was killed.
      type: int
      returned: always
    duration_s:
      description: Seconds it took.
      type: float
      returned: always
    size:
      description: Bytes kept.
      type: int
      returned: always
    sha256:
      description: sha256 of the bytes kept; null when nothing was kept.
      type: str
      returned: always
    cut:
      description: When the output was capped, its original size, what was kept and why; else null.
      type: dict
      returned: always
    encoding:
      description: utf-8 or base64 (binary evidence); null when nothing was kept.
      type: str
      returned: always
    content:
      description: The evidence itself.
      type: str
      returned: always
"""

import calendar
import datetime
import json
import re
import shutil
import tempfile

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.text.converters import to_native

from ansible_collections.gpufleet.core.plugins.module_utils.args_common import kernel_log_spec
from ansible_collections.gpufleet.core.plugins.module_utils.evidence import collect_evidence
from ansible_collections.gpufleet.core.plugins.module_utils.host_io import (
    CommandResult, LiveHost, ReplayHost, command_key, run_bounded)

_ISO_RE = re.compile(r"^(\d{4})-(\d\d)-(\d\d)[T ](\d\d):(\d\d)(?::(\d\d)(?:\.\d+)?)?\s*(Z|UTC|[+-]\d\d:?\d\d)?$")


def parse_time(text):
    """Epoch seconds of an ISO 8601 time (no zone: UTC) or of a number; ValueError otherwise."""
    text = str(text).strip()
    try:
        return float(text)
    except ValueError:
        pass
    match = _ISO_RE.match(text)
    if match is None:
        raise ValueError("%r is not an ISO 8601 time (2026-11-30T06:00:00Z) or epoch seconds" % text)
    fields = [int(match.group(i)) for i in range(1, 6)] + [int(match.group(6) or 0)]
    datetime.datetime(*fields)  # ValueError for a month 13 or a 31 November, which timegm would roll over
    epoch = calendar.timegm(tuple(fields) + (0, 0, 0))
    zone = match.group(7)
    if zone and zone not in ("Z", "UTC"):
        sign = -1 if zone[0] == "-" else 1
        digits = zone[1:].replace(":", "")
        epoch -= sign * (int(digits[:2]) * 3600 + int(digits[2:]) * 60)
    return float(epoch)


class EvidenceHost(LiveHost):
    """A live host that can also read a binary file (the bug report)."""

    def read_bytes(self, path):
        try:
            with open(path, "rb") as handle:
                return handle.read()
        except (IOError, OSError):
            return None


_WINDOW_ARGUMENT_RE = re.compile(r" --(since|until)=@[0-9.]+")


class WindowReplayHost(ReplayHost):
    """A replay whose window-bound commands (journalctl --since/--until) answer with the window that was recorded
    when the asked one is not: the controller keeps only the events inside the asked window."""

    def run(self, argv, timeout):
        result = ReplayHost.run(self, argv, timeout)
        if not result.missing or "--since=@" not in " ".join(argv):
            return result
        asked = _WINDOW_ARGUMENT_RE.sub("", command_key(argv))
        for key, recorded in sorted(self._fixture.get("commands", {}).items()):
            if _WINDOW_ARGUMENT_RE.sub("", key) == asked:
                return CommandResult.from_dict(recorded)
        return result


def replay_host(module, path):
    try:
        with open(path) as handle:
            fixture = json.load(handle)
    except (IOError, OSError, ValueError) as exc:
        module.fail_json(msg="fixture %s cannot be read: %s" % (path, to_native(exc)))
    if not isinstance(fixture, dict) or not isinstance(fixture.get("host"), dict):
        module.fail_json(msg="fixture %s has no host part (not a gpufleet.core.gpu_facts fixture)" % path)
    return WindowReplayHost(fixture["host"])


def main():
    module = AnsibleModule(
        argument_spec=dict(
            since=dict(type="str"),
            until=dict(type="str"),
            window_hours=dict(type="int", default=24),
            clock_offset_s=dict(type="int", default=0),
            services=dict(type="list", elements="str", default=[]),
            pids=dict(type="list", elements="int", default=[]),
            **kernel_log_spec(),
            dcgm_diag=dict(type="bool", default=False),
            bug_report=dict(type="bool", default=False),
            timeout=dict(type="int", default=180),
            command_timeout=dict(type="int", default=30),
            max_file_bytes=dict(type="int", default=4194304),
            max_total_bytes=dict(type="int", default=33554432),
            source=dict(type="str", default="live", choices=["live", "replay"]),
            fixture=dict(type="path"),
        ),
        required_if=[("source", "replay", ["fixture"])],
        supports_check_mode=True,
    )
    params = module.params
    for name in ("window_hours", "timeout", "command_timeout", "max_file_bytes", "max_total_bytes"):
        if params[name] <= 0:
            module.fail_json(msg="%s must be positive, not %s" % (name, params[name]))
    try:
        since = parse_time(params["since"]) if params["since"] else None
        until = parse_time(params["until"]) if params["until"] else None
    except ValueError as exc:
        module.fail_json(msg="window: %s" % to_native(exc))
    if since is not None and until is not None and since >= until:
        module.fail_json(msg="window: since (%s) must be before until (%s)" % (params["since"], params["until"]))
    since, until = (None if moment is None else moment + params["clock_offset_s"] for moment in (since, until))
    if params["source"] == "replay":
        host = replay_host(module, params["fixture"])
    else:
        host = EvidenceHost(find_bin=lambda name: module.get_bin_path(name, required=False), runner=run_bounded)
    may_write = params["bug_report"] and params["source"] == "live" and not module.check_mode
    workdir = tempfile.mkdtemp(prefix="gpufleet-evidence-") if may_write else None
    try:
        result = collect_evidence(
            host, since=since, until=until, window_hours=params["window_hours"], services=params["services"],
            pids=params["pids"], kernel_log_source=params["kernel_log_source"],
            kernel_log_files=params["kernel_log_files"], dcgm_diag=params["dcgm_diag"], bug_report=params["bug_report"],
            workdir=workdir, timeout=params["timeout"], command_timeout=params["command_timeout"],
            max_file_bytes=params["max_file_bytes"], max_total_bytes=params["max_total_bytes"])
    finally:
        if workdir:
            shutil.rmtree(workdir, ignore_errors=True)
    module.exit_json(changed=False, **result)


if __name__ == "__main__":
    main()
