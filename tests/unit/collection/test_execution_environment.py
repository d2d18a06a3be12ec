"""The execution environment: ansible-builder create turns execution-environment.yml into a build context that
installs the collection built from this checkout, and the installed collection's meta/execution-environment.yml
gives ansible-builder the controller's Python and system dependencies (requirements.txt, bindep.txt), which
agree with pyproject.toml. The image itself is not built here: it needs podman or docker and a registry."""

import os
import shutil
import subprocess
import sys
import tomllib

import pytest
import yaml
from packaging.requirements import Requirement
from tests.support.schema_check import ROOT

# pyproject.toml's dependencies that requirements.txt leaves out, and why
NOT_IN_EE_REQUIREMENTS = {
    "ansible-core": "the execution environment's own (execution-environment.yml, dependencies.ansible_core)",
    "ansible-runner": "the execution environment's own (dependencies.ansible_runner)",
    "nvidia-ml-py": "used on the GPU hosts only, never on the controller",
}

# what ansible-builder introspect --sanitize drops from a collection's requirements
SANITIZED = {"pyyaml"}

pytest.importorskip("ansible_builder", reason="ansible-builder is in the test extra and tests/unit/requirements.txt")


def ansible_command(name):
    return shutil.which(name, path=os.path.dirname(sys.executable)) or shutil.which(name)


def isolated_env(tmp_path):
    config = tmp_path / "ansible.cfg"
    config.write_text("[defaults]\n")
    env = {name: value for name, value in os.environ.items() if not name.startswith("ANSIBLE_")}
    env.update(ANSIBLE_CONFIG=str(config), HOME=str(tmp_path), ANSIBLE_LOCAL_TEMP=str(tmp_path / "tmp"),
               ANSIBLE_COLLECTIONS_PATH=str(tmp_path / "none"), ANSIBLE_GALAXY_CACHE_DIR=str(tmp_path / "cache"))
    return env


def run(argv, tmp_path, cwd):
    result = subprocess.run(argv, cwd=str(cwd), env=isolated_env(tmp_path), capture_output=True, text=True,
                            timeout=300, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    return result


def requirement_lines(path):
    with open(path) as handle:
        return [line.strip() for line in handle if line.strip() and not line.startswith("#")]


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """(work folder with execution-environment.yml and build/ee/gpufleet-core.tar.gz, build context): what
    `make ee-context` does, in a temporary folder."""
    work = tmp_path_factory.mktemp("ee")
    shutil.copy(os.path.join(ROOT, "execution-environment.yml"), str(work))
    output = work / "build" / "ee"
    output.mkdir(parents=True)
    run([ansible_command("ansible-galaxy"), "collection", "build", "--output-path", str(output)], work, ROOT)
    (tarball,) = list(output.glob("gpufleet-core-*.tar.gz"))
    tarball.rename(output / "gpufleet-core.tar.gz")
    run([sys.executable, "-m", "ansible_builder", "create", "-f", "execution-environment.yml", "-c", "context"],
        work, work)
    return work, work / "context"


def test_the_definition_is_version_3_with_a_python_ansible_core_needs():
    with open(os.path.join(ROOT, "execution-environment.yml")) as handle:
        definition = yaml.safe_load(handle)
    assert definition["version"] == 3
    assert definition["dependencies"]["python_interpreter"]["python_path"] == "/usr/bin/python3.12"
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as handle:
        dependencies = [Requirement(text) for text in tomllib.load(handle)["project"]["dependencies"]]
    pinned = {requirement.name: requirement for requirement in dependencies}
    core = Requirement(definition["dependencies"]["ansible_core"]["package_pip"])
    runner = Requirement(definition["dependencies"]["ansible_runner"]["package_pip"])
    assert core.specifier == pinned["ansible-core"].specifier
    assert runner.specifier == pinned["ansible-runner"].specifier


def test_the_build_context_installs_the_collection_built_from_the_checkout(built):
    _work, context = built
    containerfile = (context / "Dockerfile").read_text()
    assert 'ARG EE_BASE_IMAGE="quay.io/centos/centos:stream9"' in containerfile
    assert 'ARG PYCMD="/usr/bin/python3.12"' in containerfile
    assert 'ARG ANSIBLE_INSTALL_REFS="ansible-core>=2.20,<2.23 ansible-runner>=2.4"' in containerfile
    assert "ansible-galaxy collection install $ANSIBLE_GALAXY_CLI_COLLECTION_OPTS -r requirements.yml" in containerfile
    assert "introspect.py introspect" in containerfile
    galaxy = yaml.safe_load((context / "_build" / "requirements.yml").read_text())
    assert galaxy == {"collections": [{"name": "/build/gpufleet/gpufleet-core.tar.gz", "type": "file"}]}
    # COPY _build /build in the galaxy stage puts the tarball where requirements.yml names it
    assert "COPY _build /build" in containerfile
    assert (context / "_build" / "gpufleet" / "gpufleet-core.tar.gz").stat().st_size > 10000
    assert requirement_lines(context / "_build" / "bindep.txt") == ["python3.12-pip [platform:rpm]"]


def test_the_installed_collection_tells_ansible_builder_its_dependencies(built, tmp_path):
    work, _context = built
    collections = tmp_path / "collections"
    run([ansible_command("ansible-galaxy"), "collection", "install", "--offline", "-p", str(collections),
         str(work / "build" / "ee" / "gpufleet-core.tar.gz")], tmp_path, tmp_path)
    installed = collections / "ansible_collections" / "gpufleet" / "core"
    assert (installed / "plugins" / "plugin_utils" / "cli" / "main.py").is_file()
    result = run([sys.executable, "-m", "ansible_builder", "introspect", "--sanitize", str(collections)],
                 tmp_path, tmp_path)
    listed = yaml.safe_load(result.stdout)
    origin = "  # from collection gpufleet.core"
    # --sanitize leaves out what ansible-core brings itself (pyyaml)
    python = [line + origin for line in requirement_lines(os.path.join(ROOT, "requirements.txt"))
              if Requirement(line).name not in SANITIZED]
    assert "jmespath>=1.0" + origin in python
    assert listed["python"] == python
    assert listed["system"] == ["openssh-clients [platform:rpm]" + origin, "openssh-client [platform:dpkg]" + origin]


def test_requirements_txt_is_pyproject_less_what_an_ee_brings_itself():
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as handle:
        dependencies = [Requirement(text) for text in tomllib.load(handle)["project"]["dependencies"]]
    expected = sorted(str(requirement) for requirement in dependencies
                      if requirement.name not in NOT_IN_EE_REQUIREMENTS)
    listed = sorted(str(Requirement(line)) for line in requirement_lines(os.path.join(ROOT, "requirements.txt")))
    assert listed == expected, "requirements.txt must list pyproject.toml's dependencies less %s" % (
        ", ".join(sorted(NOT_IN_EE_REQUIREMENTS)))
