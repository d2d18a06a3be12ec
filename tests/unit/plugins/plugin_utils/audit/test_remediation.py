from ansible_collections.gpufleet.core.plugins.plugin_utils.audit.remediation import (
    compare, fixes_by_host, render_summary)


def finding(host, rule, fix=None, gpu=None, severity="warning", action="do it"):
    return {"host": host, "rule": rule, "layer": rule.split(".")[0], "severity": severity, "gpu": gpu,
            "summary": rule, "fix": fix, "action": action, "evidence": {}}


def report(run_id, findings, statuses):
    return {"run": {"id": run_id}, "findings": findings,
            "hosts": {host: {"status": status} for host, status in statuses.items()}}


BEFORE = report("r1", [
    finding("a", "workload.gpu_oversubscribed", "worker_limits", "0000:18:00.0"),
    finding("a", "workload.restart_policy", "restart_policy"),
    finding("b", "scheduling.mig_layout_drift", "mig_layout", "0000:07:00.0"),
    finding("b", "hardware.row_remap", None, "0000:07:00.0", "critical", "Reset the GPU."),
    finding("c", "driver.persistence_mode", "gpu_settings"),
    finding("c", "driver.kernel_userspace_mismatch", "driver", severity="critical"),
    finding("c", "driver.pin_drift", "driver"),
], {"a": "ok", "b": "ok", "c": "ok"})


def test_fixes_by_host_lists_the_roles_in_remediation_order():
    assert fixes_by_host(BEFORE) == {"a": ["worker_limits", "restart_policy"], "b": ["mig_layout"],
                                     "c": ["driver", "gpu_settings"]}


def test_cleared_remaining_and_why():
    after = report("r2", [
        finding("b", "hardware.row_remap", None, "0000:07:00.0", "critical", "Reset the GPU."),
        finding("a", "workload.restart_policy", "restart_policy"),
        finding("c", "driver.kernel_userspace_mismatch", "driver", severity="critical"),
        finding("c", "driver.pin_drift", "driver"),
        finding("c", "workload.memory_near_full", "worker_limits", "0000:18:00.0"),
    ], {"a": "ok", "b": "ok", "c": "ok"})
    record = compare(BEFORE, after, not_converged=["a"])
    assert [(f["host"], f["rule"]) for f in record["cleared"]] == [
        ("a", "workload.gpu_oversubscribed"), ("b", "scheduling.mig_layout_drift"), ("c", "driver.persistence_mode")]
    why = {(f["host"], f["rule"]): f["why"] for f in record["remaining"]}
    assert why[("b", "hardware.row_remap")] == "no role fixes this: it needs a person (Reset the GPU.)"
    assert why[("a", "workload.restart_policy")].startswith("the host was not converged")
    assert why[("c", "driver.kernel_userspace_mismatch")].startswith("the driver role ran")
    assert "driver_rollout.yml" in why[("c", "driver.pin_drift")]
    assert [f["rule"] for f in record["remaining"]][:2] == ["hardware.row_remap", "driver.kernel_userspace_mismatch"]
    assert [(f["host"], f["rule"]) for f in record["new"]] == [("c", "workload.memory_near_full")]
    text = render_summary(record)
    assert text.startswith("Remediation r1 -> r2: 3 finding(s) cleared, 4 remain, 1 new")
    assert "Not converged: a" in text


def test_a_host_the_second_audit_could_not_read_has_nothing_cleared():
    after = report("r2", [], {"a": "ok", "b": "unreachable", "c": "ok"})
    record = compare(BEFORE, after)
    assert {f["host"] for f in record["cleared"]} == {"a", "c"}
    assert {(f["host"], f["rule"]) for f in record["remaining"]} == {
        ("b", "scheduling.mig_layout_drift"), ("b", "hardware.row_remap")}
    assert record["not_converged"] == ["b"]


def test_a_host_the_run_refused_to_act_on_never_reads_as_a_role_that_ran():
    refused = "c: not acted on, plan only: would run driver, gpu_settings. Refused because its facts are replayed."
    record = compare(BEFORE, report("r2", BEFORE["findings"], {"a": "ok", "b": "ok", "c": "ok"}),
                     not_acted={"c": refused})
    assert record["remediation_version"] == "1.2" and record["not_acted"] == {"c": refused}
    why = {(f["host"], f["rule"]): f["why"] for f in record["remaining"]}
    assert why[("c", "driver.kernel_userspace_mismatch")] == why[("c", "driver.persistence_mode")] == (
        "no role acted on this host: the run refused it (not_acted in remediation.json says why)")
    assert why[("a", "workload.restart_policy")].startswith("the restart_policy role ran")
    assert "Not acted on (refused, see above): c" in render_summary(record).splitlines()


def test_a_host_the_compared_run_did_not_audit_is_never_cleared():
    # the folder compared with audited a and b only (--limit); the later run audited a and c
    before = report("r1", [finding("b", "hardware.row_remap", None, "0000:07:00.0", "critical"),
                           finding("a", "workload.restart_policy", "restart_policy")], {"a": "ok", "b": "ok"})
    after = report("r2", [finding("c", "driver.pin_drift", "driver")], {"a": "ok", "c": "ok"})
    record = compare(before, after)
    assert [(f["host"], f["rule"]) for f in record["cleared"]] == [("a", "workload.restart_policy")]
    assert record["remaining"] == [] and record["new"] == [] and record["not_converged"] == []
    assert [(f["host"], f["rule"], f["why"]) for f in record["not_compared"]] == [
        ("b", "hardware.row_remap", "run r2 did not audit b"), ("c", "driver.pin_drift", "run r1 did not audit c")]
    text = render_summary(record)
    assert text.startswith("Remediation r1 -> r2: 1 finding(s) cleared, 0 remain, 0 new")
    assert "Not compared: 2 finding(s) of hosts only one of the two runs audited (b, c)" in text
