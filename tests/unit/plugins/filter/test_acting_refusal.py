"""The filter gpufleet.core.acting_refusal: the host's facts (or, before any, the inventory's facts source) and
its connection give the refusal message of remediate.yml and driver_rollout.yml, or an empty string."""

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.gpufleet.core.plugins.filter.acting_refusal import acting_refusal
from ansible_collections.gpufleet.core.plugins.plugin_utils.acting_target import refusal_message

REPLAYED = "its facts are replayed from a recorded fixture (gpufleet_facts_source=replay), not read from a machine"


def test_the_filter_reads_the_facts_source_and_host_name():
    replayed = {"source": "replay", "host": {"hostname": "gpu-h100-ok-01"}}
    assert acting_refusal(replayed, "gpu-h100-ok-01", "local", plan="would run mig_layout") == refusal_message(
        "gpu-h100-ok-01", REPLAYED, "would run mig_layout")
    assert acting_refusal(replayed, "gpu-h100-ok-01", "local", part="reason") == REPLAYED
    # the facts' own source wins over the inventory's
    live = {"source": "nvidia_smi", "host": {"hostname": "fleet-01"}}
    assert acting_refusal(live, "fleet-01", "ssh", facts_source="replay") == ""
    # before any facts: the inventory's gpufleet_facts_source
    assert acting_refusal(None, "fleet-01", "ssh", facts_source="replay", part="reason") == REPLAYED
    assert acting_refusal(None, "fleet-01", "ssh") == ""
    # facts whose host section is not a mapping: the inventory name stands for the machine
    assert "inventory name is gpu-9" in acting_refusal({"source": "nvml", "host": "x"}, "gpu-9", "local")


@pytest.mark.parametrize("facts, part, message", [
    ("facts", "message", "expects the host's gpu_facts or null, got str"),
    (None, "all", "part must be message or reason, got 'all'"),
])
def test_the_filter_names_bad_input(facts, part, message):
    with pytest.raises(AnsibleFilterError, match=message):
        acting_refusal(facts, "h", "ssh", part=part)
