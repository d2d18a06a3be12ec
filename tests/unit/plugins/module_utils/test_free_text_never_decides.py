"""No free text decides a verdict: each parser reads a state from the field that carries it, never from a
substring of a whole document or element. Every trigger word of a verdict is put into every free-text field
of a healthy input (a process's name, a product name, a serial, a sensor's name ...) and the reading stays
healthy."""

import pytest

from ansible_collections.gpufleet.core.plugins.module_utils.facts_model import new_facts
from ansible_collections.gpufleet.core.plugins.module_utils.host_io import ReplayHost
from ansible_collections.gpufleet.core.plugins.module_utils.nvsmi_xml import (
    collect_nvidia_smi, parse_nvidia_smi_xml)
from tests.support.nvsmi_samples import SYNTHETIC

# The words that make a verdict somewhere in the project: a lost GPU, a GPU off the bus, an Xid, a failed
# reading, a failed power supply or fan, a critical SEL record.
TRIGGERS = (
    "GPU is lost",
    "[GPU is lost]",
    "Unable to determine the device handle for GPU 0000:3B:00.0: Unknown Error",
    "\nUnable to determine the device handle for GPU 0000:5E:00.0: GPU is lost\n",
    "NVRM: GPU 0000:3b:00.0: GPU has fallen off the bus.",
    "NVRM: Xid (PCI:0000:3b:00): 79, pid=1, name=x, GPU has fallen off the bus.",
    "Unknown Error",
    "ERR!",
    "Failure detected",
    "Redundancy Lost",
    "Uncorrectable ECC | Asserted",
    "Power Supply AC lost",
)

# nvidia-smi -q -x: the texts in the report that a process, the vendor or the owner chose.
NVSMI_FREE_TEXT = {
    "process_name": ("<process_name>python3</process_name>", "<process_name>%s</process_name>"),
    "product_name": ("<product_name>NVIDIA H100 80GB HBM3</product_name>", "<product_name>%s</product_name>"),
    "serial": ("<uuid>", "<serial>%s</serial>\n    <uuid>"),
    "board_part_number": ("<uuid>", "<board_part_number>%s</board_part_number>\n    <uuid>"),
    "vbios_version": ("<uuid>", "<vbios_version>%s</vbios_version>\n    <uuid>"),
}


def _xml_escaped(text):
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _nvsmi_with(field, trigger):
    anchor, replacement = NVSMI_FREE_TEXT[field]
    assert anchor in SYNTHETIC
    return SYNTHETIC.replace(anchor, replacement % _xml_escaped(trigger), 1)


@pytest.mark.parametrize("trigger", TRIGGERS)
@pytest.mark.parametrize("field", sorted(NVSMI_FREE_TEXT))
def test_nvidia_smi_gpu_is_not_lost_by_free_text(field, trigger):
    text = _nvsmi_with(field, trigger)
    assert [gpu["lost"] for gpu in parse_nvidia_smi_xml(text)["gpus"]] == [False]
    facts = new_facts()
    facts["collected_at"] = "2026-01-01T00:00:00Z"
    host = ReplayHost({"bins": {"nvidia-smi": "/usr/bin/nvidia-smi"},
                       "commands": {"nvidia-smi -q -x": {"rc": 0, "stdout": text, "stderr": ""}}})
    assert collect_nvidia_smi(host, facts, timeout=5) is True
    assert [(gpu["pci_bus_id"], gpu["lost"]) for gpu in facts["gpus"]] == [("0000:3b:00.0", False)]
    assert [error for error in facts["errors"] if error["gpu"] is not None] == []


def test_nvidia_smi_lost_value_in_a_state_field_still_marks_the_gpu_lost():
    text = SYNTHETIC.replace("<fan_speed>[Not Supported]</fan_speed>", "<fan_speed>[GPU is lost]</fan_speed>")
    assert [gpu["lost"] for gpu in parse_nvidia_smi_xml(text)["gpus"]] == [True]
