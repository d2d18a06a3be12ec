# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Problems found in a policy, and how a message names a key and shows a value."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import collections
import difflib
import re

POLICY_VAR = "gpufleet_policy"
FRAGMENT_PREFIX = "gpufleet_policy_"

Problem = collections.namedtuple("Problem", "path message variable")
Problem.__new__.__defaults__ = (None,)


class PolicyError(ValueError):
    """Every problem found in one policy; str() has one line per problem."""

    def __init__(self, problems, where=POLICY_VAR):
        self.problems = list(problems)
        self.where = where
        super(PolicyError, self).__init__("\n".join(self.lines()))

    def lines(self):
        return ["%s: %s" % (format_path(problem.path, problem.variable or self.where), problem.message)
                for problem in self.problems]


_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def format_path(path, prefix=POLICY_VAR):
    text = prefix
    for key in path:
        if isinstance(key, int) and not isinstance(key, bool):
            text += "[%d]" % key
        elif _IDENTIFIER.match(str(key)):
            text += ".%s" % key
        else:
            text += "[%r]" % str(key)
    return text


def describe_value(value):
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, (list, tuple)):
        return "a list"
    if isinstance(value, str):
        text = str(value)
        return repr(text if len(text) <= 60 else text[:57] + "...")
    return str(value)


def one_line(error):
    return " ".join(str(error).split())


def closest(word, allowed):
    matches = difflib.get_close_matches(str(word), [str(option) for option in allowed], n=1, cutoff=0.6)
    return matches[0] if matches else None


def did_you_mean(word, allowed):
    match = closest(word, allowed)
    return " (did you mean %r?)" % match if match else ""
