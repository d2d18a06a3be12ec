"""The driver role's process check (plugin_utils/rollout/drain.py) says unknown where gpu_facts could not list a
GPU's processes (the modules' side: tests/unit/plugins/module_utils/test_gpu_processes.py)."""

from ansible_collections.gpufleet.core.plugins.filter.driver_plan import driver_plan


def gpu(index, processes):
    return {"index": index, "processes": processes}


def test_driver_role_processes_from_facts_then_device_files_then_unknown():
    known = driver_plan({"facts": {"gpus": [gpu(0, [{"pid": 4}]), gpu(1, [{"pid": 4}, {"pid": 9}])], "errors": []}},
                        "processes")
    assert known == {"known": True, "pids": [4, 9], "source": "gpu_facts", "unknown": ""}
    mismatch = {"gpus": [], "errors": [{"gpu": None, "call": "nvidia-smi -q -x",
                                        "reason": "Driver/library version mismatch"}]}
    unknown = driver_plan({"facts": mismatch}, "processes")
    assert unknown["known"] is False and "Driver/library version mismatch" in unknown["unknown"]
    failed_scan = driver_plan({"facts": mismatch, "scan": {"rc": 3, "stdout": ""}}, "processes")
    assert failed_scan["known"] is False
    scanned = driver_plan({"facts": mismatch, "scan": {"rc": 0, "stdout": "812 python3\n77 nvidia-persistenced\n"}},
                          "processes")
    assert (scanned["known"], scanned["pids"], scanned["source"]) == (True, [812], "device files")
    idle = driver_plan({"facts": mismatch, "scan": {"rc": 0, "stdout": ""}}, "processes")
    assert (idle["known"], idle["pids"]) == (True, [])
