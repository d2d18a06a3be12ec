"""The kernel log's API mismatch carries both versions, and the client's process where newer drivers name it.
Our own lines, in the formats the driver prints: up to 570 'the client has the version X, but', from 575 on
"the client 'comm' (pid N)" over five lines."""

import calendar
import time

import pytest

from ansible_collections.gpufleet.core.plugins.module_utils.facts_model import new_facts
from ansible_collections.gpufleet.core.plugins.module_utils.kernel_log import parse_kernel_log
from tests.support.schema_check import assert_valid_facts

NOW = calendar.timegm(time.strptime("2026-11-30T12:00:00", "%Y-%m-%dT%H:%M:%S"))

NEW_FORMAT_DMESG = (
    "[  812.402113] NVRM: API mismatch: the client 'pt_main_thread' (pid 48121)\n"
    "               NVRM: has the version 535.161.08, but this kernel module has\n"
    "               NVRM: the version 550.54.15.  Please make sure that this\n"
    "               NVRM: kernel module and all NVIDIA driver components\n"
    "               NVRM: have the same version.\n")

NEW_FORMAT_JOURNAL = (
    "2026-11-30T09:14:02+0000 gpu-h100-07 kernel: NVRM: API mismatch: the client 'nvidia-smi' (pid 3170)\n"
    "2026-11-30T09:14:02+0000 gpu-h100-07 kernel: NVRM: has the version 535.161.08, but this kernel module has\n"
    "2026-11-30T09:14:02+0000 gpu-h100-07 kernel: NVRM: the version 550.54.15.  Please make sure that this\n"
    "2026-11-30T09:14:02+0000 gpu-h100-07 kernel: NVRM: kernel module and all NVIDIA driver components\n"
    "2026-11-30T09:14:02+0000 gpu-h100-07 kernel: NVRM: have the same version.\n")

OLD_FORMAT_SYSLOG = (
    "Nov 30 08:01:44 gpu-a100-03 kernel: NVRM: API mismatch: the client has the version 550.90.07, but#012"
    "NVRM: this kernel module has the version 550.54.15.  Please#012NVRM: make sure that this kernel module and "
    "all NVIDIA driver#012NVRM: components have the same version.\n")


def events(text, **options):
    xids, kernel = parse_kernel_log(text, now=NOW, **options)
    facts = new_facts()
    facts.update(collected_at="2026-11-30T12:00:00Z", kernel_events=kernel, xid_events=xids)
    assert_valid_facts(facts)
    return kernel


def versions(event):
    return (event["client_version"], event["kernel_module_version"], event["client_process"], event["client_pid"])


def test_new_format_in_dmesg_gives_both_versions_and_the_client():
    (event,) = events(NEW_FORMAT_DMESG)
    assert event["kind"] == "api_mismatch" and event["time"] == "812.402113"
    assert versions(event) == ("535.161.08", "550.54.15", "pt_main_thread", 48121)
    assert event["message"].endswith("have the same version.")


def test_new_format_over_separate_journal_records_is_one_event():
    (event,) = events(NEW_FORMAT_JOURNAL)
    assert versions(event) == ("535.161.08", "550.54.15", "nvidia-smi", 3170)
    assert event["time"] == "2026-11-30T09:14:02Z"


def test_old_format_has_both_versions_and_no_client_process():
    (event,) = events(OLD_FORMAT_SYSLOG, window_seconds=None)
    assert versions(event) == ("550.90.07", "550.54.15", None, None)


def test_a_client_name_with_control_characters_is_kept_as_printable_data():
    text = NEW_FORMAT_DMESG.replace("pt_main_thread", "ev\x1b[31mil\x07")
    (event,) = events(text)
    assert event["client_process"] == "ev?[31mil?" and event["client_pid"] == 48121
    assert event["client_version"] == "535.161.08"


@pytest.mark.parametrize("cut", ["has the version 535.161.08, but this kernel module has\n", "NVRM: the version"])
def test_a_message_cut_before_the_module_version_keeps_what_it_has(cut):
    text = NEW_FORMAT_DMESG[:NEW_FORMAT_DMESG.index(cut)]
    (event,) = events(text)
    assert event["kernel_module_version"] is None
