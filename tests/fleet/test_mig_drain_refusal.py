"""mig.allow_drain stops only the policy's workload.services: a MIG change with a drain allowed still refuses
while any other process uses a GPU that must change (scenario default, fleet-03 as test_role_mig_layout.py
sets it up)."""

import base64

# hosts and playbook are fixtures of test_role_mig_layout.py, used here as arguments
from test_role_mig_layout import (  # noqa: F401 pylint: disable=unused-import
    APPLY, DRIFTED, TEST_FILES, TEST_UNIT, hosts, layouts, playbook, sim_state, start_gpu_process, stop_gpu_process)

REFUSAL = "Refuse while processes other than the policy's services use the GPUs to change"


def test_allow_drain_refuses_while_a_process_outside_the_services_uses_the_gpu(fleet, hosts, playbook):
    for path, text in TEST_FILES.items():
        fleet.ssh(DRIFTED, "echo %s | base64 -d > %s && chmod 755 %s"
                  % (base64.b64encode(text.encode()).decode(), path, path), check=True)
    fleet.ssh(DRIFTED, "systemctl daemon-reload && systemctl start %s" % TEST_UNIT, check=True)
    stranger = start_gpu_process(fleet, DRIFTED, 0)
    drain = {"gpufleet_policy_zz_test": {"mig": {"allow_drain": True},
                                         "workload": {"services": [{"name": TEST_UNIT}]}}}
    try:
        before = layouts(sim_state(fleet, DRIFTED))
        run = fleet.playbook(playbook, limit=DRIFTED, extra_vars=drain)
        assert run.rc != 0, run.output()
        message = run.result(DRIFTED, REFUSAL)["msg"]
        assert str(stranger) in message and TEST_UNIT in message and "Nothing was changed" in message
        assert APPLY not in run.changed_tasks(DRIFTED)
        assert layouts(sim_state(fleet, DRIFTED)) == before
        # the service stopped for the change runs again
        assert "Start the GPU services stopped for the change" in run.changed_tasks(DRIFTED)
        assert fleet.ssh(DRIFTED, "systemctl is-active %s" % TEST_UNIT).stdout.strip() == "active"
    finally:
        stop_gpu_process(fleet, DRIFTED, stranger)
        fleet.ssh(DRIFTED, "systemctl stop %s; rm -f %s; systemctl daemon-reload" % (TEST_UNIT, " ".join(TEST_FILES)))
