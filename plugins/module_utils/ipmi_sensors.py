# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The BMC's sensors as ipmitool prints them (`ipmitool sdr elist`, the 3-column `ipmitool sdr` / `sdr list`,
the 10-column `ipmitool sensor`, `ipmitool dcmi power reading`), and what they say about fans, power supplies,
redundancy, inlet and exhaust temperature and power draw.

Discrete sensors (a power supply, a redundancy group) print status `ok` whatever their state: the
state is only in the text column ("Presence detected, Failure detected", "Redundancy Lost"), so
that text is what is read; `ipmitool sensor` prints those states as a bit mask instead ("0x0b00"), read
by the sensor's name (a power supply, a redundancy group). Threshold sensors carry the BMC's verdict in the
status column (`lcr`: below the lower critical threshold). `ns` (sdr) and `na` (sensor) mean no reading: a
sensor the BMC reads nothing from (a fan header with no fan, a part not fitted); with the state "Disabled" the BMC
itself has turned the sensor off (the host powered off, a part it knows is absent)."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re

from ansible_collections.gpufleet.core.plugins.module_utils.facts_model import printable

# Sensors kept whole in the facts; a BMC lists a few hundred at most.
MAX_SENSORS = 256

# ipmitool's status column: ok, ns (no reading), nc/cr/nr (non-critical, critical, non-recoverable),
# with l/u for the lower or upper threshold.
CRITICAL_STATUSES = ("cr", "nr", "lcr", "lnr", "ucr", "unr")
NON_CRITICAL_STATUSES = ("nc", "lnc", "unc")
UNREADABLE_STATUSES = ("ns", "na")
# the discrete-state words of a sensor the BMC has turned off, not one that fails to read
DISABLED_STATE = "disabled"

_READING_RE = re.compile(r"^\s*(-?\d+(?:\.\d+)?)\s*(.*?)\s*$")
_INTEGER_RE = re.compile(r"^-?\d+$")
_UNITS = {"rpm": "RPM", "degrees c": "degrees C", "watts": "Watts", "percent": "percent", "volts": "Volts",
          "amps": "Amps", "feet": "feet"}
_FAN_NAME = re.compile(r"\bfan|\bfans\b|cooling", re.IGNORECASE)
_PSU_NAME = re.compile(r"\bpsu?\s*\d|\bpsu?\b|power\s*supply|\bps\d|pwr\s*supply", re.IGNORECASE)
_INLET_NAME = re.compile(r"inlet|ambient|intake|front\s*panel\s*temp|\bsys(?:tem)?\s*air\s*in", re.IGNORECASE)
_EXHAUST_NAME = re.compile(r"exhaust|outlet|air\s*out", re.IGNORECASE)
_TEMPERATURE_NAME = re.compile(r"temp", re.IGNORECASE)
_POWER_NAME = re.compile(r"power|pwr|consumption|\bwatt", re.IGNORECASE)

# Redundancy states (IPMI generic event/reading type 0Bh), as ipmitool words them.
_REDUNDANCY_STATES = (
    ("fully redundant", "redundant"),
    ("redundancy lost", "lost"),
    ("redundancy degraded", "degraded"),
    ("non-redundant", "non_redundant"),
)
LOST_REDUNDANCY = ("lost", "non_redundant")


def parse_sdr(text, problems=None):
    """Sensors of `ipmitool sdr elist` (name | id | status | entity | reading), of the 3-column
    `ipmitool sdr` / `sdr list` (name | reading | status), of `ipmitool sensor` (name | reading | unit | status |
    six thresholds), or of the verbose `ipmitool sdr -v` / `sdr elist -v` / `sensor get` (parse_sdr_verbose).
    Lines of another shape, a last line cut mid-line and readings with a decimal comma (another locale) are not
    read, and said in problems (a list), when given."""
    problems = [] if problems is None else problems
    if _VERBOSE_SDR_RE.search(text or ""):
        return parse_sdr_verbose(text, problems)
    sensors = []
    odd = OddLines("lines of another shape than ipmitool's sensor listing, not read")
    for line in complete_lines(text, problems):
        fields = [clean_field(field) for field in line.split("|")]
        if len(fields) == 5:
            name, sensor_id, status, entity, reading = fields
        elif len(fields) == 3:
            name, reading, status = fields
            sensor_id = entity = None
        elif len(fields) == SENSOR_COLUMNS:
            name, reading, status = fields[0], sensor_reading_text(fields), sensor_status(fields)
            sensor_id = entity = None
        else:
            odd.add(line)
            continue
        if not name:
            odd.add(line)
            continue
        sensor = _sensor(name, sensor_id, status.lower(), entity, reading)
        if sensor.pop("decimal_comma"):
            problems.append("reading %r of sensor %r has a decimal comma (another locale): not read" % (reading, name))
        sensors.append(sensor)
    odd.report(problems)
    return sensors


# `ipmitool sensor`: name | reading | unit | status | lnr | lcr | lnc | unc | ucr | unr
SENSOR_COLUMNS = 10
_HEX_RE = re.compile(r"^0x([0-9a-fA-F]{1,4})$")
# The discrete states of `ipmitool sensor`'s bit mask (IPMI 2.0 table 42-3), for the sensor types read here
# by name: power supply (08h) and redundancy (0Bh). Bit n of the 16-bit mask is state n.
_PSU_STATE_BITS = ("Presence detected", "Failure detected", "Predictive failure", "Power Supply AC lost",
                   "AC lost or out-of-range", "AC out-of-range, but present", "Configuration error")
_REDUNDANCY_STATE_BITS = ("Fully Redundant", "Redundancy Lost", "Redundancy Degraded",
                          "Non-Redundant: Sufficient from Redundant", "Non-Redundant: Sufficient from Insufficient",
                          "Non-Redundant: Insufficient Resources", "Redundancy Degraded from Fully Redundant",
                          "Redundancy Degraded from Non-redundant")
_REDUNDANCY_NAME = re.compile(r"redundan", re.IGNORECASE)


def sensor_reading_text(fields):
    """The reading of an `ipmitool sensor` line in the words of `sdr elist`: "8820 RPM", "no reading", or the
    discrete states its status mask asserts ("Presence detected, Failure detected")."""
    name, reading, unit, status = fields[:4]
    if reading.lower() == "na":
        return "no reading"
    if unit.lower() == "discrete":
        return ", ".join(discrete_states(name, status))
    number = _READING_RE.match(reading)
    return "%s %s" % (number.group(1), unit) if number and unit else reading


def sensor_status(fields):
    """ipmitool's status of an `ipmitool sensor` line; a discrete sensor's column is its state mask, not a status."""
    unit, status = fields[2], fields[3]
    return "ok" if unit.lower() == "discrete" else status


def discrete_states(name, mask_text):
    """The states a discrete sensor's mask ("0x0b00": bits 0-7 in the first byte, 8-14 in the second) asserts, for
    a power supply or a redundancy sensor known by its name; nothing for another sensor (its type is not printed)."""
    match = _HEX_RE.match(mask_text.strip())
    if match is None:
        return []
    digits = match.group(1).rjust(4, "0")
    mask = int(digits[:2], 16) | (int(digits[2:], 16) << 8)
    if _REDUNDANCY_NAME.search(name):
        names = _REDUNDANCY_STATE_BITS
    elif _PSU_NAME.search(name):
        names = _PSU_STATE_BITS
    else:
        return []
    return [state for bit, state in enumerate(names) if mask & (1 << bit)]


_VERBOSE_SDR_RE = re.compile(r"^Sensor ID\s*:", re.MULTILINE)
_KEY_VALUE_RE = re.compile(r"^(\S[^:]*?)\s*:\s?(.*)$")
_SENSOR_ID_RE = re.compile(r"^(.*?)\s*\((0x[0-9a-fA-F]+)\)$")
_VERBOSE_READING_RE = re.compile(r"^(-?\d+(?:\.\d+)?)\s*(?:\(\+/-\s*[\d.]+\)\s*)?(.*)$")


def key_value_blocks(text, first_key):
    """The blocks of ipmitool's verbose outputs (`sdr -v`, `sel get`): "Key : value" lines, a block starting at
    each first_key line; a line of only a value (the second "[state]" of "States Asserted") belongs to the key
    above. Each block is a dict of lists of values, in order; lines before the first block are left out."""
    blocks, current, last_key = [], None, None
    for line in (text or "").splitlines():
        stripped = line.strip()
        if not stripped:
            continue
        match = _KEY_VALUE_RE.match(stripped)
        if match and not stripped.startswith("["):
            key, value = match.group(1).strip(), match.group(2).strip()
            if key == first_key:
                current = {}
                blocks.append(current)
            if current is not None:
                current.setdefault(key, []).append(value)
                last_key = key
        elif current is not None and last_key is not None:
            current[last_key].append(stripped)
    return blocks


def _first_value(block, *keys):
    for key in keys:
        for name, values in block.items():
            if name == key or name.startswith(key + " ("):
                return values[0] if values else ""
    return None


def _bracketed(values):
    return [clean_field(value.strip("[]")) for value in values if value.startswith("[")]


def parse_sdr_verbose(text, problems=None):
    """Sensors of `ipmitool sdr -v` (and `sdr elist -v`, `sensor get`): one block per sensor, "Sensor ID : FAN1
    (0x30)", its Entity ID, Sensor Reading ("6000 (+/- 0) RPM", "0h", "No Reading"), Status (threshold sensors
    only) and the discrete states under "States Asserted", one "[state]" a line."""
    problems = [] if problems is None else problems
    sensors = []
    for block in key_value_blocks(text, "Sensor ID"):
        named = _SENSOR_ID_RE.match(clean_field(block["Sensor ID"][0]))
        name, sensor_id = (named.group(1), named.group(2)) if named else (clean_field(block["Sensor ID"][0]), None)
        if not name:
            continue
        entity = (_first_value(block, "Entity ID") or "").split(" ")[0] or None
        states = _bracketed(block.get("States Asserted", ()))
        reading = _verbose_reading(_first_value(block, "Sensor Reading"), states)
        status = _verbose_status(_first_value(block, "Status"), reading)
        sensor = _sensor(name, sensor_id, status, entity, reading)
        if sensor.pop("decimal_comma"):
            problems.append("reading %r of sensor %r has a decimal comma (another locale): not read" % (reading, name))
        sensors.append(sensor)
    return sensors


# The verbose listing words its status ("Lower Critical"); the short listings print the abbreviation
_VERBOSE_STATUSES = {"lower non-recoverable": "lnr", "lower critical": "lcr", "lower non-critical": "lnc",
                     "upper non-recoverable": "unr", "upper critical": "ucr", "upper non-critical": "unc",
                     "not available": "ns"}


def _verbose_status(text, reading):
    if not text:
        return "ns" if reading == "no reading" else "ok"
    return _VERBOSE_STATUSES.get(text.strip().lower(), clean_field(text).lower())


def _verbose_reading(text, states):
    """The reading of a verbose block in the words of `sdr elist`: "6000 RPM", "no reading", or its states."""
    text = clean_field(text or "")
    if not text or text.lower().startswith(("no reading", "not present", "unable", "disabled")):
        return ", ".join(states) if states else "no reading"
    number = _VERBOSE_READING_RE.match(text)
    if number and number.group(2).lower() in _UNITS:
        return ", ".join(["%s %s" % (number.group(1), number.group(2))] + states)
    return ", ".join(states)


def complete_lines(text, problems):
    """The lines of an ipmitool output. A last line without its newline was cut mid-line (ipmitool killed, a LAN
    session dropped): it is left out, and said in problems, since half a line can read as another state."""
    text = text or ""
    lines = text.splitlines()
    if lines and lines[-1].strip() and not text.endswith(("\n", "\r")):
        problems.append("output cut mid-line: %r not read" % clean_field(lines[-1]))
        lines.pop()
    return lines


class OddLines:
    """Lines of an output that have a column separator but not the columns of their listing: counted, with the
    first as an example (blank lines and lines without a '|' are ipmitool's own messages)."""

    def __init__(self, what):
        self.what = what
        self.count = 0
        self.example = None

    def add(self, line):
        if "|" not in line:
            return
        self.count += 1
        if self.example is None:
            self.example = clean_field(line)

    def report(self, problems):
        if self.count:
            problems.append("%d %s, for example %r" % (self.count, self.what, self.example))


MAX_FIELD = 200


def clean_field(text):
    """A column as data: control characters written out, at most MAX_FIELD characters."""
    return printable(text.strip())[:MAX_FIELD]


def _sensor(name, sensor_id, status, entity, reading_text):
    value, unit, states, decimal_comma = _reading(reading_text)
    sensor = {"name": name, "id": sensor_id, "status": status or None, "entity": entity,
              "reading": value, "unit": unit, "states": states, "decimal_comma": decimal_comma}
    sensor["kind"] = sensor_kind(sensor)
    return sensor


def _reading(text):
    """(value, unit, [discrete states], decimal comma) of a reading column: "6000 RPM", "0 Watts, Presence
    detected, Failure detected", "Redundancy Lost", "0x00", "no reading", "Disabled". A number written with a
    decimal comma ("41,5 degrees C", another locale) has no value: its unit is kept, the comma is said."""
    parts = [part.strip() for part in (text or "").split(",") if part.strip()]
    value = unit = None
    if len(parts) > 1 and _INTEGER_RE.match(parts[0]):
        match = _READING_RE.match(parts[1])
        if match and match.group(2).lower() in _UNITS:
            states = [part for part in parts[2:] if not re.match(r"^0x[0-9a-fA-F]+$", part)]
            return None, _UNITS[match.group(2).lower()], states, True
    if parts:
        match = _READING_RE.match(parts[0])
        if match and match.group(2).lower() in _UNITS:
            value = float(match.group(1))
            unit = _UNITS[match.group(2).lower()]
            parts = parts[1:]
    states = [part for part in parts if not re.match(r"^0x[0-9a-fA-F]+$", part)]
    return value, unit, states, False


def sensor_kind(sensor):
    """fan, power_supply, redundancy, temperature, power, voltage or other; the unit decides before the name
    ("PSU1 Temp" is a temperature, "PSU1 Fan" a fan); a temperature sensor without a reading is still one."""
    name, unit = sensor["name"], sensor["unit"]
    if redundancy_state(sensor) is not None:
        return "redundancy"
    if unit == "RPM" or (_FAN_NAME.search(name) and unit in (None, "percent")):
        return "fan"
    if unit == "degrees C" or (unit is None and _TEMPERATURE_NAME.search(name)):
        return "temperature"
    if unit in (None, "Watts", "percent") and (_PSU_NAME.search(name) or _entity_id(sensor) == 10):
        return "power_supply"
    if unit == "Watts" and _POWER_NAME.search(name):
        return "power"
    if unit == "Volts":
        return "voltage"
    return "other"


def _entity_id(sensor):
    entity = sensor.get("entity") or ""
    try:
        return int(entity.split(".")[0])
    except ValueError:
        return None


def redundancy_state(sensor):
    """redundant, lost, degraded, non_redundant, or None for a sensor that is no redundancy sensor."""
    for state in sensor["states"]:
        lowered = state.lower()
        for words, value in _REDUNDANCY_STATES:
            if lowered.startswith(words):
                return value
    return None


def _has_state(sensor, words):
    return any(words in state.lower() for state in sensor["states"])


def fan_record(sensor):
    status = sensor["status"]
    rpm = sensor["reading"] if sensor["unit"] == "RPM" else None
    stopped = rpm is not None and rpm <= 0 and status not in UNREADABLE_STATUSES
    return {
        "name": sensor["name"], "rpm": rpm,
        "percent": sensor["reading"] if sensor["unit"] == "percent" else None,
        "status": status,
        "failed": status in CRITICAL_STATUSES or stopped or _has_state(sensor, "fail"),
        "slow": status in NON_CRITICAL_STATUSES,
        "no_reading": status in UNREADABLE_STATUSES and not _has_state(sensor, DISABLED_STATE),
    }


def power_supply_record(sensor):
    return {
        "name": sensor["name"],
        "watts": sensor["reading"] if sensor["unit"] == "Watts" else None,
        "present": True if _has_state(sensor, "presence detected") else (
            False if _has_state(sensor, "absent") else None),
        "failed": _has_state(sensor, "failure detected") or sensor["status"] in CRITICAL_STATUSES,
        "predictive_failure": _has_state(sensor, "predictive failure"),
        "ac_lost": _has_state(sensor, "ac lost") or _has_state(sensor, "input lost"),
        "offline": False,
        "states": list(sensor["states"]),
    }


def redundancy_record(sensor):
    group = "power_supply" if _PSU_NAME.search(sensor["name"]) or _entity_id(sensor) == 10 else (
        "fan" if _FAN_NAME.search(sensor["name"]) else "other")
    text = ", ".join(sensor["states"])
    if group == "other" and re.search(r"power", sensor["name"], re.IGNORECASE):
        group = "power_supply"
    return {"name": sensor["name"], "group": group, "state": redundancy_state(sensor), "text": text}


def temperature_record(sensor):
    return {"name": sensor["name"], "celsius": sensor["reading"], "status": sensor["status"]}


_COMPONENT_NAME = re.compile(r"\bpsu?\s*\d|\bpsu\b|power\s*supply|\bps\d|\bcpu|\bgpu|\bdimm|\bpch|\bnic", re.IGNORECASE)


def _first_reading(sensors, pattern):
    """The reading of the first sensor whose name matches, leaving out the inlets of components
    (a power supply's or a GPU's inlet is no room air)."""
    for sensor in sensors:
        if sensor["reading"] is not None and pattern.search(sensor["name"]) and not _COMPONENT_NAME.search(sensor["name"]):
            return sensor["reading"]
    return None


def summarize_sensors(sensors):
    """The parts of the facts made from the sensors (fans, power supplies, redundancy, temperatures, power)."""
    kinds = {}
    for sensor in sensors:
        kinds.setdefault(sensor["kind"], []).append(sensor)
    temperatures = kinds.get("temperature", [])
    power = [sensor for sensor in kinds.get("power", []) if sensor["reading"] is not None]
    return {
        "fans": [fan_record(sensor) for sensor in kinds.get("fan", [])],
        "power_supplies": [power_supply_record(sensor) for sensor in kinds.get("power_supply", [])],
        "redundancy": [redundancy_record(sensor) for sensor in kinds.get("redundancy", [])],
        "temperatures": [temperature_record(sensor) for sensor in temperatures],
        "inlet_temperature_c": _first_reading(temperatures, _INLET_NAME),
        "exhaust_temperature_c": _first_reading(temperatures, _EXHAUST_NAME),
        "power_draw_w": power[0]["reading"] if power else None,
        "power_draw_source": "sdr:%s" % power[0]["name"] if power else None,
    }


_DCMI_RE = re.compile(r"^[ \t]*Instantaneous power reading:[ \t]*(.*?)[ \t]*$", re.MULTILINE | re.IGNORECASE)
_DCMI_STATE_RE = re.compile(r"^\s*Power reading state is:\s*(\S+)", re.MULTILINE | re.IGNORECASE)
_WATTS_RE = re.compile(r"^(\d+(?:\.\d+)?)\s*Watts$", re.IGNORECASE)


def parse_dcmi_power(text, problems=None):
    """Instantaneous watts of `ipmitool dcmi power reading`, or None (no reading, or DCMI power
    management deactivated). A reading in another form (a decimal comma, a cut line) is said in problems."""
    line = _DCMI_RE.search(text or "")
    state = _DCMI_STATE_RE.search(text or "")
    if line is None or (state is not None and state.group(1).lower() != "activated"):
        return None
    watts = _WATTS_RE.match(line.group(1))
    if watts is None:
        if problems is not None:
            problems.append("power reading %r not read" % clean_field(line.group(1)))
        return None
    return float(watts.group(1))
