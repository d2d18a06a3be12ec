# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A chassis's Redfish documents in the shape of the `bmc` facts that ipmitool's sensors give: fans, power supplies,
redundancy groups, temperatures, inlet and exhaust temperature, power draw, leak detectors, and the event log.

Both models of the DMTF schemas are read: the legacy Power and Thermal resources (Power.v1_x, Thermal.v1_x), and
the newer PowerSubsystem (its PowerSupplyRedundancy and its PowerSupplies collection), ThermalSubsystem
(ThermalMetrics, LeakDetection and its LeakDetectors), EnvironmentMetrics and Sensors; the SEL as a
LogEntryCollection. Pure functions of the parsed JSON, whoever fetched it.

Status semantics as the schema defines them (Resource.Status): Health is the BMC's verdict (OK, Warning, Critical);
the only thresholds compared here are a fan's lower ones (a fan at or below its lower critical reading has
failed whatever its Health), never a temperature's (a board over its non-critical threshold with Health OK is
healthy) nor a fan's upper ones (some BMCs give nonsense there); State says whether a part is there (Absent: not
fitted, no failure), in use (Enabled), held in reserve (StandbyOffline, StandbySpare, Standby) or present but not in
service (Disabled, UnavailableOffline). A failed fan may still be "Enabled": its Health says it failed."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import calendar
import re
import time

from ansible_collections.gpufleet.core.plugins.module_utils.ipmi_sensors import MAX_SENSORS, clean_field

_HEALTH_STATUS = {"ok": "ok", "warning": "nc", "critical": "cr"}
_INLET = re.compile(r"inlet|ambient|intake", re.IGNORECASE)
_EXHAUST = re.compile(r"exhaust|outlet", re.IGNORECASE)
_INLET_CONTEXTS = ("Intake", "Room")
_EXHAUST_CONTEXTS = ("Exhaust",)
# States of a part that is present but gives no service
OUT_OF_SERVICE_STATES = ("Disabled", "UnavailableOffline")
# States of a redundancy group that no longer protects anything
OFFLINE_REDUNDANCY_STATES = ("UnavailableOffline", "StandbyOffline", "Offline")
# A leak detector's DetectorState that says liquid is there (the schema's Critical; some BMCs say LeakDetected)
LEAK_STATES = ("critical", "leakdetected")
# Sensor readings that are not a temperature, though in Cel: the distance to a limit, a difference
NOT_ABSOLUTE_BASES = ("Headroom", "Delta")
# LogEntry pages followed through @odata.nextLink
MAX_LOG_PAGES = 20


def _status(item):
    status = item.get("Status") if isinstance(item, dict) else None
    return status if isinstance(status, dict) else {}


def _health(item):
    return str(_status(item).get("Health") or "").lower() or None


def _state(item):
    return str(_status(item).get("State") or "")


def _absent(item):
    return _state(item) == "Absent"


def _number(value):
    """A number, also one a BMC wrote as a string ("5500"); None for anything else."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value.strip())
        except ValueError:
            return None
    return None


def _name(item, *keys):
    for key in keys + ("Name", "MemberId", "Id"):
        if isinstance(item, dict) and item.get(key):
            return clean_field(str(item[key]))
    return "unnamed"


def _items(document, key):
    values = (document or {}).get(key) if isinstance(document, dict) else None
    return [item for item in values or () if isinstance(item, dict)] if isinstance(values, list) else []


def _documents(documents):
    """The dicts of a list of documents (or of one document)."""
    if isinstance(documents, dict):
        return [documents]
    return [document for document in documents or () if isinstance(document, dict)]


def _reading(value):
    """The Reading of a SensorExcerpt ({"Reading": 24.8, "DataSourceUri": ...}), or None."""
    return _number(value.get("Reading")) if isinstance(value, dict) else None


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
            "no_reading": reading is None and _state(item) not in OUT_OF_SERVICE_STATES,
        })
    return fans


def environment_fan_records(environment):
    """Fans of an EnvironmentMetrics' FanSpeedsPercent (percent, with SpeedRPM where given); no verdict of their
    own (the excerpt carries no Status)."""
    fans = []
    for item in _items(environment, "FanSpeedsPercent"):
        percent, rpm = _number(item.get("Reading")), _number(item.get("SpeedRPM"))
        fans.append({"name": _name(item, "DeviceName"), "rpm": rpm, "percent": percent, "status": None,
                     "failed": False, "slow": False, "no_reading": percent is None and rpm is None})
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


def power_supply_record(item):
    """One PowerSupply (a legacy Power.PowerSupplies entry or a PowerSupply.v1_x resource)."""
    health, state = _health(item), _state(item)
    watts = _number(item.get("LastPowerOutputWatts"))
    if watts is None:
        watts = _reading(item.get("PowerOutputWatts"))
    return {
        "name": _name(item),
        "watts": watts,
        "present": not _absent(item),
        "failed": health == "critical",
        "predictive_failure": health == "warning",
        "ac_lost": False,
        "offline": state in OUT_OF_SERVICE_STATES,
        "states": [text for text in (state, _status(item).get("Health")) if text],
    }


def power_supply_records(power, key="PowerSupplies"):
    """Supplies of a Power document (PowerSupplies) or of an expanded PowerSupplyCollection (key Members)."""
    items = _items(power, key)
    return _distinct_names([power_supply_record(item) for item in items], items)


def redundancy_state(item):
    """redundant, degraded, lost, non_redundant, or None (the group is absent or says nothing). A group offline
    protects nothing whatever its Health; one with fewer active members than fault tolerance needs is not
    redundant even when its Health says OK."""
    state, health = _state(item), _health(item)
    if state == "Absent":
        return None
    if state in OFFLINE_REDUNDANCY_STATES:
        return "lost"
    if health == "critical":
        return "lost"
    if health == "warning":
        return "degraded"
    if state == "Disabled":
        return "non_redundant"
    active, needed = item.get("ActiveRedundancyGroup"), _number(item.get("MinNeededForFaultTolerance"))
    if isinstance(active, list) and needed is not None and len(active) < needed:
        return "non_redundant"
    return "redundant" if health == "ok" else None


def _redundancy_text(item):
    mode = item.get("Mode") or item.get("RedundancyType")
    state = _state(item)
    words = [str(word) for word in (_status(item).get("Health"), state if state != "Enabled" else None) if word]
    active, needed = item.get("ActiveRedundancyGroup"), item.get("MinNeededForFaultTolerance")
    if isinstance(active, list) and needed is not None:
        words.append("%d active of %s needed for fault tolerance" % (len(active), needed))
    return clean_field("%s, mode %s" % (", ".join(words) or "no status", mode or "unknown"))


def redundancy_records(*sources):
    """Groups of (document, key, group) sources: Power/Thermal's Redundancy, PowerSubsystem's
    PowerSupplyRedundancy."""
    groups = []
    for document, key, group in sources:
        for position, item in enumerate(_items(document, key)):
            state = redundancy_state(item)
            if state is None:
                continue
            name = _name(item) if (item.get("Name") or item.get("MemberId")) else "%s %d" % (key, position)
            groups.append({"name": name, "group": group, "state": state, "text": _redundancy_text(item)})
    return groups


def temperature_records(thermal):
    return [{"name": _name(item), "celsius": _number(item.get("ReadingCelsius")),
             "status": _HEALTH_STATUS.get(_health(item)), "context": item.get("PhysicalContext")}
            for item in _items(thermal, "Temperatures") if not _absent(item)]


def sensor_temperature_records(sensors):
    """Temperatures of Sensor resources (ReadingType Temperature); a headroom or a delta (ReadingBasis) is a
    distance to a limit, not a temperature, and is left out."""
    records = []
    for item in _documents(sensors):
        if item.get("ReadingType") != "Temperature" or _absent(item) or item.get("ReadingBasis") in NOT_ABSOLUTE_BASES:
            continue
        records.append({"name": _name(item), "celsius": _number(item.get("Reading")),
                        "status": _HEALTH_STATUS.get(_health(item)), "context": item.get("PhysicalContext")})
    return records


def _first(temperatures, contexts, pattern):
    for item in temperatures:
        if item["celsius"] is not None and (item["context"] in contexts or pattern.search(item["name"])):
            return item["celsius"]
    return None


def _summary_reading(thermal_metrics, *keys):
    """The first of keys' readings in ThermalMetrics' TemperatureSummaryCelsius."""
    summary = thermal_metrics.get("TemperatureSummaryCelsius") if isinstance(thermal_metrics, dict) else None
    for key in keys:
        value = _reading((summary or {}).get(key)) if isinstance(summary, dict) else None
        if value is not None:
            return value
    return None


def power_draw(power):
    for item in _items(power, "PowerControl"):
        watts = _number(item.get("PowerConsumedWatts"))
        if watts is not None:
            return watts
    return None


def leak_detector_records(leak_detection=None, leak_detectors=None):
    """Detectors of a LeakDetection (its LeakDetectorGroups' Detectors excerpts) and LeakDetector resources:
    name, type, the detector's state and its Health."""
    records = []
    for group in _items(leak_detection, "LeakDetectorGroups"):
        for item in _items(group, "Detectors"):
            records.append({"name": _name(item, "DeviceName"), "type": None,
                            "state": _text_or_none(item.get("DetectorState")), "health": None})
    for item in _documents(leak_detectors):
        if _absent(item):
            continue
        records.append({"name": _name(item), "type": _text_or_none(item.get("LeakDetectorType")),
                        "state": _text_or_none(item.get("DetectorState")), "health": _status(item).get("Health")})
    return records


def _text_or_none(value):
    return clean_field(str(value)) if value not in (None, "") else None


def is_leaking(detector):
    """A detector that says liquid is there: its state Critical or LeakDetected, or its Health Critical."""
    state = (detector.get("state") or "").lower()
    return state in LEAK_STATES or (detector.get("health") or "").lower() == "critical"


def _sensor_entries(fans, temperatures, supplies):
    return ([{"name": fan["name"], "kind": "fan", "status": fan["status"],
              "reading": fan["rpm"] if fan["rpm"] is not None else fan["percent"],
              "unit": "RPM" if fan["rpm"] is not None else ("percent" if fan["percent"] is not None else None),
              "states": []} for fan in fans]
            + [{"name": item["name"], "kind": "temperature", "status": item["status"], "reading": item["celsius"],
                "unit": "degrees C", "states": []} for item in temperatures]
            + [{"name": psu["name"], "kind": "power_supply", "status": None, "reading": psu["watts"],
                "unit": "Watts" if psu["watts"] is not None else None, "states": psu["states"]} for psu in supplies])


def summarize_redfish(power=None, thermal=None, power_supplies=None, power_subsystem=None, thermal_metrics=None,
                      environment_metrics=None, leak_detection=None, leak_detectors=None, sensors=None):
    """The sensor part of the bmc facts from a chassis's documents, any of them None: the legacy Power and Thermal,
    an expanded PowerSupplyCollection (power_supplies, its Members) or a list of PowerSupply resources, the
    PowerSubsystem, ThermalMetrics, EnvironmentMetrics, LeakDetection, LeakDetector resources and Sensor resources.
    Where both models give a value, the legacy document's is taken."""
    temperatures = temperature_records(thermal) + sensor_temperature_records(sensors)
    fans = fan_records(thermal)
    known_fans = {fan["name"] for fan in fans}
    fans += [fan for fan in environment_fan_records(environment_metrics) if fan["name"] not in known_fans]
    supply_items = _items(power_supplies, "Members") if isinstance(power_supplies, dict) else _documents(power_supplies)
    supplies = power_supply_records(power) + _distinct_names([power_supply_record(item) for item in supply_items],
                                                             supply_items)
    watts = power_draw(power)
    if watts is None:
        watts = _reading((environment_metrics or {}).get("PowerWatts") if isinstance(environment_metrics, dict) else None)
    inlet = _first(temperatures, _INLET_CONTEXTS, _INLET)
    exhaust = _first(temperatures, _EXHAUST_CONTEXTS, _EXHAUST)
    sensors_out = _sensor_entries(fans, temperatures, supplies)
    return {
        "sensors": sensors_out[:MAX_SENSORS], "sensors_left_out": max(0, len(sensors_out) - MAX_SENSORS),
        "fans": fans, "power_supplies": supplies,
        "redundancy": redundancy_records((power, "Redundancy", "power_supply"), (thermal, "Redundancy", "fan"),
                                         (power_subsystem, "PowerSupplyRedundancy", "power_supply")),
        "temperatures": [{key: item[key] for key in ("name", "celsius", "status")} for item in temperatures],
        "inlet_temperature_c": inlet if inlet is not None else _summary_reading(thermal_metrics, "Intake", "Ambient"),
        "exhaust_temperature_c": exhaust if exhaust is not None else _summary_reading(thermal_metrics, "Exhaust"),
        "power_draw_w": watts,
        "power_draw_source": "redfish" if watts is not None else None,
        "leak_detectors": leak_detector_records(leak_detection, leak_detectors),
    }


# ---------------------------------------------------------------- the event log (LogEntryCollection)

_SEVERITY = {"critical": "critical", "warning": "warning", "ok": "info"}
_ISO_RE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.\d+)?(Z|[+-]\d{2}:\d{2})?$")


def utc_time(text):
    """ISO 8601 UTC ("...Z") of a Redfish time ("2012-03-07T14:44:00Z", "2024-05-01T10:00:00+02:00"), or None."""
    match = _ISO_RE.match(str(text or "").strip())
    if match is None:
        return None
    parts = [int(part) for part in match.groups()[:6]]
    zone = match.group(7) or "Z"
    offset = 0 if zone == "Z" else (1 if zone[0] == "+" else -1) * (int(zone[1:3]) * 3600 + int(zone[4:6]) * 60)
    try:
        epoch = calendar.timegm(tuple(parts)) - offset
    except (ValueError, OverflowError):
        return None
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))


def log_entry_record(item):
    """A LogEntry in the shape of an ipmitool SEL record: its severity is the entry's Severity; EntryCode
    "Deassert" is a deassertion, Resolved true a condition cleared."""
    created = item.get("Created") or item.get("EventTimestamp")
    timed = utc_time(created)
    sensor = " ".join(str(part) for part in (item.get("SensorType"), item.get("SensorNumber")) if part not in (None, ""))
    event = item.get("Message") or item.get("EntryCode") or ""
    detail = item.get("EntryCode") if item.get("Message") and item.get("EntryCode") else None
    return {
        "id": clean_field(str(item.get("Id") or "")),
        "time": timed,
        "raw_time": None if timed else (clean_field(str(created)) if created else None),
        "sensor": clean_field(sensor or str(item.get("Name") or "")),
        "event": clean_field(str(event)),
        "asserted": str(item.get("EntryCode") or "") != "Deassert",
        "detail": clean_field(str(detail)) if detail else None,
        "severity": _SEVERITY.get(str(item.get("Severity") or "").lower(), "info"),
        "cleared": item.get("Resolved") is True,
    }


def parse_log_entries(collection):
    """(records, next page's path or None) of one page of a LogEntryCollection: its Members, in log order."""
    if not isinstance(collection, dict):
        return [], None
    records = [log_entry_record(item) for item in _items(collection, "Members")]
    next_link = collection.get("@odata.nextLink") or collection.get("Members@odata.nextLink")
    return records, next_link if isinstance(next_link, str) and next_link else None
