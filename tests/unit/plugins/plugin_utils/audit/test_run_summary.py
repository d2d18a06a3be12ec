"""Where a run's summary goes (plugin_utils/audit/run_summary.py): handed to the stdout callback gpufleet.core.audit in
the task result, to be printed after the last task, or printed at once with any other stdout callback."""

import pytest

from ansible_collections.gpufleet.core.plugins.plugin_utils.audit import run_summary

SUMMARY = "gpufleet audit 20261202T060000Z: 18 hosts (18 ok, 0 unreachable, 0 failed), 73 findings"


@pytest.fixture
def printed(monkeypatch):
    lines = []
    monkeypatch.setattr(run_summary.display, "display", lambda text, *args, **kwargs: lines.append(text))
    return lines


def test_the_projects_callback_gets_the_summary_to_print_last(monkeypatch, printed):
    monkeypatch.setenv("ANSIBLE_STDOUT_CALLBACK", "gpufleet.core.audit")
    result = run_summary.show_summary({"changed": False}, SUMMARY)
    assert result == {"changed": False, "summary_text": SUMMARY} and printed == []


@pytest.mark.parametrize("callback", ["ansible.builtin.default", "awx_display", "ansible.builtin.minimal"])
def test_any_other_callback_prints_it_at_once_and_the_result_stays_as_it_was(monkeypatch, printed, callback):
    monkeypatch.setenv("ANSIBLE_STDOUT_CALLBACK", callback)
    assert run_summary.show_summary({"changed": False}, SUMMARY) == {"changed": False}
    assert printed == [SUMMARY]


def test_a_summary_asked_for_now_is_printed_now_even_with_the_projects_callback(monkeypatch, printed):
    monkeypatch.setenv("ANSIBLE_STDOUT_CALLBACK", "gpufleet.core.audit")
    assert run_summary.show_summary({}, SUMMARY, last=False) == {}
    assert printed == [SUMMARY]


def test_an_empty_summary_is_neither_printed_nor_handed_over(monkeypatch, printed):
    monkeypatch.setenv("ANSIBLE_STDOUT_CALLBACK", "gpufleet.core.audit")
    assert run_summary.show_summary({}, "") == {} and printed == []
