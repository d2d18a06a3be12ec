"""pyproject.toml holds back a dependency whose release makes every ansible command print a warning, and the
environment the tests run in is one that pin allows (issue 25: no deprecation warning that a pin avoids)."""

import os
import shutil
import subprocess
import sys
import tomllib
from importlib import metadata

from packaging.requirements import Requirement
from packaging.version import Version

from tests.support.schema_check import ROOT

ANSIBLE_PLAYBOOK = (shutil.which("ansible-playbook", path=os.path.dirname(sys.executable))
                    or shutil.which("ansible-playbook"))


def pyproject_requirement(name):
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as handle:
        requirements = [Requirement(text) for text in tomllib.load(handle)["project"]["dependencies"]]
    (requirement,) = [requirement for requirement in requirements if requirement.name == name]
    return requirement


def test_cryptography_is_held_below_the_release_that_deprecated_dsa():
    # ansible-core imports cryptography's DSA classes whenever it starts; cryptography 51 deprecated them
    specifier = pyproject_requirement("cryptography").specifier
    assert not specifier.contains(Version("51.0.0")) and specifier.contains(Version("50.0.2"))


def test_the_cryptography_under_test_is_one_pyproject_allows():
    installed = metadata.version("cryptography")
    assert pyproject_requirement("cryptography").specifier.contains(installed), (
        "cryptography %s is installed; `make test` (pip install .) installs what pyproject.toml allows" % installed)


def test_ansible_playbook_starts_without_a_warning_from_its_dependencies():
    result = subprocess.run([ANSIBLE_PLAYBOOK, "--version"], capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    assert "Warning" not in result.stderr, result.stderr
