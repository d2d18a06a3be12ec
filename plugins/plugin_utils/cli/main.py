# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The `gpufleet` command (docs/cli.md): global options, `audit`, `analyze`, and the run store's commands."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import argparse
import os
import sys

from ansible_collections.gpufleet.core.plugins.plugin_utils.cli import analyze_command, audit_command
from ansible_collections.gpufleet.core.plugins.plugin_utils.run_folder import report_root
from ansible_collections.gpufleet.core.plugins.plugin_utils.cli import store_commands

ENV_STORE_URL = "GPUFLEET_STORE_URL"
ENV_REPORT_ROOT = "GPUFLEET_REPORT_DIR"


class ArgumentParser(argparse.ArgumentParser):
    """A usage error exits 4, "could not do its job", never argparse's 2, which automation reads as the audit's
    "findings" (README, "Exit status and run status"). Its sub-commands' parsers are of this class too."""

    def error(self, message):
        self.print_usage(sys.stderr)
        self.exit(audit_command.EXIT_NOT_DONE, "%s: error: %s\n" % (self.prog, message))


def build_parser():
    parser = ArgumentParser(
        prog="gpufleet", description="Audit NVIDIA GPU fleets with the gpufleet.core collection (docs/cli.md).")
    parser.add_argument("--store-url", default=os.environ.get(ENV_STORE_URL),
                        help="run store URL (default: $%s, else the SQLite file under the report root)" % ENV_STORE_URL)
    parser.add_argument("--report-root", default=None,
                        help="folder of the run folders (default: $%s, else reports in the current folder, as "
                             "audit.yml's gpufleet_report_dir)" % ENV_REPORT_ROOT)
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    subparsers.required = True
    audit_command.add_parser(subparsers)
    analyze_command.add_parser(subparsers)
    store_commands.register(subparsers)
    return parser


def main(argv=None, checkout=None):
    parser = build_parser()
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    args.report_root = report_root(args.report_root or os.environ.get(ENV_REPORT_ROOT))
    args.checkout = checkout
    return args.handler(args)
