"""nvidia-smi mig -lgi / -lci / -lgip tables: own samples, and the real listings of the public corpus (marked corpus)."""

import re

import pytest

from ansible_collections.gpufleet.core.plugins.module_utils.facts_model import new_facts, new_gpu
from ansible_collections.gpufleet.core.plugins.module_utils.host_io import ReplayHost
from ansible_collections.gpufleet.core.plugins.module_utils.nvsmi_mig import (
    collect_mig_layout, parse_lci, parse_lgi, profile_name)
from tests.support.nvsmi_lgip import parse_lgip
from tests.support.corpus import read_realdata
from tests.support.schema_check import assert_valid_facts

H100_LGIP = "nvsmi-mig-lgip_4xh100-sxm5-80gb_stackhpc.txt"
A30_LGIP = "nvsmi-mig-lgip_a30-24gb_535.183.01_unresolved-repo.txt"
A30_SESSION = "nvsmi-mig-session_a30_lgipp-lgi-L-table-lcip_535.183.01_unresolved-repo.txt"


def read(name):
    return read_realdata(name)


def session_outputs(command):
    """Outputs of one command in the A30 session transcript, in order ('$ cmd' starts each)."""
    blocks = re.split(r"^\$ ", read(A30_SESSION), flags=re.MULTILINE)
    outputs = []
    for block in blocks:
        first, _newline, rest = block.partition("\n")
        if first.replace("sudo ", "").strip() == command:
            outputs.append(rest)
    return outputs


# ---------------------------------------------------------------- own samples (real table style)

LGI_TWO_GPUS = """+-------------------------------------------------------+
| GPU instances:                                        |
| GPU   Name             Profile  Instance   Placement  |
|                          ID       ID       Start:Size |
|=======================================================|
|   0  MIG 7g.80gb         0        0          0:8     |
+-------------------------------------------------------+
|   1  MIG 3g.40gb         9        2          4:4     |
+-------------------------------------------------------+
|   1  MIG 1g.10gb+me     20       13          6:1     |
+-------------------------------------------------------+
"""

LCI_TWO_GPUS = """+--------------------------------------------------------------------+
| Compute instances:                                                 |
| GPU     GPU       Name             Profile   Instance   Placement    |
|       Instance                       ID        ID       Start:Size   |
|         ID                                                           |
|====================================================================|
|   0      0       MIG 3c.7g.80gb       2         0          0:3      |
+--------------------------------------------------------------------+
|   0      0       MIG 3c.7g.80gb       2         1          4:3      |
+--------------------------------------------------------------------+
|   1      2       MIG 3g.40gb          2         0          0:3      |
+--------------------------------------------------------------------+
"""


def test_parse_lgi_sample():
    assert parse_lgi(LGI_TWO_GPUS) == [
        {"gpu": 0, "id": 0, "profile_id": 0, "profile_name": "7g.80gb", "placement": {"start": 0, "size": 8}},
        {"gpu": 1, "id": 2, "profile_id": 9, "profile_name": "3g.40gb", "placement": {"start": 4, "size": 4}},
        {"gpu": 1, "id": 13, "profile_id": 20, "profile_name": "1g.10gb+me", "placement": {"start": 6, "size": 1}},
    ]


def test_parse_lci_sample():
    assert parse_lci(LCI_TWO_GPUS) == [
        {"gpu": 0, "gpu_instance_id": 0, "id": 0, "profile_id": 2, "profile_name": "3c.7g.80gb",
         "placement": {"start": 0, "size": 3}},
        {"gpu": 0, "gpu_instance_id": 0, "id": 1, "profile_id": 2, "profile_name": "3c.7g.80gb",
         "placement": {"start": 4, "size": 3}},
        {"gpu": 1, "gpu_instance_id": 2, "id": 0, "profile_id": 2, "profile_name": "3g.40gb",
         "placement": {"start": 0, "size": 3}},
    ]


def test_tables_are_not_mistaken_for_each_other():
    assert parse_lgi(LCI_TWO_GPUS) == []
    assert parse_lci(LGI_TWO_GPUS) == []
    assert parse_lgip(LGI_TWO_GPUS) == []


@pytest.mark.parametrize("text", ["", None, "No GPU instances found: Not Found\n", "garbage | 1 2 |"])
def test_nothing_listed(text):
    assert parse_lgi(text) == [] and parse_lci(text) == [] and parse_lgip(text) == []


def test_profile_name_drops_the_mig_prefix():
    assert profile_name("MIG 1g.10gb+me") == "1g.10gb+me"
    assert profile_name("2g.20gb") == "2g.20gb"


# ---------------------------------------------------------------- real listings

@pytest.mark.corpus
def test_h100_lgip():
    profiles = parse_lgip(read(H100_LGIP))
    assert len(profiles) == 28
    assert sorted(set(p["gpu"] for p in profiles)) == [0, 1, 2, 3]
    assert profiles[0] == {"gpu": 0, "profile_id": 19, "profile_name": "1g.10gb", "instances_free": 7,
                           "instances_total": 7, "memory_gib": 9.75, "p2p": False, "sm": 16, "dec": 1, "enc": 0,
                           "ce": 1, "jpeg": 1, "ofa": 0}
    seven = [p for p in profiles if p["gpu"] == 0 and p["profile_name"] == "7g.80gb"][0]
    assert (seven["profile_id"], seven["memory_gib"], seven["sm"], seven["ce"], seven["jpeg"], seven["ofa"]) == (
        0, 79.25, 132, 8, 7, 1)
    assert [p["profile_id"] for p in profiles if p["gpu"] == 3] == [19, 20, 15, 14, 9, 5, 0]


@pytest.mark.corpus
def test_a30_lgip():
    profiles = parse_lgip(read(A30_LGIP))
    assert [(p["profile_name"], p["profile_id"], p["instances_total"], p["memory_gib"]) for p in profiles] == [
        ("1g.6gb", 14, 4, 5.81), ("1g.6gb+me", 21, 1, 5.81), ("2g.12gb", 5, 2, 11.69),
        ("2g.12gb+me", 6, 1, 11.69), ("4g.24gb", 0, 1, 23.44)]
    assert (profiles[-1]["ce"], profiles[-1]["jpeg"], profiles[-1]["ofa"]) == (4, 1, 1)


@pytest.mark.corpus
def test_a30_session_lgi_listings():
    outputs = session_outputs("nvidia-smi mig -lgi")
    assert len(outputs) == 4
    assert outputs[0].strip() == "No GPU instances found: Not Found"
    assert [[(gi["id"], gi["profile_id"], gi["profile_name"], gi["placement"]["start"], gi["placement"]["size"])
             for gi in parse_lgi(text)] for text in outputs] == [
        [],
        [(3, 14, "1g.6gb", 0, 1)],
        [(3, 14, "1g.6gb", 0, 1), (4, 14, "1g.6gb", 1, 1)],
        [(3, 14, "1g.6gb", 0, 1), (4, 14, "1g.6gb", 1, 1), (2, 5, "2g.12gb", 2, 2)],
    ]


@pytest.mark.corpus
def test_a30_session_other_tables_are_not_instances():
    for command in ("nvidia-smi mig -lcip -gi 2", "nvidia-smi mig -lcip -gi 3", "nvidia-smi"):
        (text,) = session_outputs(command)
        assert parse_lgi(text) == [] and parse_lci(text) == [] and parse_lgip(text) == []


# ---------------------------------------------------------------- collect_mig_layout

def facts_with_gpus(count, mig=True):
    facts = new_facts()
    facts["collected_at"] = "2026-01-01T00:00:00Z"
    for index in range(count):
        gpu = new_gpu(index)
        gpu["pci_bus_id"] = "0000:%02x:00.0" % (0x18 + index)
        gpu["mig"]["mode_current"] = mig
        facts["gpus"].append(gpu)
    return facts


def host(lgi=None, lci=None, bins=True):
    commands = {}
    if lgi is not None:
        commands["nvidia-smi mig -lgi"] = lgi
    if lci is not None:
        commands["nvidia-smi mig -lci"] = lci
    return ReplayHost({"bins": {"nvidia-smi": "/usr/bin/nvidia-smi"} if bins else {}, "commands": commands})


def test_collect_layout_for_two_gpus():
    facts = facts_with_gpus(2)
    memory = {"0000:19:00.0": {2: 40192}}
    ok = collect_mig_layout(host({"rc": 0, "stdout": LGI_TWO_GPUS}, {"rc": 0, "stdout": LCI_TWO_GPUS}),
                            facts, 5, gi_memory_mib=memory)
    assert ok is True and facts["errors"] == []
    first, second = facts["gpus"][0]["mig"]["gpu_instances"], facts["gpus"][1]["mig"]["gpu_instances"]
    assert [(gi["id"], gi["memory_mib"], [ci["id"] for ci in gi["compute_instances"]]) for gi in first] == [
        (0, None, [0, 1])]
    assert [(gi["id"], gi["profile_name"], gi["memory_mib"], len(gi["compute_instances"])) for gi in second] == [
        (2, "3g.40gb", 40192, 1), (13, "1g.10gb+me", None, 0)]
    assert_valid_facts(facts)


def test_collect_layout_is_not_duplicated_on_a_second_run():
    facts = facts_with_gpus(2)
    for _run in range(2):
        collect_mig_layout(host({"rc": 0, "stdout": LGI_TWO_GPUS}, {"rc": 0, "stdout": LCI_TWO_GPUS}), facts, 5)
    assert [len(g["mig"]["gpu_instances"]) for g in facts["gpus"]] == [1, 2]


@pytest.mark.corpus
def test_collect_with_real_a30_listing_and_no_compute_instances():
    facts = facts_with_gpus(1)
    lgi = session_outputs("nvidia-smi mig -lgi")[-1]
    ok = collect_mig_layout(host({"rc": 0, "stdout": lgi},
                                 {"rc": 6, "stdout": "No compute instances found: Not Found\n"}), facts, 5)
    assert ok is True and facts["errors"] == []
    assert [(gi["id"], gi["compute_instances"]) for gi in facts["gpus"][0]["mig"]["gpu_instances"]] == [
        (3, []), (4, []), (2, [])]
    assert_valid_facts(facts)


def test_no_gpu_instances_is_an_empty_layout():
    facts = facts_with_gpus(1)
    text = "No GPU instances found: Not Found\n"
    assert collect_mig_layout(host({"rc": 6, "stdout": text}), facts, 5) is True
    assert facts["errors"] == [] and facts["gpus"][0]["mig"]["gpu_instances"] == []


@pytest.mark.parametrize("lgi, reason, code", [
    ({"rc": None, "timed_out": True}, "killed", None),
    ({"rc": 4, "stdout": "Unable to list GPU instances: Insufficient Permissions\n"}, "Insufficient Permissions", 4),
])
def test_listing_failures(lgi, reason, code):
    facts = facts_with_gpus(1)
    assert collect_mig_layout(host(lgi), facts, 5) is False
    assert len(facts["errors"]) == 1 and reason in facts["errors"][0]["reason"]
    assert facts["errors"][0]["code"] == code
    assert_valid_facts(facts)


def test_unrecognised_listing_is_reported():
    facts = facts_with_gpus(1)
    assert collect_mig_layout(host({"rc": 0, "stdout": "something new\n"}), facts, 5) is True
    assert "unrecognised output: something new" in facts["errors"][0]["reason"]


def test_instance_on_unknown_gpu_is_reported():
    facts = facts_with_gpus(1)
    collect_mig_layout(host({"rc": 0, "stdout": LGI_TWO_GPUS}, {"rc": 0, "stdout": LCI_TWO_GPUS}), facts, 5)
    assert [(e["gpu"], e["call"]) for e in facts["errors"]] == [(1, "nvidia-smi mig -lgi"), (1, "nvidia-smi mig -lgi")]
    assert len(facts["gpus"][0]["mig"]["gpu_instances"]) == 1


def test_missing_nvidia_smi():
    facts = facts_with_gpus(1)
    assert collect_mig_layout(host(bins=False), facts, 5) is False
    assert facts["errors"][0]["reason"] == "nvidia-smi not found"
