# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the audit knows about NVIDIA stacks, from the data files in ./data, plus user overrides.

    knowledge = load_knowledge(policy["catalogs"])
    knowledge.cuda_min_driver("12.4.131")            -> "550.54.14"
    knowledge.driver_supports_gpu("590.44.01", "NVIDIA GeForce GT 1030", "pascal") -> (False, "...")
    knowledge.xid(79)["action"]                        -> "Drain the node and reboot it; ..."
    knowledge.mig_model("NVIDIA A100-SXM4-80GB")["profiles"]["3g.40gb"]["placements"]
    knowledge.gpu_lost_xids(), knowledge.application_xids()          -> {79}, {13, 31, 43}
    knowledge.is_baseboard_model("NVIDIA H100 80GB HBM3"), knowledge.clock_event_severity("hw_slowdown")

The tables (knowledge_tables.py) are read once per process; a Knowledge is built once per distinct set of
overrides. Everything a Knowledge returns is shared: treat it as read-only (xid() returns a copy).

Overrides (policy catalogs), each table optional:
    cuda_min_driver:    {"12.9": "575.51.03", "13.4.1": null}       toolkit version -> driver or null
    xid:                {"13": {"severity": "info"}, "200": {...}}   merged into / added to the catalog
    mig_profiles:       {"A100-80GB": {"profiles": {...}}, "X": null} merged / added / removed models
    gpu_driver_support: {"models": {...}, "architectures": {...}}   merged / added (null removes a model)
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import functools
import json

from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.knowledge_tables import (
    TABLES, apply_overrides, branch_number, compare_versions, cuda_major, driver_branch, fail, normalize_architecture,
    normalize_product_name, parse_version, shipped_tables, toolkit_key, xid_number)

# the version and name helpers are part of this module's interface (knowledge_tables.py defines them)
__all__ = ["Knowledge", "load_knowledge", "overrides_key", "compare_versions", "cuda_major", "driver_branch",
           "normalize_architecture", "normalize_product_name", "parse_version", "shipped_tables", "toolkit_key"]


# ---------------------------------------------------------------- Knowledge

class Knowledge:
    """Answers about CUDA/driver compatibility, GPU support, Xids and MIG profiles."""

    def __init__(self, tables, overrides=None):
        tables = apply_overrides(tables, overrides)
        self._cuda_releases = tables["cuda_releases"]
        self._cuda_compat = tables["cuda_compat"]
        self._cuda_overrides = tables["cuda_overrides"]
        self._xids = tables["xids"]
        self._xid_buckets = tables["xid_buckets"]
        self._architectures = tables["architectures"]
        self._gpu_models = tables["gpu_models"]
        self._architecture_by_name = tables["architecture_by_name"]
        self._mig_models = tables["mig_models"]
        self._baseboard_names = tables["baseboard_names"]
        self._clock_event_severity = tables["clock_event_severity"]
        self.nvswitch_gpu_count = tables["nvswitch_gpu_count"]
        self._gpu_lost_xids = frozenset(number for number, entry in self._xids.items() if entry["gpu_lost"])
        self._application_xids = frozenset(number for number, entry in self._xids.items() if entry["application_error"])
        self._name_cache = {}

    # ------------------------------------------------ CUDA

    def cuda_min_driver(self, toolkit_version):
        """Minimum Linux driver for all features of a toolkit ("12.4", "12.4.1", "12.4.131", 12040); None = unknown."""
        key = toolkit_key(toolkit_version)
        if key is None:
            return None
        for candidate in (key, key[:2] + (None,)):
            if candidate in self._cuda_overrides:
                return self._cuda_overrides[candidate]
        row = self._cuda_row(key)
        return row["min_driver"] if row else None

    def _cuda_row(self, key):
        same_minor = self._cuda_releases.get(key[:2])
        if not same_minor:
            return None
        patch = key[2]
        # a patch of 10 or more is a component build number (nvcc 12.4.131), not an update
        if patch is not None and patch < 10:
            # the update itself, or the latest row before it (maintenance releases have none)
            at_or_before = [row for row_patch, row in same_minor if row_patch <= patch]
            if at_or_before:
                return at_or_before[-1]
        ga_rows = [row for _patch, row in same_minor if row["ga"]]
        return ga_rows[0] if ga_rows else same_minor[0][1]

    def cuda_minor_compat_floor(self, major):
        """Lowest driver that runs any toolkit of this major with minor-version compatibility (12 -> "525.60.13")."""
        return self._cuda_compat.get(cuda_major(major))

    def cuda_support(self, driver_version, toolkit_version):
        """(status, reason): status "full", "minor_compat" (runs with reduced features), "unsupported" or "unknown"."""
        if parse_version(driver_version) is None:
            return "unknown", "driver version unknown"
        needed = self.cuda_min_driver(toolkit_version)
        if needed is None:
            return "unknown", "no known minimum driver for CUDA %s" % toolkit_version
        if compare_versions(driver_version, needed) >= 0:
            return "full", "driver %s meets CUDA %s (needs %s)" % (driver_version, toolkit_version, needed)
        floor = self.cuda_minor_compat_floor(cuda_major(toolkit_version))
        if floor and compare_versions(driver_version, floor) >= 0:
            return "minor_compat", ("driver %s is below %s for all CUDA %s features; it runs with minor-version "
                                    "compatibility (needs %s)" % (driver_version, needed, toolkit_version, floor))
        return "unsupported", "CUDA %s needs driver %s or newer, found %s" % (toolkit_version, needed, driver_version)

    # ------------------------------------------------ GPUs and drivers

    def _lookup(self, table, gpu_name, candidates):
        cache_key = (table, gpu_name)
        if cache_key in self._name_cache:
            return self._name_cache[cache_key]
        normalized = normalize_product_name(gpu_name)
        found = None
        if normalized:
            for entry, pattern in candidates:
                if pattern.fullmatch(normalized):
                    found = entry
                    break
        self._name_cache[cache_key] = found
        return found

    def model_for(self, gpu_name):
        """The data-center model entry for a product name ({"model", "architecture", "first_branch", ...}) or None."""
        return self._lookup("gpu", gpu_name, (m[:2] for m in self._gpu_models.values()))

    def architecture_for(self, gpu_name, compute_capability=None):
        """Architecture by model, then by product-name family, then by compute capability; None when unknown."""
        model = self.model_for(gpu_name)
        if model:
            return model["architecture"]
        arch = self._lookup("arch", gpu_name, self._architecture_by_name)
        if arch:
            return arch
        if compute_capability:
            for name, entry in self._architectures.items():
                if str(compute_capability) in entry["compute_capability"]:
                    return name
        return None

    def driver_supports_gpu(self, driver_version, gpu_name, architecture=None):
        """(True | False | None, why). None when the driver version or the GPU is unknown."""
        branch = branch_number(driver_version)
        if branch is None:
            return None, "driver version unknown (%r)" % (driver_version,)
        model = self.model_for(gpu_name)
        arch = normalize_architecture(architecture) or self.architecture_for(gpu_name)
        arch_info = self._architectures.get(arch)
        label = "%s (%s)" % (gpu_name, arch) if arch else str(gpu_name)
        if arch_info and arch_info.get("last_branch") and branch > int(arch_info["last_branch"]):
            return False, ("%s GPUs are supported up to driver branch R%s; driver %s (R%d) does not support %s"
                           % (arch.capitalize(), arch_info["last_branch"], driver_version, branch, label))
        first, basis = self._first_branch(model, arch_info)
        if first and branch < int(first):
            return False, "%s needs driver branch R%s or newer (%s); driver %s is R%d" % (
                label, first, basis, driver_version, branch)
        if model is None and arch_info is None:
            return None, "unknown GPU model and architecture: %s" % gpu_name
        return True, "driver %s (R%d) supports %s" % (driver_version, branch, label)

    @staticmethod
    def _first_branch(model, arch_info):
        if model and model.get("first_branch"):
            basis = "model %s" % model["model"]
            if model.get("unverified"):
                basis += ", unverified"
            return model["first_branch"], basis
        if arch_info and arch_info.get("first_branch"):
            return arch_info["first_branch"], "first driver of the architecture"
        return None, None

    def is_baseboard_model(self, gpu_name):
        """True for SXM / HGX models, which come with NVLink and NVSwitch (gpu_hardware.yml baseboards)."""
        return bool(gpu_name) and bool(self._baseboard_names.search(gpu_name))

    def clock_event_severity(self, reason):
        """Severity of an active clock event reason that is a finding ("hw_slowdown" -> "warning"), else None."""
        return self._clock_event_severity.get(reason)

    def expected_gpu_count(self, gpu_name):
        """GPUs a node with this model should have (8 on HGX/DGX SXM baseboards); None when it varies or is unknown."""
        model = self.model_for(gpu_name)
        return model["gpus_per_node"] if model else None

    # ------------------------------------------------ Xids

    def xid(self, number):
        """{"xid", "name", "layer", "severity", "action", "fix", "secondary", "follows", "description", ...} or None."""
        entry = self._xids.get(xid_number(number))
        if entry is None:
            return None
        result = {k: v for k, v in entry.items() if not k.startswith("_")}
        result["follows"] = list(entry["follows"])
        return result

    def xid_numbers(self):
        return sorted(self._xids)

    def xid_overridden(self, number):
        """The keys of the Xid's entry that the policy's catalogs.xid sets (empty: as shipped)."""
        entry = self._xids.get(xid_number(number))
        return entry.get("_overridden", frozenset()) if entry else frozenset()

    def xid_bucket(self, name):
        """What NVIDIA's resolution bucket implies here: {"severity", "layer"} (layer None: the bucket names
        none), or None for an Xid without a bucket."""
        entry = self._xid_buckets.get(name)
        return dict(entry) if entry else None

    def xid_departures(self, number):
        """How the Xid's entry differs from its bucket's ("layer", "severity"): [] when it follows its bucket,
        has none, or is not in the catalog."""
        entry = self._xids.get(xid_number(number))
        bucket = self._xid_buckets.get(entry.get("bucket")) if entry else None
        if bucket is None:
            return []
        return [key for key in ("layer", "severity") if bucket[key] is not None and entry[key] != bucket[key]]

    def gpu_lost_xids(self):
        """The Xids that say a GPU fell off the bus (79), reported by hardware.gpu_lost."""
        return self._gpu_lost_xids

    def application_xids(self):
        """The Xids of an application's own fault (13, 31, 43), which correlation may blame on the workload."""
        return self._application_xids

    # ------------------------------------------------ MIG

    def mig_model(self, gpu_name):
        """MIG model for a product name: {"model", "slices", "compute_slices", "memory_slices", "profiles", ...}; None if not MIG-capable/known."""
        return self._lookup("mig", gpu_name, (m[:2] for m in self._mig_models.values()))

    def mig_models(self):
        """Every MIG model, in matching order."""
        return [entry[0] for entry in self._mig_models.values()]

    def mig_model_named(self, model):
        """MIG model by its model name ("A100-80GB"), or None."""
        entry = self._mig_models.get(model)
        return entry[0] if entry else None


# ---------------------------------------------------------------- loading

def _plain(value, where="catalogs"):
    """A canonical, JSON-able copy: mapping keys as text, so 13 and "13" are the same override."""
    if isinstance(value, dict):
        return {str(k): _plain(v, "%s.%s" % (where, k)) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v, where) for v in value]
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    fail(where, "not plain data: %r" % (value,))


def overrides_key(overrides):
    """Stable text key for a set of overrides (equal overrides give equal keys)."""
    return json.dumps(_plain(overrides or {}), sort_keys=True, separators=(",", ":"))


@functools.lru_cache(maxsize=256)
def _knowledge_for(key):
    return Knowledge(shipped_tables(), json.loads(key))


def load_knowledge(overrides=None):
    """The Knowledge for these overrides (policy["catalogs"]); built once per distinct overrides."""
    if overrides is not None and not isinstance(overrides, dict):
        fail("catalogs", "must be a mapping of table -> entries, got %s" % type(overrides).__name__)
    unknown = sorted(set(overrides or {}) - set(TABLES), key=str)
    if unknown:
        fail("catalogs", "unknown table %r (allowed: %s)" % (unknown[0], ", ".join(TABLES)))
    return _knowledge_for(overrides_key({k: v for k, v in (overrides or {}).items() if v}))
