# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpufleet.core.gpu_facts: the module on the host, plus the audit's per-host steps on the controller, in one task
(docs: plugins/modules/gpu_facts.py).

Every per-host task costs the controller a worker fork and a result, skipped or not, so the audit's per-host part
is this one task: with not_audited_msg (the run's policy check failed) the host is not contacted and is marked
not audited, as gpufleet.core.audit_verdict does (exit status 4); else the module runs on the host; where the
inventory gives the host's BMC (bmc_address) the BMC is read over LAN from the controller, in this worker, by the
code of the bmc_facts module, and replaces the in-band bmc facts; with run_dir the host's facts file
(facts/<name>.json) is written here, as soon as its result arrives, and named in the result (gpufleet_facts_file),
so that audit_report does not write it again, with what the run store keeps of the host (gpufleet_store_extract:
the facts file compressed, the GPUs' error counters; plugin_utils/store/extract.py), so that the store only inserts;
with policy (the host's effective policy) the host's own rules run here too (gpufleet_diagnosis: its findings, fleet
view and summary line; plugin_utils/audit/host_step.py), so that audit_report neither holds nor reads its facts; with
keep_facts=false the facts then leave the result (the file holds them). Before any of these, the facts are checked
against the facts schema (plugin_utils/audit/facts_validation.py): facts that do not match make the host's collection
failed, with what is wrong, and go no further. The checks, the diagnosis and the facts file are the host's step
(plugin_utils/audit/host_step.py, worker_step), the code audit_report runs for a host its worker did not step.

The imports below are loaded once, in the controller's main process, before the workers fork: the linear
strategy loads every task's action class there (action_loader.get(..., class_only=True)).
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import time

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.module_utils.common.process import get_bin_path
from ansible.plugins.action import ActionBase
from ansible.utils.vars import merge_hash

from ansible_collections.gpufleet.core.plugins.module_utils.args_common import (
    INVENTORY_BMC_PREFIX, WINDOW_HOURS, inventory_bmc_spec)
from ansible_collections.gpufleet.core.plugins.module_utils.bmc_lan import LAN_DEFAULTS, read_bmc_over_lan
from ansible_collections.gpufleet.core.plugins.module_utils.host_io import DeadlineHost, LiveHost
from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.diagnose import knowledge_loader
from ansible_collections.gpufleet.core.plugins.plugin_utils.audit.facts_validation import facts_checker
from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.host_clock import measured_offset
from ansible_collections.gpufleet.core.plugins.plugin_utils.audit.host_step import WORKER_KEYS, worker_step
from ansible_collections.gpufleet.core.plugins.plugin_utils.audit.play_results import verdict_result

# options only this action reads; removed from the module's arguments (the module documents them)
ACTION_SPEC = {
    "not_audited_msg": {"type": "str"},
    "run_dir": {"type": "path"},
    "keep_facts": {"type": "bool", "default": True},
    "policy": {"type": "dict"},
    "validation": {"type": "dict"},
}
ACTION_SPEC.update(inventory_bmc_spec())
# The shipped knowledge (Xid catalog, CUDA and MIG tables), loaded here once, before the workers fork, for every
# host's diagnosis; a policy with its own catalogs has them loaded in the worker.
KNOWLEDGE_FOR = knowledge_loader()
try:
    KNOWLEDGE_FOR(None)
except Exception:  # pylint: disable=broad-except  # the worker loads it again and reports what is wrong
    pass
# The facts schema's checks, compiled here once before the workers fork (3.4 ms in each host's worker otherwise,
# seven times the check itself); a schema that cannot be read fails each host's check with the reason.
try:
    facts_checker()
except (OSError, ValueError):
    pass
# seconds of the task's timeout kept back from the BMC read, for the facts file and the result
BMC_DEADLINE_MARGIN = 2.0


def split_args(args):
    """(this action's options, the module's arguments)."""
    module_args = dict(args)
    action_args = {name: module_args.pop(name) for name in ACTION_SPEC if name in module_args}
    return action_args, module_args


def scrubbed(text, secret):
    return text.replace(secret, "********") if secret else text


def window_hours(module_args):
    try:
        hours = int(module_args.get("kernel_log_window_hours", WINDOW_HOURS))
    except (TypeError, ValueError):
        return WINDOW_HOURS
    return hours if hours > 0 else WINDOW_HOURS


def bmc_params(options, module_args):
    """bmc_facts' options for the BMC the inventory gives, or (None, why) when they are incomplete."""
    missing = [name for name in ("bmc_user", "bmc_password") if not options.get(name)]
    if missing:
        return None, "%s not set for the BMC at %s" % (" and ".join(missing), options["bmc_address"])
    params = dict(LAN_DEFAULTS, window_hours=window_hours(module_args))
    params.update((name[len(INVENTORY_BMC_PREFIX):], value) for name, value in options.items()
                  if name.startswith(INVENTORY_BMC_PREFIX))
    return params, None


def note_clock_offset(result, module_args, sent, answered):
    """Sets the facts' clock_offset_s: the host's clock minus the controller's (plugin_utils/rules/host_clock.py); not for
    facts replayed from a fixture or read from a capture, whose collected_at is the moment they were recorded."""
    facts = result["ansible_facts"]["gpufleet"]
    if (not isinstance(facts, dict) or module_args.get("fixture") or module_args.get("capture")
            or facts.get("source") == "replay"):
        return
    offset = measured_offset(facts.get("collected_at"), sent, answered)
    if offset is not None:
        result["ansible_facts"] = dict(result["ansible_facts"], gpufleet=dict(facts, clock_offset_s=offset))


def controller_host(deadline=None):
    """The controller as a LiveHost (programs found on PATH and in the sbin folders, as AnsibleModule finds them),
    its commands bounded by deadline (time.monotonic()) when given."""
    host = LiveHost(find_bin=_find_bin)
    return DeadlineHost(host, deadline) if deadline is not None else host


def _find_bin(name):
    try:
        return get_bin_path(name)
    except ValueError:
        return None


class ActionModule(ActionBase):
    _supports_check_mode = True
    _supports_async = True

    def run(self, tmp=None, task_vars=None):
        task_vars = task_vars or {}
        started = time.monotonic()
        result = super(ActionModule, self).run(tmp, task_vars)
        del tmp  # tmp no longer has any effect
        action_args, module_args = split_args(self._task.args)
        validation = ArgumentSpecValidator(ACTION_SPEC).validate(action_args)
        options = validation.validated_parameters
        if validation.error_messages:
            result.update(failed=True, msg="gpu_facts: %s" % "; ".join(validation.error_messages))
            return result

        if options.get("not_audited_msg"):
            # the run's policy check failed: the host is not contacted, and leaves the play as not audited (4)
            result.update(verdict_result("not_audited", options["not_audited_msg"]))
            return result

        wrap_async = self._task.async_val
        sent = time.time()
        result = merge_hash(result, self._execute_module(module_args=module_args, task_vars=task_vars,
                                                         wrap_async=wrap_async))
        answered = time.time()
        for key in WORKER_KEYS:  # this action's keys, never a host's
            result.pop(key, None)
        if not wrap_async:
            self._remove_tmp_path(self._connection._shell.tmpdir)
        if wrap_async or "ansible_facts" not in result or "gpufleet" not in result["ansible_facts"]:
            return result

        note_clock_offset(result, module_args, sent, answered)
        if options.get("bmc_address"):
            self._join_bmc(result, options, module_args, started)
        if options.get("validation") is not None:
            result["ansible_facts"] = dict(result["ansible_facts"], gpufleet=dict(
                result["ansible_facts"]["gpufleet"], validation=options["validation"]))
        host = task_vars["inventory_hostname"]
        return worker_step(result, host, task_vars.get("ansible_play_hosts_all") or [host], options.get("run_dir"),
                           options.get("policy"), options["keep_facts"], KNOWLEDGE_FOR)

    def _join_bmc(self, result, options, module_args, started):
        """The BMC read over LAN from the controller replaces the in-band bmc facts; a BMC that cannot be read at
        all leaves them as they are, with a warning (never the password)."""
        params, reason = bmc_params(options, module_args)
        if params is None:
            result.setdefault("warnings", []).append("the BMC over LAN was not read: %s" % reason)
            return
        timeout = self._task.timeout
        deadline = started + timeout - BMC_DEADLINE_MARGIN if timeout else None
        try:
            bmc = read_bmc_over_lan(controller_host(deadline), params)
        except Exception as exc:  # pylint: disable=broad-except  # a BMC must not cost the host's facts
            result.setdefault("warnings", []).append(
                "the BMC over LAN could not be read: %s" % scrubbed(str(exc), params["password"]))
            return
        facts = dict(result["ansible_facts"]["gpufleet"])
        facts["bmc"] = bmc
        result["ansible_facts"] = dict(result["ansible_facts"], gpufleet=facts)
