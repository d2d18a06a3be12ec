# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""`gpufleet analyze PATH...`: the audit of captured hosts (docs/offline.md). Each PATH (a captured root, an incident
bundle or its .tar.gz, an nvidia-bug-report.log or .log.gz) becomes one host of a generated inventory, collected on
the controller by gpu_facts with capture: PATH, and then diagnosed and reported as `gpufleet audit` does: the same
facts, findings, reports and exit status. A PATH that cannot be read is a host that could not be audited, with the
reason, never the end of the others."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
import os
import re
import shutil
import sys
import tempfile

from ansible_collections.gpufleet.core.plugins.module_utils.capture_host import CaptureError, open_capture
from ansible_collections.gpufleet.core.plugins.plugin_utils.cli import audit_command

INVENTORY_NAME = "captures.json"
_HOST_NAME = re.compile(r"[^A-Za-z0-9._-]+")
_CAPTURE_SUFFIXES = (".log.gz", ".log", ".tar.gz", ".tgz")


def add_parser(subparsers):
    parser = subparsers.add_parser(
        "analyze", help="audit captured hosts offline (captured roots, incident bundles, nvidia-bug-report logs)",
        description="Audits each PATH as a host: a captured root (proc/, sys/, etc/, var/log/ and sos_commands/), an "
                    "incident bundle (evidence/<host>/ or its .tar.gz), or an nvidia-bug-report.log(.gz). Writes the "
                    "same reports as `gpufleet audit` and exits as it does: 0, 2 or 4 (docs/offline.md).")
    parser.add_argument("paths", nargs="+", metavar="PATH", help="a captured host")
    parser.add_argument("-e", "--extra-vars", action="append", default=[], metavar="VAR=VALUE",
                        help="extra variables, as ansible-playbook -e takes them (a policy: gpufleet_policy_*)")
    parser.add_argument("--progress", choices=["auto", "bar", "plain", "none"], default="auto",
                        help="progress display, as for audit")
    parser.add_argument("--keep-artifacts", type=int, default=audit_command.RUNNER_KEEP, metavar="N",
                        help="runner artifact folders to keep under <report root>/runner")
    parser.set_defaults(handler=analyze)
    return parser


def capture_host_name(path):
    """The captured host's own name (an incident bundle's host, the hostname in the capture), else the name of the
    capture's file or folder."""
    name = None
    try:
        capture = open_capture(path)
        name = str(capture.host_name or capture.read_text("/proc/sys/kernel/hostname")
                   or capture.read_text("/etc/hostname") or "").strip()
    except CaptureError:
        pass
    if not name:
        name = os.path.basename(os.path.normpath(path))
        for suffix in _CAPTURE_SUFFIXES:
            if name.endswith(suffix):
                name = name[:-len(suffix)]
                break
    return _HOST_NAME.sub("_", name).strip("._") or "capture"


def inventory(paths, cwd):
    """The inventory of the captures: one host each, collected on the controller with this Python."""
    hosts, names = {}, set()
    for path in paths:
        absolute = os.path.join(cwd, path)
        name, number = capture_host_name(absolute), 2
        unique = name
        while unique in names:
            unique = "%s-%d" % (name, number)
            number += 1
        names.add(unique)
        hosts[unique] = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable,
                         "gpufleet_capture": absolute}
    return {"all": {"hosts": hosts}}


def analyze(args, out=None):
    """Writes the captures' inventory, runs the audit on it, and returns the audit's exit status."""
    folder = tempfile.mkdtemp(prefix="gpufleet-analyze-")
    try:
        path = os.path.join(folder, INVENTORY_NAME)
        with open(path, "w") as handle:
            json.dump(inventory(args.paths, os.getcwd()), handle, indent=1)
        args.inventory = [path]
        args.limit = None
        return audit_command.audit(args, out=out)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
