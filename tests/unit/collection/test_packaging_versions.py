"""meta/runtime.yml's requires_ansible and pyproject.toml's ansible-core requirement name the same versions,
and the ansible-core the tests run on is one of them."""

import os
import tomllib

import yaml
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.version import Version

import ansible.release
from tests.support.schema_check import ROOT

# Every minor release around the supported range, with patch releases on both sides of a minor's start.
CANDIDATES = [Version("2.%d.%d" % (minor, patch)) for minor in range(14, 27) for patch in (0, 1, 9)] + [
    Version("2.19.99"), Version("2.22.99"), Version("2.23.0rc1")]


def requires_ansible():
    with open(os.path.join(ROOT, "meta", "runtime.yml")) as handle:
        return SpecifierSet(yaml.safe_load(handle)["requires_ansible"])


def pyproject_ansible_core():
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as handle:
        project = tomllib.load(handle)["project"]
    requirements = [Requirement(text) for text in project["dependencies"]]
    (core,) = [requirement for requirement in requirements if requirement.name == "ansible-core"]
    return core.specifier


def supported(specifier):
    return [version for version in CANDIDATES if specifier.contains(version, prereleases=False)]


def test_requires_ansible_and_pyproject_name_the_same_versions():
    assert supported(requires_ansible()) == supported(pyproject_ansible_core())


def test_the_range_has_a_floor_and_a_ceiling():
    # A ceiling says which releases were tested; an open range would claim releases nobody ran.
    versions = supported(requires_ansible())
    assert versions, "requires_ansible matches no ansible-core release"
    assert Version("2.14.0") not in versions and Version("2.26.0") not in versions


def test_the_ansible_core_under_test_is_supported():
    running = Version(ansible.release.__version__)
    assert requires_ansible().contains(running, prereleases=True), running
    assert pyproject_ansible_core().contains(running, prereleases=True), running


def lowest_supported_minor():
    """The lowest major.minor of requires_ansible: the first candidate release it admits."""
    lowest = min(version for version in CANDIDATES if version in requires_ansible())
    return "%d.%d" % (lowest.major, lowest.minor)


def test_every_roles_min_ansible_version_is_the_collections_lowest_ansible_core():
    roles = os.path.join(ROOT, "roles")
    found = {}
    for role in sorted(os.listdir(roles)):
        with open(os.path.join(roles, role, "meta", "main.yml")) as handle:
            found[role] = str(yaml.safe_load(handle)["galaxy_info"]["min_ansible_version"])
    assert lowest_supported_minor() == "2.20"
    assert found == {role: lowest_supported_minor() for role in found} and len(found) == 6
