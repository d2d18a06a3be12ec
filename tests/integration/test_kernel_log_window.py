"""The collector reads as much kernel log as the policy judges (issue 9): a policy window
(thresholds.xid_window_hours) wider than gpufleet_kernel_log_window_hours widens what gpu_facts collects,
so an Xid older than 72 hours counts once the policy says so. Runs audit.yml with ansible-playbook on a
local host that replays a demo fixture, with one Xid added to its recorded kernel log."""

import datetime
import json
import os
import subprocess
import sys

import yaml
from ansible_collections.gpufleet.core.plugins.plugin_utils.reports.format import expanded

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIXTURE = os.path.join(ROOT, "inventories", "demo", "fixtures", "gpu-h100-ok-01.json")
PLAYBOOK_BIN = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")
JOURNALCTL = "journalctl _TRANSPORT=kernel -o short-iso --no-pager --since=-%dh"
HOST = "gpu-window-01"
XID_AGE_HOURS = 150


def fixture_with_old_xid(tmp_path, window_hours):
    """The demo fixture, its journalctl recorded for a window of window_hours, with an Xid 13 150 h old."""
    with open(FIXTURE) as handle:
        fixture = json.load(handle)
    commands = fixture["host"]["commands"]
    answer = commands.pop(JOURNALCTL % 72)
    recorded = datetime.datetime.fromisoformat(fixture["recorded_at"].replace("Z", "+00:00"))
    when = (recorded - datetime.timedelta(hours=XID_AGE_HOURS)).strftime("%Y-%m-%dT%H:%M:%S+0000")
    line = ("%s %s kernel: NVRM: Xid (PCI:0000:18:00): 13, pid=4242, name=python3, Graphics Exception: "
            "ESR 0x404600=0x80000002\n" % (when, HOST))
    commands[JOURNALCTL % window_hours] = dict(answer, stdout=line + answer["stdout"])
    path = tmp_path / "fixture.json"
    path.write_text(json.dumps(fixture))
    return str(path)


def audit(tmp_path, window_hours, host_vars):
    host = {"ansible_connection": "local", "ansible_python_interpreter": "{{ ansible_playbook_python }}",
            "gpufleet_facts_source": "replay", "gpufleet_facts_fixture": fixture_with_old_xid(tmp_path, window_hours)}
    host.update(host_vars)
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(yaml.safe_dump({"all": {"hosts": {HOST: host}}}))
    report_dir = tmp_path / "reports"
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_NOCOLOR="1")
    result = subprocess.run([PLAYBOOK_BIN, "audit.yml", "-i", str(inventory), "-e", "gpufleet_report_dir=%s" % report_dir],
                            cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)
    latest = report_dir / "latest"
    assert latest.is_dir(), result.stdout[-3000:] + result.stderr[-2000:]
    report = expanded(json.loads((latest / "report.json").read_text()))
    facts = json.loads((latest / report["hosts"][HOST]["facts_file"]).read_text())
    return report, facts


def xid13(report):
    return [f for f in report["findings"] if f["rule"].endswith(".xid") and f["evidence"].get("xid") == 13]


def test_a_policy_window_of_200_hours_collects_and_counts_an_xid_150_hours_old(tmp_path):
    report, facts = audit(tmp_path, 200, {"gpufleet_policy": {"thresholds": {"xid_window_hours": 200}}})
    assert [event["xid"] for event in facts["xid_events"]] == [13]
    (finding,) = xid13(report)
    assert finding["host"] == HOST and finding["gpu"] == "0000:18:00.0"
    assert finding["evidence"]["window_hours"] == 200


def test_a_wider_kernel_log_window_collects_more_without_changing_what_the_policy_counts(tmp_path):
    report, facts = audit(tmp_path, 200, {"gpufleet_kernel_log_window_hours": 200})
    assert [event["xid"] for event in facts["xid_events"]] == [13]   # collected: the variable widened it
    assert xid13(report) == []                                       # not counted: the policy's 72 h


def test_a_narrower_kernel_log_window_does_not_narrow_the_policy_window(tmp_path):
    report, facts = audit(tmp_path, 200, {"gpufleet_kernel_log_window_hours": 24,
                                          "gpufleet_policy": {"thresholds": {"xid_window_hours": 200}}})
    assert len(xid13(report)) == 1
