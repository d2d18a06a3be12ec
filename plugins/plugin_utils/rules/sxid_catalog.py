# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The NVSwitch error (SXid) catalog, data/sxid_catalog.yml: each SXid's name and class, each class's severity and
action, the GPU Xids that report the NVLink side of a switch fault. Read and checked once per process."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import functools
import os

import yaml

from ansible_collections.gpufleet.core.plugins.module_utils.vocabulary import SEVERITIES
from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.findings import severity_rank

CATALOG_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "sxid_catalog.yml")
_ENTRY_KEYS = frozenset(("name", "class", "note"))
_CLASS_KEYS = frozenset(("table", "severity", "action"))
# An SXid the catalog does not know, by the fatality its line gives (None: the line says neither).
UNKNOWN_SEVERITY = {True: "critical", False: "warning", None: "warning"}
UNKNOWN_ACTION = ("Look up SXid %d in NVIDIA's Fabric Manager user guide (NVSwitch SXid errors) and follow its "
                  "recovery; a fatal one needs the GPUs and NVSwitches of the partition reset.")


def _fail(where, message):
    raise ValueError("sxid_catalog.yml: %s: %s" % (where, message))


def _checked_class(name, entry):
    if not isinstance(entry, dict) or set(entry) != _CLASS_KEYS:
        _fail("classes.%s" % name, "needs exactly the keys %s" % ", ".join(sorted(_CLASS_KEYS)))
    if entry["severity"] not in SEVERITIES:
        _fail("classes.%s.severity" % name, "must be one of %s, got %r" % (", ".join(SEVERITIES), entry["severity"]))
    return dict(entry)


def _checked_entry(number, entry, classes):
    where = "sxids.%s" % number
    if not isinstance(number, int) or isinstance(number, bool):
        _fail(where, "an SXid is a number")
    if not isinstance(entry, dict) or not set(entry) <= _ENTRY_KEYS or "name" not in entry or "class" not in entry:
        _fail(where, "needs name and class (and may have note)")
    if entry["class"] not in classes:
        _fail(where, "unknown class %r (classes: %s)" % (entry["class"], ", ".join(sorted(classes))))
    return dict(entry, sxid=number)


@functools.lru_cache(maxsize=1)
def load_catalog(path=CATALOG_FILE):
    """{"sources", "gpu_xids", "classes", "sxids"}; ValueError naming the entry when the file is malformed."""
    with open(path) as handle:
        data = yaml.safe_load(handle)
    classes = {name: _checked_class(name, entry) for name, entry in (data.get("classes") or {}).items()}
    return {
        "sources": dict(data["sources"]),
        "gpu_xids": frozenset(int(number) for number in data["gpu_xids"]),
        "classes": classes,
        "sxids": {number: _checked_entry(number, entry, classes) for number, entry in data["sxids"].items()},
    }


def sxid_info(number, fatal_in_log, catalog=None):
    """What the audit makes of one SXid: {"sxid", "name", "class", "table", "severity", "action", "note"}.

    fatal_in_log: True when a line of it said Fatal, False when one said Non-fatal, None when neither. The line
    wins where the table only says "potentially fatal" (see the catalog's header)."""
    catalog = catalog or load_catalog()
    entry = catalog["sxids"].get(number)
    if entry is None:
        return {"sxid": number, "name": "unknown SXid", "class": None, "table": None,
                "severity": UNKNOWN_SEVERITY[fatal_in_log], "action": UNKNOWN_ACTION % number, "note": None}
    klass = catalog["classes"][entry["class"]]
    severity = _severity(entry["class"], klass["severity"], fatal_in_log)
    return {"sxid": number, "name": entry["name"], "class": entry["class"], "table": klass["table"],
            "severity": severity, "action": _action(catalog["classes"], klass, severity), "note": entry.get("note")}


def _action(classes, klass, severity):
    """The class's action; when the line made it worse or milder than its class, the fatal or the non-fatal one."""
    if severity_rank(severity) > severity_rank(klass["severity"]):
        return classes["fatal"]["action"]
    if severity_rank(severity) < severity_rank(klass["severity"]):
        return classes["non_fatal"]["action"]
    return klass["action"]


def _severity(class_name, class_severity, fatal_in_log):
    if fatal_in_log is True or class_name == "always_fatal":
        return "critical"
    if fatal_in_log is False and class_name == "fatal":
        return "warning"
    return class_severity
