"""The systemd files of the worker_limits and restart_policy roles, rendered from real effective policies."""

import itertools

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.gpufleet.core.plugins.filter.systemd_dropins import systemd_dropins
from ansible_collections.gpufleet.core.plugins.plugin_utils import systemd_dropins as dropins
from ansible_collections.gpufleet.core.plugins.plugin_utils.policy import validate_policy


def effective(services, sharing=None):
    """workload.services of the effective policy the policy module builds from these settings."""
    return validate_policy({"workload": {"services": services}, "sharing": {"mode": sharing}})["workload"]["services"]


def one(settings, name="inference"):
    return effective({name: settings})[0]


def environment_lines(text):
    return [line for line in text.splitlines() if line.startswith("Environment=")]


def exec_start(argv):
    """ExecStart as `systemctl show` prints it for a unit that has not run yet."""
    return ("{ path=%s ; argv[]=%s ; ignore_errors=no ; start_time=[n/a] ; stop_time=[n/a] ; pid=0 ; code=(null) ; "
            "status=0/0 }" % (argv.split()[0], argv))


# systemctl show --property=Id,LoadState,ActiveState,ExecStart -- inference.service trainer.service ghost.service
SYSTEMCTL_SHOW = """\
Id=inference.service
LoadState=loaded
ActiveState=active
ExecStart=%s

Id=trainer.service
LoadState=loaded
ActiveState=inactive
ExecStart=%s

Id=ghost.service
LoadState=not-found
ActiveState=inactive
ExecStart=
""" % (exec_start("/usr/local/bin/gpu-worker"), exec_start("/usr/local/bin/train --workers ${GPUFLEET_WORKERS}"))
UNITS = ["inference.service", "trainer.service", "ghost.service"]


# ---------------------------------------------------------------------------------------------------------
# worker_limits

def test_oversubscribed_inference_service_gets_two_workers_per_gpu_of_a_four_gpu_host():
    service = one({"workers_per_gpu": 2, "workers_env": "WORKERS", "alloc_conf": "expandable_segments:True"})
    assert dropins.workers_dropin(service, 4) == (
        "# Managed by gpufleet (role worker_limits): do not edit, the next run overwrites it.\n"
        "# Source: the effective gpufleet policy, workload.services inference.service "
        "(workers_per_gpu, workers_env, gpus, alloc_conf).\n"
        "# Change the policy (docs/policy.md) and run remediate.yml instead.\n"
        "# Workers: 8 = 4 GPUs x 2 workers_per_gpu.\n"
        "[Service]\n"
        'Environment="CUDA_VISIBLE_DEVICES=0,1,2,3"\n'
        'Environment="PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"\n'
        'Environment="WORKERS=8"\n')


def test_a_gpu_list_pins_the_service_and_sets_the_count_from_its_own_gpus():
    service = one({"gpus": [6, 7], "workers_per_gpu": 3, "workers_env": "NUM_WORKERS"})
    text = dropins.workers_dropin(service, 8)
    assert environment_lines(text) == ['Environment="CUDA_VISIBLE_DEVICES=6,7"', 'Environment="NUM_WORKERS=6"']
    assert "# Workers: 6 = 2 GPUs x 3 workers_per_gpu." in text


def test_one_gpu_is_named_in_the_singular():
    text = dropins.workers_dropin(one({"gpus": [0], "workers_per_gpu": 1, "workers_env": "WORKERS"}), 4)
    assert "# Workers: 1 = 1 GPU x 1 workers_per_gpu." in text


def test_gpu_index_the_host_does_not_have_is_refused_with_the_service_and_the_count():
    service = one({"gpus": [2, 5], "workers_per_gpu": 1, "workers_env": "WORKERS"})
    with pytest.raises(ValueError) as error:
        dropins.workers_dropin(service, 4)
    assert str(error.value) == "inference.service: gpus [2, 5] names GPU 5, but this host has 4 GPUs (gpu_facts)"


def test_no_gpu_found_means_no_worker_count_rather_than_zero_workers():
    service = one({"workers_per_gpu": 2, "workers_env": "WORKERS"})
    with pytest.raises(ValueError, match="inference.service: workers_per_gpu is set but gpu_facts found no GPU"):
        dropins.workers_dropin(service, 0)


def test_gpus_null_leaves_cuda_visible_devices_alone_and_counts_every_gpu():
    service = one({"gpus": None, "workers_per_gpu": 2, "workers_env": "WORKERS"})
    assert environment_lines(dropins.workers_dropin(service, 2)) == ['Environment="WORKERS=4"']


def test_all_gpus_under_mig_sharing_are_not_pinned_by_index():
    service = one({"workers_per_gpu": 1, "workers_env": "WORKERS"})
    assert environment_lines(dropins.workers_dropin(service, 8, "mig")) == ['Environment="WORKERS=8"']
    pinned = one({"gpus": [1], "workers_per_gpu": 1, "workers_env": "WORKERS"})
    assert 'Environment="CUDA_VISIBLE_DEVICES=1"' in environment_lines(dropins.workers_dropin(pinned, 8, "mig"))


def test_mps_limits_per_visible_gpu_only_when_the_host_shares_through_mps():
    service = one({"gpus": [4, 5, 6], "mps": {"active_thread_percentage": 33, "pinned_device_mem_limit_mib": 20480}})
    assert environment_lines(dropins.workers_dropin(service, 8, "mps")) == [
        'Environment="CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=33"',
        'Environment="CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=20480M,1=20480M,2=20480M"',
        'Environment="CUDA_VISIBLE_DEVICES=4,5,6"']
    assert environment_lines(dropins.workers_dropin(service, 8, "exclusive")) == [
        'Environment="CUDA_VISIBLE_DEVICES=4,5,6"']


def test_mps_settings_alone_write_nothing_without_mps_sharing():
    service = one({"mps": {"active_thread_percentage": 50}})
    assert dropins.workers_dropin(service, 4, "time_slicing") is None
    assert environment_lines(dropins.workers_dropin(service, 4, "mps")) == [
        'Environment="CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=50"', 'Environment="CUDA_VISIBLE_DEVICES=0,1,2,3"']


def test_a_service_listed_only_for_its_restart_policy_gets_no_worker_dropin():
    assert dropins.workers_dropin(one({"restart": "always"}), 4) is None
    assert dropins.workers_dropin(one({"workers_per_gpu": 2}), 4) is None  # limit only audited


def test_extra_environment_is_quoted_as_systemd_reads_it():
    service = one({"environment": {"NCCL_DEBUG": "WARN", "GREETING": 'say "hi" 100% C:\\tmp', "BATCH": 32}})
    assert environment_lines(dropins.workers_dropin(service, 1)) == [
        'Environment="BATCH=32"',
        'Environment="CUDA_VISIBLE_DEVICES=0"',
        'Environment="GREETING=say \\"hi\\" 100%% C:\\\\tmp"',
        'Environment="NCCL_DEBUG=WARN"']


def test_a_newline_in_a_value_cannot_be_written_to_a_unit():
    service = one({"environment": {"BAD": "one\ntwo"}})
    with pytest.raises(ValueError, match="environment variable BAD: the value 'one\\\\ntwo' holds a control character"):
        dropins.workers_dropin(service, 1)


def test_extra_environment_may_not_set_what_a_dedicated_key_sets():
    service = one({"workers_per_gpu": 1, "workers_env": "WORKERS",
                   "environment": {"WORKERS": "64", "CUDA_VISIBLE_DEVICES": "0"}})
    with pytest.raises(ValueError) as error:
        dropins.workers_dropin(service, 2)
    assert str(error.value) == ("inference.service: environment sets CUDA_VISIBLE_DEVICES, WORKERS, which "
                                "worker_limits derives from the policy (gpus, workers_env); remove it from environment")


def test_environment_may_pin_devices_itself_when_gpus_is_null():
    service = one({"gpus": None, "environment": {"CUDA_VISIBLE_DEVICES": "MIG-5c8a1b2e-0000-4d7a-9a1e-3f00aa11bb22"}})
    assert environment_lines(dropins.workers_dropin(service, 1)) == [
        'Environment="CUDA_VISIBLE_DEVICES=MIG-5c8a1b2e-0000-4d7a-9a1e-3f00aa11bb22"']


def test_workers_arg_goes_through_gpufleet_workers_and_says_what_execstart_must_pass():
    service = one({"gpus": [6, 7], "workers_per_gpu": 2, "workers_arg": "--workers"}, name="triton")
    text = dropins.workers_dropin(service, 8)
    assert "# The unit's ExecStart= must pass --workers ${GPUFLEET_WORKERS} for the limit to apply." in text
    assert environment_lines(text) == ['Environment="CUDA_VISIBLE_DEVICES=6,7"', 'Environment="GPUFLEET_WORKERS=4"']


@pytest.mark.parametrize("exec_start, passes", [
    ("{ path=/x ; argv[]=/x serve --workers ${GPUFLEET_WORKERS} --port 8000 ; ignore_errors=no }", True),
    ("{ path=/x ; argv[]=/x serve --workers=$GPUFLEET_WORKERS ; ignore_errors=no }", True),
    ("{ path=/x ; argv[]=/x serve --workers 12 ; ignore_errors=no }", False),
    ("{ path=/x ; argv[]=/x serve --worker ${GPUFLEET_WORKERS} ; ignore_errors=no }", False),
    ("{ path=/x ; argv[]=/x serve ${GPUFLEET_WORKERS} --workers ; ignore_errors=no }", False),
    ("", False),
    (None, False),
])
def test_exec_start_passes_the_worker_variable_after_the_option(exec_start, passes):
    assert dropins.exec_start_passes(exec_start, "--workers") is passes


def test_same_policy_gives_the_same_bytes_whatever_the_order_of_its_environment():
    names = ["ZETA", "ALPHA", "MID", "NCCL_DEBUG"]
    texts = {dropins.workers_dropin(one({"environment": {name: name.lower() for name in order}}), 2)
             for order in itertools.permutations(names)}
    assert len(texts) == 1
    assert environment_lines(texts.pop())[0] == 'Environment="ALPHA=alpha"'


# ---------------------------------------------------------------------------------------------------------
# restart_policy

def test_default_restart_policy_of_a_policy_service():
    assert dropins.restart_dropin(one({})) == (
        "# Managed by gpufleet (role restart_policy): do not edit, the next run overwrites it.\n"
        "# Source: the effective gpufleet policy, workload.services inference.service "
        "(restart, restart_sec, start_limit_interval_sec, start_limit_burst).\n"
        "# Change the policy (docs/policy.md) and run remediate.yml instead.\n"
        "[Unit]\n"
        "StartLimitIntervalSec=600\n"
        "StartLimitBurst=5\n"
        "\n"
        "[Service]\n"
        "Restart=on-failure\n"
        "RestartSec=10\n")


def test_stop_timeout_and_runtime_recycle():
    text = dropins.restart_dropin(one({"restart": "always", "restart_sec": 30, "timeout_stop_sec": 120,
                                       "runtime_max_sec": 86400}))
    assert text.split("[Service]\n")[1] == "Restart=always\nRestartSec=30\nTimeoutStopSec=120\nRuntimeMaxSec=86400\n"


def test_restart_null_leaves_the_restart_settings_alone():
    assert dropins.restart_dropin(one({"restart": None})) is None
    text = dropins.restart_dropin(one({"restart": None, "runtime_max_sec": 3600}))
    assert "[Unit]" not in text and text.endswith("[Service]\nRuntimeMaxSec=3600\n")


def test_recycle_calendar_gives_a_timer_and_a_try_restart_service():
    service = one({"recycle_calendar": "Sun 03:00"}, name="vllm")
    timer, recycle = dropins.recycle_timer(service), dropins.recycle_service(service)
    assert timer.split("\n[Timer]\n")[1] == (
        "OnCalendar=Sun 03:00\nUnit=gpufleet-recycle-vllm.service\n\n[Install]\nWantedBy=timers.target\n")
    assert recycle.endswith("[Service]\nType=oneshot\nExecStart=/bin/systemctl try-restart vllm.service\n")
    assert dropins.recycle_timer(one({})) is None and dropins.recycle_service(one({})) is None


def test_recycle_units_of_a_template_instance_are_not_templates_themselves():
    assert dropins.recycle_name("vllm@gpu0.service", "timer") == "gpufleet-recycle-vllm_gpu0.timer"


# ---------------------------------------------------------------------------------------------------------
# Plans against the host

def test_unit_states_from_systemctl_show_in_the_order_asked():
    states = dropins.unit_states(SYSTEMCTL_SHOW, UNITS)
    assert states["inference.service"]["ActiveState"] == "active"
    assert states["ghost.service"]["LoadState"] == "not-found"
    assert dropins.is_running(states["inference.service"]) and not dropins.is_running(states["trainer.service"])


def test_worker_plan_writes_installed_services_reports_missing_ones_and_removes_stale_files():
    services = effective({
        "inference": {"workers_per_gpu": 1, "workers_env": "WORKERS"},
        "trainer": {"workers_per_gpu": 2, "workers_arg": "--workers"},
        "ghost": {"workers_per_gpu": 1, "workers_env": "WORKERS"},
        "gpu-exporter.socket": {},
    })
    existing = ["/etc/systemd/system/old-model.service.d/50-gpufleet-workers.conf",
                "/etc/systemd/system/ghost.service.d/50-gpufleet-workers.conf",
                "/etc/systemd/system/inference.service.d/50-gpufleet-workers.conf"]
    plan = dropins.worker_limits_plan(services, 4, None, dropins.unit_states(SYSTEMCTL_SHOW, UNITS), existing)
    assert [(entry["unit"], entry["path"]) for entry in plan["write"]] == [
        ("inference.service", "/etc/systemd/system/inference.service.d/50-gpufleet-workers.conf"),
        ("trainer.service", "/etc/systemd/system/trainer.service.d/50-gpufleet-workers.conf")]
    assert plan["write"][0]["dir"] == "/etc/systemd/system/inference.service.d"
    assert plan["remove"] == [
        {"unit": "ghost.service", "path": "/etc/systemd/system/ghost.service.d/50-gpufleet-workers.conf"},
        {"unit": "old-model.service", "path": "/etc/systemd/system/old-model.service.d/50-gpufleet-workers.conf"}]
    assert plan["missing"] == ["ghost.service"] and plan["unsupported"] == ["gpu-exporter.socket"]
    assert plan["restart"] == ["inference.service"] and plan["failed"] == []
    assert plan["workers_arg_unwired"] == []  # trainer's ExecStart passes --workers ${GPUFLEET_WORKERS}


def test_worker_plan_reports_a_workers_arg_the_command_line_ignores():
    services = effective({"inference": {"workers_per_gpu": 1, "workers_arg": "--workers"}})
    plan = dropins.worker_limits_plan(services, 2, None, dropins.unit_states(SYSTEMCTL_SHOW, UNITS[:1]))
    assert plan["workers_arg_unwired"] == [
        {"unit": "inference.service", "option": "--workers", "variable": "GPUFLEET_WORKERS"}]


def test_restart_plan_with_a_recycle_timer_and_a_timer_that_left_the_policy():
    services = effective({"inference": {"recycle_calendar": "*-*-* 04:00:00"}, "trainer": {"restart": None}})
    existing = ["/etc/systemd/system/gpufleet-recycle-trainer.timer",
                "/etc/systemd/system/gpufleet-recycle-trainer.service",
                "/etc/systemd/system/trainer.service.d/50-gpufleet-restart.conf",
                "/etc/systemd/system/inference.service.d/50-gpufleet-restart.conf"]
    plan = dropins.restart_policy_plan(services, dropins.unit_states(SYSTEMCTL_SHOW, UNITS), existing)
    assert [(entry["kind"], entry["path"]) for entry in plan["write"]] == [
        ("dropin", "/etc/systemd/system/inference.service.d/50-gpufleet-restart.conf"),
        ("timer", "/etc/systemd/system/gpufleet-recycle-inference.timer"),
        ("recycle_service", "/etc/systemd/system/gpufleet-recycle-inference.service")]
    assert plan["write"][1]["timer"] == plan["write"][2]["timer"] == "gpufleet-recycle-inference.timer"
    assert plan["timers"] == ["gpufleet-recycle-inference.timer"]
    assert [entry["unit"] for entry in plan["remove"]] == [
        "gpufleet-recycle-trainer.service", "gpufleet-recycle-trainer.timer", "trainer.service"]
    assert plan["stale_timers"] == ["gpufleet-recycle-trainer.timer"]


def test_a_host_without_the_policy_services_gets_nothing_and_keeps_nothing_of_gpufleet():
    plan = dropins.restart_policy_plan(effective({"ghost": {}}), dropins.unit_states(SYSTEMCTL_SHOW, UNITS),
                                       ["/etc/systemd/system/ghost.service.d/50-gpufleet-restart.conf"])
    assert plan["write"] == [] and plan["missing"] == ["ghost.service"]
    assert plan["remove"] == [{"unit": "ghost.service",
                               "path": "/etc/systemd/system/ghost.service.d/50-gpufleet-restart.conf"}]


# ---------------------------------------------------------------------------------------------------------
# The filter

def test_filter_reads_systemctl_show_of_the_service_units_only():
    services = effective({"inference": {"workers_per_gpu": 3, "workers_env": "WORKERS"}, "ghost": {},
                          "trainer": {}, "gpu-exporter.socket": {}})
    plan = systemd_dropins(services, "workers", systemctl_show=SYSTEMCTL_SHOW, gpu_count=1)
    assert [entry["unit"] for entry in plan["write"]] == ["inference.service"]
    assert 'Environment="WORKERS=3"' in plan["write"][0]["content"]
    assert systemd_dropins(services, "restart", systemctl_show=SYSTEMCTL_SHOW)["missing"] == ["ghost.service"]


def test_filter_names_the_problem_when_the_policy_does_not_fit_the_host():
    services = effective({"inference": {"gpus": [3], "workers_per_gpu": 1, "workers_env": "WORKERS"}})
    with pytest.raises(AnsibleFilterError, match="cannot be applied on this host: inference.service: gpus \\[3\\]"):
        systemd_dropins(services, "workers", systemctl_show=SYSTEMCTL_SHOW.split("\n\n", maxsplit=1)[0], gpu_count=2)


def test_filter_refuses_an_unknown_kind_and_input_that_is_not_the_policy():
    with pytest.raises(AnsibleFilterError, match="kind must be 'units', 'workers' or 'restart', got 'mig'"):
        systemd_dropins([], "mig")
    with pytest.raises(AnsibleFilterError, match="expects workload.services"):
        systemd_dropins({"inference": {}}, "workers")


def test_an_alias_reports_its_target_id_and_is_matched_by_position():
    shown = "Id=nvidia-dcgm.service\nLoadState=loaded\nActiveState=active\n\nId=ghost.service\nLoadState=not-found\n"
    states = dropins.unit_states(shown, ["dcgm.service", "ghost.service"])
    assert states["dcgm.service"]["Id"] == "nvidia-dcgm.service" and dropins.is_installed(states["dcgm.service"])
    assert not dropins.is_installed(states["ghost.service"])


@pytest.mark.parametrize("restart", ["no", "on-success", "on-abort", "on-watchdog"])
def test_runtime_recycle_needs_a_restart_that_brings_the_service_back(restart):
    with pytest.raises(ValueError) as error:
        dropins.restart_dropin(one({"restart": restart, "runtime_max_sec": 86400}))
    assert str(error.value) == (
        "inference.service: runtime_max_sec with restart %r would stop the service for good when the time is up: "
        "systemd restarts it only with restart on-failure, on-abnormal, always" % restart)


@pytest.mark.parametrize("restart", ["on-failure", "on-abnormal", "always"])
def test_runtime_recycle_with_a_restart_that_brings_the_service_back(restart):
    assert "Restart=%s\nRestartSec=10\nRuntimeMaxSec=86400\n" % restart in dropins.restart_dropin(
        one({"restart": restart, "runtime_max_sec": 86400}))


# The fleet's inference.service after its twelfth worker ran out of memory, and two services someone stopped.
CRASHED_SHOW = """\
Id=inference.service
LoadState=loaded
ActiveState=failed
UnitFileState=enabled

Id=batch.service
LoadState=loaded
ActiveState=failed
UnitFileState=disabled

Id=trainer.service
LoadState=loaded
ActiveState=inactive
UnitFileState=enabled
"""
CRASHED_UNITS = ["inference.service", "batch.service", "trainer.service"]


def test_changes_restart_running_services_and_crashed_enabled_ones_but_never_stopped_ones():
    services = effective({name[:-len(".service")]: {"workers_per_gpu": 1, "workers_env": "WORKERS"}
                          for name in CRASHED_UNITS})
    states = dropins.unit_states(CRASHED_SHOW, CRASHED_UNITS)
    plan = dropins.worker_limits_plan(services, 1, None, states)
    assert len(plan["write"]) == 3
    assert plan["restart"] == ["inference.service"] and plan["failed"] == ["inference.service"]
    assert dropins.restart_policy_plan(services, states)["recover"] == ["inference.service"]


def test_units_to_show_add_the_services_of_gpufleet_dropins_the_policy_dropped():
    services = effective({"inference": {}, "gpu-exporter.socket": {}})
    existing = ["/etc/systemd/system/old-model.service.d/50-gpufleet-workers.conf",
                "/etc/systemd/system/inference.service.d/50-gpufleet-restart.conf",
                "/etc/systemd/system/gpufleet-recycle-old-model.timer"]
    assert dropins.units_to_show(services, existing) == ["inference.service", "old-model.service"]
    assert systemd_dropins(services, "units", existing=existing) == ["inference.service", "old-model.service"]


def test_removing_the_dropin_of_a_service_that_left_the_policy_restarts_it_when_it_runs():
    existing = ["/etc/systemd/system/inference.service.d/50-gpufleet-workers.conf"]
    shown = SYSTEMCTL_SHOW.split("\n\n", maxsplit=1)[0] + "\n"
    plan = systemd_dropins([], "workers", systemctl_show=shown, existing=existing, gpu_count=2)
    assert plan["write"] == [] and plan["restart"] == ["inference.service"]
    assert plan["remove"] == [{"unit": "inference.service", "path": existing[0]}]
