# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Builds the state of the simulated NVIDIA stack and installs the simulator into a root folder.

    state = state_for("NVIDIA A100-SXM4-80GB", 2, driver="550.90.07", host="fleet-01")
    state = state_for("NVIDIA H100 80GB HBM3", 4, mig=True, mig_layouts={0: ["3g.40gb", "3g.40gb"]})
    install(upper_dir, state, enable=("gpufleet-sim-boot.service", "inference.service"))

This runs on the controller, where the collection's knowledge (plugins/plugin_utils/rules/knowledge.py and
its YAML data) is importable: the MIG profile and placement table of each GPU model is copied into
the state, so the simulator inside the container needs nothing but python3.

Command line (the same, for a fleet script that runs without the project's virtualenv):
    python3 tests/fleet/sim/state.py --gpu "NVIDIA A30" --count 2 --driver 550.90.07 --root DIR
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import argparse
import hashlib
import json
import os
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import nvidia_smi as sim  # noqa: E402  pylint: disable=wrong-import-position

# The model catalog shared with the NVML simulator, the demo fleet and the rule tests (read with the
# standard library: this file also runs with the system python3).
CATALOG_PATH = os.path.join(REPO, "simulator", "gpu_models.json")
# nvidia-smi's product_architecture, by the catalog's architecture
ARCHITECTURE_NAMES = {"ada": "Ada Lovelace"}

# Per product name: what else nvidia-smi -q -x shows on an idle GPU of that model (values that vary with
# the driver and the firmware). "captured" names the real report the values come from; the other models
# carry typical values for their datasheet.
IDLE_READINGS = {
    "NVIDIA A100-SXM4-40GB": {
        "captured": "realdata nvsmi-q-x_a100-sxm4-40gb_mig-2x3g.20gb_510.47.03_v11_netdata.xml",
        "memory_reserved_mib": 605, "vbios_version": "92.00.45.00.03", "power_draw_w": 66.92,
        "temperature": (36, 44, 89, 92, 85, 95), "clocks": (1410, 1215, 1275), "max_clocks": (1410, 1215, 1290),
        "pcie_width": 16, "ecc": True, "remapped_rows": True, "fan": False,
    },
    "NVIDIA A100-SXM4-80GB": {
        "memory_reserved_mib": 659, "vbios_version": "92.00.36.00.02", "power_draw_w": 62.5,
        "temperature": (31, 38, 89, 92, 85, 95), "clocks": (210, 1593, 795), "max_clocks": (1410, 1593, 1290),
        "pcie_width": 16, "ecc": True, "remapped_rows": True, "fan": False,
    },
    "NVIDIA A30": {
        "memory_reserved_mib": 456, "vbios_version": "92.00.66.00.01", "power_draw_w": 32.0,
        "temperature": (47, 50, 90, 93, 88, 95), "clocks": (1440, 1215, 1305), "max_clocks": (1440, 1215, 1305),
        "pcie_width": 16, "ecc": True, "remapped_rows": True, "fan": False,
    },
    "NVIDIA H100 80GB HBM3": {
        "memory_reserved_mib": 579, "vbios_version": "96.00.74.00.11", "power_draw_w": 72.0,
        "temperature": (30, 39, 87, 92, 85, 95), "clocks": (345, 2619, 765), "max_clocks": (1980, 2619, 1755),
        "pcie_width": 16, "ecc": True, "remapped_rows": True, "fan": False,
    },
    "NVIDIA H200": {
        "memory_reserved_mib": 640, "vbios_version": "96.00.A5.00.01", "power_draw_w": 76.0,
        "temperature": (29, 37, 87, 92, 85, 95), "clocks": (345, 3201, 765), "max_clocks": (1980, 3201, 1755),
        "pcie_width": 16, "ecc": True, "remapped_rows": True, "fan": False,
    },
    "Tesla T4": {
        "captured": "realdata nvsmi-q-x_tesla-t4_515.105.01_v11_telegraf.xml",
        "memory_reserved_mib": 388, "vbios_version": "90.04.84.00.06", "power_draw_w": 26.0,
        "temperature": (42, None, 93, 96, 85, None), "clocks": (585, 5000, 810), "max_clocks": (1590, 5001, 1470),
        "pcie_width": 16, "ecc": True, "remapped_rows": False, "fan": False,
    },
    "NVIDIA A10G": {
        "captured": "realdata nvsmi-q-x_a10g_515.105.01_v11_telegraf.xml",
        "memory_reserved_mib": 435, "vbios_version": "94.02.75.00.01", "power_draw_w": 25.0,
        "temperature": (28, None, 95, 98, 88, None), "clocks": (210, 405, 555), "max_clocks": (1710, 6251, 1500),
        "pcie_width": 16, "ecc": True, "remapped_rows": True, "fan": True,
    },
}


def load_gpu_models(path=CATALOG_PATH):
    """The simulated models: the catalog's properties of each model of IDLE_READINGS, and its readings."""
    with open(path) as handle:
        catalog = json.load(handle)["models"]
    return dict((name, dict(catalog[name], **readings)) for name, readings in IDLE_READINGS.items())


GPU_MODELS = load_gpu_models()

# MIG profile attributes nvidia-smi mig -lgip prints, by MIG model and profile id:
# (memory MiB, SMs, decoders, encoders, copy engines, JPEG, OFA).
PROFILE_ATTRIBUTES = {
    # realdata nvsmi-mig-lgip_4xh100-sxm5-80gb_stackhpc.txt (memory: the GiB column x 1024)
    "H100-80GB": {19: (9984, 16, 1, 0, 1, 1, 0), 20: (9984, 16, 1, 0, 1, 1, 1), 15: (20096, 26, 1, 0, 1, 1, 0),
                  14: (20096, 32, 2, 0, 2, 2, 0), 9: (40448, 60, 3, 0, 3, 3, 0), 5: (40448, 64, 4, 0, 4, 4, 0),
                  0: (81152, 132, 7, 0, 8, 7, 1)},
    # realdata nvsmi-mig-lgip_a30-24gb_535.183.01_unresolved-repo.txt
    "A30-24GB": {14: (5952, 14, 1, 0, 1, 0, 0), 21: (5952, 14, 1, 0, 1, 1, 1), 5: (11968, 28, 2, 0, 2, 0, 0),
                 6: (11968, 28, 2, 0, 2, 1, 1), 0: (24000, 56, 4, 0, 4, 1, 1)},
    # engines from the MIG User Guide's A100 profile table; 3g/4g memory from the A100-SXM4-40GB report
    # in realdata; the other memory sizes are approximate.
    "A100-40GB": {19: (4864, 14, 0, 0, 1, 0, 0), 20: (4864, 14, 1, 0, 1, 1, 1), 15: (9856, 14, 1, 0, 1, 0, 0),
                  14: (9856, 28, 1, 0, 2, 0, 0), 9: (19968, 42, 2, 0, 3, 0, 0), 5: (19968, 56, 2, 0, 4, 0, 0),
                  0: (40192, 98, 5, 0, 7, 1, 1)},
    "A100-80GB": {19: (9728, 14, 0, 0, 1, 0, 0), 20: (9728, 14, 1, 0, 1, 1, 1), 15: (19968, 14, 1, 0, 1, 0, 0),
                  14: (19968, 28, 1, 0, 2, 0, 0), 9: (40192, 42, 2, 0, 3, 0, 0), 5: (40192, 56, 2, 0, 4, 0, 0),
                  0: (80384, 98, 5, 0, 7, 1, 1)},
}
# Other 8-slice models: Hopper-style engines and SM counts by profile id, memory from the GPU's size.
DEFAULT_ENGINES = dict((profile_id, attrs[1:]) for profile_id, attrs in PROFILE_ATTRIBUTES["H100-80GB"].items())

DEFAULT_BUS_IDS = ("00000000:07:00.0", "00000000:0F:00.0", "00000000:47:00.0", "00000000:4E:00.0",
                   "00000000:87:00.0", "00000000:90:00.0", "00000000:B7:00.0", "00000000:BD:00.0")

# What install() copies: (source relative to this folder, path in the root, mode).
INSTALL_FILES = (
    ("nvidia_smi.py", "usr/lib/gpufleet-sim/nvidia_smi.py", 0o644),
    ("gpu_worker.py", "usr/lib/gpufleet-sim/gpu_worker.py", 0o644),
    ("load_model.py", "usr/lib/gpufleet-sim/load_model.py", 0o644),
    ("gpu_load.py", "usr/lib/gpufleet-sim/gpu_load.py", 0o644),
    ("bin/gpu-load", "usr/local/bin/gpu-load", 0o755),
    ("bin/nvidia-smi", "usr/bin/nvidia-smi", 0o755),
    ("bin/gpu-worker", "usr/local/bin/gpu-worker", 0o755),
    # the active-diagnostic tools (diag_tools.py) and the model catalog their figures come from
    ("diag_tools.py", "usr/lib/gpufleet-sim/diag_tools.py", 0o644),
    ("../../../simulator/gpu_models.json", "usr/lib/gpufleet-sim/gpu_models.json", 0o644),
    ("bin/dcgmi", "usr/bin/dcgmi", 0o755),
    ("bin/nvbandwidth", "usr/local/bin/nvbandwidth", 0o755),
    ("bin/all_reduce_perf", "usr/local/bin/all_reduce_perf", 0o755),
    ("bin/gpu_burn", "usr/local/bin/gpu_burn", 0o755),
    ("units/gpufleet-sim-boot.service", "etc/systemd/system/gpufleet-sim-boot.service", 0o644),
    ("units/nvidia-persistenced.service", "etc/systemd/system/nvidia-persistenced.service", 0o644),
    ("units/inference.service", "etc/systemd/system/inference.service", 0o644),
    ("units/trainer.service", "etc/systemd/system/trainer.service", 0o644),
    ("units/loadtest.service", "etc/systemd/system/loadtest.service", 0o644),
)


def _knowledge():
    collections = os.path.join(REPO, "collections")
    if collections not in sys.path:
        sys.path.insert(0, collections)
    from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.knowledge import load_knowledge
    return load_knowledge()


def _digest(*parts):
    return hashlib.sha1("/".join(str(part) for part in parts).encode("utf-8")).hexdigest()


def gpu_uuid(host, index, name):
    digest = _digest("uuid", host, index, name)
    return "GPU-%s-%s-%s-%s-%s" % (digest[:8], digest[8:12], digest[12:16], digest[16:20], digest[20:32])


def gpu_serial(host, index, name):
    return "1%012d" % (int(_digest("serial", host, index, name), 16) % 10 ** 12)


def _profile_attributes(model_name, profile, total_mib, memory_slices):
    known = PROFILE_ATTRIBUTES.get(model_name, {}).get(profile["id"])
    if known:
        return known
    slice_mib = int(total_mib * 0.98 / memory_slices) // 128 * 128
    if profile["memory_slices"] == memory_slices:
        memory = int(total_mib * 0.995) // 128 * 128
    else:
        memory = slice_mib * profile["memory_slices"]
    engines = DEFAULT_ENGINES.get(profile["id"], (16 * profile["compute_slices"], profile["compute_slices"], 0,
                                                  profile["compute_slices"], 0, 0))
    return (memory,) + tuple(engines)


def mig_table(gpu_name, total_mib):
    """The MIG model of a GPU as the simulator keeps it (profiles in -lgip order), or None."""
    model = _knowledge().mig_model(gpu_name)
    if model is None:
        return None
    profiles = []
    for name, profile in model["profiles"].items():
        memory, sm, dec, enc, ce, jpeg, ofa = _profile_attributes(model["model"], profile, total_mib, model["memory_slices"])
        profiles.append({
            "name": name, "id": profile["id"], "compute_slices": profile["compute_slices"],
            "memory_slices": profile["memory_slices"], "max_instances": profile["max_instances"],
            "placements": [dict(spot) for spot in profile["placements"]],
            "memory_mib": memory, "sm": sm, "dec": dec, "enc": enc, "ce": ce, "jpeg": jpeg, "ofa": ofa,
        })
    return {"model": model["model"], "compute_slices": model["compute_slices"],
            "memory_slices": model["memory_slices"], "profiles": profiles,
            "source": "plugins/plugin_utils/rules/data/mig_profiles.yml via knowledge.mig_model(%r)" % gpu_name}


def gpu_record(gpu_name, position, host, bus_id, mig_model_name):
    """One GPU of the state, idle, with the model's usual values."""
    spec = GPU_MODELS[gpu_name]
    limits = spec["power_limits_w"]
    temp, memory_temp, slowdown, shutdown, max_operating, max_memory = spec["temperature"]
    graphics, memory_clock, video = spec["clocks"]
    max_graphics, max_memory_clock, max_video = spec["max_clocks"]
    return {
        "name": gpu_name, "brand": "Tesla" if gpu_name.startswith("Tesla") else "NVIDIA",
        "architecture": ARCHITECTURE_NAMES.get(spec["architecture"], spec["architecture"].capitalize()),
        "uuid": gpu_uuid(host, position, gpu_name),
        "serial": gpu_serial(host, position, gpu_name), "pci_bus_id": bus_id,
        "pci_device_id": spec["pci_device_id"], "pci_sub_system_id": spec["pci_sub_system_id"],
        "vbios_version": spec["vbios_version"], "gpu_part_number": spec["gpu_part_number"],
        "board_part_number": None, "board_id": "0x%s" % bus_id[9:11].lower(), "minor_number": position,
        "module_id": position + 1,
        "memory": {"total_mib": spec["memory_total_mib"], "reserved_mib": spec["memory_reserved_mib"],
                   "idle_used_mib": 0, "bar1_total_mib": spec["bar1_total_mib"]},
        "persistence_mode": False, "compute_mode": "Default",
        "ecc": {"enabled": spec["ecc"], "volatile_corrected": 0, "volatile_uncorrected": 0,
                "aggregate_corrected": 0, "aggregate_uncorrected": 0},
        "remapped_rows": ({"correctable": 0, "uncorrectable": 0, "pending": False, "failure": False}
                          if spec["remapped_rows"] else None),
        "retired_pages": None if spec["remapped_rows"] else {"single_bit": 0, "double_bit": 0, "pending": False},
        "temperature": {"gpu_c": temp, "memory_c": memory_temp, "slowdown_c": slowdown, "shutdown_c": shutdown,
                        "max_operating_c": max_operating, "max_memory_c": max_memory},
        "power": {"draw_w": spec["power_draw_w"], "limit_w": limits["default"], "default_limit_w": limits["default"],
                  "min_limit_w": limits["min"], "max_limit_w": limits["max"]},
        "clocks": {"graphics_mhz": graphics, "sm_mhz": graphics, "memory_mhz": memory_clock, "video_mhz": video,
                   "max_graphics_mhz": max_graphics, "max_sm_mhz": max_graphics, "max_memory_mhz": max_memory_clock,
                   "max_video_mhz": max_video},
        "clock_event_reasons": ["gpu_idle"], "performance_state": "P0",
        "pcie": {"gen_max": spec["pcie_gen_max"], "gen_current": spec["pcie_gen_max"], "width_max": spec["pcie_width"],
                 "width_current": spec["pcie_width"], "replay_counter": 0},
        "fan_speed_pct": 30 if spec["fan"] else None,
        "utilization": {"gpu_pct": 0, "memory_pct": 0},
        "fabric": None, "lost": False,
        "mig": ({"model": mig_model_name, "current": False, "pending": False, "gpu_instances": []}
                if mig_model_name else None),
    }


def apply_mig_layout(state, index, tokens):
    """Creates GPU instances (each with its full compute instance) as `nvidia-smi mig -i N -cgi TOKENS -C`."""
    gpu = sim.visible_gpus(state)[index]
    out = sim.Output()
    sim.create_gpu_instances(state, gpu, index, list(tokens), True, out)
    if out.rc != sim.RC_OK:
        raise ValueError("GPU %d: MIG layout %s does not fit: %s" % (index, ",".join(tokens), " / ".join(out.lines)))
    return out.lines


def state_for(gpu_name, count, driver="550.90.07", kernel_module=None, host="fleet-01", persistence_mode=False,
              compute_mode="Default", mig=False, mig_pending=None, mig_layouts=None, cuda_version=None,
              mig_mode_change="reset_required", reboot_keeps_settings=False, pci_bus_ids=None):
    """A state with `count` idle GPUs of one model.

    driver: the installed userspace library; kernel_module: the loaded module (default: the same; a
    different one is the driver/library mismatch). mig / mig_pending: MIG mode current / pending on
    every GPU (pending defaults to current). mig_layouts: {gpu index: ["3g.40gb", "9:4", ...]}, created
    as -cgi ... -C would. compute_mode: "Default", "Exclusive_Process" or "Prohibited" (or 0/2/3).
    """
    if gpu_name not in GPU_MODELS:
        raise ValueError("unknown GPU model %r (known: %s); add it to %s and to IDLE_READINGS in %s"
                         % (gpu_name, ", ".join(sorted(GPU_MODELS)), CATALOG_PATH, os.path.abspath(__file__)))
    if mig_mode_change not in sim.MIG_MODE_CHANGES:
        raise ValueError("mig_mode_change must be one of %s" % ", ".join(sim.MIG_MODE_CHANGES))
    mode = sim.COMPUTE_MODES.get(str(compute_mode).upper())
    if mode is None:
        raise ValueError("unknown compute mode %r" % (compute_mode,))
    bus_ids = list(pci_bus_ids or DEFAULT_BUS_IDS[:count])
    if len(bus_ids) < count:
        bus_ids += ["00000000:%02X:00.0" % (0xC0 + n) for n in range(count - len(bus_ids))]
    table = mig_table(gpu_name, GPU_MODELS[gpu_name]["memory_total_mib"])
    if (mig or mig_pending or mig_layouts) and table is None:
        raise ValueError("%s is not MIG-capable" % gpu_name)
    state = {
        "format": sim.STATE_FORMAT, "hostname": host, "boot_count": 0,
        "driver": {"library_version": driver, "kernel_module_version": kernel_module or driver,
                   "cuda_version": cuda_version, "lost_on_load": []},
        "mig_mode_change": mig_mode_change, "reboot_keeps_settings": bool(reboot_keeps_settings),
        "mig_models": {table["model"]: table} if table else {},
        "gpus": [gpu_record(gpu_name, n, host, bus_ids[n], table["model"] if table else None) for n in range(count)],
    }
    for gpu in state["gpus"]:
        gpu["persistence_mode"] = bool(persistence_mode)
        gpu["compute_mode"] = mode
        if gpu["mig"]:
            gpu["mig"]["current"] = bool(mig)
            gpu["mig"]["pending"] = bool(mig if mig_pending is None else mig_pending)
    for index, tokens in sorted((mig_layouts or {}).items()):
        if not state["gpus"][index]["mig"]["current"]:
            raise ValueError("GPU %d: MIG instances need MIG mode enabled (mig=True)" % index)
        apply_mig_layout(state, index, tokens)
    return state


def write_state(state, root):
    """Writes the state where the simulator reads it under root (the folder standing in for /)."""
    path = os.path.join(root, "var/lib/gpufleet-sim/state.json")
    sim.write_json_atomically(path, state)
    return path


def install(root, state=None, enable=("gpufleet-sim-boot.service",)):
    """Copies the simulator into root (a container's upper layer), writes the state and enables units.

    Returns the paths written, relative to root."""
    written = []
    for source, target, mode in INSTALL_FILES:
        destination = os.path.join(root, target)
        if not os.path.isdir(os.path.dirname(destination)):
            os.makedirs(os.path.dirname(destination))
        shutil.copyfile(os.path.join(HERE, source), destination)
        os.chmod(destination, mode)
        written.append(target)
    for unit in enable:
        wants = os.path.join(root, "etc/systemd/system/multi-user.target.wants")
        if not os.path.isdir(wants):
            os.makedirs(wants)
        link = os.path.join(wants, unit)
        if os.path.lexists(link):
            os.unlink(link)
        os.symlink("/etc/systemd/system/%s" % unit, link)
        written.append(os.path.relpath(link, root))
    for folder in ("var/log/gpufleet-sim", "var/lib/gpufleet-sim"):
        if not os.path.isdir(os.path.join(root, folder)):
            os.makedirs(os.path.join(root, folder))
    # the simulated kernel log exists from the start, as a host's kern.log does
    kernel_log = os.path.join(root, "var/log/gpufleet-sim/kern.log")
    if not os.path.exists(kernel_log):
        open(kernel_log, "a").close()
    if state is not None:
        written.append(os.path.relpath(write_state(state, root), root))
    return written


def parse_layouts(items):
    """["0=3g.40gb,3g.40gb", "1=7g.80gb"] -> {0: ["3g.40gb", "3g.40gb"], 1: ["7g.80gb"]}."""
    layouts = {}
    for item in items or []:
        index, _sep, tokens = item.partition("=")
        layouts[int(index)] = [token for token in tokens.split(",") if token]
    return layouts


def main(argv=None):
    parser = argparse.ArgumentParser(description="Build the state of the simulated NVIDIA stack.")
    parser.add_argument("--gpu", required=True, help="product name, e.g. 'NVIDIA A100-SXM4-80GB'")
    parser.add_argument("--count", type=int, default=1)
    parser.add_argument("--driver", default="550.90.07")
    parser.add_argument("--kernel-module", help="loaded module version when it differs from --driver")
    parser.add_argument("--host", default="fleet-01")
    parser.add_argument("--persistence", action="store_true")
    parser.add_argument("--compute-mode", default="Default")
    parser.add_argument("--mig", action="store_true", help="MIG mode enabled on every GPU")
    parser.add_argument("--mig-pending", action="store_true", help="MIG mode enabled but pending a reset")
    parser.add_argument("--layout", action="append", help="GPU=PROFILE[,PROFILE...], e.g. 0=3g.40gb,3g.40gb")
    parser.add_argument("--mig-mode-change", default="reset_required", choices=sim.MIG_MODE_CHANGES)
    parser.add_argument("--root", help="write the state under this folder (standing in for /)")
    parser.add_argument("--install", action="store_true", help="also install the simulator files under --root")
    args = parser.parse_args(argv)
    state = state_for(args.gpu, args.count, driver=args.driver, kernel_module=args.kernel_module, host=args.host,
                      persistence_mode=args.persistence, compute_mode=args.compute_mode,
                      mig=args.mig, mig_pending=True if args.mig_pending else None,
                      mig_layouts=parse_layouts(args.layout), mig_mode_change=args.mig_mode_change)
    if args.root and args.install:
        install(args.root, state)
    elif args.root:
        write_state(state, args.root)
    else:
        print(json.dumps(state, indent=1, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
