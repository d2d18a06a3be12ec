"""The README's production install ("Installing the collection elsewhere"): the runtime dependencies of
pyproject.toml that a controller needs, none of the test extra, and the collection from its built tarball."""

import os
import shlex
import tomllib

from packaging.requirements import Requirement

from tests.support.schema_check import ROOT

# what a controller does not install: the GPU hosts' NVML binding
HOST_ONLY = {"nvidia-ml-py"}


def install_block():
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as stream:
        text = stream.read()
    section = text[text.index("### Installing the collection elsewhere"):]
    return section[section.index("```sh\n") + len("```sh\n"):section.index("\n```\n")].splitlines()


def command_lines(program):
    return [shlex.split(line.split(" && ")[-1], comments=True) for line in install_block()
            if program in line and not line.lstrip().startswith("#")]


def requirements_of(arguments):
    """The requirements a pip install's arguments name, -r files read."""
    found, position = [], 0
    while position < len(arguments):
        argument = arguments[position]
        if argument == "-r":
            with open(os.path.join(ROOT, arguments[position + 1])) as stream:
                found += [Requirement(line.split("#")[0].strip()) for line in stream if line.split("#")[0].strip()]
            position += 2
            continue
        if not argument.startswith("-"):
            found.append(Requirement(argument))
        position += 1
    return found


def project():
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as stream:
        return tomllib.load(stream)["project"]


def test_the_pip_install_is_the_runtime_dependencies_without_the_test_extra():
    (pip,) = command_lines("pip install")
    assert pip[:2] == ["pip", "install"] and not any("[test]" in argument or argument in (".", "-e") for argument in pip)
    installed = {requirement.name: requirement for requirement in requirements_of(pip[2:])}
    runtime = {requirement.name: requirement for requirement in map(Requirement, project()["dependencies"])}
    test_extra = {Requirement(text).name for text in project()["optional-dependencies"]["test"]}
    assert set(installed) == set(runtime) - HOST_ONLY
    assert not set(installed) & test_extra
    assert {name: str(req.specifier) for name, req in installed.items()} == {
        name: str(runtime[name].specifier) for name in installed}


def test_the_collection_is_installed_from_its_built_tarball():
    (build,) = command_lines("collection build")
    (install,) = command_lines("collection install")
    assert build[:3] == ["ansible-galaxy", "collection", "build"]
    assert install[:3] == ["ansible-galaxy", "collection", "install"]
    assert install[3] == "dist/gpufleet-core-*.tar.gz" and build[build.index("--output-path") + 1] == "dist/"
