# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""report.html: one self-contained page, no network.

The summary, the likely causes and the unreachable hosts are rendered here, escaped with html.escape.
The table of hosts and findings can hold hundreds of thousands of rows, so it travels as compact JSON
in a non-executable <script type="application/json"> (with <, > and & written as \\u escapes so that no
host string can close the element) and the inline script draws one page of it at a time, building
every cell with textContent. A Content-Security-Policy allows only that inline script (by its hash)
and no network at all.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import base64
import hashlib
import html
import json

from ansible_collections.gpufleet.core.plugins.plugin_utils.reports.coverage import unread_inputs
from ansible_collections.gpufleet.core.plugins.plugin_utils.reports.service import html_section as service_section
from ansible_collections.gpufleet.core.plugins.plugin_utils.reports.html_validation import validation_section
from ansible_collections.gpufleet.core.plugins.module_utils.vocabulary import (
    LAYER_ORDER, LAYERS, NO_FAILURE, SEVERITIES)
from ansible_collections.gpufleet.core.plugins.plugin_utils.reports.html_timeline import timeline_section
from ansible_collections.gpufleet.core.plugins.plugin_utils.reports.model import HOST_STATUSES, REPORT_VERSION
from ansible_collections.gpufleet.core.plugins.plugin_utils.text_safety import safe_text, visible_json_strings
from ansible_collections.gpufleet.core.plugins.plugin_utils.reports.since_previous import html_section as changes_html

MAX_CAUSE_HOSTS_SHOWN = 12
MAX_PROBLEM_HOSTS_LISTED = 500

STYLE = """
:root{--bg:#f5f6f8;--card:#fff;--ink:#1d2330;--muted:#5d6677;--line:#dfe3ea;--accent:#2f5fb3;
--critical:#b3261e;--critical-bg:#fde7e5;--warning:#8a5a00;--warning-bg:#fff1cc;--info:#1f5fa8;--info-bg:#e3eefc;
--ok:#1e6b37;--ok-bg:#def3e4;--none:#6b7280;--none-bg:#eef0f3}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--ink);font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,
"Helvetica Neue",Arial,sans-serif}
header{background:#1d2330;color:#fff;padding:18px 32px}
header h1{margin:0;font-size:20px;font-weight:600;letter-spacing:.2px}
header .meta{margin-top:6px;color:#c3c9d6;font-size:13px}
header .meta span{margin-right:18px}
main{max-width:1500px;margin:0 auto;padding:20px 32px 48px}
section{background:var(--card);border:1px solid var(--line);border-radius:8px;padding:18px 20px;margin-bottom:18px}
h2{font-size:16px;margin:0 0 12px;font-weight:600}
h2 .count{color:var(--muted);font-weight:400}
.verdict{display:inline-block;margin-left:14px;padding:3px 10px;border-radius:4px;font-size:13px;font-weight:600;
vertical-align:middle}
.verdict.fail{background:var(--critical);color:#fff}.verdict.pass{background:#2e7d4f;color:#fff}
.verdict.run-complete{background:#e3ece6;color:#1d4d30}.verdict.run-partial{background:#fff1cc;color:#6b4e00}
.verdict.run-failed{background:var(--critical);color:#fff}
.cards{display:flex;flex-wrap:wrap;gap:12px;margin-bottom:16px}
.card{flex:1 1 120px;border:1px solid var(--line);border-radius:6px;padding:10px 14px;background:#fafbfc}
.card .n{font-size:24px;font-weight:600}.card .l{color:var(--muted);font-size:12px;text-transform:uppercase;
letter-spacing:.4px}
.card.critical .n{color:var(--critical)}.card.warning .n{color:var(--warning)}.card.info .n{color:var(--info)}
.card.bad .n{color:var(--critical)}
table{border-collapse:collapse;width:100%}
th,td{text-align:left;padding:7px 10px;border-bottom:1px solid var(--line);vertical-align:top}
th{font-size:12px;text-transform:uppercase;letter-spacing:.4px;color:var(--muted);font-weight:600;background:#fafbfc}
table.matrix{width:auto;min-width:480px}
table.matrix td.num,table.matrix th.num{text-align:right}
table.matrix td.total{font-weight:600}
button.cell{border:0;background:none;font:inherit;color:var(--accent);cursor:pointer;padding:0 4px;
text-decoration:underline dotted}
button.cell.zero{color:var(--muted);text-decoration:none;cursor:default}
button.cell.critical{color:var(--critical);font-weight:600}button.cell.warning{color:var(--warning);font-weight:600}
.sev{display:inline-block;padding:1px 8px;border-radius:10px;font-size:12px;font-weight:600;white-space:nowrap}
.sev.critical{background:var(--critical-bg);color:var(--critical)}.sev.warning{background:var(--warning-bg);
color:var(--warning)}.sev.info{background:var(--info-bg);color:var(--info)}.sev.ok{background:var(--ok-bg);
color:var(--ok)}.sev.none{background:var(--none-bg);color:var(--none)}
.sev.unreachable,.sev.failed{background:var(--critical);color:#fff}
.cause{border:1px solid var(--line);border-left:5px solid var(--info);border-radius:6px;padding:12px 14px;
margin-bottom:10px}
.cause.critical{border-left-color:var(--critical)}.cause.warning{border-left-color:#d49000}
.cause .title{font-weight:600;font-size:15px}.cause .kind{color:var(--muted);font-size:12px;margin-left:6px}
.cause .action,.finding .action{margin-top:4px}
.action b{color:var(--muted);font-weight:600}
.hosts{margin-top:6px;color:var(--muted)}
.hosts code,td code{background:#f0f2f5;padding:0 4px;border-radius:3px;font-size:12.5px}
details{margin-top:6px}summary{cursor:pointer;color:var(--accent);font-size:13px}
dl.kv{display:grid;grid-template-columns:max-content 1fr;gap:2px 14px;margin:6px 0 0;font-size:13px}
dl.kv dt{color:var(--muted)}dl.kv dd{margin:0;font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;
font-size:12.5px;white-space:pre-wrap;word-break:break-word}
button.show{margin-top:8px;border:1px solid var(--line);background:#fff;border-radius:4px;padding:3px 10px;
cursor:pointer;font:inherit;font-size:13px;color:var(--accent)}
.filters{display:flex;flex-wrap:wrap;gap:10px;align-items:center;margin-bottom:10px}
.filters input,.filters select{font:inherit;padding:6px 8px;border:1px solid #c8ced8;border-radius:4px;background:#fff}
.filters input{flex:1 1 260px;min-width:200px}
.filters select{max-width:300px}
.status-line{color:var(--muted);font-size:13px;margin:6px 0}
#findings th{position:sticky;top:0;cursor:pointer;user-select:none;z-index:1}
#findings th:after{content:"";margin-left:4px}
#findings th[aria-sort=ascending]:after{content:"\\25B2";font-size:9px}
#findings th[aria-sort=descending]:after{content:"\\25BC";font-size:9px}
#findings tbody tr:hover{background:#f7f9fc}
#findings td.host{white-space:nowrap;font-weight:500}
#findings td.gpu{white-space:nowrap;font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12.5px}
#findings td.rule{white-space:nowrap;font-size:13px}
#findings td.finding{min-width:420px;width:50%}
#findings td.finding .summary{font-weight:500}
.fix{display:inline-block;margin-left:8px;font-size:12px;color:var(--ok);background:var(--ok-bg);padding:0 6px;
border-radius:3px}
.muted{color:var(--muted)}
.pager{margin-top:10px;display:flex;gap:10px}
.pager button{border:1px solid var(--line);background:#fff;border-radius:4px;padding:5px 12px;cursor:pointer;font:inherit}
.errors{border-left:5px solid var(--critical)}
footer{color:var(--muted);font-size:12px;text-align:center;margin-top:10px}
"""

SCRIPT = r"""
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("gpufleet-data").textContent);
  var S = data.strings, HOSTS = data.hosts, ROWS = data.rows, CAUSES = data.causes;
  var LAYERS = data.layers, SEVS = data.severities, STATUSES = data.statuses;
  var PAGE = 200;
  var COLUMNS = ["severity", "layer", "host", "state", "gpu", "rule", "summary"];
  var H = 0, SEV = 1, LAYER = 2, RULE = 3, GPU = 4, SUMMARY = 5, ACTION = 6, FIX = 7, EVIDENCE = 8, STATE = 9;
  var state = {q: "", layer: "", severity: "", status: "", cause: "", sort: "severity", dir: "desc"};
  var shown = PAGE, filtered = [], haystacks = new Array(ROWS.length);
  var el = function (id) { return document.getElementById(id); };
  var str = function (i) { return i < 0 ? "" : S[i]; };
  var hostStatus = function (row) { return STATUSES[HOSTS[row[H]][1]]; };
  var sevRank = function (row) {
    if (row[SEV] >= 0) { return 10 - 3 * row[SEV]; }
    return hostStatus(row) === "ok" ? 0 : 8;
  };

  function node(tag, className, text) {
    var n = document.createElement(tag);
    if (className) { n.className = className; }
    if (text !== undefined) { n.textContent = text; }
    return n;
  }

  function haystack(i) {
    if (haystacks[i] === undefined) {
      var r = ROWS[i];
      haystacks[i] = [HOSTS[r[H]][0], str(HOSTS[r[H]][2]), str(r[RULE]), str(r[GPU]), str(r[SUMMARY]),
        str(r[ACTION]), str(r[FIX]), r[EVIDENCE] ? JSON.stringify(r[EVIDENCE]) : "", str(r[STATE])].join("\n").toLowerCase();
    }
    return haystacks[i];
  }

  function causeHosts() {
    if (state.cause === "") { return null; }
    var set = {};
    (CAUSES[Number(state.cause)] || []).forEach(function (h) { set[h] = true; });
    return set;
  }

  function matches(i, words, hostSet) {
    var r = ROWS[i];
    if (state.layer !== "" && LAYERS[r[LAYER]] !== state.layer) { return false; }
    if (state.severity === "none" && r[SEV] >= 0) { return false; }
    if (state.severity === "warning+" && !(r[SEV] >= 0 && r[SEV] <= 1)) { return false; }
    if (state.severity !== "" && state.severity !== "none" && state.severity !== "warning+" &&
        SEVS[r[SEV]] !== state.severity) { return false; }
    if (state.status !== "" && hostStatus(r) !== state.status) { return false; }
    if (hostSet && !hostSet[r[H]]) { return false; }
    for (var w = 0; w < words.length; w++) {
      if (haystack(i).indexOf(words[w]) < 0) { return false; }
    }
    return true;
  }

  function sortKey(column) {
    switch (column) {
      case "severity": return function (r) { return sevRank(r); };
      case "layer": return function (r) { return r[LAYER] < 0 ? 99 : r[LAYER]; };
      case "host": return function (r) { return r[H]; };
      case "state": return function (r) { return str(r[STATE]); };
      case "gpu": return function (r) { return str(r[GPU]); };
      case "rule": return function (r) { return str(r[RULE]); };
      default: return function (r) { return str(r[SUMMARY]); };
    }
  }

  function compare(a, b) { return a < b ? -1 : (a > b ? 1 : 0); }

  function sortRows(indexes) {
    var key = sortKey(state.sort), sign = state.dir === "asc" ? 1 : -1;
    var worst = sortKey("severity"), layer = sortKey("layer");
    indexes.sort(function (i, j) {
      var a = ROWS[i], b = ROWS[j];
      return sign * compare(key(a), key(b)) || compare(worst(b), worst(a)) || compare(layer(a), layer(b)) ||
        compare(a[H], b[H]) || compare(str(a[RULE]), str(b[RULE])) || compare(str(a[GPU]), str(b[GPU])) || i - j;
    });
  }

  function formatValue(v) {
    if (typeof v === "string") { return v; }
    var flat = JSON.stringify(v);
    if (flat === undefined || flat.length <= 100 || v === null || typeof v !== "object") { return String(flat); }
    if (Array.isArray(v)) { return v.map(function (x) { return JSON.stringify(x); }).join("\n"); }
    return Object.keys(v).map(function (k) { return k + ": " + JSON.stringify(v[k]); }).join("\n");
  }

  function evidenceList(evidence) {
    var dl = node("dl", "kv");
    Object.keys(evidence).forEach(function (k) {
      dl.appendChild(node("dt", "", k));
      dl.appendChild(node("dd", "", formatValue(evidence[k])));
    });
    return dl;
  }

  function badge(text, kind) { return node("span", "sev " + kind, text); }

  function findingCell(r) {
    var td = node("td", "finding");
    if (r[SEV] < 0) {
      var h = HOSTS[r[H]], status = STATUSES[h[1]];
      td.appendChild(node("span", "muted", status === "ok" ? "No findings" :
        "Collection " + status + (h[2] >= 0 ? ": " + S[h[2]] : "")));
      return td;
    }
    td.appendChild(node("div", "summary", str(r[SUMMARY])));
    var action = node("div", "action");
    action.appendChild(node("b", "", "Action: "));
    action.appendChild(document.createTextNode(str(r[ACTION])));
    if (r[FIX] >= 0) { action.appendChild(node("span", "fix", "fix: " + S[r[FIX]])); }
    td.appendChild(action);
    if (r[EVIDENCE] && Object.keys(r[EVIDENCE]).length) {
      var details = node("details");
      details.appendChild(node("summary", "", "Evidence"));
      details.appendChild(evidenceList(r[EVIDENCE]));
      td.appendChild(details);
    }
    return td;
  }

  function rowElement(i) {
    var r = ROWS[i], tr = node("tr", "row"), status = hostStatus(r);
    var sevCell = node("td");
    var noFindings = status === "ok" ? badge("none", "none") : badge(status, status);
    sevCell.appendChild(r[SEV] >= 0 ? badge(SEVS[r[SEV]], SEVS[r[SEV]]) : noFindings);
    tr.appendChild(sevCell);
    tr.appendChild(node("td", "layer", r[LAYER] >= 0 ? LAYERS[r[LAYER]] : ""));
    tr.appendChild(node("td", "host", HOSTS[r[H]][0]));
    tr.appendChild(node("td", "state", str(r[STATE])));
    tr.appendChild(r[GPU] >= 0 ? node("td", "gpu", S[r[GPU]]) : node("td", "gpu muted", r[SEV] >= 0 ? "host-wide" : ""));
    tr.appendChild(node("td", "rule", str(r[RULE])));
    tr.appendChild(findingCell(r));
    return tr;
  }

  function draw() {
    var body = document.createDocumentFragment(), count = Math.min(shown, filtered.length);
    for (var k = 0; k < count; k++) { body.appendChild(rowElement(filtered[k])); }
    var tbody = el("rows");
    tbody.textContent = "";
    tbody.appendChild(body);
    el("shown").textContent = "Showing " + count.toLocaleString("en-US") + " of " +
      filtered.length.toLocaleString("en-US") + " matching rows (" + data.counts.findings.toLocaleString("en-US") +
      " findings and " + data.counts.hosts_without_findings.toLocaleString("en-US") + " hosts without findings in all)";
    el("more").hidden = count >= filtered.length;
    el("all").hidden = count >= filtered.length;
    el("all").textContent = "Show all " + filtered.length.toLocaleString("en-US");
    var table = el("findings");
    table.setAttribute("data-matching", String(filtered.length));
    table.setAttribute("data-shown", String(count));
    document.querySelectorAll("#findings th").forEach(function (th) {
      th.setAttribute("aria-sort", th.getAttribute("data-column") === state.sort ?
        (state.dir === "asc" ? "ascending" : "descending") : "none");
    });
  }

  function saveState() {
    var parts = [];
    Object.keys(state).forEach(function (k) {
      if (state[k] !== "") { parts.push(k + "=" + encodeURIComponent(state[k])); }
    });
    try { history.replaceState(null, "", "#" + parts.join("&")); } catch (e) { /* file: URLs may refuse */ }
  }

  function loadState() {
    location.hash.replace(/^#/, "").split("&").forEach(function (part) {
      var eq = part.indexOf("=");
      if (eq > 0) {
        var k = part.slice(0, eq);
        if (Object.prototype.hasOwnProperty.call(state, k)) {
          try { state[k] = decodeURIComponent(part.slice(eq + 1)); } catch (e) { /* ignore a bad value */ }
        }
      }
    });
    if (COLUMNS.indexOf(state.sort) < 0) { state.sort = "severity"; }
    if (state.dir !== "asc") { state.dir = "desc"; }
  }

  function apply() {
    var started = performance.now();
    var words = state.q.toLowerCase().split(/\s+/).filter(Boolean), hostSet = causeHosts();
    filtered = [];
    for (var i = 0; i < ROWS.length; i++) { if (matches(i, words, hostSet)) { filtered.push(i); } }
    sortRows(filtered);
    shown = PAGE;
    draw();
    saveState();
    // how long the last filter and sort took, for the browser test's timing record (bench/README.md)
    el("findings").setAttribute("data-apply-ms", (performance.now() - started).toFixed(1));
  }

  function syncControls() {
    el("q").value = state.q;
    ["layer", "severity", "status", "cause"].forEach(function (k) { el(k).value = state[k]; });
  }

  function readControls() {
    state.q = el("q").value;
    ["layer", "severity", "status", "cause"].forEach(function (k) { state[k] = el(k).value; });
  }

  function scrollToTable() { el("table-section").scrollIntoView({behavior: "smooth", block: "start"}); }

  var timer = null;
  el("q").addEventListener("input", function () {
    clearTimeout(timer);
    timer = setTimeout(function () { readControls(); apply(); }, 150);
  });
  ["layer", "severity", "status", "cause"].forEach(function (k) {
    el(k).addEventListener("change", function () { readControls(); apply(); });
  });
  document.querySelectorAll("#findings th").forEach(function (th) {
    th.addEventListener("click", function () {
      var column = th.getAttribute("data-column");
      if (state.sort === column) { state.dir = state.dir === "asc" ? "desc" : "asc"; }
      else { state.sort = column; state.dir = column === "severity" ? "desc" : "asc"; }
      apply();
    });
  });
  el("more").addEventListener("click", function () { shown += 5 * PAGE; draw(); });
  el("all").addEventListener("click", function () { shown = filtered.length; draw(); });
  el("reset").addEventListener("click", function () {
    state = {q: "", layer: "", severity: "", status: "", cause: "", sort: "severity", dir: "desc"};
    syncControls(); apply();
  });
  document.querySelectorAll("button[data-cause]").forEach(function (b) {
    b.addEventListener("click", function () {
      state.cause = b.getAttribute("data-cause"); syncControls(); apply(); scrollToTable();
    });
  });
  document.querySelectorAll("button.cell[data-layer]").forEach(function (b) {
    b.addEventListener("click", function () {
      state.layer = b.getAttribute("data-layer"); state.severity = b.getAttribute("data-severity");
      syncControls(); apply(); scrollToTable();
    });
  });

  loadState();
  syncControls();
  apply();
  document.body.setAttribute("data-ready", "1");
  document.body.setAttribute("data-open-ms", performance.now().toFixed(1));
})();
"""

SCRIPT_HASH = base64.b64encode(hashlib.sha256(SCRIPT.encode("utf-8")).digest()).decode("ascii")
CONTENT_SECURITY_POLICY = (
    "default-src 'none'; style-src 'unsafe-inline'; script-src 'sha256-%s'; img-src data:; "
    "base-uri 'none'; form-action 'none'" % SCRIPT_HASH
)


def esc(value):
    """Text or attribute value, escaped (quotes too); controls and bidi overrides as visible escapes."""
    return html.escape(safe_text(value), quote=True)


def script_json(value):
    """JSON that is safe inside a <script> element: no <, > or & that could end or open a tag; its strings
    show controls and bidi overrides as visible escapes (text_safety.visible_json_strings)."""
    text = visible_json_strings(json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str))
    return (text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


def display_value(value):
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)


def number(value):
    return "{:,}".format(value)


class StringTable:
    """Interns repeated strings (rules, bus ids, actions) so that the table data stays small."""

    def __init__(self):
        self.strings = []
        self.index = {}

    def ref(self, value):
        if value is None or value == "":
            return -1
        value = str(value)
        position = self.index.get(value)
        if position is None:
            position = self.index[value] = len(self.strings)
            self.strings.append(value)
        return position


def finding_state(finding):
    """The finding's state against the previous runs the store knows: new, or open since when (and for how many
    runs); empty without a store. A cleared finding is not in the table: the changes section lists it."""
    runs_open = finding.get("runs_open")
    if not runs_open:
        return ""
    if runs_open == 1:
        return "new"
    return "open since %s (%d runs)" % (finding.get("first_seen") or "an earlier run", runs_open)


def table_counts(report):
    """What the table's heading and its status line both count."""
    return {"findings": len(report["findings"]), "hosts": len(report["hosts"]),
            "hosts_without_findings": sum(1 for entry in report["hosts"].values() if not entry["findings"])}


def table_data(report):
    """Rows of the findings table: one per finding, one per host without findings."""
    strings = StringTable()
    layer_index = LAYER_ORDER
    severity_index = {severity: i for i, severity in enumerate(SEVERITIES)}
    status_index = {status: i for i, status in enumerate(HOST_STATUSES)}
    hosts, rows = [], []
    for position, (name, entry) in enumerate(report["hosts"].items()):
        hosts.append([name, status_index.get(entry["status"], 2), strings.ref(entry.get("message"))])
        for finding in entry["findings"]:
            rows.append([position, severity_index.get(finding["severity"], 2), layer_index.get(finding["layer"], -1),
                         strings.ref(finding["rule"]), strings.ref(finding.get("gpu")),
                         strings.ref(finding.get("summary")), strings.ref(finding.get("action")),
                         strings.ref(finding.get("fix")), finding.get("evidence") or None,
                         strings.ref(finding_state(finding))])
        if not entry["findings"]:
            rows.append([position, -1, -1, -1, -1, -1, -1, -1, None, -1])
    host_position = {name: i for i, name in enumerate(report["hosts"])}
    causes = [[host_position[h] for h in cause["hosts"] if h in host_position] for cause in report["causes"]]
    return {"strings": strings.strings, "hosts": hosts, "rows": rows, "causes": causes, "counts": table_counts(report),
            "layers": list(LAYERS), "severities": list(SEVERITIES), "statuses": list(HOST_STATUSES)}


def page_header(report):
    run = report["run"]
    summary = report["summary"]
    verdict = ('<span class="verdict fail">FAIL: findings at or above %s</span>' % esc(summary["fail_severity"])
               if summary["failed_threshold"] else
               '<span class="verdict">NOT JUDGED: findings never fail this run</span>'
               if run.get("fail_severity") == NO_FAILURE else
               '<span class="verdict pass">PASS: nothing at or above %s</span>' % esc(summary["fail_severity"]))
    status = run.get("status") or "complete"
    verdict += '<span class="verdict run-%s" title="%s">%s run</span>' % (
        esc(status), esc(run.get("status_reason") or ""), esc(status.upper()))
    meta = [("Run", run.get("id")), ("Status", status), ("Started", run.get("started_at")),
            ("Finished", run.get("finished_at")), ("gpufleet", run.get("tool_version"))]
    spans = "".join("<span>%s: %s</span>" % (esc(label), esc(value)) for label, value in meta if value)
    if run.get("status_reason"):
        spans += "<span>%s</span>" % esc(run["status_reason"])
    return '<header><h1>GPU fleet audit%s</h1><div class="meta">%s</div></header>' % (verdict, spans)


def card(value, label, kind=""):
    return '<div class="card %s"><div class="n">%s</div><div class="l">%s</div></div>' % (
        esc(kind), number(value), esc(label))


def summary_cards(report):
    summary = report["summary"]
    hosts = summary["hosts"]
    by_severity = summary["by_severity"]
    cards = [card(hosts["total"], "hosts"), card(hosts["ok"], "collected"),
             card(hosts["unreachable"], "unreachable", "bad" if hosts["unreachable"] else ""),
             card(hosts["failed"], "failed", "bad" if hosts["failed"] else "")]
    cards += [card(by_severity[severity], "%s findings" % severity, severity) for severity in SEVERITIES]
    cards.append(card(clean_host_count(report), "collected, no findings"))
    return '<div class="cards">%s</div>' % "".join(cards)


def clean_host_count(report):
    return sum(1 for entry in report["hosts"].values() if entry["status"] == "ok" and not entry["findings"])


def matrix_cell(layer, severity, count):
    if not count:
        return '<td class="num"><button class="cell zero" disabled>0</button></td>'
    return ('<td class="num"><button class="cell %s" data-layer="%s" data-severity="%s" title="Show in the table">'
            '%s</button></td>' % (esc(severity), esc(layer), esc(severity), number(count)))


def layer_matrix(summary):
    head = "".join('<th class="num">%s</th>' % esc(severity) for severity in SEVERITIES)
    rows = []
    for layer in LAYERS:
        counts = summary["by_layer"][layer]
        cells = "".join(matrix_cell(layer, severity, counts[severity]) for severity in SEVERITIES)
        rows.append('<tr><th>%s</th>%s<td class="num total">%s</td></tr>' % (
            esc(layer), cells, number(sum(counts.values()))))
    totals = "".join('<td class="num total">%s</td>' % number(summary["by_severity"][severity]) for severity in SEVERITIES)
    rows.append('<tr><th>all layers</th>%s<td class="num total">%s</td></tr>' % (
        totals, number(sum(summary["by_severity"].values()))))
    return ('<table class="matrix"><thead><tr><th>layer</th>%s<th class="num">total</th></tr></thead>'
            '<tbody>%s</tbody></table>' % (head, "".join(rows)))


def summary_section(report):
    summary = report["summary"]
    return '<section id="summary"><h2>Fleet summary</h2>%s%s</section>' % (summary_cards(report), layer_matrix(summary))


def policy_errors_section(report):
    errors = report["run"].get("policy_errors") or []
    if not errors:
        return ""
    items = "".join("<li>%s</li>" % esc(error) for error in errors)
    return '<section class="errors"><h2>Policy errors</h2><ul>%s</ul></section>' % items


def key_values(mapping):
    if not mapping:
        return ""
    pairs = "".join("<dt>%s</dt><dd>%s</dd>" % (esc(key), esc(display_value(value))) for key, value in mapping.items())
    return '<dl class="kv">%s</dl>' % pairs


def host_names(hosts):
    codes = ", ".join("<code>%s</code>" % esc(host) for host in hosts[:MAX_CAUSE_HOSTS_SHOWN])
    if len(hosts) > MAX_CAUSE_HOSTS_SHOWN:
        rest = ", ".join(esc(host) for host in hosts[MAX_CAUSE_HOSTS_SHOWN:])
        codes += ' <details><summary>and %s more</summary>%s</details>' % (
            number(len(hosts) - MAX_CAUSE_HOSTS_SHOWN), rest)
    return codes


def cause_card(position, cause):
    hosts = list(cause.get("hosts") or [])
    evidence = cause.get("evidence") or {}
    details = '<details><summary>Evidence</summary>%s</details>' % key_values(evidence) if evidence else ""
    return (
        '<div class="cause %s"><div><span class="sev %s">%s</span> <span class="title">%s</span>'
        '<span class="kind">blames: %s &middot; layer: %s</span></div>'
        '<div class="action"><b>Action: </b>%s</div>'
        '<div class="hosts">%s host(s): %s</div>%s'
        '<button class="show" data-cause="%d">Show these hosts in the table</button></div>' % (
            esc(cause.get("severity")), esc(cause.get("severity")), esc(cause.get("severity")), esc(cause.get("summary")),
            esc(cause.get("kind")), esc(cause.get("layer")), esc(cause.get("action")), number(len(hosts)),
            host_names(hosts), details, position))


def causes_section(report):
    causes = report["causes"]
    if not causes:
        body = '<p class="muted">No cause shared by several hosts was found; see the findings per host below.</p>'
    else:
        body = "".join(cause_card(position, cause) for position, cause in enumerate(causes))
    return '<section id="causes"><h2>Likely causes <span class="count">(%d)</span></h2>%s</section>' % (len(causes), body)


def baselines_section(report):
    """The baseline template of each group the audited hosts compare with (report.json `baselines`, from the
    run store: store/baseline_template.py, the rows `gpufleet baseline show --markdown` prints)."""
    templates = report.get("baselines") or []
    if not templates:
        return ""
    parts = ['<section id="baselines"><h2>Baselines <span class="count">(%d)</span></h2>' % len(templates)]
    for template in templates:
        group = template.get("group")
        rows = "".join("<tr><th>%s</th><td>%s</td></tr>" % (esc(label), esc(value))
                       for label, value in template.get("rows") or ())
        parts.append('<h3>%s</h3><table class="baseline" data-group="%s"><tbody>%s</tbody></table>' % (
            esc("the whole fleet" if group == "all" else "group %s" % group), esc(group), rows))
    parts.append('<p class="muted">The known-good run of each group; drift from it is reported as baseline_* '
                 'findings.</p></section>')
    return "".join(parts)


def problem_hosts_section(report):
    problems = [(name, entry) for name, entry in report["hosts"].items() if entry["status"] != "ok"]
    if not problems:
        return ""
    rows = "".join('<tr><td><code>%s</code></td><td><span class="sev %s">%s</span></td><td>%s</td></tr>' % (
        esc(name), esc(entry["status"]), esc(entry["status"]), esc(entry.get("message") or ""))
        for name, entry in problems[:MAX_PROBLEM_HOSTS_LISTED])
    more = ""
    if len(problems) > MAX_PROBLEM_HOSTS_LISTED:
        more = '<p class="muted">... and %s more: filter the table below by status.</p>' % number(
            len(problems) - MAX_PROBLEM_HOSTS_LISTED)
    return ('<section id="problem-hosts"><h2>Unreachable and failed hosts <span class="count">(%d)</span></h2>'
            '<table><thead><tr><th>host</th><th>status</th><th>message</th></tr></thead><tbody>%s</tbody></table>%s'
            '</section>' % (len(problems), rows, more))


def input_cell(steps):
    return esc(", ".join(steps)) if steps else '<span class="muted">-</span>'


def inputs_section(report):
    """The hosts whose audit did not read every input, or read a capture: what was read, failed, not supported or
    absent (report.json hosts.<host>.inputs), so that a clean host is told from one never looked at."""
    listed = [(name, entry["inputs"]) for name, entry in report["hosts"].items()
              if entry.get("inputs") and (unread_inputs(entry) or entry["inputs"].get("capture"))]
    if not listed:
        return ""
    rows = "".join(
        '<tr><td><code>%s</code></td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td></tr>' % (
            esc(name), input_cell(inputs.get("read")), input_cell(inputs.get("failed")),
            input_cell(inputs.get("not_supported")), input_cell(inputs.get("absent")),
            esc("%s %s" % (inputs["capture"]["kind"], inputs["capture"]["path"])) if inputs.get("capture") else "live")
        for name, inputs in listed[:MAX_PROBLEM_HOSTS_LISTED])
    more = ""
    if len(listed) > MAX_PROBLEM_HOSTS_LISTED:
        more = '<p class="muted">... and %s more: see hosts.&lt;host&gt;.inputs in report.json.</p>' % number(
            len(listed) - MAX_PROBLEM_HOSTS_LISTED)
    return ('<section id="inputs"><h2>Evidence looked at <span class="count">(%d hosts)</span></h2>'
            '<p class="muted">Hosts whose audit did not read every input: no finding from an input that was absent '
            'or not read does not mean the host is clean there.</p>'
            '<table><thead><tr><th>host</th><th>read</th><th>failed</th><th>not supported</th><th>absent</th>'
            '<th>read from</th></tr></thead><tbody>%s</tbody></table>%s</section>' % (len(listed), rows, more))


def options(values, any_label):
    return '<option value="">%s</option>' % esc(any_label) + "".join(
        '<option value="%s">%s</option>' % (esc(value), esc(label)) for value, label in values)


def cause_label(cause):
    text = str(cause.get("summary") or cause.get("id"))
    return text if len(text) <= 70 else text[:67] + "..."


def table_section(report):
    counts = table_counts(report)
    severities = [(severity, severity) for severity in SEVERITIES]
    severities += [("warning+", "warning or worse"), ("none", "no findings")]
    filters = (
        '<div class="filters">'
        '<input id="q" type="search" placeholder="Filter: host, rule, GPU, text, evidence..." aria-label="Filter text">'
        '<select id="layer" aria-label="Layer">%s</select>'
        '<select id="severity" aria-label="Severity">%s</select>'
        '<select id="status" aria-label="Host status">%s</select>'
        '<select id="cause" aria-label="Likely cause">%s</select>'
        '<button id="reset" class="show" type="button">Reset</button></div>' % (
            options([(layer, layer) for layer in LAYERS], "all layers"),
            options(severities, "all severities"),
            options([(status, status) for status in HOST_STATUSES], "all statuses"),
            options([(str(i), cause_label(cause)) for i, cause in enumerate(report["causes"])], "any cause")))
    head = "".join('<th data-column="%s" scope="col">%s</th>' % (column, label) for column, label in (
        ("severity", "severity"), ("layer", "layer"), ("host", "host"), ("state", "state"), ("gpu", "gpu"),
        ("rule", "rule"), ("summary", "finding")))
    return (
        '<section id="table-section"><h2>Hosts and findings <span class="count">(%s findings on %s hosts)</span></h2>'
        '%s<div id="shown" class="status-line"></div>'
        '<noscript><p>The table needs JavaScript; every finding is also in report.json.</p></noscript>'
        '<table id="findings"><thead><tr>%s</tr></thead><tbody id="rows"></tbody></table>'
        '<div class="pager"><button id="more" type="button" hidden>Show 1,000 more</button>'
        '<button id="all" type="button" hidden>Show all</button></div></section>' % (
            number(counts["findings"]), number(counts["hosts"]), filters, head))


def render_html(report, timeline=None):
    """timeline: an incident's timeline (timeline.json), shown after the likely causes."""
    title = "gpufleet audit %s" % (report["run"].get("id") or "")
    body = "".join([
        page_header(report),
        "<main>",
        policy_errors_section(report),
        changes_html(report, esc),
        summary_section(report),
        causes_section(report),
        timeline_section(timeline) if timeline is not None else "",
        problem_hosts_section(report),
        service_section(report, esc),
        inputs_section(report),
        validation_section(report, esc),
        baselines_section(report),
        table_section(report),
        '<footer>gpufleet report version %s</footer>' % esc(report.get("report_version", REPORT_VERSION)),
        "</main>",
    ])
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta http-equiv="Content-Security-Policy" content="%s">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<title>%s</title><style>%s</style></head>\n<body>%s\n'
        '<script type="application/json" id="gpufleet-data">%s</script>\n'
        '<script>%s</script>\n</body></html>\n' % (
            esc(CONTENT_SECURITY_POLICY), esc(title), STYLE, body, script_json(table_data(report)), SCRIPT))
