"""The stub NVIDIA driver packages of the simulated fleet (tests/fleet/driver_repo.py), built into a temporary
folder and read back with dpkg-deb and dpkg-query; their maintainer scripts run against the simulator."""

import gzip
import hashlib
import importlib.util
import inspect
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.schema_check import ROOT

FLEET_DIR = Path(ROOT) / "tests" / "fleet"
SIM_DIR = FLEET_DIR / "sim"


def load_module(name, path):
    spec = importlib.util.spec_from_file_location(name, str(path))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


driver_repo = load_module("gpufleet_driver_repo", FLEET_DIR / "driver_repo.py")
sim_state = load_module("gpufleet_sim_state", SIM_DIR / "state.py")

EXPECTED_VERSIONS = ["535.183.06-1", "550.90.07-1", "550.127.05-1", "550.144.03-1", "565.57.01-1"]
# A dpkg status file of a root filesystem before the driver package (one real bookworm stanza).
BASE_STATUS = ("Package: base-files\nStatus: install ok installed\nPriority: required\nSection: admin\n"
               "Installed-Size: 341\nMaintainer: Santiago Vila <sanvila@debian.org>\nArchitecture: amd64\n"
               "Version: 12.4+deb12u7\nDescription: Debian base system miscellaneous files\n"
               " This package contains the basic filesystem hierarchy of a Debian system.\n")


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    out_dir = tmp_path_factory.mktemp("driver-repo") / "repo"
    assert driver_repo.ensure_repo(out_dir) is True
    return out_dir


def run(argv, **kwargs):
    return subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True, check=False, **kwargs)


def deb_field(deb, field):
    result = run(["dpkg-deb", "--field", str(deb), field])
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def control_file(deb, name, into):
    """One file of a package's control archive (dpkg-deb --control), e.g. postinst."""
    into.mkdir(parents=True, exist_ok=True)
    result = run(["dpkg-deb", "--control", str(deb), str(into)])
    assert result.returncode == 0, result.stderr
    return into / name


def stanzas(text):
    return [driver_repo.control_fields(block) for block in text.strip("\n").split("\n\n")]


def deb_of(out_dir, version):
    return out_dir / "apt" / ("gpufleet-nvidia-driver_%s_all.deb" % version)


def test_every_release_is_one_version_of_the_same_package(built):
    debs = sorted((built / "apt").glob("*.deb"))
    assert [deb.name for deb in debs] == sorted("gpufleet-nvidia-driver_%s_all.deb" % v for v in EXPECTED_VERSIONS)
    for version in EXPECTED_VERSIONS:
        deb = deb_of(built, version)
        assert [deb_field(deb, field) for field in ("Package", "Version", "Architecture")] == [
            "gpufleet-nvidia-driver", version, "all"]
        assert deb_field(deb, "Description").startswith(
            "NVIDIA driver %s for the simulated gpufleet test fleet" % version[:-2])


def test_versions_sort_in_release_order_for_apt():
    versions = [driver_repo.debian_version(release.version) for release in driver_repo.RELEASES]
    assert versions == EXPECTED_VERSIONS
    for older, newer in zip(versions, versions[1:]):
        assert run(["dpkg", "--compare-versions", older, "lt", newer]).returncode == 0, (older, newer)


def test_the_simulator_default_driver_has_a_package():
    default_driver = inspect.signature(sim_state.state_for).parameters["driver"].default
    assert default_driver == "550.90.07"
    assert driver_repo.release_for(default_driver).version == "550.90.07"
    assert driver_repo.release_for("550.90.07-1") == driver_repo.release_for("550.90.07")
    assert driver_repo.release_for("550.54.15") is None


def test_each_package_holds_its_version_file_owned_by_root(built):
    listing = run(["dpkg-deb", "--contents", str(deb_of(built, "550.127.05-1"))]).stdout.splitlines()
    files = [line.split() for line in listing if not line.split()[-1].endswith("/")]
    assert [(words[0], words[1], words[-1]) for words in files] == [
        ("-rw-r--r--", "root/root", "./usr/lib/gpufleet-nvidia-driver/version")]
    extracted = built.parent / "extracted"
    assert run(["dpkg-deb", "--extract", str(deb_of(built, "550.127.05-1")), str(extracted)]).returncode == 0
    assert (extracted / "usr/lib/gpufleet-nvidia-driver/version").read_text() == "550.127.05\n"


def test_maintainer_scripts_name_their_version_and_only_the_broken_one_loses_a_gpu(built, tmp_path):
    for version in EXPECTED_VERSIONS:
        postinst = control_file(deb_of(built, version), "postinst", tmp_path / version).read_text()
        assert 'DRIVER_VERSION="%s"' % version[:-2] in postinst
        expected_lost = "0" if version == "550.144.03-1" else ""
        assert 'LOST_AFTER_LOAD="%s"' % expected_lost in postinst
        assert "@" not in postinst
        assert os.access(tmp_path / version / "postrm", os.X_OK)
        md5sums = (tmp_path / version / "md5sums").read_text()
        assert md5sums == "%s  usr/lib/gpufleet-nvidia-driver/version\n" % hashlib.md5(
            (version[:-2] + "\n").encode()).hexdigest()


def test_packages_index_matches_each_deb_file(built):
    repo = built / "apt"
    packages = (repo / "Packages").read_text()
    assert gzip.decompress((repo / "Packages.gz").read_bytes()).decode() == packages
    entries = stanzas(packages)
    assert [entry["Version"] for entry in entries] == EXPECTED_VERSIONS
    for entry in entries:
        deb = repo / entry["Filename"]
        data = deb.read_bytes()
        assert entry["Filename"] == "./gpufleet-nvidia-driver_%s_all.deb" % entry["Version"]
        assert (int(entry["Size"]), entry["MD5sum"], entry["SHA256"]) == (
            len(data), hashlib.md5(data).hexdigest(), hashlib.sha256(data).hexdigest())
        for field in ("Package", "Version", "Architecture", "Maintainer", "Installed-Size", "Section", "Priority"):
            assert entry[field] == deb_field(deb, field), field


def test_release_file_lists_the_indexes_with_their_hashes(built):
    repo = built / "apt"
    release = driver_repo.control_fields((repo / "Release").read_text())
    assert (release["Origin"], release["Date"]) == ("gpufleet", "Tue, 01 Oct 2024 00:00:00 UTC")
    sha256_lines = [line.split() for line in release["SHA256"].splitlines() if line.strip()]
    assert [words[2] for words in sha256_lines] == ["Packages", "Packages.gz"]
    for digest, size, name in sha256_lines:
        data = (repo / name).read_bytes()
        assert (digest, int(size)) == (hashlib.sha256(data).hexdigest(), len(data))


def test_the_build_is_reproducible_and_skipped_while_the_sources_are_unchanged(built, tmp_path):
    again = tmp_path / "again"
    driver_repo.build_repo(again)
    for path in sorted((built / "apt").iterdir()):
        assert (again / "apt" / path.name).read_bytes() == path.read_bytes(), path.name
    assert driver_repo.ensure_repo(built) is False
    copy = tmp_path / "copy"
    shutil.copytree(built, copy)
    (copy / "stamp").write_text("from older sources\n")
    assert driver_repo.ensure_repo(copy) is True
    assert (copy / "stamp").read_text().strip() == driver_repo.sources_stamp()


# ---------------------------------------------------------------------------------------------------
# The maintainer scripts against the simulator


@pytest.fixture
def sim_host(tmp_path):
    """A folder standing in for / of a host with 2 simulated A100s on 550.90.07, and a PATH whose
    nvidia-smi is the simulator run from the source tree."""
    root = tmp_path / "root"
    state = sim_state.state_for("NVIDIA A100-SXM4-80GB", 2, driver="550.90.07", host="fleet-01")
    sim_state.write_state(state, str(root))
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "nvidia-smi").write_text('#!/bin/sh\nexec "%s" "%s" "$@"\n' % (sys.executable, SIM_DIR / "nvidia_smi.py"))
    (bin_dir / "nvidia-smi").chmod(0o755)
    env = dict(os.environ, GPUFLEET_SIM_ROOT=str(root), PATH="%s:%s" % (bin_dir, os.environ["PATH"]))
    return root, env


def driver_state(root):
    return json.loads((root / "var/lib/gpufleet-sim/state.json").read_text())["driver"]


def test_postinst_changes_the_library_now_and_leaves_the_module_to_the_next_load(built, sim_host, tmp_path):
    root, env = sim_host
    postinst = control_file(deb_of(built, "550.127.05-1"), "postinst", tmp_path / "ctl")
    result = run(["sh", str(postinst), "configure", "550.90.07-1"], env=env)
    assert result.returncode == 0, result.stderr
    driver = driver_state(root)
    assert (driver["library_version"], driver["kernel_module_version"], driver["lost_on_load"]) == (
        "550.127.05", "550.90.07", [])
    smi = run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"], env=env)
    assert smi.returncode == 18
    assert "Driver/library version mismatch" in smi.stdout + smi.stderr
    assert run(["nvidia-smi", "--sim-reload-modules"], env=env).returncode == 0
    smi = run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"], env=env)
    assert (smi.returncode, smi.stdout.split()) == (0, ["550.127.05", "550.127.05"])


def test_the_broken_package_loses_gpu_0_at_the_next_module_load(built, sim_host, tmp_path):
    root, env = sim_host
    postinst = control_file(deb_of(built, "550.144.03-1"), "postinst", tmp_path / "ctl")
    assert run(["sh", str(postinst), "configure", "550.90.07-1"], env=env).returncode == 0
    assert driver_state(root)["lost_on_load"] == [0]
    assert run(["nvidia-smi", "--sim-reload-modules"], env=env).returncode == 0
    smi = run(["nvidia-smi", "-L"], env=env)
    assert smi.returncode == 15
    assert "GPU is lost" in smi.stderr
    assert len(smi.stdout.splitlines()) == 1


def test_postrm_removes_the_library_on_remove_only(built, sim_host, tmp_path):
    root, env = sim_host
    postrm = control_file(deb_of(built, "550.90.07-1"), "postrm", tmp_path / "ctl")
    assert run(["sh", str(postrm), "upgrade", "550.127.05-1"], env=env).returncode == 0
    assert driver_state(root)["library_version"] == "550.90.07"
    assert run(["sh", str(postrm), "remove"], env=env).returncode == 0
    assert driver_state(root)["library_version"] is None
    assert run(["nvidia-smi", "-L"], env=env).returncode == 12


def test_scripts_do_nothing_on_a_host_without_simulated_gpus(built, tmp_path):
    empty_root = tmp_path / "cpu-node"
    empty_root.mkdir()
    env = dict(os.environ, GPUFLEET_SIM_ROOT=str(empty_root))
    ctl = tmp_path / "ctl"
    assert run(["sh", str(control_file(deb_of(built, "550.90.07-1"), "postinst", ctl)), "configure", ""],
               env=env).returncode == 0
    assert run(["sh", str(ctl / "postrm"), "remove"], env=env).returncode == 0
    assert list(empty_root.iterdir()) == []


# ---------------------------------------------------------------------------------------------------
# A host's overlay


@pytest.fixture
def lower(tmp_path):
    root = tmp_path / "lower"
    (root / "var/lib/dpkg").mkdir(parents=True)
    (root / "var/lib/dpkg/status").write_text(BASE_STATUS)
    return root


def dpkg_query(upper):
    result = run(["dpkg-query", "--admindir=%s" % (upper / "var/lib/dpkg"), "-W",
                  "-f", "${Package} ${db:Status-Abbrev}${Version}\n"])
    assert result.returncode == 0, result.stderr
    return result.stdout.splitlines()


def test_a_host_gets_the_package_of_its_driver_installed_as_dpkg_would_leave_it(built, lower, tmp_path):
    upper = tmp_path / "upper"
    release = driver_repo.add_to_host(upper, lower, built, "550.90.07")
    assert release.version == "550.90.07"
    assert dpkg_query(upper) == ["base-files ii 12.4+deb12u7", "gpufleet-nvidia-driver ii 550.90.07-1"]
    status = (upper / "var/lib/dpkg/status").read_text()
    assert status.startswith(BASE_STATUS + "\n")
    verify = run(["dpkg", "--root=%s" % upper, "--verify", "gpufleet-nvidia-driver"])
    assert (verify.returncode, verify.stdout, verify.stderr) == (0, "", "")
    audit = run(["dpkg", "--root=%s" % upper, "--audit"])
    assert "gpufleet-nvidia-driver" not in audit.stdout + audit.stderr
    info = upper / "var/lib/dpkg/info"
    assert (info / "gpufleet-nvidia-driver.list").read_text() == (
        "/.\n/usr\n/usr/lib\n/usr/lib/gpufleet-nvidia-driver\n/usr/lib/gpufleet-nvidia-driver/version\n")
    assert os.access(info / "gpufleet-nvidia-driver.postinst", os.X_OK)
    assert 'DRIVER_VERSION="550.90.07"' in (info / "gpufleet-nvidia-driver.postinst").read_text()


def test_a_host_gets_the_repository_as_its_only_apt_source_with_the_index_already_read(built, lower, tmp_path):
    upper = tmp_path / "upper"
    driver_repo.add_to_host(upper, lower, built, "550.90.07")
    assert (upper / "etc/apt/sources.list.d/gpufleet-driver.list").read_text() == (
        "deb [trusted=yes] file:/srv/gpufleet-apt ./\n")
    assert (upper / "etc/apt/sources.list").read_text().startswith("#")
    repo_in_host = upper / "srv/gpufleet-apt"
    assert sorted(path.name for path in repo_in_host.iterdir()) == sorted(
        path.name for path in (built / "apt").iterdir())
    for path in repo_in_host.iterdir():
        assert path.stat().st_mode & 0o777 == 0o644
        assert path.stat().st_ino != (built / "apt" / path.name).stat().st_ino
    for folder in (upper / "srv", repo_in_host):
        assert folder.stat().st_mode & 0o777 == 0o755
    lists = upper / "var/lib/apt/lists"
    assert (lists / "_srv_gpufleet-apt_._Packages").read_text() == (built / "apt/Packages").read_text()
    assert (lists / "_srv_gpufleet-apt_._Release").read_text() == (built / "apt/Release").read_text()


@pytest.mark.parametrize("driver_version", [None, "550.54.15"])
def test_a_host_without_a_packaged_driver_gets_the_source_but_no_package(built, lower, tmp_path, driver_version):
    upper = tmp_path / "upper"
    assert driver_repo.add_to_host(upper, lower, built, driver_version) is None
    assert (upper / "etc/apt/sources.list.d/gpufleet-driver.list").exists()
    assert not (upper / "var/lib/dpkg").exists()
    assert not (upper / "usr/lib/gpufleet-nvidia-driver").exists()


def test_a_package_already_in_the_status_file_is_replaced_not_repeated(built, lower, tmp_path):
    upper = tmp_path / "upper"
    driver_repo.add_to_host(upper, lower, built, "550.127.05")
    driver_repo.add_to_host(upper, upper, built, "550.90.07")
    assert dpkg_query(upper) == ["base-files ii 12.4+deb12u7", "gpufleet-nvidia-driver ii 550.90.07-1"]
    assert (upper / "var/lib/dpkg/status").read_text().count("Package: gpufleet-nvidia-driver\n") == 1
