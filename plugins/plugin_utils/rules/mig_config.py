# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Desired MIG layouts in the nvidia-mig-parted v1 config format, and whether a GPU holds them.

Profile names, feasibility, placement and the actual layout of a GPU live in
plugins/module_utils/mig_plan.py (standard library only, shared with the mig_layout module) and
are re-exported here, so controller code keeps importing them from this module.

The config is read exactly as nvidia-mig-parted and the GPU Operator write it (a plain file or a
Kubernetes ConfigMap with the file under data.config.yaml). Layouts are {profile: count} maps of
MIG devices, where a MIG device is one compute instance: "3g.40gb" is a GPU instance with one
compute instance filling it, "1c.3g.40gb" a one-slice compute instance inside a 3g.40gb GPU
instance (several of those share a GPU instance, as nvidia-mig-parted creates them).

mig_model (from Knowledge.mig_model): {"model", "slices" (compute slices), "memory_slices",
"profiles": {name: {"id", "compute_slices", "memory_slices", "max_instances",
"placements": [{"start", "size"}]}}}, placements in memory-slice units.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import collections
import functools
import os
import re

import yaml

from ansible_collections.gpufleet.core.plugins.plugin_utils.bounded_data import (
    FileLimitError, load_all, read_bounded_file, yaml_error_text)

# Re-exported: controller code imports these from here.
from ansible_collections.gpufleet.core.plugins.module_utils.mig_plan import (  # pylint: disable=unused-import
    MAX_MIG_DEVICES, PROFILE_GRAMMAR, GpuInstance, MigConfigError, Profile, actual_layout,
    canonical_profile_name, check_feasible, gpu_instance_name, gpu_instances_needed, layout_diff,
    parse_profile, placements_of, plan_layout, profile_name)

CONFIG_VERSION = "v1"
TOP_LEVEL_KEYS = ("version", "mig-configs")
ENTRY_KEYS = ("device-filter", "devices", "mig-enabled", "mig-devices")
CONFIGMAP_KEY = "config.yaml"
POLICY_WHERE = "gpufleet_policy.mig.config"

DEVICE_IDS_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "mig_device_ids.yml")

_DEVICE_ID = re.compile(r"^0[xX][0-9a-fA-F]{1,8}$")
_VERSION_LIKE = re.compile(r"^v?\d{1,3}(\.\d{1,3}){0,2}$")


# ---------------------------------------------------------------- loading and validation

def load_mig_parted_config(document_or_text, where):
    """Validates an nvidia-mig-parted v1 config and returns it normalised.

    document_or_text: YAML/JSON text (bytes or str) or the parsed document (dict); either may
    be a Kubernetes ConfigMap holding the config under data.config.yaml. where names the
    source in error messages (a file, or the policy key).
    Returns {"version": "v1", "mig-configs": {name: [{"devices": "all" | [int],
    "device-filter": [str], "mig-enabled": bool, "mig-devices": {canonical profile: count}}]}}.
    Raises MigConfigError naming where, the config and the offending key and value.

    The source may be any file (mig.config_file can point anywhere), so messages quote nothing of it
    until it shows itself a mig-parted config (a mapping with version or mig-configs): YAML errors give
    the line and column only, and a mapping without those keys is refused without naming its keys.
    Quoted values are clipped, and YAML aliases cannot expand past bounded_data's limits.
    """
    document = _parse_document(document_or_text, where)
    document, where = _unwrap_configmap(document, where)
    return _validated_spec(document, where)


def load_mig_parted_config_file(path):
    """load_mig_parted_config for a file (a config or a ConfigMap)."""
    try:
        text = read_bounded_file(path)
    except FileLimitError as error:
        raise MigConfigError("%s: cannot read the MIG config: %s" % (path, error.reason))
    except (IOError, OSError) as error:
        raise MigConfigError("%s: cannot read the MIG config: %s" % (path, error.strerror or error))
    return load_mig_parted_config(text, path)


def _parse_document(document_or_text, where):
    if isinstance(document_or_text, dict):
        return document_or_text
    if isinstance(document_or_text, bytes):
        document_or_text = document_or_text.decode("utf-8", "replace")
    if not isinstance(document_or_text, str):
        raise MigConfigError("%s: expected a mig-parted config (YAML text or a mapping), got %s"
                             % (where, type(document_or_text).__name__))
    try:
        documents = [doc for doc in load_all(document_or_text) if doc is not None]
    except yaml.YAMLError as error:
        raise MigConfigError("%s: not valid YAML: %s" % (where, yaml_error_text(error)))
    if len(documents) != 1:
        raise MigConfigError("%s: expected one YAML document with the mig-parted config, found %d"
                             % (where, len(documents)))
    if not isinstance(documents[0], dict):
        raise MigConfigError("%s: expected a mapping with version and mig-configs, got %s"
                             % (where, type(documents[0]).__name__))
    return documents[0]


def _unwrap_configmap(document, where):
    """The config inside a ConfigMap (data.config.yaml), or the document itself."""
    if document.get("kind") != "ConfigMap":
        return document, where
    data = document.get("data")
    if not isinstance(data, dict) or not data:
        raise MigConfigError("%s: ConfigMap has no data holding a mig-parted config" % where)
    if CONFIGMAP_KEY in data:
        key = CONFIGMAP_KEY
    elif len(data) == 1:
        key = list(data)[0]
    else:
        raise MigConfigError("%s: ConfigMap data has no %s (keys: %s)"
                             % (where, CONFIGMAP_KEY, ", ".join(_brief_names(data))))
    inner_where = "%s data.%s" % (where, key)
    return _parse_document(data[key], inner_where), inner_where


def _validated_spec(document, where):
    if not any(key in document for key in TOP_LEVEL_KEYS):
        raise MigConfigError("%s: not a mig-parted config: the mapping has neither version nor mig-configs "
                             "(its %d keys are not shown: the file may be anything)" % (where, len(document)))
    unknown = [key for key in document if key not in TOP_LEVEL_KEYS]
    if unknown:
        raise MigConfigError("%s: unexpected field %s (allowed: %s)"
                             % (where, _brief(unknown[0]), ", ".join(TOP_LEVEL_KEYS)))
    if "version" not in document:
        raise MigConfigError("%s: missing version (must be %s)" % (where, CONFIG_VERSION))
    if document["version"] != CONFIG_VERSION:
        raise MigConfigError("%s: unknown version%s (must be %s)" % (where, _version_shown(document["version"]), CONFIG_VERSION))
    configs = document.get("mig-configs")
    if not isinstance(configs, dict) or not configs:
        raise MigConfigError("%s: mig-configs must be a mapping of config names to lists of entries, got %s"
                             % (where, _brief(configs)))
    validated = {}
    for name, entries in configs.items():
        if not isinstance(name, str):
            raise MigConfigError("%s: mig-configs: config name %s must be a string" % (where, _brief(name)))
        validated[name] = _validated_entries(entries, "%s: mig-configs.%s" % (where, name))
    return {"version": CONFIG_VERSION, "mig-configs": validated}


def _validated_entries(entries, path):
    if not isinstance(entries, list) or not entries:
        raise MigConfigError("%s: must be a list of at least one entry (devices, mig-enabled, ...), got %s"
                             % (path, _brief(entries)))
    return [_validated_entry(entry, "%s[%d]" % (path, position)) for position, entry in enumerate(entries)]


def _validated_entry(entry, path):
    if not isinstance(entry, dict):
        raise MigConfigError("%s: must be a mapping with devices and mig-enabled, got %s" % (path, _brief(entry)))
    unknown = [key for key in entry if key not in ENTRY_KEYS]
    if unknown:
        raise MigConfigError("%s: unexpected field %s (allowed: %s)" % (path, _brief(unknown[0]), ", ".join(ENTRY_KEYS)))
    for required in ("devices", "mig-enabled"):
        if required not in entry:
            raise MigConfigError("%s: missing required field %s" % (path, required))
    enabled = entry["mig-enabled"]
    if not isinstance(enabled, bool):
        raise MigConfigError("%s.mig-enabled: must be true or false, got %s" % (path, _brief(enabled)))
    devices = _validated_mig_devices(entry.get("mig-devices"), "%s.mig-devices" % path)
    if enabled and entry.get("mig-devices") is None:
        raise MigConfigError("%s: missing required field mig-devices when mig-enabled is true ({} enables MIG "
                             "with no devices)" % path)
    if not enabled and devices:
        raise MigConfigError("%s.mig-devices: MIG devices %s given while mig-enabled is false"
                             % (path, ", ".join(sorted(devices))))
    return {
        "devices": _validated_devices(entry["devices"], "%s.devices" % path),
        "device-filter": _validated_device_filter(entry.get("device-filter"), "%s.device-filter" % path),
        "mig-enabled": enabled,
        "mig-devices": devices,
    }


def _validated_devices(devices, path):
    if devices == "all":
        return "all"
    if isinstance(devices, list) and all(_is_count(index) for index in devices):
        return list(devices)
    raise MigConfigError("%s: must be \"all\" or a list of GPU indexes (integers >= 0), got %s" % (path, _brief(devices)))


def _validated_device_filter(device_filter, path):
    """A list of normalised ids ('0x20B010DE' or '0x233010DE:0x16C110DE'); [] = every device type."""
    if device_filter is None or device_filter == "":
        return []
    values = [device_filter] if isinstance(device_filter, str) else device_filter
    if not isinstance(values, list) or not all(isinstance(value, str) for value in values):
        raise MigConfigError("%s: must be a PCI id string or a list of them, got %s" % (path, _brief(device_filter)))
    return [_normalised_device_id(value, path) for value in values]


def _normalised_device_id(value, path):
    parts = value.split(":")
    if len(parts) > 2 or not all(_DEVICE_ID.match(part) for part in parts):
        raise MigConfigError("%s: %s is not a PCI id: expected <device><vendor> as hex, e.g. 0x20B010DE, "
                             "optionally :<subsystem device><subsystem vendor>" % (path, _brief(value)))
    return ":".join("0x%08X" % int(part, 16) for part in parts)


def _validated_mig_devices(devices, path):
    if devices is None:
        return {}
    if not isinstance(devices, dict):
        raise MigConfigError("%s: must be a mapping of MIG profile to count, got %s" % (path, _brief(devices)))
    counts = collections.OrderedDict()
    for name, count in devices.items():
        profile = parse_profile(name)
        if profile is None:
            raise MigConfigError("%s: %s is not a MIG profile (expected %s)" % (path, _brief(name), PROFILE_GRAMMAR))
        if not _is_count(count):
            raise MigConfigError("%s.%s: count must be an integer >= 0, got %s" % (path, name, _brief(count)))
        key = profile_name(profile)
        counts[key] = counts.get(key, 0) + count
    if counts and not any(counts.values()):
        raise MigConfigError("%s: all counts are 0 (use {} to enable MIG with no devices)" % path)
    return dict((name, count) for name, count in counts.items() if count)


def _is_count(value):
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


MAX_QUOTED = 40
MAX_NAMES = 10


def _brief(value):
    """A value for a message, never long: a clipped repr of a scalar, the kind and size of a collection."""
    if isinstance(value, dict):
        return "a mapping of %d key%s" % (len(value), "" if len(value) == 1 else "s")
    if isinstance(value, (list, tuple)):
        return "a list of %d item%s" % (len(value), "" if len(value) == 1 else "s")
    if isinstance(value, str) and len(value) > MAX_QUOTED:
        return repr(value[:MAX_QUOTED - 3] + "...")
    if value is None or isinstance(value, (str, bool, int, float)):
        return repr(value)
    return "a %s" % type(value).__name__


def _version_shown(value):
    """" 'v2'" when the value looks like a version; "" for anything else, which may be the file's content."""
    return " %r" % value if isinstance(value, str) and _VERSION_LIKE.match(value) else ""


def _brief_names(mapping):
    names = sorted(text if len(text) <= MAX_QUOTED else text[:MAX_QUOTED - 3] + "..." for text in map(str, mapping))
    return names[:MAX_NAMES] + (["and %d more" % (len(names) - MAX_NAMES)] if len(names) > MAX_NAMES else [])


# ---------------------------------------------------------------- desired layout per GPU

def desired_layout(config, selected, gpus, device_ids=None, where=POLICY_WHERE):
    """What the selected config wants on each GPU of a host it covers.

    config: a document from load_mig_parted_config, or anything it accepts (the selected config
    is validated here, naming where in errors); selected: a config name, or None when the config
    has exactly one; gpus: the gpus[] facts (index, name, mig.mode_current). device_ids: extra
    {"0x20B010DE": [product names]} to match device-filter entries (see data/mig_device_ids.yml).
    Returns {gpu index: {"mig_enabled": bool, "devices": {profile: count}}}.

    As nvidia-mig-parted does: an entry applies to a GPU when both its device-filter and its
    devices match; a later entry overrides an earlier one for the same GPU; a GPU that cannot do
    MIG (mig.mode_current null) is skipped by entries with devices: all or mig-enabled: false.
    Devices are GPU indexes as in the facts. A filter with a subsystem id (':0x...') never
    matches, because the facts do not carry subsystem ids.
    """
    entries = selected_entries(config, selected, where)
    names = product_name_device_ids(device_ids)
    ids_by_index = dict((gpu.get("index"), names.get(normalise_product_name(gpu.get("name")), frozenset()))
                        for gpu in gpus)
    layout = {}
    for entry in entries:
        for gpu in gpus:
            if _entry_covers(entry, gpu, ids_by_index[gpu.get("index")]):
                layout[gpu["index"]] = {"mig_enabled": entry["mig-enabled"], "devices": dict(entry["mig-devices"])}
    return layout


def selected_entries(config, selected, where=POLICY_WHERE):
    """The validated entries of one config; MigConfigError listing the names when it is not there.

    Only the selected config is validated when config is already a mapping, so a host costs
    microseconds even with the 81 configs of the GPU Operator's file.
    """
    loaded = isinstance(config, dict) and isinstance(config.get("mig-configs"), dict) and config.get("kind") != "ConfigMap"
    if not loaded:
        config = load_mig_parted_config(config, where)
    configs = config["mig-configs"]
    if selected is None and len(configs) == 1:
        selected = list(configs)[0]
    if selected not in configs:
        problem = "no MIG config selected" if selected is None else "MIG config %r is not in the config" % (selected,)
        raise MigConfigError("%s: %s (available: %s)" % (where, problem, ", ".join(sorted(map(str, configs)))))
    one = dict(config)
    one["mig-configs"] = {selected: configs[selected]}
    return _validated_spec(one, where)["mig-configs"][selected]


def _entry_covers(entry, gpu, device_ids):
    if entry["devices"] != "all" and gpu.get("index") not in entry["devices"]:
        return False
    if entry["device-filter"] and not any(device_id in device_ids for device_id in entry["device-filter"]):
        return False
    mig_capable = ((gpu.get("mig") or {}).get("mode_current")) is not None
    return mig_capable or (entry["mig-enabled"] and entry["devices"] != "all")


def normalise_product_name(name):
    """'NVIDIA A100-SXM4-80GB' and 'A100-SXM4-80GB' compare equal."""
    if not isinstance(name, str):
        return ""
    words = name.upper().split()
    if words and words[0] == "NVIDIA":
        words = words[1:]
    return " ".join(words)


def product_name_device_ids(extra=None):
    """{normalised product name: frozenset of "0x....10DE" ids} from data/mig_device_ids.yml plus extra.

    The table without extra is built once and shared: read it, do not change it.
    """
    if not extra:
        return _shipped_product_name_device_ids()
    return _product_name_device_ids(extra)


@functools.lru_cache(maxsize=1)
def _shipped_product_name_device_ids():
    return _product_name_device_ids({})


def _product_name_device_ids(extra):
    with open(DEVICE_IDS_FILE) as handle:
        shipped = yaml.safe_load(handle)["device_ids"]
    table = dict((device_id, list(entry.get("product_names") or [])) for device_id, entry in shipped.items())
    for device_id, product_names in extra.items():
        table[device_id] = table.get(device_id, []) + list(product_names)
    by_name = {}
    for device_id, product_names in table.items():
        normalised_id = _normalised_device_id(device_id, "device_ids")
        for product in product_names:
            by_name.setdefault(normalise_product_name(product), set()).add(normalised_id)
    return dict((name, frozenset(ids)) for name, ids in by_name.items())
