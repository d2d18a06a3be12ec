"""How many hours back events count when nothing says otherwise is one constant, args_common.WINDOW_HOURS: the
kernel log gpu_facts reads, the BMC event log bmc_facts reads, the policy's thresholds.xid_window_hours and the
playbooks' default all take it (issue 26)."""

import glob
import inspect
import os
import re

import yaml

from ansible_collections.gpufleet.core.plugins.action import gpu_facts as gpu_facts_action
from ansible_collections.gpufleet.core.plugins.module_utils.args_common import WINDOW_HOURS
from ansible_collections.gpufleet.core.plugins.module_utils import collector, kernel_log, workload_facts
from ansible_collections.gpufleet.core.plugins.modules import bmc_facts, gpu_facts
from ansible_collections.gpufleet.core.plugins.plugin_utils.policy.defaults import DEFAULT_POLICY
from tests.support.schema_check import ROOT


def test_every_default_window_is_the_constant():
    assert WINDOW_HOURS == 72
    assert DEFAULT_POLICY["thresholds"]["xid_window_hours"] == WINDOW_HOURS
    assert yaml.safe_load(gpu_facts.DOCUMENTATION)["options"]["kernel_log_window_hours"]["default"] == WINDOW_HOURS
    assert yaml.safe_load(bmc_facts.DOCUMENTATION)["options"]["window_hours"]["default"] == WINDOW_HOURS
    assert inspect.signature(kernel_log.collect_kernel_log).parameters["window_hours"].default == WINDOW_HOURS
    assert inspect.signature(workload_facts.collect_workload).parameters["window_hours"].default == WINDOW_HOURS
    assert inspect.signature(collector.Collection).parameters["kernel_log_window_hours"].default == WINDOW_HOURS
    assert gpu_facts_action.window_hours({}) == gpu_facts_action.window_hours({"kernel_log_window_hours": 0}) == 72


def test_the_playbooks_default_window_is_the_constant():
    with open(os.path.join(ROOT, "playbooks", "vars", "defaults.yml")) as handle:
        assert "gpufleet_kernel_log_window_hours | default(%d)" % WINDOW_HOURS in handle.read()


def test_no_code_writes_the_window_again():
    # a module's DOCUMENTATION cannot import the constant: its "default: 72" is checked above
    written = re.compile(r"^(?!\s*default: \d+$).*\b%d\b" % WINDOW_HOURS, re.MULTILINE)
    places = []
    for path in glob.glob(os.path.join(ROOT, "plugins", "**", "*.py"), recursive=True):
        with open(path) as handle:
            places += ["%s: %s" % (os.path.relpath(path, ROOT), line.group(0).strip())
                       for line in written.finditer(handle.read())]
    assert places == ["plugins/module_utils/args_common.py: WINDOW_HOURS = %d" % WINDOW_HOURS]
