"""Xid messages decoded as NVIDIA decodes them (issue 27): NVLink5 Xid 144-150 by their sub-codes, Xid 74 by its
registers, and the driver's recovery action (Xid 154 and the GPU's recovery-action field) as its own finding.

Real lines come from the public corpus (tests marked corpus); the others are the project's own lines in the
format the driver prints (NVIDIA's decode sheet, the Xid 74 format quoted by NVIDIA/NVSentinel)."""

import yaml
import pytest

from ansible_collections.gpufleet.core.plugins.module_utils.kernel_log import parse_kernel_log
from tests.support.corpus import read_realdata, read_reference
from tests.support.rule_builders import findings_of, healthy_node, only, set_model, xid_event

NOW = 1795000000.0
BUS = "0000:18:00.0"  # the first GPU of healthy_node()


def xid_findings(facts):
    return [f for f in findings_of(facts) if f["rule"].endswith(".xid")]


def nvlink5_line(xid, unit, word, intr_info, status, link=3):
    return "%s %s XC0 i0 Link %d (0x%08x 0x%08x 0x00000000 0x00000000 0x00000000 0x00000000)" % (
        unit, word, link, intr_info, status)


def xid74_line(registers, link=6):
    return "NVLink: fatal error detected on link %d(%s)" % (link, ", ".join("0x%x" % value for value in registers))


def node_with(events):
    facts = healthy_node()
    facts["xid_events"] = events
    return facts


def corpus_block(name, header):
    """The lines of one '## <header> ...' block of a realdata file."""
    lines, inside = [], False
    for line in read_realdata(name).splitlines():
        if line.startswith("## "):
            inside = line[3:].startswith(header)
        elif inside:
            lines.append(line)
    return "\n".join(lines)


# ---------------------------------------------------------------- Xid 144-150 (point 1)

@pytest.mark.corpus
def test_real_nvlink5_lines_decode_to_their_resolution():
    """leptonai/gpud#1174's GB200 kmsg lines: Xid 149 NETIR link-fatal needs a GPU reset (critical), while the
    Xid 145 RLW_RXPIPE Nonfatal with status 0x8 is an IGNORE row of NVIDIA's sheet (info, not a warning)."""
    xids = parse_kernel_log(corpus_block("kernel-log_nvrm_lines_part1.txt", "leptonai/gpud#1174"), now=NOW)[0]
    facts = node_with([event for event in xids if event["xid"] in (145, 149)])
    by_bus = {f["gpu"]: f for f in xid_findings(facts)}
    assert by_bus["0019:01:00.0"]["severity"] == "critical"
    assert by_bus["0019:01:00.0"]["evidence"]["decoded"][0]["resolution"] == "RESET_GPU"
    assert by_bus["0019:01:00.0"]["evidence"]["decoded"][0]["detail"]["decoded_unit"] == "NETIR/NETIR_INT"
    assert "GPU reset" in by_bus["0019:01:00.0"]["action"]
    assert by_bus["0000:00:00.0"]["severity"] == "critical"      # NETIR_LINK_EVT Fatal, link-down reason 0x25
    rxpipe = by_bus["0018:01:00.0"]
    assert rxpipe["severity"] == "info"
    assert rxpipe["evidence"]["decoded"] == [{
        "resolution": "IGNORE", "severity": "info", "count": 1,
        "detail": {"unit": "RLW_RXPIPE", "fatal": False, "link": 13, "intr_info": "0x0409a0c2",
                   "error_status": "0x00000008", "decoded_unit": "RLW_RXPIPE", "kind": "nonfatal"}}]


@pytest.mark.parametrize("status, severity, resolution", [
    (0x00000002, "critical", "RESET_GPU"),   # SAW_MVB fatal row
    (0x00000008, "info", "IGNORE"),          # SAW_MVB non-fatal row
])
def test_saw_mvb_status_picks_its_row_v2_intr_info(status, severity, resolution):
    facts = node_with([xid_event(144, BUS, "2026-11-29T10:00:00Z",
                                 message=nvlink5_line(144, "SAW_MVB", "Nonfatal", 0x00000001, status))])
    finding = only(facts, "hardware.xid")
    assert finding["severity"] == severity
    assert finding["evidence"]["decoded"][0]["resolution"] == resolution


def test_a_benign_and_a_fatal_nvlink5_event_on_one_gpu_is_critical():
    facts = node_with([
        xid_event(145, BUS, "2026-11-29T10:00:00Z", message=nvlink5_line(145, "RLW_RXPIPE", "Nonfatal", 0x0409a0c2, 8)),
        xid_event(145, BUS, "2026-11-29T10:05:00Z", message=nvlink5_line(145, "RLW_RSPCOL", "Nonfatal", 0x0409a0a2, 2)),
    ])
    finding = only(facts, "hardware.xid")
    assert finding["severity"] == "critical"
    assert sorted(d["resolution"] for d in finding["evidence"]["decoded"]) == ["IGNORE", "RESET_GPU"]


def test_promoted_rxpipe_error_needs_a_reset():
    """RLW_RXPIPE status 0x1 is non-fatal unless the driver promoted it (the bit above its sub-code set)."""
    def decoded(word, intr_info):
        facts = node_with([xid_event(145, BUS, "2026-11-29T10:00:00Z",
                                     message=nvlink5_line(145, "RLW_RXPIPE", word, intr_info, 1))])
        return only(facts, "hardware.xid")["evidence"]["decoded"]
    plain, promoted = decoded("Nonfatal", 0x0409a0c2), decoded("Fatal", 0x0409a4c2)
    assert [(d["resolution"], d["severity"]) for d in plain] == [("IGNORE", "info")]
    assert [(d["resolution"], d["detail"]["kind"]) for d in promoted] == [("RESET_GPU", "promoted")]


@pytest.mark.corpus
def test_redacted_nvlink5_line_keeps_the_catalog_warning():
    """NVIDIA/nccl#2241: the poster replaced the registers with '...': nothing to decode, the Xid stays a warning."""
    message = "RLW_RXPIPE Nonfatal XC0 i0 Link 11 (...)"
    assert message in read_realdata("kernel-nvswitch-sxid-and-nvlink-xid145-137_issue-quotes.txt")
    finding = only(node_with([xid_event(145, BUS, "2026-11-29T10:00:00Z", message=message)]), "hardware.xid")
    assert finding["severity"] == "warning" and "decoded" not in finding["evidence"]


def test_undecodable_fatal_nvlink5_line_needs_a_reset():
    message = "TLW_CTRL Fatal XC0 i0 Link 2 (0xffffffff 0x00000000 0x0 0x0 0x0 0x0)"
    finding = only(node_with([xid_event(146, BUS, "2026-11-29T10:00:00Z", message=message)]), "hardware.xid")
    assert finding["severity"] == "critical"
    assert finding["evidence"]["decoded"][0]["detail"]["kind"] == "fatal (message)"


# ---------------------------------------------------------------- Xid 74 (point 7)

def test_benign_xid74_registers_are_info_on_hopper():
    """Register 0 bits 0 and 23 are ignorable per NVIDIA's WORKFLOW_NVLINK_ERR decode."""
    facts = node_with([xid_event(74, BUS, "2026-11-29T10:00:00Z", message=xid74_line([0x800001, 0, 0, 0, 0, 0, 0]))])
    finding = only(facts, "hardware.xid")
    assert finding["severity"] == "info"
    assert finding["evidence"]["decoded"][0]["detail"] == {"link": 6, "register": 0, "bits": [0, 23],
                                                           "meaning": "ignorable"}


def test_benign_xid74_does_not_hide_a_fatal_one_on_the_same_gpu():
    facts = node_with([
        xid_event(74, BUS, "2026-11-29T10:00:00Z", message=xid74_line([0x800001, 0, 0, 0, 0, 0, 0])),
        xid_event(74, BUS, "2026-11-29T10:01:00Z", message=xid74_line([0, 0, 0x10000, 0, 0, 0, 0], link=14)),
    ])
    finding = only(facts, "hardware.xid")
    assert finding["severity"] == "critical"
    assert {d["severity"] for d in finding["evidence"]["decoded"]} == {"info", "critical"}


def test_xid74_ecc_parity_bits_need_support_only_when_repeated_on_the_link():
    line = xid74_line([0x10, 0, 0, 0, 0, 0, 0])
    twice = node_with([xid_event(74, BUS, "2026-11-29T10:0%d:00Z" % m, message=line) for m in (1, 2)])
    thrice = node_with([xid_event(74, BUS, "2026-11-29T10:0%d:00Z" % m, message=line) for m in (1, 2, 3)])
    assert only(twice, "hardware.xid")["severity"] == "warning"
    assert only(thrice, "hardware.xid")["severity"] == "critical"


def test_xid74_with_unnamed_bits_or_on_ampere_stays_critical():
    unnamed = node_with([xid_event(74, BUS, "2026-11-29T10:00:00Z", message=xid74_line([0x8, 0, 0, 0, 0, 0, 0]))])
    assert only(unnamed, "hardware.xid")["severity"] == "critical"
    ampere = node_with([xid_event(74, BUS, "2026-11-29T10:00:00Z", message=xid74_line([0x1, 0, 0, 0, 0, 0, 0]))])
    for gpu in ampere["gpus"]:
        set_model(gpu, "NVIDIA A100-SXM4-80GB")
    finding = only(ampere, "hardware.xid")
    assert finding["severity"] == "critical" and "decoded" not in finding["evidence"]


# ---------------------------------------------------------------- recovery action (point 2)

@pytest.mark.corpus
def test_real_xid154_drain_and_reset_is_a_critical_recovery_finding():
    examples = yaml.safe_load(read_reference("xid_catalog.yaml"))["log_format"]["examples"]
    line = next(example["line"] for example in examples if example["xid"] == 154)
    events = parse_kernel_log(line, now=NOW)[0]
    finding = only(node_with(events), "hardware.recovery_action")
    assert finding["gpu"] == "0009:01:00.0" and finding["severity"] == "critical"
    assert finding["evidence"]["recovery_action"] == "drain_and_reset"
    assert finding["evidence"]["source"] == "Xid 154"
    assert finding["action"].startswith("Drain the GPU")


@pytest.mark.parametrize("value, words, name, severity", [
    (2, "Node Reboot Required", "node_reboot", "critical"),
    (1, "GPU Reset Required", "gpu_reset", "critical"),
    (3, "Drain P2P", "drain_p2p", "warning"),
])
def test_xid154_names_the_action_and_its_severity(value, words, name, severity):
    message = "GPU recovery action changed from 0x0 (None) to 0x%x (%s)" % (value, words)
    facts = node_with([xid_event(48, BUS, "2026-11-29T10:00:00Z", message="An uncorrectable double bit error"),
                       xid_event(154, BUS, "2026-11-29T10:00:01Z", message=message)])
    finding = only(facts, "hardware.recovery_action")
    assert (finding["evidence"]["recovery_action"], finding["severity"]) == (name, severity)
    assert finding["gpu"] == BUS


def test_xid154_back_to_none_is_no_finding():
    message = "GPU recovery action changed from 0x1 (GPU Reset Required) to 0x0 (None)"
    assert findings_of(node_with([xid_event(154, BUS, "2026-11-29T10:00:01Z", message=message)]),
                       "hardware.recovery_action") == []


def test_the_persistent_field_is_read_without_any_xid():
    """NVIDIA/DCGM#263: nvidia-smi showed 'Reset' for GPU 1 while DCGM health said Healthy."""
    facts = healthy_node()
    facts["gpus"][1]["recovery_action"] = "gpu_reset"
    finding = only(facts, "hardware.recovery_action")
    assert finding["gpu"] == facts["gpus"][1]["pci_bus_id"] and finding["severity"] == "critical"
    assert finding["evidence"]["source"] == "gpu_recovery_action field"
    assert "reset" in finding["action"]


def test_the_field_says_what_is_true_now_over_an_older_xid154():
    facts = node_with([xid_event(154, BUS, "2026-11-29T10:00:01Z",
                                 message="GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot Required)")])
    facts["gpus"][0]["recovery_action"] = "none"
    assert findings_of(facts, "hardware.recovery_action") == []
    facts["gpus"][0]["recovery_action"] = "drain_and_reset"
    finding = only(facts, "hardware.recovery_action")
    assert finding["evidence"]["recovery_action"] == "drain_and_reset"
    assert finding["evidence"]["xid154_message"].endswith("(Node Reboot Required)")


def test_an_unknown_recovery_action_is_named_in_a_warning():
    facts = healthy_node()
    facts["gpus"][2]["recovery_action"] = "nvml_9"
    finding = only(facts, "hardware.recovery_action")
    assert finding["severity"] == "warning" and "'nvml_9'" in finding["summary"]


# ---------------------------------------------------------------- catalog entries (points 3 and 4)

def test_xid_151_needs_the_vm_restarted_and_is_critical():
    finding = only(node_with([xid_event(151, BUS, "2026-11-29T10:00:00Z", message="Key rotation error")]),
                   "driver.xid")
    assert finding["severity"] == "critical" and "Restart the VM" in finding["action"]


def test_xid_173_is_in_the_catalog_not_an_unknown_xid():
    finding = only(node_with([xid_event(173, BUS, "2026-11-29T10:00:00Z", message="x")]), "hardware.xid")
    assert finding["evidence"]["name"] == "Xid 173 (not in the researched catalog)"
    assert "NVIDIA's current Xid catalog" in finding["action"]


# ---------------------------------------------------------------- the decode tables

def test_a_decode_table_naming_an_unknown_resolution_is_refused_with_its_place():
    import copy
    from ansible_collections.gpufleet.core.plugins.plugin_utils.rules import xid_decode
    broken = copy.deepcopy(xid_decode.tables())
    broken["nvlink5"]["rules"][3]["resolution"] = "REBOOT_THE_MOON"
    with pytest.raises(ValueError, match=r"xid_decode.nvlink5.rules\[3\]: resolution 'REBOOT_THE_MOON'"):
        xid_decode.check_tables(broken)


def test_a_policy_severity_for_a_decoded_xid_stands_over_the_decode():
    from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.diagnose import diagnose_host
    from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.knowledge import load_knowledge
    from tests.support.rule_builders import policy
    facts = node_with([xid_event(144, BUS, "2026-11-29T10:00:00Z",
                                 message=nvlink5_line(144, "SAW_MVB", "Nonfatal", 0x00000001, 2))])

    def xid_finding(catalog):
        the_policy = policy(catalogs={"xid": {144: catalog}})
        found = diagnose_host("n", facts, the_policy, load_knowledge(the_policy["catalogs"]))
        return [f for f in found if f["rule"] == "hardware.xid"][0]
    quiet = xid_finding({"severity": "info", "action": "Site rule: ignore"})
    assert (quiet["severity"], quiet["action"]) == ("info", "Site rule: ignore")
    assert xid_finding({"description": "site words"})["severity"] == "critical"


def test_a_fatal_nvlink5_line_with_unreadable_registers_still_needs_a_reset():
    message = "NETIR Fatal XC0 i0 Link -1 (...)"
    finding = only(node_with([xid_event(149, BUS, "2026-11-29T10:00:00Z", message=message)]), "hardware.xid")
    assert finding["severity"] == "critical"
    assert finding["evidence"]["decoded"][0]["detail"] == {"unit": "NETIR", "fatal": True, "kind": "fatal (message)"}
