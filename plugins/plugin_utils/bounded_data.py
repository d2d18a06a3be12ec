# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Bounds on data that arrives as YAML: a clear error instead of unbounded work, and errors that never
quote the file they are about.

A YAML alias (*name) refers to an anchored node (&name) instead of copying it, so ten lines of YAML can
describe a structure of 10^9 values (the "billion laughs"); an alias inside its own anchor makes one
that never ends. Loading keeps the references shared and is cheap, but everything that walks the data
afterwards (merging, validating, JSON encoding, templating) expands them. Two guards:

- expanded_size_problem(value) counts the values of parsed data as if every shared reference were
  written out, and stops at the first value past the limit (policies arrive already parsed, from
  Ansible's inventory);
- BoundedSafeLoader is yaml.SafeLoader that measures each document's node graph the same way before
  building it, and refuses a document past the limits or with a recursive alias.

yaml_error_text() describes a YAML error by line and column only: PyYAML's own message quotes the
offending lines of the file, and the file may be one that should not be shown (mig.config_file
pointing at /etc/shadow).
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os
import re
import stat
from collections.abc import Mapping

import yaml

MAX_NODES = 100000
MAX_DEPTH = 64
MAX_FILE_BYTES = 16 * 1024 * 1024

_QUOTED = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"")


class YamlLimitError(yaml.YAMLError):
    """A document past the limits of BoundedSafeLoader (a subclass of YAMLError, so callers that handle
    bad YAML handle this too)."""

    def __init__(self, problem, mark=None):
        super(YamlLimitError, self).__init__(problem)
        self.problem = problem
        self.problem_mark = mark

    def __str__(self):
        return self.problem


def _children(value):
    if isinstance(value, Mapping):
        children = []
        for key, item in value.items():
            children.append(key)
            children.append(item)
        return children
    if isinstance(value, (list, tuple)):
        return value
    return ()


def expanded_size_problem(value, max_nodes=MAX_NODES, max_depth=MAX_DEPTH):
    """None, or why value is too big: more than max_nodes values (mapping keys and values, list items and
    scalars, shared references counted each time they occur) or nested deeper than max_depth. Stops as soon
    as a limit is passed, so the cost is at most about max_nodes steps whatever the value is."""
    seen = 0
    pending = [(value, 1)]
    while pending:
        node, depth = pending.pop()
        seen += 1
        if depth > max_depth:
            return ("is nested deeper than %d levels (a YAML alias inside its own anchor nests without end)"
                    % max_depth)
        children = _children(node)
        if seen + len(pending) + len(children) > max_nodes:
            return ("holds more than %d values once its YAML aliases (*name) are expanded; write the repeated "
                    "parts out or make them smaller" % max_nodes)
        pending.extend((child, depth + 1) for child in children)
    return None


# ---------------------------------------------------------------------------------------------------------
# Loading YAML files

class BoundedSafeLoader(yaml.SafeLoader):  # pylint: disable=too-many-ancestors
    """yaml.SafeLoader that refuses a document whose aliases expand past max_nodes nodes, nest deeper than
    max_depth, or refer to themselves."""

    max_nodes = MAX_NODES
    max_depth = MAX_DEPTH

    def compose_document(self):
        node = super(BoundedSafeLoader, self).compose_document()
        _NodeGraph(self.max_nodes, self.max_depth).check(node)
        return node


class _NodeGraph:
    """Expanded size and depth of a composed node graph, each node measured once."""

    def __init__(self, max_nodes, max_depth):
        self.max_nodes = max_nodes
        self.max_depth = max_depth
        self.sizes = {}
        self.open = set()

    def check(self, node):
        self.size(node, 1)

    def size(self, node, depth):
        if depth > self.max_depth:
            raise YamlLimitError("nested deeper than %d levels" % self.max_depth, node.start_mark)
        key = id(node)
        if key in self.open:
            raise YamlLimitError("an alias refers to the node it is part of (a recursive alias)", node.start_mark)
        if key in self.sizes:
            return self.sizes[key]
        self.open.add(key)
        total = 1
        for child in _node_children(node):
            total += self.size(child, depth + 1)
            if total > self.max_nodes:
                raise YamlLimitError("more than %d values once its aliases (*name) are expanded"
                                     % self.max_nodes, node.start_mark)
        self.open.discard(key)
        self.sizes[key] = total
        return total


def _node_children(node):
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    if isinstance(node, yaml.SequenceNode):
        return node.value
    return ()


def load_all(text, loader=BoundedSafeLoader):
    """Every document of a YAML text, with BoundedSafeLoader's limits."""
    return list(yaml.load_all(text, Loader=loader))


def load(stream, loader=BoundedSafeLoader):
    """One YAML document (text or an open file), with BoundedSafeLoader's limits."""
    return yaml.load(stream, Loader=loader)


def _without_quotes(text):
    return _QUOTED.sub("(...)", " ".join(str(text).split()))


def yaml_error_text(error):
    """'line 3, column 7: mapping values are not allowed here': where and what, never a quote of the text
    (PyYAML's str() of an error shows the offending lines, and its problems may quote a token)."""
    mark = getattr(error, "problem_mark", None) or getattr(error, "context_mark", None)
    problem = getattr(error, "problem", None)
    if isinstance(error, yaml.reader.ReaderError):
        return "character %d: a control character or binary data, which YAML does not allow" % (error.position + 1)
    text = _without_quotes(problem or "not valid YAML")
    context = getattr(error, "context", None)
    if context:
        text = "%s (%s)" % (text, _without_quotes(context))
    if mark is not None:
        return "line %d, column %d: %s" % (mark.line + 1, mark.column + 1, text)
    return text


# ---------------------------------------------------------------------------------------------------------
# Reading files named by the user

class FileLimitError(OSError):
    """A file that is not a regular file, or larger than the limit; reason says which."""

    def __init__(self, path, reason):
        super(FileLimitError, self).__init__("%s: %s" % (path, reason))
        self.path = path
        self.reason = reason


def read_bounded_file(path, max_bytes=MAX_FILE_BYTES):
    """The bytes of a regular file of at most max_bytes. A FIFO, a device (/dev/zero, /dev/stdin) or a
    huge file would block or never end: FileLimitError says which, without reading it."""
    if not stat.S_ISREG(os.stat(path).st_mode):  # before open(): opening a FIFO waits for a writer
        raise FileLimitError(path, "not a regular file")
    with open(path, "rb") as handle:
        mode = os.fstat(handle.fileno()).st_mode
        if not stat.S_ISREG(mode):
            raise FileLimitError(path, "not a regular file")
        data = handle.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise FileLimitError(path, "larger than %d MiB" % (max_bytes // (1024 * 1024)))
    return data
