# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The nvidia-smi backend: `nvidia-smi -q -x` read into the gpufleet fact schema.

Handles the report layouts of DTD v11, v12 and v13 and the older reports without a
DOCTYPE (R418): power_readings / gpu_power_readings, clocks_throttle_reasons /
clocks_event_reasons, ECC counts per memory location (single_bit/double_bit) or
per kind (sram/dram correctable/uncorrectable). Placeholders such as "N/A" or
"[Not Supported]" become None.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re
import xml.etree.ElementTree as ET

from ansible_collections.gpufleet.core.plugins.module_utils.facts_model import (
    COMPUTE_MODES, add_error, decode_clock_event_reasons, new_gpu, new_process, normalize_pci_bus_id)
from ansible_collections.gpufleet.core.plugins.module_utils.nvsmi_mig import collect_mig_layout
from ansible_collections.gpufleet.core.plugins.module_utils.vocabulary import recovery_action_name

CALL = "nvidia-smi -q -x"
# the start of the error of a report that lists fewer GPUs than it says are attached: a partial collection
MISSING_GPUS = "GPUs missing from the report"


class NvidiaSmiParseError(ValueError):
    """The text is not a readable `nvidia-smi -q -x` report."""


# Values nvidia-smi prints where it has none; compared without brackets and case.
_PLACEHOLDERS = frozenset([
    "n/a", "na", "not supported", "not available", "unknown", "unknown error", "gpu is lost",
    "insufficient permissions", "requested functionality has been deprecated", "no data", "",
])

_TRUE_WORDS = frozenset(["enabled", "yes", "active", "on", "true"])
_FALSE_WORDS = frozenset(["disabled", "no", "not active", "off", "false"])

# The value nvidia-smi prints in place of a reading of a GPU it lost; a GPU is lost when a field that
# carries its state holds exactly this (or its uuid reads "Unknown Error"), never when some text contains it.
_LOST_VALUE = "gpu is lost"
# Elements whose text someone else chose (a process's name, the board's strings): data, never a state.
_FREE_TEXT_TAGS = frozenset([
    "processes", "accounted_processes", "process_name", "product_name", "product_brand", "serial",
    "board_part_number", "gpu_part_number", "vbios_version", "inforom_version", "driver_version", "cuda_version",
    "clusterUuid", "board_id", "module_id", "gpu_module_id", "uuid",
])

# nvidia-smi XML field suffix -> NVML clocks event reason bit (facts_model.CLOCK_EVENT_REASON_BITS).
_CLOCK_REASON_BITS = {
    "gpu_idle": 0x1,
    "applications_clocks_setting": 0x2,
    "sw_power_cap": 0x4,
    "hw_slowdown": 0x8,
    "sync_boost": 0x10,
    "sw_thermal_slowdown": 0x20,
    "hw_thermal_slowdown": 0x40,
    "hw_power_brake_slowdown": 0x80,
    "display_clocks_setting": 0x100,
}
_CLOCK_REASON_PREFIXES = ("clocks_event_reason_", "clocks_throttle_reason_")

_PROCESS_TYPES = {"C": "compute", "G": "graphics", "C+G": "compute+graphics"}

_NUMBER_RE = re.compile(r"^(-?\d{1,18}(?:\.\d{1,9})?)\s*([A-Za-z%]*)$")
_INT_RE = re.compile(r"^-?\d{1,18}$")
_VERSION_RE = re.compile(r"^\d+(?:\.\d+)*$")
_PSTATE_RE = re.compile(r"^P\d{1,2}$")
_DOCTYPE_RE = re.compile(r"<!DOCTYPE[^<>\[\]]*>")
# Characters XML 1.0 does not allow; a process name may hold any of them.
_XML_INVALID_RE = re.compile(u"[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")
# A process name is the one value of the report its process chooses: on its line, everything between
# the tags is text, even markup ('</process_name></gpu><gpu ...>' must not make a GPU).
_PROCESS_NAME_RE = re.compile(r"(<process_name>)(.*)(</process_name>)")
_BARE_AMPERSAND_RE = re.compile(r"&(?!(?:amp|lt|gt|quot|apos|#\d+|#x[0-9a-fA-F]+);)")
_MISMATCH_RE = re.compile(r"^.*Driver/library version mismatch.*$", re.MULTILINE)
_NVML_LIBRARY_RE = re.compile(r"NVML library version:\s*([0-9][0-9.]*[0-9])")
_NO_HANDLE_RE = re.compile(
    r"^\s*Unable to (?:determine|detect) the device handle for GPU\s*"
    r"([0-9A-Fa-f]{1,8}:[0-9A-Fa-f]{1,2}:[0-9A-Fa-f]{1,2}(?:\.[0-7])?)\s*:?\s*([^\r\n]*)", re.MULTILINE)


# ---------------------------------------------------------------- values

def _clean(text):
    """Text of an element with whitespace collapsed; None for placeholders."""
    if text is None:
        return None
    value = " ".join(text.split())
    if value.strip("[]").strip().lower() in _PLACEHOLDERS:
        return None
    return value


def _text(elem, path):
    if elem is None:
        return None
    child = elem.find(path)
    if child is None:
        return None
    return _clean(child.text)


def _first_text(elem, *paths):
    for path in paths:
        value = _text(elem, path)
        if value is not None:
            return value
    return None


def _number(value, units):
    """'250.00 W' -> 250.0 when the unit is one of units (or absent); None otherwise."""
    if value is None:
        return None
    match = _NUMBER_RE.match(value)
    if not match or (match.group(2) and match.group(2) not in units):
        return None
    return float(match.group(1))


def _int(value, units=()):
    number = _number(value, units)
    if number is None or number != int(number):
        return None
    return int(number)


def _count(value):
    """A plain counter: digits only."""
    if value is None or not _INT_RE.match(value):
        return None
    return int(value)


def _flag(value):
    if value is None:
        return None
    word = value.lower()
    if word in _TRUE_WORDS:
        return True
    if word in _FALSE_WORDS:
        return False
    return None


def _version(value):
    if value is None or not _VERSION_RE.match(value):
        return None
    return value


def _sum_known(values):
    known = [value for value in values if value is not None]
    return sum(known) if known else None


def _any_true(values):
    known = [value for value in values if value is not None]
    return any(known) if known else None


def _word(value):
    """'In Progress' -> 'in_progress'."""
    if value is None:
        return None
    return re.sub(r"[\s\-]+", "_", value.strip().lower())


# ---------------------------------------------------------------- document

def _xml_body(text):
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    if text is None or not text.strip():
        raise NvidiaSmiParseError("nvidia-smi -q -x printed nothing")
    starts = [pos for pos in (text.find("<?xml"), text.find("<nvidia_smi_log")) if pos >= 0]
    if not starts:
        raise NvidiaSmiParseError("no nvidia_smi_log XML in the output: %r" % text.strip()[:200])
    body = text[min(starts):]
    if "<!ENTITY" in body:
        raise NvidiaSmiParseError("entity declarations are not accepted in nvidia-smi XML")
    body = _DOCTYPE_RE.sub("", body, count=1)
    body = _XML_INVALID_RE.sub(u"\ufffd", body)
    body = _PROCESS_NAME_RE.sub(_escaped_process_name, body)
    end = body.rfind("</nvidia_smi_log>")
    if end >= 0:
        body = body[:end + len("</nvidia_smi_log>")]
    return body


def _escaped_process_name(match):
    name = _BARE_AMPERSAND_RE.sub("&amp;", match.group(2)).replace("<", "&lt;").replace(">", "&gt;")
    return match.group(1) + name + match.group(3)


def _parse_root(text):
    body = _xml_body(text)
    try:
        root = ET.fromstring(body)
    except (ET.ParseError, ValueError) as exc:
        raise NvidiaSmiParseError("truncated or malformed nvidia-smi XML: %s" % exc)
    if root.tag != "nvidia_smi_log":
        raise NvidiaSmiParseError("unexpected XML root <%s>, expected <nvidia_smi_log>" % root.tag)
    return root


def parse_nvidia_smi_xml(text):
    """The report of `nvidia-smi -q -x` as {"driver", "gpus", "mig_memory_mib"}.

    driver: {"version", "cuda_driver_version"}; gpus: records of facts_model.new_gpu in the
    order of the report (= NVML index); mig_memory_mib: {pci_bus_id: {gpu instance id: MiB}}
    from the report's mig_devices; unreadable: [(GPU index, field, text)] of the readings that are
    there but are no number (read as None); attached_gpus: the GPU count the report states, or None. Raises NvidiaSmiParseError for anything that is not a
    complete report.
    """
    return report_from_root(_parse_root(text))


def report_from_root(root):
    """The report (parse_nvidia_smi_xml) of an <nvidia_smi_log> element, read from the XML or built from the text
    `nvidia-smi -q` (nvsmi_text)."""
    driver = {
        "version": _version(_text(root, "driver_version")),
        "cuda_driver_version": _version(_text(root, "cuda_version")),
    }
    gpus, mig_memory, unreadable = [], {}, []
    for index, elem in enumerate(root.findall("gpu")):
        gpu = gpu_from_element(elem, index, unreadable)
        gpus.append(gpu)
        memory = mig_instance_memory(elem)
        if memory and gpu["pci_bus_id"]:
            mig_memory[gpu["pci_bus_id"]] = memory
    return {"driver": driver, "gpus": gpus, "mig_memory_mib": mig_memory, "unreadable": unreadable,
            "attached_gpus": _count(_text(root, "attached_gpus"))}


# ---------------------------------------------------------------- one GPU

def gpu_from_element(elem, index, unreadable=None):
    """One <gpu> element as a schema gpu record; unreadable (a list) gets (index, field, text) of each reading that
    is there but is no number (_Readings)."""
    readings = _Readings(elem)
    gpu = new_gpu(index)
    gpu["name"] = _text(elem, "product_name")
    gpu["uuid"] = _text(elem, "uuid")
    gpu["serial"] = _text(elem, "serial")
    gpu["pci_bus_id"] = normalize_pci_bus_id(_text(elem, "pci/pci_bus_id") or _clean(elem.get("id")))
    gpu["board_part_number"] = _text(elem, "board_part_number")
    gpu["vbios_version"] = _text(elem, "vbios_version")
    gpu["architecture"] = _architecture(_text(elem, "product_architecture"))
    gpu["compute_capability"] = _compute_capability(elem)
    gpu["lost"] = _is_lost(elem)
    gpu["memory"] = readings.part("memory", _MEMORY_FIELDS, ("MiB",))
    gpu["temperature"] = readings.part("temperature", _TEMPERATURE_FIELDS, ("C",))
    gpu["power"] = _power(readings)
    gpu["fan_speed_pct"] = readings.read("fan_speed_pct", ("fan_speed",), ("%",))
    gpu["clocks"] = readings.part("clocks", _CLOCK_FIELDS, ("MHz",))
    gpu["clock_event_reasons"] = _clock_event_reasons(_first_child(elem, "clocks_event_reasons", "clocks_throttle_reasons"))
    gpu["performance_state"] = _performance_state(_text(elem, "performance_state"))
    gpu["utilization"] = readings.part("utilization", _UTILIZATION_FIELDS, ("%",))
    gpu["ecc"] = _ecc(elem)
    gpu["retired_pages"] = _retired_pages(readings)
    gpu["remapped_rows"] = _remapped_rows(readings)
    gpu["pcie"] = _pcie(readings)
    gpu["compute_mode"] = _compute_mode(_text(elem, "compute_mode"))
    gpu["persistence_mode"] = _flag(_text(elem, "persistence_mode"))
    gpu["mig"]["mode_current"] = _flag(_text(elem, "mig_mode/current_mig"))
    gpu["mig"]["mode_pending"] = _flag(_text(elem, "mig_mode/pending_mig"))
    gpu["processes"] = _processes(elem.find("processes"))
    gpu["fabric"] = _fabric(elem.find("fabric"))
    gpu["recovery_action"] = _recovery_action(_text(elem, "gpu_recovery_action"))
    if unreadable is not None:
        unreadable.extend((index, field, text) for field, text in readings.unreadable)
    return gpu


def _first_child(elem, *tags):
    for tag in tags:
        child = elem.find(tag)
        if child is not None:
            return child
    return None


def _architecture(value):
    """nvidia-smi prints 'Ada Lovelace'; the schema uses NVML's one-word names ('ada')."""
    words = (value or "").lower().split()
    return words[0] if words else None


def _compute_capability(elem):
    value = _first_text(elem, "compute_cap", "cuda_compute_capability")
    if value is None or not re.match(r"^\d+\.\d+$", value):
        return None
    return value


def _is_lost(elem):
    if any(_bare_value(text) == _LOST_VALUE for text in _state_texts(elem)):
        return True
    uuid = elem.find("uuid")
    return uuid is not None and _bare_value(uuid.text) in ("unknown error", _LOST_VALUE)


def _bare_value(text):
    """'  [GPU is lost] ' -> 'gpu is lost'."""
    return " ".join((text or "").split()).strip("[]").strip().lower()


def _state_texts(elem):
    """The texts of elem's descendants, leaving out the subtrees of free text (_FREE_TEXT_TAGS)."""
    for child in elem:
        if child.tag in _FREE_TEXT_TAGS:
            continue
        yield child.text
        yield from _state_texts(child)


def _mib(value):
    return _int(value, ("MiB",))


class _Readings:
    """The numbers of one <gpu> element. A value that is there (not a placeholder such as N/A) but is no number of
    its unit (a decimal comma, more digits than any reading has, another unit) reads as None and is kept in
    unreadable as (field, text), for the collection's errors."""

    def __init__(self, elem):
        self.elem = elem
        self.unreadable = []

    def part(self, part, fields, units, integer=True):
        """{field: number} of one part of the GPU record; fields: ((field, XML paths tried in order), ...)."""
        return {field: self.read("%s.%s" % (part, field), paths, units, integer) for field, paths in fields}

    def read(self, field, paths, units, integer=True):
        text = _first_text(self.elem, *paths)
        return self._kept(field, text, _int(text, units) if integer else _number(text, units))

    def count(self, field, path):
        """A plain counter (digits only) at path."""
        text = _text(self.elem, path)
        return self._kept(field, text, _count(text))

    def _kept(self, field, text, value):
        if value is None and text is not None:
            self.unreadable.append((field, text))
        return value


_MEMORY_FIELDS = (
    ("total_mib", ("fb_memory_usage/total",)), ("used_mib", ("fb_memory_usage/used",)),
    ("free_mib", ("fb_memory_usage/free",)), ("reserved_mib", ("fb_memory_usage/reserved",)),
    ("bar1_total_mib", ("bar1_memory_usage/total",)), ("bar1_used_mib", ("bar1_memory_usage/used",)),
)
_TEMPERATURE_FIELDS = (
    ("gpu_c", ("temperature/gpu_temp",)), ("slowdown_c", ("temperature/gpu_temp_slow_threshold",)),
    ("shutdown_c", ("temperature/gpu_temp_max_threshold",)), ("memory_c", ("temperature/memory_temp",)),
)
_CLOCK_FIELDS = (
    ("graphics_mhz", ("clocks/graphics_clock",)), ("sm_mhz", ("clocks/sm_clock",)),
    ("memory_mhz", ("clocks/mem_clock",)), ("max_graphics_mhz", ("max_clocks/graphics_clock",)),
    ("max_sm_mhz", ("max_clocks/sm_clock",)), ("max_memory_mhz", ("max_clocks/mem_clock",)),
)
_UTILIZATION_FIELDS = (("gpu_pct", ("utilization/gpu_util",)), ("memory_pct", ("utilization/memory_util",)))
# newer drivers name the block gpu_power_readings; the first of the two that the report has is read
_POWER_BLOCKS = ("power_readings", "gpu_power_readings")
_POWER_FIELDS = (
    ("draw_w", ("power_draw", "average_power_draw", "instant_power_draw")),
    ("limit_w", ("enforced_power_limit", "current_power_limit")),
    ("default_limit_w", ("default_power_limit",)), ("min_limit_w", ("min_power_limit",)),
    ("max_limit_w", ("max_power_limit",)),
)


def _power(readings):
    block = _first_child(readings.elem, *_POWER_BLOCKS)
    block = _POWER_BLOCKS[0] if block is None else block.tag
    fields = tuple((field, tuple("%s/%s" % (block, path) for path in paths)) for field, paths in _POWER_FIELDS)
    return readings.part("power", fields, ("W",), integer=False)


def _clock_reason_bit(tag):
    for prefix in _CLOCK_REASON_PREFIXES:
        if tag.startswith(prefix):
            return _CLOCK_REASON_BITS.get(tag[len(prefix):])
    return None


def _clock_event_reasons(elem):
    """Active reasons as the NVML mask; mask None when no reason could be read."""
    mask = None
    for child in (elem if elem is not None else []):
        bit = _clock_reason_bit(child.tag)
        active = _flag(_clean(child.text))
        if bit is None or active is None:
            continue
        mask = (mask or 0) | (bit if active else 0)
    return {"mask": mask, "active": decode_clock_event_reasons(mask)}


def _performance_state(value):
    if value is None or not _PSTATE_RE.match(value):
        return None
    return value


def _ecc_location_total(elem, kind):
    """Oldest layout: <single_bit>/<double_bit> per memory location, with a total."""
    section = elem.find(kind) if elem is not None else None
    if section is None:
        return None
    total = _count(_text(section, "total"))
    if total is not None:
        return total
    return _sum_known(_count(_clean(child.text)) for child in section if child.tag != "total")


def _ecc_sram_uncorrected(elem):
    if elem.find("sram_uncorrectable") is not None:
        return _count(_text(elem, "sram_uncorrectable"))
    return _sum_known([_count(_text(elem, "sram_uncorrectable_parity")), _count(_text(elem, "sram_uncorrectable_secded"))])


def _ecc_counts(elem):
    """(corrected, uncorrected) of one <volatile> or <aggregate> block, None where nothing was readable."""
    if elem is None:
        return None, None
    if elem.find("single_bit") is not None or elem.find("double_bit") is not None:
        return _ecc_location_total(elem, "single_bit"), _ecc_location_total(elem, "double_bit")
    corrected = _sum_known([_count(_text(elem, "sram_correctable")), _count(_text(elem, "dram_correctable"))])
    uncorrected = _sum_known([_ecc_sram_uncorrected(elem), _count(_text(elem, "dram_uncorrectable"))])
    return corrected, uncorrected


def _ecc(elem):
    volatile_corrected, volatile_uncorrected = _ecc_counts(elem.find("ecc_errors/volatile"))
    aggregate_corrected, aggregate_uncorrected = _ecc_counts(elem.find("ecc_errors/aggregate"))
    return {
        "mode_current": _flag(_text(elem, "ecc_mode/current_ecc")),
        "mode_pending": _flag(_text(elem, "ecc_mode/pending_ecc")),
        "volatile_corrected": volatile_corrected,
        "volatile_uncorrected": volatile_uncorrected,
        "aggregate_corrected": aggregate_corrected,
        "aggregate_uncorrected": aggregate_uncorrected,
    }


def _retired_pages(readings):
    elem = readings.elem.find("retired_pages")
    return {
        "single_bit": readings.count("retired_pages.single_bit",
                                     "retired_pages/multiple_single_bit_retirement/retired_count"),
        "double_bit": readings.count("retired_pages.double_bit", "retired_pages/double_bit_retirement/retired_count"),
        "pending": _any_true([_flag(_text(elem, "pending_blacklist")), _flag(_text(elem, "pending_retirement"))]),
    }


def _remapped_rows(readings):
    elem = readings.elem.find("remapped_rows")
    return {
        "correctable": readings.count("remapped_rows.correctable", "remapped_rows/remapped_row_corr"),
        "uncorrectable": readings.count("remapped_rows.uncorrectable", "remapped_rows/remapped_row_unc"),
        "pending": _flag(_text(elem, "remapped_row_pending")),
        "failure": _flag(_text(elem, "remapped_row_failure")),
    }


def _pcie_gen_max(gen):
    value = _count(_text(gen, "max_link_gen"))
    if value is not None:
        return value
    device, host = _count(_text(gen, "max_device_link_gen")), _count(_text(gen, "max_host_link_gen"))
    if device is None or host is None:
        return None
    return min(device, host)


def _pcie(readings):
    elem = readings.elem.find("pci")
    gen = elem.find("pci_gpu_link_info/pcie_gen") if elem is not None else None
    widths = elem.find("pci_gpu_link_info/link_widths") if elem is not None else None
    return {
        "gen_current": _count(_first_text(gen, "current_link_gen", "device_current_link_gen")),
        "gen_max": _pcie_gen_max(gen),
        "width_current": _int(_text(widths, "current_link_width"), ("x",)),
        "width_max": _int(_text(widths, "max_link_width"), ("x",)),
        "replay_counter": readings.count("pcie.replay_counter", "pci/replay_counter"),
        "aer": None,
    }


def _compute_mode(value):
    word = _word(value)
    return word if word in COMPUTE_MODES else None


def _process(elem):
    pid = _count(_text(elem, "pid"))
    if pid is None:
        return None
    process = new_process(pid)
    process["name"] = _text(elem, "process_name")
    process["type"] = _PROCESS_TYPES.get((_text(elem, "type") or "").upper())
    process["used_memory_mib"] = _mib(_text(elem, "used_memory"))
    process["gpu_instance_id"] = _count(_text(elem, "gpu_instance_id"))
    process["compute_instance_id"] = _count(_text(elem, "compute_instance_id"))
    return process


def _processes(elem):
    if elem is None:
        return []
    processes = [_process(child) for child in elem.findall("process_info")]
    return [process for process in processes if process is not None]


def _recovery_action(text):
    """'None', 'Reset', 'Node Reboot Required' -> the facts' name; a word the audit does not know is kept as
    printed (lower case, underscores) so that it can be named; None when the report has no such field."""
    if text is None:
        return None
    return recovery_action_name(text) or _word(text)


def _fabric(elem):
    """The fabric block, or None when the GPU has no fabric (every value N/A)."""
    if elem is None:
        return None
    fabric = {
        "state": _word(_text(elem, "state")),
        "status": _word(_text(elem, "status")),
        "clique_id": _count(_text(elem, "cliqueId")),
        "cluster_uuid": _text(elem, "clusterUuid"),
    }
    if all(value is None for value in fabric.values()):
        return None
    return fabric


def mig_instance_memory(elem):
    """{gpu instance id: MiB} from a <gpu>'s mig_devices; a GI's compute instances share its memory."""
    memory = {}
    for device in elem.findall("mig_devices/mig_device"):
        gi_id = _count(_text(device, "gpu_instance_id"))
        total = _mib(_text(device, "fb_memory_usage/total"))
        if gi_id is not None and total is not None:
            memory[gi_id] = total
    return memory


# ---------------------------------------------------------------- running nvidia-smi

def _record_mismatch(facts, output):
    """Driver/library version mismatch: the kernel module and userspace library differ."""
    lines = [match.group(0).strip() for match in _MISMATCH_RE.finditer(output)]
    library = _NVML_LIBRARY_RE.search(output)
    if library:
        facts["driver"]["userspace_version"] = library.group(1)
        lines.append("NVML library version: %s" % library.group(1))
    facts["driver"]["mismatch"] = True
    facts["driver"]["mismatch_reason"] = "nvidia-smi: %s" % "; ".join(lines)


def _unreachable_gpus(output):
    """[(pci_bus_id, reason)] for "Unable to determine the device handle for GPU ..." lines."""
    found = []
    for match in _NO_HANDLE_RE.finditer(output):
        bus_id = normalize_pci_bus_id(match.group(1))
        if bus_id and bus_id not in [seen for seen, _reason in found]:
            found.append((bus_id, match.group(0).strip()))
    return found


def _merge_lost_gpus(gpus, unreachable):
    """Adds a lost record for each GPU nvidia-smi could not open, in PCI order, and renumbers.

    nvidia-smi numbers GPUs in PCI bus order (as NVML does), so a GPU missing from the
    report still takes its place in the numbering."""
    known = set(gpu["pci_bus_id"] for gpu in gpus)
    merged = list(gpus)
    for bus_id, _reason in unreachable:
        if bus_id in known:
            continue
        lost = new_gpu(0)
        lost["pci_bus_id"] = bus_id
        lost["lost"] = True
        position = len(merged)
        for i, gpu in enumerate(merged):
            if gpu["pci_bus_id"] is not None and gpu["pci_bus_id"] > bus_id:
                position = i
                break
        merged.insert(position, lost)
    for index, gpu in enumerate(merged):
        gpu["index"] = index
    return merged


def _report_lost(facts, gpus, unreachable):
    reasons = dict(unreachable)
    for gpu in gpus:
        if gpu["lost"]:
            reason = reasons.get(gpu["pci_bus_id"]) or "GPU is lost or its values could not be read"
            add_error(facts, gpu["index"], CALL, reason)


def collect_nvidia_smi(host, facts, timeout):
    """Fills facts["driver"] and facts["gpus"] from `nvidia-smi -q -x`.

    Returns True when a report was read. False without an error when nvidia-smi is not
    installed; False with an error when it hung (and was killed), failed, printed
    something unreadable, or reported a driver/library version mismatch.
    """
    path = host.find_bin("nvidia-smi")
    if not path:
        return False
    result = host.run([path, "-q", "-x"], timeout)
    if result.timed_out:
        add_error(facts, None, CALL, "no answer within %s s; timed out and was killed" % timeout)
        return False
    if result.missing:
        add_error(facts, None, CALL, result.describe_failure())
        return False
    output = "%s\n%s" % (_outside_report(result.stdout or ""), result.stderr or "")
    if "<nvidia_smi_log" not in (result.stdout or "") and _MISMATCH_RE.search(output):
        _record_mismatch(facts, output)
        add_error(facts, None, CALL, facts["driver"]["mismatch_reason"], result.rc)
        return False
    try:
        report = parse_nvidia_smi_xml(result.stdout)
    except NvidiaSmiParseError as exc:
        reason = result.describe_failure() if result.rc != 0 else str(exc)
        add_error(facts, None, CALL, reason, result.rc)
        return False
    if result.rc != 0:
        add_error(facts, None, CALL, "exit status %s with a partial report" % result.rc, result.rc)
    _fill_facts(facts, report, output)
    if any(gpu["mig"]["mode_current"] for gpu in facts["gpus"]):
        collect_mig_layout(host, facts, timeout, gi_memory_mib=report["mig_memory_mib"])
    return True


def _outside_report(stdout):
    """stdout without its XML report: nvidia-smi's own messages are outside it, and the text inside it
    (a process's name) is data that must not say a GPU is unreachable."""
    start = stdout.find("<nvidia_smi_log")
    if start < 0:
        return stdout
    end = stdout.rfind("</nvidia_smi_log>")
    before = stdout[:start]
    xml_start = before.find("<?xml")
    if xml_start >= 0:
        before = before[:xml_start]
    return before + ("\n" + stdout[end + len("</nvidia_smi_log>"):] if end >= 0 else "")


def _fill_facts(facts, report, output):
    driver = facts["driver"]
    driver["version"] = report["driver"]["version"]
    driver["userspace_version"] = report["driver"]["version"]
    driver["cuda_driver_version"] = report["driver"]["cuda_driver_version"]
    unreachable = _unreachable_gpus(output)
    facts["gpus"] = _merge_lost_gpus(report["gpus"], unreachable)
    _report_lost(facts, facts["gpus"], unreachable)
    for index, field, text in report["unreadable"]:
        add_error(facts, index, "reading %s" % field, "%r is not a reading of this field; reported as null" % text)
    attached = report["attached_gpus"]
    if attached is not None and attached > len(facts["gpus"]):
        add_error(facts, None, CALL, "%s: the report states %d attached GPU(s) but lists %d"
                  % (MISSING_GPUS, attached, len(facts["gpus"])))
