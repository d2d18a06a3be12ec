"""A host's clock far from the controller's: measured by the gpu_facts action (facts clock_offset_s), reported
beyond thresholds.clock_offset_s ("driver.clock_offset"), and taken into account where the Xid window is counted
from a controller time."""

import calendar
import copy
import json
import time

import pytest
from ansible.module_utils.testing import patch_module_args

from ansible_collections.gpufleet.core.plugins.action.gpu_facts import ActionModule
from ansible_collections.gpufleet.core.plugins.module_utils.bmc_collect import collect_bmc_in_band
from ansible_collections.gpufleet.core.plugins.module_utils.facts_model import new_facts
from ansible_collections.gpufleet.core.plugins.modules import gpu_evidence
from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.host_clock import measured_offset
from tests.support.bmc_samples import answering_host, key
from tests.support.rule_builders import findings_of, healthy_node, only, policy, xid_event
from tests.support.schema_check import assert_valid_facts


def iso(epoch):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))


def epoch(text):
    return calendar.timegm(time.strptime(text, "%Y-%m-%dT%H:%M:%SZ"))


SENT = epoch("2026-11-30T06:00:00Z")


@pytest.mark.parametrize("collected_at, answered, expected", [
    ("2026-11-30T06:00:00Z", SENT + 2.5, 0),       # started while the controller waited: in agreement
    ("2026-11-30T06:00:02Z", SENT + 2.5, 0),
    ("2026-11-30T05:59:59Z", SENT + 0.2, 0),       # cut to the second
    ("2026-11-30T09:00:03Z", SENT + 2.5, 10800),   # 3 h ahead: counted from the answer
    ("2026-11-30T01:00:00Z", SENT + 2.5, -17999),  # 5 h behind: counted from the sending
    ("not a time", SENT + 2.5, None),
    (None, SENT + 2.5, None),
])
def test_measured_offset_never_counts_the_transfer_against_the_host(collected_at, answered, expected):
    assert measured_offset(collected_at, SENT, answered) == expected


class _Task:
    action = "gpufleet.core.gpu_facts"
    async_val = 0
    check_mode = False
    timeout = None

    def __init__(self, args):
        self.args = args


class _Connection:
    class _shell:  # pylint: disable=invalid-name
        tmpdir = None


def _run_action(facts, args=None):
    action = ActionModule(_Task(dict(args or {})), _Connection(), None, None, None)
    action._execute_module = lambda module_args=None, task_vars=None, wrap_async=False: {
        "changed": False, "ansible_facts": {"gpufleet": copy.deepcopy(facts)}}
    action._remove_tmp_path = lambda path: None
    return action.run(task_vars={"inventory_hostname": "gpu-1", "ansible_play_hosts_all": ["gpu-1"]})


def _module_facts(collected_at, source="nvml"):
    facts = new_facts()
    facts.update(source=source, collected_at=collected_at)
    return facts


def test_the_action_reports_a_host_clock_hours_behind():
    facts = _run_action(_module_facts(iso(time.time() - 3 * 3600)))["ansible_facts"]["gpufleet"]
    assert -3 * 3600 - 5 <= facts["clock_offset_s"] <= -3 * 3600 + 5
    assert_valid_facts(facts)


def test_the_action_reports_zero_for_a_clock_in_agreement():
    facts = _run_action(_module_facts(iso(time.time())))["ansible_facts"]["gpufleet"]
    assert facts["clock_offset_s"] == 0


@pytest.mark.parametrize("source, args", [("replay", {}), ("nvml", {"fixture": "/fixtures/gpu-1.json"})])
def test_replayed_facts_have_no_offset(source, args):
    facts = _run_action(_module_facts("2024-01-01T00:00:00Z", source), args)["ansible_facts"]["gpufleet"]
    assert "clock_offset_s" not in facts


def test_an_offset_beyond_the_threshold_is_a_warning_with_the_offset():
    facts = healthy_node()
    facts["clock_offset_s"] = -3 * 3600 - 120
    finding = only(facts, "driver.clock_offset")
    assert finding["severity"] == "warning"
    assert finding["evidence"] == {"clock_offset_s": -10920, "threshold_s": 300,
                                   "collected_at": facts["collected_at"]}
    assert finding["summary"] == "The host's clock is 3 h 2 min behind the controller's (more than 300 s)"


def test_an_offset_within_the_threshold_is_quiet_and_the_threshold_is_the_policys():
    facts = healthy_node()
    facts["clock_offset_s"] = 200
    assert findings_of(facts, "driver.clock_offset") == []
    finding = only(facts, "driver.clock_offset", policy(thresholds={"clock_offset_s": 60}))
    assert finding["summary"] == "The host's clock is 3 min ahead of the controller's (more than 60 s)"


def test_a_host_without_an_nvidia_stack_gets_the_clock_finding_too():
    facts = new_facts()
    facts.update(source="none", collected_at="2026-11-30T06:00:00Z", gather_subset=["driver"], clock_offset_s=7200)
    assert only(facts, "driver.clock_offset")["evidence"]["clock_offset_s"] == 7200


def test_the_xid_window_counted_from_a_controller_time_is_on_the_hosts_clock():
    """The host is 5 h behind: its Xid logged 1 h before the collection reads 6 h old on the controller's clock.
    Counted from the controller's time without the offset, a 3 h window would lose it."""
    facts = healthy_node()
    collected = epoch(facts["collected_at"])
    facts["xid_events"] = [xid_event(48, "0000:3a:00.0", iso(collected - 3600))]
    controller_now = iso(collected + 5 * 3600)
    three_hours = policy(thresholds={"xid_window_hours": 3})
    facts["clock_offset_s"] = -5 * 3600
    assert len(findings_of(facts, "hardware.xid", three_hours, now=controller_now)) == 1
    # and a host 5 h ahead does not gain an Xid that was 4 h old at the collection
    facts["clock_offset_s"] = 5 * 3600
    facts["xid_events"] = [xid_event(48, "0000:3a:00.0", iso(collected - 4 * 3600))]
    assert findings_of(facts, "hardware.xid", three_hours, now=iso(collected - 5 * 3600)) == []


def _node_with_sel(record_time, sel_clock):
    """A healthy node (collected 2026-11-30T06:00:00Z on its clock) whose BMC logged one critical record at
    record_time ('MM/DD/YY | HH:MM:SS') and whose SEL clock reads sel_clock."""
    sel = "   1 | %s GMT | Memory #0x2b | Uncorrectable ECC | Asserted\n" % record_time
    facts = healthy_node()
    facts["bmc"] = collect_bmc_in_band(answering_host({
        key("sel", "elist"): {"rc": 0, "stdout": sel},
        key("sel", "time", "get"): {"rc": 0, "stdout": sel_clock + " GMT\n"}}), new_facts(), 72, 10)
    facts["gather_subset"].append("bmc")
    return facts


def test_the_bmc_event_log_window_is_on_the_bmcs_clock_in_band():
    """The BMC is 10 h behind the host: its record of 19:00 is 1 h old on its clock, 11 h before the host's now."""
    facts = _node_with_sel("11/29/26 | 19:00:00", "11/29/26 20:00:00")
    assert facts["bmc"]["clock_offset_s"] == -36000
    assert len(findings_of(facts, "hardware.bmc_event_log", policy(thresholds={"xid_window_hours": 3}))) == 1


def test_the_bmc_event_log_window_over_lan_counts_the_hosts_own_offset():
    """Over LAN the BMC's offset is against the controller. The host is 10 h behind the controller and the BMC
    agrees with the controller: the BMC is 10 h ahead of the host, and its record of 11:00 (host's 01:00 + 10 h)
    is 5 h old on its clock, outside a 3 h window."""
    facts = _node_with_sel("11/30/26 | 11:00:00", "11/30/26 06:00:00")
    facts["bmc"].update(source="lan", address="10.0.0.7", clock_offset_s=0)
    facts["clock_offset_s"] = -36000
    assert findings_of(facts, "hardware.bmc_event_log", policy(thresholds={"xid_window_hours": 3})) == []
    facts["clock_offset_s"] = 0  # host, BMC and controller agree: the record is 5 h in the future, kept
    assert len(findings_of(facts, "hardware.bmc_event_log", policy(thresholds={"xid_window_hours": 3}))) == 1


@pytest.mark.parametrize("offset", [-36000, 0, 7200])
def test_the_incident_window_is_read_on_the_hosts_clock(capsys, tmp_path, offset):
    """The incident happened 06:00-07:00 (controller's time); a host whose clock is `offset` seconds off stamped
    its logs of that hour offset seconds later: gpu_evidence reads that span."""
    fixture = tmp_path / "host.json"
    fixture.write_text(json.dumps({"host": {"now": epoch("2026-11-30T08:00:00Z"), "bins": {}, "commands": {}}}))
    args = {"since": "2026-11-30T06:00:00Z", "until": "2026-11-30T07:00:00Z", "source": "replay",
            "fixture": str(fixture), "clock_offset_s": offset}
    with patch_module_args(args):
        with pytest.raises(SystemExit):
            gpu_evidence.main()
    result = json.loads(capsys.readouterr().out)
    assert result["window"] == {"since": epoch("2026-11-30T06:00:00Z") + offset,
                                "until": epoch("2026-11-30T07:00:00Z") + offset}
