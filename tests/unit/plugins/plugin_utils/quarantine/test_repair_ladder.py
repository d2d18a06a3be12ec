"""The repair ladder: reset, then reboot, then the return-to-vendor packet after the policy's number of failed
repairs; only the steps the policy allows."""

import pytest

from ansible_collections.gpufleet.core.plugins.plugin_utils.quarantine.repair_ladder import next_repair

ALL = ["reset", "reboot", "rma"]


def tried(*steps):
    return [{"step": step, "result": result, "at": "2026-12-06T23:00:00Z"} for step, result in steps]


@pytest.mark.parametrize("repairs, allowed, max_failed, expected", [
    ((), ALL, 2, "reset"),
    ((("reset", "failed"),), ALL, 2, "reboot"),
    ((("reset", "failed"), ("reboot", "failed")), ALL, 2, "rma"),
    ((("reset", "failed"),), ALL, 1, "rma"),  # one failed repair is the limit: straight to the packet
    ((("reset", "passed"),), ALL, 2, "reboot"),  # asked again: the reset passed but the node still needs a repair
    ((("reset", "failed"), ("reboot", "failed")), ALL, 3, "reboot"),  # steps used up below the limit: the highest again
    ((("reset", "failed"), ("reboot", "failed"), ("reboot", "failed")), ALL, 3, "rma"),
    ((("reset", "failed"), ("reboot", "failed"), ("rma", "passed")), ALL, 2, None),  # the packet is made
    ((), ["reboot", "rma"], 2, "reboot"),
    ((), ["rma", "reset"], 2, "reset"),  # the ladder's order, not the list's
    ((("reset", "failed"),), ["reset"], 2, "reset"),
    ((("reset", "failed"), ("reset", "failed")), ["reset"], 2, None),  # no packet allowed: nothing left
    ((), ["rma"], 2, "rma"),
    ((), [], 2, None),
])
def test_next_repair(repairs, allowed, max_failed, expected):
    assert next_repair(tried(*repairs), allowed, max_failed) == expected


def test_bad_arguments_are_named():
    with pytest.raises(ValueError) as raised:
        next_repair([], ["reset", "pray"], 2)
    assert str(raised.value) == "repair steps 'pray' are not among reset, reboot, rma"
    with pytest.raises(ValueError) as raised:
        next_repair([], ALL, 0)
    assert "max_failed_repairs must be a whole number of at least 1, not 0" in str(raised.value)
