# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Driver rollouts, decided on the controller: what one host needs, whether the compatibility data allows
it, whether the new driver verified, the host's version record, the canary batches and the rollout report.

Plain functions over the effective policy (policy.py), gpu_facts and the host's record
(/var/lib/gpufleet/driver.json); the role `driver` calls them through the filter gpufleet.core.driver_plan,
driver_rollout.yml through the action gpufleet.core.driver_rollout (plugin_utils/rollout/run.py).
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re

from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.diagnose import diagnose_host
from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.knowledge import compare_versions

MODES = ("rollout", "rollback", "repair")
ACTIONS = ("none", "install", "restart")
HISTORY_LENGTH = 20

# Driver-layer findings of these severities fail the verification after a change.
VERIFY_SEVERITIES = ("critical",)

_EPOCH = re.compile(r"^\d+:")


# ---------------------------------------------------------------------------------------------------------
# Versions

def package_driver_version(package_version):
    """Driver version inside an OS package version: '550.90.07-1' -> '550.90.07', '3:550.90.07-1.el9' ->
    '550.90.07'; None stays None."""
    if not package_version:
        return None
    version = _EPOCH.sub("", str(package_version))
    return version.rsplit("-", 1)[0] if "-" in version else version


def installed_package_version(packages, name):
    """Version of package `name` from ansible.builtin.package_facts' `packages` ('550.90.07-1'), or None.
    An RPM's release is kept apart by package_facts; it is put back as '-release'."""
    entries = (packages or {}).get(name) or []
    if not entries or not name:
        return None
    entry = entries[-1]
    version = str(entry.get("version") or "")
    if entry.get("release"):
        version += "-%s" % entry["release"]
    return version or None


def install_names(package, target, package_version=None):
    """{"apt": name, "dnf": name} that install `package` at exactly the wanted version: package_version when
    given, otherwise the package whose upstream version is the driver version `target` (apt matches any
    Debian revision of it with '*'). None when there is no package or no target."""
    if not package or not (package_version or target):
        return None
    return {"apt": "%s=%s" % (package, package_version or "%s*" % target),
            "dnf": "%s-%s" % (package, package_version or target)}


def same_version(a, b):
    return a is not None and b is not None and compare_versions(str(a), str(b)) == 0


# ---------------------------------------------------------------------------------------------------------
# What one host needs

def present_gpus(facts):
    return [gpu for gpu in (facts or {}).get("gpus") or () if not gpu.get("lost")]


def loaded_version(facts):
    """Version of the loaded kernel module, when the facts show it (None during a mismatch without it)."""
    driver = (facts or {}).get("driver") or {}
    if driver.get("kernel_module_version"):
        return driver["kernel_module_version"]
    return None if driver.get("mismatch") else driver.get("version")


NO_PIN = "the policy sets no driver.pin to roll out"
NO_PACKAGE = "the policy sets no driver.package (the OS package that installs the driver)"


def policy_gaps(mode, policy):
    """[(key, why)] of what a policy lacks for this mode of rollout (empty: nothing)."""
    gaps = []
    if mode == "rollout" and not policy["driver"]["pin"]:
        gaps.append(("driver.pin", NO_PIN))
    if mode in ("rollout", "rollback") and not policy["driver"]["package"]:
        gaps.append(("driver.package", NO_PACKAGE))
    return gaps


def target_version(mode, policy, record):
    """(version, None) the host should end up on, or (None, why not)."""
    if mode == "rollout":
        pin = policy["driver"]["pin"]
        return (str(pin), None) if pin else (None, NO_PIN)
    if mode == "rollback":
        previous = (record or {}).get("previous")
        return (str(previous), None) if previous else (
            None, "no previous driver version is recorded on this host (nothing to roll back to)")
    return None, None


def gpu_names(facts, record):
    names = sorted({gpu.get("name") for gpu in present_gpus(facts) if gpu.get("name")})
    return names or list((record or {}).get("gpus") or [])


def required_toolkits(facts, policy):
    """CUDA versions the host needs: installed toolkits and policy cuda.toolkits_required."""
    found = [toolkit.get("version") for toolkit in ((facts or {}).get("host") or {}).get("cuda_toolkits") or ()]
    found += [str(version) for version in policy["cuda"]["toolkits_required"]]
    return [version for version in dict.fromkeys(found) if version]


def refusals(version, facts, policy, record, knowledge):
    """Why the compatibility data says `version` must not go on this host (empty: nothing against it)."""
    reasons = []
    for name in gpu_names(facts, record):
        supported, why = knowledge.driver_supports_gpu(version, name)
        if supported is False:
            reasons.append(why)
    for toolkit in required_toolkits(facts, policy):
        needed = knowledge.cuda_min_driver(toolkit)
        if needed is not None and compare_versions(version, needed) < 0:
            reasons.append("CUDA %s needs driver %s or newer; %s is older" % (toolkit, needed, version))
    return reasons


def expected_gpu_count(facts, record, policy):
    """GPUs that must be present after the change: those present now; when none answers (a mismatch
    hides them), the count the last verified change recorded, else the policy's gpus.expected_count."""
    present = len(present_gpus(facts))
    if present:
        return present
    return (record or {}).get("gpu_count") or policy["gpus"]["expected_count"] or 0


def plan_host(mode, policy, facts, record, installed_package, knowledge, force=False):
    """What the driver role does on one host.

    mode: rollout (to driver.pin), rollback (to the recorded previous version) or repair (load the
    installed driver's module where the kernel module and the library differ). installed_package: the
    package version now installed ('550.90.07-1') or None. Returns a dict: action (none | install |
    restart), target, installed, loaded, mismatch, refused (reasons; action is none then), error (a reason
    the host cannot be handled at all), expected_gpu_count, gpu_names.
    """
    if mode not in MODES:
        raise ValueError("mode must be one of %s, got %r" % (", ".join(MODES), mode))
    driver = (facts or {}).get("driver") or {}
    installed = package_driver_version(installed_package)
    plan = {"mode": mode, "action": "none", "target": None, "installed": installed, "installed_package": installed_package,
            "loaded": loaded_version(facts), "mismatch": bool(driver.get("mismatch")), "refused": [], "error": None,
            "expected_gpu_count": expected_gpu_count(facts, record, policy), "gpu_names": gpu_names(facts, record)}
    if mode == "repair":
        plan["target"] = installed or driver.get("userspace_version")
        plan["action"] = "restart" if plan["mismatch"] else "none"
        return plan
    target, why_not = target_version(mode, policy, record)
    if target is None:
        plan["error"] = why_not
        return plan
    if not policy["driver"]["package"]:
        plan["error"] = NO_PACKAGE
        return plan
    plan["target"] = target
    if same_version(installed, target):
        needs_load = plan["mismatch"] or (plan["loaded"] is not None and not same_version(plan["loaded"], target))
        plan["action"] = "restart" if needs_load else "none"
        return plan
    reasons = refusals(target, facts, policy, record, knowledge)
    if reasons and not (force or policy["driver"]["rollout"]["force"]):
        plan["refused"] = reasons
        return plan
    plan["action"] = "install"
    return plan


# ---------------------------------------------------------------------------------------------------------
# After the change

def driver_layer_failures(host, facts, policy, knowledge):
    """Driver-layer findings at a failing severity, as 'rule: summary' lines."""
    findings = diagnose_host(host, facts, policy, knowledge)
    return ["%s: %s" % (finding["rule"], finding["summary"]) for finding in findings
            if finding["layer"] == "driver" and finding["severity"] in VERIFY_SEVERITIES]


def verify_driver(host, facts, policy, expected_version, expected_gpu_count, knowledge):
    """Problems with the driver after a change (empty: verified): no driver answering, a kernel module
    that differs from the library, a version other than expected, fewer GPUs than before, or a critical
    driver-layer finding of the diagnose rules."""
    facts = facts or {}
    driver = facts.get("driver") or {}
    problems = []
    if not facts.get("nvidia_present"):
        problems.append("no NVIDIA driver answered after the change")
    if driver.get("mismatch"):
        problems.append("kernel module %s and userspace library %s still differ" % (
            driver.get("kernel_module_version") or "?", driver.get("userspace_version") or "?"))
    if expected_version and facts.get("nvidia_present") and not same_version(driver.get("version"), expected_version):
        problems.append("driver %s answers, not %s" % (driver.get("version"), expected_version))
    present = present_gpus(facts)
    if expected_gpu_count and len(present) < expected_gpu_count:
        lost = [gpu.get("pci_bus_id") for gpu in facts.get("gpus") or () if gpu.get("lost")]
        problems.append("%d of %d GPUs present%s" % (len(present), expected_gpu_count,
                                                     " (lost: %s)" % ", ".join(map(str, lost)) if lost else ""))
    problems.extend(driver_layer_failures(host, facts, policy, knowledge))
    return problems


def updated_record(record, plan, facts, now):
    """The host's record after a verified change: current, previous, gpu_count, gpus, history."""
    record = dict(record or {})
    history = list(record.get("history") or [])
    current = plan["target"]
    if plan["action"] == "install":
        history.append({"at": now, "mode": plan["mode"], "from": plan["installed"], "to": current})
        record["previous"] = plan["installed"]
    elif plan["action"] == "restart":
        history.append({"at": now, "mode": plan["mode"], "from": plan["loaded"], "to": current, "reload": True})
    record["current"] = current
    record["gpu_count"] = len(present_gpus(facts))
    record["gpus"] = gpu_names(facts, record)
    record["history"] = history[-HISTORY_LENGTH:]
    return record


# ---------------------------------------------------------------------------------------------------------
# The rollout: settings, batches, stop rule, report

def rollout_settings(policies):
    """{batches, max_fail_percentage} shared by the policies of every host of a rollout.

    policies: {host: effective policy}. Raises ValueError naming the hosts when they differ.
    """
    settings = {}
    for host in sorted(policies):
        rollout = policies[host]["driver"]["rollout"]
        key = (tuple(rollout["batches"]), rollout["max_fail_percentage"])
        settings.setdefault(key, []).append(host)
    if len(settings) > 1:
        described = "; ".join("batches %s, max_fail_percentage %s: %s" % (list(key[0]), key[1], ", ".join(hosts[:5]))
                              for key, hosts in settings.items())
        raise ValueError("driver.rollout.batches and max_fail_percentage differ between the hosts of this "
                         "rollout (%s): roll out each group on its own with --limit" % described)
    if not settings:
        return {"batches": [1, "10%", "100%"], "max_fail_percentage": 0}
    batches, max_fail = next(iter(settings))
    return {"batches": list(batches), "max_fail_percentage": max_fail}


def _batch_size(value, total):
    if isinstance(value, str) and value.endswith("%"):
        return int(int(value[:-1]) / 100.0 * total) or 1
    return int(value) if int(value) > 0 else total


def batch_sizes(host_count, batches):
    """Sizes of the batches Ansible makes from `serial: batches` for host_count hosts (the last repeats)."""
    sizes, left, position = [], host_count, 0
    while left > 0:
        size = min(_batch_size(batches[position], host_count), left)
        sizes.append(size)
        left -= size
        position = min(position + 1, len(batches) - 1)
    return sizes


def batch_exceeds(statuses, max_fail_percentage):
    """True when the failed share of one batch's hosts is above max_fail_percentage (Ansible's rule)."""
    if not statuses:
        return False
    failed = sum(1 for status in statuses if status in ("failed", "refused"))
    return failed * 100.0 / len(statuses) > max_fail_percentage


CHECK_MODE_MARK = "[check mode] "


def rollout_report(mode, planned, outcomes, settings, started_at, finished_at, check_mode=False, not_acted=None):
    """The rollout report: every planned host's outcome, and the hosts that changed (in check mode: would
    change), stayed as they were, failed (refused included) or were never touched (the rollout stopped before
    their batch); not_acted: {host: message} of the hosts the rollout refused before any batch (acting_target)."""
    changed = "would_change" if check_mode else "changed"
    hosts = {}
    for host in planned:
        outcome = dict(outcomes.get(host) or {"status": "untouched"})
        if outcome.get("status") in (None, "skipped"):
            outcome["status"] = "untouched"
        if outcome["status"] == "changed":
            outcome["status"] = changed
        hosts[host] = outcome
    for host, message in sorted((not_acted or {}).items()):
        hosts[host] = {"status": "not_acted", "msg": message}
    by_status = {status: sorted(host for host, outcome in hosts.items() if outcome["status"] == status)
                 for status in ("changed", "would_change", "unchanged", "failed", "refused", "untouched",
                                "not_acted")}
    failed_batches = sorted({hosts[host].get("batch") for host in by_status["failed"] + by_status["refused"]
                             if hosts[host].get("batch")})
    return {
        "mode": mode,
        "check_mode": bool(check_mode),
        "started_at": started_at,
        "finished_at": finished_at,
        "batches": settings["batches"],
        "batch_sizes": batch_sizes(len(planned), settings["batches"]),
        "max_fail_percentage": settings["max_fail_percentage"],
        "stopped": bool(by_status["untouched"]) and bool(failed_batches),
        "stopped_after_batch": failed_batches[0] if failed_batches and by_status["untouched"] else None,
        "changed": by_status["changed"],
        "would_change": by_status["would_change"],
        "unchanged": by_status["unchanged"],
        "failed": by_status["failed"] + by_status["refused"],
        "untouched": by_status["untouched"],
        "not_acted": by_status["not_acted"],
        "hosts": hosts,
    }


def host_list(hosts, limit=8):
    shown = ", ".join(hosts[:limit])
    return shown + (" and %d more" % (len(hosts) - limit) if len(hosts) > limit else "")


def report_summary(report, path=None):
    """A few lines for the screen; in check mode each of them says so."""
    check_mode = report["check_mode"]
    verb = "would change" if check_mode else "changed"
    changed = report["would_change"] if check_mode else report["changed"]
    lines = ["Driver %s%s: %d %s, %d unchanged, %d failed, %d untouched, %d not acted on (batches %s of %s, "
             "max_fail_percentage %s)" % (
                 report["mode"], " planned, nothing changed" if check_mode else "", len(changed), verb,
                 len(report["unchanged"]), len(report["failed"]), len(report["untouched"]), len(report["not_acted"]),
                 report["batch_sizes"], report["batches"], report["max_fail_percentage"])]
    for host in changed:
        outcome = report["hosts"][host]
        lines.append("  %s %s: %s -> %s (%s)" % (verb, host, outcome.get("from") or "?", outcome.get("to") or "?",
                                                 outcome.get("action") or "?"))
    for host in report["failed"]:
        lines.append("  FAILED %s: %s" % (host, report["hosts"][host].get("msg") or "see the output above"))
    for host in report["not_acted"]:
        lines.append("  NOT ACTED ON %s: refused before any batch (see its message above)" % host)
    if report["stopped"]:
        lines.append("  stopped after batch %s; never touched: %s"
                     % (report["stopped_after_batch"], host_list(report["untouched"])))
    if path:
        lines.append("  %s: %s" % ("plan (check mode, not a rollout report)" if check_mode else "report", path))
    return [CHECK_MODE_MARK + line for line in lines] if check_mode else lines
