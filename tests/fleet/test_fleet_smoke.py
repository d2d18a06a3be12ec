"""The simulated fleet itself: hosts boot real systemd, answer ssh and Ansible, reboot and power off."""

import json
import subprocess
import sys
import time

import fleet as fleet_module
from tests.support.schema_check import assert_valid_facts


def host_of(name):
    return fleet_module.Host.named(name)


def test_the_fleet_has_at_least_four_hosts_on_their_own_ports(fleet):
    assert len(fleet.hosts) >= 4
    first_port = fleet_module.BASE_PORT + 1
    assert [fleet.port(host) for host in fleet.hosts] == [first_port + index for index in range(len(fleet.hosts))]


def test_every_host_answers_ssh_as_itself_with_systemd_booted(fleet):
    for host in fleet.hosts:
        answer = fleet.ssh(host, "hostname; cat /proc/1/comm; systemctl is-system-running; "
                                 "systemctl --failed --no-legend --plain", check=False)
        lines = answer.stdout.splitlines()
        assert lines[:2] == [host, "systemd"], answer
        assert lines[2] in ("running", "degraded"), answer.stdout
        failed_core_units = [line for line in lines[3:] if line.startswith("systemd-")]
        assert failed_core_units == [], answer.stdout


def test_each_sshd_listens_only_on_its_own_loopback_port(fleet):
    for host in fleet.hosts:
        config = fleet.ssh(host, "sshd -T", check=True).stdout.splitlines()
        port = fleet.port(host)
        assert [line for line in config if line.startswith(("port ", "listenaddress "))] == [
            "port %d" % port, "listenaddress 127.0.0.1:%d" % port]


def test_hosts_write_to_private_overlays_not_to_the_shared_root_filesystem(fleet):
    for host in fleet.hosts:
        fleet.ssh(host, "echo %s > /root/smoke-owner" % host, check=True)
    for host in fleet.hosts:
        answer = fleet.ssh(host, "cat /root/smoke-owner /etc/machine-id", check=True).stdout.split()
        assert answer[0] == host
        assert (fleet_module.HOSTS_DIR / host / "upper" / "root" / "smoke-owner").read_text() == host + "\n"
    assert not (fleet_module.ROOTFS / "root" / "smoke-owner").exists()
    machine_ids = {fleet.ssh(host, "cat /etc/machine-id").stdout.strip() for host in fleet.hosts}
    assert len(machine_ids) == len(fleet.hosts)


def test_ansible_reaches_every_host_over_ssh_with_python3_and_systemd(fleet):
    run = fleet.ansible("fleet", "ansible.builtin.setup", {"gather_subset": ["min"]})
    assert run.rc == 0, run.output()
    results = run.results()
    assert sorted(results) == sorted(fleet.hosts)
    for host, result in results.items():
        facts = result["ansible_facts"]
        assert facts["ansible_hostname"] == host
        assert facts["ansible_service_mgr"] == "systemd"
        assert facts["ansible_distribution_release"] == "bookworm"
        assert facts["ansible_python"]["executable"] == "/usr/bin/python3"


def simulator_state(fleet, host):
    return json.loads(fleet.ssh(host, "cat /var/lib/gpufleet-sim/state.json", check=True).stdout)


def bus_id(state_bus_id):
    """The simulator keeps bus ids as nvidia-smi prints them (8-digit domain); facts use 4 digits."""
    return state_bus_id[4:].lower()


def test_gpu_facts_report_what_the_simulated_nvidia_smi_holds_on_every_host(fleet):
    run = fleet.ansible("fleet", "gpufleet.core.gpu_facts",
                        {"source": "nvidia_smi", "gather_subset": ["driver", "gpus", "mig"]})
    assert run.rc == 0, run.output()
    for host in fleet.hosts:
        facts = run.result(host)["ansible_facts"]["gpufleet"]
        assert_valid_facts(facts)
        state = simulator_state(fleet, host)
        assert facts["errors"] == []
        assert facts["driver"]["version"] == state["driver"]["library_version"]
        by_uuid = {gpu["uuid"]: gpu for gpu in facts["gpus"]}
        assert sorted(by_uuid) == sorted(gpu["uuid"] for gpu in state["gpus"])
        for expected in state["gpus"]:
            gpu = by_uuid[expected["uuid"]]
            assert (gpu["name"], gpu["pci_bus_id"], gpu["memory"]["total_mib"], gpu["persistence_mode"]) == (
                expected["name"], bus_id(expected["pci_bus_id"]), expected["memory"]["total_mib"],
                expected["persistence_mode"])
            assert (gpu["mig"]["mode_current"], gpu["mig"]["mode_pending"]) == (
                expected["mig"]["current"], expected["mig"]["pending"])
            assert sorted((gi["profile_name"], gi["placement"]["start"]) for gi in gpu["mig"]["gpu_instances"]) == \
                sorted((gi["profile"], gi["placement"]["start"]) for gi in expected["mig"]["gpu_instances"])


def test_the_default_scenario_builds_the_problems_it_describes(fleet):
    if fleet.scenario != "default":
        return
    states = {host: simulator_state(fleet, host) for host in fleet.hosts[:4]}
    inference = fleet.ssh("fleet-01", "systemctl show inference.service -p Restart -p ActiveState").stdout
    assert inference.split() == ["Restart=no", "ActiveState=active"]
    workers = [json.loads(fleet.ssh("fleet-01", "cat /run/gpufleet-sim/procs/%s" % name).stdout)
               for name in fleet.ssh("fleet-01", "ls /run/gpufleet-sim/procs").stdout.split()]
    assert [(worker["gpu"], worker["used_mib"]) for worker in workers] == [(0, 6000)] * 12
    assert [gpu["persistence_mode"] for gpu in states["fleet-01"]["gpus"]] == [False, False]
    assert fleet.ssh("fleet-02", "systemctl is-active trainer nvidia-persistenced").stdout.split() == [
        "active", "active"]
    assert [len(gpu["mig"]["gpu_instances"]) for gpu in states["fleet-03"]["gpus"]] == [7, 7]
    assert [(gpu["mig"]["current"], gpu["mig"]["pending"]) for gpu in states["fleet-04"]["gpus"]] == [
        (False, True), (False, True)]


def boot_id(fleet, host):
    return fleet.ssh(host, "cat /proc/sys/kernel/random/boot_id", check=True).stdout.strip()


def reboots_seen(host):
    log = fleet_module.HOSTS_DIR / host / "supervisor.log"
    return log.read_text().count("exit status %d" % fleet_module.REBOOT_STATUS)


def test_ansible_reboot_restarts_the_container_and_keeps_its_disk(fleet):
    # A reboot applies what the simulated driver does at boot; the power-off test below restores the host.
    host = fleet.hosts[-1]
    before, reboots_before = boot_id(fleet, host), reboots_seen(host)
    fleet.ssh(host, "touch /run/before-reboot /root/before-reboot", check=True)
    run = fleet.ansible(host, "ansible.builtin.reboot", {"reboot_timeout": 120})
    result = run.result(host)
    assert result.get("rebooted") is True, run.output()
    assert boot_id(fleet, host) != before
    assert reboots_seen(host) == reboots_before + 1
    left = fleet.ssh(host, "ls /run/before-reboot /root/before-reboot; systemctl is-system-running --wait")
    assert left.stdout.split()[0] == "/root/before-reboot", left
    assert left.stdout.split()[1] in ("running", "degraded"), left


def wait_for_supervisor_exit(host, timeout=30):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and fleet_module.supervisor_pid(host_of(host)) is not None:
        time.sleep(0.2)
    return fleet_module.supervisor_pid(host_of(host)) is None


def fleet_command(*args):
    return subprocess.run([sys.executable, str(fleet_module.FLEET_DIR / "fleet.py")] + list(args),
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=300, check=False)


def test_a_powered_off_host_stays_off_until_up_starts_it_again_fresh(fleet):
    # The host the reboot test used: it comes back as its scenario built it, for the tests that follow.
    host, others = fleet.hosts[-1], fleet.hosts[:-1]
    running_before = {other: fleet_module.nspawn_pid(host_of(other)) for other in others}
    fleet.ssh(host, "touch /root/before-poweroff; systemctl poweroff --no-block")
    assert wait_for_supervisor_exit(host)
    ended = json.loads((fleet_module.HOSTS_DIR / host / "exit").read_text())
    assert (ended["status"], ended["stopped"], ended["boots"]) == (0, False, reboots_seen(host) + 1)
    status = fleet_command("status")
    assert status.returncode == 1 and "%s  port %d  stopped" % (host, fleet.port(host)) in status.stdout

    up = fleet_command("up", "--hosts", str(len(fleet.hosts)), "--scenario", fleet.scenario)
    assert up.returncode == 0, up.stdout + up.stderr
    assert "booting %s\n" % host in up.stdout
    assert {other: fleet_module.nspawn_pid(host_of(other)) for other in others} == running_before
    assert fleet.ssh(host, "test -e /root/before-poweroff").returncode == 1
    assert fleet_command("status").returncode == 0
