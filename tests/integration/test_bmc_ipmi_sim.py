"""The BMC against a real IPMI endpoint: OpenIPMI's ipmi_sim on loopback (tests/support/ipmi_sim.py), read with the
real ipmitool over lanplus, first through the module's code, then through audit.yml, where the inventory gives the
BMC's address and a vaulted password: the findings come from the BMC, and the password appears in no output of
the run (stdout, stderr, the Ansible log, any file of the run folder)."""

import json
import os
import shutil
import subprocess
import sys

from ansible_collections.gpufleet.core.plugins.module_utils.host_io import LiveHost, run_bounded
from ansible_collections.gpufleet.core.plugins.module_utils.bmc_lan import read_lan_bmc
from tests.support import ipmi_sim
from ansible_collections.gpufleet.core.plugins.plugin_utils.reports.format import expanded

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.dirname(sys.executable)
FIXTURE = os.path.join(ROOT, "inventories", "demo", "fixtures", "gpu-h100-ok-01.json")
HOST = "gpu-bmc-lan-01"


def lan_params(sim):
    return {"address": "127.0.0.1", "port": sim.port, "user": ipmi_sim.USER, "password": ipmi_sim.PASSWORD,
            "interface": "lanplus", "cipher_suite": ipmi_sim.CIPHER_SUITE, "window_hours": 72, "timeout": 20}


def test_module_code_reads_ipmi_sim_with_the_real_ipmitool(tmp_path):
    commands = []

    def runner(argv, timeout):
        commands.append(list(argv))
        return run_bounded(argv, timeout)

    with ipmi_sim.IpmiSim(tmp_path) as sim:
        host = LiveHost(find_bin=shutil.which, runner=runner)
        bmc = read_lan_bmc(host, shutil.which("ipmitool"), lan_params(sim))
    assert bmc["status"] == "complete", bmc["errors"]
    assert bmc["source"] == "lan" and bmc["address"] == "127.0.0.1"
    fans = {fan["name"]: fan for fan in bmc["fans"]}
    assert fans["FAN1"] == {"name": "FAN1", "rpm": 6000.0, "percent": None, "status": "ok", "failed": False, "slow": False,
                            "no_reading": False}
    assert fans["FAN2"]["rpm"] == 400.0 and fans["FAN2"]["status"] == "lcr" and fans["FAN2"]["failed"] is True
    assert [psu["name"] for psu in bmc["power_supplies"] if psu["failed"]] == ["PSU2 Status"]
    assert bmc["redundancy"][0]["state"] == "lost"
    assert bmc["inlet_temperature_c"] == 41.0 and bmc["power_draw_w"] == 2120.0
    sel = bmc["sel"]
    assert sel["count"] == 5 and sel["untimed"] == 2
    timed = [event for event in sel["events"] if event["time"]]
    assert [event["event"] for event in timed] == ["Redundancy Lost", "Failure detected", "Lower Critical going low"]
    assert all(event["time"].endswith("Z") for event in timed)
    assert abs(bmc["clock_offset_s"]) <= 5  # the simulator's clock was set from this machine's
    # the password went to ipmitool in a file, never as an argument, and the file is gone
    assert commands and not any(ipmi_sim.PASSWORD in " ".join(argv) for argv in commands)
    password_files = {argv[argv.index("-f") + 1] for argv in commands}
    assert len(password_files) == 1 and not os.path.exists(password_files.pop())
    assert ipmi_sim.PASSWORD not in json.dumps(bmc)


def test_wrong_password_is_a_failed_bmc_not_a_failed_run(tmp_path):
    with ipmi_sim.IpmiSim(tmp_path) as sim:
        params = dict(lan_params(sim), password="not-the-password", timeout=5)
        bmc = read_lan_bmc(LiveHost(find_bin=shutil.which), shutil.which("ipmitool"), params)
    assert bmc["status"] == "failed" and bmc["sel"] is None and bmc["sensors"] == []
    assert [error["call"] for error in bmc["errors"]] == ["ipmitool sdr elist", "ipmitool sel elist"]
    assert "not-the-password" not in json.dumps(bmc)


def vaulted(tmp_path, secret):
    """The secret as an inline vault value (ansible-vault encrypt_string), and the vault password file."""
    vault_password = tmp_path / "vault-password"
    vault_password.write_text("vault-pass-for-the-test\n")
    result = subprocess.run([os.path.join(BIN, "ansible-vault"), "encrypt_string", "--vault-password-file",
                             str(vault_password), secret, "--name", "gpufleet_bmc_password"],
                            capture_output=True, text=True, check=True, timeout=60)
    return result.stdout, str(vault_password)


def inventory_text(sim, password_yaml):
    lines = ["all:", "  hosts:", "    %s:" % HOST,
             "      ansible_connection: local",
             "      ansible_python_interpreter: '{{ ansible_playbook_python }}'",
             "      gpufleet_facts_source: replay",
             "      gpufleet_facts_fixture: %s" % FIXTURE,
             "      gpufleet_bmc_address: 127.0.0.1",
             "      gpufleet_bmc_port: %d" % sim.port,
             "      gpufleet_bmc_user: %s" % ipmi_sim.USER,
             "      gpufleet_bmc_cipher_suite: %d" % ipmi_sim.CIPHER_SUITE]
    lines += ["      " + line for line in password_yaml.splitlines()]
    return "\n".join(lines) + "\n"


def every_output(report_dir, log_path, result):
    texts = {"stdout": result.stdout, "stderr": result.stderr}
    with open(log_path, errors="replace") as handle:
        texts["ansible.log"] = handle.read()
    for folder, _dirs, files in os.walk(report_dir):
        for name in files:
            path = os.path.join(folder, name)
            if not os.path.islink(path):
                with open(path, errors="replace") as handle:
                    texts[path] = handle.read()
    return texts


def test_audit_reads_the_bmc_over_lan_and_never_shows_the_password(tmp_path):
    with ipmi_sim.IpmiSim(tmp_path) as sim:
        password_yaml, vault_file = vaulted(tmp_path, ipmi_sim.PASSWORD)
        inventory = tmp_path / "hosts.yml"
        inventory.write_text(inventory_text(sim, password_yaml))
        report_dir, log_path = tmp_path / "reports", tmp_path / "ansible.log"
        env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_NOCOLOR="1",
                   ANSIBLE_LOG_PATH=str(log_path))
        result = subprocess.run(
            [os.path.join(BIN, "ansible-playbook"), "audit.yml", "-v", "-i", str(inventory), "--vault-password-file",
             vault_file, "-e", "gpufleet_report_dir=%s" % report_dir],
            cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)
    latest = report_dir / "latest"
    assert latest.is_dir(), result.stdout[-3000:] + result.stderr[-2000:]
    report = expanded(json.loads((latest / "report.json").read_text()))
    facts = json.loads((latest / report["hosts"][HOST]["facts_file"]).read_text())
    assert facts["bmc"]["source"] == "lan" and facts["bmc"]["status"] == "complete"
    rules = {finding["rule"]: finding for finding in report["findings"] if finding["host"] == HOST}
    for rule in ("hardware.bmc_power_redundancy", "hardware.bmc_fan", "hardware.bmc_inlet_temperature",
                 "hardware.bmc_event_log"):
        assert rule in rules, sorted(rules)
    assert result.returncode == 2  # critical findings, every host audited
    leaks = [name for name, text in every_output(report_dir, log_path, result).items() if ipmi_sim.PASSWORD in text]
    assert leaks == []
