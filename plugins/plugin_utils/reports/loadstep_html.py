# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""loadstep.html: the load steps of a loadstep run as one self-contained page (no script, no network).

loadstep_section(document) is the section itself, for a page of its own (render_loadstep_html) or inside
another report. Every value is escaped (report_html.esc)."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json

from ansible_collections.gpufleet.core.plugins.plugin_utils.reports.html import esc

STYLE = """
body{font-family:system-ui,sans-serif;margin:1.5em;color:#1b1f24}
table{border-collapse:collapse;margin:.5em 0 1.2em}
th,td{border:1px solid #c9ced6;padding:.25em .55em;text-align:right;font-size:.9em}
th{background:#eef1f5} td.text,th.text{text-align:left}
tr.broke td{background:#fde2e1} tr.held td{background:#e3f5e6}
.verdict{padding:.6em .9em;border-radius:4px;margin:.5em 0;display:inline-block}
.verdict.broke{background:#fde2e1} .verdict.held{background:#e3f5e6}
pre{background:#f4f6f8;padding:.6em;overflow:auto}
"""

STEP_COLUMNS = ("step", "concurrency", "throughput (req/s)", "p50 (ms)", "p95 (ms)", "errors", "peak GPU memory (MiB)",
                "MiB per added worker", "peak temp (C)", "peak power (W)", "throttle reasons", "verdict")


def _cell(value, text=False):
    shown = "" if value is None else value
    return '<td%s>%s</td>' % (' class="text"' if text else "", esc(shown))


def _row_cells(step):
    stats = step.get("requests") or {}
    gpus = step.get("gpus") or []
    memory = [gpu["memory_used_peak_mib"] for gpu in gpus if gpu.get("memory_used_peak_mib") is not None]
    temps = [gpu["temperature_peak_c"] for gpu in gpus if gpu.get("temperature_peak_c") is not None]
    power = [gpu["power_peak_w"] for gpu in gpus if gpu.get("power_peak_w") is not None]
    reasons = sorted(set(reason for gpu in gpus for reason in gpu.get("throttle_reasons") or []))
    verdict = step["verdict"]
    errors = "%s of %s" % (stats["errors"], stats["requests"]) if stats.get("records") else None
    return [_cell(step["step"]), _cell(step["concurrency"]), _cell(stats.get("throughput_rps")),
            _cell(stats.get("p50_ms")), _cell(stats.get("p95_ms")), _cell(errors),
            _cell(sum(memory) if memory else None), _cell(step.get("memory_per_added_worker_mib")),
            _cell(max(temps) if temps else None), _cell(max(power) if power else None),
            _cell(", ".join(reasons), text=True),
            _cell("broke (%s, %s): %s" % (verdict["reason"], verdict["layer"], verdict["detail"])
                  if verdict["broke"] else "held", text=True)]


def steps_table(run):
    rows = []
    for step in ([run["idle"]] if run.get("idle") else []) + (run.get("steps") or []):
        kind = "broke" if step["verdict"]["broke"] else ("held" if step["concurrency"] else "")
        rows.append('<tr class="%s">%s</tr>' % (kind, "".join(_row_cells(step))))
    head = "".join('<th%s>%s</th>' % (' class="text"' if name in ("throttle reasons", "verdict") else "", esc(name))
                   for name in STEP_COLUMNS)
    return '<table class="steps"><tr>%s</tr>%s</table>' % (head, "".join(rows))


def gpu_table(run):
    head = ("step", "GPU", "memory peak / total (MiB)", "lowest free %", "processes", "util %", "temp (C)",
            "power / limit (W)", "lowest SM clock (MHz)", "new ECC", "throttle reasons")
    rows = []
    for step in ([run["idle"]] if run.get("idle") else []) + (run.get("steps") or []):
        for gpu in step.get("gpus") or []:
            rows.append("<tr>%s</tr>" % "".join([
                _cell(step["step"]), _cell(gpu["index"]),
                _cell("%s / %s" % (gpu["memory_used_peak_mib"], gpu["memory_total_mib"])),
                _cell(gpu["memory_free_low_pct"]), _cell(gpu["processes_peak"]), _cell(gpu["utilization_peak_pct"]),
                _cell(gpu["temperature_peak_c"]), _cell("%s / %s" % (gpu["power_peak_w"], gpu["power_limit_w"])),
                _cell(gpu["sm_clock_low_mhz"]), _cell(gpu["ecc_new_uncorrected"] + gpu["ecc_new_corrected"]),
                _cell(", ".join(gpu["throttle_reasons"]), text=True)]))
    return '<table class="gpus"><tr>%s</tr>%s</table>' % ("".join("<th>%s</th>" % esc(name) for name in head),
                                                          "".join(rows))


def process_table(run):
    rows = []
    for step in run.get("steps") or []:
        for process in step.get("processes") or []:
            rows.append("<tr>%s</tr>" % "".join([_cell(step["step"]), _cell(process["pid"]),
                                                 _cell(process["name"], text=True), _cell(process["gpu"]),
                                                 _cell(process["used_peak_mib"])]))
    if not rows:
        return "<p>No GPU process was seen during the steps.</p>"
    head = "".join("<th>%s</th>" % esc(name) for name in ("step", "pid", "name", "GPU", "peak memory (MiB)"))
    return '<table class="processes"><tr>%s</tr>%s</table>' % (head, "".join(rows))


def verdict_block(run):
    broke, held, suggestion = run.get("broke"), run.get("held"), run.get("suggestion")
    parts = []
    if broke:
        parts.append('<div class="verdict broke">Broke at step %s (%s in flight): <b>%s</b> - layer <b>%s</b>: %s</div>'
                     % (esc(broke["step"]), esc(broke["concurrency"]), esc(broke["reason"]), esc(broke["layer"]),
                        esc(broke["detail"])))
    else:
        parts.append('<div class="verdict held">No step broke.</div>')
    if held:
        parts.append("<p>Largest step that held: step %s, %s in flight.</p>"
                     % (esc(held["step"]), esc(held["concurrency"])))
    if suggestion:
        parts.append("<p>Suggested worker cap: <b>workers_per_gpu: %s</b> (%s). Policy fragment for "
                     "<code>worker_limits</code>:</p><pre>%s</pre>" % (
                         esc(suggestion["workers_per_gpu"]), esc(suggestion["basis"]),
                         esc(fragment_yaml(suggestion["fragment"]))))
    return "\n".join(parts)


def fragment_yaml(fragment):
    """The fragment as YAML, written by hand (no dependency): variable, workload, services, one service."""
    (variable, policy), = fragment.items()
    (service, settings), = policy["workload"]["services"].items()
    lines = ["%s:" % variable, "  workload:", "    services:", "      %s:" % json.dumps(service)]
    lines += ["        %s: %s" % (key, json.dumps(value)) for key, value in sorted(settings.items())]
    return "\n".join(lines) + "\n"


def comparison_block(run):
    comparison = run.get("comparison")
    if not comparison:
        return "<p>No earlier loadstep run of this service on this host to compare with.</p>"
    rows = "".join("<tr>%s</tr>" % "".join([
        _cell(item["concurrency"]), _cell("broke" if item["broke_before"] else "held", text=True),
        _cell("broke" if item["broke_now"] else "held", text=True), _cell(item["throughput_change"]),
        _cell(item["p95_change"]), _cell(item["memory_change_mib"])]) for item in comparison["steps"])
    head = "".join("<th>%s</th>" % esc(name) for name in ("concurrency", "before", "now", "throughput change",
                                                          "p95 change", "memory change (MiB)"))
    return ("<p>Compared with %s: <b>%s</b> (held up to %s before, %s now).</p><table>%s%s</table>" % (
        esc(comparison["previous_run"]), esc(comparison["verdict"]), esc(comparison["held_before"]),
        esc(comparison["held_now"]), "<tr>%s</tr>" % head, rows))


def run_section(run):
    return "\n".join([
        '<section class="loadstep-run"><h3>%s - %s (%s, %s)</h3>'
        % (esc(run["host"]), esc(run["service"]), esc(run["mode"]), esc(run["status"])),
        verdict_block(run), "<h4>Steps</h4>", steps_table(run), "<h4>GPUs</h4>", gpu_table(run),
        "<h4>GPU processes</h4>", process_table(run), "<h4>Against the previous run</h4>", comparison_block(run),
        "<p>Host left as it was: %s</p>" % esc(json.dumps(run.get("host_restored"), sort_keys=True)),
        "</section>"])


def loadstep_section(document):
    runs = document.get("runs") or []
    body = "\n".join(run_section(run) for run in runs) or "<p>No host was put under load.</p>"
    return '<section id="loadstep"><h2>Load steps</h2>\n%s\n</section>' % body


def render_loadstep_html(document):
    return ('<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>gpufleet load steps %s</title>'
            '<style>%s</style></head><body>\n<h1>gpufleet load steps</h1><p>Run %s, %s to %s</p>\n%s\n</body></html>\n'
            % (esc(document.get("started_at")), STYLE, esc(document.get("run_dir")), esc(document.get("started_at")),
               esc(document.get("finished_at")), loadstep_section(document)))
