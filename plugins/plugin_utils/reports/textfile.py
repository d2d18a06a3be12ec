# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpufleet.prom published into node_exporter's textfile-collector directory (gpufleet_textfile_dir): the run
folder's file copied there atomically (a temporary file in that directory, then a rename; mode 0644), and only
by a complete audit of its whole scope, so a --limit, incident, load-step, remediation or failed run never
replaces the fleet's series. The directory must exist: it is never created (a typo would otherwise publish
where no node_exporter reads)."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os

from ansible_collections.gpufleet.core.plugins.plugin_utils.run_folder import write_atomically
from ansible_collections.gpufleet.core.plugins.plugin_utils.text_safety import safe_line

TEXTFILE_NAME = "gpufleet.prom"
TEXTFILE_MODE = 0o644
PUBLISHING_KIND = "audit"


def refusal(report, textfile_dir, run_kind):
    """Why this run does not replace the textfile, None when it does."""
    if not os.path.isdir(textfile_dir):
        return ("%s is not an existing directory (node_exporter's --collector.textfile.directory; it is never "
                "created)" % textfile_dir)
    if run_kind != PUBLISHING_KIND:
        return "a run of kind %s never replaces it (only a complete audit of the whole scope does)" % run_kind
    status = report["run"].get("status")
    if status == "partial":
        return "a partial run (--limit) never replaces it (%s)" % report["run"].get("status_reason")
    if status != "complete":
        return "a %s run never replaces it (%s)" % (status, report["run"].get("status_reason"))
    return None


def publish_textfile(report, run_dir, textfile_dir, run_kind=PUBLISHING_KIND):
    """Copies run_dir/gpufleet.prom into textfile_dir when the run may replace it; returns
    {"path", "written", "reason"} (never raises for a refused or unwritable directory: the reports stay written)."""
    path = os.path.join(textfile_dir, TEXTFILE_NAME)
    why_not = refusal(report, textfile_dir, run_kind)
    if why_not is None:
        try:
            with open(os.path.join(run_dir, TEXTFILE_NAME), encoding="utf-8") as handle:
                write_atomically(path, handle.read(), mode=TEXTFILE_MODE, umask_applied=True)
        except OSError as exc:
            why_not = "cannot write it: %s" % exc
    if why_not is not None:
        return {"path": path, "written": False, "reason": why_not}
    return {"path": path, "written": True, "reason": "a complete audit of the whole scope"}


def textfile_line(published):
    """The summary's line about the textfile."""
    if published["written"]:
        return safe_line("Textfile: %s replaced (%s)" % (published["path"], published["reason"]))
    return safe_line("Textfile: %s NOT replaced: %s" % (published["path"], published["reason"]))
