"""The verdict of a host remediate.yml refused to act on (replayed facts, a local connection to another machine):
its second audit may find nothing at or above the fail severity, but nothing was done there, so it fails."""

from ansible_collections.gpufleet.core.plugins.plugin_utils.audit.run import host_verdicts
from ansible_collections.gpufleet.core.plugins.plugin_utils.reports.model import build_report
from tests.support.report_inputs import RUN


def test_a_host_not_acted_on_fails_with_why_and_the_others_keep_their_verdict():
    statuses = {host: {"status": "ok", "facts_file": None, "message": None} for host in ("a", "b", "c")}
    report = build_report(RUN, statuses, {}, [])
    verdicts = host_verdicts(report, accepted=[], not_converged=["c"], not_acted=["b"])
    assert verdicts["a"] == {"verdict": "ok", "msg": "audited"}
    assert verdicts["b"] == {"verdict": "fail", "msg": "not acted on: the remediation refused this host (its "
                                                       "message above says why and how to proceed)"}
    assert verdicts["c"] == {"verdict": "fail", "msg": "not converged by the remediation"}
