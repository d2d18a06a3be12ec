"""gpufleet audit --textfile-dir passes gpufleet_textfile_dir to audit.yml (docs/monitoring.md)."""

import argparse
import json

from ansible_collections.gpufleet.core.plugins.plugin_utils.cli.audit_command import add_parser, playbook_arguments


def parsed(*arguments):
    parser = argparse.ArgumentParser()
    add_parser(parser.add_subparsers(dest="command"))
    return parser.parse_args(["audit"] + list(arguments))


def test_textfile_dir_becomes_the_playbook_variable_relative_to_where_the_command_started():
    extra = playbook_arguments(parsed("--textfile-dir", "textfile"), "/srv/reports", "/home/ops")
    assert [json.loads(value) for flag, value in zip(extra[::2], extra[1::2]) if flag == "-e"] == [
        {"gpufleet_report_dir": "/srv/reports"}, {"gpufleet_textfile_dir": "/home/ops/textfile"}]


def test_without_it_no_textfile_variable_is_passed():
    extra = playbook_arguments(parsed(), "/srv/reports", "/home/ops")
    assert "gpufleet_textfile_dir" not in " ".join(extra)
