"""The incident evidence collector (module_utils/evidence.py) through the host objects of host_io: what each
item records, caps with the cut recorded, redaction, missing tools, timeouts and the optional diagnostics."""

import hashlib

from ansible_collections.gpufleet.core.plugins.module_utils.evidence import (
    cap, collect_evidence, mig_enabled, redact_environment_values, unit_of_cgroup)
from ansible_collections.gpufleet.core.plugins.module_utils.host_io import CommandResult, ReplayHost, command_key

NOW = 1796018400.0
WINDOW = "--since=@1795932000 --until=@1796018400"
UNITS = ("inference.service nvidia-persistenced.service nvidia-fabricmanager.service nvidia-dcgm.service "
         "dcgm.service nvidia-mps.service nvidia-cuda-mps-control.service")
UNIT_FILE = ("[Service]\nEnvironment=WORKERS=4 HF_TOKEN=hf_secret0value\n"
             "Environment=\"API_KEY=sk live secret\" MODE=x\nExecStart=/usr/bin/serve\n")


def ok(stdout):
    return {"rc": 0, "stdout": stdout, "stderr": "", "timed_out": False, "missing": False}


def fixture(**extra_commands):
    commands = {
        "nvidia-smi -q": ok("==============NVSMI LOG==============\nMIG Mode\n        Current : Disabled\n"),
        "nvidia-smi -q -x": ok("<nvidia_smi_log/>\n"),
        "journalctl _TRANSPORT=kernel -o short-iso-precise --utc --no-pager " + WINDOW:
            ok("2026-11-29T21:14:07.000000+00:00 h kernel: NVRM: Xid (PCI:0000:ab:00): 79, GPU has fallen off the bus.\n"),
        "systemctl cat --no-pager " + UNITS: ok(UNIT_FILE),
        "journalctl --list-boots --utc --no-pager": ok("IDX BOOT ID FIRST ENTRY LAST ENTRY\n"),
    }
    commands.update(extra_commands)
    return {"now": NOW, "bins": {"nvidia-smi": "/usr/bin/nvidia-smi", "journalctl": "/usr/bin/journalctl",
                                 "systemctl": "/usr/bin/systemctl"},
            "files": {"/proc/4242/cgroup": "0::/system.slice/inference.service\n",
                      "/var/log/dpkg.log": "2026-11-29 10:00:00 upgrade nvidia-driver-550:amd64 1 2\n"},
            "dirs": {}, "commands": commands}


def items_by_name(result):
    return {item["name"]: item for item in result["evidence"]}


def test_each_item_records_command_status_size_and_the_sha256_of_what_it_kept():
    result = collect_evidence(ReplayHost(fixture()), pids=[4242, 7])
    items = items_by_name(result)
    smi = items["nvidia-smi-q.txt"]
    assert smi["status"] == "ok" and smi["rc"] == 0 and smi["command"] == "nvidia-smi -q"
    assert smi["size"] == len(smi["content"].encode()) == 74
    assert smi["sha256"] == hashlib.sha256(smi["content"].encode()).hexdigest()
    assert items["kernel.log"]["content"].startswith("2026-11-29T21:14:07")
    assert result["window"] == {"since": NOW - 86400, "until": NOW}
    assert result["pid_units"] == {"4242": "inference.service"}
    assert result["units"][0] == "inference.service"
    assert items["dpkg.log"]["status"] == "ok" and items["dpkg.log"]["command"] == "read /var/log/dpkg.log"


def test_missing_tools_and_files_are_items_with_the_reason_never_errors():
    items = items_by_name(collect_evidence(ReplayHost(fixture())))
    assert items["lspci-nvidia.txt"]["status"] == "missing"
    assert "lspci is not installed" in items["lspci-nvidia.txt"]["why"]
    assert items["ipmitool-sel-elist.txt"]["status"] == "missing"
    assert items["ipmitool-sdr-elist.txt"]["status"] == "skipped"
    assert items["ipmitool-sdr-elist.txt"]["command"] == "ipmitool sdr elist"
    assert items["dnf.rpm.log"]["why"] == "/var/log/dnf.rpm.log is absent or not readable"
    assert items["dcgmi-diag.txt"]["why"] == "off (dcgm_diag: false)"
    assert items["nvidia-bug-report.log.gz"]["status"] == "skipped"
    assert items["lspci-nvidia.txt"]["content"] is None and items["lspci-nvidia.txt"]["sha256"] is None


def test_environment_values_in_unit_files_are_redacted_and_the_names_kept():
    items = items_by_name(collect_evidence(ReplayHost(fixture()), pids=[4242]))
    text = items["systemctl-cat.txt"]["content"]
    assert "hf_secret0value" not in text and "sk live secret" not in text
    assert "Environment=WORKERS=<redacted> HF_TOKEN=<redacted>" in text
    assert "API_KEY=<redacted>" in text and "MODE=<redacted>" in text
    assert "ExecStart=/usr/bin/serve" in text
    assert items["systemctl-cat.txt"]["redacted"] == "environment values"


def test_redaction_of_systemctl_show_environment():
    text = redact_environment_values("Id=a.service\nEnvironment=TOKEN=abc PATH=/bin\nPassEnvironment=HOME\n")
    assert text == "Id=a.service\nEnvironment=TOKEN=<redacted> PATH=<redacted>\nPassEnvironment=HOME\n"


def test_a_log_over_the_cap_keeps_its_end_and_records_the_cut():
    kernel = "".join("2026-11-29T%02d:00:00.000000+00:00 h kernel: line %d\n" % (n % 24, n) for n in range(400))
    host = ReplayHost(fixture(**{"journalctl _TRANSPORT=kernel -o short-iso-precise --utc --no-pager " + WINDOW: ok(kernel)}))
    items = items_by_name(collect_evidence(host, max_file_bytes=1000))
    item = items["kernel.log"]
    assert item["size"] == 1000 and item["content"].endswith("line 399\n")
    assert item["cut"]["original_bytes"] == len(kernel) and item["cut"]["kept"] == "the last 1000 bytes"
    assert "per-file limit" in item["cut"]["why"]
    assert items["nvidia-smi-q.xml"]["cut"] is None


def test_the_bundle_budget_cuts_later_items():
    items = collect_evidence(ReplayHost(fixture()), max_total_bytes=80)["evidence"]
    kept = sum(item["size"] for item in items)
    assert kept <= 80
    cut = [item for item in items if item.get("cut")]
    assert cut and "total bytes" in cut[0]["cut"]["why"]


class TimingOutHost(ReplayHost):
    def run(self, argv, timeout):
        if command_key(argv) == "nvidia-smi -q":
            return CommandResult(None, "partial output", "", timed_out=True)
        if command_key(argv) == "nvidia-smi -q -x":
            return CommandResult(9, "", "NVML: Unknown Error")
        return ReplayHost.run(self, argv, timeout)


def test_a_timed_out_command_keeps_its_partial_output_and_a_failed_one_its_reason():
    items = items_by_name(collect_evidence(TimingOutHost(fixture())))
    assert items["nvidia-smi-q.txt"]["status"] == "timed_out"
    assert items["nvidia-smi-q.txt"]["content"] == "partial output"
    assert items["nvidia-smi-q.xml"]["status"] == "failed"
    assert items["nvidia-smi-q.xml"]["why"] == "exit status 9: NVML: Unknown Error"


def test_dcgm_diag_runs_only_when_asked_installed_and_mig_is_off():
    host = fixture(**{"dcgmi diag -r 1": ok("Diagnostic | Result\nDeployment | Pass\n")})
    host["bins"]["dcgmi"] = "/usr/bin/dcgmi"
    items = items_by_name(collect_evidence(ReplayHost(host), dcgm_diag=True))
    assert items["dcgmi-diag.txt"]["status"] == "ok" and "Pass" in items["dcgmi-diag.txt"]["content"]
    host["commands"]["nvidia-smi -q"] = ok("MIG Mode\n        Current                 : Enabled\n")
    items = items_by_name(collect_evidence(ReplayHost(host), dcgm_diag=True))
    assert items["dcgmi-diag.txt"]["status"] == "skipped" and items["dcgmi-diag.txt"]["why"] == "MIG is enabled on a GPU"


def test_kernel_log_falls_back_to_dmesg_when_journalctl_fails():
    host = fixture(**{"journalctl _TRANSPORT=kernel -o short-iso-precise --utc --no-pager " + WINDOW:
                      {"rc": 1, "stdout": "", "stderr": "No journal files were found.", "timed_out": False,
                       "missing": False},
                      "dmesg --time-format=iso": ok("2026-11-29T21:14:07,000000+00:00 NVRM: Xid\n")})
    host["bins"]["dmesg"] = "/usr/bin/dmesg"
    items = items_by_name(collect_evidence(ReplayHost(host)))
    assert items["kernel.log"]["command"] == "dmesg --time-format=iso" and items["kernel.log"]["status"] == "ok"
    assert items["kernel-journalctl-failed.txt"]["why"] == "exit status 1: No journal files were found."


def test_kernel_log_files_are_read_as_the_collector_reads_them():
    host = fixture()
    host["files"]["/var/log/kern.log"] = "Nov 29 21:14:07 h kernel: NVRM: Xid (PCI:0000:ab:00): 79\n"
    items = items_by_name(collect_evidence(ReplayHost(host), kernel_log_source="files",
                                           kernel_log_files=["/var/log/kern.log", "/var/log/gone.log"]))
    assert items["kernel-log-1.txt"]["status"] == "ok"
    assert items["kernel-log-2.txt"]["status"] == "missing"
    assert "kernel.log" not in items


def test_small_helpers():
    assert unit_of_cgroup("12:pids:/system.slice/trainer.service\n0::/system.slice/trainer.service\n") == "trainer.service"
    assert unit_of_cgroup("0::/user.slice/user-1000.slice/session-3.scope\n") is None
    assert unit_of_cgroup(None) is None
    assert cap(b"abcdef", 4, keep_end=False) == (b"abcd", {"original_bytes": 6, "kept_bytes": 4, "kept": "the first 4 bytes"})
    assert mig_enabled("MIG Mode\n    Current      : Enabled\n") and not mig_enabled("MIG Mode\n  Current : N/A\n")
