"""Fleet correlation helpers: audit(fleet) and Xid events added to a node's facts."""

from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.correlate import correlate
from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.diagnose import diagnose_fleet
from tests.support.schema_check import assert_valid_facts
from tests.support.rule_builders import KNOWLEDGE, policy, xid_event


CAUSE_KEYS = {"id", "kind", "layer", "severity", "summary", "hosts", "evidence", "action"}
GSP_TIMEOUT = "Timeout after 6s of waiting for RPC response from GPU1 GSP! Expected function 76 (GSP_RM_CONTROL)"


def audit(fleet, the_policy=None):
    the_policy = the_policy or policy()
    for facts in fleet.values():
        if facts is not None:
            assert_valid_facts(facts)
    policies = {host: the_policy for host in fleet}
    findings = diagnose_fleet(fleet, policies, KNOWLEDGE)
    causes = correlate(fleet, findings, policies)
    for cause in causes:
        assert set(cause) == CAUSE_KEYS
    return findings, causes


def with_xids(facts, xid, bus, count, message=GSP_TIMEOUT, day="2026-11-29"):
    facts["xid_events"] += [xid_event(xid, bus, "%sT0%d:00:00Z" % (day, n), message=message) for n in range(count)]
    return facts
