"""Host-controlled text is data: process names, command lines, other senders' log lines and unit names
never make an event, and bytes that are not UTF-8 cost only their own field. Through the real parsers."""

import calendar
import json

from ansible_collections.gpufleet.core.plugins.module_utils import collector
from ansible_collections.gpufleet.core.plugins.module_utils.facts_model import new_facts
from ansible_collections.gpufleet.core.plugins.module_utils.host_io import LiveHost, ReplayHost
from ansible_collections.gpufleet.core.plugins.module_utils.kernel_log import collect_kernel_log, parse_kernel_log
from ansible_collections.gpufleet.core.plugins.module_utils.nvsmi_xml import parse_nvidia_smi_xml
from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.diagnose import diagnose_host
from tests.support.schema_check import assert_valid_facts
from tests.support.nvsmi_samples import SYNTHETIC
from tests.support.rule_builders import KNOWLEDGE, policy

NOW = calendar.timegm((2026, 11, 30, 12, 0, 0, 0, 0, 0))
FAKE_XID = "NVRM: Xid (PCI:0000:01:00): 79, pid=1, name=x, GPU has fallen off the bus."
REAL_XID = "NVRM: Xid (PCI:0000:3b:00): 13, pid=4242, name=python3, Graphics Exception"


def events(text, **options):
    return parse_kernel_log(text, now=NOW, **options)


def test_another_sender_logging_an_xid_to_syslog_is_not_an_event():
    text = "\n".join([
        "Nov 30 10:00:00 gpu-1 evil[4242]: " + FAKE_XID,
        "Nov 30 10:00:01 gpu-1 systemd[1]: Started " + FAKE_XID + ".service",
        "Nov 30 10:00:02 gpu-1 kernel: [ 812.120001] " + REAL_XID,
    ])
    xids, kernel = events(text)
    assert [(event["xid"], event["pci_bus_id"]) for event in xids] == [(13, "0000:3b:00.0")]
    assert kernel == []


def test_kernel_messages_that_quote_user_text_are_not_events():
    text = "\n".join([
        '2026-11-30T10:00:00+0000 gpu-1 kernel: audit: type=1400 apparmor="DENIED" comm="' + FAKE_XID + '"',
        "2026-11-30T10:00:01+0000 gpu-1 kernel: Out of memory: Killed process 77 (" + FAKE_XID + ")",
        "2026-11-30T10:00:02+0000 gpu-1 kernel: python3[77]: segfault at 0 ip 0 in " + FAKE_XID,
        "[ 900.000001] traps: " + FAKE_XID,
        "6,1234,900000001,-;usb 1-1: " + FAKE_XID,
    ])
    assert events(text) == ([], [])


def test_a_process_named_like_an_xid_stays_the_name_of_its_own_event():
    text = "2026-11-30T10:00:00+0000 gpu-1 kernel: NVRM: Xid (PCI:0000:3b:00): 13, pid=4242, " \
           "name=NVRM: Xid (PCI:0000:01:00): 79 GPU has fallen off the bus API mismatch, Graphics Exception\n" \
           "2026-11-30T10:00:01+0000 gpu-1 kernel: NVRM: this kernel module has the version 1.2.3.\n"
    xids, kernel = events(text)
    assert [(event["xid"], event["pci_bus_id"], event["pid"]) for event in xids] == [(13, "0000:3b:00.0", 4242)]
    assert xids[0]["process_name"] == "NVRM: Xid (PCI:0000:01:00): 79 GPU has fallen off the bus API mismatch"
    assert "this kernel module" not in xids[0]["message"]
    assert kernel == []
    facts = new_facts()
    facts.update(collected_at="2026-11-30T12:00:00Z", source="nvml", nvidia_present=True, xid_events=xids,
                 gather_subset=["kernel_log"])
    rules = [f["rule"] for f in diagnose_host("gpu-1", facts, policy(), KNOWLEDGE)]
    assert "hardware.gpu_lost" not in rules and "driver.kernel_userspace_mismatch" not in rules


def test_the_journal_is_read_from_the_kernel_transport_only():
    calls = []

    class Host(ReplayHost):
        def run(self, argv, timeout):
            calls.append(argv)
            return ReplayHost.run(self, argv, timeout)

    collect_kernel_log(Host({"bins": {"journalctl": "/usr/bin/journalctl"}}), new_facts(), source="journalctl")
    assert calls[0][1] == "_TRANSPORT=kernel"


def test_invalid_utf8_and_control_characters_cost_only_their_field(tmp_path):
    """journalctl prints the bytes the kernel logged; a process name may hold any byte."""
    journalctl = tmp_path / "journalctl"
    journalctl.write_bytes(
        b"#!/bin/sh\nprintf '%s'\n" % (
            b"2026-11-30T10:00:00+0000 gpu-1 kernel: NVRM: Xid (PCI:0000:3b:00): 13, pid=4242, "
            b"name=py\\377\\376th\\033[31mon, Graphics Exception\\n"
            b"2026-11-30T10:00:01+0000 gpu-1 kernel: NVRM: Xid (PCI:0000:3b:00): 31, pid=4243, "
            b"name=python3, MMU Fault\\n"))
    journalctl.chmod(0o755)
    host = LiveHost(find_bin={"journalctl": str(journalctl)}.get, now=NOW)
    facts = new_facts()
    facts["collected_at"] = "2026-11-30T12:00:00Z"
    assert collect_kernel_log(host, facts, source="journalctl") == "journalctl"
    assert_valid_facts(facts)
    first, second = facts["xid_events"]
    assert first["process_name"] == u"py\ufffd\ufffdth\\x1b[31mon"
    assert (first["xid"], first["pid"], second["xid"], second["process_name"]) == (13, 4242, 31, "python3")
    json.dumps(facts, ensure_ascii=False).encode("utf-8")


def test_a_hostile_process_name_in_nvidia_smi_xml_costs_only_that_name():
    hostile = "evil</process_name></process_info></processes></gpu><gpu id=\"00000000:01:00.0\">" \
              "<product_name>Fake</product_name>\x01&\x1b"
    gpus = parse_nvidia_smi_xml(SYNTHETIC.replace("<process_name>python3</process_name>",
                                                  "<process_name>%s</process_name>" % hostile))["gpus"]
    assert len(gpus) == 1 and gpus[0]["pci_bus_id"] == "0000:3b:00.0"
    assert gpus[0]["processes"][0]["pid"] == 4242
    assert gpus[0]["processes"][0]["name"].startswith("evil</process_name></process_info>")
    assert gpus[0]["processes"][0]["name"].endswith(u"\ufffd&\ufffd")


def test_invalid_utf8_from_nvidia_smi_costs_only_those_characters(tmp_path):
    xml = SYNTHETIC.replace("<process_name>python3</process_name>", "<process_name>py@@th</process_name>")
    path = tmp_path / "nvidia-smi"
    path.write_bytes(b"#!/bin/sh\ncat <<'EOF'\n" + xml.encode().replace(b"@@", b"\xff\xfe") + b"EOF\n")
    path.chmod(0o755)
    host = LiveHost(find_bin={"nvidia-smi": str(path)}.get)
    facts = collector.Collection(source="nvidia_smi", gather_subset=["driver", "gpus", "processes"],
                                 host=host).run()[0]
    assert_valid_facts(facts)
    assert facts["collection"]["status"] == "complete"
    assert facts["gpus"][0]["processes"][0]["name"] == u"py\ufffd\ufffdth"
    assert facts["driver"]["version"] == "550.54.15"


def test_invalid_utf8_in_a_unit_state_or_a_proc_comm_costs_only_that_value(tmp_path):
    systemctl = tmp_path / "systemctl"
    systemctl.write_bytes(b"#!/bin/sh\nprintf 'Id=nvidia-persistenced.service\\nLoadState=loaded\\n"
                          b"ActiveState=act\\377ive\\nUnitFileState=enabled\\nRestart=always\\n'\n")
    systemctl.chmod(0o755)
    host = LiveHost(find_bin={"systemctl": str(systemctl)}.get)
    facts = collector.Collection(source="nvidia_smi", gather_subset=["host"], host=host).run()[0]
    assert_valid_facts(facts)
    persistenced = facts["host"]["services"]["persistenced"]
    assert persistenced["state"] == "unknown" and persistenced["enabled"] is True
    json.dumps(facts, ensure_ascii=False).encode("utf-8")


def test_control_characters_in_a_failure_reason_are_written_out(tmp_path):
    path = tmp_path / "nvidia-smi"
    path.write_bytes(b"#!/bin/sh\nprintf 'boom\\033[2J\\033]0;owned\\007\\n' >&2\nexit 3\n")
    path.chmod(0o755)
    host = ReplayHost({"files": {"/proc/driver/nvidia/version": "NVRM version: NVIDIA UNIX Kernel Module  550.54.15\n"}})
    live = LiveHost(find_bin={"nvidia-smi": str(path)}.get)
    host.find_bin, host.run = live.find_bin, live.run
    facts = collector.Collection(source="nvidia_smi", gather_subset=["min"], host=host).run()[0]
    assert facts["collection"]["status"] == "failed"
    (reason,) = [reason for reason in facts["collection"]["reasons"] if "boom" in reason]
    assert "\x1b" not in reason and "\x07" not in reason
    assert "boom\\x1b[2J\\x1b]0;owned\\x07" in reason
