# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The playbooks' documented settings (audit.yml's header, README, docs/incident.md, docs/awx.md, remediate.yml's
header): what each allows, checked on the controller with the policies, before any host is contacted
(policy_check's O(settings); tasks/audit_run.yml). A bad value is a problem that names the variable, what it allows and what it
got, in the policy's own format, so that it ends the run the way an invalid policy does (exit status 4).

The allowed values come from where they are used: the options of gpu_facts (its documentation), the fail
severities of the vocabulary, the collector's subsets, the store's URL reader.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import collections
import functools

import yaml
from ansible.module_utils.parsing.convert_bool import boolean
from ansible.errors import AnsibleValueOmittedError
from ansible.parsing.vault import EncryptedString

from ansible_collections.gpufleet.core.plugins.module_utils.args_common import (
    BMC_PROTOCOLS, IPMI_INTERFACES, KERNEL_LOG_SOURCES)
from ansible_collections.gpufleet.core.plugins.module_utils.collector import ALL_SUBSETS
from ansible_collections.gpufleet.core.plugins.module_utils.vocabulary import FAIL_SEVERITIES
from ansible_collections.gpufleet.core.plugins.modules import gpu_facts
from ansible_collections.gpufleet.core.plugins.modules.gpu_evidence import parse_time
from ansible_collections.gpufleet.core.plugins.plugin_utils.policy.problems import Problem, describe_value, one_line
from ansible_collections.gpufleet.core.plugins.plugin_utils.orchestration import SLICE_COUNT, SLICE_NUMBER
from ansible_collections.gpufleet.core.plugins.plugin_utils.store.engine import redacted

# Checker: value -> None when allowed, else what is allowed ("must be ..."). shown: how a bad value is shown.
Setting = collections.namedtuple("Setting", "check shown")

SUBSET_WORDS = ("all", "min") + ALL_SUBSETS
STORE_BACKENDS = ("sqlite", "postgresql", "postgres")


@functools.lru_cache(maxsize=None)
def gpu_facts_choices(option):
    """The choices of one gpu_facts option, from the module's documentation (the argument spec's twin), read
    once: a fleet's check asks for them for every host."""
    return tuple(yaml.safe_load(gpu_facts.DOCUMENTATION)["options"][option]["choices"])


def one_of(choices):
    def check(value):
        if not isinstance(value, str) or value not in choices():
            return "must be one of %s" % ", ".join(choices())
        return None
    return check


def flag(value):
    try:
        boolean(value, strict=True)
    except TypeError:
        return "must be true or false"
    return None


def whole_number(minimum, maximum=None):
    allowed = ("a whole number from %d to %d" % (minimum, maximum) if maximum is not None
               else "a whole number of at least %d" % minimum)

    def check(value):
        try:
            number = int(value) if not isinstance(value, (bool, float)) else None
        except (TypeError, ValueError):
            number = None
        if number is None or number < minimum or (maximum is not None and number > maximum):
            return "must be " + allowed
        return None
    return check


def positive_number(value):
    try:
        number = float(value) if not isinstance(value, bool) else 0.0
    except (TypeError, ValueError):
        number = 0.0
    if not number > 0 or number == float("inf"):
        return "must be a number greater than 0"
    return None


def text(value):
    if not isinstance(value, str) or not value.strip():
        return "must be a non-empty string"
    return None


def folder(value):
    """A folder or null (gpufleet_report_dir: null or empty means the default)."""
    if value is not None and not isinstance(value, str):
        return "must be a folder name (a string) or null"
    return None


def unset_or(check):
    """AWX passes a survey's unanswered question as an empty string: the setting is then unset."""
    def check_set(value):
        return None if value is None or value == "" else check(value)
    return check_set


def as_list(value):
    """A list option as Ansible takes it: a list, or one string of comma-separated items."""
    if isinstance(value, str):
        return [item.strip() for item in value.split(",")]
    return value if isinstance(value, list) else None


def text_list(value):
    items = as_list(value)
    if items is None or any(text(item) for item in items):
        return "must be a list of non-empty strings"
    return None


def subset_list(value):
    items = as_list(value)
    if items is None or any(not isinstance(item, str) or item.lstrip("!") not in SUBSET_WORDS for item in items):
        return "must be a list of %s (prefix ! to leave one out)" % ", ".join(SUBSET_WORDS)
    return None


def point_in_time(value):
    """An incident window's end: ISO 8601 or epoch seconds, as gpu_evidence reads it."""
    try:
        parse_time(value)
    except (TypeError, ValueError, OverflowError):
        return "must be an ISO 8601 time (2026-11-30T06:00:00Z; no zone: UTC) or epoch seconds"
    return None


def store_url(value):
    allowed = "must be a database URL: postgresql://user:password@host:5432/name or sqlite:////path/file.sqlite"
    if text(value):
        return allowed
    try:
        # here: SQLAlchemy is optional (the store's dependency) and costly to import; only a store URL pays for it
        from sqlalchemy.engine import make_url
    except ImportError:  # the store says so itself, when it is opened
        return None
    try:
        backend = make_url(value).get_backend_name()
    except Exception:  # pylint: disable=broad-except  # SQLAlchemy raises several kinds for a bad URL
        return allowed
    return None if backend in STORE_BACKENDS else allowed


def shown_value(value):
    return "got %s" % describe_value(value)


def shown_secret(_value):
    return "got a value that is not shown"


def shown_url(value):
    return "got %s" % describe_value(redacted(value) if isinstance(value, str) else value)


def setting(check, shown=shown_value):
    return Setting(check, shown)


SETTINGS = collections.OrderedDict([
    # what is audited and where the reports go
    ("gpufleet_audit_hosts", setting(text)),
    ("gpufleet_report_dir", setting(folder)),
    ("gpufleet_textfile_dir", setting(folder)),
    ("gpufleet_fail_severity", setting(one_of(lambda: FAIL_SEVERITIES))),
    ("gpufleet_audit_fail_severity", setting(one_of(lambda: FAIL_SEVERITIES))),
    ("gpufleet_audit_compare_with", setting(text)),
    ("gpufleet_audit_suffix", setting(folder)),
    ("gpufleet_store", setting(flag)),
    ("gpufleet_report_compress", setting(flag)),
    ("gpufleet_store_url", setting(store_url, shown_url)),
    # the collection (gpu_facts' options)
    ("gpufleet_facts_source", setting(one_of(lambda: gpu_facts_choices("source")))),
    ("gpufleet_facts_fixture", setting(text)),
    ("gpufleet_capture", setting(text)),
    ("gpufleet_gather_subset", setting(subset_list)),
    ("gpufleet_keep_facts", setting(flag)),
    ("gpufleet_collect_timeout", setting(whole_number(1))),
    ("gpufleet_collect_margin", setting(whole_number(0))),
    ("gpufleet_services", setting(text_list)),
    ("gpufleet_kernel_log_source", setting(one_of(lambda: KERNEL_LOG_SOURCES))),
    ("gpufleet_kernel_log_files", setting(text_list)),
    ("gpufleet_kernel_log_window_hours", setting(whole_number(1))),
    ("gpufleet_bmc_address", setting(text)),
    ("gpufleet_bmc_user", setting(text)),
    ("gpufleet_bmc_password", setting(text, shown_secret)),
    ("gpufleet_bmc_protocol", setting(one_of(lambda: tuple(BMC_PROTOCOLS)))),
    ("gpufleet_bmc_port", setting(whole_number(1, 65535))),
    ("gpufleet_bmc_interface", setting(one_of(lambda: tuple(IPMI_INTERFACES)))),
    ("gpufleet_bmc_cipher_suite", setting(whole_number(0))),
    ("gpufleet_kubernetes_kubectl", setting(flag)),
    ("gpufleet_kubernetes_kubeconfig", setting(text)),
    ("gpufleet_kubernetes_configmap", setting(text)),
    ("gpufleet_kubernetes_device_plugin_config", setting(text_list)),
    # slicing outside AWX (docs/awx.md)
    ("gpufleet_run_group", setting(unset_or(text))),
    (SLICE_NUMBER, setting(unset_or(whole_number(1)))),
    (SLICE_COUNT, setting(unset_or(whole_number(1)))),
    # remediate.yml
    ("gpufleet_remediation_batch_size", setting(whole_number(1))),
    # incident.yml (docs/incident.md)
    ("gpufleet_incident_since", setting(point_in_time)),
    ("gpufleet_incident_until", setting(point_in_time)),
    ("gpufleet_incident_hours", setting(positive_number)),
    ("gpufleet_incident_timeout", setting(whole_number(1))),
    ("gpufleet_incident_dcgm_diag", setting(flag)),
    ("gpufleet_incident_bug_report", setting(flag)),
    ("gpufleet_incident_validate", setting(flag)),
])


OMITTED = object()


def read_setting(variables, name):
    """(value, None), or (None, problem) when the value cannot be templated; (OMITTED, None) for a value that is
    `omit` on this host (the task that passes it leaves the option out)."""
    try:
        return variables[name], None
    except AnsibleValueOmittedError:
        return OMITTED, None
    except Exception as error:  # pylint: disable=broad-except  # Ansible templating raises its own errors
        return None, Problem((), "cannot be read: %s" % one_line(error), name)


def slice_problem(values):
    """The slice's number and count go together, number at most count (values: the settings that are fine)."""
    number, count = (values.get(name) if values.get(name) != "" else None for name in (SLICE_NUMBER, SLICE_COUNT))
    if number is not None and count is not None and int(number) > int(count):
        return Problem((), "must be at most %s (%s), got %s" % (SLICE_COUNT, count, describe_value(number)),
                       SLICE_NUMBER)
    if (number is None) != (count is None):
        alone, missing = (SLICE_NUMBER, SLICE_COUNT) if count is None else (SLICE_COUNT, SLICE_NUMBER)
        return Problem((), "must be set together with %s" % missing, alone)
    return None


def setting_problems(variables):
    """Problem(path=(), message, variable) for every documented setting of one host's variables (a mapping)
    that is set to a value it does not allow; [] when all are fine."""
    problems, good = [], {}
    for name, rule in SETTINGS.items():
        if name not in variables:
            continue
        value, problem = read_setting(variables, name)
        if value is OMITTED or isinstance(value, EncryptedString):
            continue  # omitted: unset on this host; a vaulted value (!vault) is decrypted by the task that uses it
        if problem is None:
            allowed = rule.check(value)
            problem = Problem((), "%s, %s" % (allowed, rule.shown(value)), name) if allowed else None
        if problem is None:
            good[name] = value
        else:
            problems.append(problem)
    if not [problem for problem in problems if problem.variable in (SLICE_NUMBER, SLICE_COUNT)]:
        together = slice_problem(good)
        problems += [together] if together else []
    return problems
