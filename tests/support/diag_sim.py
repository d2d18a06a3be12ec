"""The fleet simulator's active-diagnostic tools (tests/fleet/sim/diag_tools.py) on PATH, beside its nvidia-smi."""

import os
import stat
import sys

from tests.support.mig_sim import SIM_DIR, sim_on_path

DIAG_TOOLS = ("dcgmi", "nvbandwidth", "all_reduce_perf", "gpu_burn")


def write_tool(folder, name):
    script = folder / name
    script.write_text("#!/bin/sh\nexec '%s' -I -S '%s' %s \"$@\"\n" % (
        sys.executable, os.path.join(SIM_DIR, "diag_tools.py"), name))
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return str(script)


def diag_sim_on_path(tmp_path, monkeypatch, tools=DIAG_TOOLS):
    """A Sim in tmp_path whose nvidia-smi and the given diagnostic tools are the first on PATH."""
    sim = sim_on_path(tmp_path, monkeypatch)
    for name in tools:
        write_tool(tmp_path / "bin", name)
    return sim
