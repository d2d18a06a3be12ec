"""The exit status contract of audit.yml, run with ansible-playbook as automation runs it.

0: every targeted host audited, nothing at or above the fail severity; 2: findings at or above it;
4: the run could not do its job (no host matched, invalid policy, unreachable host, failed or timed-out
collection). Each test builds its own inventory of local hosts that replay the demo's fixtures.
"""

import json
import os
import re
import signal
import stat
import subprocess
import sys
import time

import jsonschema
import pytest
import yaml

from ansible_collections.gpufleet.core.plugins.plugin_utils.reports.format import expanded
from ansible_collections.gpufleet.core.plugins.plugin_utils.reports.model import REPORT_VERSION

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIXTURES = os.path.join(ROOT, "inventories", "demo", "fixtures")
PLAYBOOK_BIN = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")

HEALTHY = "gpu-h100-ok-01"
LOST_GPU = "gpu-h100-xid79-02"    # a critical finding (hardware.gpu_lost)
NVSMI = "gpu-t4-nvsmi-14"


def local_host(fixture_host, **extra):
    host = {
        "ansible_connection": "local",
        "ansible_python_interpreter": "{{ ansible_playbook_python }}",
        "gpufleet_facts_source": "replay",
        "gpufleet_facts_fixture": os.path.join(FIXTURES, "%s.json" % fixture_host),
    }
    host.update(extra)
    return host


def unreachable_host():
    return {"ansible_connection": "ssh", "ansible_host": "127.0.0.1", "ansible_port": 9, "ansible_user": "nobody",
            "ansible_ssh_common_args": "-o ConnectTimeout=3 -o BatchMode=yes"}


def write_inventory(path, hosts, group_vars=None):
    inventory = {"all": {"hosts": hosts}}
    if group_vars:
        inventory["all"]["vars"] = group_vars
    path.write_text(yaml.safe_dump(inventory))
    return str(path)


def playbook_env(**extra):
    return dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_NOCOLOR="1",
                ANSIBLE_HOST_KEY_CHECKING="False", **extra)


def audit_argv(inventory, report_dir, *extra):
    return [PLAYBOOK_BIN, "audit.yml", "-i", inventory, "-e", "gpufleet_report_dir=%s" % report_dir] + list(extra)


def run_audit(inventory, report_dir, *extra, env=None):
    return subprocess.run(audit_argv(inventory, report_dir, *extra), cwd=ROOT, env=env or playbook_env(),
                          capture_output=True, text=True, timeout=300, check=False)


def output(result):
    return result.stdout + result.stderr


def recap(result):
    """{host: {ok, changed, unreachable, failed, ...}} from the PLAY RECAP."""
    counts = {}
    in_recap = False
    for line in result.stdout.splitlines():
        if line.startswith("PLAY RECAP"):
            in_recap = True
            continue
        match = re.match(r"^(\S+)\s+:\s+(.*)$", line) if in_recap else None
        if match:
            counts[match.group(1)] = {key: int(value) for key, value in re.findall(r"(\w+)=(\d+)", match.group(2))}
    return counts


def read_json(path):
    with open(str(path), encoding="utf-8") as handle:
        return json.load(handle)


def assert_valid_report(report):
    schema = read_json(os.path.join(ROOT, "docs", "schema", "report.schema.json"))
    jsonschema.Draft202012Validator(schema).validate(report)


def run_folders(report_dir):
    return sorted(name for name in os.listdir(str(report_dir))
                  if not name.startswith(("latest", ".")) and os.path.isdir(os.path.join(str(report_dir), name)))


# ---------------------------------------------------------------- 0, 2 and attribution


def test_a_healthy_fleet_exits_0_with_a_complete_run(tmp_path):
    inventory = write_inventory(tmp_path / "hosts.yml", {HEALTHY: local_host(HEALTHY), NVSMI: local_host(NVSMI)})
    report_dir = tmp_path / "reports"
    result = run_audit(inventory, report_dir)
    assert result.returncode == 0, output(result)[-3000:]
    report = read_json(report_dir / "latest" / "report.json")
    assert report["report_version"] == REPORT_VERSION
    assert (report["run"]["status"], report["run"]["scope"]["hosts_targeted"]) == ("complete", 2)
    assert report["summary"]["hosts"] == {"total": 2, "ok": 2, "unreachable": 0, "failed": 0}
    assert "Run: COMPLETE" in result.stdout
    assert {host: counts["failed"] + counts["unreachable"] for host, counts in recap(result).items()} == {
        HEALTHY: 0, NVSMI: 0}


def test_findings_exit_2_and_only_the_hosts_with_findings_fail(tmp_path):
    inventory = write_inventory(tmp_path / "hosts.yml", {HEALTHY: local_host(HEALTHY), LOST_GPU: local_host(LOST_GPU)})
    report_dir = tmp_path / "reports"
    result = run_audit(inventory, report_dir)
    assert result.returncode == 2, output(result)[-3000:]
    counts = recap(result)
    # the controller step ran on the first host (HEALTHY): it must not carry the failure
    assert (counts[HEALTHY]["failed"], counts[HEALTHY]["unreachable"]) == (0, 0), result.stdout[-2000:]
    assert (counts[LOST_GPU]["failed"], counts[LOST_GPU]["unreachable"]) == (1, 0)
    assert "hardware.gpu_lost" in result.stdout
    report = read_json(report_dir / "latest" / "report.json")
    assert report["run"]["status"] == "complete" and report["summary"]["failed_threshold"] is True


def test_fail_severity_none_exits_0_despite_critical_findings(tmp_path):
    inventory = write_inventory(tmp_path / "hosts.yml", {LOST_GPU: local_host(LOST_GPU)})
    result = run_audit(inventory, tmp_path / "reports", "-e", "gpufleet_fail_severity=none")
    assert result.returncode == 0, output(result)[-3000:]


# ---------------------------------------------------------------- 4: could not do its job


def test_an_unreachable_host_exits_4_and_is_the_one_marked(tmp_path):
    inventory = write_inventory(tmp_path / "hosts.yml", {HEALTHY: local_host(HEALTHY), "gpu-gone-98": unreachable_host()})
    report_dir = tmp_path / "reports"
    result = run_audit(inventory, report_dir)
    assert result.returncode == 4, output(result)[-3000:]
    counts = recap(result)
    assert counts["gpu-gone-98"]["unreachable"] >= 1
    assert (counts[HEALTHY]["failed"], counts[HEALTHY]["unreachable"]) == (0, 0)
    report = read_json(report_dir / "latest" / "report.json")
    assert report["summary"]["unreachable"] == ["gpu-gone-98"]
    assert report["hosts"][HEALTHY]["status"] == "ok"


def test_unreachable_and_findings_together_exit_4(tmp_path):
    inventory = write_inventory(tmp_path / "hosts.yml", {LOST_GPU: local_host(LOST_GPU), "gpu-gone-98": unreachable_host()})
    result = run_audit(inventory, tmp_path / "reports")
    assert result.returncode == 4, output(result)[-3000:]
    assert recap(result)[LOST_GPU]["failed"] == 1


def test_a_policy_that_accepts_unreachable_hosts_gets_a_finding_instead(tmp_path):
    policy = {"gpufleet_policy": {"report": {"accept_unreachable": True}}}
    inventory = write_inventory(tmp_path / "hosts.yml", {HEALTHY: local_host(HEALTHY), "gpu-gone-98": unreachable_host()},
                                group_vars=policy)
    report_dir = tmp_path / "reports"
    result = run_audit(inventory, report_dir)
    assert result.returncode == 0, output(result)[-3000:]
    report = read_json(report_dir / "latest" / "report.json")
    assert_valid_report(report)
    unreachable = [f for f in expanded(report)["hosts"]["gpu-gone-98"]["findings"] if f["rule"] == "hardware.host_unreachable"]
    assert [f["severity"] for f in unreachable] == ["warning"]
    # at fail severity warning the accepted host fails as a finding (2), not as "could not audit" (4)
    result = run_audit(inventory, report_dir, "-e", "gpufleet_fail_severity=warning")
    assert result.returncode == 2, output(result)[-3000:]
    assert recap(result)["gpu-gone-98"]["failed"] == 1


def test_a_failed_collection_exits_4(tmp_path):
    broken = local_host(HEALTHY, gpufleet_facts_fixture=str(tmp_path / "missing.json"))
    inventory = write_inventory(tmp_path / "hosts.yml", {HEALTHY: local_host(HEALTHY), "gpu-badfixture-99": broken})
    report_dir = tmp_path / "reports"
    result = run_audit(inventory, report_dir)
    assert result.returncode == 4, output(result)[-3000:]
    assert recap(result)["gpu-badfixture-99"]["unreachable"] == 1
    report = read_json(report_dir / "latest" / "report.json")
    assert report["summary"]["failed"] == ["gpu-badfixture-99"]
    assert "missing.json" in report["hosts"]["gpu-badfixture-99"]["message"]


def test_every_host_failing_collection_is_a_failed_run_that_moves_no_link(tmp_path):
    broken = local_host(HEALTHY, gpufleet_facts_fixture=str(tmp_path / "missing.json"))
    inventory = write_inventory(tmp_path / "hosts.yml", {"gpu-bad-1": broken, "gpu-bad-2": broken})
    report_dir = tmp_path / "reports"
    result = run_audit(inventory, report_dir)
    assert result.returncode == 4, output(result)[-3000:]
    assert not os.path.lexists(str(report_dir / "latest")) and not os.path.lexists(str(report_dir / "latest-partial"))
    [folder] = run_folders(report_dir)
    assert read_json(report_dir / folder / "report.json")["run"]["status"] == "failed"


def test_a_hung_collection_is_bounded_on_the_controller_and_recorded(tmp_path):
    # an interpreter that hangs before the module starts: only the controller's task timeout can end it
    # (ansible leaves the hung child behind; the test ends it by its process id)
    pid_file = tmp_path / "hung.pid"
    slow_python = tmp_path / "slow-python"
    slow_python.write_text("#!/bin/sh\necho $$ > %s\nexec sleep 25\n" % pid_file)
    slow_python.chmod(0o755)
    # the short bound only for the hung host: the healthy one keeps the default, so a loaded machine cannot time it out
    hung = local_host(HEALTHY, ansible_python_interpreter=str(slow_python), gpufleet_collect_timeout=2,
                      gpufleet_collect_margin=2)
    inventory = write_inventory(tmp_path / "hosts.yml", {HEALTHY: local_host(HEALTHY), "gpu-hung-97": hung})
    report_dir = tmp_path / "reports"
    started = time.monotonic()
    try:
        result = run_audit(inventory, report_dir)
    finally:
        if pid_file.exists():
            try:
                os.kill(int(pid_file.read_text()), signal.SIGTERM)
            except ProcessLookupError:
                pass
    elapsed = time.monotonic() - started
    assert result.returncode == 4, output(result)[-3000:]
    assert elapsed < 22, elapsed
    report = read_json(report_dir / "latest" / "report.json")
    assert report["hosts"]["gpu-hung-97"]["status"] == "failed"
    assert "timed out after 4 second" in report["hosts"]["gpu-hung-97"]["message"].lower()
    assert report["hosts"][HEALTHY]["status"] == "ok"
    assert (report_dir / "latest" / report["hosts"][HEALTHY]["facts_file"]).exists()


def test_no_host_matched_exits_4_and_writes_nothing(tmp_path):
    inventory = write_inventory(tmp_path / "hosts.yml", {HEALTHY: local_host(HEALTHY), NVSMI: local_host(NVSMI)})
    report_dir = tmp_path / "reports"
    for extra in (["-e", "gpufleet_audit_hosts=no_such_group"],
                  ["-e", "gpufleet_audit_hosts=%s" % NVSMI, "--limit", HEALTHY]):
        result = run_audit(inventory, report_dir, *extra)
        assert result.returncode == 4, (extra, output(result)[-3000:])
        assert "no host matched" in result.stdout
    assert not report_dir.exists()


INVENTORIES_WITHOUT_HOSTS = {
    "missing": (None, "does not exist"),
    "empty": ("", "is empty or could not be parsed"),
    "unparsable": ("all: [hosts\n", "is empty or could not be parsed"),
}


@pytest.mark.parametrize("kind", sorted(INVENTORIES_WITHOUT_HOSTS))
def test_an_inventory_without_hosts_exits_4_naming_it(tmp_path, kind):
    text, reason = INVENTORIES_WITHOUT_HOSTS[kind]
    inventory = tmp_path / "hosts.yml"
    if text is not None:
        inventory.write_text(text)
    report_dir = tmp_path / "reports"
    result = run_audit(str(inventory), report_dir)
    assert result.returncode == 4, output(result)[-3000:]
    assert "not audited: the inventory has no host: %s %s" % (inventory, reason) in " ".join(result.stdout.split())
    assert recap(result) == {"localhost": {"ok": 0, "changed": 0, "unreachable": 1, "failed": 0, "skipped": 0,
                                           "rescued": 0, "ignored": 0}}
    assert not report_dir.exists()


def assert_nothing_ran(tmp_path, playbook, cases, message):
    """Each case, ([-i argument and extra arguments], reason), runs the playbook: exit status 4, the message with
    the reason printed, and no report folder."""
    for argv, reason in cases:
        result = subprocess.run([PLAYBOOK_BIN, playbook, "-i"] + argv + ["-e", "gpufleet_report_dir=%s" % (
            tmp_path / "reports")], cwd=ROOT, env=playbook_env(), capture_output=True, text=True, timeout=300,
            check=False)
        assert result.returncode == 4, (argv, output(result)[-3000:])
        assert message % reason in " ".join(result.stdout.split())
    assert not (tmp_path / "reports").exists()


@pytest.mark.parametrize("playbook", ["incident.yml", "remediate.yml", "loadstep.yml"])
def test_the_other_auditing_playbooks_exit_4_when_nothing_was_audited(tmp_path, playbook):
    missing = str(tmp_path / "missing.yml")
    cases = [([missing], "the inventory has no host: %s does not exist" % missing)]
    if playbook != "incident.yml":  # the incident's pattern is its --limit (one that matches nothing: exit 1)
        inventory = write_inventory(tmp_path / "hosts.yml", {HEALTHY: local_host(HEALTHY)})
        cases.append(([inventory, "-e", "gpufleet_audit_hosts=no_such_group", "-e", "gpufleet_load_service=x"],
                      "no host matched the pattern no_such_group"))
    assert_nothing_ran(tmp_path, playbook, cases, "not audited: %s")


def test_a_rollout_with_no_host_exits_4_naming_the_inventory_or_the_pattern(tmp_path):
    missing = str(tmp_path / "missing.yml")
    inventory = write_inventory(tmp_path / "hosts.yml", {HEALTHY: local_host(HEALTHY)})
    cases = [([missing], "the inventory has no host: %s does not exist" % missing),
             ([inventory, "-e", "gpufleet_driver_hosts=no_such_group"], "no host matched the pattern no_such_group"),
             ([inventory, "-e", "gpufleet_driver_hosts=%s" % NVSMI, "--limit", HEALTHY],
              "no host matched the pattern %s with --limit %s" % (NVSMI, HEALTHY))]
    assert_nothing_ran(tmp_path, "driver_rollout.yml", cases, "not rolled out: %s; nothing was rolled out")


def marking_interpreter(tmp_path):
    """(interpreter, mark): every module run with this interpreter appends a line to the mark file."""
    contacted = tmp_path / "contacted"
    interpreter = tmp_path / "python"
    interpreter.write_text("#!/bin/sh\necho \"$@\" >> %s\nexec %s \"$@\"\n" % (contacted, sys.executable))
    interpreter.chmod(0o755)
    return str(interpreter), contacted


def test_an_invalid_policy_exits_4_before_any_host_is_contacted(tmp_path):
    # every module run on these hosts starts this interpreter, which leaves a mark: none may appear
    interpreter, contacted = marking_interpreter(tmp_path)
    policy = {"gpufleet_policy": {"thresholds": {"memory_used_pct": "high"}}}
    hosts = {name: local_host(name, ansible_python_interpreter=interpreter) for name in (HEALTHY, NVSMI)}
    inventory = write_inventory(tmp_path / "hosts.yml", hosts, group_vars=policy)
    report_dir = tmp_path / "reports"
    result = run_audit(inventory, report_dir)
    assert result.returncode == 4, output(result)[-3000:]
    assert "thresholds.memory_used_pct" in result.stdout and "high" in result.stdout
    # the collection task gives each host the stop's result without running the module there
    assert sorted(re.findall(r"fatal: \[(\S+)\]: UNREACHABLE!", result.stdout)) == sorted([HEALTHY, NVSMI])
    assert "not audited: the policy check failed: " in result.stdout
    assert "not audited: the policy check failed (the reason is with " in result.stdout
    assert not contacted.exists(), contacted.read_text()
    assert {host: counts["unreachable"] for host, counts in recap(result).items()} == {HEALTHY: 1, NVSMI: 1}
    assert not report_dir.exists()


@pytest.mark.parametrize("setting, value, allowed", [
    # each exited 2 ("findings") with no report before the settings were checked
    ("gpufleet_fail_severity", "bogus", "must be one of critical, warning, info, none, got 'bogus'"),
    ("gpufleet_store", "maybe", "must be true or false, got 'maybe'"),
])
def test_a_bad_setting_exits_4_naming_it_before_any_host_is_contacted(tmp_path, setting, value, allowed):
    interpreter, contacted = marking_interpreter(tmp_path)
    hosts = {name: local_host(name, ansible_python_interpreter=interpreter) for name in (HEALTHY, LOST_GPU)}
    inventory = write_inventory(tmp_path / "hosts.yml", hosts, group_vars={"gpufleet_collect_timeout": "soon"})
    report_dir = tmp_path / "reports"
    result = run_audit(inventory, report_dir, "-e", "%s=%s" % (setting, value))
    assert result.returncode == 4, output(result)[-3000:]
    assert "Invalid gpufleet settings for 2 of 2 hosts (no host was contacted); fix these variables:" in result.stdout
    assert "- %s: %s (in <CLI option '-e'>) - 2 hosts: every host of group all" % (setting, allowed) in result.stdout
    assert ("- gpufleet_collect_timeout: must be a whole number of at least 1, got 'soon' (in %s, line "
            % inventory) in result.stdout
    assert not contacted.exists(), contacted.read_text()
    assert {host: counts["unreachable"] for host, counts in recap(result).items()} == {HEALTHY: 1, LOST_GPU: 1}
    assert not report_dir.exists()


def test_reports_that_cannot_be_written_exit_4_for_every_host(tmp_path):
    (tmp_path / "a-file").write_text("not a folder")
    inventory = write_inventory(tmp_path / "hosts.yml", {HEALTHY: local_host(HEALTHY), LOST_GPU: local_host(LOST_GPU)})
    result = run_audit(inventory, tmp_path / "a-file" / "reports")
    assert result.returncode == 4, output(result)[-3000:]
    assert "not audited: audit_report:" in result.stdout and "Not a directory" in result.stdout
    assert {host: (counts["failed"], counts["unreachable"]) for host, counts in recap(result).items()} == {
        HEALTHY: (0, 1), LOST_GPU: (0, 1)}


# ---------------------------------------------------------------- partial runs


def test_a_limited_run_is_partial_and_leaves_latest_and_the_fleet_series_alone(tmp_path):
    inventory = write_inventory(tmp_path / "hosts.yml", {HEALTHY: local_host(HEALTHY), LOST_GPU: local_host(LOST_GPU)})
    report_dir = tmp_path / "reports"
    complete = run_audit(inventory, report_dir)
    assert complete.returncode == 2, output(complete)[-3000:]
    complete_target = os.readlink(str(report_dir / "latest"))
    prom_before = (report_dir / "latest" / "gpufleet.prom").read_text()

    partial = run_audit(inventory, report_dir, "--limit", HEALTHY)
    assert partial.returncode == 0, output(partial)[-3000:]
    assert os.readlink(str(report_dir / "latest")) == complete_target
    assert (report_dir / "latest" / "gpufleet.prom").read_text() == prom_before
    report = read_json(report_dir / "latest-partial" / "report.json")
    assert_valid_report(report)
    assert report["run"]["status"] == "partial"
    assert report["run"]["scope"] == {"pattern": "all", "limit": HEALTHY, "hosts_in_pattern": 2,
                                      "hosts_targeted": 1, "hosts_not_targeted": 1}
    assert "Run: PARTIAL" in partial.stdout
    partial_prom = (report_dir / "latest-partial" / "gpufleet.prom").read_text()
    assert 'status="partial"' in partial_prom
    assert "gpufleet_fleet_findings" not in partial_prom and "gpufleet_audit_hosts" not in partial_prom
    assert "gpufleet_fleet_findings" in prom_before
    junit = (report_dir / "latest-partial" / "junit.xml").read_text()
    assert '<property name="gpufleet.run_status" value="partial"/>' in junit
    assert "PARTIAL run" in (report_dir / "latest-partial" / "report.html").read_text()


# ---------------------------------------------------------------- run folders and files


def test_two_audits_started_together_write_separate_complete_runs(tmp_path):
    inventory = write_inventory(tmp_path / "hosts.yml", {HEALTHY: local_host(HEALTHY), NVSMI: local_host(NVSMI)})
    report_dir = tmp_path / "reports"
    runs = [subprocess.Popen(audit_argv(inventory, report_dir), cwd=ROOT, env=playbook_env(), stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True) for _number in range(2)]
    outputs = [run.communicate(timeout=300)[0] for run in runs]
    assert [run.returncode for run in runs] == [0, 0], "\n".join(text[-2000:] for text in outputs)
    folders = run_folders(report_dir)
    assert len(folders) == 2, folders
    for folder in folders:
        report = read_json(report_dir / folder / "report.json")
        assert report["run"]["id"] == folder and report["run"]["status"] == "complete"
        assert sorted(os.listdir(str(report_dir / folder / "facts"))) == ["%s.json" % HEALTHY, "%s.json" % NVSMI]
        assert not [name for name in os.listdir(str(report_dir / folder)) if name.endswith(".tmp")]
    assert os.readlink(str(report_dir / "latest")) in folders
    assert not [name for name in os.listdir(str(report_dir)) if name.endswith(".tmp")]


def test_written_files_respect_the_umask(tmp_path):
    inventory = write_inventory(tmp_path / "hosts.yml", {HEALTHY: local_host(HEALTHY)})
    report_dir = tmp_path / "reports"
    result = subprocess.run(["/bin/sh", "-c", 'umask 077 && exec "$@"', "sh"] + audit_argv(inventory, report_dir),
                            cwd=ROOT, env=playbook_env(), capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, output(result)[-3000:]
    latest = report_dir / "latest"
    for path in [latest / "report.json", latest / "gpufleet.prom", latest / "facts" / ("%s.json" % HEALTHY)]:
        assert stat.S_IMODE(os.stat(str(path)).st_mode) == 0o600, path
    assert stat.S_IMODE(os.stat(str(latest.resolve())).st_mode) == 0o700


def test_odd_host_names_get_safe_distinct_facts_files(tmp_path):
    names = ["Node-A", "node-a", "../escape", "x" * 300]
    inventory = write_inventory(tmp_path / "hosts.yml", {name: local_host(HEALTHY) for name in names})
    report_dir = tmp_path / "reports"
    result = run_audit(inventory, report_dir)
    assert result.returncode == 0, output(result)[-3000:]
    latest = report_dir / "latest"
    report = read_json(latest / "report.json")
    files = {name: report["hosts"][name]["facts_file"] for name in names}
    assert len(set(file_name.lower() for file_name in files.values())) == len(names)
    for name, relative in files.items():
        assert relative.startswith("facts/") and "/" not in relative[len("facts/"):]
        assert len(os.path.basename(relative).encode()) <= 255
        assert read_json(latest / relative)["source"] == "replay"
    assert not (tmp_path / "reports" / "escape.json").exists()
    assert sorted(os.listdir(str(latest / "facts"))) == sorted(os.path.basename(f) for f in files.values())


# ---------------------------------------------------------------- ansible-runner and AWX


def test_the_summary_reaches_ansible_runner_as_artifact_data(tmp_path):
    ansible_runner = pytest.importorskip("ansible_runner")
    inventory = write_inventory(tmp_path / "hosts.yml", {HEALTHY: local_host(HEALTHY), LOST_GPU: local_host(LOST_GPU)})
    env = {key: value for key, value in playbook_env().items() if key.startswith("ANSIBLE_")}
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")
    (tmp_path / "runner").mkdir()
    runner = ansible_runner.run(private_data_dir=str(tmp_path / "runner"), project_dir=ROOT, playbook="audit.yml",
                                inventory=inventory, extravars={"gpufleet_report_dir": str(tmp_path / "reports")},
                                envvars=env, quiet=True)
    assert runner.rc == 2, runner.stdout.read()[-3000:]
    stats = [event["event_data"] for event in runner.events if event.get("event") == "playbook_on_stats"]
    summary = stats[-1]["artifact_data"]["gpufleet_audit"]
    assert summary["run_status"] == "complete" and summary["failed_threshold"] is True
    assert summary["hosts_failing"] == [LOST_GPU] and summary["hosts_not_audited"] == []
    assert summary["run_dir"] == os.path.realpath(str(tmp_path / "reports" / summary["run_id"]))
    assert summary["report_dir"] == summary["run_dir"]  # its name before issue 26, kept for AWX templates


# ---------------------------------------------------------------- make audit


def make_audit(tmp_path, *audit_args):
    env = {key: value for key, value in os.environ.items() if not key.startswith("MAKE")}
    argv = ["make", "--no-print-directory", "audit", "REPORT_DIR=%s" % (tmp_path / "reports")]
    if audit_args:
        argv.append("AUDIT_ARGS=%s" % " ".join(audit_args))
    return subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)


def test_make_audit_accepts_only_status_2_as_the_demo_outcome(tmp_path):
    demo = make_audit(tmp_path)
    assert demo.returncode == 0, output(demo)[-3000:]
    assert "(exit status 2), as the demo fleet is built to" in demo.stdout
    assert "Reports: %s/latest/" % (tmp_path / "reports") in demo.stdout
    nothing = make_audit(tmp_path, "-e", "gpufleet_audit_hosts=no_such_group")
    assert nothing.returncode != 0
    assert "FAILED: the audit could not do its job (exit status 4)" in nothing.stdout
    assert "as the demo fleet is built to" not in nothing.stdout
