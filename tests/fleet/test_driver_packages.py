"""The stub NVIDIA driver packages (driver_repo.py) installed through apt on the fleet's hosts: a new version
changes the userspace library at once and the kernel module only at the reboot, a hold keeps a version,
the previous version comes back with a downgrade, and the broken version leaves a GPU missing.

The tests that change a driver use the last host with two or more GPUs; it is given back as the
scenario built it (powered off and started fresh by `up`) when the module ends."""

import json

import pytest

import driver_repo
import fleet as fleet_module

PACKAGE = driver_repo.PACKAGE
START, TARGET, BROKEN = "550.90.07", "550.127.05", "550.144.03"
APT = "DEBIAN_FRONTEND=noninteractive apt-get -y -q "


def simulator_state(fleet, host):
    return json.loads(fleet.ssh(host, "cat /var/lib/gpufleet-sim/state.json", check=True).stdout)


def driver_versions(fleet, host):
    """(userspace library, loaded kernel module) of the simulated driver."""
    driver = simulator_state(fleet, host)["driver"]
    return driver["library_version"], driver["kernel_module_version"]


def installed_package(fleet, host):
    """'ii 550.90.07-1' (dpkg's status letters and the version), or None when dpkg does not know it."""
    answer = fleet.ssh(host, "dpkg-query -W -f '${db:Status-Abbrev}${Version}' %s" % PACKAGE)
    return " ".join(answer.stdout.split()) if answer.returncode == 0 else None


def install(fleet, host, version, *options):
    return fleet.ssh(host, APT + " ".join(options) + " install %s=%s" % (PACKAGE, driver_repo.debian_version(version)))


def reboot(fleet, host):
    run = fleet.ansible(host, "ansible.builtin.reboot", {"reboot_timeout": 120})
    assert run.result(host).get("rebooted") is True, run.output()


def gpu_driver_versions(fleet, host):
    """(exit status, driver version of each GPU) as nvidia-smi reports them."""
    answer = fleet.ssh(host, "nvidia-smi --query-gpu=driver_version --format=csv,noheader")
    return answer.returncode, answer.stdout.split()


def gpu_hosts(fleet):
    return [host for host in fleet.hosts if fleet.ssh(host, "test -f /var/lib/gpufleet-sim/state.json").returncode == 0]


@pytest.fixture(scope="module")
def host(fleet):
    """A host with at least two simulated GPUs on the starting driver, given back fresh at the end."""
    candidates = [name for name in gpu_hosts(fleet) if len(simulator_state(fleet, name)["gpus"]) >= 2]
    assert candidates, "the scenario has no host with two GPUs"
    name = candidates[-1]
    assert driver_versions(fleet, name) == (START, START)
    yield name
    with fleet_module.fleet_lock():
        fleet_module.stop_hosts([fleet_module.Host.named(name)])
        fleet_module.up(len(fleet.hosts), fleet.scenario)


def ensure_driver(fleet, host, version):
    """The host on `version`, package and kernel module, whatever the tests before left."""
    if driver_versions(fleet, host) == (version, version) and installed_package(fleet, host) == "ii " + \
            driver_repo.debian_version(version):
        return
    fleet.ssh(host, "apt-mark unhold %s" % PACKAGE, check=True)
    assert install(fleet, host, version, "--allow-downgrades").returncode == 0
    reboot(fleet, host)
    assert driver_versions(fleet, host) == (version, version)


def answers(fleet, host, commands):
    """The output of each command, run in one ssh session (stderr joined to stdout)."""
    marker = "--- gpufleet test ---"
    script = ("; echo '%s'; " % marker).join("{ %s; } 2>&1" % command for command in commands)
    return fleet.ssh(host, script, check=True).stdout.split(marker + "\n")


def test_every_gpu_host_starts_with_the_package_of_its_driver_and_knows_every_version(fleet):
    expected_versions = [driver_repo.debian_version(release.version) for release in driver_repo.RELEASES]
    for name in gpu_hosts(fleet):
        state, package, policy, madison, checks = answers(fleet, name, [
            "cat /var/lib/gpufleet-sim/state.json", "dpkg-query -W -f '${db:Status-Abbrev}${Version}\\n' " + PACKAGE,
            "apt-cache policy " + PACKAGE, "apt-cache madison " + PACKAGE, "dpkg --audit; dpkg --verify " + PACKAGE])
        installed = driver_repo.debian_version(json.loads(state)["driver"]["library_version"])
        assert package.split() == ["ii", installed]
        assert "Installed: %s" % installed in policy
        assert "Candidate: %s" % expected_versions[-1] in policy
        assert sorted(line.split("|")[1].strip() for line in madison.splitlines()) == sorted(expected_versions)
        assert checks == ""


def test_apt_reads_only_the_local_repository_offline(fleet):
    update = fleet.ssh(fleet.hosts[0], "apt-get update", check=True).stdout.splitlines()
    fetched = [line for line in update if line.startswith(("Get:", "Hit:", "Ign:"))]
    assert fetched and all(" file:/srv/gpufleet-apt ./ " in line for line in fetched), update


def test_a_new_version_changes_the_library_now_and_the_kernel_module_at_the_reboot(fleet, host):
    ensure_driver(fleet, host, START)
    result = install(fleet, host, TARGET)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Unpacking %s (%s-1) over (%s-1)" % (PACKAGE, TARGET, START) in result.stdout
    assert installed_package(fleet, host) == "ii %s-1" % TARGET
    assert driver_versions(fleet, host) == (TARGET, START)
    mismatch = fleet.ssh(host, "nvidia-smi")
    assert mismatch.returncode == 18
    assert "Failed to initialize NVML: Driver/library version mismatch" in mismatch.stdout + mismatch.stderr
    reboot(fleet, host)
    assert driver_versions(fleet, host) == (TARGET, TARGET)
    status, versions = gpu_driver_versions(fleet, host)
    assert (status, set(versions)) == (0, {TARGET})
    assert len(versions) == len(simulator_state(fleet, host)["gpus"])


def test_a_held_version_stays_and_the_previous_one_comes_back_with_a_downgrade(fleet, host):
    ensure_driver(fleet, host, TARGET)
    fleet.ssh(host, "apt-mark hold %s" % PACKAGE, check=True)
    assert fleet.ssh(host, "apt-mark showhold", check=True).stdout.split() == [PACKAGE]
    upgrade = fleet.ssh(host, APT + "upgrade")
    assert upgrade.returncode == 0 and "kept back" in upgrade.stdout, upgrade.stdout
    refused = install(fleet, host, START, "--allow-downgrades")
    assert refused.returncode == 100
    assert "Held packages were changed" in refused.stderr
    assert installed_package(fleet, host) == "hi %s-1" % TARGET

    rollback = install(fleet, host, START, "--allow-downgrades", "--allow-change-held-packages")
    assert rollback.returncode == 0, rollback.stdout + rollback.stderr
    # Changing a held package drops the hold: whoever installs holds the new version again.
    assert installed_package(fleet, host) == "ii %s-1" % START
    fleet.ssh(host, "apt-mark hold %s" % PACKAGE, check=True)
    assert installed_package(fleet, host) == "hi %s-1" % START
    assert driver_versions(fleet, host) == (START, TARGET)
    reboot(fleet, host)
    assert driver_versions(fleet, host) == (START, START)
    assert gpu_driver_versions(fleet, host)[0] == 0


def test_the_broken_version_leaves_a_gpu_missing_after_the_reboot_until_rolled_back(fleet, host):
    ensure_driver(fleet, host, START)
    gpu_count = len(simulator_state(fleet, host)["gpus"])
    assert install(fleet, host, BROKEN).returncode == 0
    reboot(fleet, host)
    assert driver_versions(fleet, host) == (BROKEN, BROKEN)
    listing = fleet.ssh(host, "nvidia-smi -L")
    assert listing.returncode == 15
    assert "GPU is lost" in listing.stderr
    assert len(listing.stdout.splitlines()) == gpu_count - 1
    assert install(fleet, host, START, "--allow-downgrades").returncode == 0
    reboot(fleet, host)
    assert fleet.ssh(host, "nvidia-smi -L").stdout.count("GPU ") == gpu_count
    assert gpu_driver_versions(fleet, host) == (0, [START] * gpu_count)


def test_removing_the_package_removes_the_library_and_installing_brings_it_back(fleet, host):
    ensure_driver(fleet, host, START)
    fleet.ssh(host, "apt-mark unhold %s" % PACKAGE, check=True)
    assert fleet.ssh(host, APT + "remove %s" % PACKAGE).returncode == 0
    assert installed_package(fleet, host) in (None, "rc " + driver_repo.debian_version(START))
    assert driver_versions(fleet, host) == (None, START)
    assert fleet.ssh(host, "nvidia-smi -L").returncode == 12
    assert install(fleet, host, START).returncode == 0
    assert driver_versions(fleet, host) == (START, START)
    assert gpu_driver_versions(fleet, host)[0] == 0
