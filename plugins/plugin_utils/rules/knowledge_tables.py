# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The tables behind Knowledge (knowledge.py): the data files in ./data, read and checked once per process,
the policy's catalogs overrides merged into them, and the version and product-name helpers both use."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import functools
import os
import re

import yaml

from ansible_collections.gpufleet.core.plugins.module_utils.vocabulary import FIX_ROLES, LAYERS, SEVERITIES

DATA_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
TABLES = ("cuda_min_driver", "xid", "mig_profiles", "gpu_driver_support")

_VERSION_RE = re.compile(r"^\s*[vVrR]?(\d+(?:\.\d+)*)\s*$")
_PROFILE_NAME_RE = re.compile(r"^\d+g\.\d+gb([+-][a-z]+(\.[a-z]+)*)*$")
_NAME_PREFIXES = ("NVIDIA ", "TESLA ")
_ARCH_ALIASES = {"ada lovelace": "ada", "lovelace": "ada"}

_XID_KEYS = frozenset(("name", "mnemonic", "layer", "severity", "action", "fix", "secondary", "follows",
                       "gpu_lost", "application_error",
                       "follows_any", "bucket", "current", "basis", "description", "note", "departure"))
_XID_REQUIRED = ("name", "layer", "severity", "action")
_GPU_MODEL_KEYS = frozenset(("names", "architecture", "first_branch", "gpus_per_node", "pci_device_ids",
                             "mig_min_driver", "requires_open_modules", "unverified", "assumed", "note"))
_ARCH_KEYS = frozenset(("compute_capability", "first_branch", "last_branch", "last_cuda", "unverified",
                        "assumed", "note"))
_MIG_MODEL_KEYS = frozenset(("names", "pci_device_ids", "compute_slices", "memory_slices", "min_driver",
                             "placements_checked", "assumed", "note", "profiles"))
_MIG_PROFILE_KEYS = frozenset(("id", "compute_slices", "memory_slices", "max_instances", "starts", "size",
                               "placements", "since_branch", "note"))


# ---------------------------------------------------------------- versions

def parse_version(version):
    """'550.90.07' -> (550, 90, 7); 'R580' -> (580,); None for anything that is not a version."""
    if isinstance(version, bool) or version is None:
        return None
    if isinstance(version, int):
        return (version,) if version >= 0 else None
    return _parse_version_text(str(version))


@functools.lru_cache(maxsize=1024)
def _parse_version_text(text):
    """parse_version of a text, remembered: a fleet compares the same few driver and toolkit versions for
    every host (the rules call this tens of thousands of times at 10,000 hosts)."""
    match = _VERSION_RE.match(text)
    if not match:
        return None
    return tuple(int(part) for part in match.group(1).split("."))


def compare_versions(a, b):
    """-1, 0 or 1, comparing part by part as numbers (550.100.01 > 550.90.07; 570.26 == 570.26.0)."""
    left, right = parse_version(a), parse_version(b)
    if left is None or right is None:
        raise ValueError("not a version: %r" % (a if left is None else b))
    width = max(len(left), len(right))
    left += (0,) * (width - len(left))
    right += (0,) * (width - len(right))
    return (left > right) - (left < right)


def driver_branch(version):
    """'550.90.07' -> '550' (also 'R550' -> '550'); None when it is not a version."""
    parsed = parse_version(version)
    return str(parsed[0]) if parsed else None


def branch_number(version):
    parsed = parse_version(version)
    return parsed[0] if parsed else None


def toolkit_key(version):
    """CUDA toolkit version -> (major, minor, patch or None); also takes NVML's 12040 form."""
    if isinstance(version, int) and not isinstance(version, bool) and version >= 1000:
        return (version // 1000, (version % 1000) // 10, None)
    parsed = parse_version(version)
    if not parsed or len(parsed) < 2:
        return None
    return (parsed[0], parsed[1], parsed[2] if len(parsed) > 2 else None)


def cuda_major(version):
    """12, "12", "12.4.1" and 12040 (NVML form) -> 12; None when it is not a version."""
    if isinstance(version, int) and not isinstance(version, bool) and version >= 1000:
        return version // 1000
    parsed = parse_version(version)
    return parsed[0] if parsed else None


# ---------------------------------------------------------------- names

def normalize_product_name(name):
    """'NVIDIA  A100-SXM4-80GB' -> 'A100-SXM4-80GB'; 'Tesla T4' -> 'T4' (upper case, single spaces)."""
    text = " ".join(str(name or "").upper().split())
    for prefix in _NAME_PREFIXES:
        if text.startswith(prefix):
            text = text[len(prefix):]
    return text


def normalize_architecture(architecture):
    """'Ada Lovelace' -> 'ada', 'Hopper + Grace' -> 'hopper', 'hopper' -> 'hopper'; None stays None."""
    text = " ".join(str(architecture or "").lower().split())
    if not text or text in ("n/a", "unknown"):
        return None
    return _ARCH_ALIASES.get(text, text.split()[0])


def _compile_names(patterns, where):
    try:
        return re.compile("|".join("(?:%s)" % pattern for pattern in patterns), re.IGNORECASE)
    except re.error as exc:
        raise ValueError("%s: bad name pattern: %s" % (where, exc))


# ---------------------------------------------------------------- shipped data

def _read_data(filename):
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    with open(os.path.join(DATA_DIR, filename)) as handle:
        return yaml.load(handle, Loader=loader)


@functools.lru_cache(maxsize=1)
def shipped_tables():
    """The data files, read once per process, in the shape Knowledge works with."""
    cuda = _read_data("cuda_driver.yml")
    support = _read_data("gpu_driver_support.yml")
    xids = _read_data("xid_catalog.yml")
    mig = _read_data("mig_profiles.yml")
    hardware = _read_data("gpu_hardware.yml")
    architectures = {name: _arch_entry(name, entry, "gpu_driver_support.architectures.%s" % name)
                     for name, entry in support["architectures"].items()}
    return {
        "cuda_releases": _cuda_releases(cuda),
        "cuda_compat": {int(major): entry["min_driver"] for major, entry in cuda["minor_version_compatibility"].items()},
        "architectures": architectures,
        "architecture_by_name": [(arch, _compile_names([pattern], "gpu_driver_support.architecture_by_name"))
                                 for arch, pattern in support["architecture_by_name"]],
        "gpu_models": {name: _gpu_model_entry(name, entry, "gpu_driver_support.models.%s" % name, architectures)
                       for name, entry in support["models"].items()},
        "xid_actions": dict(xids["actions"]),
        "xid_buckets": _xid_buckets(xids["buckets"]),
        "xid_sources": dict(xids["sources"]),
        "xids": {int(number): _xid_entry(int(number), entry, xids["actions"], "xid.%s" % number)
                 for number, entry in xids["xids"].items()},
        "mig_models": {name: _mig_model_entry(name, entry, "mig_profiles.%s" % name)
                       for name, entry in mig["models"].items()},
        "baseboard_names": _compile_search(hardware["baseboards"]["name_patterns"], "gpu_hardware.baseboards"),
        "nvswitch_gpu_count": hardware["baseboards"]["nvswitch_gpu_count"],
        "clock_event_severity": _severities(hardware["clock_event_severity"], "gpu_hardware.clock_event_severity"),
    }


def _compile_search(patterns, where):
    """One pattern that searches (not full-matches) the product name as reported, ignoring case."""
    try:
        return re.compile("|".join(patterns), re.IGNORECASE)
    except re.error as exc:
        raise ValueError("%s: bad name pattern: %s" % (where, exc))


def _severities(table, where):
    for name, severity in table.items():
        if severity not in SEVERITIES:
            fail("%s.%s" % (where, name), "must be one of %s, got %r" % (", ".join(SEVERITIES), severity))
    return dict(table)


def _cuda_releases(cuda):
    """{(major, minor): [(patch, {"min_driver", "ga"}), ...] by patch}; a row without a patch sorts first."""
    releases = {}
    for version, entry in cuda["releases"].items():
        major, minor, patch = toolkit_key(version)
        row = {"min_driver": entry.get("min_driver"), "ga": entry.get("release", "").endswith(" GA")}
        releases.setdefault((major, minor), []).append((-1 if patch is None else patch, row))
    for rows in releases.values():
        rows.sort(key=lambda item: item[0])
    return releases


# ---------------------------------------------------------------- entry builders (shared by data and overrides)

def fail(where, message):
    raise ValueError("%s: %s" % (where, message))


def _mapping(value, where, what):
    """The overrides' mapping (None counts as empty); anything else is an error naming `where`."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        fail(where, "must be a mapping of %s, got %s" % (what, type(value).__name__))
    return value


def _check_keys(entry, allowed, where):
    if not isinstance(entry, dict):
        fail(where, "must be a mapping, got %s" % type(entry).__name__)
    unknown = sorted(set(entry) - allowed)
    if unknown:
        fail(where, "unknown key %r (allowed: %s)" % (unknown[0], ", ".join(sorted(allowed))))


def _branch_value(value, where, key):
    if value is None:
        return None
    number = branch_number(value)
    if number is None:
        fail(where, "%s must be a driver branch such as \"550\", got %r" % (key, value))
    return str(number)


def _arch_entry(name, entry, where):
    _check_keys(entry, _ARCH_KEYS, where)
    result = dict(entry)
    result["name"] = name
    result["compute_capability"] = [str(cc) for cc in entry.get("compute_capability") or []]
    result["first_branch"] = _branch_value(entry.get("first_branch"), where, "first_branch")
    result["last_branch"] = _branch_value(entry.get("last_branch"), where, "last_branch")
    return result


def _check_names(entry, where):
    names = entry.get("names")
    if not isinstance(names, list) or not names or not all(isinstance(n, str) and n for n in names):
        fail(where, "names must be a non-empty list of product-name patterns")
    return names


def _gpu_model_entry(name, entry, where, architectures):
    _check_keys(entry, _GPU_MODEL_KEYS, where)
    names = _check_names(entry, where)
    architecture = normalize_architecture(entry.get("architecture"))
    if architecture not in architectures:
        fail(where, "architecture must be one of %s, got %r"
             % (", ".join(sorted(architectures)), entry.get("architecture")))
    count = entry.get("gpus_per_node")
    if count is not None and (isinstance(count, bool) or not isinstance(count, int) or count < 1):
        fail(where, "gpus_per_node must be a positive integer or null, got %r" % (count,))
    model = {k: v for k, v in entry.items() if k != "names"}
    model.update(model=name, names=list(names), architecture=architecture, gpus_per_node=count,
                 first_branch=_branch_value(entry.get("first_branch"), where, "first_branch"))
    return model, _compile_names(names, where), dict(entry)


def _xid_buckets(buckets):
    """NVIDIA's resolution buckets -> {"severity", "layer" (None: the bucket names no layer)}."""
    result = {}
    for name, entry in buckets.items():
        where = "xid_catalog.buckets.%s" % name
        _check_keys(entry, frozenset(("severity", "layer")), where)
        if entry.get("severity") not in SEVERITIES:
            fail(where, "severity must be one of %s, got %r" % (", ".join(SEVERITIES), entry.get("severity")))
        if entry.get("layer") is not None and entry["layer"] not in LAYERS:
            fail(where, "layer must be null or one of %s, got %r" % (", ".join(LAYERS), entry["layer"]))
        result[name] = {"severity": entry["severity"], "layer": entry.get("layer")}
    return result


def _xid_entry(number, entry, actions, where):
    _check_keys(entry, _XID_KEYS, where)
    for key in _XID_REQUIRED:
        if not entry.get(key):
            fail(where, "%s is required" % key)
    if entry["layer"] not in LAYERS:
        fail(where, "layer must be one of %s, got %r" % (", ".join(LAYERS), entry["layer"]))
    if entry["severity"] not in SEVERITIES:
        fail(where, "severity must be one of %s, got %r" % (", ".join(SEVERITIES), entry["severity"]))
    if entry.get("fix") is not None and entry["fix"] not in FIX_ROLES:
        fail(where, "fix must be null or one of %s, got %r" % (", ".join(FIX_ROLES), entry["fix"]))
    if not isinstance(entry["action"], str):
        fail(where, "action must be text or one of the action keys")
    follows = entry.get("follows") or []
    if not isinstance(follows, list) or not all(xid_number(f) is not None for f in follows):
        fail(where, "follows must be a list of Xid numbers, got %r" % (follows,))
    for flag in ("secondary", "follows_any", "current", "gpu_lost", "application_error"):
        if flag in entry and not isinstance(entry[flag], bool):
            fail(where, "%s must be true or false, got %r" % (flag, entry[flag]))
    result = {
        "xid": number,
        "name": entry["name"],
        "layer": entry["layer"],
        "severity": entry["severity"],
        "action": actions.get(entry["action"], entry["action"]),
        "fix": entry.get("fix"),
        "secondary": bool(entry.get("secondary", False)),
        "follows": [xid_number(f) for f in follows],
        "follows_any": bool(entry.get("follows_any", False)),
        "gpu_lost": bool(entry.get("gpu_lost", False)),
        "application_error": bool(entry.get("application_error", False)),
        "description": entry.get("description") or entry["name"],
    }
    for key in ("mnemonic", "bucket", "basis", "note", "departure"):
        if entry.get(key) is not None:
            result[key] = entry[key]
    result["current"] = entry.get("current", True)
    result["_source"] = dict(entry)
    return result


def xid_number(value):
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if value > 0 else None
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return None


def _placements_of(profile, where):
    if "placements" in profile:
        placements = profile["placements"]
        if not isinstance(placements, list) or not all(
                isinstance(p, dict) and set(p) == {"start", "size"} for p in placements):
            fail(where, "placements must be a list of {start, size}")
        return [{"start": p["start"], "size": p["size"]} for p in placements]
    starts, size = profile.get("starts"), profile.get("size")
    if not isinstance(starts, list) or size is None:
        fail(where, "needs placements ([{start, size}]) or starts and size")
    return [{"start": start, "size": size} for start in starts]


def _mig_profile_entry(name, profile, memory_slices, compute_slices, where):
    _check_keys(profile, _MIG_PROFILE_KEYS, where)
    if not _PROFILE_NAME_RE.match(name):
        fail(where, "not a MIG profile name like 3g.40gb or 1g.10gb+me")
    for key in ("id", "compute_slices", "memory_slices", "max_instances"):
        value = profile.get(key)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            fail(where, "%s must be a non-negative integer, got %r" % (key, value))
    if profile["compute_slices"] > compute_slices:
        fail(where, "compute_slices %d exceeds the model's %d" % (profile["compute_slices"], compute_slices))
    placements = _placements_of(profile, where)
    for placement in placements:
        start, size = placement["start"], placement["size"]
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in (start, size)) or size < 1 \
                or start < 0 or start + size > memory_slices:
            fail(where, "placement %r does not fit %d memory slices" % (placement, memory_slices))
    result = {"id": profile["id"], "compute_slices": profile["compute_slices"],
              "memory_slices": profile["memory_slices"], "max_instances": profile["max_instances"],
              "placements": placements}
    if profile.get("since_branch") is not None:
        result["since_branch"] = _branch_value(profile["since_branch"], where, "since_branch")
    return result


def _mig_model_entry(name, entry, where):
    _check_keys(entry, _MIG_MODEL_KEYS, where)
    names = _check_names(entry, where)
    for key in ("compute_slices", "memory_slices"):
        value = entry.get(key)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            fail(where, "%s must be a positive integer, got %r" % (key, value))
    profiles = entry.get("profiles")
    if not isinstance(profiles, dict) or not profiles:
        fail(where, "profiles must be a non-empty mapping of profile name -> profile")
    model = {
        "model": name,
        "names": list(names),
        "pci_device_ids": list(entry.get("pci_device_ids") or []),
        "slices": entry["compute_slices"],
        "compute_slices": entry["compute_slices"],
        "memory_slices": entry["memory_slices"],
        "min_driver": entry.get("min_driver"),
        "placements_verified": "assumed" not in entry,
        "profiles": {pname: _mig_profile_entry(pname, profile, entry["memory_slices"], entry["compute_slices"],
                                               "%s.profiles.%s" % (where, pname))
                     for pname, profile in profiles.items()},
    }
    for key in ("assumed", "placements_checked", "note"):
        if entry.get(key) is not None:
            model[key] = entry[key]
    return model, _compile_names(names, where), dict(entry)


# ---------------------------------------------------------------- overrides

def _apply_cuda_overrides(overrides):
    where = "catalogs.cuda_min_driver"
    result = {}
    for version, driver in _mapping(overrides, where, "CUDA version -> minimum driver").items():
        key = toolkit_key(str(version))
        if key is None:
            fail("%s[%r]" % (where, version), "not a CUDA toolkit version like \"12.4\" or \"12.4.1\"")
        if driver is not None and (parse_version(driver) is None or len(parse_version(driver)) < 2):
            fail("%s[%r]" % (where, version), "must be a driver version like \"550.54.14\" or null, got %r" % (driver,))
        result[key] = None if driver is None else str(driver)
    return result


def _apply_xid_overrides(base, actions, overrides):
    where = "catalogs.xid"
    xids = dict(base)
    for number, change in _mapping(overrides, where, "Xid number -> entry").items():
        xid = xid_number(number)
        item = "%s[%r]" % (where, number)
        if xid is None:
            fail(item, "not an Xid number")
        if change is None:
            xids.pop(xid, None)
            continue
        _check_keys(change, _XID_KEYS, item)
        merged = dict(xids[xid]["_source"]) if xid in xids else {}
        merged.update(change)
        xids[xid] = _xid_entry(xid, merged, actions, item)
        xids[xid]["_overridden"] = frozenset(change)
    return xids


def _apply_gpu_support_overrides(architectures, models, overrides):
    where = "catalogs.gpu_driver_support"
    _check_keys(overrides, frozenset(("models", "architectures")), where)
    architectures = dict(architectures)
    for name, change in _mapping(overrides.get("architectures"), where + ".architectures",
                                 "architecture -> entry").items():
        item = "%s.architectures[%r]" % (where, name)
        arch = normalize_architecture(name)
        if arch is None:
            fail(item, "not an architecture name")
        merged = {k: v for k, v in architectures.get(arch, {}).items() if k != "name"}
        _check_keys(change, _ARCH_KEYS, item)
        merged.update(change)
        architectures[arch] = _arch_entry(arch, merged, item)

    def build(name, merged, change, item):
        merged.update(change)
        return _gpu_model_entry(name, merged, item, architectures)
    changes = _mapping(overrides.get("models"), where + ".models", "model name -> entry")
    return architectures, _merge_models(models, changes, where + ".models", _GPU_MODEL_KEYS, build)


def _merge_models(models, changes, where, keys, build):
    """The models with the overrides' changes: null removes a model; a change is merged into the model's source
    by build(name, merged source, change, where) -> entry. Models a user adds are matched before the shipped ones."""
    kept = dict(models)
    added = {}
    for name, change in changes.items():
        item = "%s[%r]" % (where, name)
        if change is None:
            kept.pop(name, None)
            continue
        _check_keys(change, keys, item)
        entry = build(name, dict(kept[name][2]) if name in kept else {}, change, item)
        if name in kept:
            kept[name] = entry
        else:
            added[name] = entry
    added.update(kept)
    return added


def _apply_mig_overrides(models, overrides):
    where = "catalogs.mig_profiles"

    def build(name, merged, change, item):
        profiles = dict(merged.get("profiles") or {})
        for pname, profile in _mapping(change.get("profiles"), item + ".profiles", "profile name -> profile").items():
            if profile is None:
                profiles.pop(pname, None)
            else:
                _check_keys(profile, _MIG_PROFILE_KEYS, "%s.profiles.%s" % (item, pname))
                profiles[pname] = dict(profiles.get(pname) or {}, **profile)
        merged.update({k: v for k, v in change.items() if k != "profiles"})
        merged["profiles"] = profiles
        return _mig_model_entry(name, merged, item)
    return _merge_models(models, _mapping(overrides, where, "model name -> model"), where, _MIG_MODEL_KEYS, build)


def apply_overrides(tables, overrides):
    """The shipped tables with the policy's catalogs overrides applied: the tables a Knowledge answers from."""
    overrides = overrides or {}
    if not isinstance(overrides, dict):
        fail("catalogs", "must be a mapping of table -> entries")
    unknown = sorted(set(overrides) - set(TABLES))
    if unknown:
        fail("catalogs", "unknown table %r (allowed: %s)" % (unknown[0], ", ".join(TABLES)))
    effective = dict(tables, cuda_overrides=_apply_cuda_overrides(overrides.get("cuda_min_driver") or {}))
    if overrides.get("xid"):
        effective["xids"] = _apply_xid_overrides(tables["xids"], tables["xid_actions"], overrides["xid"])
    if overrides.get("gpu_driver_support"):
        effective["architectures"], effective["gpu_models"] = _apply_gpu_support_overrides(
            tables["architectures"], tables["gpu_models"], overrides["gpu_driver_support"])
    if overrides.get("mig_profiles"):
        effective["mig_models"] = _apply_mig_overrides(tables["mig_models"], overrides["mig_profiles"])
    return effective
