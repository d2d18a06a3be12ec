#!/usr/bin/env python
"""Write the pip bootstrap script that ansible-test sanity (run on this machine) expects in its cache.

ansible-test creates a virtual environment per sanity test and bootstraps pip in it with
https://ci-files.testing.ansible.com/ansible-test/get-pip-<version>.py, which it first looks for at
~/.ansible/test/cache/get_pip_<version with underscores>.py. That host cannot be reached from our
machines, so this writes a stand-in there that gets the same pip from ensurepip and the package index.
The pip version is the one ansible-test itself asks for (read from ansible_test, not written here).

Usage: python tools/get_pip_standin.py  (with the Python that has ansible-test installed)
Prints the path of the stand-in.
"""

import os
import sys
import types

STANDIN_TEMPLATE = '''\
"""Stand-in for ansible-test's get-pip-{version}.py, written by gpufleet's tools/get_pip_standin.py.

ansible-test downloads its pip bootstrap script from ci-files.testing.ansible.com, which our machines
cannot reach. This installs the same pip version ({version}) with ensurepip and the package index.
ansible-test runs it with the new virtual environment's Python.
"""
import os
import subprocess
import sys

PIP_VERSION = "{version}"


def main():
    # ensurepip installs the pip wheel bundled with this Python; a pip config file named for the outer
    # environment (index, constraints) must not steer that offline install.
    ensurepip_env = dict(os.environ)
    ensurepip_env.pop("PIP_CONFIG_FILE", None)
    subprocess.check_call([sys.executable, "-m", "ensurepip", "--upgrade", "--default-pip"], env=ensurepip_env)
    subprocess.check_call([sys.executable, "-m", "pip", "install", "--disable-pip-version-check", "--quiet",
                           "pip==" + PIP_VERSION])


if __name__ == "__main__":
    main()
'''


def pip_versions_wanted():
    """Return the pip versions ansible-test bootstraps, over every Python version it supports."""
    from ansible_test._internal.python_requirements import get_venv_packages
    from ansible_test._util.target.common.constants import CONTROLLER_PYTHON_VERSIONS, REMOTE_ONLY_PYTHON_VERSIONS

    versions = REMOTE_ONLY_PYTHON_VERSIONS + CONTROLLER_PYTHON_VERSIONS
    return sorted(set(get_venv_packages(types.SimpleNamespace(version=v))['pip'] for v in versions))


def cache_path(pip_version):
    """Return where ansible-test looks for the bootstrap script of this pip version."""
    return os.path.expanduser('~/.ansible/test/cache/get_pip_%s.py' % pip_version.replace('.', '_'))


def write_standin(pip_version):
    """Write the stand-in for one pip version and return its path."""
    path = cache_path(pip_version)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'w', encoding='utf-8') as handle:
        handle.write(STANDIN_TEMPLATE.format(version=pip_version))
    return path


def main():
    try:
        pip_versions = pip_versions_wanted()
    except (ImportError, AttributeError, KeyError, TypeError) as exc:
        sys.exit('Cannot read the pip version ansible-test wants from its source (%s: %s); '
                 'tools/get_pip_standin.py needs updating for this ansible-test.' % (type(exc).__name__, exc))
    for pip_version in pip_versions:
        print(write_standin(pip_version))


if __name__ == '__main__':
    main()
