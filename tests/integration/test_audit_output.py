"""What a person reads at the end of a run (issue 25, section 5): the run's summary is the last thing before the
PLAY RECAP, each host's verdict is one line (not an error block quoting the task's source), and the project's
playbooks print no deprecation warning, their own or a pinned dependency's (README, "What an audit prints")."""

import os
import re
import subprocess
import sys

import pytest
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEMO = os.path.join(ROOT, "inventories", "demo")
PLAYBOOK_BIN = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")

LOST_GPU = "gpu-h100-xid79-02"   # one critical finding: hardware.gpu_lost
HEALTHY = "gpu-h100-ok-01"
SHARED_GPU = "gpu-l40s-workload-17"
VERDICT_LINE = re.compile(r"^(failed|unreachable): \[(\S+)\] (.+)$")
# what ansible-core prints for a failed task, what Python prints for a warning, what ansible prints for a deprecation
NOISE = ("[ERROR]", "Origin: ", "FAILED! =>", "DeprecationWarning", "[DEPRECATION WARNING]")


def run_playbook(playbook, *arguments):
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_NOCOLOR="1")
    return subprocess.run([PLAYBOOK_BIN, playbook] + list(arguments), cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=600, check=False)


def output(result):
    return result.stdout + result.stderr


def before_recap(result):
    """The lines printed before the PLAY RECAP, without the blank ones."""
    head, recap_banner, _recap = result.stdout.partition("PLAY RECAP")
    assert recap_banner, result.stdout[-3000:]
    return [line for line in head.splitlines() if line.strip()]


def recap(result):
    """{host: {ok, changed, unreachable, failed, ...}} from the PLAY RECAP."""
    counts = {}
    for line in result.stdout.partition("PLAY RECAP")[2].splitlines():
        match = re.match(r"^(\S+)\s+:\s+(.*)$", line)
        if match:
            counts[match.group(1)] = {key: int(value) for key, value in re.findall(r"(\w+)=(\d+)", match.group(2))}
    return counts


def verdict_lines(result):
    """[(outcome, host, why)] of the one-line verdicts, in the order printed."""
    return [match.groups() for match in map(VERDICT_LINE.match, result.stdout.splitlines()) if match]


def hosts_with(result, outcome):
    return sorted(host for host, counts in recap(result).items() if counts[outcome])


def summary_block(lines, first):
    """The lines from the first line that starts with first to the end."""
    start = next(index for index, line in enumerate(lines) if line.startswith(first))
    return lines[start:]


def assert_no_noise(result):
    text = output(result)
    found = {marker: text.count(marker) for marker in NOISE if marker in text}
    assert not found, (found, text[-4000:])


@pytest.fixture(scope="module")
def demo_audit(tmp_path_factory):
    """make audit: audit.yml on the demo fleet."""
    report_dir = tmp_path_factory.mktemp("reports")
    return run_playbook("audit.yml", "-e", "gpufleet_report_dir=%s" % report_dir)


def test_the_demo_audit_ends_with_its_summary_right_before_the_play_recap(demo_audit):
    assert demo_audit.returncode == 2, output(demo_audit)[-3000:]
    lines = before_recap(demo_audit)
    assert lines[-1].startswith("Reports: ") and "report.json, report.html, junit.xml, gpufleet.prom" in lines[-1]
    assert lines[-2] == "Result: FAIL - 20 finding(s) at or above critical"
    # the whole summary, one line per host first, comes after every task's output
    summary = summary_block(lines, "cpu-node-nodriver-13: ok - ")
    demo_hosts = len(os.listdir(os.path.join(ROOT, "inventories", "demo", "fixtures")))
    assert len(summary_block(summary, "gpufleet audit ")) == len(summary) - demo_hosts  # one line per host first
    assert not [line for line in summary if line.startswith(("TASK [", "PLAY [", "ok: [", "failed: [", "skipping: ["))]
    last_verdict = max(index for index, line in enumerate(lines) if VERDICT_LINE.match(line))
    assert last_verdict < len(lines) - len(summary)


def test_each_failed_host_of_the_demo_is_one_line_with_its_reason(demo_audit):
    failed = hosts_with(demo_audit, "failed")
    assert len(failed) == 11 and LOST_GPU in failed and HEALTHY not in failed
    verdicts = verdict_lines(demo_audit)
    assert sorted(host for _outcome, host, _why in verdicts) == failed
    assert {outcome for outcome, _host, _why in verdicts} == {"failed"}
    assert ("failed", LOST_GPU, "1 finding(s) at or above critical: hardware.gpu_lost") in verdicts
    assert ("failed", SHARED_GPU, "2 finding(s) at or above critical: workload.memory_near_full, "
                                  "workload.oom_shared_gpu") in verdicts


def test_the_demo_audit_prints_no_error_block_and_no_deprecation_warning(demo_audit):
    assert_no_noise(demo_audit)


def test_a_host_not_audited_is_one_line_too_and_the_run_still_exits_4(tmp_path):
    broken = tmp_path / "broken-fixture.yml"
    broken.write_text(yaml.safe_dump({"all": {"hosts": {HEALTHY: {
        "gpufleet_facts_fixture": str(tmp_path / "missing.json")}}}}))
    result = run_playbook("audit.yml", "-i", DEMO, "-i", str(broken), "--limit", "%s,%s" % (HEALTHY, LOST_GPU),
                          "-e", "gpufleet_report_dir=%s" % (tmp_path / "reports"))
    assert result.returncode == 4, output(result)[-3000:]
    verdicts = verdict_lines(result)
    assert [(outcome, host) for outcome, host, _why in verdicts] == [("unreachable", HEALTHY), ("failed", LOST_GPU)]
    assert verdicts[0][2].startswith("not audited: failed: fixture %s cannot be read" % (tmp_path / "missing.json"))
    assert hosts_with(result, "unreachable") == [HEALTHY] and hosts_with(result, "failed") == [LOST_GPU]
    assert before_recap(result)[-1].startswith("Reports: ")


def test_an_incident_ends_with_the_audit_and_incident_summaries_and_one_line_per_failed_host(tmp_path):
    result = run_playbook("incident.yml", "--limit", "%s,%s" % (HEALTHY, LOST_GPU),
                          "-e", "gpufleet_report_dir=%s" % tmp_path)
    assert result.returncode == 2, output(result)[-3000:]
    assert verdict_lines(result) == [("failed", LOST_GPU, "1 finding(s) at or above critical: hardware.gpu_lost")]
    lines = before_recap(result)
    assert lines[-1].startswith("incident: ") and "timeline.json, fault-log.md, report.html" in lines[-1]
    assert lines[-2].startswith("Reports: ")
    assert_no_noise(result)


def test_a_loadstep_plan_prints_no_deprecation_and_its_refusals_one_line_each(tmp_path):
    # the demo's policies allow no load test: both hosts are refused, in check mode nothing is started
    result = run_playbook("loadstep.yml", "--check", "--limit", "%s,%s" % (HEALTHY, SHARED_GPU),
                          "-e", "gpufleet_load_service=inference.service", "-e", "gpufleet_report_dir=%s" % tmp_path)
    assert result.returncode == 2, output(result)[-3000:]
    verdicts = verdict_lines(result)
    assert sorted(host for _outcome, host, _why in verdicts) == [HEALTHY, SHARED_GPU]
    assert all(outcome == "failed" and why.startswith("refused: ") for outcome, _host, why in verdicts)
    # the loadstep's own lines are last; the audit before the load printed its summary before the load steps
    lines = before_recap(result)
    assert lines[-1].startswith(SHARED_GPU + ": refused: ") and lines[-2].startswith(HEALTHY + ": refused: ")
    show_plan = next(index for index, line in enumerate(lines) if line.startswith("TASK [Show the plan]"))
    # the audit before the load judges nothing (fail_severity none) and says so
    (judged,) = [index for index, line in enumerate(lines) if line.startswith("Result: NOT JUDGED - fail_severity is none")]
    assert judged < show_plan
    assert_no_noise(result)
