# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The steps of a driver rollout that the controller takes (the action plugin gpufleet.core.driver_rollout):
plan it, start a batch, end a batch (record its outcomes, stop the rollout when it failed beyond the limit),
and write the report.

What changes while the rollout runs (the batch number, whether it stopped, each host's outcome) is kept in
the rollout's state file, a hidden file in the report folder written atomically at every step and removed
once the report is written. The decisions themselves are in driver_plan.py.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
import os
import tempfile

from ansible_collections.gpufleet.core.plugins.plugin_utils.rollout import plan
from ansible_collections.gpufleet.core.plugins.plugin_utils.acting_target import refusal_message
from ansible_collections.gpufleet.core.plugins.plugin_utils.run_folder import report_root, write_atomically

ROLLOUT_MODES = ("rollout", "rollback")
OUTCOME_STATUSES = ("changed", "unchanged", "failed", "refused", "skipped")
STATE_VERSION = 1
STATE_MODE = 0o600
REPORT_MODE = 0o644
REPORT_FOLDER_MODE = 0o755


class RolloutError(ValueError):
    """Input or state a step cannot work with; the message names it."""


# ---------------------------------------------------------------------------------------------------------
# The state file

def read_state(path):
    try:
        with open(path, encoding="utf-8") as handle:
            state = json.load(handle)
    except (OSError, ValueError) as error:
        raise RolloutError("cannot read the rollout state %s (written by the plan step): %s" % (path, error))
    if not isinstance(state, dict) or state.get("version") != STATE_VERSION:
        raise RolloutError("%s is not a driver rollout state of version %d" % (path, STATE_VERSION))
    return state


def write_state(path, state):
    write_atomically(path, json.dumps(state, indent=1, sort_keys=True) + "\n", mode=STATE_MODE)


def new_state_file(folder, mode, stamp):
    """A state file of its own in folder, even for two rollouts started in the same second."""
    handle, path = tempfile.mkstemp(prefix=".driver-%s-%s." % (mode, stamp), suffix=".state.json", dir=folder)
    os.close(handle)
    return path


# ---------------------------------------------------------------------------------------------------------
# Steps

def policies_by_host(hosts, host_policy, policies):
    """{host: effective policy} from gpufleet.core.policy_check's host_policy and policies."""
    missing = [host for host in hosts if host_policy.get(host) not in policies]
    if missing:
        raise RolloutError("no checked policy for %s; run gpufleet.core.policy_check on the same hosts first"
                           % ", ".join(missing[:10]))
    return {host: policies[host_policy[host]] for host in hosts}


def check_policy_gaps(mode, by_host):
    """RolloutError naming each key of driver that a host's policy lacks for this mode, before any host is
    contacted."""
    missing = {}
    for host in sorted(by_host):
        for key, why in plan.policy_gaps(mode, by_host[host]):
            missing.setdefault((key, why), []).append(host)
    if missing:
        raise RolloutError("the %s cannot start, no host was contacted: %s. Set it in the hosts' policy "
                           "(docs/policy.md, driver)" % (mode, "; ".join(
                               "%s: %s for %d host(s): %s" % (key, why, len(hosts), plan.host_list(hosts))
                               for (key, why), hosts in sorted(missing.items()))))


def not_acted_plan(mode, policy):
    """What the rollout would have done on a host it refuses (acting_target), for its message."""
    if mode == "rollback":
        return "would roll back its driver to the version recorded on it"
    return "would install driver %s (driver.pin) from package %s" % (policy["driver"]["pin"], policy["driver"]["package"])


def not_acted_messages(mode, refused, by_host, check_mode):
    """{host: message} of the hosts refused before any batch: their plan, why, how to proceed."""
    mark = plan.CHECK_MODE_MARK if check_mode else ""
    return {host: mark + refusal_message(host, reason, not_acted_plan(mode, by_host[host]))
            for host, reason in sorted(refused.items())}


def plan_rollout(hosts, host_policy, policies, mode, report_dir, started_at, stamp, refused=None, check_mode=False):
    """The rollout's batches and failure limit (shared by every host's policy), and its new state file.

    Every host's policy is checked for what the mode needs (driver.pin, driver.package) and the batches; refused:
    {host: why no role may act on it} (acting_target): those hosts are left out of the batches and reported as not
    acted on. Without any host left, no state file is made (state_file is null)."""
    if mode not in ROLLOUT_MODES:
        raise RolloutError("mode must be one of %s, got %r" % (", ".join(ROLLOUT_MODES), mode))
    if not hosts:
        raise RolloutError("hosts is empty: no host to roll out to")
    by_host = policies_by_host(hosts, host_policy, policies)
    try:
        settings = plan.rollout_settings(by_host)
    except (KeyError, TypeError) as error:
        raise RolloutError("a checked policy has no driver.rollout batches and max_fail_percentage (%s)" % error)
    except ValueError as error:
        raise RolloutError(str(error))
    check_policy_gaps(mode, by_host)
    refused = {host: reason for host, reason in (refused or {}).items() if reason and host in by_host}
    targets = [host for host in hosts if host not in refused]
    not_acted = not_acted_messages(mode, refused, by_host, check_mode)
    result = {"mode": mode, "planned": targets, "not_acted": not_acted, "settings": settings,
              "batches": settings["batches"], "max_fail_percentage": settings["max_fail_percentage"],
              "batch_sizes": plan.batch_sizes(len(targets), settings["batches"]), "state_file": None,
              "started_at": started_at}
    if not targets:
        return result
    folder = report_root(report_dir)
    os.makedirs(folder, mode=REPORT_FOLDER_MODE, exist_ok=True)
    state = {"version": STATE_VERSION, "mode": mode, "planned": targets, "settings": settings,
             "report_root": folder, "started_at": started_at, "batch": 0, "stopped": False, "outcomes": {},
             "not_acted": not_acted}
    result["state_file"] = new_state_file(folder, mode, stamp)
    write_state(result["state_file"], state)
    return result


def start_batch(path, hosts):
    """The next batch's number, and whether the rollout has stopped (its hosts are then left untouched)."""
    state = read_state(path)
    unplanned = [host for host in hosts if host not in state["planned"]]
    if unplanned:
        raise RolloutError("%s not planned by this rollout (%s)" % (", ".join(unplanned[:10]), path))
    state["batch"] += 1
    write_state(path, state)
    return {"batch": state["batch"], "stopped": state["stopped"], "hosts": list(hosts)}


def checked_outcome(host, outcome):
    if outcome is None:
        return {"status": "skipped"}
    if not isinstance(outcome, dict) or outcome.get("status") not in OUTCOME_STATUSES:
        raise RolloutError("the outcome of %s must be a mapping with a status of %s, got %r"
                           % (host, ", ".join(OUTCOME_STATUSES), outcome))
    return dict(outcome)


def end_batch(path, outcomes):
    """Records the outcomes of one batch's hosts (null: the host was not changed, the rollout had stopped)
    and stops the rollout when more than max_fail_percentage of the batch failed."""
    state = read_state(path)
    unplanned = [host for host in outcomes if host not in state["planned"]]
    if unplanned:
        raise RolloutError("outcomes for %s, not planned by this rollout (%s)" % (", ".join(unplanned[:10]), path))
    checked = {host: checked_outcome(host, outcome) for host, outcome in outcomes.items()}
    state["outcomes"].update({host: outcome for host, outcome in checked.items() if outcome["status"] != "skipped"})
    exceeded = plan.batch_exceeds([outcome["status"] for outcome in checked.values()],
                                  state["settings"]["max_fail_percentage"])
    state["stopped"] = bool(state["stopped"] or exceeded)
    write_state(path, state)
    failed = sorted(host for host, outcome in checked.items() if outcome["status"] in ("failed", "refused"))
    # not "failed": Ansible would read a non-empty list there as the task failing
    return {"batch": state["batch"], "stopped": state["stopped"], "failed_hosts": failed}


def report_json(report):
    """The report file's text, as to_nice_json wrote it."""
    return json.dumps(report, indent=4, sort_keys=True, separators=(",", ": ")) + "\n"


def report_name(mode, stamp, check_mode):
    """driver-<mode>-<stamp>.json; in check mode driver-<mode>-<stamp>-check.json, never taken for a rollout."""
    return "driver-%s-%s%s.json" % (mode, stamp, "-check" if check_mode else "")


def write_report(path, finished_at, stamp, check_mode):
    """Writes the report (report_name) atomically in the report folder and removes the state file."""
    state = read_state(path)
    report = plan.rollout_report(state["mode"], state["planned"], state["outcomes"], state["settings"],
                                 state["started_at"], finished_at, check_mode, state.get("not_acted"))
    report_path = os.path.join(state["report_root"], report_name(state["mode"], stamp, check_mode))
    write_atomically(report_path, report_json(report), mode=REPORT_MODE)
    os.unlink(path)
    return {"report": report, "path": report_path, "summary": plan.report_summary(report, report_path)}
