"""Every failure the kernel log and the host's pressure record gets a verdict in its layer (issue 31): PCIe AER and
limited links, machine checks and memory errors (hardware), GPU initialisation failures, hung tasks, soft lockups
and panics (driver), OOM kills, crashes in GPU libraries and host pressure (workload). Synthetic facts first, then
every real capture of the corpus's kernel log and host pressure sections driven through the real collector."""

import calendar
import time

import pytest

from ansible_collections.gpufleet.core.plugins.module_utils import host_pressure as pressure_parsers
from ansible_collections.gpufleet.core.plugins.module_utils.host_io import ReplayHost
from ansible_collections.gpufleet.core.plugins.module_utils.kernel_log import collect_kernel_log
from tests.support.rule_builders import findings_of, healthy_node, policy

LOG = "/var/log/kern.log"
YEAR_WINDOW = policy(thresholds={"xid_window_hours": 8760})


def audit_log(text, collected_at="2026-11-30T12:00:00Z", facts=None):
    """Findings of a host whose kernel log is text, read by the real collector on the capture's own clock."""
    facts = facts or healthy_node()
    facts["collected_at"] = collected_at
    now = calendar.timegm(time.strptime(collected_at, "%Y-%m-%dT%H:%M:%SZ"))
    collect_kernel_log(ReplayHost({"now": now, "files": {LOG: text}}), facts, source="files", files=[LOG],
                       window_hours=None)
    return findings_of(facts, the_policy=YEAR_WINDOW)


def of_rule(findings, rule):
    return [(finding["gpu"], finding["severity"]) for finding in findings if finding["rule"] == rule]


def one(findings, rule):
    found = [finding for finding in findings if finding["rule"] == rule]
    assert len(found) == 1, found
    return found[0]


# --- synthetic -----------------------------------------------------------------------------------------------------

AER_ON_A_GPU = """\
2026-11-30T10:00:00+0000 gpu-7 kernel: nvidia 0000:18:00.0: PCIe Bus Error: severity=Uncorrected (Fatal), type=Transaction Layer, (Receiver ID)
2026-11-30T10:00:00+0000 gpu-7 kernel: nvidia 0000:18:00.0:    [18] MalfTLP                (First)
2026-11-30T10:00:01+0000 gpu-7 kernel: nvidia 0000:18:00.0: AER: can't recover (no error_detected callback)
"""


def test_a_fatal_aer_on_a_gpu_and_its_driver_that_cannot_recover_are_critical():
    findings = audit_log(AER_ON_A_GPU)
    assert of_rule(findings, "hardware.kernel_pcie_aer") == [("0000:18:00.0", "critical"), ("0000:18:00.0", "critical")]
    fatal = [f for f in findings if f["rule"] == "hardware.kernel_pcie_aer" and "fatal" in f["summary"]][0]
    assert fatal["evidence"]["errors"] == ["MalfTLP"] and fatal["summary"].startswith("GPU 0 (0000:18:00.0")


def test_corrected_aer_errors_are_a_warning_only_at_the_policy_threshold():
    line = ("2026-11-30T10:%02d:00+0000 h kernel: pcieport 0000:00:01.0: PCIe Bus Error: severity=Corrected, "
            "type=Physical Layer, (Receiver ID)\n")
    few = audit_log("".join(line % minute for minute in range(3)))
    many = audit_log("".join(line % minute for minute in range(12)))
    burst = audit_log(line % 1 + line % 1)
    coalesced = audit_log(line % 1 + "2026-11-30T10:01:00+0000 h kernel: pcieport 0000:00:01.0: AER: Multiple "
                                     "Corrected error received: 0000:00:01.0\n")
    assert of_rule(few, "hardware.kernel_pcie_aer") == [("0000:00:01.0", "info")]
    assert of_rule(many, "hardware.kernel_pcie_aer") == [("0000:00:01.0", "warning")]
    assert one(many, "hardware.kernel_pcie_aer")["evidence"]["count"] == 12
    assert of_rule(burst, "hardware.kernel_pcie_aer") == of_rule(coalesced, "hardware.kernel_pcie_aer") == [
        ("0000:00:01.0", "warning")]
    assert one(coalesced, "hardware.kernel_pcie_aer")["evidence"]["burst"] is True


def test_a_link_limited_only_in_speed_is_info_and_one_limited_in_width_a_warning():
    text = ("[    3.1] pci 0000:18:00.0: 126.016 Gb/s available PCIe bandwidth, limited by 8.0 GT/s PCIe x16 link at "
            "0000:17:00.0 (capable of 504.112 Gb/s with 32.0 GT/s PCIe x16 link)\n"
            "[    3.2] pci 0000:2a:00.0: 126.024 Gb/s available PCIe bandwidth, limited by 32.0 GT/s PCIe x4 link at "
            "0000:29:00.0 (capable of 504.112 Gb/s with 32.0 GT/s PCIe x16 link)\n")
    assert of_rule(audit_log(text), "hardware.kernel_pcie_link_limited") == [
        ("0000:18:00.0", "info"), ("0000:2a:00.0", "warning")]


def test_an_uncorrected_memory_error_is_critical():
    text = "2026-11-30T10:00:00Z h kernel: EDAC MC2: 1 UE memory read error on CPU_SrcID#1_MC#2_Chan#0_DIMM#0 (x)\n"
    finding = one(audit_log(text), "hardware.host_memory_errors")
    assert (finding["severity"], finding["layer"], finding["evidence"]["uncorrected"]) == ("critical", "hardware", 1)


def test_machine_checks_that_say_nothing_more_are_a_warning_naming_them():
    text = "2026-11-30T10:00:00Z h kernel: mce: [Hardware Error]: Machine check events logged\n"
    finding = one(audit_log(text), "hardware.host_memory_errors")
    assert (finding["severity"], finding["summary"]) == (
        "warning", "1 machine check reports (the line does not say what) in the kernel log")


def test_a_hung_task_shortly_after_an_xid_is_critical_and_one_alone_or_long_after_a_warning():
    hung = "2026-11-30T10:05:00Z h kernel: INFO: task containerd:812 blocked for more than 122 seconds.\n"
    xid = "2026-11-30T%s h kernel: NVRM: Xid (PCI:0000:18:00): 45, pid=1, name=python3, Ch 0000000a\n"
    assert of_rule(audit_log(hung), "driver.kernel_hung_task") == [(None, "warning")]
    assert of_rule(audit_log(xid % "08:00:00Z" + hung), "driver.kernel_hung_task") == [(None, "warning")]
    finding = one(audit_log(xid % "10:00:00Z" + hung), "driver.kernel_hung_task")
    assert (finding["severity"], finding["evidence"]["xids_before"]) == ("critical", ["Xid 45 on 0000:18:00.0"])


def test_one_cpu_locking_up_again_and_again_is_critical():
    line = "2026-11-30T10:0%d:00Z h kernel: watchdog: BUG: soft lockup - CPU#5 stuck for 23s! [python3:77]\n"
    finding = one(audit_log("".join(line % minute for minute in range(3))), "driver.kernel_soft_lockup")
    assert (finding["severity"], finding["evidence"]["repeated_cpus"]) == ("critical", [5])


def test_an_init_failure_of_a_gpu_the_log_names_is_critical_in_the_driver_layer():
    text = "2026-11-30T10:00:00Z h kernel: NVRM: GPU 0000:18:00.0: RmInitAdapter failed! (0x62:0x65:2487)\n" * 2
    finding = one(audit_log(text), "driver.gpu_init_failed")
    assert (finding["gpu"], finding["severity"], finding["layer"], finding["evidence"]["count"]) == (
        "0000:18:00.0", "critical", "driver", 2)


def test_gsp_rate_limiting_is_critical_unless_an_xid_119_of_the_gpu_says_it():
    limited = ("2026-11-30T10:00:00Z h kernel: NVRM: Rate limiting GSP RPC error prints for GPU at PCI:0000:18:00 "
               "(printing 1 of every 30).  The GPU likely needs to be reset.\n")
    xid = ("2026-11-30T09:59:00Z h kernel: NVRM: Xid (PCI:0000:18:00): 119, pid=1, name=x, Timeout after 6s of "
           "waiting for RPC response from GPU0 GSP!\n")
    finding = one(audit_log(limited), "driver.gsp_rpc_errors")
    assert (finding["gpu"], finding["severity"], finding["layer"]) == ("0000:18:00.0", "critical", "driver")
    findings = audit_log(xid + limited)
    assert of_rule(findings, "driver.gsp_rpc_errors") == []
    assert ("0000:18:00.0", "critical") in [(f["gpu"], f["severity"]) for f in findings if f["rule"].endswith(".xid")]


def test_a_kernel_panic_is_critical():
    text = "<0>[ 3098.275469] Kernel panic - not syncing: Fatal machine check\n"
    assert of_rule(audit_log(text), "driver.kernel_panic") == [(None, "critical")]


def test_an_oom_kill_that_names_no_unit_is_still_a_finding_naming_the_gpu_process():
    text = ("2026-11-30T10:00:00Z h kernel: oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=x,"
            "mems_allowed=0,oom_memcg=/kubepods.slice/kubepods-podeded8c65_6e8e_4c6e_a889_3e427565c740.slice,"
            "task_memcg=/kubepods.slice/kubepods-podeded8c65_6e8e_4c6e_a889_3e427565c740.slice/cri-containerd-"
            + "e" * 64 + ".scope,task=python3,pid=461754,uid=0\n"
            "2026-11-30T10:00:00Z h kernel: Memory cgroup out of memory: Killed process 461754 (python3) "
            "total-vm:1kB, anon-rss:2kB, file-rss:0kB\n")
    facts = healthy_node()
    finding = one(audit_log(text, facts=facts), "workload.kernel_oom_kill")
    assert facts["kernel_log"]["oom_kills"]["count"] == 1
    assert (finding["severity"], finding["layer"], finding["evidence"]["gpu_processes"],
            finding["evidence"]["pods"]) == ("warning", "workload", ["python3"], ["eded8c65-6e8e-4c6e-a889-3e427565c740"])
    assert "memory limit" in finding["action"] and "python3 used a GPU" in finding["action"]


def test_a_host_wide_oom_of_several_processes_says_they_share_the_memory():
    text = "".join("2026-11-30T10:0%d:00Z h kernel: Out of memory: Killed process %d (worker%d) total-vm:1kB, "
                   "anon-rss:1kB\n" % (n, 100 + n, n) for n in range(3))
    finding = one(audit_log(text), "workload.kernel_oom_kill")
    assert (finding["evidence"]["count"], finding["evidence"]["global"]) == (3, 3)
    assert finding["action"].startswith("The host ran out of memory") and "Several processes" in finding["action"]


def test_a_crash_in_a_gpu_library_is_a_workload_warning():
    text = ("2026-11-30T10:00:00Z h kernel: python3[4242]: segfault at 10 ip 1 sp 2 error 4 in "
            "libcudnn_ops.so.9[7f0000+100000]\n")
    finding = one(audit_log(text), "workload.gpu_library_crash")
    assert (finding["severity"], finding["evidence"]["crashes"]) == ("warning", ["python3 in libcudnn_ops.so.9 (1)"])


def pressure_facts(psi=None, vmstat=None, swap_out_per_s=None, utilization=()):
    """A host_pressure record of the kernel's averages only (no sample), as a capture gives it."""
    facts = healthy_node()
    facts["host_pressure"] = {
        "sample_seconds": 0.0, "cpus": 2,
        "load": {"avg1": None, "avg5": None, "avg15": None, "per_core_avg1": None},
        "memory": {"total_mib": None, "available_mib": None, "available_pct": None},
        "swap": {"total_mib": None, "free_mib": None, "pages_in_per_s": None, "pages_out_per_s": swap_out_per_s},
        "pressure": dict((resource, pressure_parsers.pressure_record(None, (psi or {}).get(resource), 0))
                         for resource in pressure_parsers.RESOURCES),
        "gpu_utilization": list(utilization), "gpu_utilization_source": "nvidia-smi" if utilization else None,
        "vmstat_since_boot": pressure_parsers.vmstat_record(vmstat) if vmstat is not None else None,
    }
    return facts


def psi(text):
    return pressure_parsers.parse_psi(text)


def test_sustained_memory_pressure_is_a_finding():
    facts = pressure_facts({"memory": psi("some avg10=30.00 avg60=25.00 avg300=20.00 total=9\n"
                                          "full avg10=10.00 avg60=5.00 avg300=5.00 total=5\n")})
    finding = one(findings_of(facts), "workload.host_pressure")
    assert finding["evidence"]["high"] == [{"resource": "memory", "some_pct": 30.0, "limit": 10, "some_avg300": 20.0,
                                            "full_pct": 10.0, "sustained": True}]


def test_cpu_pressure_while_the_gpus_with_work_idle_is_left_to_input_bound():
    idle = [{"index": index, "mean_pct": 5.0, "min_pct": 1, "max_pct": 9, "samples": 3} for index in range(8)]
    facts = pressure_facts({"cpu": psi("some avg10=60.00 avg60=50.00 avg300=40.00 total=9\n")}, utilization=idle)
    rules = [finding["rule"] for finding in findings_of(facts)]
    assert "workload.input_bound" in rules and "workload.host_pressure" not in rules


def test_swapping_during_the_sample_is_memory_pressure():
    finding = one(findings_of(pressure_facts(vmstat={}, swap_out_per_s=250.0)), "workload.host_memory_pressure")
    assert finding["summary"] == "The host ran short of memory: swapping out 250.0 pages/s now"


# --- the corpus: kernel log ----------------------------------------------------------------------------------------

@pytest.mark.corpus
def test_corpus_aer_fatal_with_a_gpu_that_cannot_recover_is_critical(corpus):
    findings = audit_log(corpus.read_realdata(
        "kernel-pcie-aer_corrected-nonfatal-fatal-with-nvidia-cant-recover_issue-quotes.txt"))
    verdicts = dict(((f["gpu"], f["evidence"].get("aer_severity") or f["evidence"].get("driver")), f["severity"])
                    for f in findings if f["rule"] == "hardware.kernel_pcie_aer")
    assert verdicts[("0000:00:03.0", "fatal")] == "critical"
    assert verdicts[("0000:03:00.0", "nvidia")] == "critical"
    assert verdicts[("0000:80:1b.4", "non_fatal")] == "warning"
    # two corrected errors per port, below thresholds.aer_correctable_warning, but a burst: two in one second
    # (pop-os) and "Multiple Corrected error received" (raspberry-pi-pcie-devices)
    assert verdicts[("0000:00:03.1", "corrected")] == verdicts[("0000:00:1d.0", "corrected")] == "warning"
    assert verdicts[("0000:97:00.0", "xhci_hcd")] == "warning"


@pytest.mark.corpus
def test_corpus_link_limited_by_x1_is_a_warning_and_the_unlimited_pstore_line_none(corpus):
    findings = audit_log(corpus.read_realdata(
        "kernel-pcie-link-bandwidth-limited-by_and-lspci-lnksta-downgraded_issue-quotes.txt"))
    assert of_rule(findings, "hardware.kernel_pcie_link_limited") == [("0000:01:00.0", "warning")]
    pstore = audit_log(corpus.read_realdata("pstore-dmesg_kernel-panic-test_asrockrack-genoa_gpud.txt"))
    assert of_rule(pstore, "hardware.kernel_pcie_link_limited") == []
    assert of_rule(pstore, "driver.kernel_panic") == [(None, "critical")]


@pytest.mark.corpus
def test_corpus_gpus_that_fail_to_initialise_or_fall_off_the_bus_are_critical(corpus):
    findings = audit_log(corpus.read_realdata(
        "kernel-nvrm-rminitadapter-failed-and-fallen-off-the-bus_issue-quotes.txt"), "2025-03-01T00:00:00Z")
    assert of_rule(findings, "driver.gpu_init_failed") == [
        (None, "critical"), ("0000:01:00.0", "critical"), ("0000:0a:00.0", "critical"), ("0000:81:00.0", "critical")]
    assert ("0000:01:00.0", "critical") in of_rule(findings, "hardware.gpu_lost")


@pytest.mark.corpus
@pytest.mark.parametrize("name, collected_at, severity", [
    ("kernel-hung-task-blocked-120s_nvidia-uvm-and-after-xid45_dmesg_issue-quotes.txt", "2024-10-13T00:00:00Z",
     "critical"),
    ("kernel-hung-task_docker-blocked-120s_debian-3.16_npd.txt", "2026-11-30T12:00:00Z", "warning"),
    ("kernel-hung-task_fuse-df-blocked-120s_ubuntu-5.15-tainted-P_syslog_hotsos.txt", "2026-11-30T12:00:00Z",
     "warning"),
])
def test_corpus_hung_tasks(corpus, name, collected_at, severity):
    assert of_rule(audit_log(corpus.read_realdata(name), collected_at), "driver.kernel_hung_task") == [
        (None, severity)]


@pytest.mark.corpus
def test_corpus_soft_lockups_on_different_cpus_are_a_warning(corpus):
    findings = audit_log(corpus.read_realdata("kernel-soft-lockup-watchdog_dmesg-T-syslog-wall-nmi_issue-quotes.txt"),
                         "2025-01-06T00:00:00Z")
    finding = one(findings, "driver.kernel_soft_lockup")
    assert finding["severity"] == "warning" and "cuda-EvtHandlr (CPU 0, 27s)" in finding["evidence"]["processes"]


@pytest.mark.corpus
def test_corpus_corrected_dimm_errors_are_a_warning(corpus):
    findings = audit_log(corpus.read_realdata("kernel-mce-edac-memory-errors_and-mcelog-ras-mc-ctl_issue-quotes.txt"))
    finding = one(findings, "hardware.host_memory_errors")
    assert (finding["severity"], finding["evidence"]["corrected_errors"], finding["evidence"]["uncorrected"]) == (
        "warning", 17, 0)


@pytest.mark.corpus
def test_corpus_a_segfault_inside_nccl_is_a_workload_warning(corpus):
    findings = audit_log(corpus.read_realdata("dmesg-decode-iso_libnccl-segfault_gpud.log"), "2025-01-21T06:00:00Z")
    finding = one(findings, "workload.gpu_library_crash")
    assert (finding["severity"], finding["evidence"]["crashes"]) == ("warning", ["pt_main_thread in libnccl.so.2 (2)"])


@pytest.mark.corpus
@pytest.mark.parametrize("name, count, host_wide", [
    ("kernel-oom_global_gce-vm-ubuntu-3.13_cadvisor.txt", 1, 1),
    ("kernel-oom_memcg-v1_hp-z420-ubuntu-3.13_cadvisor.txt", 1, 0),
    ("kernel-oom_memcg-docker_thinkpad-gentoo-4.8_kmsg_cadvisor.txt", 1, 0),
    ("kernel-oom_global-sysrq-f-with-oom-kill-line_qemu-ubuntu-5.4_kernlog_hotsos.txt", 1, 1),
    ("kernel-oom-memcg-kubernetes-pods_cgroup-v1-and-v2_issue-quotes.txt", 5, 0),
    ("dmesg-decode-iso_xid13-43-and-oom-kill-variants_gpud.log", 3, 2),
    ("syslog-journal_oom-killer-and-systemd-unit-killed_issue-quotes_part1.txt", 3, 3),
])
def test_corpus_every_oom_kill_is_a_workload_warning_on_the_host(corpus, name, count, host_wide):
    finding = one(audit_log(corpus.read_realdata(name)), "workload.kernel_oom_kill")
    assert (finding["severity"], finding["layer"], finding["evidence"]["count"], finding["evidence"]["global"]) == (
        "warning", "workload", count, host_wide)


@pytest.mark.corpus
@pytest.mark.parametrize("name, collected_at, bus", [
    ("dmesg-T_xid119-gsp-rpc-timeout_dell-xe9680-h100_gpud.log", "2024-08-01T00:00:00Z", "0000:9b:00.0"),
    ("kernel-xid119-gsp-rpc-timeout_r525-wording_dmesg-T_issue-quotes.txt", "2023-12-01T00:00:00Z", "0000:61:00.0"),
])
def test_corpus_gsp_rpc_timeouts_of_both_wordings_are_critical_on_their_gpu(corpus, name, collected_at, bus):
    findings = audit_log(corpus.read_realdata(name), collected_at)
    assert (bus, "critical") in [(f["gpu"], f["severity"]) for f in findings if f["evidence"].get("xid") == 119]


@pytest.mark.corpus
def test_corpus_xid13_and_43_of_one_job_are_a_warning(corpus):
    findings = audit_log(corpus.read_realdata("dmesg-decode-iso_xid13-43-and-oom-kill-variants_gpud.log"),
                         "2025-01-21T12:00:00Z")
    xids = [(f["evidence"].get("xid"), f["severity"]) for f in findings if f["gpu"] == "0000:38:00.0"]
    assert xids and all(severity == "warning" for _xid, severity in xids)


# --- the corpus: host pressure -------------------------------------------------------------------------------------

@pytest.mark.corpus
@pytest.mark.parametrize("resource, name, expected", [
    ("cpu", "cgroup-v2-root-cpu.pressure_k8s-vm-2vcpu-5.4_some-avg10-46pct_hotsos.txt", ("cpu", 46.17, False)),
    ("io", "cgroup-v2-root-io.pressure_k8s-vm-2vcpu-5.4_some-29-full-12.6pct_hotsos.txt", ("io", 29.09, False)),
    ("memory", "cgroup-v2-root-memory.pressure_k8s-vm-2vcpu-5.4_low_hotsos.txt", None),
    ("cpu", "cgroup-v2-cpu.pressure_nonroot-cgroup_telegraf.txt", None),
    ("io", "cgroup-v2-io.pressure_nonroot-cgroup_telegraf.txt", None),
    ("memory", "cgroup-v2-memory.pressure_nonroot-cgroup_telegraf.txt", None),
])
def test_corpus_psi_files_judged(corpus, resource, name, expected):
    found = findings_of(pressure_facts({resource: psi(corpus.read_realdata(name))}), "workload.host_pressure")
    if expected is None:
        assert found == []
        return
    (finding,) = found
    (high,) = finding["evidence"]["high"]
    assert (high["resource"], high["some_pct"], high["sustained"]) == expected and finding["severity"] == "warning"


@pytest.mark.corpus
def test_corpus_an_idle_kernel_4_20_host_has_no_pressure(corpus):
    files = pressure_parsers.split_psi_listing(corpus.read_realdata(
        "proc-pressure_grep-n-all-files_kernel-4.20-cpu-some-only-idle_node-exporter-issue-quote.txt"))
    facts = pressure_facts(dict((resource, psi(text)) for resource, text in files.items()))
    assert facts["host_pressure"]["pressure"]["cpu"]["full_avg10"] is None
    assert findings_of(facts, "workload.host_pressure") == []


@pytest.mark.corpus
@pytest.mark.parametrize("name, signs", [
    ("proc-vmstat_openstack-node_swapped-and-compaction-failing_hotsos.txt",
     "The host ran short of memory: 17477 pages swapped out, 825 of 1038 compactions failed"),
    ("proc-vmstat_k8s-control-node_no-swap-no-pressure_hotsos.txt", None),
])
def test_corpus_vmstat_judged(corpus, name, signs):
    facts = pressure_facts(vmstat=pressure_parsers.parse_vmstat(corpus.read_realdata(name)))
    found = findings_of(facts, "workload.host_memory_pressure")
    assert [(f["summary"], f["severity"]) for f in found] == ([(signs, "warning")] if signs else [])
