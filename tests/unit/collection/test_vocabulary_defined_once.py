"""One vocabulary (module_utils/vocabulary.py) read by the argument specs, the report model, remediation and
remediate.yml; one rule declaration from which every finding takes its id, layer and default severity."""

import ast
import glob
import os

import pytest
import yaml

from ansible_collections.gpufleet.core.plugins.module_utils import vocabulary
from ansible_collections.gpufleet.core.plugins.modules import audit_report
from ansible_collections.gpufleet.core.plugins.plugin_utils.rules import findings
from ansible_collections.gpufleet.core.plugins.plugin_utils.audit import remediation
from ansible_collections.gpufleet.core.plugins.plugin_utils.reports import model as report_model
from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.diagnose import make_context
from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.knowledge import load_knowledge
from ansible_collections.gpufleet.core.plugins.plugin_utils.policy import validate_policy
from tests.support.schema_check import ROOT


def test_severities_rank_worst_first_and_fail_severities_add_none():
    assert vocabulary.SEVERITY_RANK == {"critical": 3, "warning": 2, "info": 1}
    assert vocabulary.FAIL_SEVERITIES == ("critical", "warning", "info", "none")
    assert [findings.severity_rank(s) for s in vocabulary.SEVERITIES] == [3, 2, 1]
    assert vocabulary.LAYER_ORDER == {"hardware": 0, "driver": 1, "scheduling": 2, "workload": 3}


def test_audit_report_choices_and_its_documentation_are_the_vocabulary():
    assert audit_report.ARGUMENT_SPEC["fail_severity"]["choices"] == list(vocabulary.FAIL_SEVERITIES)
    documented = yaml.safe_load(audit_report.DOCUMENTATION)["options"]["fail_severity"]["choices"]
    assert documented == list(vocabulary.FAIL_SEVERITIES)
    returned = yaml.safe_load(audit_report.RETURN)["fixable_roles"]["sample"]
    assert returned == list(vocabulary.FIXABLE_ROLES)


def test_the_report_model_and_remediation_use_the_same_names():
    assert report_model.FAIL_SEVERITIES is vocabulary.FAIL_SEVERITIES
    assert report_model.LAYERS is vocabulary.LAYERS
    assert remediation.REMEDIATION_ROLES is vocabulary.REMEDIATION_ROLES


def test_remediate_yml_selects_roles_from_the_audit_result_not_from_its_own_list():
    with open(os.path.join(ROOT, "playbooks", "remediate.yml")) as handle:
        text = handle.read()
    assert "select('in', gpufleet_audit.fixable_roles)" in text
    for role in vocabulary.FIXABLE_ROLES:
        assert "'%s'," % role not in text


def test_fixes_come_in_the_order_remediate_yml_runs_its_roles():
    report = {"findings": [
        {"host": "a", "rule": "workload.restart_policy", "fix": "restart_policy"},
        {"host": "a", "rule": "scheduling.mig_layout_drift", "fix": "mig_layout"},
        {"host": "a", "rule": "driver.kernel_userspace_mismatch", "fix": None},
        {"host": "a", "rule": "driver.pin_drift", "fix": "driver"},  # driver_rollout.yml's, not remediate.yml's
    ]}
    assert remediation.fixes_by_host(report) == {"a": ["driver", "mig_layout", "restart_policy"]}
    assert vocabulary.FIXABLE_ROLES == ("driver", "gpu_settings", "mig_layout", "worker_limits", "restart_policy")


# ---------------------------------------------------------------- one rule declaration

@pytest.fixture
def scratch_rule():
    added = []

    def declare(rule_id, *args, **kwargs):
        added.append(rule_id)
        return findings.rule(rule_id, *args, **kwargs)
    yield declare
    for rule_id in added:
        findings.RULES.pop(rule_id, None)


def context():
    policy = validate_policy({})
    return make_context("node-1", {"gpus": [{"index": 0, "pci_bus_id": "0000:18:00.0"}]}, policy,
                        load_knowledge(), now="2026-11-30T06:00:00Z")


def test_a_rule_declared_once_gives_its_findings_their_id_layer_severity_and_fix(scratch_rule):
    @scratch_rule("workload.test_only", "workload", "warning", "A rule of this test", fix="worker_limits", scope="gpu")
    def check(ctx, gpu):
        return [ctx.finding(gpu, "declared", {}, "act"),
                ctx.finding(gpu, "worse", {}, "act", severity="critical", fix=None)]

    declared, worse = check(context(), {"index": 0, "pci_bus_id": "0000:18:00.0"})
    assert {k: declared[k] for k in ("rule", "layer", "severity", "host", "gpu", "fix")} == {
        "rule": "workload.test_only", "layer": "workload", "severity": "warning", "host": "node-1",
        "gpu": "0000:18:00.0", "fix": "worker_limits"}
    assert (worse["rule"], worse["severity"], worse["fix"]) == ("workload.test_only", "critical", None)
    assert findings.RULES["workload.test_only"].check is check


def test_a_declaration_outside_the_vocabulary_is_refused(scratch_rule):
    with pytest.raises(ValueError, match="layer 'gpu' is not one of hardware, driver"):
        scratch_rule("gpu.test_only", "gpu", "warning", "bad layer")(lambda ctx: ())
    with pytest.raises(ValueError, match="severity 'fatal' is not one of critical, warning, info"):
        scratch_rule("hardware.test_only", "hardware", "fatal", "bad severity")(lambda ctx: ())


def _finding_calls(path):
    with open(path) as handle:
        tree = ast.parse(handle.read())
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", None)) in (
                "finding", "make_finding"):
            yield node


@pytest.mark.parametrize("path", sorted(path for path in glob.glob(os.path.join(ROOT, "plugins", "plugin_utils", "rules", "*.py"))
                                        if os.path.basename(path) != "findings.py"),  # where finding() is defined
                         ids=os.path.basename)
def test_rules_do_not_repeat_their_id_or_layer_where_they_emit_a_finding(path):
    for call in _finding_calls(path):
        literals = [arg.value for arg in call.args[:2] if isinstance(arg, ast.Constant) and isinstance(arg.value, str)]
        repeated = [text for text in literals if text.split(".", 1)[0] in vocabulary.LAYERS]
        assert not repeated, "%s:%d repeats %s" % (os.path.basename(path), call.lineno, repeated)
        if os.path.basename(path) != "custom.py":  # custom rules are declared in the policy
            assert getattr(call.func, "id", None) != "make_finding", "%s:%d" % (path, call.lineno)
