# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Writes the four report files of a run, each atomically, then points <report_root>/latest at the run."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
import os
import tempfile

from ansible_collections.gpufleet.core.plugins.plugin_utils.report_html import render_html
from ansible_collections.gpufleet.core.plugins.plugin_utils.report_junit import render_junit
from ansible_collections.gpufleet.core.plugins.plugin_utils.report_prometheus import render_prometheus
from ansible_collections.gpufleet.core.plugins.plugin_utils.text_safety import json_text

LATEST = "latest"
FILE_MODE = 0o644


INDENTED_JSON_MAX_FINDINGS = 2000


def render_json(report):
    """Indented for reading when small; compact for big fleets, where indenting takes seconds and megabytes.
    Controls and bidi overrides in strings are \\u escapes (text_safety.json_text): same data, safe to cat."""
    if len(report["findings"]) <= INDENTED_JSON_MAX_FINDINGS:
        return json_text(json.dumps(report, indent=1, ensure_ascii=False, default=str)) + "\n"
    return json_text(json.dumps(report, separators=(",", ":"), ensure_ascii=False, default=str)) + "\n"


RENDERERS = (
    ("report.json", render_json),
    ("report.html", render_html),
    ("junit.xml", render_junit),
    ("gpufleet.prom", render_prometheus),
)


def write_atomically(path, content, durable=True):
    """Write to a temporary file in the same folder, flush it to disk (unless not durable), then rename it
    over path. Readers see the old file or the new one, never half of one.

    A lone surrogate (possible in text decoded from a host's JSON) is written as \\udXXX, which JSON reads back.
    """
    folder, name = os.path.split(path)
    handle, temporary = tempfile.mkstemp(prefix="." + name + ".", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(handle, "w", encoding="utf-8", errors="backslashreplace") as stream:
            stream.write(content)
            stream.flush()
            if durable:
                os.fsync(stream.fileno())
        os.chmod(temporary, FILE_MODE)
        os.replace(temporary, path)
    except BaseException:
        if os.path.lexists(temporary):
            os.unlink(temporary)
        raise
    return path


def link_target(run_dir, report_root):
    """Relative when the run folder is inside report_root, so the folder can be moved as a whole."""
    run_dir = os.path.abspath(run_dir)
    report_root = os.path.abspath(report_root)
    if os.path.dirname(run_dir) == report_root:
        return os.path.basename(run_dir)
    return run_dir


def point_latest(run_dir, report_root):
    """Replace report_root/latest with a symlink to run_dir in one rename."""
    latest = os.path.join(report_root, LATEST)
    if os.path.isdir(latest) and not os.path.islink(latest):
        raise OSError("%s is a real directory, not a link; remove it so that it can point at the latest run" % latest)
    temporary = os.path.join(report_root, ".%s.%d.tmp" % (LATEST, os.getpid()))
    if os.path.lexists(temporary):
        os.unlink(temporary)
    os.symlink(link_target(run_dir, report_root), temporary)
    try:
        os.replace(temporary, latest)
    except BaseException:
        os.unlink(temporary)
        raise
    return latest


def write_reports(report, run_dir, report_root):
    """Write report.json, report.html, junit.xml and gpufleet.prom into run_dir; return their paths.

    report_root/latest moves to run_dir only after every file is in place.
    """
    os.makedirs(run_dir, exist_ok=True)
    os.makedirs(report_root, exist_ok=True)
    paths = [write_atomically(os.path.join(run_dir, name), render(report)) for name, render in RENDERERS]
    point_latest(run_dir, report_root)
    return paths
