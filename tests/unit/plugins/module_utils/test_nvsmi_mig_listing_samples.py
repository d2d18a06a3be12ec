"""nvidia-smi mig -lgip / -lgi on the project's own listings (the R550 table layout, values of our own
choosing): the parser, the layout collection and NVML's profile names agree with them."""

import re

import pynvml
import pytest

from ansible_collections.gpufleet.core.plugins.module_utils.facts_model import new_facts, new_gpu
from ansible_collections.gpufleet.core.plugins.module_utils.host_io import ReplayHost
from ansible_collections.gpufleet.core.plugins.module_utils.nvml_collect import gpu_instance_profile_name, mig_memory_gb
from ansible_collections.gpufleet.core.plugins.module_utils.nvsmi_mig import collect_mig_layout, parse_lgi
from tests.support.nvsmi_lgip import parse_lgip
from tests.support.schema_check import assert_valid_facts

LGIP_HEADER = """+-----------------------------------------------------------------------------+
| GPU instance profiles:                                                      |
| GPU   Name             ID    Instances   Memory     P2P    SM    DEC   ENC  |
|                              Free/Total   GiB              CE    JPEG  OFA  |
|=============================================================================|
"""

# An A100-SXM4-80GB with one 3g.40gb (slices 4-7) and two 1g.10gb already created: the free counts drop.
LGIP_A100_80GB_IN_USE = LGIP_HEADER + """|   0  MIG 1g.10gb       19     1/7        9.50       No     14     0     0   |
|                                                             1     0     0   |
+-----------------------------------------------------------------------------+
|   0  MIG 1g.10gb+me    20     1/1        9.50       No     14     1     0   |
|                                                             1     1     1   |
+-----------------------------------------------------------------------------+
|   0  MIG 1g.20gb       15     1/4        19.50      No     14     1     0   |
|                                                             1     0     0   |
+-----------------------------------------------------------------------------+
|   0  MIG 2g.20gb       14     0/3        19.50      No     28     1     0   |
|                                                             2     0     0   |
+-----------------------------------------------------------------------------+
|   0  MIG 3g.40gb        9     0/2        39.25      No     42     2     0   |
|                                                             3     0     0   |
+-----------------------------------------------------------------------------+
|   0  MIG 4g.40gb        5     0/1        39.25      No     56     2     0   |
|                                                             4     0     0   |
+-----------------------------------------------------------------------------+
|   0  MIG 7g.80gb        0     0/1        78.50      No     98     5     0   |
|                                                             7     1     1   |
+-----------------------------------------------------------------------------+
"""

# Two A30s side by side, nothing created yet.
LGIP_TWO_A30 = LGIP_HEADER + "".join(
    """|   %(gpu)d  MIG 1g.6gb        14     4/4        5.81       No     14     1     0   |
|                                                             1     0     0   |
+-----------------------------------------------------------------------------+
|   %(gpu)d  MIG 1g.6gb+me     21     1/1        5.81       No     14     1     0   |
|                                                             1     1     1   |
+-----------------------------------------------------------------------------+
|   %(gpu)d  MIG 2g.12gb        5     2/2        11.69      No     28     2     0   |
|                                                             2     0     0   |
+-----------------------------------------------------------------------------+
|   %(gpu)d  MIG 2g.12gb+me     6     1/1        11.69      No     28     2     0   |
|                                                             2     1     1   |
+-----------------------------------------------------------------------------+
|   %(gpu)d  MIG 4g.24gb        0     1/1        23.44      No     56     4     0   |
|                                                             4     1     1   |
+-----------------------------------------------------------------------------+
""" % {"gpu": gpu} for gpu in (0, 1))

# One A30 after `-cgi 14,14,5`: two 1g.6gb and a 2g.12gb, listed by profile then instance id.
LGI_A30 = """+-------------------------------------------------------+
| GPU instances:                                        |
| GPU   Name             Profile  Instance   Placement  |
|                          ID       ID       Start:Size |
|=======================================================|
|   0  MIG 1g.6gb          14        3          0:1     |
+-------------------------------------------------------+
|   0  MIG 1g.6gb          14        4          1:1     |
+-------------------------------------------------------+
|   0  MIG 2g.12gb          5        2          2:2     |
+-------------------------------------------------------+
"""


def test_lgip_of_a_gpu_in_use():
    profiles = parse_lgip(LGIP_A100_80GB_IN_USE)
    assert [(p["profile_name"], p["profile_id"], p["instances_free"], p["instances_total"], p["memory_gib"])
            for p in profiles] == [
        ("1g.10gb", 19, 1, 7, 9.5), ("1g.10gb+me", 20, 1, 1, 9.5), ("1g.20gb", 15, 1, 4, 19.5),
        ("2g.20gb", 14, 0, 3, 19.5), ("3g.40gb", 9, 0, 2, 39.25), ("4g.40gb", 5, 0, 1, 39.25),
        ("7g.80gb", 0, 0, 1, 78.5)]
    assert profiles[-1] == {"gpu": 0, "profile_id": 0, "profile_name": "7g.80gb", "instances_free": 0,
                            "instances_total": 1, "memory_gib": 78.5, "p2p": False, "sm": 98, "dec": 5, "enc": 0,
                            "ce": 7, "jpeg": 1, "ofa": 1}
    assert (profiles[1]["jpeg"], profiles[1]["ofa"], profiles[0]["jpeg"]) == (1, 1, 0)


def test_lgip_of_two_gpus():
    profiles = parse_lgip(LGIP_TWO_A30)
    assert [p["gpu"] for p in profiles] == [0] * 5 + [1] * 5
    assert [(p["profile_name"], p["profile_id"], p["instances_total"], p["memory_gib"]) for p in profiles[5:]] == [
        ("1g.6gb", 14, 4, 5.81), ("1g.6gb+me", 21, 1, 5.81), ("2g.12gb", 5, 2, 11.69),
        ("2g.12gb+me", 6, 1, 11.69), ("4g.24gb", 0, 1, 23.44)]
    assert (profiles[4]["sm"], profiles[4]["ce"], profiles[4]["jpeg"], profiles[4]["ofa"]) == (56, 4, 1, 1)


def test_lgi_of_an_a30_is_not_a_profile_listing():
    assert parse_lgip(LGI_A30) == [] and parse_lgi(LGIP_TWO_A30) == []
    assert [(gi["id"], gi["profile_id"], gi["profile_name"], gi["placement"]) for gi in parse_lgi(LGI_A30)] == [
        (3, 14, "1g.6gb", {"start": 0, "size": 1}), (4, 14, "1g.6gb", {"start": 1, "size": 1}),
        (2, 5, "2g.12gb", {"start": 2, "size": 2})]


def test_collect_an_a30_layout_without_compute_instances():
    facts = new_facts()
    facts["collected_at"] = "2026-11-30T06:00:00Z"
    gpu = new_gpu(0)
    gpu["pci_bus_id"] = "0000:17:00.0"
    gpu["mig"]["mode_current"] = True
    facts["gpus"].append(gpu)
    host = ReplayHost({"bins": {"nvidia-smi": "/usr/bin/nvidia-smi"}, "commands": {
        "nvidia-smi mig -lgi": {"rc": 0, "stdout": LGI_A30},
        "nvidia-smi mig -lci": {"rc": 6, "stdout": "No compute instances found: Not Found\n"}}})
    assert collect_mig_layout(host, facts, 5) is True and facts["errors"] == []
    assert [(gi["id"], gi["profile_name"], gi["compute_instances"]) for gi in facts["gpus"][0]["mig"]["gpu_instances"]] == [
        (3, "1g.6gb", []), (4, "1g.6gb", []), (2, "2g.12gb", [])]
    assert_valid_facts(facts)


_ME_PROFILE_ENUMS = {20: pynvml.NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV1,
                     21: pynvml.NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV1,
                     6: pynvml.NVML_GPU_INSTANCE_PROFILE_2_SLICE_REV1}


@pytest.mark.parametrize("listing, total_mib", [(LGIP_A100_80GB_IN_USE, 81920), (LGIP_TWO_A30, 24576)])
def test_nvml_profile_names_match_the_listing(listing, total_mib):
    for profile in parse_lgip(listing):
        slices = int(re.match(r"(\d+)g\.", profile["profile_name"]).group(1))
        memory_gb = mig_memory_gb(int(profile["memory_gib"] * 1024), total_mib)
        enum = _ME_PROFILE_ENUMS.get(profile["profile_id"], 0)
        assert gpu_instance_profile_name(enum, slices, memory_gb) == profile["profile_name"]
