# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The action plugins adapt their arguments and call plugin_utils: no action imports another action, and no
import hides inside a function there or in the host's step (audit/host_step.py) unless its line says why."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import ast
import glob
import os

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
ACTIONS = sorted(glob.glob(os.path.join(ROOT, "plugins", "action", "*.py")))
HOST_STEP = os.path.join(ROOT, "plugins", "plugin_utils", "audit", "host_step.py")


def imported_modules(tree):
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            yield node.module
        elif isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name


def imports_inside_functions(path):
    """(line number, line) of each import inside a function whose line carries no comment saying why."""
    with open(path, encoding="utf-8") as stream:
        text = stream.read()
    lines = text.splitlines()
    found = []
    for function in ast.walk(ast.parse(text)):
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for node in ast.walk(function):
            if isinstance(node, (ast.Import, ast.ImportFrom)) and "#" not in lines[node.lineno - 1]:
                found.append((node.lineno, lines[node.lineno - 1].strip()))
    return found


def test_the_actions_are_found():
    assert len(ACTIONS) >= 8


@pytest.mark.parametrize("path", ACTIONS, ids=os.path.basename)
def test_no_action_imports_another_action(path):
    with open(path, encoding="utf-8") as stream:
        tree = ast.parse(stream.read())
    assert [name for name in imported_modules(tree) if name.startswith("ansible_collections.gpufleet.core.plugins.action")] == []


@pytest.mark.parametrize("path", ACTIONS + [HOST_STEP], ids=os.path.basename)
def test_no_unexplained_import_inside_a_function(path):
    assert imports_inside_functions(path) == []
