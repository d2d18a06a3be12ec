# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""YAML for target-side code, which may not have PyYAML: PyYAML's safe_load when it is importable, else
JSON, else the block-style subset that configuration files such as the NVIDIA device plugin's use
(nested mappings, lists of scalars or mappings, plain, quoted, integer and boolean scalars, comments).
Anchors, flow collections other than a one-line list of scalars, and multi-line scalars are not read by the subset."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import functools
import json
import re


@functools.lru_cache(maxsize=None)
def _pyyaml():
    """PyYAML, or None where it is not installed; imported on the first load(), not with this file: most hosts have
    no YAML file to read (no Kubernetes node), and importing PyYAML costs a collection about 20 ms of CPU."""
    try:
        import yaml  # optional on the host, and imported on first use (the docstring)
    except ImportError:
        return None
    return yaml


class YamlSubsetError(ValueError):
    pass


def load(text):
    pyyaml = _pyyaml()
    if pyyaml is not None:
        try:
            return pyyaml.safe_load(text)
        except pyyaml.YAMLError as exc:
            raise ValueError("not valid YAML: %s" % str(exc).splitlines()[0])
    return load_without_pyyaml(text)


def load_without_pyyaml(text):
    try:
        return json.loads(text)
    except ValueError:
        pass
    lines = _lines(text)
    if not lines:
        return None
    value, position = _block(lines, 0, lines[0][0])
    if position != len(lines):
        raise YamlSubsetError("line %d: unexpected indentation" % lines[position][2])
    return value


_COMMENT_RE = re.compile(r"(^|\s)#.*$")


def _lines(text):
    """(indent, content, line number) of every line with content."""
    result = []
    for number, raw in enumerate((text or "").splitlines(), 1):
        if raw.strip() in ("---", "...") or not raw.strip():
            continue
        content = _strip_comment(raw.rstrip())
        if not content.strip():
            continue
        result.append((len(content) - len(content.lstrip(" ")), content.strip(), number))
    return result


def _strip_comment(line):
    if "#" not in line or ("'" not in line and '"' not in line):
        return _COMMENT_RE.sub("", line)
    return line


def _block(lines, position, indent):
    if lines[position][1].startswith("- ") or lines[position][1] == "-":
        return _sequence(lines, position, indent)
    return _mapping(lines, position, indent)


def _sequence(lines, position, indent):
    items = []
    while position < len(lines) and lines[position][0] == indent and lines[position][1].startswith("-"):
        rest = lines[position][1][1:].strip()
        number = lines[position][2]
        if not rest:
            position += 1
            if position < len(lines) and lines[position][0] > indent:
                value, position = _block(lines, position, lines[position][0])
            else:
                value = None
            items.append(value)
            continue
        if _key_value(rest) is not None:
            # "- key: value" opens a mapping whose keys sit two columns further in
            inner = indent + 2
            lines[position] = (inner, rest, number)
            value, position = _mapping(lines, position, inner)
            items.append(value)
            continue
        items.append(_scalar(rest))
        position += 1
    return items, position


def _mapping(lines, position, indent):
    result = {}
    while position < len(lines) and lines[position][0] == indent:
        pair = _key_value(lines[position][1])
        if pair is None:
            raise YamlSubsetError("line %d: expected 'key: value'" % lines[position][2])
        key, rest = pair
        position += 1
        if rest:
            result[key] = _scalar(rest)
        elif position < len(lines) and (lines[position][0] > indent or (
                lines[position][0] == indent and lines[position][1].startswith("-"))):
            result[key], position = _block(lines, position, lines[position][0])
        else:
            result[key] = None
    return result, position


_KEY_RE = re.compile(r"""^("[^"]*"|'[^']*'|[^'"\s][^:]*?)\s*:(?:\s+(.*))?$""")


def _key_value(text):
    match = _KEY_RE.match(text)
    if match is None:
        return None
    return _unquote(match.group(1)), (match.group(2) or "").strip()


def _unquote(text):
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    return text


_BOOLEANS = {"true": True, "false": False, "yes": True, "no": False, "on": True, "off": False}


def _scalar(text):
    if text in ("[]", "{}"):
        return [] if text == "[]" else {}
    if text.startswith("[") and text.endswith("]") and "[" not in text[1:-1] and "{" not in text[1:-1]:
        return [_scalar(item.strip()) for item in text[1:-1].split(",") if item.strip()]
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    lowered = text.lower()
    if lowered in _BOOLEANS:
        return _BOOLEANS[lowered]
    if lowered in ("null", "~"):
        return None
    if re.match(r"^-?\d+$", text):
        return int(text)
    if re.match(r"^-?\d+\.\d+$", text):
        return float(text)
    return text
