"""The `gpufleet` console script: finds the gpufleet.core collection, then runs its CLI.

Why a launcher and not the collection itself in the wheel: the collection is a tree of playbooks, roles and
plugins that Ansible loads from its collection paths (ansible.cfg's collections_path, here
collections/ansible_collections/gpufleet/core, a link to the checkout). Mapping
ansible_collections.gpufleet.core into site-packages would install a second, partial copy (Python files
only, no roles or playbooks) that Ansible would also find on sys.path. So the wheel holds only this small
package; the command's code lives in the collection (plugins/plugin_utils/cli), runs the collection's own
playbooks, and is the same code an installed collection or an execution environment carries.

The collection is looked for, first match wins:
  1. GPUFLEET_PROJECT: a checkout (the folder with galaxy.yml and audit.yml);
  2. the checkout this file is in (editable install, `python -m gpufleet_cli` from a checkout);
  3. the checkout whose .venv runs this Python (`make venv` installs into <checkout>/.venv);
  4. the current folder or one above it;
  5. an installed collection on ANSIBLE_COLLECTIONS_PATH(S) or ~/.ansible/collections, then sys.path.
"""

import os
import sys

ENV_PROJECT = "GPUFLEET_PROJECT"
CLI_MODULE = ("plugins", "plugin_utils", "cli", "main.py")


def is_checkout(folder):
    """A gpufleet.core checkout: galaxy.yml of gpufleet/core beside the playbook project's audit.yml."""
    galaxy = os.path.join(folder, "galaxy.yml")
    if not (os.path.isfile(galaxy) and os.path.isfile(os.path.join(folder, "audit.yml"))):
        return False
    with open(galaxy) as handle:
        lines = [line.strip() for line in handle]
    return "namespace: gpufleet" in lines and "name: core" in lines


def upward(folder):
    folder = os.path.abspath(folder)
    while True:
        yield folder
        parent = os.path.dirname(folder)
        if parent == folder:
            return
        folder = parent


def checkout_candidates():
    if os.environ.get(ENV_PROJECT):
        yield os.environ[ENV_PROJECT]
    yield os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    yield os.path.dirname(os.path.abspath(sys.prefix))
    yield from upward(os.getcwd())


def installed_collection_paths():
    """Folders that may hold ansible_collections/gpufleet/core (an ansible-galaxy install)."""
    configured = os.environ.get("ANSIBLE_COLLECTIONS_PATH") or os.environ.get("ANSIBLE_COLLECTIONS_PATHS") or ""
    paths = [path for path in configured.split(os.pathsep) if path]
    paths += [os.path.expanduser("~/.ansible/collections"), "/usr/share/ansible/collections"]
    return paths + [path for path in sys.path if path]


def locate():
    """(folder to put on sys.path, checkout or None). The folder holds ansible_collections/gpufleet/core."""
    for folder in checkout_candidates():
        if os.path.isdir(folder) and is_checkout(folder):
            return os.path.join(os.path.realpath(folder), "collections"), os.path.realpath(folder)
    for path in installed_collection_paths():
        if os.path.isfile(os.path.join(path, "ansible_collections", "gpufleet", "core", *CLI_MODULE)):
            return os.path.abspath(path), None
    return None, None


def main(argv=None):
    search_path, checkout = locate()
    if search_path is None:
        sys.stderr.write("gpufleet: cannot find the gpufleet.core collection: set %s to the checkout, run from "
                         "inside it, or install the collection (ansible-galaxy collection install)\n" % ENV_PROJECT)
        return 4
    if search_path not in sys.path:
        sys.path.insert(0, search_path)
    from ansible_collections.gpufleet.core.plugins.plugin_utils.cli.main import main as collection_main
    return collection_main(argv, checkout=checkout)


if __name__ == "__main__":
    sys.exit(main())
