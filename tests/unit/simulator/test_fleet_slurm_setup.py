"""tests/fleet/fleet.py's part of the Slurm scenario, without booting anything: the packages in the root
filesystem's recipe, units enabled per host only, files for every host, and a slurm.conf whose ports never
collide on the shared loopback."""

import importlib.util
import json
import os
import re
from pathlib import Path

import pytest

from tests.support.schema_check import ROOT

FLEET_DIR = Path(ROOT) / "tests" / "fleet"


@pytest.fixture(scope="module")
def fleet_py():
    spec = importlib.util.spec_from_file_location("gpufleet_fleet_py", str(FLEET_DIR / "fleet.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def scenario(fleet_py):
    return fleet_py.load_scenario("slurm")


def test_the_recipe_has_slurm_and_munge_and_a_changed_package_list_rebuilds(fleet_py, monkeypatch):
    assert {"munge", "slurmctld", "slurmd", "slurm-client"} <= set(fleet_py.PACKAGES)
    before = fleet_py.rootfs_recipe()
    monkeypatch.setattr(fleet_py, "PACKAGES", fleet_py.PACKAGES[:-1])
    assert fleet_py.rootfs_recipe() != before


def test_slurm_daemons_start_only_where_a_host_lists_them(fleet_py, scenario, tmp_path):
    root = tmp_path / "rootfs"
    wants = root / "etc/systemd/system/multi-user.target.wants"
    wants.mkdir(parents=True)
    for unit in ("slurmd.service", "slurmctld.service", "munge.service", "ssh.service"):
        (wants / unit).symlink_to("/lib/systemd/system/" + unit)
    (root / "etc/munge").mkdir(parents=True)
    (root / "etc/passwd").write_text("root:x:0:0::/root:/bin/sh\n")
    fleet_py.customize_rootfs(root)
    assert sorted(path.name for path in wants.iterdir()) == ["munge.service", "ssh.service"]
    assert len((root / "etc/munge/munge.key").read_text()) > 1000
    assert oct((root / "etc/munge/munge.key").stat().st_mode & 0o777) == "0o400"

    upper = tmp_path / "upper"
    spec = fleet_py.host_spec(scenario, fleet_py.Host.named("fleet-02"))
    fleet_py.enable_system_units(upper, spec["system_units"])
    linked = upper / "etc/systemd/system/multi-user.target.wants/slurmd.service"
    assert os.readlink(str(linked)) == "/lib/systemd/system/slurmd.service"
    with pytest.raises(fleet_py.FleetError, match="not one of"):
        fleet_py.enable_system_units(upper, ["sshd-evil.service"])


def test_scenario_files_reach_every_host_under_its_own(fleet_py):
    scenario = {"files": {"/etc/a": "every host", "/etc/b": "every host"},
                "hosts": {"fleet-01": {"files": {"/etc/b": "fleet-01 only"}}}, "default_host": {}}
    first = fleet_py.host_spec(scenario, fleet_py.Host.named("fleet-01"))
    other = fleet_py.host_spec(scenario, fleet_py.Host.named("fleet-03"))
    assert first["files"] == {"/etc/a": "every host", "/etc/b": "fleet-01 only"}
    assert other["files"] == {"/etc/a": "every host", "/etc/b": "every host"}
    assert scenario["hosts"]["fleet-01"]["files"] == {"/etc/b": "fleet-01 only"}  # the scenario is not changed


def test_slurm_conf_has_one_node_per_host_on_its_own_port(fleet_py, scenario):
    conf = scenario["files"]["/etc/slurm/slurm.conf"]
    nodes = re.findall(r"^NodeName=(\S+) NodeHostname=(\S+) NodeAddr=127\.0\.0\.1 Port=(\d+)", conf, re.M)
    assert [name for name, _host, _port in nodes] == sorted(scenario["hosts"])
    assert all(name == host for name, host, _port in nodes)
    ports = [int(port) for _name, _host, port in nodes] + [int(re.search(r"^SlurmctldPort=(\d+)", conf, re.M).group(1))]
    ssh_ports = [fleet_py.Host.named(name).port for name in scenario["hosts"]]
    assert len(set(ports + ssh_ports)) == len(ports) + len(ssh_ports)
    assert "ProctrackType=proctrack/linuxproc" in conf and "TaskPlugin=task/none" in conf
    controllers = [host for host, spec in scenario["hosts"].items() if "slurmctld.service" in spec["system_units"]]
    assert controllers == ["fleet-01"]
    assert all("slurmd.service" in spec["system_units"] for spec in scenario["hosts"].values())
    assert json.dumps(scenario["vars"]["gpufleet_policy"]["driver"]["rollout"]) == '{"drain": {"method": "slurm"}}'
