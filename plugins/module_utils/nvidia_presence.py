# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Signs of NVIDIA hardware or software on a host, read without NVML or nvidia-smi.

A host whose collector did not answer still shows its GPUs in sysfs, its kernel module in
/sys/module, its driver in /proc and its binaries on disk. These signs tell "the collection
failed" apart from "there is no NVIDIA stack here".
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

PCI_DEVICES = "/sys/bus/pci/devices"
NVIDIA_VENDOR = "0x10de"
KERNEL_MODULE_DIR = "/sys/module/nvidia"
PROC_MODULES = "/proc/modules"
PROC_DRIVER_VERSION = "/proc/driver/nvidia/version"
NVML_LIBRARY_NAME = "libnvidia-ml.so.1"
# Where distributions, the .run installer and the container toolkit put libnvidia-ml.
NVML_LIBRARY_FOLDERS = ("/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib",
                        "/usr/local/nvidia/lib64")
# A host has a few dozen NVIDIA functions at most (8 GPUs with audio functions, NVSwitches).
MAX_PCI_EVIDENCE = 64
_PCI_CLASSES = {"0x0300": "VGA controller", "0x0302": "3D controller", "0x0680": "bridge (NVSwitch)",
                "0x0403": "audio device"}


def _evidence(kind, path, detail=None):
    return {"kind": kind, "path": path, "detail": detail}


def _first_line(text, limit=200):
    lines = (text or "").strip().splitlines()
    return lines[0][:limit] if lines else None


def pci_evidence(host):
    """NVIDIA PCI functions (vendor 0x10de) with their class."""
    found = []
    for name in host.listdir(PCI_DEVICES) or ():
        folder = "%s/%s" % (PCI_DEVICES, name)
        vendor = (host.read_text(folder + "/vendor", 16) or "").strip().lower()
        if vendor != NVIDIA_VENDOR:
            continue
        pci_class = (host.read_text(folder + "/class", 16) or "").strip().lower()
        label = _PCI_CLASSES.get(pci_class[:6], "PCI function")
        found.append(_evidence("pci_device", folder, "%s, class %s" % (label, pci_class or "unknown")))
        if len(found) >= MAX_PCI_EVIDENCE:
            break
    return found


def kernel_module_evidence(host):
    if host.listdir(KERNEL_MODULE_DIR) is not None:
        return [_evidence("kernel_module", KERNEL_MODULE_DIR, "nvidia module loaded")]
    for line in (host.read_text(PROC_MODULES) or "").splitlines():
        if line.split(" ", 1)[0] == "nvidia":
            return [_evidence("kernel_module", PROC_MODULES, "nvidia module loaded")]
    return []


def proc_driver_evidence(host):
    text = host.read_text(PROC_DRIVER_VERSION)
    if text is None:
        return []
    return [_evidence("proc_driver", PROC_DRIVER_VERSION, _first_line(text))]


def binary_evidence(host):
    path = host.find_bin("nvidia-smi")
    return [_evidence("binary", path, "nvidia-smi")] if path else []


def library_evidence(host):
    for folder in NVML_LIBRARY_FOLDERS:
        path = "%s/%s" % (folder, NVML_LIBRARY_NAME)
        # four bytes tell that the file is there without reading a library into the facts
        if host.read_text(path, 4) is not None:
            return [_evidence("library", path, NVML_LIBRARY_NAME)]
    return []


def collect_nvidia_evidence(host):
    """[{kind, path, detail}] of everything that shows an NVIDIA stack: pci_device, kernel_module,
    proc_driver, binary, library. Empty when the host really has none."""
    return (pci_evidence(host) + kernel_module_evidence(host) + proc_driver_evidence(host)
            + binary_evidence(host) + library_evidence(host))
