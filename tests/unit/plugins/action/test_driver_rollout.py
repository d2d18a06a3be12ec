"""gpufleet.core.driver_rollout, the controller's steps of driver_rollout.yml: the plan and its state file,
each batch's start and end (the stop rule), and the report, written atomically as to_nice_json wrote it."""

import calendar
import json
import os
import stat
import types

import pytest
from ansible.errors import AnsibleActionFail
from ansible.plugins.filter.core import to_nice_json

from ansible_collections.gpufleet.core.plugins.action import driver_rollout as driver_rollout_action
from ansible_collections.gpufleet.core.plugins.action.driver_rollout import ActionModule
from ansible_collections.gpufleet.core.plugins.plugin_utils.rollout import run as R
from ansible_collections.gpufleet.core.plugins.plugin_utils.rollout.run import rollout_step as run_step
from ansible_collections.gpufleet.core.plugins.plugin_utils.acting_target import HOW_TO_PROCEED
from tests.support.driver_plan_builders import policy

NOW = calendar.timegm((2026, 12, 1, 12, 0, 0, 0, 0, 0))
HOSTS = ["h1", "h2", "h3", "h4"]
PIN = "550.127.05"


def checked(hosts, policies_by_name=None, assignment=None):
    """policy_check's host_policy and policies: every host on one policy unless told otherwise."""
    policies = policies_by_name or {"p0": policy(pin=PIN)}
    host_policy = assignment or dict.fromkeys(hosts, "p0")
    return host_policy, policies


def step(name, **args):
    args = dict({"step": name, "hosts": None, "policies": None, "host_policy": None, "mode": "rollout",
                 "report_root": None, "state_file": None, "outcomes": None, "refused": {}}, **args)
    return args


@pytest.fixture
def planned(tmp_path):
    host_policy, policies = checked(HOSTS)
    return run_step(step("plan", hosts=HOSTS, host_policy=host_policy, policies=policies,
                         report_root=str(tmp_path / "reports")), False, now=NOW)


def test_the_plan_takes_the_batches_from_the_policy_and_starts_a_hidden_state_file(tmp_path, planned):
    assert (planned["batches"], planned["max_fail_percentage"]) == ([1, "10%", "100%"], 0)
    assert planned["batch_sizes"] == [1, 1, 2] and planned["planned"] == HOSTS
    assert planned["started_at"] == "2026-12-01T12:00:00Z" and planned["mode"] == "rollout"
    # a run folder like every run's, named by the rollout's start: the state hidden in it
    folder, name = os.path.split(planned["state_file"])
    assert folder == planned["run_dir"] == str(tmp_path / "reports" / "20261201T120000Z-driver-rollout")
    assert name == ".rollout-state.json" and stat.S_IMODE(os.stat(planned["state_file"]).st_mode) == 0o600
    state = R.read_state(planned["state_file"])
    assert (state["batch"], state["stopped"], state["outcomes"]) == (0, False, {})


def test_two_rollouts_started_in_the_same_second_keep_their_own_state(tmp_path, planned):
    host_policy, policies = checked(["h9"])
    other = run_step(step("plan", hosts=["h9"], host_policy=host_policy, policies=policies, mode="rollback",
                          report_root=str(tmp_path / "reports")), False, now=NOW)
    again = run_step(step("plan", hosts=["h9"], host_policy=host_policy, policies=policies, mode="rollback",
                          report_root=str(tmp_path / "reports")), False, now=NOW)
    assert len({planned["state_file"], other["state_file"], again["state_file"]}) == 3
    assert sorted(os.listdir(str(tmp_path / "reports"))) == [
        "20261201T120000Z-driver-rollback", "20261201T120000Z-driver-rollback-2", "20261201T120000Z-driver-rollout"]


def test_policies_that_differ_on_the_batches_are_refused_naming_the_hosts(tmp_path):
    slow = policy(pin=PIN, rollout={"batches": [1, 1]})
    host_policy, policies = checked(["a", "b"], {"p0": policy(pin=PIN), "p1": slow}, {"a": "p0", "b": "p1"})
    with pytest.raises(R.RolloutError, match=r"differ between the hosts of this rollout .*: a.*: b"):
        run_step(step("plan", hosts=["a", "b"], host_policy=host_policy, policies=policies,
                      report_root=str(tmp_path)), False, now=NOW)
    assert os.listdir(str(tmp_path)) == []


@pytest.mark.parametrize("hosts, host_policy, mode, message", [
    (["a", "b"], {"a": "p0"}, "rollout", "no checked policy for b; run gpufleet.core.policy_check"),
    (["a"], {"a": "p7"}, "rollout", "no checked policy for a"),
    ([], {}, "rollout", "hosts is empty"),
    (["a"], {"a": "p0"}, "repair", "mode must be one of rollout, rollback, got 'repair'"),
])
def test_bad_plan_input_is_named(tmp_path, hosts, host_policy, mode, message):
    with pytest.raises(R.RolloutError, match=message):
        run_step(step("plan", hosts=hosts, host_policy=host_policy, policies={"p0": policy(pin=PIN)}, mode=mode,
                      report_root=str(tmp_path)), False, now=NOW)


def changed(batch, host):
    return {"status": "changed", "batch": batch, "action": "install", "from": "550.90.07", "to": "550.127.05",
            "mode": "rollout"}


def test_a_failed_canary_stops_the_rollout_and_later_batches_are_untouched(planned):
    path = planned["state_file"]
    assert run_step(step("start_batch", state_file=path, hosts=["h1"]), False) == {
        "batch": 1, "stopped": False, "hosts": ["h1"]}
    assert run_step(step("end_batch", state_file=path, outcomes={"h1": changed(1, "h1")}), False) == {
        "batch": 1, "stopped": False, "failed_hosts": []}
    assert run_step(step("start_batch", state_file=path, hosts=["h2"]), False)["batch"] == 2
    failed = {"status": "failed", "batch": 2, "action": "install", "from": "550.90.07", "to": "550.127.05",
              "msg": "1 of 2 GPUs present"}
    assert run_step(step("end_batch", state_file=path, outcomes={"h2": failed}), False) == {
        "batch": 2, "stopped": True, "failed_hosts": ["h2"]}
    third = run_step(step("start_batch", state_file=path, hosts=["h3", "h4"]), False)
    assert (third["batch"], third["stopped"]) == (3, True)
    assert run_step(step("end_batch", state_file=path, outcomes={"h3": None, "h4": None}), False)["stopped"] is True

    written = run_step(step("report", state_file=path), False, now=NOW + 75)
    report = written["report"]
    assert written["path"] == os.path.join(os.path.dirname(path), "driver-rollout.json")
    assert (report["changed"], report["failed"], report["untouched"]) == (["h1"], ["h2"], ["h3", "h4"])
    assert (report["stopped"], report["stopped_after_batch"], report["check_mode"]) == (True, 2, False)
    assert (report["started_at"], report["finished_at"]) == ("2026-12-01T12:00:00Z", "2026-12-01T12:01:15Z")
    assert report["hosts"]["h3"] == {"status": "untouched"} and report["hosts"]["h2"]["msg"] == "1 of 2 GPUs present"
    assert written["summary"][0].startswith("Driver rollout: 1 changed, 0 unchanged, 1 failed, 2 untouched")
    assert written["summary"][-1] == "  report: %s" % written["path"]
    assert not os.path.exists(path) and os.listdir(os.path.dirname(path)) == [os.path.basename(written["path"])]


def test_a_rollout_planned_in_check_mode_has_a_check_run_folder(tmp_path):
    host_policy, policies = checked(HOSTS)
    planned = run_step(step("plan", hosts=HOSTS, host_policy=host_policy, policies=policies, mode="rollback",
                            report_root=str(tmp_path)), True, now=NOW)
    assert planned["run_dir"] == str(tmp_path / "20261201T120000Z-driver-rollback-check")
    written = run_step(step("report", state_file=planned["state_file"]), True, now=NOW)
    assert written["path"] == os.path.join(planned["run_dir"], "driver-rollback.json")
    assert os.listdir(planned["run_dir"]) == ["driver-rollback.json"]


def test_the_report_file_is_what_to_nice_json_wrote_and_says_check_mode(planned):
    path = planned["state_file"]
    for batch, hosts in enumerate((["h1"], ["h2"], ["h3", "h4"]), 1):
        run_step(step("start_batch", state_file=path, hosts=hosts), True)
        run_step(step("end_batch", state_file=path, outcomes={host: changed(batch, host) for host in hosts}), True)
    written = run_step(step("report", state_file=path), True, now=NOW)
    with open(written["path"]) as handle:
        text = handle.read()
    assert text == to_nice_json(written["report"]) + "\n"
    assert os.path.basename(written["path"]) == "driver-rollout.json"
    report = json.loads(text)
    assert report["check_mode"] is True and report["would_change"] == HOSTS and report["changed"] == []
    assert {report["hosts"][host]["status"] for host in HOSTS} == {"would_change"}
    assert all(line.startswith("[check mode] ") for line in written["summary"]), written["summary"]
    assert written["summary"][0].startswith("[check mode] Driver rollout planned, nothing changed: 4 would change")
    assert [json.loads(text)["hosts"][host]["batch"] for host in HOSTS] == [1, 2, 3, 3]
    assert stat.S_IMODE(os.stat(written["path"]).st_mode) == 0o644 & ~current_umask()


def current_umask():
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


@pytest.mark.parametrize("outcomes, message", [
    ({"h9": None}, "outcomes for h9, not planned by this rollout"),
    ({"h1": {"status": "done"}}, "the outcome of h1 must be a mapping with a status of changed, unchanged"),
    ({"h1": "changed"}, "the outcome of h1 must be a mapping"),
])
def test_bad_outcomes_are_named_and_change_no_state(planned, outcomes, message):
    before = R.read_state(planned["state_file"])
    with pytest.raises(R.RolloutError, match=message):
        run_step(step("end_batch", state_file=planned["state_file"], outcomes=outcomes), False)
    assert R.read_state(planned["state_file"]) == before


def test_a_batch_of_hosts_not_planned_is_refused(planned):
    with pytest.raises(R.RolloutError, match="h7 not planned by this rollout"):
        run_step(step("start_batch", state_file=planned["state_file"], hosts=["h1", "h7"]), False)


def test_a_missing_or_foreign_state_file_is_named(tmp_path):
    with pytest.raises(R.RolloutError, match="cannot read the rollout state .*nothing.json"):
        R.read_state(str(tmp_path / "nothing.json"))
    other = tmp_path / "other.json"
    other.write_text('{"version": 99}')
    with pytest.raises(R.RolloutError, match="is not a driver rollout state of version 2"):
        R.read_state(str(other))


# ---------------------------------------------------------------- through the action plugin

def action(args, check_mode=False):
    task = types.SimpleNamespace(args=args, async_val=0, check_mode=check_mode, action="gpufleet.core.driver_rollout")
    connection = types.SimpleNamespace(_shell=types.SimpleNamespace(tmpdir=None))
    return ActionModule(task=task, connection=connection, play_context=types.SimpleNamespace(check_mode=check_mode),
                        loader=None, templar=None, shared_loader_obj=None)


def test_the_action_returns_the_plan_and_the_batches_as_a_fact(tmp_path):
    host_policy, policies = checked(["h1"])
    result = action({"step": "plan", "hosts": ["h1"], "policies": policies, "host_policy": host_policy,
                     "report_root": str(tmp_path)}).run(task_vars={})
    assert result["changed"] is False and "failed" not in result
    assert result["ansible_facts"] == {"gpufleet_driver_batches": [1, "10%", "100%"]}
    assert os.path.dirname(result["state_file"]) == result["run_dir"]
    assert os.path.dirname(result["run_dir"]) == str(tmp_path)


def test_the_old_option_report_dir_still_names_the_report_root_with_a_deprecation_warning(tmp_path, monkeypatch):
    said = []
    monkeypatch.setattr(driver_rollout_action.display, "deprecated",
                        lambda msg, **where: said.append(dict(where, msg=msg)))
    host_policy, policies = checked(["h1"])
    result = action({"step": "plan", "hosts": ["h1"], "policies": policies, "host_policy": host_policy,
                     "report_dir": str(tmp_path)}).run(task_vars={})
    assert "failed" not in result and os.path.dirname(result["run_dir"]) == str(tmp_path)
    assert said == [{"msg": "Alias 'report_dir' is deprecated. See the module docs for more information",
                     "version": "2.0.0", "date": None, "collection_name": "gpufleet.core"}]


def test_the_new_option_report_root_says_nothing_deprecated(tmp_path, monkeypatch):
    said = []
    monkeypatch.setattr(driver_rollout_action.display, "deprecated", lambda msg, **where: said.append(msg))
    host_policy, policies = checked(["h1"])
    action({"step": "plan", "hosts": ["h1"], "policies": policies, "host_policy": host_policy,
            "report_root": str(tmp_path)}).run(task_vars={})
    assert said == []


def test_the_action_fails_the_task_with_the_step_and_the_reason(tmp_path):
    gone = str(tmp_path / "gone.json")
    result = action({"step": "start_batch", "state_file": gone, "hosts": ["h1"]}).run(task_vars={})
    assert result["failed"] is True
    assert result["msg"].startswith("driver_rollout(start_batch): cannot read the rollout state %s" % gone)


def test_the_action_names_the_options_a_step_needs():
    with pytest.raises(AnsibleActionFail, match="step is end_batch but all of the following are missing: outcomes"):
        action({"step": "end_batch", "state_file": "/nowhere"}).run(task_vars={})


def test_a_batch_that_failed_beyond_the_limit_stops_the_rollout_without_failing_the_task(tmp_path):
    host_policy, policies = checked(["h1", "h2"])
    planned = action({"step": "plan", "hosts": ["h1", "h2"], "policies": policies, "host_policy": host_policy,
                      "report_root": str(tmp_path)}).run(task_vars={})
    state_file = planned["state_file"]
    action({"step": "start_batch", "state_file": state_file, "hosts": ["h1"]}).run(task_vars={})
    ended = action({"step": "end_batch", "state_file": state_file,
                    "outcomes": {"h1": {"status": "failed", "batch": 1, "msg": "1 of 2 GPUs present"}}}).run(task_vars={})
    assert not ended.get("failed") and ended["stopped"] is True and ended["failed_hosts"] == ["h1"]
    assert action({"step": "start_batch", "state_file": state_file, "hosts": ["h2"]}).run(task_vars={})["stopped"] is True


# Checked before any host is contacted: what the mode needs of each host's policy; hosts no role may act on


@pytest.mark.parametrize("driver, mode, keys", [
    ({}, "rollout", ["driver.pin"]),
    ({"package": None, "pin": PIN}, "rollout", ["driver.package"]),
    ({"package": None}, "rollout", ["driver.package", "driver.pin"]),
    ({"package": None}, "rollback", ["driver.package"]),
])
def test_a_policy_without_what_the_mode_needs_stops_the_plan_naming_the_key_and_writes_nothing(
        tmp_path, driver, mode, keys):
    host_policy, policies = checked(["a", "b"], {"p0": policy(**driver)})
    with pytest.raises(R.RolloutError) as raised:
        run_step(step("plan", hosts=["a", "b"], host_policy=host_policy, policies=policies, mode=mode,
                      report_root=str(tmp_path / "reports")), False, now=NOW)
    message = str(raised.value)
    assert message.startswith("the %s cannot start, no host was contacted: " % mode)
    assert [key for key in ("driver.package", "driver.pin") if "%s: the policy sets no" % key in message] == keys
    assert "for 2 host(s): a, b" in message
    assert os.listdir(str(tmp_path)) == []


def test_a_rollback_needs_no_pin(tmp_path):
    host_policy, policies = checked(["a"], {"p0": policy()})
    planned = run_step(step("plan", hosts=["a"], host_policy=host_policy, policies=policies, mode="rollback",
                            report_root=str(tmp_path)), False, now=NOW)
    assert planned["planned"] == ["a"] and planned["state_file"]


REPLAYED = "its facts are replayed from a recorded fixture (gpufleet_facts_source=replay), not read from a machine"


def test_refused_hosts_stay_out_of_the_batches_and_the_report_says_why_with_their_plan(tmp_path):
    host_policy, policies = checked(HOSTS)
    planned = run_step(step("plan", hosts=HOSTS, host_policy=host_policy, policies=policies,
                            report_root=str(tmp_path), refused={"h1": "", "h2": REPLAYED}), False, now=NOW)
    assert planned["planned"] == ["h1", "h3", "h4"] and planned["batch_sizes"] == [1, 1, 1]
    assert planned["not_acted"] == {"h2": (
        "h2: not acted on, plan only: would install driver 550.127.05 (driver.pin) from package "
        "gpufleet-nvidia-driver. Refused because %s. %s" % (REPLAYED, HOW_TO_PROCEED))}
    path = planned["state_file"]
    for batch, hosts in enumerate((["h1"], ["h3"], ["h4"]), 1):
        run_step(step("start_batch", state_file=path, hosts=hosts), False)
        run_step(step("end_batch", state_file=path, outcomes={host: changed(batch, host) for host in hosts}), False)
    with pytest.raises(R.RolloutError, match="h2 not planned by this rollout"):
        run_step(step("start_batch", state_file=path, hosts=["h2"]), False)
    written = run_step(step("report", state_file=path), False, now=NOW)
    report = written["report"]
    assert report["changed"] == ["h1", "h3", "h4"] and report["not_acted"] == ["h2"]
    assert report["hosts"]["h2"] == {"status": "not_acted", "msg": planned["not_acted"]["h2"]}
    assert "  NOT ACTED ON h2: refused before any batch (see its message above)" in written["summary"]
    assert written["summary"][0].startswith("Driver rollout: 3 changed, 0 unchanged, 0 failed, 0 untouched, "
                                            "1 not acted on")


def test_with_every_host_refused_there_is_nothing_to_roll_out_and_no_file_and_check_mode_says_so(tmp_path):
    host_policy, policies = checked(["h1", "h2"])
    planned = run_step(step("plan", hosts=["h1", "h2"], host_policy=host_policy, policies=policies,
                            report_root=str(tmp_path / "reports"), refused=dict.fromkeys(["h1", "h2"], REPLAYED)),
                       True, now=NOW)
    assert planned["planned"] == [] and planned["state_file"] is None and planned["batch_sizes"] == []
    assert sorted(planned["not_acted"]) == ["h1", "h2"]
    assert all(message.startswith("[check mode] %s: not acted on, plan only: " % host)
               for host, message in planned["not_acted"].items())
    assert os.listdir(str(tmp_path)) == []
