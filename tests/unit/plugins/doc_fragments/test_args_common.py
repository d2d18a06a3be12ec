"""The argument specs several modules share (module_utils/args_common.py) are declared once, each documented
once by its twin doc fragment, and the modules that take them document exactly what they accept."""

import glob
import os
import re

import pytest
import yaml

from ansible_collections.gpufleet.core.plugins.action import gpu_facts as gpu_facts_action
from ansible_collections.gpufleet.core.plugins.doc_fragments import bmc_connection, kernel_log, nvidia_smi, run_folder
from ansible_collections.gpufleet.core.plugins.module_utils import args_common, bmc_lan
from ansible_collections.gpufleet.core.plugins.module_utils import kernel_log as kernel_log_reader
from ansible_collections.gpufleet.core.plugins.modules import audit_report, gpu_mode, incident_report, loadstep_report
from ansible_collections.gpufleet.core.plugins.modules import mig_layout
from tests.support.ansible_doc import rendered_docs
from tests.support.schema_check import ROOT

# what a doc entry and an argument spec entry must agree on
DOCUMENTED_KEYS = ("type", "default", "choices", "required", "elements")

TWINS = [
    (bmc_connection.ModuleDocFragment.DOCUMENTATION, args_common.BMC_CONNECTION_SPEC),
    (bmc_connection.ModuleDocFragment.INVENTORY, args_common.inventory_bmc_spec()),
    (nvidia_smi.ModuleDocFragment.DOCUMENTATION, args_common.nvidia_smi_spec()),
    (kernel_log.ModuleDocFragment.DOCUMENTATION, args_common.kernel_log_spec()),
    (run_folder.ModuleDocFragment.DOCUMENTATION, args_common.run_folder_spec(started_at=False)),
    (run_folder.ModuleDocFragment.STARTED_AT, {"started_at": args_common.run_folder_spec()["started_at"]}),
]


def documented_as(argument):
    """What the documentation of an argument spec entry says: required false and an unset default left out."""
    return dict((key, argument[key]) for key in DOCUMENTED_KEYS if argument.get(key) not in (None, False))


def assert_documents(options, spec):
    assert sorted(options) == sorted(spec)
    for name, argument in spec.items():
        assert documented_as(options[name]) == documented_as(argument), name


TWIN_IDS = ["bmc_connection", "bmc_connection.inventory", "nvidia_smi", "kernel_log", "run_folder",
            "run_folder.started_at"]


@pytest.mark.parametrize("fragment, spec", TWINS, ids=TWIN_IDS)
def test_each_shared_spec_is_documented_by_its_twin_fragment(fragment, spec):
    assert_documents(yaml.safe_load(fragment)["options"], spec)


def test_the_inventory_bmc_options_are_the_connection_options_named_bmc_and_never_required():
    spec = args_common.inventory_bmc_spec()
    assert sorted(spec) == ["bmc_address", "bmc_cipher_suite", "bmc_interface", "bmc_password", "bmc_port",
                            "bmc_protocol", "bmc_user"]
    assert spec["bmc_password"] == {"type": "str", "no_log": True}
    assert spec["bmc_protocol"] == {"type": "str", "default": "ipmi", "choices": ["ipmi", "redfish"]}
    assert args_common.BMC_CONNECTION_SPEC["address"] == {"type": "str", "required": True}


def test_the_gpu_facts_action_takes_the_inventory_bmc_options_and_reads_with_them():
    assert all(gpu_facts_action.ACTION_SPEC[name] == argument
               for name, argument in args_common.inventory_bmc_spec().items())
    options = dict((name, None) for name in gpu_facts_action.ACTION_SPEC)
    options.update(bmc_address="10.0.0.9", bmc_user="admin", bmc_password="pw", bmc_protocol="ipmi",
                   bmc_interface="lan", bmc_cipher_suite=3)
    params, why = gpu_facts_action.bmc_params(options, {"kernel_log_window_hours": 24})
    assert why is None
    assert params == dict(bmc_lan.LAN_DEFAULTS, address="10.0.0.9", user="admin", password="pw", protocol="ipmi",
                          port=None, interface="lan", cipher_suite=3, window_hours=24)


def test_a_read_without_bmc_facts_argument_spec_gets_its_defaults():
    assert bmc_lan.LAN_DEFAULTS == {"protocol": "ipmi", "port": None, "interface": "lanplus", "cipher_suite": None,
                                    "window_hours": args_common.WINDOW_HOURS, "timeout": 20, "ipmitool": None,
                                    "redfish_base_url": None, "redfish_chassis": None, "validate_certs": True}


def test_the_modules_document_exactly_the_options_they_accept():
    docs = rendered_docs("module", ["bmc_facts", "gpu_evidence", "gpu_facts", "gpu_mode", "mig_layout"])
    assert_documents(docs["bmc_facts"]["options"],
                     dict(args_common.BMC_CONNECTION_SPEC, **bmc_lan.BMC_READ_SPEC))
    gpu_facts_bmc = dict((name, entry) for name, entry in docs["gpu_facts"]["options"].items()
                         if name.startswith("bmc_"))
    assert_documents(gpu_facts_bmc, args_common.inventory_bmc_spec())
    for name in ("gpu_evidence", "gpu_facts"):
        kernel_log_options = dict((option, entry) for option, entry in docs[name]["options"].items()
                                  if option in ("kernel_log_source", "kernel_log_files"))
        assert_documents(kernel_log_options, args_common.kernel_log_spec())
    assert_documents(docs["gpu_mode"]["options"], gpu_mode.ARGUMENT_SPEC)
    assert_documents(docs["mig_layout"]["options"], mig_layout.ARGUMENT_SPEC)


def test_the_bmc_connection_options_are_declared_in_args_common_only():
    declared = re.compile(r"""["']?(cipher_suite|interface)["']?\s*[=:]\s*(dict\(|\{)""")
    places = []
    for path in glob.glob(os.path.join(ROOT, "plugins", "*", "*.py")):
        with open(path) as handle:
            if declared.search(handle.read()):
                places.append(os.path.relpath(path, ROOT))
    assert places == ["plugins/module_utils/args_common.py"]


def test_the_kernel_log_reader_takes_the_sources_the_option_offers():
    assert kernel_log_reader.SOURCES is args_common.KERNEL_LOG_SOURCES
    assert args_common.kernel_log_spec()["kernel_log_source"]["choices"] == ["auto", "journalctl", "dmesg", "files"]
    first, second = args_common.kernel_log_spec(), args_common.kernel_log_spec()
    assert first["kernel_log_files"]["default"] is not second["kernel_log_files"]["default"]


def test_the_kernel_log_options_are_declared_in_args_common_only():
    declared = re.compile(r"""kernel_log_source["']?\s*[=:]\s*(dict\(|\{)""")
    places = []
    for path in glob.glob(os.path.join(ROOT, "plugins", "*", "*.py")):
        with open(path) as handle:
            if declared.search(handle.read()):
                places.append(os.path.relpath(path, ROOT))
    assert places == ["plugins/module_utils/args_common.py"]


RUN_FOLDER_OPTIONS = ("hosts", "run_dir", "report_root", "started_at")


def test_the_run_folder_options_are_one_spec_each_report_module_extends():
    assert sorted(args_common.run_folder_spec()) == sorted(RUN_FOLDER_OPTIONS)
    assert args_common.run_folder_spec()["report_root"] == {"type": "path", "required": True}
    for module, started_at in ((audit_report, True), (loadstep_report, True), (incident_report, False)):
        spec = args_common.run_folder_spec(started_at=started_at)
        assert dict((name, module.ARGUMENT_SPEC[name]) for name in spec) == spec, module.__name__
    assert "started_at" not in incident_report.ARGUMENT_SPEC


def test_the_report_modules_document_the_run_folder_options_they_accept():
    docs = rendered_docs("module", ["audit_report", "incident_report", "loadstep_report"])
    for name, module in (("audit_report", audit_report), ("incident_report", incident_report),
                         ("loadstep_report", loadstep_report)):
        assert_documents(docs[name]["options"], module.ARGUMENT_SPEC)


def test_the_report_modules_declare_no_run_folder_option_of_their_own():
    declared = re.compile(r"""["']?\b(hosts|run_dir|report_root|started_at)["']?(\s*:\s*\{\s*["']type|\s*=\s*dict\()""")
    places = []
    for module in (audit_report, incident_report, loadstep_report):
        with open(module.__file__) as handle:
            places.extend("%s: %s" % (module.__name__, found.group(1)) for found in declared.finditer(handle.read()))
    assert places == []
