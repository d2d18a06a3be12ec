"""Every BMC capture of the public corpus (ipmitool and Redfish) read by the real collectors and judged by the real
rules, against the ground truth of realdata/INDEX.md: ipmitool's outputs answered to the in-band collector as a host
would answer them, Redfish documents served to the Redfish reader at the paths a chassis links them from."""

import calendar
import json
import time

import pytest

from ansible_collections.gpufleet.core.plugins.module_utils.bmc_collect import collect_bmc_in_band, new_bmc
from ansible_collections.gpufleet.core.plugins.module_utils.bmc_lan import read_redfish_bmc
from ansible_collections.gpufleet.core.plugins.module_utils.facts_model import new_facts
from ansible_collections.gpufleet.core.plugins.module_utils.host_io import ReplayHost
from ansible_collections.gpufleet.core.plugins.module_utils.redfish_chassis import summarize_redfish
from tests.support.bmc_samples import IPMITOOL, key
from tests.support.rule_builders import findings_of, healthy_node

BMC_RULES = ("hardware.bmc_power_redundancy", "hardware.bmc_fan", "hardware.bmc_inlet_temperature",
             "hardware.bmc_event_log", "hardware.bmc_leak")
# when a capture without records is judged; a capture of the event log is judged within the hour after its last record
DEFAULT_NOW = calendar.timegm((2026, 11, 30, 6, 0, 0))


def epoch(*parts):
    return calendar.timegm(parts + (0,) * (6 - len(parts)))


def iso(seconds):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


def prompted_output(text, command):
    """The output after the "# ipmitool <command>" prompt line of a capture that holds several commands."""
    lines, inside = [], False
    for line in text.splitlines(True):
        if line.startswith("# ipmitool"):
            inside = line[2:].strip() == command
        elif inside:
            lines.append(line)
    return "".join(lines)


def ipmitool_facts(sdr="", sel="", dcmi=None, now=DEFAULT_NOW):
    """A host whose ipmitool answers the capture, through the in-band collector."""
    commands = {key("sdr", "elist"): {"rc": 0, "stdout": sdr}, key("sel", "elist"): {"rc": 0, "stdout": sel},
                key("sel", "time", "get"): {"rc": 1, "stdout": "", "stderr": "not captured"},
                key("dcmi", "power", "reading"): {"rc": 0, "stdout": dcmi} if dcmi else {"rc": 1, "stdout": "", "stderr": "Invalid command"}}
    host = ReplayHost({"now": now, "dirs": {"/dev": ["ipmi0"]}, "bins": {"ipmitool": IPMITOOL}, "files": {},
                       "commands": commands})
    facts = healthy_node()
    facts["bmc"] = collect_bmc_in_band(host, new_facts(), 72, 10)
    facts["gather_subset"].append("bmc")
    return facts


class ServedDocuments:
    """A Redfish service that answers the documents given, by path (RedfishClient's interface)."""

    def __init__(self, documents):
        self.documents = documents

    def get(self, path):
        if path in self.documents:
            return self.documents[path], None
        return None, "HTTP Error 404: Not Found"


CHASSIS = "/redfish/v1/Chassis/1"
SYSTEMS = {"/redfish/v1/Systems": {"Members": [{"@odata.id": "/redfish/v1/Systems/1"}]},
           "/redfish/v1/Systems/1/LogServices": {"Members": [{"@odata.id": "/redfish/v1/Systems/1/LogServices/SEL"}]}}
SEL_ENTRIES = "/redfish/v1/Systems/1/LogServices/SEL/Entries"


def served_at(link, document):
    """{path: document} of a service whose chassis reaches the capture through link, a path of resource names
    below the chassis ("Thermal", "ThermalSubsystem/ThermalMetrics"): each resource on the way links the next."""
    served = {"/redfish/v1/Chassis": {"Members": [{"@odata.id": CHASSIS}]}}
    path = CHASSIS
    for name in link.split("/"):
        served[path] = {name: {"@odata.id": "%s/%s" % (path, name)}}
        path = "%s/%s" % (path, name)
    served[path] = document
    return served


def redfish_facts(corpus, name, link, now=DEFAULT_NOW):
    """The bmc facts the Redfish reader makes of a service that serves the capture where link says; "SEL" serves it
    as the first system's SEL entries (with an empty page after it), "LeakDetectors" as the one member of a
    LeakDetection's LeakDetectors collection."""
    document = json.loads(corpus.read_realdata(name))
    if link == "SEL":
        served = dict(SYSTEMS, **{"/redfish/v1/Chassis": {"Members": [{"@odata.id": CHASSIS}]}, CHASSIS: {},
                                  SEL_ENTRIES: document, document["@odata.nextLink"]: {"Members": []}})
    elif link == "LeakDetectors":
        collection = {"Members": [{"@odata.id": CHASSIS + "/ThermalSubsystem/LeakDetection/LeakDetectors/0"}]}
        served = served_at("ThermalSubsystem/LeakDetection/LeakDetectors", collection)
        served[CHASSIS + "/ThermalSubsystem/LeakDetection/LeakDetectors/0"] = document
    else:
        served = served_at(link, document)
    if link == "PowerSubsystem":  # the supplies it links are not in the capture
        served[document["PowerSupplies"]["@odata.id"]] = {"Members": []}
    facts = healthy_node()
    facts["bmc"] = read_redfish_bmc(ServedDocuments(served), "10.0.0.9", now=now, window_hours=72)
    return facts


def bmc_verdicts(facts, now=DEFAULT_NOW):
    found = findings_of(facts, now=iso(now))
    return {finding["rule"]: finding["severity"] for finding in found if finding["rule"] in BMC_RULES}


# (capture, how it is read, the INDEX's verdict as {rule: severity}); read: sdr / sel / dcmi, or redfish:<link>
IPMITOOL_CASES = [
    ("ipmitool-dcmi-power-reading_telegraf.txt", "dcmi", None, {}),
    ("ipmitool-sdr_planar-sensors_v1-3col_telegraf.txt", "sdr", None, {}),
    ("ipmitool-sdr-elist-full_hp-proliant-dl360-ilo_psu1-failed-ecc-limit_collegeboreal.txt", "sdr", None,
     {"hardware.bmc_power_redundancy": "critical"}),
    ("ipmitool-sdr-elist-all_dell-poweredge-model-unstated_many-disabled-ns-sensors_issue-quote.txt", "sdr", None, {}),
    ("ipmitool-sensor_supermicro-h14shm_fan-thresholds-lower-critical-only_issue-quote.txt", "sdr", None, {}),
    ("ipmitool-sel-list_supermicro-h14shm_psu-presence-failure-ac-lost_issue-quote.txt", "sel",
     epoch(2025, 11, 11, 14), {"hardware.bmc_event_log": "critical"}),
    ("ipmitool-sel-list_critical-interrupt-bus-fatal-deasserted_gcm.txt", "sel", epoch(2023, 1, 18, 15), {}),
    ("ipmitool-sel-list_hp-proliant-dl360-ilo_memory-ecc-limit_collegeboreal.txt", "sel", epoch(2021, 11, 3, 16),
     {"hardware.bmc_event_log": "warning"}),
    ("ipmitool-sel-get-0_hp-proliant-dl360-ilo_memory-ecc-limit_collegeboreal.txt", "sel", epoch(2021, 6, 29, 9),
     {"hardware.bmc_event_log": "warning"}),
    ("ipmitool-sel-elist_qumulo-node_ps-failure-chassis-intrusion_qumulo-snmp-agent.txt", "sel",
     epoch(2018, 2, 1, 23), {"hardware.bmc_event_log": "critical"}),
    ("ipmitool-sel-elist_qumulo-node_ps1-ac-lost-restored_qumulo-snmp-agent.txt", "sel",
     epoch(2018, 3, 1, 20), {"hardware.bmc_event_log": "warning"}),
    ("ipmitool-sel-elist_qumulo-node_ps1-ps2-failure-flapping_qumulo-snmp-agent.txt", "sel",
     epoch(2017, 12, 17, 21), {"hardware.bmc_event_log": "warning"}),
]


@pytest.mark.parametrize("name, read, now, expected", IPMITOOL_CASES, ids=[case[0] for case in IPMITOOL_CASES])
def test_ipmitool_capture_verdict(corpus, name, read, now, expected):
    text = corpus.read_realdata(name)
    now = now or DEFAULT_NOW
    facts = ipmitool_facts(**{read: text, "now": now})
    assert facts["bmc"]["status"] == "complete", facts["bmc"]["errors"]
    assert bmc_verdicts(facts, now) == expected


@pytest.mark.parametrize("command", ["ipmitool sdr", "ipmitool sensor"])
def test_supermicro_x9_fan_header_without_reading(corpus, command):
    text = prompted_output(corpus.read_realdata(
        "ipmitool-sdr-and-sensor_supermicro-x9_fan1-no-reading-ns_cpu-temp-discrete_issue-quote.txt"), command)
    facts = ipmitool_facts(sdr=text)
    assert bmc_verdicts(facts) == {"hardware.bmc_fan": "warning"}
    (finding,) = findings_of(facts, "hardware.bmc_fan", now=iso(DEFAULT_NOW))
    assert [fan["name"] for fan in finding["evidence"]["no_reading"]] == ["FAN 1"]


def test_qumulo_supply_left_failed_is_named(corpus):
    now = epoch(2018, 2, 1, 23)
    facts = ipmitool_facts(sel=corpus.read_realdata(
        "ipmitool-sel-elist_qumulo-node_ps-failure-chassis-intrusion_qumulo-snmp-agent.txt"), now=now)
    (finding,) = findings_of(facts, "hardware.bmc_event_log", now=iso(now))
    assert [(event["id"], event["sensor"]) for event in finding["evidence"]["open_before_window"]] == [
        ("e", "Power Supply PS2 Status")]  # PS2 FAIL, PS1 GOOD, as upstream's test expects
    assert "Power Supply PS2 Status: Failure detected () (2015-03-21T12:42:39Z)" in finding["summary"]


REDFISH_CASES = [
    ("redfish-thermal_expansion-enclosure_fan2-0rpm-critical_fan-redundancy-warning_dmtf-mockup.json", "Thermal",
     None, {"hardware.bmc_fan": "critical"}),
    ("redfish-thermal_catfish-ocp_board-temp-above-noncritical-health-ok_dmtf-mockup.json", "Thermal", None, {}),
    ("redfish-power_tower_psu-bay1-warning_dmtf-mockup.json", "Power", None, {"hardware.bmc_power_redundancy": "warning"}),
    ("redfish-powersubsystem_rackmount-1u_redundancy-unavailableoffline_dmtf-mockup.json", "PowerSubsystem", None,
     {"hardware.bmc_power_redundancy": "warning"}),
    ("redfish-thermalmetrics_rackmount-1u_intake-exhaust-summary_dmtf-mockup.json", "ThermalSubsystem/ThermalMetrics", None, {}),
    ("redfish-environmentmetrics_rackmount-1u_374w-powerlimit-fans_dmtf-mockup.json", "EnvironmentMetrics", None, {}),
    ("redfish-leakdetection_cdu-leak-detector-groups-ok_dmtf-mockup.json", "ThermalSubsystem/LeakDetection", None, {}),
    ("redfish-leakdetector_chassis0-manifold-moisture-leakdetected-critical_lambda.json",
     "LeakDetectors", None, {"hardware.bmc_leak": "critical"}),
    ("redfish-powersupplies-expanded_liteon-powershelf-6psu-all-standby_lambda.json", "PowerSubsystem/PowerSupplies", None, {}),
    ("redfish-powersupplies-expanded_orv3-powershelf-delta-6psu_lambda.json", "PowerSubsystem/PowerSupplies", None, {}),
    ("redfish-chassis-power_dell-idrac9-poweredge_telegraf.json", "Power", None, {}),
    ("redfish-chassis-thermal_dell-idrac9-poweredge_telegraf.json", "Thermal", None, {}),
    ("redfish-chassis-power_hpe-ilo5-proliant-gen10_telegraf.json", "Power", None, {}),
    ("redfish-chassis-thermal_hpe-ilo5-proliant-gen10_telegraf.json", "Thermal", None, {}),
    ("redfish-logentries-sel_catfish-ocp_2x-temperature-upper-critical_dmtf-mockup.json", "SEL",
     epoch(2012, 3, 7, 15), {"hardware.bmc_event_log": "critical"}),
]


@pytest.mark.parametrize("name, link, now, expected", REDFISH_CASES, ids=[case[0] for case in REDFISH_CASES])
def test_redfish_capture_verdict(corpus, name, link, now, expected):
    now = now or DEFAULT_NOW
    facts = redfish_facts(corpus, name, link, now)
    assert facts["bmc"]["status"] == "complete", facts["bmc"]["errors"]
    assert bmc_verdicts(facts, now) == expected


def test_redfish_failed_fan_and_its_degraded_group_in_one_finding(corpus):
    facts = redfish_facts(corpus, "redfish-thermal_expansion-enclosure_fan2-0rpm-critical_fan-redundancy-warning_dmtf-mockup.json", "Thermal")
    (finding,) = findings_of(facts, "hardware.bmc_fan", now=iso(DEFAULT_NOW))
    assert finding["summary"] == "Failed fans: System Fan 2 0 RPM (cr); System Fans: Warning, mode N+m"


def test_hgx_gpu_headroom_sensor_is_healthy_and_no_temperature(corpus):
    facts = healthy_node()
    facts["bmc"] = new_bmc("redfish", "10.0.0.9")
    facts["bmc"].update(summarize_redfish(sensors=[json.loads(corpus.read_realdata(
        "redfish-sensor_hgx-gpu0-temp1-tlimit-headroom_lambda.json"))]))
    assert facts["bmc"]["temperatures"] == [] and facts["bmc"]["inlet_temperature_c"] is None
    assert bmc_verdicts(facts) == {}
