"""The documentation ansible-doc renders for the collection's plugins, doc fragments merged in."""

import json
import os
import shutil
import subprocess
import sys

from ansible_collections.gpufleet.core.plugins.modules import gpu_facts

# the folder that holds ansible_collections/gpufleet/core, as the tests import it
COLLECTIONS_PATH = os.path.abspath(os.path.join(os.path.dirname(gpu_facts.__file__), *[os.pardir] * 5))


def ansible_command(name):
    """An ansible-core command: beside this Python in a virtualenv, on PATH under ansible-test units."""
    return shutil.which(name, path=os.path.dirname(sys.executable)) or shutil.which(name)


def rendered_docs(plugin_type, names):
    """{short name: its rendered doc} for gpufleet.core's plugins of plugin_type, in one ansible-doc call."""
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=COLLECTIONS_PATH, ANSIBLE_DEPRECATION_WARNINGS="false")
    env.pop("ANSIBLE_CONFIG", None)
    result = subprocess.run([ansible_command("ansible-doc"), "-t", plugin_type, "--json"]
                            + ["gpufleet.core.%s" % name for name in names],
                            env=env, capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    docs = json.loads(result.stdout)
    return dict((name, docs["gpufleet.core.%s" % name]["doc"]) for name in names)
