"""The collection tarball (ansible-galaxy collection build) holds the collection and none of the development
tree, installs offline, and its modules are documented from the installed copy."""

import collections
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import urllib.parse

import pytest
import yaml
from tests.support.schema_check import ROOT

# Paths (or their first folders) that must never be shipped.
LEFT_OUT = [".venv", ".ansible", ".ci", ".git", ".gitignore", ".ansible-lint", ".pytest_cache", ".hypothesis",
            "build", "reports", "bench", "tools", "simulator", "tests/fleet", "tests/output", "collections", "Makefile",
            "ansible.cfg", "pyproject.toml", "galaxy.yml", "audit.yml", "remediate.yml", "driver_rollout.yml", "incident.yml",
            "loadstep.yml"]
SHIPPED = ["README.md", "LICENSE", "meta/runtime.yml", "plugins/modules/gpu_facts.py",
           "plugins/action/audit_report.py", "plugins/module_utils/collector.py", "plugins/plugin_utils/policy/__init__.py",
           "playbooks/audit.yml", "roles/driver/meta/argument_specs.yml", "docs/schema/gpu_facts.schema.json",
           "changelogs/config.yaml", "changelogs/changelog.yaml"]


def galaxy_version():
    with open(os.path.join(ROOT, "galaxy.yml")) as handle:
        return yaml.safe_load(handle)["version"]


def isolated_env(tmp_path, **extra):
    """An environment that finds gpufleet.core only where extra's ANSIBLE_COLLECTIONS_PATH says."""
    config = tmp_path / "ansible.cfg"
    config.write_text("[defaults]\n")
    # ansible-test units sets ANSIBLE_COLLECTIONS_PATH to the collection under test: not that one.
    env = {name: value for name, value in os.environ.items() if not name.startswith("ANSIBLE_")}
    env.update(ANSIBLE_CONFIG=str(config), ANSIBLE_NOCOLOR="1", HOME=str(tmp_path), ANSIBLE_LOCAL_TEMP=str(tmp_path / "tmp"),
               ANSIBLE_GALAXY_CACHE_DIR=str(tmp_path / "cache"), ANSIBLE_COLLECTIONS_PATH=str(tmp_path / "none"))
    env.update(extra)
    return env


def run(argv, tmp_path, cwd, **extra):
    result = subprocess.run(argv, cwd=cwd, env=isolated_env(tmp_path, **extra), capture_output=True, text=True,
                            timeout=300, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    return result


Built = collections.namedtuple("Built", "tarball names")
# What a developer's checkout has lying around besides the files git knows about; none of it may be shipped.
STRAYS = [".venv/bin/python", ".ansible/collections/x", "build/sanity/x", "reports/latest/report.json",
          "tests/fleet/work/node1/root.img", "tests/output/junit/x.xml", "bench/results/run.json", ".pytest_cache/x",
          ".hypothesis/examples/x", "gpufleet.egg-info/PKG-INFO", "plugins/modules/__pycache__/gpu_facts.cpython-312.pyc",
          "gpufleet-core-0.0.1.tar.gz"]


def ansible_command(name):
    """An ansible-core command: beside this Python in a virtualenv, on PATH under ansible-test units."""
    return shutil.which(name, path=os.path.dirname(sys.executable)) or shutil.which(name)


def is_git_checkout():
    top = subprocess.run(["git", "rev-parse", "--show-toplevel"], cwd=ROOT, capture_output=True, text=True, check=False)
    return top.returncode == 0 and os.path.realpath(top.stdout.strip()) == os.path.realpath(ROOT)


def copy_checkout(destination):
    """The files git lists (tracked, and untracked ones not ignored), without links to folders; outside a git
    checkout (the copy tools/units.sh tests) the whole tree but ansible-test's output."""
    if not is_git_checkout():
        output = os.path.join(ROOT, "tests", "output")
        shutil.copytree(ROOT, destination, symlinks=True,
                        ignore=lambda folder, names: ["output"] if os.path.join(folder, "output") == output else [])
        return
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            capture_output=True, check=True).stdout.decode().split("\0")
    for path in filter(None, listed):
        source = os.path.join(ROOT, path)
        if not os.path.exists(source) or (os.path.islink(source) and os.path.isdir(source)):
            continue
        os.makedirs(os.path.dirname(os.path.join(destination, path)), exist_ok=True)
        shutil.copy2(source, os.path.join(destination, path), follow_symlinks=False)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """The tarball and its member names, built from a copy of the checkout with STRAYS added."""
    tmp_path = tmp_path_factory.mktemp("galaxy")
    tree, output = tmp_path / "tree", tmp_path / "out"
    copy_checkout(str(tree))
    for stray in STRAYS:
        (tree / stray).parent.mkdir(parents=True, exist_ok=True)
        (tree / stray).write_text("stray\n")
    run([ansible_command("ansible-galaxy"), "collection", "build", "--output-path", str(output)], tmp_path,
        str(tree))
    tarball = output / ("gpufleet-core-%s.tar.gz" % galaxy_version())
    with tarfile.open(tarball) as archive:
        names = [member.name for member in archive.getmembers()]
    return Built(tarball, names)


def test_tarball_leaves_the_development_tree_out(built):
    names = built.names
    shipped_left_outs = sorted(name for name in names for path in LEFT_OUT
                               if name == path or name.startswith(path + "/"))
    assert shipped_left_outs == []
    assert not [name for name in names if "__pycache__" in name or name.endswith((".pyc", ".egg-info", ".tar.gz"))]
    assert not [name for name in names if name.startswith("gpufleet.egg-info")]


def test_tarball_holds_the_collection(built):
    names = built.names
    assert [path for path in SHIPPED if path not in names] == []
    assert {"MANIFEST.json", "FILES.json"} <= set(names)


def root_playbooks():
    """The playbooks beside ansible.cfg (a checkout's entry points): root YAML files that hold a list of plays."""
    found = []
    for name in sorted(os.listdir(ROOT)):
        if name.endswith(".yml") and os.path.isfile(os.path.join(ROOT, name)):
            with open(os.path.join(ROOT, name)) as handle:
                content = yaml.safe_load(handle)
            if isinstance(content, list) and all(isinstance(play, dict) for play in content):
                found.append(name)
    return found


def test_no_root_playbook_is_shipped_each_has_its_collection_playbook(built):
    """None of the checkout's root playbooks is in the tarball (all or none: none, they import playbooks/)."""
    playbooks = root_playbooks()
    assert {"audit.yml", "driver_rollout.yml", "incident.yml", "loadstep.yml", "remediate.yml"} <= set(playbooks)
    assert [name for name in playbooks if name in built.names] == []
    assert [name for name in playbooks if "playbooks/" + name not in built.names] == []


# Galaxy's importer (galaxy-importer, schema of galaxy.yml): authors, tags and URLs as it checks them
AUTHOR = re.compile(r"^[^<>]{1,64}? <[^<>@\s]+@[^<>@\s]+>$")
TAG = re.compile(r"^[a-z0-9_]{1,64}$")
NAME = re.compile(r"^(?!.*__)[a-z]([a-z0-9_]*[a-z0-9])?$")
URL_KEYS = ("repository", "documentation", "homepage", "issues")


def test_galaxy_yml_follows_the_importers_rules():
    with open(os.path.join(ROOT, "galaxy.yml")) as handle:
        info = yaml.safe_load(handle)
    assert NAME.match(info["namespace"]) and NAME.match(info["name"])
    assert info["authors"] and all(AUTHOR.match(author) and len(author) <= 64 for author in info["authors"])
    assert len(info["tags"]) <= 20 and all(TAG.match(tag) for tag in info["tags"])
    assert len(info["description"]) <= 255
    for key in URL_KEYS:
        address = urllib.parse.urlsplit(info[key])
        assert (address.scheme, bool(address.netloc)) == ("https", True), (key, info[key])
        assert len(info[key]) <= 2000 and address.hostname.endswith(".invalid")  # a placeholder, never a real site


def test_manifest_carries_the_addresses(built):
    with tarfile.open(built.tarball) as archive:
        info = json.load(archive.extractfile("MANIFEST.json"))["collection_info"]
    assert (info["namespace"], info["name"], info["version"]) == ("gpufleet", "core", galaxy_version())
    with open(os.path.join(ROOT, "galaxy.yml")) as handle:
        galaxy = yaml.safe_load(handle)
    assert {key: info[key] for key in URL_KEYS} == {key: galaxy[key] for key in URL_KEYS}
    assert info["repository"] == "https://example.invalid/gpufleet/core"
    assert info["authors"] == ["gpufleet contributors <gpufleet@example.invalid>"]


def test_tarball_installs_offline_and_documents_gpu_facts(built, tmp_path):
    tarball = built.tarball
    target = tmp_path / "collections"
    run([ansible_command("ansible-galaxy"), "collection", "install", "--offline", "-p", str(target), str(tarball)],
        tmp_path, str(tmp_path))
    installed = target / "ansible_collections" / "gpufleet" / "core"
    assert (installed / "plugins" / "modules" / "gpu_facts.py").is_file()
    assert not (installed / "tools").exists()
    doc = run([ansible_command("ansible-doc"), "-t", "module", "--json", "gpufleet.core.gpu_facts"], tmp_path,
              str(tmp_path), ANSIBLE_COLLECTIONS_PATH=str(target))
    entry = json.loads(doc.stdout)["gpufleet.core.gpu_facts"]["doc"]
    assert entry["filename"].startswith(str(installed))
    assert {"source", "timeout", "gather_subset"} <= set(entry["options"])
