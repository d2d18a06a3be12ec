"""Brute-force MIG placement: the reference the MIG layout planner is checked against."""

import itertools

from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.mig_config import gpu_instances_needed


def exhaustive_fit(devices, mig_model):
    """Reference answer: try every combination of placements (small layouts only)."""
    instances = gpu_instances_needed(devices)
    profiles = mig_model["profiles"]
    if any(i.profile not in profiles for i in instances):
        return False
    if sum(profiles[i.profile]["compute_slices"] for i in instances) > mig_model["slices"]:
        return False
    if any(sum(1 for i in instances if i.profile == name) > profiles[name]["max_instances"] for name in profiles):
        return False
    for combination in itertools.product(*[profiles[i.profile]["placements"] for i in instances]):
        slices = [s for p in combination for s in range(p["start"], p["start"] + p["size"])]
        if len(slices) == len(set(slices)):
            return True
    return False
