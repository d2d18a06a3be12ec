# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What changed since the previous complete run of the same scope: new, persisting and cleared findings,
and since when each open finding is open (first_seen, runs_open). Plain data in, plain data out."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type


def change_entry(finding, identity, first_seen, runs_open):
    """A new or cleared finding in the changes section."""
    return {"identity": identity, "rule": finding.get("rule"), "host": finding.get("host"), "gpu": finding.get("gpu"),
            "severity": finding.get("severity"), "first_seen": first_seen, "runs_open": runs_open,
            "layer": finding.get("layer"), "summary": finding.get("summary")}


def compare(identified, previous, run_started_at, audited_hosts, previous_run_id=None, documents=None):
    """identified: [(finding, identity, parts)] of this run; previous: {identity: (host, first_seen, runs_open)}
    of the previous complete run (store.queries.open_findings; empty when there is none); audited_hosts:
    hosts whose facts this run read (a finding of a host not audited now is neither cleared nor persisting:
    it is unknown).

    documents(identities) -> {identity: finding}: the cleared findings' documents (their summaries).

    Returns (history {identity: (first_seen, runs_open)}, changes section of the report). Since report 1.3
    the persisting findings are their identities only (in this run's order): findings[] holds each of them
    in full, with first_seen and runs_open."""
    history, new, persisting = {}, [], []
    for finding, identity, _parts in identified:
        before = previous.get(identity)
        if before is None:
            history[identity] = (run_started_at, 1)
            new.append(change_entry(finding, identity, run_started_at, 1))
        else:
            history[identity] = (before[1], before[2] + 1)
            persisting.append(identity)
    gone = [identity for identity, (host, _first, _runs) in previous.items()
            if identity not in history and host in audited_hosts]
    texts = documents(gone) if documents is not None and gone else {}
    cleared = []
    for identity in gone:
        host, first_seen, runs_open = previous[identity]
        cleared.append(change_entry(texts.get(identity) or {"host": host}, identity, first_seen, runs_open))
    changes = {
        "status": "compared" if previous_run_id else "first_run",
        "against": previous_run_id,
        "counts": {"new": len(new), "persisting": len(persisting), "cleared": len(cleared)},
        "new": new,
        "persisting": persisting,
        "cleared": sorted(cleared, key=lambda entry: (entry["host"], entry["rule"], entry["gpu"] or "")),
    }
    return history, changes


def unavailable(reason):
    """The changes section when the store could not answer (or is off)."""
    return {"status": "unavailable", "reason": reason, "against": None,
            "counts": {"new": 0, "persisting": 0, "cleared": 0}, "new": [], "persisting": [], "cleared": []}


def annotate(report, identified, history, changes):
    """Adds identity, first_seen and runs_open to each finding (in report.findings and under hosts,
    which hold the same dicts) and the changes section."""
    for finding, identity, _parts in identified:
        first_seen, runs_open = history[identity]
        finding["identity"] = identity
        finding["first_seen"] = first_seen
        finding["runs_open"] = runs_open
    report["changes"] = changes
    return report
