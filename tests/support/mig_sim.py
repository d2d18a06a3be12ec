"""The fleet simulator's nvidia-smi (tests/fleet/sim) run locally, for the MIG and GPU mode modules."""

import importlib.util
import json
import os
import stat
import sys


SIM_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fleet", "sim")
A100 = "NVIDIA A100-SXM4-80GB"


def load_sim_state_module():
    spec = importlib.util.spec_from_file_location("gpufleet_sim_state", os.path.join(SIM_DIR, "state.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


SIM_STATE = load_sim_state_module()


class Sim:
    """The simulated host: its state file, registered processes and an nvidia-smi on PATH."""

    def __init__(self, root):
        self.root = root

    def write(self, state):
        SIM_STATE.write_state(state, str(self.root))

    def state(self):
        with open(os.path.join(str(self.root), "var/lib/gpufleet-sim/state.json")) as handle:
            return json.load(handle)

    def raw_state(self):
        with open(os.path.join(str(self.root), "var/lib/gpufleet-sim/state.json"), "rb") as handle:
            return handle.read()

    def gpu(self, index):
        return self.state()["gpus"][index]

    def layout(self, index):
        """[(profile, start, [compute instance profiles])] of a GPU, by placement."""
        mig = self.gpu(index)["mig"]
        return sorted((gi["profile"], gi["placement"]["start"], sorted(ci["profile"] for ci in gi["compute_instances"]))
                      for gi in mig["gpu_instances"])

    def use_gpu(self, index):
        """Registers this test process as a CUDA process on the GPU (it is alive, so it counts)."""
        folder = os.path.join(str(self.root), "run/gpufleet-sim/procs")
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, "%d.json" % os.getpid()), "w") as handle:
            json.dump({"gpu": index, "used_mib": 2048, "name": "python3"}, handle)
        return os.getpid()


def sim_on_path(tmp_path, monkeypatch):
    """A Sim in tmp_path whose nvidia-smi is the first on PATH."""
    root = tmp_path / "root"
    root.mkdir()
    folder = tmp_path / "bin"
    folder.mkdir()
    script = folder / "nvidia-smi"
    script.write_text("#!/bin/sh\nexec '%s' -I -S '%s' \"$@\"\n" % (sys.executable, os.path.join(SIM_DIR, "nvidia_smi.py")))
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("GPUFLEET_SIM_ROOT", str(root))
    monkeypatch.setenv("PATH", "%s:%s" % (folder, os.environ["PATH"]))
    return Sim(root)
