# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""One line per host for the terminal and hosts.txt, from the facts (or the failure) of the collection.

Host names, messages, versions and GPU names are host-controlled text: each line goes through
text_safety.safe_line, so no control character or bidi override reaches the terminal or hosts.txt raw.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.gpufleet.core.plugins.plugin_utils.run_folder import FACTS_FILE_KEY
from ansible_collections.gpufleet.core.plugins.plugin_utils.text_safety import safe_line

MAX_REASON = 200


def collection_status(result):
    """ok, unreachable or failed, from the registered result of the gpu_facts task: ok when it holds the facts
    or names the facts file the gpu_facts action wrote them to (keep_facts=false leaves them only there)."""
    if not isinstance(result, dict) or not result:
        return "failed"
    if result.get("unreachable"):
        return "unreachable"
    if result.get("failed") or ("ansible_facts" not in result and FACTS_FILE_KEY not in result):
        return "failed"
    return "ok"


def result_facts(result):
    """The facts a registered gpu_facts result holds, or None (a failed collection, or facts left in the facts
    file)."""
    facts = ((result or {}).get("ansible_facts") or {}).get("gpufleet")
    return facts if isinstance(facts, dict) else None


def summary_line(host, result, facts=None):
    """One printable line: every unsafe character of the host's text escaped. facts: the host's facts when the
    result does not hold them (read from its facts file)."""
    return safe_line(_summary_text(host, result, facts))


def _summary_text(host, result, facts=None):
    status = collection_status(result)
    if status != "ok" or (facts is None and result_facts(result) is None):
        reason = (result or {}).get("msg") or "no result"
        return "%s: %s - %s" % (host, ("failed" if status == "ok" else status).upper(), safe_line(reason, MAX_REASON))
    facts = facts if facts is not None else result_facts(result)
    if not facts.get("nvidia_present"):
        text = "%s: ok - no NVIDIA stack found" % host
        return text + _error_suffix(facts)
    driver = facts.get("driver") or {}
    gpus = facts.get("gpus") or []
    parts = [
        "%s: ok" % host,
        "source=%s" % (facts.get("replay_of") or facts.get("source")) + (" (replay)" if facts.get("source") == "replay" else ""),
        "driver=%s" % (driver.get("version") or "?"),
        "cuda=%s" % (driver.get("cuda_driver_version") or "?"),
        "gpus=%d" % len(gpus),
    ]
    names = sorted({str(gpu["name"]) for gpu in gpus if gpu.get("name")})
    if names:
        parts.append("[%s]" % ", ".join(names))
    if driver.get("mismatch"):
        parts.append("DRIVER MISMATCH (kernel module %s, userspace %s)"
                     % (driver.get("kernel_module_version") or "?", driver.get("userspace_version") or "?"))
    lost = [str(gpu["index"]) for gpu in gpus if gpu.get("lost")]
    if lost:
        parts.append("lost=%s" % ",".join(lost))
    xids = sorted({event["xid"] for event in facts.get("xid_events") or []})
    if xids:
        parts.append("xid=%s" % ",".join(str(x) for x in xids))
    sxids = sorted({event["sxid"] for event in facts.get("sxid_events") or []})
    if sxids:
        parts.append("sxid=%s" % ",".join(str(x) for x in sxids))
    return " ".join(parts) + _error_suffix(facts)


def _error_suffix(facts):
    count = len(facts.get("errors") or [])
    return " errors=%d" % count if count else ""
