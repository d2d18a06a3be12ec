"""hardware.sxid: NVSwitch errors classified by the SXid catalog and the fatality of their line, joined to the NVLink
Xids of the same host and time and to the GPUs whose NVLinks are down."""

import pytest

from ansible_collections.gpufleet.core.plugins.module_utils.kernel_log import read_kernel_events
from ansible_collections.gpufleet.core.plugins.plugin_utils.rules import sxid_catalog
from ansible_collections.gpufleet.core.plugins.plugin_utils.audit.host_summary import summary_line
from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.fabric import SXID_JOIN_SECONDS
from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.sxid_catalog import load_catalog, sxid_info
from tests.support.kernel_log_builders import NOW, utc_zone  # noqa: F401  pylint: disable=unused-import
from tests.support.rule_builders import findings_of, healthy_node, only, policy

RULE = "hardware.sxid"
# the facts are collected at 06:00 (rule_builders.COLLECTED_AT); the window is the default 72 h
LOG = "".join(line + "\n" for line in [
    "2026-11-30T05:00:00+0000 hgx-01 kernel: nvidia-nvswitch2: "
    "SXid (PCI:0000:15:00.0): 20034, Fatal, Link 30 LTSSM Fault Up",
    "2026-11-30T05:00:00+0000 hgx-01 kernel: nvidia-nvswitch2: "
    "SXid (PCI:0000:15:00.0): 20034, Severity 5 Engine instance 30 Sub-engine instance 00",
    "2026-11-30T05:00:00+0000 hgx-01 kernel: nvidia-nvswitch2: "
    "SXid (PCI:0000:15:00.0): 20034, Data {0x50610002, 0x10100030}",
    "2026-11-30T05:00:02+0000 hgx-01 kernel: "
    "NVRM: Xid (PCI:0000:3a:00): 74, pid='<unknown>', name=<unknown>, NVLink: fatal error detected on link 3(0x0, 0x0, 0x10000, 0x0, 0x0, 0x0, 0x0)",
    "2026-11-30T03:00:00+0000 hgx-01 kernel: "
    "NVRM: Xid (PCI:0000:18:00): 74, pid='<unknown>', name=<unknown>, NVLink: fatal error detected on link 1(0x0, 0x0, 0x10000, 0x0, 0x0, 0x0, 0x0)",
    "2026-11-30T05:10:00+0000 hgx-01 kernel: nvidia-nvswitch3: "
    "SXid (PCI:0000:04:00.0): 22013, Non-fatal, Link 44 Minion Link DLREQ interrupt",
])


def node_with_log(text=LOG):
    facts = healthy_node()
    xids, kernel, sxids = read_kernel_events(text, now=NOW)
    facts["xid_events"], facts["kernel_events"], facts["sxid_events"] = xids, kernel, sxids
    return facts


def by_sxid(facts):
    return {finding["evidence"]["sxid"]: finding for finding in findings_of(facts, RULE)}


def test_a_fatal_sxid_is_critical_and_names_the_nvlink_xid_of_the_same_time():
    facts = node_with_log()
    facts["gpus"][2]["nvlinks"][3]["active"] = False
    fatal = by_sxid(facts)[20034]
    assert fatal["severity"] == "critical" and fatal["layer"] == "hardware" and fatal["gpu"] is None
    evidence = fatal["evidence"]
    assert (evidence["name"], evidence["class"], evidence["fatal_in_log"]) == ("LTSSM fault up", "fatal", True)
    assert (evidence["switch"], evidence["switch_pci_bus_id"], evidence["links"]) == (
        "nvidia-nvswitch2", "0000:15:00.0", [30])
    assert evidence["count"] == 1 and evidence["data"] == "{0x50610002, 0x10100030}"
    # the Xid 74 two seconds later joins; the one two hours earlier does not
    assert evidence["nvlink_xids"] == [{"gpu": "0000:3a:00.0", "xid": 74, "name": "NVLINK Error", "count": 1,
                                        "first_time": "2026-11-30T05:00:02Z"}]
    assert evidence["join_seconds"] == SXID_JOIN_SECONDS
    assert evidence["gpus_with_inactive_nvlinks"] == [{"gpu": "0000:3a:00.0", "links": [3]}]
    assert "SXid 20034 (LTSSM fault up, Fatal in the log) x1 on NVSwitch nvidia-nvswitch2 (0000:15:00.0), link 30" \
        in fatal["summary"]
    assert "with Xid 74 x1 on 0000:3a:00.0 within %d s" % SXID_JOIN_SECONDS in fatal["summary"]
    assert fatal["action"] == load_catalog()["classes"]["fatal"]["action"]


def test_the_sxid_nvidia_says_to_ignore_is_info_with_no_joined_xid():
    ignored = by_sxid(node_with_log())[22013]
    assert ignored["severity"] == "info"
    assert ignored["evidence"]["fatal_in_log"] is False and ignored["evidence"]["nvlink_xids"] == []


def test_sxids_outside_the_window_are_not_reported():
    older = LOG.splitlines()[0].replace("2026-11-30T05:00:00", "2026-11-30T04:30:00") + "\n"
    found = findings_of(node_with_log(older + LOG.splitlines()[-1] + "\n"), RULE, policy(thresholds={"xid_window_hours": 1}))
    assert [finding["evidence"]["sxid"] for finding in found] == [22013]


def test_a_node_without_sxids_has_no_finding():
    assert findings_of(healthy_node(), RULE) == []


@pytest.mark.parametrize("number, fatal, severity", [
    (12028, None, "warning"),    # non-fatal table, no fatality on the line (the real gpud#338 line)
    (12028, True, "critical"),   # the line says Fatal: the line wins
    (20034, False, "warning"),   # "potentially fatal" table, the line says Non-fatal
    (23001, False, "critical"),  # always fatal stays critical
    (11012, None, "info"),       # single-bit ECC corrected by the switch
    (99999, True, "critical"),   # unknown SXid: the line's fatality
    (99999, None, "warning"),
])
def test_severity_of_an_sxid_from_its_class_and_its_line(number, fatal, severity):
    assert sxid_info(number, fatal)["severity"] == severity


def test_a_line_that_lowers_a_fatal_sxid_gets_the_non_fatal_action():
    classes = load_catalog()["classes"]
    assert sxid_info(20034, False)["action"] == classes["non_fatal"]["action"]
    assert sxid_info(12028, True)["action"] == classes["fatal"]["action"]
    assert "99999" in sxid_info(99999, None)["action"]


def test_counts_include_the_events_the_collector_only_counted():
    facts = node_with_log(LOG.splitlines()[-1] + "\n")
    facts["kernel_log"] = {"source": "journalctl", "events": 25, "kept": 1, "dropped": 24, "ungrouped": 0, "groups": [{
        "kind": "sxid", "xid": None, "sxid": 22013, "pci_bus_id": "0000:04:00.0", "count": 25, "kept": 1,
        "first_time": "2026-11-30T04:00:00Z", "last_time": "2026-11-30T05:10:00Z",
        "dropped": {"count": 24, "untimed": 0, "by_hour": {"2026-11-30T04": 24}, "older": 0,
                    "older_until_hour": None}}]}
    assert only(facts, RULE)["evidence"]["count"] == 25


def test_the_catalog_names_its_source_and_every_class_it_uses(tmp_path):
    catalog = load_catalog()
    assert "DU-09883-001_v1.3" in catalog["sources"]["fabric_manager_guide"]
    assert {entry["class"] for entry in catalog["sxids"].values()} == set(catalog["classes"])
    assert catalog["gpu_xids"] == frozenset([74, 144, 145, 146, 147, 148, 149, 150])
    bad = tmp_path / "sxid.yml"
    bad.write_text("sources: {}\ngpu_xids: []\nclasses: {fatal: {table: t, severity: high, action: a}}\nsxids: {}\n")
    with pytest.raises(ValueError, match="classes.fatal.severity: must be one of critical, warning, info, got 'high'"):
        sxid_catalog.load_catalog(str(bad))


@pytest.mark.corpus
def test_the_real_sxid_12028_line_is_a_non_fatal_warning(corpus):
    """leptonai/gpud#338: the Data line of SXid 12028 (the line names no fatality): the non-fatal table decides."""
    text = corpus.read_realdata("kernel-nvswitch-sxid-and-nvlink-xid145-137_issue-quotes.txt")
    quoted = "".join(line[len("line "):] + "\n" for line in text.splitlines() if line.startswith("line kern"))
    finding = only(node_with_log(quoted), RULE, now="2025-01-26T00:00:00Z")
    assert finding["severity"] == "warning"
    evidence = finding["evidence"]
    assert (evidence["sxid"], evidence["name"], evidence["class"], evidence["fatal_in_log"]) == (
        12028, "Egress non-posted PRIV error", "non_fatal", None)
    assert (evidence["switch"], evidence["switch_pci_bus_id"], evidence["count"]) == (
        "nvidia-nvswitch1", "0000:84:00.0", 1)
    assert evidence["data"].startswith("{0x000001c0, 0x00bd5c8a")


def test_the_host_line_of_the_summary_names_the_sxids():
    line = summary_line("hgx-01", {"ansible_facts": {"gpufleet": node_with_log()}})
    assert line.endswith(" xid=74 sxid=20034,22013")
