import time

import pynvml
import pytest

from ansible_collections.gpufleet.core.plugins.module_utils import collector
from ansible_collections.gpufleet.core.plugins.module_utils.host_io import ReplayHost
from simulator.nvml_sim import SimulatedNvmlLibrary, scenario_h100_node
from tests.support.schema_check import assert_valid_facts
from ansible_collections.gpufleet.core.plugins.module_utils.facts_model import new_facts, new_gpu
from tests.support.hanging_host import HangingOn


@pytest.mark.parametrize("requested, expected", [
    (None, list(collector.ALL_SUBSETS)),
    (["all"], list(collector.ALL_SUBSETS)),
    (["min"], ["driver", "gpus"]),
    (["driver"], ["driver"]),
    (["mig"], ["driver", "gpus", "mig"]),
    (["all", "!kernel_log"], ["driver", "gpus", "processes", "mig", "nvlink", "host", "driver_clients",
                              "workload", "host_pressure", "bmc", "kubernetes", "fabric"]),
    (["!host"], ["driver", "gpus", "processes", "mig", "nvlink", "kernel_log", "driver_clients",
                 "workload", "host_pressure", "bmc", "kubernetes", "fabric"]),
    (["fabric"], ["fabric"]),
    (["host"], ["host"]),
])
def test_gather_subset_resolves_like_setup(requested, expected):
    assert collector.resolve_gather_subset(requested) == expected


def test_unknown_subset_is_named_in_the_error():
    with pytest.raises(collector.CollectionError, match="'gpu'"):
        collector.resolve_gather_subset(["gpu"])


def _facts(kernel=None, userspace=None, events=()):
    facts = new_facts()
    facts["driver"]["kernel_module_version"] = kernel
    facts["driver"]["userspace_version"] = userspace
    facts["kernel_events"] = [dict(kind="api_mismatch", time=None, pci_bus_id=None, message="API mismatch",
                                   client_version=c, kernel_module_version=k) for c, k in events]
    return facts


def test_mismatch_when_kernel_module_and_library_differ():
    facts = _facts("550.54.15", "550.90.07")
    collector.settle_driver_mismatch(facts)
    assert facts["driver"]["mismatch"] is True
    assert "550.54.15" in facts["driver"]["mismatch_reason"] and "550.90.07" in facts["driver"]["mismatch_reason"]


def test_no_mismatch_when_versions_agree_even_with_an_old_log_message():
    facts = _facts("550.90.07", "550.90.07", events=[("550.90.07", "550.54.15")])
    collector.settle_driver_mismatch(facts)
    assert facts["driver"]["mismatch"] is False


def test_kernel_log_mismatch_counts_while_its_versions_are_current():
    facts = _facts("530.30.02", None, events=[("535.54.03", "530.30.02")])
    collector.settle_driver_mismatch(facts)
    assert facts["driver"]["mismatch"] is True
    assert facts["driver"]["mismatch_reason"].startswith("kernel log")


def test_kernel_log_mismatch_ignored_after_the_module_was_reloaded():
    facts = _facts("535.54.03", None, events=[("535.54.03", "530.30.02")])
    collector.settle_driver_mismatch(facts)
    assert facts["driver"]["mismatch"] is False


def test_prune_drops_parts_that_were_not_asked_for():
    facts = new_facts()
    gpu = new_gpu(0)
    gpu["processes"] = [{"pid": 1}]
    gpu["nvlinks"] = [{"link": 0}]
    gpu["mig"]["gpu_instances"] = [{"id": 1}]
    facts["gpus"].append(gpu)
    collector.prune_unrequested(facts, ["driver", "gpus", "nvlink"])
    assert gpu["processes"] == [] and gpu["mig"]["gpu_instances"] == [] and gpu["nvlinks"] == [{"link": 0}]


@pytest.mark.parametrize("fixture, message", [
    ([], "not a gpufleet fixture"),
    ({"format": "gpufleet-fixture", "format_version": 9, "source": "nvml"}, "format_version 9"),
    ({"format": "gpufleet-fixture", "format_version": 1, "source": "cuda"}, "source must be"),
])
def test_bad_fixture_is_refused_with_its_path(fixture, message):
    with pytest.raises(collector.CollectionError, match=message) as info:
        collector.validate_fixture(fixture, "/srv/f.json")
    assert "/srv/f.json" in str(info.value)


def test_hung_nvml_call_returns_finished_gpus_within_the_timeout():
    library = HangingOn(SimulatedNvmlLibrary(scenario_h100_node(4)), "nvmlDeviceGetHandleByIndex_v2", 2, 30)
    started = time.monotonic()
    facts = collector.Collection(source="nvml", gather_subset=["min"], timeout=2, pynvml=pynvml,
                                 host=ReplayHost({}), nvml_library=library).run()[0]
    assert time.monotonic() - started < 5
    assert [gpu["index"] for gpu in facts["gpus"]] == [0, 1]
    assert any("did not answer within the 2s" in error["reason"] for error in facts["errors"])
    facts["collected_at"] = facts["collected_at"] or "x"
    assert_valid_facts(facts)


def test_simulated_node_through_the_whole_collection_is_schema_valid():
    facts, fixture = collector.Collection(source="auto", pynvml=pynvml, host=ReplayHost({}), record=True,
                                          nvml_library=SimulatedNvmlLibrary(scenario_h100_node(2))).run()
    assert (facts["source"], len(facts["gpus"]), fixture["source"]) == ("nvml", 2, "nvml")
    assert_valid_facts(facts)
    replayed = collector.Collection(source="replay", fixture=fixture, pynvml=pynvml).run()[0]
    assert replayed["replay_of"] == "nvml"
    assert [g["serial"] for g in replayed["gpus"]] == ["SCRUBBED00001", "SCRUBBED00002"]

    def identity_free(gpus):
        return [dict(gpu, uuid=None, serial=None) for gpu in gpus]
    assert identity_free(replayed["gpus"]) == identity_free(facts["gpus"])


def test_an_answering_backend_means_an_old_api_mismatch_in_the_log_is_over():
    facts = _facts(None, "550.127.05", events=[("550.127.05", "550.90.07")])
    facts["source"] = "nvidia_smi"
    collector.settle_driver_mismatch(facts)
    assert facts["driver"]["mismatch"] is False
    facts["source"] = "none"
    collector.settle_driver_mismatch(facts)
    assert facts["driver"]["mismatch"] is True
