# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The text `nvidia-smi -q` (`nvidia-smi --query`, as an nvidia-bug-report.log holds it) read as its XML report.

The text is the XML report printed as indented "Key : Value" lines: each label is mapped to the XML element it
prints, so that the GPU facts are read by nvsmi_xml (one reading, one set of value conversions for both forms).
Labels of older drivers ("Clocks Throttle Reasons", "Power Readings", ECC "Single Bit"/"Double Bit" per memory
location, "Pending" retired pages) map to the older XML elements. A label this table does not know becomes an
element of its own name, which nothing reads.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re
import xml.etree.ElementTree as ET

from ansible_collections.gpufleet.core.plugins.module_utils.nvsmi_xml import NvidiaSmiParseError, report_from_root

_BANNER_RE = re.compile(r"^=+\s*NVSMI LOG\s*=+\s*$")
_GPU_RE = re.compile(r"^GPU\s+([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7])\s*$")
_KEY_VALUE_RE = re.compile(r"^( *)([^:\s][^:]*?)\s*:(?:\s(.*)|\s*)$")
_SECTION_RE = re.compile(r"^( +)([A-Za-z][^:]*?)\s*$")

# label (lower case) -> XML path, by the element it is printed in; "*" holds the labels read the same anywhere
_LABELS = {
    "nvidia_smi_log": {"driver version": "driver_version", "cuda version": "cuda_version",
                       "attached gpus": "attached_gpus"},
    "gpu": {"product name": "product_name", "product brand": "product_brand",
            "product architecture": "product_architecture", "persistence mode": "persistence_mode",
            "mig mode": "mig_mode", "serial number": "serial", "gpu uuid": "uuid", "vbios version": "vbios_version",
            "board part number": "board_part_number", "gpu part number": "gpu_part_number",
            "cuda compute capability": "cuda_compute_capability", "compute capability": "compute_cap",
            "pci": "pci", "fan speed": "fan_speed", "performance state": "performance_state",
            "clocks event reasons": "clocks_event_reasons", "clocks throttle reasons": "clocks_throttle_reasons",
            "fb memory usage": "fb_memory_usage", "bar1 memory usage": "bar1_memory_usage",
            "compute mode": "compute_mode", "utilization": "utilization", "ecc mode": "ecc_mode",
            "ecc errors": "ecc_errors", "retired pages": "retired_pages", "remapped rows": "remapped_rows",
            "temperature": "temperature", "power readings": "power_readings",
            "gpu power readings": "gpu_power_readings", "clocks": "clocks", "max clocks": "max_clocks",
            "fabric": "fabric", "processes": "processes", "mig devices": "mig_devices",
            "gpu recovery action": "gpu_recovery_action"},
    "mig_mode": {"current": "current_mig", "pending": "pending_mig"},
    "ecc_mode": {"current": "current_ecc", "pending": "pending_ecc"},
    "pci": {"bus id": "pci_bus_id", "gpu link info": "pci_gpu_link_info", "replays since reset": "replay_counter"},
    "pci_gpu_link_info": {"pcie generation": "pcie_gen", "link width": "link_widths"},
    "pcie_gen": {"max": "max_link_gen", "current": "current_link_gen", "device current": "device_current_link_gen",
                 "device max": "max_device_link_gen", "host max": "max_host_link_gen"},
    "link_widths": {"max": "max_link_width", "current": "current_link_width"},
    "fb_memory_usage": {"total": "total", "reserved": "reserved", "used": "used", "free": "free"},
    "bar1_memory_usage": {"total": "total", "used": "used", "free": "free"},
    "utilization": {"gpu": "gpu_util", "memory": "memory_util"},
    "ecc_errors": {"volatile": "volatile", "aggregate": "aggregate"},
    "volatile": {"single bit": "single_bit", "double bit": "double_bit"},
    "aggregate": {"single bit": "single_bit", "double bit": "double_bit"},
    "retired_pages": {"single bit ecc": "multiple_single_bit_retirement/retired_count",
                      "double bit ecc": "double_bit_retirement/retired_count",
                      "pending page blacklist": "pending_blacklist", "pending": "pending_retirement",
                      "pending page retirement": "pending_retirement"},
    "remapped_rows": {"correctable error": "remapped_row_corr", "uncorrectable error": "remapped_row_unc",
                      "pending": "remapped_row_pending", "remapping failure occurred": "remapped_row_failure"},
    "temperature": {"gpu current temp": "gpu_temp", "gpu shutdown temp": "gpu_temp_max_threshold",
                    "gpu slowdown temp": "gpu_temp_slow_threshold", "memory current temp": "memory_temp"},
    "clocks": {"graphics": "graphics_clock", "sm": "sm_clock", "memory": "mem_clock", "video": "video_clock"},
    "max_clocks": {"graphics": "graphics_clock", "sm": "sm_clock", "memory": "mem_clock", "video": "video_clock"},
    "fabric": {"state": "state", "status": "status", "cliqueid": "cliqueId", "clusteruuid": "clusterUuid"},
    "process_info": {"gpu instance id": "gpu_instance_id", "compute instance id": "compute_instance_id",
                     "process id": "pid", "type": "type", "name": "process_name",
                     "used gpu memory": "used_memory"},
    "mig_devices": {"mig device": "mig_device"},
    "mig_device": {"gpu instance id": "gpu_instance_id", "compute instance id": "compute_instance_id",
                   "fb memory usage": "fb_memory_usage"},
    "*": {"power draw": "power_draw", "average power draw": "average_power_draw",
          "instantaneous power draw": "instant_power_draw", "current power limit": "current_power_limit",
          "enforced power limit": "enforced_power_limit", "default power limit": "default_power_limit",
          "min power limit": "min_power_limit", "max power limit": "max_power_limit",
          "sram correctable": "sram_correctable", "sram uncorrectable": "sram_uncorrectable",
          "sram uncorrectable parity": "sram_uncorrectable_parity",
          "sram uncorrectable sec-ded": "sram_uncorrectable_secded", "dram correctable": "dram_correctable",
          "dram uncorrectable": "dram_uncorrectable", "total": "total"},
}
# "Clocks Event Reasons" (and the older "Clocks Throttle Reasons") lines -> the XML reason's suffix
_CLOCK_REASONS = {"idle": "gpu_idle", "applications clocks setting": "applications_clocks_setting",
                  "sw power cap": "sw_power_cap", "hw slowdown": "hw_slowdown", "sync boost": "sync_boost",
                  "sw thermal slowdown": "sw_thermal_slowdown", "hw thermal slowdown": "hw_thermal_slowdown",
                  "hw power brake slowdown": "hw_power_brake_slowdown",
                  "display clock setting": "display_clocks_setting"}
_CLOCK_REASON_PREFIX = {"clocks_event_reasons": "clocks_event_reason_",
                        "clocks_throttle_reasons": "clocks_throttle_reason_"}
# the labels that open a new process of a "Processes" section
_PROCESS_OPENERS = ("gpu instance id", "process id")


def _tag(parent_tag, label):
    """The XML path of label printed in an element parent_tag; an unknown label becomes a tag of its own words."""
    key = " ".join(label.lower().split())
    if parent_tag in _CLOCK_REASON_PREFIX and key in _CLOCK_REASONS:
        return _CLOCK_REASON_PREFIX[parent_tag] + _CLOCK_REASONS[key]
    path = _LABELS.get(parent_tag, {}).get(key) or _LABELS["*"].get(key)
    if path:
        return path
    return "text_" + re.sub(r"[^a-z0-9]+", "_", key).strip("_")


def _is_header_label(label):
    """A line at the report's left margin is its header ("Driver Version : ..."), or nvidia-smi's own message."""
    key = " ".join(label.lower().split())
    return key == "timestamp" or key in _LABELS["nvidia_smi_log"]


def _child(parent, path, text=None):
    """Appends the element(s) of path under parent; returns the last one."""
    elem = parent
    for tag in path.split("/"):
        elem = ET.SubElement(elem, tag)
    elem.text = text
    return elem


class _TextReport:
    """The lines of one `nvidia-smi -q` text, built into an <nvidia_smi_log> tree; outside: the lines that are no
    part of the report (nvidia-smi's own messages, such as a GPU it could not open)."""

    def __init__(self):
        self.root = ET.Element("nvidia_smi_log")
        self.outside = []
        self.seen_banner = False
        # (indent, element) of the sections open at a line
        self.stack = [(-1, self.root)]

    def add(self, line):
        line = line.rstrip("\r\n").replace("\t", "    ")
        if not line.strip():
            return
        if _BANNER_RE.match(line.strip()):
            self.seen_banner = True
            self.stack = [(-1, self.root)]
            return
        gpu = _GPU_RE.match(line)
        if gpu:
            elem = ET.SubElement(self.root, "gpu", id=gpu.group(1))
            self.stack = [(-1, self.root), (0, elem)]
            return
        key_value = _KEY_VALUE_RE.match(line)
        section = None if key_value else _SECTION_RE.match(line)
        if not self._is_report_line(key_value, section):
            self.outside.append(line.strip())
            return
        match = key_value or section
        indent, label = len(match.group(1)), match.group(2)
        parent = self._parent(indent)
        if key_value:
            self._value(parent, indent, label, key_value.group(3) or "")
        else:
            self.stack.append((indent, _child(parent, _tag(parent.tag, label))))

    def _is_report_line(self, key_value, section):
        """A line after the banner: a section inside a GPU block, an indented "Key : Value", or one of the header's.
        Anything else ("Unable to determine the device handle for GPU ...") is nvidia-smi's own message."""
        if not self.seen_banner:
            return False
        if section:
            return len(self.stack) > 1
        return bool(key_value) and (bool(key_value.group(1)) or _is_header_label(key_value.group(2)))

    def _parent(self, indent):
        while len(self.stack) > 1 and self.stack[-1][0] >= indent:
            self.stack.pop()
        return self.stack[-1][1]

    def _value(self, parent, indent, label, value):
        if parent.tag == "processes":
            parent = self._process(parent, indent, label)
        _child(parent, _tag(parent.tag, label), value.strip())

    def _process(self, processes, indent, label):
        """The <process_info> a line of a "Processes" section belongs to: a new one at the line that opens one.
        The lines under "Process ID" are indented deeper but are the same process's."""
        key = " ".join(label.lower().split())
        current = processes[-1] if len(processes) else None
        opens = key == _PROCESS_OPENERS[0] or (key == _PROCESS_OPENERS[1] and (
            current is None or current.find("pid") is not None))
        if opens or current is None:
            current = ET.SubElement(processes, "process_info")
        # the deeper lines under "Process ID" go to the same process_info, seen as a section at this indent
        self.stack.append((indent, processes))
        return current


def read_text_report(text):
    """(root, outside lines) of an `nvidia-smi -q` text: root the <nvidia_smi_log> element its lines print.
    Raises NvidiaSmiParseError when the text is no such report."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    if text is None or not text.strip():
        raise NvidiaSmiParseError("nvidia-smi -q printed nothing")
    report = _TextReport()
    for line in text.splitlines():
        report.add(line)
    if not report.seen_banner:
        raise NvidiaSmiParseError("no NVSMI LOG report in the nvidia-smi -q output: %r" % text.strip()[:200])
    return report.root, report.outside


def parse_nvidia_smi_text(text):
    """The report of the text `nvidia-smi -q` as parse_nvidia_smi_xml gives the XML's."""
    root, _outside = read_text_report(text)
    return report_from_root(root)


def nvidia_smi_text_as_xml(text):
    """The text `nvidia-smi -q` as the output of `nvidia-smi -q -x` would be: nvidia-smi's own lines (a GPU it
    could not open) before the XML report, as nvidia-smi prints them. For a capture that holds only the text."""
    root, outside = read_text_report(text)
    for elem in root.iter():
        elem.tail = "\n"  # one element a line, as nvidia-smi prints it: nvsmi_xml reads a process name by its line
    body = ET.tostring(root, encoding="unicode")
    return "".join(line + "\n" for line in outside) + '<?xml version="1.0" ?>\n' + body + "\n"
