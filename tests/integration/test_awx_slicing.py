"""AWX job slicing simulated on the demo fleet: the hosts ordered by name, slice n of 3 gets hosts[n-1::3]
(as AWX's Inventory.get_sliced_hosts gives them, docs/awx.md); three ansible-playbook processes run at once,
each with its slice as --limit and the same gpufleet_run_group, all writing into one real PostgreSQL store;
then `gpufleet report --aggregate` builds the fleet report. Its findings and causes equal the unsliced run's."""

import json
import os
import subprocess
import sys

import yaml

from ansible_collections.gpufleet.core.plugins.plugin_utils.reports.format import expanded
from tests.support.postgres import postgres_cluster  # noqa: F401 pylint: disable=unused-import

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.dirname(sys.executable)
PLAYBOOK_BIN = os.path.join(BIN, "ansible-playbook")
GPUFLEET_BIN = os.path.join(BIN, "gpufleet")
SLICES = 3
RUN_GROUP = "nightly-sliced-test"
DEMO_EXIT_STATUS = 2  # the demo fleet has critical findings on purpose


def demo_hosts():
    def walk(group):
        names = set((group.get("hosts") or {}).keys())
        for child in (group.get("children") or {}).values():
            names |= walk(child or {})
        return names
    with open(os.path.join(ROOT, "inventories", "demo", "hosts.yml"), encoding="utf-8") as stream:
        return sorted(walk(yaml.safe_load(stream)["all"]))


def awx_slice(hosts, number, count):
    """AWX: the enabled hosts ordered by name, every count-th from the number-th."""
    return sorted(hosts)[number - 1::count]


def environment(**extra):
    env = {name: value for name, value in os.environ.items() if name != "GPUFLEET_STORE_URL"}
    env.update(ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_NOCOLOR="1", **extra)
    return env


def audit_command(report_dir, *extra):
    return [PLAYBOOK_BIN, "audit.yml", "-e", "gpufleet_report_dir=%s" % report_dir] + list(extra)


def read_report(folder):
    """The report as in memory (report.json 1.3 implies a finding's host and severity: report_format.expanded)."""
    with open(os.path.join(folder, "report.json"), encoding="utf-8") as stream:
        return expanded(json.load(stream))


def finding_identities(report):
    return sorted((f["rule"], f["host"], f.get("gpu") or "", f["severity"]) for f in report["findings"])


def cause_identities(report):
    return sorted((c["kind"], c["id"], tuple(sorted(c["hosts"]))) for c in report["causes"])


def run_slices(report_dir, url, hosts):
    processes = []
    for number in range(1, SLICES + 1):
        part = awx_slice(hosts, number, SLICES)
        command = audit_command(report_dir, "--limit", ",".join(part), "-e", "gpufleet_run_group=%s" % RUN_GROUP,
                                "-e", "gpufleet_slice_number=%d" % number, "-e", "gpufleet_slice_count=%d" % SLICES,
                                "-e", "gpufleet_audit_suffix=-slice%d" % number)
        processes.append(subprocess.Popen(command, cwd=ROOT, env=environment(GPUFLEET_STORE_URL=url),
                                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
    outputs = [process.communicate(timeout=900)[0] for process in processes]
    return [process.returncode for process in processes], outputs


def gpufleet(url, report_dir, *arguments):
    return subprocess.run([GPUFLEET_BIN, "--store-url", url, "--report-root", report_dir] + list(arguments),
                          cwd=ROOT, env=environment(), capture_output=True, text=True, timeout=600, check=False)


def test_sliced_audit_aggregates_to_the_unsliced_fleet_report(tmp_path, postgres_cluster):  # noqa: F811
    hosts = demo_hosts()
    assert len(hosts) >= SLICES * 2
    unsliced = subprocess.run(audit_command(str(tmp_path / "whole"), "-e", "gpufleet_store=false"), cwd=ROOT,
                              env=environment(), capture_output=True, text=True, timeout=900, check=False)
    assert unsliced.returncode == DEMO_EXIT_STATUS, unsliced.stdout[-3000:]
    whole = read_report(str(tmp_path / "whole" / "latest"))

    url = postgres_cluster.new_database()
    sliced_root = str(tmp_path / "sliced")
    codes, outputs = run_slices(sliced_root, url, hosts)
    assert codes == [DEMO_EXIT_STATUS] * SLICES, "\n".join(output[-2000:] for output in outputs)

    completed = gpufleet(url, sliced_root, "report", "--aggregate", RUN_GROUP, "--json")
    assert completed.returncode == 0, completed.stderr
    answer = json.loads(completed.stdout)
    aggregate = read_report(answer["output"])

    assert aggregate["run"]["status"] == "complete", aggregate["run"]["status_reason"]
    assert sorted(aggregate["hosts"]) == hosts
    assert finding_identities(aggregate) and finding_identities(aggregate) == finding_identities(whole)
    assert cause_identities(aggregate) and cause_identities(aggregate) == cause_identities(whole)
    assert aggregate["store"]["status"] == "written"
    orchestration = aggregate["run"]["orchestration"]
    assert orchestration["run_group"] == RUN_GROUP
    slices = orchestration["aggregate"]["slices"]
    assert sorted(entry["number"] for entry in slices) == list(range(1, SLICES + 1))
    assert sum(entry["hosts"] for entry in slices) == len(hosts)
    for name in ("report.html", "junit.xml", "gpufleet.prom"):
        assert os.path.getsize(os.path.join(answer["output"], name)) > 0
    with open(os.path.join(answer["output"], "gpufleet.prom"), encoding="utf-8") as handle:
        # the slices' stored facts give the GPU series dcgm-exporter's labels
        assert ('gpufleet_gpu_lost{host="gpu-h100-xid79-02",gpu="5",UUID="",pci_bus_id="00000000:AB:00.0",'
                'Hostname="gpu-h100-xid79-02",modelName=""} 1') in handle.read().splitlines()

    listed = gpufleet(url, sliced_root, "runs", "--json")
    assert listed.returncode == 0, listed.stderr
    runs = {entry["run"]: entry for entry in json.loads(listed.stdout)}
    assert len(runs) == SLICES + 1
    assert {entry["run"] for entry in slices} | {aggregate["run"]["id"]} == set(runs)
    assert runs[aggregate["run"]["id"]]["hosts"] == len(hosts)
    assert sorted(runs[entry["run"]]["hosts"] for entry in slices) == sorted(
        len(awx_slice(hosts, number, SLICES)) for number in range(1, SLICES + 1))


def test_missing_slice_makes_the_aggregate_partial(tmp_path, postgres_cluster):  # noqa: F811
    hosts = demo_hosts()
    url = postgres_cluster.new_database()
    report_dir = str(tmp_path / "sliced")
    part = awx_slice(hosts, 1, SLICES)
    completed = subprocess.run(
        audit_command(report_dir, "--limit", ",".join(part), "-e", "gpufleet_run_group=%s" % RUN_GROUP,
                      "-e", "gpufleet_slice_number=1", "-e", "gpufleet_slice_count=%d" % SLICES),
        cwd=ROOT, env=environment(GPUFLEET_STORE_URL=url), capture_output=True, text=True, timeout=900, check=False)
    assert completed.returncode == DEMO_EXIT_STATUS, completed.stdout[-3000:]
    answer = gpufleet(url, report_dir, "report", "--aggregate", RUN_GROUP, "--json")
    assert answer.returncode == 0, answer.stderr
    aggregate = read_report(json.loads(answer.stdout)["output"])
    assert aggregate["run"]["status"] == "partial"
    assert aggregate["run"]["status_reason"] == "slice 2, 3 of %d missing from the store" % SLICES
    assert sorted(aggregate["hosts"]) == part
    unknown = gpufleet(url, report_dir, "report", "--aggregate", "no-such-group")
    assert unknown.returncode == 1 and "no run of run group 'no-such-group'" in unknown.stderr
