# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The collection's version, written in one place: the `version:` line of galaxy.yml.

A checkout reads galaxy.yml; a built and installed collection has no galaxy.yml but its MANIFEST.json,
which ansible-galaxy writes from it. The run record (tool_version) reads VERSION; so does pyproject.toml
(setuptools' dynamic version, attr), which is why this file uses only the standard library and reads the
line with a pattern: setuptools evaluates it in an isolated build environment without PyYAML.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
import os
import re

COLLECTION_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_VERSION_LINE = re.compile(r"""^version:[ \t]*["']?([0-9][^"'\s#]*)["']?[ \t]*(?:#.*)?$""", re.MULTILINE)


def collection_version(root=COLLECTION_ROOT):
    """'1.2.0' from root/MANIFEST.json (an installed collection), else from root/galaxy.yml (a checkout)."""
    manifest = os.path.join(root, "MANIFEST.json")
    if os.path.isfile(manifest):
        with open(manifest) as handle:
            return json.load(handle)["collection_info"]["version"]
    path = os.path.join(root, "galaxy.yml")
    with open(path) as handle:
        match = _VERSION_LINE.search(handle.read())
    if not match:
        raise ValueError("%s has no top-level version: line" % path)
    return match.group(1)


VERSION = collection_version()
