# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""MIG profile names, whether a layout fits a GPU model, where its GPU instances go, and the
nvidia-smi steps that turn the layout a GPU holds into the desired one.

Standard library only: the controller (plugin_utils/rules/mig_config.py, the audit rules) and the
gpufleet.core.mig_layout module on GPU hosts (Python 3.9+) share this code.

Layouts are {profile: count} maps of MIG devices, where a MIG device is one compute instance:
"3g.40gb" is a GPU instance with one compute instance filling it, "1c.3g.40gb" a one-slice
compute instance inside a 3g.40gb GPU instance (several of those share a GPU instance, as
nvidia-mig-parted creates them).

mig_model (knowledge.mig_model on the controller, passed to the module as its profiles option):
{"model", "slices" (compute slices), "memory_slices", "profiles": {name: {"id", "compute_slices",
"memory_slices", "max_instances", "placements": [{"start", "size"}]}}}, placements in
memory-slice units.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import collections
import functools
import re

MAX_MIG_DEVICES = 64  # far above any GPU (7 or 8 compute slices); larger counts are not expanded
PROFILE_GRAMMAR = "[<C>c.]<G>g.<M>gb[+attr[,attr...]|-attr], e.g. 3g.40gb, 1c.3g.40gb, 1g.10gb+me, 1g.24gb-me"

_PROFILE = re.compile(r"^(?:(\d+)c\.)?(\d+)g\.(\d+)gb(?:([+-])(.*))?$")
_ATTRIBUTE = re.compile(r"^[A-Za-z](?:[A-Za-z0-9.]*[A-Za-z0-9])?$")


class MigConfigError(ValueError):
    """A config that nvidia-mig-parted would reject, a layout that does not fit, or a name that is not in it."""


# ---------------------------------------------------------------- profile names

Profile = collections.namedtuple("Profile", "compute gi_slices memory_gb sign attributes")


def parse_profile(name):
    """A MIG device profile name as a Profile, or None when it does not follow the grammar."""
    return _parsed_profile(name) if isinstance(name, str) else None


@functools.lru_cache(maxsize=4096)
def _parsed_profile(name):
    match = _PROFILE.match(name)
    if not match:
        return None
    compute, gi_slices, memory_gb, sign, attribute_text = match.groups()
    attributes = ()
    if sign:
        attributes = tuple(attribute_text.split(","))
        if len(set(attributes)) != len(attributes) or not all(_ATTRIBUTE.match(a) for a in attributes):
            return None
    gi_slices = int(gi_slices)
    compute = int(compute) if compute else gi_slices
    if compute < 1 or gi_slices < 1 or int(memory_gb) < 1 or compute > gi_slices:
        return None
    return Profile(compute, gi_slices, int(memory_gb), sign or "", tuple(sorted(attributes)))


def gpu_instance_name(profile):
    """'3g.40gb' for 1c.3g.40gb: the GPU instance profile a MIG device lives in."""
    suffix = profile.sign + ",".join(profile.attributes) if profile.sign else ""
    return "%dg.%dgb%s" % (profile.gi_slices, profile.memory_gb, suffix)


def profile_name(profile):
    """Canonical name: no '<C>c.' when the compute instance fills its GPU instance, sorted attributes."""
    if profile.compute == profile.gi_slices:
        return gpu_instance_name(profile)
    return "%dc.%s" % (profile.compute, gpu_instance_name(profile))


def canonical_profile_name(name):
    """The canonical spelling of a profile name; a name outside the grammar is returned unchanged."""
    profile = parse_profile(name)
    return profile_name(profile) if profile else name


# ---------------------------------------------------------------- feasibility and placement

GpuInstance = collections.namedtuple("GpuInstance", "profile compute_instances")


def gpu_instances_needed(devices):
    """The GPU instances a {profile: count} layout needs, as [GpuInstance(gi profile, [MIG devices])].

    Compute instances smaller than their GPU instance share GPU instances, packed by compute
    slices (largest first), as nvidia-mig-parted reuses a GPU instance while it has room.
    Raises MigConfigError for a name outside the profile grammar.
    """
    instances = []
    shared = collections.OrderedDict()
    for name, count in sorted(devices.items()):
        profile = parse_profile(name)
        if profile is None:
            raise MigConfigError("%r is not a MIG profile (expected %s)" % (name, PROFILE_GRAMMAR))
        if profile.compute == profile.gi_slices:
            instances.extend(GpuInstance(gpu_instance_name(profile), [profile_name(profile)]) for _i in range(count))
        else:
            shared.setdefault(profile.gi_slices, {}).setdefault(gpu_instance_name(profile), []).extend([profile] * count)
    for capacity, by_gi in shared.items():
        for gi_name, profiles in by_gi.items():
            instances.extend(_packed_gpu_instances(gi_name, capacity, profiles))
    return instances


def _packed_gpu_instances(gi_name, capacity, profiles):
    bins = []
    for profile in sorted(profiles, key=lambda p: -p.compute):
        for used, names in bins:
            if used[0] + profile.compute <= capacity:
                used[0] += profile.compute
                names.append(profile_name(profile))
                break
        else:
            bins.append(([profile.compute], [profile_name(profile)]))
    return [GpuInstance(gi_name, names) for _used, names in bins]


def check_feasible(devices, mig_model):
    """Why the {profile: count} layout cannot be created on this GPU model; [] when it fits.

    Checks, in order: each profile exists on the model, instance counts within max_instances,
    compute and memory slices within the GPU's, and a search for non-overlapping placements.
    Compute-instance placements inside a GPU instance are not modelled, only their slice sum.
    """
    model_name = mig_model.get("model") or "this GPU"
    total = sum(count for count in devices.values() if isinstance(count, int))
    if total > MAX_MIG_DEVICES:
        return ["the layout asks for %d MIG devices: %s holds at most %s" % (total, model_name, mig_model.get("slices"))]
    try:
        instances = gpu_instances_needed(devices)
    except MigConfigError as error:
        return [str(error)]
    profiles = _model_profiles(mig_model)
    reasons = _unknown_profile_reasons(instances, profiles, model_name)
    if reasons:
        return reasons
    reasons = _instance_count_reasons(devices, instances, profiles, model_name)
    reasons += _slice_total_reasons(instances, profiles, mig_model, model_name)
    if reasons:
        return reasons
    if _search_placements(instances, profiles, {}) is None:
        return ["no placement fits %s together on %s: their memory slices overlap in every arrangement"
                % (_describe(devices), model_name)]
    return []


def plan_layout(devices, mig_model, existing=None):
    """One placement for every GPU instance the layout needs, sorted by start.

    Returns [{"profile": gi profile, "placement": {"start", "size"}, "compute_instances":
    [MIG device profiles]}]. existing: GPU instances already on the GPU (facts
    gpus[].mig.gpu_instances, or [{"profile", "placement"}]); their placements are preferred, so
    a layout that already matches plans to itself. Raises MigConfigError when it cannot fit.
    """
    reasons = check_feasible(devices, mig_model)
    if reasons:
        raise MigConfigError("; ".join(reasons))
    instances = gpu_instances_needed(devices)
    placements = _search_placements(instances, _model_profiles(mig_model), _preferred_starts(existing))
    plan = [{"profile": instance.profile, "placement": dict(placement),
             "compute_instances": list(instance.compute_instances)}
            for instance, placement in zip(instances, placements)]
    return sorted(plan, key=lambda item: (item["placement"]["start"], item["profile"]))


def _model_profiles(mig_model):
    """{canonical gi profile name: profile entry} of a mig_model."""
    return dict((canonical_profile_name(name), entry) for name, entry in (mig_model.get("profiles") or {}).items())


def _unknown_profile_reasons(instances, profiles, model_name):
    unknown = sorted(set(instance.profile for instance in instances if instance.profile not in profiles))
    return ["%s is not a MIG profile of %s (it has %s)" % (name, model_name, ", ".join(sorted(profiles)))
            for name in unknown]


def _instance_count_reasons(devices, instances, profiles, model_name):
    reasons = []
    needed = collections.Counter(instance.profile for instance in instances)
    for gi_name in sorted(needed):
        allowed = profiles[gi_name].get("max_instances")
        if allowed is not None and needed[gi_name] > allowed:
            reasons.append("%s does not fit: %s allows at most %d %s GPU instance%s"
                           % (_describe(_devices_in(devices, gi_name)), model_name, allowed, gi_name,
                              "" if allowed == 1 else "s"))
    return reasons


def _devices_in(devices, gi_name):
    return dict((name, count) for name, count in devices.items()
                if count and gpu_instance_name(parse_profile(name)) == gi_name)


def _slice_total_reasons(instances, profiles, mig_model, model_name):
    reasons = []
    for key, label in (("compute_slices", "slices"), ("memory_slices", "memory_slices")):
        available = mig_model.get(label)
        needed = sum(profiles[instance.profile].get(key) or 0 for instance in instances)
        if available is not None and needed > available:
            reasons.append("the layout needs %d %s: %s has %d"
                           % (needed, key.replace("_", " "), model_name, available))
    return reasons


def _describe(devices):
    return ", ".join("%s x%d" % (name, count) for name, count in sorted(devices.items()) if count)


def _preferred_starts(existing):
    """{gi profile: [placement starts in use]} from existing GPU instances."""
    preferred = {}
    for instance in existing or []:
        name = canonical_profile_name(instance.get("profile") or instance.get("profile_name"))
        placement = instance.get("placement") or {}
        if name and placement.get("start") is not None:
            preferred.setdefault(name, []).append(placement["start"])
    return preferred


def _search_placements(instances, profiles, preferred):
    """Placements (aligned with instances) whose memory slices do not overlap, or None.

    Backtracking, largest GPU instances first; instances of one profile take placements in
    list order so that equal instances are not tried in every permutation.
    """
    order = sorted(range(len(instances)),
                   key=lambda i: (-_largest_size(profiles[instances[i].profile]), instances[i].profile))
    candidates = dict((name, _ordered_placements(profiles[name], preferred.get(name, [])))
                      for name in set(instance.profile for instance in instances))
    chosen = {}

    def place(position, used, floor_by_profile):
        if position == len(order):
            return True
        index = order[position]
        name = instances[index].profile
        options = candidates[name]
        for option in range(floor_by_profile.get(name, 0), len(options)):
            mask = _slice_mask(options[option])
            if used & mask:
                continue
            chosen[index] = options[option]
            floors = dict(floor_by_profile)
            floors[name] = option + 1
            if place(position + 1, used | mask, floors):
                return True
        return False

    if not place(0, 0, {}):
        return None
    return [chosen[index] for index in range(len(instances))]


def _largest_size(profile):
    return max([p.get("size") or 0 for p in placements_of(profile)] or [0])


def _ordered_placements(profile, preferred_starts):
    placements = placements_of(profile)
    return sorted(placements, key=lambda p: (p.get("start") not in preferred_starts, p.get("start")))


def placements_of(profile):
    """[{"start", "size"}] of a model profile; also accepts the data file's starts + size form."""
    if profile.get("placements") is not None:
        return list(profile["placements"])
    return [{"start": start, "size": profile.get("size")} for start in profile.get("starts") or []]


def _slice_mask(placement):
    return ((1 << placement["size"]) - 1) << placement["start"]


# ---------------------------------------------------------------- actual layout and drift

def actual_layout(gpu_fact):
    """The MIG layout of one gpus[] fact, counted as nvidia-mig-parted counts it.

    Returns {"mig_enabled": mode_current (bool or None), "mig_enabled_pending": mode_pending,
    "devices": {profile: count} of compute instances (canonical names, e.g. "1c.3g.40gb"),
    "empty_gpu_instances": {gi profile: count} of GPU instances without a compute instance}.
    Instances are counted only while MIG is enabled; an unnamed one counts as "unknown".
    """
    mig = gpu_fact.get("mig") or {}
    enabled = mig.get("mode_current")
    devices = collections.Counter()
    empty = collections.Counter()
    if enabled:
        for instance in mig.get("gpu_instances") or []:
            compute_instances = instance.get("compute_instances") or []
            if not compute_instances:
                empty[_counted_name(instance.get("profile_name"))] += 1
            for compute_instance in compute_instances:
                devices[_counted_name(compute_instance.get("profile_name"))] += 1
    return {"mig_enabled": enabled, "mig_enabled_pending": mig.get("mode_pending"),
            "devices": dict(devices), "empty_gpu_instances": dict(empty)}


def _counted_name(name):
    return canonical_profile_name(name) if name else "unknown"


def layout_diff(desired, actual):
    """None when the GPU holds the desired layout, else what differs.

    desired: one value of desired_layout; actual: actual_layout. Keys, present only when they
    apply: "mig_enabled": (want, have) comparing the current mode (as nvidia-mig-parted assert
    does); "devices": {profile: (want, have)} (with MIG off on either side its devices count as
    none); "pending": True with "mig_enabled_after_reset" when the GPU has a mode change waiting
    for a reset, whatever the desired layout; "empty_gpu_instances": {gi profile: count}.
    A GPU that cannot do MIG (mode None) matches a desired mig_enabled false.
    """
    diff = {}
    want, have = bool(desired["mig_enabled"]), actual.get("mig_enabled")
    if want != bool(have):
        diff["mig_enabled"] = (want, have)
    device_diff = _device_diff(desired["devices"] if want else {}, actual.get("devices") if have else {})
    if device_diff:
        diff["devices"] = device_diff
    pending = actual.get("mig_enabled_pending")
    if have is not None and pending is not None and pending != have:
        diff["pending"] = True
        diff["mig_enabled_after_reset"] = pending
    if have and actual.get("empty_gpu_instances"):
        diff["empty_gpu_instances"] = dict(actual["empty_gpu_instances"])
    return diff or None


def _device_diff(wanted, held):
    wanted = dict((canonical_profile_name(name), count) for name, count in (wanted or {}).items() if count)
    held = dict((name, count) for name, count in (held or {}).items() if count)
    return dict((name, (wanted.get(name, 0), held.get(name, 0)))
                for name in sorted(set(wanted) | set(held)) if wanted.get(name, 0) != held.get(name, 0))


# ---------------------------------------------------------------- nvidia-smi steps for one GPU (mig_layout module)

# Compute-instance profile ids by compute slices, as `nvidia-smi mig -lcip` lists them
# (NVML_COMPUTE_INSTANCE_PROFILE_<n>_SLICE).
CI_PROFILE_IDS = {1: 0, 2: 1, 3: 2, 4: 3, 7: 4, 8: 5, 6: 6}
NEW_GI = "<new GI at %d>"  # stands for the id of a GPU instance this plan creates at that placement start


def step(index, action, args, description, new_gi_start=None):
    """One nvidia-smi call of a plan: args without the program; new_gi_start: args hold NEW_GI for that GI."""
    return {"gpu": index, "action": action, "args": [str(arg) for arg in args], "description": description,
            "new_gi_start": new_gi_start}


def step_command(item, program="nvidia-smi"):
    """The step as one line of text, as a person would type it."""
    return " ".join([program] + item["args"])


def mode_steps(index, mode_current, mode_pending, want):
    """The nvidia-smi -mig call that makes MIG mode `want` ([] when nothing to set) and whether it needs a reset.

    A GPU reports mode_current (what it runs now) and mode_pending (what it runs after a reset):
    want == current: cancel a pending change, if any, without a reset; else set the pending mode
    (unless already pending) and the change waits for a reset.
    """
    steps = []
    if mode_pending != want:
        steps.append(step(index, "enable_mig" if want else "disable_mig", ["-i", index, "-mig", 1 if want else 0],
                          "%s MIG mode on GPU %d" % ("enable" if want else "disable", index)))
    return steps, mode_current != want


def reset_step(index):
    return step(index, "reset", ["-r", "-i", index], "reset GPU %d so that the pending MIG mode takes effect" % index)


def ci_profile_id(name):
    """nvidia-smi -cci profile id of a MIG device profile ('1c.3g.40gb' -> 0, '3g.40gb' -> 2)."""
    profile = parse_profile(name)
    if profile is None or profile.compute not in CI_PROFILE_IDS:
        raise MigConfigError("no compute instance profile id for %r" % (name,))
    return CI_PROFILE_IDS[profile.compute]


def _held_compute_instances(gpu_instance):
    return sorted(canonical_profile_name(ci.get("profile_name")) for ci in gpu_instance.get("compute_instances") or [])


def _gi_start(gpu_instance):
    return (gpu_instance.get("placement") or {}).get("start")


def _match_existing(target, existing):
    """{target position: existing GI} for GIs already at a planned profile and placement start."""
    matched = {}
    free = list(existing)
    for position, wanted in enumerate(target):
        for gi in free:
            if canonical_profile_name(gi.get("profile_name")) == wanted["profile"] and _gi_start(gi) == wanted["placement"]["start"]:
                matched[position] = gi
                free.remove(gi)
                break
    return matched


def _destroy_steps(index, gi, keep_gi):
    steps = []
    ci_ids = sorted(ci["id"] for ci in gi.get("compute_instances") or [])
    if ci_ids:
        steps.append(step(index, "destroy_ci", ["mig", "-dci", "-i", index, "-gi", gi["id"], "-ci", ",".join(map(str, ci_ids))],
                          "destroy compute instances %s of GPU instance %d (%s) on GPU %d"
                          % (",".join(map(str, ci_ids)), gi["id"], gi.get("profile_name"), index)))
    if not keep_gi:
        steps.append(step(index, "destroy_gi", ["mig", "-dgi", "-i", index, "-gi", gi["id"]],
                          "destroy GPU instance %d (%s at %s) on GPU %d"
                          % (gi["id"], gi.get("profile_name"), _gi_start(gi), index)))
    return steps


def _create_ci_step(index, gi_ref, compute_instances, description, new_gi_start=None):
    ids = ",".join(str(ci_profile_id(name)) for name in compute_instances)
    return step(index, "create_ci", ["mig", "-cci", ids, "-gi", gi_ref, "-i", index],
                "create %s in %s on GPU %d" % (", ".join(compute_instances), description, index), new_gi_start)


def _create_gi_steps(index, wanted, mig_model):
    profile_id = _model_profiles(mig_model)[wanted["profile"]]["id"]
    start = wanted["placement"]["start"]
    fills = wanted["compute_instances"] == [wanted["profile"]]
    args = ["mig", "-cgi", "%d:%d" % (profile_id, start), "-i", index] + (["-C"] if fills else [])
    steps = [step(index, "create_gi", args, "create GPU instance %s at placement %d%s on GPU %d"
                  % (wanted["profile"], start, " with its compute instance" if fills else "", index))]
    if not fills and wanted["compute_instances"]:
        steps.append(_create_ci_step(index, NEW_GI % start, wanted["compute_instances"],
                                     "the new %s GPU instance at %d" % (wanted["profile"], start), start))
    return steps


def instance_steps(index, gpu_instances, devices, mig_model):
    """Steps turning the GPU instances a MIG-enabled GPU holds into the {profile: count} layout.

    GPU instances already at a planned profile and placement are kept (and only their compute
    instances changed when those differ); the others are destroyed (compute instances first),
    then the missing ones are created at explicit placements. Raises MigConfigError when the
    layout does not fit the model.
    """
    target = plan_layout(devices, mig_model, existing=gpu_instances) if devices else []
    matched = _match_existing(target, gpu_instances)
    kept_ids = set(gi["id"] for gi in matched.values())
    destroy, create = [], []
    for gi in gpu_instances:
        if gi["id"] not in kept_ids:
            destroy.extend(_destroy_steps(index, gi, keep_gi=False))
    for position, wanted in enumerate(target):
        gi = matched.get(position)
        if gi is None:
            create.extend(_create_gi_steps(index, wanted, mig_model))
        elif _held_compute_instances(gi) != sorted(wanted["compute_instances"]):
            destroy.extend(_destroy_steps(index, gi, keep_gi=True))
            create.append(_create_ci_step(index, gi["id"], wanted["compute_instances"],
                                          "GPU instance %d (%s)" % (gi["id"], wanted["profile"])))
    return destroy + create


def layout_matches(desired, gpu):
    """True when the GPU holds the desired layout now (a pending mode change aside)."""
    diff = layout_diff(desired, actual_layout(gpu)) or {}
    return not any(key not in ("pending", "mig_enabled_after_reset") for key in diff)


def gpu_plan(gpu, desired, mig_model, reset_allowed):
    """What to run on one GPU: {"index", "steps", "pending_reset", "needs_reset"}.

    gpu: a gpus[] fact (index, mig.mode_current/mode_pending/gpu_instances); desired: {"mig_enabled",
    "devices"}. With MIG to switch on, the mode is set first, then (after a reset, when allowed)
    the instances planned on the then empty GPU; to switch it off, the instances go first. Without
    reset_allowed a mode change stops at the -mig call and pending_reset is true.
    """
    index = gpu["index"]
    mig = gpu.get("mig") or {}
    want = bool(desired["mig_enabled"])
    current, pending = mig.get("mode_current"), mig.get("mode_pending")
    if current is None:
        return {"index": index, "steps": [], "pending_reset": False, "needs_reset": False}
    steps = []
    if current and not want:
        steps.extend(instance_steps(index, mig.get("gpu_instances") or [], {}, mig_model))
    switch, needs_reset = mode_steps(index, current, pending, want)
    steps.extend(switch)
    if needs_reset and not reset_allowed:
        return {"index": index, "steps": steps, "pending_reset": True, "needs_reset": True}
    if needs_reset:
        steps.append(reset_step(index))
    if want:
        after_reset = dict(gpu, mig=dict(mig, mode_current=True, mode_pending=True,
                                         gpu_instances=[] if needs_reset else mig.get("gpu_instances") or []))
        if needs_reset or not layout_matches(desired, after_reset):
            steps.extend(instance_steps(index, after_reset["mig"]["gpu_instances"], desired["devices"], mig_model))
    return {"index": index, "steps": steps, "pending_reset": False, "needs_reset": needs_reset}


def feasibility_reasons(gpu, desired, mig_model):
    """Why the GPU cannot take the desired layout; [] when it can (checked before anything is changed)."""
    label = "GPU %s (%s)" % (gpu.get("index"), gpu.get("name") or "unknown model")
    if not desired["mig_enabled"]:
        return []
    if (gpu.get("mig") or {}).get("mode_current") is None:
        return ["%s does not support MIG" % label]
    if not desired["devices"]:
        return []
    if not mig_model or not mig_model.get("profiles"):
        return ["%s: no MIG profile table given for this model (profiles)" % label]
    return ["%s: %s" % (label, reason) for reason in check_feasible(desired["devices"], mig_model)]
