# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Writes the report files of an audit into its run folder, each atomically (run_folder.py), then moves the
folder's latest link as the run's status says."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import functools
import gzip
import json
import os

from ansible_collections.gpufleet.core.plugins.plugin_utils.reports.format import disk_document, ndjson_records
from ansible_collections.gpufleet.core.plugins.plugin_utils.reports.html import render_html
from ansible_collections.gpufleet.core.plugins.plugin_utils.reports.junit import render_junit
from ansible_collections.gpufleet.core.plugins.plugin_utils.reports.prometheus import render_prometheus
from ansible_collections.gpufleet.core.plugins.plugin_utils.run_folder import (
    COMPRESSED_REPORT, link_for_status, point_latest, write_atomically)
from ansible_collections.gpufleet.core.plugins.plugin_utils.text_safety import json_text

INDENTED_JSON_MAX_FINDINGS = 2000


def render_json(report):
    """Indented for reading when small; compact for big fleets, where indenting takes seconds and megabytes.
    Controls and bidi overrides in strings are \\u escapes (text_safety.json_text): same data, safe to cat."""
    document = disk_document(report)
    if len(report["findings"]) <= INDENTED_JSON_MAX_FINDINGS:
        return json_text(json.dumps(document, indent=1, ensure_ascii=False, default=str)) + "\n"
    return json_text(json.dumps(document, separators=(",", ":"), ensure_ascii=False, default=str)) + "\n"


def render_ndjson(report):
    """findings.ndjson: one whole finding per line, with its run's id and time (format.ndjson_records)."""
    return "".join(json_text(json.dumps(record, separators=(",", ":"), ensure_ascii=False, default=str)) + "\n"
                   for record in ndjson_records(report))


def gzipped(text):
    """The text gzip-compressed, with no name and no time in the header: the same report gives the same bytes."""
    return gzip.compress(text.encode("utf-8", "backslashreplace"), mtime=0)


def renderers(inventory=None):
    """(file name, render(report)) of the report files; inventory: prometheus.gpu_inventory of the run's facts,
    the GPU labels of gpufleet.prom."""
    return (
        ("report.json", render_json),
        ("report.html", render_html),
        ("junit.xml", render_junit),
        ("gpufleet.prom", functools.partial(render_prometheus, inventory=inventory)),
        ("findings.ndjson", render_ndjson),
    )


RENDERERS = renderers()


def write_reports(report, run_dir, report_root, inventory=None, compress=False):
    """Write report.json, report.html, junit.xml, gpufleet.prom and findings.ndjson into run_dir (compress: and
    report.json.gz); return their paths. inventory: the GPUs of the run's facts (prometheus.gpu_inventory), for
    gpufleet.prom's GPU labels.

    After every file is in place, report_root/latest moves to run_dir when the run was complete,
    report_root/latest-partial when it was partial (unless it points at a run that started later); a failed run
    moves neither.
    """
    os.makedirs(run_dir, exist_ok=True)
    os.makedirs(report_root, exist_ok=True)
    paths, compressed = [], None
    for name, render in renderers(inventory):
        text = render(report)
        paths.append(write_atomically(os.path.join(run_dir, name), text))
        if compress and name == "report.json":
            compressed = gzipped(text)
    if compressed is not None:
        paths.append(write_atomically(os.path.join(run_dir, COMPRESSED_REPORT), compressed))
    link_name = link_for_status(report["run"].get("status"))
    if link_name:
        point_latest(run_dir, report_root, link_name)
    return paths
