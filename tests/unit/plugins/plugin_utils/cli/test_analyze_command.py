"""gpufleet analyze's inventory of captures (docs/offline.md): one host per PATH, named by the capture."""

import os
import sys

from ansible_collections.gpufleet.core.plugins.plugin_utils.cli.analyze_command import inventory
from ansible_collections.gpufleet.core.plugins.plugin_utils.cli.main import build_parser

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))))
BUG_REPORT = os.path.join(ROOT, "tests", "fixtures", "captures", "nvidia-bug-report-sample.log")


def test_each_capture_is_a_local_host_named_by_the_capture_and_made_unique(tmp_path):
    (tmp_path / "node-7.log.gz").write_bytes(b"not a capture")
    hosts = inventory([BUG_REPORT, BUG_REPORT, "node-7.log.gz"], str(tmp_path))["all"]["hosts"]
    assert list(hosts) == ["gpu-h100-xid79-02", "gpu-h100-xid79-02-2", "node-7"]
    assert hosts["node-7"] == {"ansible_connection": "local", "ansible_python_interpreter": sys.executable,
                               "gpufleet_capture": str(tmp_path / "node-7.log.gz")}


def test_analyze_takes_paths_and_the_audits_options():
    args = build_parser().parse_args(["analyze", "a", "b", "-e", "x=1", "--progress", "plain"])
    assert (args.paths, args.extra_vars, args.progress) == (["a", "b"], ["x=1"], "plain")
