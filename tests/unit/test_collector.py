import pytest

from ansible_collections.gpufleet.core.plugins.module_utils import collector
from ansible_collections.gpufleet.core.plugins.module_utils.facts_model import new_facts, new_gpu


@pytest.mark.parametrize("requested, expected", [
    (None, list(collector.ALL_SUBSETS)),
    (["all"], list(collector.ALL_SUBSETS)),
    (["min"], ["driver", "gpus"]),
    (["driver"], ["driver"]),
    (["mig"], ["driver", "gpus", "mig"]),
    (["all", "!kernel_log"], ["driver", "gpus", "processes", "mig", "nvlink", "host"]),
    (["!host"], ["driver", "gpus", "processes", "mig", "nvlink", "kernel_log"]),
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
