"""Runs audit.yml with ansible-playbook, as a user does, on the demo fleet."""

import json
import os
import subprocess
import sys

import pytest
import yaml

from ansible_collections.gpufleet.core.plugins.plugin_utils.reports.format import expanded

from tests.support.schema_check import assert_valid_facts

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEMO = os.path.join(ROOT, "inventories", "demo")
PLAYBOOK_BIN = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")


def run_audit(report_dir, *inventories, extra=()):
    argv = [PLAYBOOK_BIN, "audit.yml", "-e", "gpufleet_report_dir=%s" % report_dir]
    for inventory in inventories:
        argv += ["-i", inventory]
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_HOST_KEY_CHECKING="False")
    return subprocess.run(argv + list(extra), cwd=ROOT, env=env, capture_output=True, text=True, timeout=600, check=False)


def demo_hosts():
    with open(os.path.join(DEMO, "hosts.yml")) as handle:
        inventory = yaml.safe_load(handle)
    hosts = set()

    def walk(group):
        hosts.update((group.get("hosts") or {}).keys())
        for child in (group.get("children") or {}).values():
            walk(child or {})

    for group in inventory.values():
        walk(group or {})
    return sorted(hosts)


def read_json(path):
    with open(path) as handle:
        return json.load(handle)


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory):
    report_dir = tmp_path_factory.mktemp("reports")
    result = run_audit(str(report_dir), DEMO)
    return report_dir, result


def read_report(report_dir):
    return expanded(read_json(str(report_dir / "latest" / "report.json")))


def host_lines(report_dir):
    return (report_dir / "latest" / "hosts.txt").read_text().splitlines()


def test_demo_audit_fails_on_its_critical_findings_after_writing_every_report(demo_run):
    report_dir, result = demo_run
    assert result.returncode == 2, result.stdout[-3000:] + result.stderr[-3000:]
    latest = report_dir / "latest"
    assert latest.is_symlink()
    for name in ("report.json", "report.html", "junit.xml", "gpufleet.prom", "hosts.txt"):
        assert (latest / name).stat().st_size > 0, name
    report = read_report(report_dir)
    assert report["summary"]["failed_threshold"] is True
    assert report["summary"]["hosts"] == {"total": 19, "ok": 19, "unreachable": 0, "failed": 0}
    assert report["run"]["status"] == "complete"
    assert "Result: FAIL" in result.stdout and "Likely causes (2)" in result.stdout
    assert [cause["id"] for cause in report["causes"]] == ["driver:550.54.15", "workload:concurrency"]


def test_audit_writes_schema_valid_facts_for_every_demo_host(demo_run):
    report_dir = demo_run[0]
    latest = report_dir / "latest"
    hosts = demo_hosts()
    assert len(hosts) >= 12
    written = sorted(p.name[:-5] for p in (latest / "facts").iterdir())
    assert written == hosts
    for host in hosts:
        assert_valid_facts(read_json(str(latest / "facts" / ("%s.json" % host))))
    report = read_report(report_dir)
    assert report["hosts"]["gpu-t4-nvsmi-14"]["facts_file"] == "facts/gpu-t4-nvsmi-14.json"


def test_every_demo_host_reports_the_finding_its_scenario_is_about(demo_run):
    report = read_report(demo_run[0])
    rules = {host: {f["rule"] for f in entry["findings"]} for host, entry in report["hosts"].items()}
    expected = {
        "gpu-h100-xid79-02": "hardware.gpu_lost",
        "gpu-h100-mismatch-03": "driver.kernel_userspace_mismatch",
        "gpu-a100-oldcuda-04": "driver.cuda_toolkit_unsupported",
        "gpu-h100-thermal-05": "hardware.clock_events",
        "gpu-h100-pcie-06": "hardware.pcie_link",
        "gpu-a100-remap-07": "hardware.row_remap",
        "gpu-a100-migdrift-08": "scheduling.mig_layout_drift",
        "gpu-a100-migpending-09": "scheduling.mig_pending",
        "gpu-l40s-crowded-10": "workload.gpu_oversubscribed",
        "gpu-h100-mps-11": "scheduling.mps_daemon",
        "gpu-h100-nvlink-12": "hardware.nvlink_inactive",
        "gpu-h100-gsp-15": "driver.xid",
        "gpu-h100-gsp-16": "driver.xid",
        "gpu-l40s-workload-17": "workload.oom_shared_gpu",
        "gpu-h100-dataload-18": "workload.input_bound",
    }
    for host, rule in expected.items():
        assert rule in rules[host], (host, sorted(rules[host]))
    healthy = report["hosts"]["gpu-h100-ok-01"]["findings"]
    assert [f for f in healthy if f["severity"] != "info"] == []


def test_audit_prints_one_line_per_host(demo_run):
    report_dir, result = demo_run
    lines = host_lines(report_dir)
    assert [line.split(":")[0] for line in lines] == demo_hosts()
    by_host = dict((line.split(":")[0], line) for line in lines)
    assert "xid=79" in by_host["gpu-h100-xid79-02"]
    assert "DRIVER MISMATCH (kernel module 550.54.15, userspace 550.90.07)" in by_host["gpu-h100-mismatch-03"]
    assert "no NVIDIA stack found" in by_host["cpu-node-nodriver-13"]
    assert "source=nvidia_smi (replay)" in by_host["gpu-t4-nvsmi-14"]
    assert "gpus=8" in by_host["gpu-h100-ok-01"] and "errors=" not in by_host["gpu-h100-ok-01"]
    for line in lines:
        assert line in result.stdout


def test_scenario_facts_reach_the_report(demo_run):
    facts = demo_run[0] / "latest" / "facts"
    lost = read_json(str(facts / "gpu-h100-xid79-02.json"))
    lost_bus = [g["pci_bus_id"] for g in lost["gpus"] if g["lost"]]
    assert lost_bus == ["0000:ab:00.0"]
    assert [e["pci_bus_id"] for e in lost["xid_events"] if e["xid"] == 79] == lost_bus
    t4 = read_json(str(facts / "gpu-t4-nvsmi-14.json"))
    assert (t4["source"], t4["replay_of"], t4["driver"]["version"]) == ("replay", "nvidia_smi", "515.105.01")


def test_unreachable_and_failed_hosts_are_reported_without_hiding_the_others(tmp_path):
    extra_inventory = tmp_path / "extra.yml"
    extra_inventory.write_text(yaml.safe_dump({"all": {"hosts": {
        "gpu-gone-98": {"ansible_connection": "ssh", "ansible_host": "127.0.0.1", "ansible_port": 9,
                        "ansible_user": "nobody", "ansible_ssh_common_args": "-o ConnectTimeout=3 -o BatchMode=yes"},
        "gpu-badfixture-99": {"gpufleet_facts_fixture": str(tmp_path / "missing.json")},
    }}}))
    report_dir = tmp_path / "reports"
    result = run_audit(str(report_dir), DEMO, str(extra_inventory),
                       extra=["--limit", "gpu-h100-ok-01,gpu-gone-98,gpu-badfixture-99"])
    output = result.stdout + result.stderr
    # the run could not audit two hosts (exit status 4); it was limited, so it is partial (latest-partial)
    assert result.returncode == 4, output[-3000:]
    assert not (report_dir / "latest").exists()
    by_host = dict((line.split(":")[0], line) for line in (report_dir / "latest-partial" / "hosts.txt").read_text().splitlines())
    assert sorted(by_host) == ["gpu-badfixture-99", "gpu-gone-98", "gpu-h100-ok-01"], output[-3000:]
    assert by_host["gpu-gone-98"].startswith("gpu-gone-98: UNREACHABLE")
    assert by_host["gpu-badfixture-99"].startswith("gpu-badfixture-99: FAILED")
    assert "missing.json" in by_host["gpu-badfixture-99"]
    assert by_host["gpu-h100-ok-01"].startswith("gpu-h100-ok-01: ok")
    report = read_json(str(report_dir / "latest-partial" / "report.json"))
    assert report["run"]["status"] == "partial"
    assert report["summary"]["unreachable"] == ["gpu-gone-98"] and report["summary"]["failed"] == ["gpu-badfixture-99"]
    assert report["hosts"]["gpu-h100-ok-01"]["status"] == "ok"
    assert (report_dir / "latest-partial" / "facts" / "gpu-h100-ok-01.json").exists()


def test_a_bad_policy_stops_the_run_before_any_host_is_contacted(tmp_path):
    # a module run on the host starts this interpreter, which leaves a mark
    contacted = tmp_path / "contacted"
    interpreter = tmp_path / "python"
    interpreter.write_text("#!/bin/sh\necho \"$@\" >> %s\nexec %s \"$@\"\n" % (contacted, sys.executable))
    interpreter.chmod(0o755)
    extra_inventory = tmp_path / "bad-policy.yml"
    extra_inventory.write_text(yaml.safe_dump({"all": {"hosts": {"gpu-h100-ok-01": {
        "ansible_python_interpreter": str(interpreter),
        "gpufleet_policy": {"thresholds": {"memory_used_pct": "high"}}}}}}))
    report_dir = tmp_path / "reports"
    result = run_audit(str(report_dir), DEMO, str(extra_inventory), extra=["--limit", "gpu-h100-ok-01"])
    output = result.stdout + result.stderr
    assert result.returncode != 0
    assert "thresholds.memory_used_pct" in output and "high" in output
    # the collection task stops the host without running the module there
    assert "fatal: [gpu-h100-ok-01]: UNREACHABLE!" in output and "not audited: the policy check failed" in output
    assert not contacted.exists(), contacted.read_text()
    assert not (report_dir / "latest").exists()


AFTER_THE_AUDIT = """
- name: The audit
  ansible.builtin.import_playbook: {root}/audit.yml

- name: A play after the audit
  hosts: all
  gather_facts: false
  tasks:
    - name: Note what the host holds of its facts
      ansible.builtin.copy:
        content: >-
          {{{{ {{'facts': ansible_facts.gpufleet is defined,
                'gpus': ansible_facts.gpufleet.gpus | default([]) | length,
                'hostname': ansible_facts.gpufleet.host.hostname | default(none),
                'registered_facts': gpufleet_collect.ansible_facts is defined,
                'facts_file': gpufleet_collect.gpufleet_facts_file | default(none),
                'diagnosed_in_workers': gpufleet_audit.diagnosed_in_workers}} | to_json }}}}
        dest: "{out}/{{{{ inventory_hostname }}}}.json"
        mode: "0644"
      delegate_to: localhost
"""


@pytest.mark.parametrize("keep", [None, "true"])
def test_after_the_audit_the_facts_are_in_the_facts_files_unless_kept(tmp_path, keep):
    out = tmp_path / "out"
    out.mkdir()
    playbook = tmp_path / "after.yml"
    playbook.write_text(AFTER_THE_AUDIT.format(root=ROOT, out=out), encoding="utf-8")
    hosts = ["gpu-h100-ok-01", "gpu-l40s-crowded-10"]
    argv = [PLAYBOOK_BIN, str(playbook), "-i", DEMO, "-l", ",".join(hosts), "-e", "gpufleet_report_dir=%s" % (
        tmp_path / "reports"), "-e", "gpufleet_fail_severity=none"]
    if keep:
        argv += ["-e", "gpufleet_keep_facts=%s" % keep]
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_NOCOLOR="1")
    result = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600, check=False)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    seen = {host: read_json(str(out / ("%s.json" % host))) for host in hosts}
    for host in hosts:
        assert seen[host]["facts_file"] == "facts/%s.json" % host
        assert seen[host]["facts"] is bool(keep) and seen[host]["registered_facts"] is bool(keep)
        # each host's own rules ran in its worker, with the policy the report has for it
        assert seen[host]["diagnosed_in_workers"] == len(hosts)
    # each host holds its own facts, never another host's (4 L40S, 8 H100)
    assert {host: (seen[host]["hostname"], seen[host]["gpus"]) for host in hosts} == (
        {"gpu-h100-ok-01": ("gpu-h100-ok-01", 8), "gpu-l40s-crowded-10": ("gpu-l40s-crowded-10", 4)} if keep
        else {host: (None, 0) for host in hosts})
    # the report is the same either way: read from the facts files, or from the results (a --limit run is
    # partial: latest/ does not move to it)
    (run_dir,) = [path for path in (tmp_path / "reports").iterdir() if path.name[:1].isdigit()]
    report = expanded(read_json(str(run_dir / "report.json")))
    assert report["summary"]["hosts"] == {"total": 2, "ok": 2, "unreachable": 0, "failed": 0}
    assert {f["rule"] for f in report["findings"] if f["host"] == "gpu-l40s-crowded-10"} >= {
        "workload.memory_near_full"}


KEPT_FACTS_AFTER_THE_AUDIT = """
- name: The audit
  ansible.builtin.import_playbook: {root}/audit.yml

- name: A play after the audit that reads each host's facts, as remediate.yml's roles do
  hosts: all
  gather_facts: false
  tasks:
    - name: Take the host's effective policy as a fact, as the roles do
      gpufleet.core.policy_check:
        hosts: ["{{{{ inventory_hostname }}}}"]
        facts: true

    - name: Note the facts the host holds
      ansible.builtin.copy:
        content: >-
          {{{{ {{'hostname': ansible_facts.gpufleet.host.hostname,
                'bus_ids': ansible_facts.gpufleet.gpus | map(attribute='pci_bus_id') | list,
                'same_as_registered': ansible_facts.gpufleet == gpufleet_collect.ansible_facts.gpufleet,
                'max_processes_per_gpu': ansible_facts.gpufleet_effective_policy.workload.max_processes_per_gpu,
                'sharing': ansible_facts.gpufleet_effective_policy.sharing.mode}} | to_json }}}}
        dest: "{out}/{{{{ inventory_hostname }}}}.json"
        mode: "0644"
      delegate_to: localhost
"""


def test_with_kept_facts_each_host_holds_its_own_facts_and_policy_in_later_plays(tmp_path):
    # hosts with 8, 4, 1 and no GPUs and three policies: before the fix every host of the play shared one facts
    # dict (the run_once include_vars; ansible/ansible#87492), so that the last host's facts and policy were
    # every host's
    hosts = ["gpu-h100-ok-01", "gpu-l40s-crowded-10", "gpu-t4-nvsmi-14", "cpu-node-nodriver-13"]
    out = tmp_path / "out"
    out.mkdir()
    playbook = tmp_path / "after.yml"
    playbook.write_text(KEPT_FACTS_AFTER_THE_AUDIT.format(root=ROOT, out=out), encoding="utf-8")
    argv = [PLAYBOOK_BIN, str(playbook), "-i", DEMO, "-l", ",".join(hosts),
            "-e", "gpufleet_report_dir=%s" % (tmp_path / "reports"), "-e", "gpufleet_fail_severity=none",
            "-e", "gpufleet_keep_facts=true"]
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_NOCOLOR="1")
    result = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600, check=False)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    (run_dir,) = [path for path in (tmp_path / "reports").iterdir() if path.name[:1].isdigit()]
    seen = {host: read_json(str(out / ("%s.json" % host))) for host in hosts}
    for host in hosts:
        own = read_json(str(run_dir / "facts" / ("%s.json" % host)))  # the host's facts file, from its own result
        assert seen[host]["hostname"] == own["host"]["hostname"] == host
        assert seen[host]["bus_ids"] == [gpu["pci_bus_id"] for gpu in own["gpus"]]
        assert seen[host]["same_as_registered"] is True
    assert {host: len(seen[host]["bus_ids"]) for host in hosts} == {
        "gpu-h100-ok-01": 8, "gpu-l40s-crowded-10": 4, "gpu-t4-nvsmi-14": 1, "cpu-node-nodriver-13": 0}
    # the inference group's policy allows 4 processes per GPU; the training group's wants exclusive GPUs
    assert {host: (seen[host]["max_processes_per_gpu"], seen[host]["sharing"]) for host in hosts} == {
        "gpu-h100-ok-01": (None, "exclusive"), "gpu-l40s-crowded-10": (4, None), "gpu-t4-nvsmi-14": (4, None),
        "cpu-node-nodriver-13": (None, None)}
