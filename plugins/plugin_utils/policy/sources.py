# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where a value of the policy came from: which fragment set a key, and in which file and line.

Files and lines come as plain data, {variable: {path: (file, line)}}, from whoever read the inventory (the
policy_check action asks Ansible); a path there names list entries by index. Without them, the group_vars
and host_vars files Ansible reads for the host are searched for the key.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import glob
import os

import yaml

from ansible_collections.gpufleet.core.plugins.plugin_utils.policy.checks import is_int


def _step(node, key):
    """(key as the document has it, node below) one step down, or None; named-list entries match by "name"."""
    if isinstance(node, dict) and key in node:
        return key, node[key]
    if isinstance(node, list) and is_int(key) and 0 <= key < len(node):
        return key, node[key]
    if isinstance(node, list) and isinstance(key, str):
        for index, entry in enumerate(node):
            if isinstance(entry, dict) and entry.get("name") == key:
                return index, entry
    return None


def _walk(document, path):
    """(path as the document has it, as far as it exists; the node there)."""
    node, found = document, []
    for key in path:
        step = _step(node, key)
        if step is None:
            break
        found.append(step[0])
        node = step[1]
    return tuple(found), node


def lookup_path(document, path):
    """(True, value) when path exists in a raw document; named-list entries match by key or by "name"."""
    found, node = _walk(document, path)
    return (True, node) if len(found) == len(path) else (False, None)


def source_of(path, fragments):
    """(variable, path found) of the fragment that set path, or the longest part of it that some fragment sets."""
    for length in range(len(path), 0, -1):
        for name, value in reversed(fragments):
            found, _node = lookup_path(value, path[:length])
            if found:
                return name, tuple(path[:length])
    return (fragments[-1][0], ()) if fragments else (None, ())


def attribute_problem(problem, fragments):
    name, _found = source_of(problem.path, fragments)
    return problem._replace(variable=name) if name else problem


def origin_of_problem(problem, fragments, origins):
    """(file, line) where the value behind a problem was written, or None. origins: {variable: {path: (file,
    line)}} with list entries by index; the deepest part of the problem's path that has one counts."""
    by_name = dict(fragments)
    places = (origins or {}).get(problem.variable)
    if problem.variable not in by_name or not places:
        return None
    found, _node = _walk(by_name[problem.variable], problem.path)
    for length in range(len(found), -1, -1):
        if places.get(found[:length]):
            return places[found[:length]]
    return None


def format_origin(origin):
    place, line = origin
    place = display_path(place) if os.path.isabs(place) else place
    return "%s, line %d" % (place, line) if line else place


def var_file_candidates(base_dirs, host, group_names):
    """group_vars and host_vars files Ansible reads for a host: host_vars, the host's groups (in reverse
    name order: Ansible's own precedence also weighs group depth, which variables do not show), then all."""
    names = [("host_vars", host)] + [("group_vars", group) for group in sorted(group_names, reverse=True)
                                     if group != "all"] + [("group_vars", "all")]
    files = []
    for base in base_dirs:
        for folder, name in names:
            stem = os.path.join(base, folder, name)
            for candidate in (stem, stem + ".yml", stem + ".yaml", stem + ".json"):
                if os.path.isfile(candidate):
                    files.append(candidate)
            if os.path.isdir(stem):
                files.extend(sorted(path for path in glob.glob(os.path.join(stem, "**", "*"), recursive=True)
                                    if os.path.isfile(path)))
    return files


_FILE_CACHE = {}


def _load_var_file(path):
    try:
        stamp = os.stat(path).st_mtime_ns
    except OSError:
        return None
    cached = _FILE_CACHE.get(path)
    if cached and cached[0] == stamp:
        return cached[1]
    try:
        # Not bounded_data's loader: this document is only looked up along a path, never walked, so its
        # aliases cost nothing here, and a file that a bounded loader refuses must still be found to be named.
        with open(path, encoding="utf-8") as handle:
            document = yaml.safe_load(handle)
    except (OSError, UnicodeDecodeError, yaml.YAMLError):  # a vault file or a broken one: not searchable
        document = None
    _FILE_CACHE[path] = (stamp, document)
    return document


def find_var_files(variable, path, candidates):
    """Candidate files that set `variable` with `path` inside it; when none has the path, those setting variable."""
    defining, with_path = [], []
    for candidate in candidates:
        document = _load_var_file(candidate)
        if not isinstance(document, dict) or variable not in document:
            continue
        defining.append(candidate)
        if lookup_path(document[variable], path)[0]:
            with_path.append(candidate)
    return with_path or defining


def display_path(path, start=None):
    """path relative to start (default: current folder) when it lies below it."""
    start = start or os.getcwd()
    try:
        relative = os.path.relpath(path, start)
    except ValueError:
        return path
    return path if relative.startswith("..") else relative
