"""Redfish Power and Thermal documents in the shape of the bmc facts: the project's own documents in the DMTF
schemas, and the corpus's Dell iDRAC 9, HPE iLO 5 and ORv3 power-shelf documents read in place."""

import json

from ansible_collections.gpufleet.core.plugins.module_utils.redfish_chassis import summarize_redfish
from tests.support.redfish_samples import POWER, THERMAL


def test_own_documents_give_the_faults():
    bmc = summarize_redfish(POWER, THERMAL)
    fans = {fan["name"]: fan for fan in bmc["fans"]}
    assert sorted(fans) == ["Fan 1", "Fan 3", "Fan 4"]
    assert (fans["Fan 1"]["failed"], fans["Fan 1"]["slow"]) == (False, False)
    assert fans["Fan 3"]["failed"] is True and fans["Fan 3"]["rpm"] == 900.0
    assert (fans["Fan 4"]["slow"], fans["Fan 4"]["percent"], fans["Fan 4"]["status"]) == (True, 41.0, "nc")
    supplies = {psu["name"]: psu for psu in bmc["power_supplies"]}
    assert sorted(supplies) == ["PSU (0)", "PSU (1)", "PSU (2)"]
    assert supplies["PSU (1)"]["failed"] is True and supplies["PSU (2)"]["present"] is False
    assert bmc["redundancy"] == [{"name": "PSU Redundancy", "group": "power_supply", "state": "lost",
                                  "text": "Critical, mode N+m"}]
    assert (bmc["inlet_temperature_c"], bmc["exhaust_temperature_c"]) == (37.0, 58.0)
    assert (bmc["power_draw_w"], bmc["power_draw_source"]) == (6120.0, "redfish")
    assert len(bmc["sensors"]) == 9


def test_garbage_documents_give_nothing():
    bmc = summarize_redfish({"PowerSupplies": "nope", "PowerControl": [{"PowerConsumedWatts": True}]}, ["x"])
    assert (bmc["fans"], bmc["power_supplies"], bmc["power_draw_w"], bmc["inlet_temperature_c"]) == ([], [], None, None)


def load(corpus, name):
    return json.loads(corpus.read_realdata(name))


def test_corpus_dell_idrac9(corpus):
    bmc = summarize_redfish(load(corpus, "redfish-chassis-power_dell-idrac9-poweredge_telegraf.json"),
                            load(corpus, "redfish-chassis-thermal_dell-idrac9-poweredge_telegraf.json"))
    assert bmc["power_draw_w"] == 429.0
    assert [(psu["name"], psu["failed"], psu["watts"]) for psu in bmc["power_supplies"]] == [("PS1 Status", False, None)]
    assert len(bmc["fans"]) == 16 and not any(fan["failed"] or fan["slow"] for fan in bmc["fans"])
    assert bmc["fans"][0] == {"name": "System Board Fan1A", "rpm": 17760.0, "percent": None, "status": "ok",
                              "failed": False, "slow": False, "no_reading": False}
    assert bmc["redundancy"] == [{"name": "System Board Fan Redundancy", "group": "fan", "state": "redundant",
                                  "text": "OK, mode N+m"}]
    assert bmc["inlet_temperature_c"] is None  # the trimmed document keeps only CPU1 Temp
    assert bmc["temperatures"] == [{"name": "CPU1 Temp", "celsius": 40.0, "status": "ok"}]


def test_corpus_hpe_ilo5(corpus):
    bmc = summarize_redfish(load(corpus, "redfish-chassis-power_hpe-ilo5-proliant-gen10_telegraf.json"),
                            load(corpus, "redfish-chassis-thermal_hpe-ilo5-proliant-gen10_telegraf.json"))
    assert bmc["power_draw_w"] == 221.0
    assert [(psu["name"], psu["watts"], psu["failed"]) for psu in bmc["power_supplies"]] == [
        ("HpeServerPowerSupply (0)", 0.0, False), ("HpeServerPowerSupply (1)", 90.0, False)]
    assert bmc["redundancy"][0]["group"] == "power_supply" and bmc["redundancy"][0]["state"] == "redundant"
    assert [fan["percent"] for fan in bmc["fans"]] == [23.0, 23.0, 23.0]
    assert bmc["inlet_temperature_c"] == 19.0  # 01-Inlet Ambient, PhysicalContext Intake


def test_corpus_orv3_power_shelf_supplies(corpus):
    bmc = summarize_redfish(power_supplies=load(corpus, "redfish-powersupplies-expanded_orv3-powershelf-delta-6psu_lambda.json"))
    assert [psu["name"] for psu in bmc["power_supplies"]] == ["PowerSupplyUnit %d" % number for number in range(1, 7)]
    assert not any(psu["failed"] or not psu["present"] for psu in bmc["power_supplies"])
