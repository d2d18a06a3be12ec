"""Parses `nvidia-smi mig -lgip` (GPU instance profiles): the tests compare the simulator and the
knowledge tables with it. Nothing on a target reads -lgip, so it is not shipped in module_utils."""

import re

from ansible_collections.gpufleet.core.plugins.module_utils.nvsmi_mig import _table_rows, profile_name

# | GPU  Name  ID  Free/Total  Memory-GiB  P2P  SM  DEC  ENC |
_LGIP_ROW = re.compile(
    r"^\|\s*(\d+)\s+([^\d\s].*?)\s+(\d+)\*?\s+(\d+)/(\d+)\s+(\d+(?:\.\d+)?)\s+(\S+)\s+(\d+)\s+(\d+)\s+(\d+)\s*\|\s*$")
# |  CE  JPEG  OFA |   (second line of an -lgip row)
_LGIP_CONTINUATION = re.compile(r"^\|\s+(\d+)\s+(\d+)\s+(\d+)\s*\|\s*$")


def parse_lgip(text):
    """GPU instance profiles: [{gpu, profile_id, profile_name, instances_free, instances_total,
    memory_gib, p2p, sm, dec, enc, ce, jpeg, ofa}]; ce/jpeg/ofa are None when the second line is missing."""
    profiles = []
    for line in _table_rows(text):
        match = _LGIP_ROW.match(line)
        if match:
            gpu, name, profile_id, free, total, memory, p2p, sm, dec, enc = match.groups()
            profiles.append({
                "gpu": int(gpu), "profile_id": int(profile_id), "profile_name": profile_name(name),
                "instances_free": int(free), "instances_total": int(total), "memory_gib": float(memory),
                "p2p": {"yes": True, "no": False}.get(p2p.lower()),
                "sm": int(sm), "dec": int(dec), "enc": int(enc), "ce": None, "jpeg": None, "ofa": None,
            })
            continue
        match = _LGIP_CONTINUATION.match(line)
        if match and profiles and profiles[-1]["ce"] is None:
            profiles[-1]["ce"], profiles[-1]["jpeg"], profiles[-1]["ofa"] = [int(v) for v in match.groups()]
    return profiles
