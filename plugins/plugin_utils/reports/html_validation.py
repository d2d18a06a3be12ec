# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""report.html's "Active checks" section: per node and check, pass or fail with the measured figures and the
expected ones (report.json hosts.<host>.validation, report version 1.5; validate.yml)."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

MAX_FIGURES = 16


def _figure(figure):
    expected = figure.get("expected_gbs")
    return "%s GPU %s: %.2f GB/s%s (%s)" % (
        figure.get("testcase"), figure.get("gpu_index"), figure.get("measured_gbs") or 0.0,
        " of %.2f expected" % expected if expected is not None else "", figure.get("link"))


def check_details(name, check):
    """The figures of one check, as lines of text."""
    lines = [check["reason"]] if check.get("reason") else []
    if name == "dcgm_diag":
        lines += ["level %s" % check.get("level")] + [
            "%s: %s%s" % (test.get("name"), test.get("status"),
                          " on GPU %s" % ", ".join(str(index) for index in test["failed_gpus"])
                          if test.get("failed_gpus") else "")
            for test in check.get("tests") or ()]
    elif name == "nvbandwidth":
        figures = check.get("figures") or []
        lines += [_figure(figure) for figure in figures[:MAX_FIGURES]]
        if len(figures) > MAX_FIGURES:
            lines.append("... %d more figures in report.json" % (len(figures) - MAX_FIGURES))
    elif name == "nccl_all_reduce":
        if check.get("peak_busbw_gbs") is not None:
            lines.append("%s GPUs, peak bus bandwidth %s GB/s, average %s GB/s" % (
                check.get("gpus"), check.get("peak_busbw_gbs"), check.get("avg_busbw_gbs")))
        else:
            lines.append("%s GPUs, no bus bandwidth measured" % check.get("gpus"))
        if check.get("error_text"):
            lines.append(check["error_text"])
    elif name == "stress":
        lines += ["%s %ss: GPU %s %s (%s errors)" % (check.get("tool"), check.get("seconds"), index,
                                                     (entry or {}).get("result"), (entry or {}).get("errors"))
                  for index, entry in sorted((check.get("per_gpu") or {}).items())]
    return lines


def validation_section(report, esc):
    """The section (empty without any host's validation); esc: html.py's escaping of host text."""
    hosts = [(name, entry["validation"]) for name, entry in sorted(report["hosts"].items())
             if entry.get("validation")]
    if not hosts:
        return ""
    rows = []
    for name, validation in hosts:
        if validation.get("refused"):
            rows.append('<tr><td><code>%s</code></td><td>all</td><td class="sev-warning">refused</td><td>%s</td></tr>'
                        % (esc(name), esc("%s; %s" % (validation["refused"].get("reason"),
                                                      validation["refused"].get("how_to_proceed")))))
        for check_name, check in sorted((validation.get("checks") or {}).items()):
            status = check.get("status") or "unknown"
            rows.append('<tr><td><code>%s</code></td><td>%s</td><td class="validation-%s">%s</td><td>%s</td></tr>' % (
                esc(name), esc(check_name), esc(status), esc(status),
                "<br>".join(esc(line) for line in check_details(check_name, check))))
    return ('<section id="validation"><h2>Active checks <span class="count">(%d hosts)</span></h2>'
            '<p class="muted">What validate.yml ran on each node: a check passes only if it ran; the findings '
            'judge the figures against the expected ones and the run\'s peers.</p>'
            '<table><thead><tr><th>host</th><th>check</th><th>status</th><th>figures</th></tr></thead>'
            '<tbody>%s</tbody></table></section>' % (len(hosts), "".join(rows)))
