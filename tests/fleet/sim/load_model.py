# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""How a simulated GPU answers under load (python3 standard library only).

A GPU of the state may have a "load" mapping (scenario overrides set it):

    power_per_worker_w        watts each GPU process adds to the idle draw (capped at the power limit)
    power_cap_w               at or above this draw the GPU throttles: clock event reason sw_power_cap, the SM
                              and graphics clocks drop to throttled_clock_pct of their maximum
    throttled_clock_pct       default 70
    utilization_per_worker_pct  GPU utilization each process adds (at most 100)
    temperature_per_worker_c  degrees each process adds to the idle temperature
    xid_at_workers, xid       when a worker registers as the xid_at_workers-th process on this GPU, the kernel
                              log gets "NVRM: Xid (PCI:...): <xid>, pid=..., name=..." (gpu_worker.py)

Without "load" a GPU answers as the state says, busy or not (the other scenarios rely on that).
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import copy

XID_MESSAGES = {
    48: "An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at partition 6, "
        "subpartition 0.",
    79: "GPU has fallen off the bus.",
    119: "Timeout after 6s of waiting for RPC response from GPU0 GSP! Expected function 76 (GSP_RM_CONTROL).",
    13: "Graphics SM Warp Exception on (GPC 0, TPC 0, SM 0): Out Of Range Address",
}


def under_load(gpu, procs):
    """The GPU as nvidia-smi reports it with procs (its live processes) running; gpu itself is not changed."""
    model = gpu.get("load")
    if not model or not procs:
        return gpu
    busy = copy.deepcopy(gpu)
    workers = len(procs)
    power = busy.setdefault("power", {})
    idle_draw = power.get("draw_w") or 0
    draw = idle_draw + workers * float(model.get("power_per_worker_w") or 0)
    if power.get("limit_w"):
        draw = min(draw, float(power["limit_w"]))
    power["draw_w"] = draw
    utilization = busy.setdefault("utilization", {})
    utilization["gpu_pct"] = min(100, workers * int(model.get("utilization_per_worker_pct") or 20))
    utilization["memory_pct"] = min(100, workers * 5)
    temperature = busy.setdefault("temperature", {})
    if temperature.get("gpu_c") is not None:
        temperature["gpu_c"] += workers * int(model.get("temperature_per_worker_c") or 0)
    reasons = [reason for reason in busy.get("clock_event_reasons") or [] if reason != "gpu_idle"]
    cap = model.get("power_cap_w")
    if cap is not None and draw >= cap:
        if "sw_power_cap" not in reasons:
            reasons.append("sw_power_cap")
        clocks = busy.setdefault("clocks", {})
        share = int(model.get("throttled_clock_pct") or 70) / 100.0
        for name in ("graphics_mhz", "sm_mhz"):
            if clocks.get("max_" + name):
                clocks[name] = int(clocks["max_" + name] * share)
    busy["clock_event_reasons"] = reasons
    return busy


def xid_line(gpu, pid, name):
    """The kernel message of the Xid the GPU's load model logs, or None when it logs none."""
    model = gpu.get("load") or {}
    xid = model.get("xid")
    if not xid:
        return None
    domain, bus, device = gpu["pci_bus_id"].split(":")[0][-4:], gpu["pci_bus_id"].split(":")[1], \
        gpu["pci_bus_id"].split(":")[2].split(".")[0]
    return "NVRM: Xid (PCI:%s:%s:%s): %d, pid=%d, name=%s, %s" % (
        domain, bus, device, xid, pid, name, XID_MESSAGES.get(xid, "Xid %d raised by the simulator." % xid))


def logs_xid_now(gpu, processes_with_this_one):
    model = gpu.get("load") or {}
    return bool(model.get("xid")) and model.get("xid_at_workers") == processes_with_this_one
