"""gather_subset host_pressure: PSI, load, memory and swap sampled over a few seconds with GPU utilization,
on a host whose files and commands change between reads (a fake clock: no test waits)."""

import pytest

from ansible_collections.gpufleet.core.plugins.module_utils import host_pressure
from ansible_collections.gpufleet.core.plugins.module_utils.facts_model import new_facts
from ansible_collections.gpufleet.core.plugins.module_utils.host_io import CommandResult
from tests.support.schema_check import assert_valid_facts

CPU_BEFORE = "some avg10=61.20 avg60=58.04 avg300=40.11 total=900000000\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"
CPU_AFTER = "some avg10=63.02 avg60=58.90 avg300=40.30 total=901860000\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"
IO_BEFORE = "some avg10=0.50 avg60=0.40 avg300=0.30 total=1000\nfull avg10=0.10 avg60=0.10 avg300=0.10 total=500\n"
IO_AFTER = "some avg10=0.52 avg60=0.40 avg300=0.30 total=31000\nfull avg10=0.10 avg60=0.10 avg300=0.10 total=6500\n"
MEMINFO = ("MemTotal:       2113472512 kB\nMemFree:         10485760 kB\nMemAvailable:   1056736256 kB\n"
           "SwapTotal:        8388604 kB\nSwapFree:         8000000 kB\n")


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.now += seconds


class PressureHost:
    """/proc files that read their 'before' text until the clock moved, then their 'after' text."""

    def __init__(self, clock, psi=True, nvidia_smi="/usr/bin/nvidia-smi", utilization=("0, 9\n1, 14\n",)):
        self.clock = clock
        self.started = clock.now
        self.psi = psi
        self.nvidia_smi = nvidia_smi
        self.utilization = list(utilization)
        self.queries = 0

    def find_bin(self, name):
        return self.nvidia_smi if name == "nvidia-smi" else None

    def read_text(self, path, limit=None):
        late = self.clock.now > self.started
        texts = {"/proc/pressure/cpu": CPU_AFTER if late else CPU_BEFORE,
                 "/proc/pressure/io": IO_AFTER if late else IO_BEFORE,
                 "/proc/pressure/memory": "some avg10=0.00 avg60=0.00 avg300=0.00 total=7\n"
                                          "full avg10=0.00 avg60=0.00 avg300=0.00 total=7\n",
                 "/proc/vmstat": "pswpin %d\npswpout %d\n" % ((1200, 3000) if late else (0, 0)),
                 "/proc/meminfo": MEMINFO, "/proc/loadavg": "96.50 90.12 70.00 5/2301 99999\n",
                 "/sys/devices/system/cpu/online": "0-191\n"}
        if not self.psi and path.startswith("/proc/pressure/"):
            return None
        return texts.get(path)

    def run(self, argv, timeout):
        self.queries += 1
        text = self.utilization[min(self.queries - 1, len(self.utilization) - 1)]
        if text is None:
            return CommandResult(9, "", "Failed to initialize NVML: Driver/library version mismatch")
        return CommandResult(0, text, "")


def sample(host, clock, seconds=3, facts=None):
    facts = facts or dict(new_facts(), nvidia_present=True, collected_at="2026-11-30T12:00:00Z")
    host_pressure.sample_host_pressure(host, facts, seconds, lambda: 60.0, clock=clock, sleep=clock.sleep)
    return facts


def test_a_host_starving_its_gpus():
    clock = Clock()
    host = PressureHost(clock, utilization=("0, 9\n1, 14\n", "0, 11\n1, 12\n", "0, 7\n1, 16\n", "0, 9\n1, 14\n"))
    facts = sample(host, clock)
    record = facts["host_pressure"]
    assert record["sample_seconds"] == 3.0
    assert record["pressure"]["cpu"] == {"some_pct": 62.0, "full_pct": 0.0, "some_avg10": 63.02, "some_avg60": 58.9,
                                         "some_avg300": 40.3, "full_avg10": 0.0, "full_avg60": 0.0, "full_avg300": 0.0}
    assert (record["pressure"]["io"]["some_pct"], record["pressure"]["io"]["full_pct"]) == (1.0, 0.2)
    assert record["load"] == {"avg1": 96.5, "avg5": 90.12, "avg15": 70.0, "per_core_avg1": 0.5}
    assert record["cpus"] == 192
    assert record["memory"] == {"total_mib": 2063938.0, "available_mib": 1031969.0, "available_pct": 50.0}
    assert record["swap"] == {"total_mib": 8192.0, "free_mib": 7812.5, "pages_in_per_s": 400.0,
                              "pages_out_per_s": 1000.0}
    assert record["gpu_utilization"] == [
        {"index": 0, "mean_pct": 9.0, "min_pct": 7, "max_pct": 11, "samples": 4},
        {"index": 1, "mean_pct": 14.0, "min_pct": 12, "max_pct": 16, "samples": 4}]
    assert record["gpu_utilization_source"] == "nvidia-smi"
    assert facts["errors"] == []
    assert_valid_facts(facts)


def test_no_sample_time_keeps_only_the_kernels_averages():
    clock = Clock()
    record = sample(PressureHost(clock), clock, seconds=0)["host_pressure"]
    assert record["pressure"]["cpu"]["some_pct"] is None and record["pressure"]["cpu"]["some_avg10"] == 61.2
    assert record["swap"]["pages_in_per_s"] is None


def test_the_sample_is_shortened_to_the_collection_timeout():
    clock = Clock()
    facts = dict(new_facts(), nvidia_present=True)
    host_pressure.sample_host_pressure(PressureHost(clock), facts, 30, lambda: 3.5, clock=clock, sleep=clock.sleep)
    assert facts["host_pressure"]["sample_seconds"] == 2.5


def test_a_kernel_without_psi_and_a_failing_nvidia_smi_are_errors_not_failures():
    clock = Clock()
    facts = dict(new_facts(), nvidia_present=True)
    facts["gpus"] = [{"index": 0, "utilization": {"gpu_pct": 33}}]
    host = PressureHost(clock, psi=False, utilization=(None,))
    sample(host, clock, facts=facts)
    record = facts["host_pressure"]
    assert record["pressure"] == {"cpu": None, "memory": None, "io": None}
    assert record["gpu_utilization"] == [{"index": 0, "mean_pct": 33.0, "min_pct": 33, "max_pct": 33, "samples": 1}]
    assert record["gpu_utilization_source"] == "facts"
    assert host.queries == 1
    reasons = [error["reason"] for error in facts["errors"]]
    assert any("without PSI" in reason for reason in reasons)
    assert any("version mismatch" in reason for reason in reasons)


def test_without_nvidia_smi_there_is_no_gpu_sample():
    clock = Clock()
    record = sample(PressureHost(clock, nvidia_smi=None), clock)["host_pressure"]
    assert (record["gpu_utilization"], record["gpu_utilization_source"]) == ([], None)


@pytest.mark.parametrize("text, expected", [
    ("some avg10=0.00 avg60=0.08 avg300=0.06 total=293391454\n",
     {"some": {"avg10": 0.0, "avg60": 0.08, "avg300": 0.06, "total": 293391454}}),
    ("full avg10=1.00 avg60=0.00 avg300=0.00 total=5\n", None),
    ("", None),
    ("some avg10=x total=12\n", {"some": {"total": 12}}),
])
def test_psi_files(text, expected):
    assert host_pressure.parse_psi(text) == expected


@pytest.mark.parametrize("text, count", [("0-15\n", 16), ("0-3,8-11", 8), ("0", 1), ("x-y", None), ("", None)])
def test_online_cpus(text, count):
    assert host_pressure.parse_cpu_list(text) == count


@pytest.mark.parametrize("name", ["cgroup-v2-cpu.pressure_nonroot-cgroup_telegraf.txt",
                                  "cgroup-v2-io.pressure_nonroot-cgroup_telegraf.txt",
                                  "cgroup-v2-memory.pressure_nonroot-cgroup_telegraf.txt"])
def test_the_corpus_psi_files(corpus, name):
    parsed = host_pressure.parse_psi(corpus.read_realdata(name))
    assert set(parsed) == {"some", "full"}
    assert all(set(values) == {"avg10", "avg60", "avg300", "total"} for values in parsed.values())
    assert parsed["some"]["total"] >= parsed["full"]["total"] > 0


def test_gpus_in_mig_mode_have_no_utilization_and_that_is_no_error():
    clock = Clock()
    host = PressureHost(clock, utilization=("0, [N/A]\n1, [N/A]\n",))
    facts = sample(host, clock)
    assert facts["errors"] == [] and host.queries == 1
    assert facts["host_pressure"]["gpu_utilization_source"] != "nvidia-smi"


# --- issue 31: grep's file prefixes, the counters since boot, every real capture ---------------------------------

GREP_LISTING = """\
/proc/pressure/cpu:1:some avg10=12.50 avg60=3.00 avg300=1.00 total=1167162866
/proc/pressure/io:1:some avg10=0.00 avg60=0.00 avg300=0.00 total=61955081
/proc/pressure/io:2:full avg10=0.00 avg60=0.00 avg300=0.00 total=58578187
/sys/fs/cgroup/system.slice/trainer.service/memory.pressure:some avg10=4.00 avg60=0.00 avg300=0.00 total=9
"""


def test_psi_files_listed_with_their_names_by_grep():
    files = host_pressure.split_psi_listing(GREP_LISTING)
    assert sorted(files) == ["cpu", "io", "memory"]
    assert host_pressure.parse_psi(files["cpu"]) == {
        "some": {"avg10": 12.5, "avg60": 3.0, "avg300": 1.0, "total": 1167162866}}
    assert host_pressure.parse_psi(files["io"])["full"]["total"] == 58578187
    assert host_pressure.parse_psi(files["memory"])["some"]["avg10"] == 4.0


def test_the_counters_since_boot_of_old_and_new_kernels():
    old = host_pressure.parse_vmstat("pswpin 5\npswpout 7\nallocstall 3\ncompact_stall 2\ncompact_fail 1\n")
    new = host_pressure.parse_vmstat("allocstall_dma 0\nallocstall_dma32 1\nallocstall_normal 3\n"
                                     "allocstall_movable 49\noom_kill 2\n")
    assert host_pressure.vmstat_record(old) == {
        "pswpin": 5, "pswpout": 7, "compact_stall": 2, "compact_fail": 1, "thp_fault_fallback": None,
        "pgmajfault": None, "oom_kill": None, "allocstall": 3}
    assert (host_pressure.vmstat_record(new)["allocstall"], host_pressure.vmstat_record(new)["oom_kill"]) == (53, 2)


def test_the_sample_keeps_the_counters_since_boot():
    clock = Clock()
    record = sample(PressureHost(clock), clock)["host_pressure"]
    assert record["vmstat_since_boot"]["pswpout"] == 3000 and record["vmstat_since_boot"]["compact_fail"] is None
    assert record["pressure"]["cpu"]["some_avg300"] == 40.3


@pytest.mark.corpus
@pytest.mark.parametrize("name, some, full", [
    ("cgroup-v2-root-cpu.pressure_k8s-vm-2vcpu-5.4_some-avg10-46pct_hotsos.txt",
     {"avg10": 46.17, "avg60": 17.67, "avg300": 8.54, "total": 104324360}, None),
    ("cgroup-v2-root-io.pressure_k8s-vm-2vcpu-5.4_some-29-full-12.6pct_hotsos.txt",
     {"avg10": 29.09, "avg60": 9.39, "avg300": 3.24, "total": 85509677},
     {"avg10": 12.6, "avg60": 5.26, "avg300": 2.07, "total": 68089026}),
    ("cgroup-v2-root-memory.pressure_k8s-vm-2vcpu-5.4_low_hotsos.txt",
     {"avg10": 0.03, "avg60": 0.02, "avg300": 0.0, "total": 157506},
     {"avg10": 0.0, "avg60": 0.0, "avg300": 0.0, "total": 19817}),
])
def test_the_corpus_root_psi_files_of_a_kubernetes_node(corpus, name, some, full):
    parsed = host_pressure.parse_psi(corpus.read_realdata(name))
    assert parsed.get("some") == some and parsed.get("full") == full


@pytest.mark.corpus
def test_the_corpus_proc_pressure_listing_of_kernel_4_20(corpus):
    files = host_pressure.split_psi_listing(corpus.read_realdata(
        "proc-pressure_grep-n-all-files_kernel-4.20-cpu-some-only-idle_node-exporter-issue-quote.txt"))
    parsed = dict((resource, host_pressure.parse_psi(text)) for resource, text in files.items())
    assert sorted(parsed) == ["cpu", "io", "memory"] and "full" not in parsed["cpu"]
    assert (parsed["cpu"]["some"]["total"], parsed["io"]["some"]["total"], parsed["io"]["full"]["total"],
            parsed["memory"]["some"]["total"]) == (1167162866, 61955081, 58578187, 0)


@pytest.mark.corpus
@pytest.mark.parametrize("name, expected", [
    ("proc-vmstat_openstack-node_swapped-and-compaction-failing_hotsos.txt",
     {"pswpin": 1529, "pswpout": 17477, "compact_stall": 1038, "compact_fail": 825, "thp_fault_fallback": 387,
      "pgmajfault": 37569, "oom_kill": 0, "allocstall": 52}),
    ("proc-vmstat_k8s-control-node_no-swap-no-pressure_hotsos.txt",
     {"pswpin": 0, "pswpout": 0, "compact_stall": 0, "compact_fail": 0, "thp_fault_fallback": 0,
      "pgmajfault": 6124, "oom_kill": 0, "allocstall": 0}),
])
def test_the_corpus_vmstat_files(corpus, name, expected):
    assert host_pressure.vmstat_record(host_pressure.parse_vmstat(corpus.read_realdata(name))) == expected
