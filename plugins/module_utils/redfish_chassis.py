# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A chassis's Redfish Power and Thermal documents (/redfish/v1/Chassis/<id>/Power and /Thermal, DMTF schemas
Power.v1_x and Thermal.v1_x) in the shape of the `bmc` facts that ipmitool's sensors give: fans, power supplies,
redundancy groups, temperatures, inlet and exhaust temperature, power draw. Status.Health is the BMC's verdict
(OK, Warning, Critical); Status.State says whether a part is there (Absent) and in use."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re

from ansible_collections.gpufleet.core.plugins.module_utils.ipmi_sensors import MAX_SENSORS, clean_field

_HEALTH_STATUS = {"ok": "ok", "warning": "nc", "critical": "cr"}
_INLET = re.compile(r"inlet|ambient|intake", re.IGNORECASE)
_EXHAUST = re.compile(r"exhaust|outlet", re.IGNORECASE)
_INLET_CONTEXTS = ("Intake", "Room")
_EXHAUST_CONTEXTS = ("Exhaust",)


def _status(item):
    status = item.get("Status") if isinstance(item, dict) else None
    return status if isinstance(status, dict) else {}


def _health(item):
    return str(_status(item).get("Health") or "").lower() or None


def _absent(item):
    return str(_status(item).get("State") or "") == "Absent"


def _number(value):
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def _name(item, *keys):
    for key in keys + ("Name", "MemberId"):
        if isinstance(item, dict) and item.get(key):
            return clean_field(str(item[key]))
    return "unnamed"


def _items(document, key):
    values = (document or {}).get(key) if isinstance(document, dict) else None
    return [item for item in values or () if isinstance(item, dict)]


def fan_records(thermal):
    fans = []
    for item in _items(thermal, "Fans"):
        if _absent(item):
            continue
        reading, units = _number(item.get("Reading")), str(item.get("ReadingUnits") or "RPM")
        lower_critical = _number(item.get("LowerThresholdCritical"))
        lower_warning = _number(item.get("LowerThresholdNonCritical"))
        health = _health(item)
        fans.append({
            "name": _name(item, "FanName"),
            "rpm": reading if units.upper() == "RPM" else None,
            "percent": reading if units.lower() == "percent" else None,
            "status": _HEALTH_STATUS.get(health),
            "failed": health == "critical" or (reading is not None and lower_critical is not None and reading <= lower_critical),
            "slow": health == "warning" or (reading is not None and lower_warning is not None and reading <= lower_warning),
        })
    return fans


def _distinct_names(records, items):
    """Supplies and fans often share one Name ("HpeServerPowerSupply"): add the MemberId or Id to tell them apart."""
    counts = {}
    for record in records:
        counts[record["name"]] = counts.get(record["name"], 0) + 1
    for position, (record, item) in enumerate(zip(records, items)):
        if counts[record["name"]] > 1:
            record["name"] = "%s (%s)" % (record["name"], clean_field(str(item.get("MemberId") or item.get("Id") or position)))
    return records


def power_supply_records(power, key="PowerSupplies"):
    """Supplies of a Power document (PowerSupplies) or of an expanded PowerSupplyCollection (key Members)."""
    items = _items(power, key)
    supplies = []
    for item in items:
        health, absent = _health(item), _absent(item)
        supplies.append({
            "name": _name(item),
            "watts": _number(item.get("LastPowerOutputWatts")),
            "present": not absent,
            "failed": health == "critical",
            "predictive_failure": health == "warning",
            "ac_lost": str(_status(item).get("State") or "") == "UnavailableOffline",
            "states": [text for text in (str(_status(item).get("State") or ""), _status(item).get("Health")) if text],
        })
    return _distinct_names(supplies, items)


def redundancy_records(*documents):
    groups = []
    for document, group in documents:
        for item in _items(document, "Redundancy"):
            health = _health(item)
            state = {"ok": "redundant", "warning": "degraded", "critical": "lost"}.get(health)
            if state is None:
                continue
            mode = item.get("Mode")
            groups.append({"name": _name(item), "group": group, "state": state,
                           "text": clean_field("%s, mode %s" % (_status(item).get("Health"), mode or "unknown"))})
    return groups


def temperature_records(thermal):
    return [{"name": _name(item), "celsius": _number(item.get("ReadingCelsius")),
             "status": _HEALTH_STATUS.get(_health(item)), "context": item.get("PhysicalContext")}
            for item in _items(thermal, "Temperatures") if not _absent(item)]


def _first(temperatures, contexts, pattern):
    for item in temperatures:
        if item["celsius"] is not None and (item["context"] in contexts or pattern.search(item["name"])):
            return item["celsius"]
    return None


def power_draw(power):
    for item in _items(power, "PowerControl"):
        watts = _number(item.get("PowerConsumedWatts"))
        if watts is not None:
            return watts
    return None


def summarize_redfish(power=None, thermal=None, power_supplies=None):
    """The sensor part of the bmc facts from a chassis's Power and Thermal documents (either may be None), or
    from an expanded PowerSupplyCollection of the newer PowerSubsystem model (power_supplies)."""
    temperatures = temperature_records(thermal)
    fans = fan_records(thermal)
    supplies = power_supply_records(power) + power_supply_records(power_supplies, "Members")
    watts = power_draw(power)
    sensors = ([{"name": fan["name"], "kind": "fan", "status": fan["status"], "reading": fan["rpm"] or fan["percent"],
                 "unit": "RPM" if fan["rpm"] is not None else ("percent" if fan["percent"] is not None else None),
                 "states": []} for fan in fans]
               + [{"name": item["name"], "kind": "temperature", "status": item["status"], "reading": item["celsius"],
                   "unit": "degrees C", "states": []} for item in temperatures]
               + [{"name": psu["name"], "kind": "power_supply", "status": None, "reading": psu["watts"],
                   "unit": "Watts" if psu["watts"] is not None else None, "states": psu["states"]} for psu in supplies])
    return {
        "sensors": sensors[:MAX_SENSORS], "sensors_left_out": max(0, len(sensors) - MAX_SENSORS),
        "fans": fans, "power_supplies": supplies,
        "redundancy": redundancy_records((power, "power_supply"), (thermal, "fan")),
        "temperatures": [{key: item[key] for key in ("name", "celsius", "status")} for item in temperatures],
        "inlet_temperature_c": _first(temperatures, _INLET_CONTEXTS, _INLET),
        "exhaust_temperature_c": _first(temperatures, _EXHAUST_CONTEXTS, _EXHAUST),
        "power_draw_w": watts,
        "power_draw_source": "redfish" if watts is not None else None,
    }
