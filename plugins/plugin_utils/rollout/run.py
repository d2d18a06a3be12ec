# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The steps of a driver rollout that the controller takes (the action plugin gpufleet.core.driver_rollout):
plan it, start a batch, end a batch (record its outcomes, stop the rollout when it failed beyond the limit),
and write the report.

The rollout has a run folder like every run (run_folder.py): <report root>/<UTC start time>-driver-<mode>
(-check in check mode), made by the plan step. What changes while the rollout runs (the batch number, whether it
stopped, each host's outcome) is kept in its state file, hidden in the run folder (.rollout-state.json), written
atomically at every step and removed once the report (driver-<mode>.json beside it) is written. The decisions
themselves are in rollout/plan.py.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
import os
import time

from ansible_collections.gpufleet.core.plugins.plugin_utils.rollout import plan
from ansible_collections.gpufleet.core.plugins.plugin_utils.acting_target import refusal_message
from ansible_collections.gpufleet.core.plugins.plugin_utils.run_folder import (
    CHECK_MODE_SUFFIX, ROLLOUT_STATE_FILE, RUN_FILES, new_run_dir, report_root, run_stamp, write_atomically)

ROLLOUT_MODES = ("rollout", "rollback")
OUTCOME_STATUSES = ("changed", "unchanged", "failed", "refused", "skipped")
# 2: the state names its run folder (run_dir); version 1 kept the report root and wrote the report there
STATE_VERSION = 2
STATE_MODE = 0o600
REPORT_MODE = 0o644
TIME_FORMAT = "%Y-%m-%dT%H:%M:%SZ"


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


def run_kind(mode):
    """The kind of run (run_folder.RUN_KINDS) of a rollout in this mode: driver-rollout or driver-rollback."""
    return "driver-%s" % mode


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


def plan_rollout(hosts, host_policy, policies, mode, root, started_at, stamp, refused=None, check_mode=False):
    """The rollout's batches and failure limit (shared by every host's policy), its run folder (in the report root
    root names, run_folder.report_root) and its state file there.

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
    run_dir = new_run_dir(report_root(root), run_kind(mode), stamp, CHECK_MODE_SUFFIX if check_mode else "")
    state = {"version": STATE_VERSION, "mode": mode, "planned": targets, "settings": settings,
             "run_dir": run_dir, "started_at": started_at, "batch": 0, "stopped": False, "outcomes": {},
             "not_acted": not_acted}
    result.update(run_dir=run_dir, state_file=os.path.join(run_dir, ROLLOUT_STATE_FILE))
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


def write_report(path, finished_at, check_mode):
    """Writes the report (driver-<mode>.json) atomically in the rollout's run folder and removes the state file."""
    state = read_state(path)
    report = plan.rollout_report(state["mode"], state["planned"], state["outcomes"], state["settings"],
                                 state["started_at"], finished_at, check_mode, state.get("not_acted"))
    report_path = os.path.join(state["run_dir"], RUN_FILES[run_kind(state["mode"])][0])
    write_atomically(report_path, report_json(report), mode=REPORT_MODE)
    os.unlink(path)
    return {"report": report, "path": report_path, "summary": plan.report_summary(report, report_path)}


def rollout_step(args, check_mode, now=None):
    """The result of one step of gpufleet.core.driver_rollout (its arguments, as validated); RolloutError or OSError
    for input or files it cannot work with."""
    step = args["step"]
    now = time.time() if now is None else now
    if step == "plan":
        return plan_rollout(args["hosts"], args["host_policy"], args["policies"], args["mode"], args["report_root"],
                            time.strftime(TIME_FORMAT, time.gmtime(now)), run_stamp(now), args["refused"],
                            check_mode)
    if step == "start_batch":
        return start_batch(args["state_file"], args["hosts"])
    if step == "end_batch":
        return end_batch(args["state_file"], args["outcomes"])
    return write_report(args["state_file"], time.strftime(TIME_FORMAT, time.gmtime(now)), check_mode)
