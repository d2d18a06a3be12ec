"""Driver rollout decisions (plugin_utils/rollout/plan.py): what a host needs, refusals from the compatibility
data, verification after the change, the host's record, canary batches, the stop rule and the report."""

import pytest

from ansible_collections.gpufleet.core.plugins.plugin_utils.rollout import plan as D
from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.knowledge import load_knowledge
from ansible_collections.gpufleet.core.plugins.filter.driver_plan import driver_plan as driver_plan_filter
from ansible_collections.gpufleet.core.plugins.plugin_utils.policy import validate_policy
from tests.support.driver_plan_builders import H100, PACKAGE, facts, policy

KNOWLEDGE = load_knowledge()


def plan(mode="rollout", pol=None, fct=None, record=None, installed="550.90.07-1", force=False):
    return D.plan_host(mode, pol or policy(pin="550.127.05"), fct if fct is not None else facts(), record or {},
                       installed, KNOWLEDGE, force)


# ------------------------------------------------------------------ versions

@pytest.mark.parametrize("package, driver", [("550.90.07-1", "550.90.07"), ("3:550.90.07-1.el9", "550.90.07"),
                                             ("550.90.07", "550.90.07"), ("565.57.01-0ubuntu1", "565.57.01"),
                                             (None, None)])
def test_package_version_to_driver_version(package, driver):
    assert D.package_driver_version(package) == driver


def test_installed_version_from_package_facts_apt_and_rpm():
    assert D.installed_package_version({PACKAGE: [{"version": "550.90.07-1", "source": "apt"}]}, PACKAGE) == "550.90.07-1"
    assert D.installed_package_version({PACKAGE: [{"version": "550.90.07", "release": "1.el9"}]}, PACKAGE) == "550.90.07-1.el9"
    assert D.installed_package_version({}, PACKAGE) is None


# ------------------------------------------------------------------ what a host needs

def test_rollout_installs_the_pin_on_a_host_that_runs_another_version():
    result = plan()
    assert (result["action"], result["target"], result["installed"], result["loaded"]) == (
        "install", "550.127.05", "550.90.07", "550.90.07")
    assert result["expected_gpu_count"] == 2 and result["gpu_names"] == [H100]


def test_a_host_on_the_pin_with_its_module_loaded_is_left_alone():
    result = plan(fct=facts("550.127.05"), installed="550.127.05-1")
    assert result["action"] == "none" and result["refused"] == [] and result["error"] is None


def test_a_host_whose_package_is_on_the_pin_but_whose_module_is_not_only_needs_the_module_loaded():
    result = plan(fct=facts("550.90.07", mismatch="550.127.05"), installed="550.127.05-1")
    assert result["action"] == "restart" and result["mismatch"] is True and result["loaded"] == "550.90.07"


def test_a_version_that_does_not_support_the_gpu_is_refused_unless_forced():
    refused = plan(pol=policy(pin="470.82.01"))
    assert refused["action"] == "none"
    assert refused["refused"] == ["NVIDIA H100 80GB HBM3 (hopper) needs driver branch R525 or newer "
                                  "(model H100-SXM5-80GB); driver 470.82.01 is R470"]
    assert plan(pol=policy(pin="470.82.01"), force=True)["action"] == "install"
    forced_by_policy = policy(pin="470.82.01", rollout={"force": True})
    assert plan(pol=forced_by_policy)["action"] == "install"


def test_a_version_older_than_the_required_cuda_toolkit_needs_is_refused():
    pol = validate_policy({"driver": {"package": PACKAGE, "pin": "535.183.06"}, "cuda": {"toolkits_required": ["12.4"]}})
    result = plan(pol=pol)
    assert result["refused"] == ["CUDA 12.4 needs driver 550.54.14 or newer; 535.183.06 is older"]


def test_rollout_without_pin_or_package_and_rollback_without_record_cannot_be_handled():
    assert plan(pol=validate_policy({"driver": {"package": PACKAGE}}))["error"] == \
        "the policy sets no driver.pin to roll out"
    assert plan(pol=validate_policy({"driver": {"pin": "550.127.05"}}))["error"].startswith(
        "the policy sets no driver.package")
    assert plan("rollback")["error"] == "no previous driver version is recorded on this host (nothing to roll back to)"


def test_rollback_goes_to_the_recorded_previous_version():
    record = {"current": "550.127.05", "previous": "550.90.07"}
    result = plan("rollback", fct=facts("550.127.05"), record=record, installed="550.127.05-1")
    assert (result["action"], result["target"]) == ("install", "550.90.07")


def test_repair_restarts_only_a_mismatched_host_and_keeps_the_package():
    record = {"gpu_count": 2, "gpus": [H100]}
    result = plan("repair", fct=facts("550.90.07", mismatch="550.127.05"), record=record, installed="550.127.05-1")
    assert (result["action"], result["target"], result["expected_gpu_count"]) == ("restart", "550.127.05", 2)
    assert result["gpu_names"] == [H100]
    assert plan("repair", fct=facts("550.90.07"))["action"] == "none"


def test_during_a_mismatch_the_expected_gpu_count_comes_from_the_record_then_the_policy():
    mismatched = facts("550.90.07", mismatch="550.127.05")
    assert D.expected_gpu_count(mismatched, {"gpu_count": 8}, policy()) == 8
    assert D.expected_gpu_count(mismatched, {}, validate_policy({"gpus": {"expected_count": 4}})) == 4
    assert D.expected_gpu_count(facts(gpus=3, lost=(2,)), {"gpu_count": 8}, policy()) == 2


def test_unknown_mode_is_an_error():
    with pytest.raises(ValueError, match="mode must be one of rollout, rollback, repair"):
        plan("upgrade")


# ------------------------------------------------------------------ verification

def test_a_clean_new_driver_verifies():
    assert D.verify_driver("h1", facts("550.127.05"), policy(pin="550.127.05"), "550.127.05", 2, KNOWLEDGE) == []


def test_a_missing_gpu_a_wrong_version_or_a_mismatch_fail_the_verification():
    lost = D.verify_driver("h1", facts("550.127.05", lost=(0,)), policy(pin="550.127.05"), "550.127.05", 2, KNOWLEDGE)
    assert lost == ["1 of 2 GPUs present (lost: 00000000:18:00.0)"]
    fewer = D.verify_driver("h1", facts("550.127.05", gpus=1), policy(pin="550.127.05"), "550.127.05", 2, KNOWLEDGE)
    assert fewer == ["1 of 2 GPUs present"]
    wrong = D.verify_driver("h1", facts("550.90.07"), policy(pin="550.127.05"), "550.127.05", 2, KNOWLEDGE)
    assert wrong == ["driver 550.90.07 answers, not 550.127.05"]
    mismatch = D.verify_driver("h1", facts("550.90.07", mismatch="550.127.05"), policy(), "550.127.05", 2, KNOWLEDGE)
    assert mismatch[:2] == ["no NVIDIA driver answered after the change",
                            "kernel module 550.90.07 and userspace library 550.127.05 still differ"]
    assert "driver.kernel_userspace_mismatch: Kernel module 550.90.07 and userspace library 550.127.05 differ" in mismatch


def test_a_critical_driver_layer_finding_fails_the_verification():
    pol = validate_policy({"driver": {"package": PACKAGE}, "cuda": {"toolkits_required": ["13.0"]},
                           "persistence_mode": None})
    problems = D.verify_driver("h1", facts("550.127.05"), pol, "550.127.05", 2, KNOWLEDGE)
    assert problems == ["driver.cuda_toolkit_unsupported: Driver 550.127.05 is below 580.65.06 needed by CUDA 13.0 "
                        "(policy cuda.toolkits_required)"]
    # below the full-support driver but within minor-version compatibility: a warning, not a failure
    pol["cuda"]["toolkits_required"] = ["12.8"]
    assert D.verify_driver("h1", facts("550.127.05"), pol, "550.127.05", 2, KNOWLEDGE) == []


# ------------------------------------------------------------------ record

def test_the_record_keeps_the_previous_version_and_a_history():
    first = D.updated_record({}, plan(), facts("550.127.05"), "2026-01-01T00:00:00Z")
    assert (first["current"], first["previous"], first["gpu_count"], first["gpus"]) == (
        "550.127.05", "550.90.07", 2, [H100])
    assert first["history"] == [{"at": "2026-01-01T00:00:00Z", "mode": "rollout", "from": "550.90.07", "to": "550.127.05"}]
    back = D.updated_record(first, plan("rollback", fct=facts("550.127.05"), record=first, installed="550.127.05-1"),
                            facts("550.90.07"), "2026-01-02T00:00:00Z")
    assert (back["current"], back["previous"], len(back["history"])) == ("550.90.07", "550.127.05", 2)


def test_a_repair_keeps_the_previous_version():
    record = {"current": "550.127.05", "previous": "550.90.07"}
    repair = plan("repair", fct=facts("550.90.07", mismatch="550.127.05"), record=record, installed="550.127.05-1")
    after = D.updated_record(record, repair, facts("550.127.05"), "2026-01-01T00:00:00Z")
    assert (after["current"], after["previous"]) == ("550.127.05", "550.90.07")
    assert after["history"][-1]["reload"] is True


# ------------------------------------------------------------------ batches, stop rule, report

@pytest.mark.parametrize("hosts, batches, sizes", [
    (4, [1, "10%", "100%"], [1, 1, 2]),
    (100, [1, "10%", "100%"], [1, 10, 89]),
    (25, [1, "10%", "100%"], [1, 2, 22]),
    (5, [2], [2, 2, 1]),
    (1, [1, "10%", "100%"], [1]),
    (0, [1], []),
])
def test_batch_sizes_follow_ansible_serial(hosts, batches, sizes):
    assert D.batch_sizes(hosts, batches) == sizes


def test_a_batch_stops_the_rollout_when_its_failed_share_is_above_the_limit():
    assert D.batch_exceeds(["changed", "failed"], 0) is True
    assert D.batch_exceeds(["changed", "failed"], 50) is False
    assert D.batch_exceeds(["changed", "refused", "failed"], 50) is True
    assert D.batch_exceeds(["changed", "unchanged"], 0) is False


def test_rollout_settings_must_agree_between_hosts():
    same = {"a": policy(), "b": policy()}
    assert D.rollout_settings(same) == {"batches": [1, "10%", "100%"], "max_fail_percentage": 0}
    different = {"a": policy(), "b": policy(rollout={"max_fail_percentage": 25})}
    with pytest.raises(ValueError, match="differ between the hosts of this rollout"):
        D.rollout_settings(different)


def test_report_says_which_hosts_changed_failed_and_were_never_touched():
    outcomes = {"h1": {"status": "changed", "batch": 1, "from": "550.90.07", "to": "550.127.05", "action": "install"},
                "h2": {"status": "failed", "batch": 2, "msg": "1 of 2 GPUs present"}}
    settings = {"batches": [1, "10%", "100%"], "max_fail_percentage": 0}
    report = D.rollout_report("rollout", ["h1", "h2", "h3", "h4"], outcomes, settings, "t0", "t1")
    assert (report["changed"], report["failed"], report["untouched"]) == (["h1"], ["h2"], ["h3", "h4"])
    assert report["stopped"] is True and report["stopped_after_batch"] == 2 and report["batch_sizes"] == [1, 1, 2]
    lines = D.report_summary(report, "/r/driver.json")
    assert lines[0] == ("Driver rollout: 1 changed, 0 unchanged, 1 failed, 2 untouched, 0 not acted on "
                        "(batches [1, 1, 2] of [1, '10%', '100%'], max_fail_percentage 0)")
    assert "  changed h1: 550.90.07 -> 550.127.05 (install)" in lines
    assert "  FAILED h2: 1 of 2 GPUs present" in lines
    assert "  stopped after batch 2; never touched: h3, h4" in lines and lines[-1] == "  report: /r/driver.json"


def test_filter_runs_the_steps_and_names_a_missing_input():
    from ansible.errors import AnsibleFilterError
    result = driver_plan_filter({"mode": "rollout", "policy": policy(pin="550.127.05"), "facts": facts(),
                                 "record": {}, "installed": "550.90.07-1"}, "host")
    assert result["action"] == "install"
    with pytest.raises(AnsibleFilterError, match="missing input 'host'"):
        driver_plan_filter({}, "verify")
    with pytest.raises(AnsibleFilterError, match="step must be one of"):
        driver_plan_filter({}, "nope")
