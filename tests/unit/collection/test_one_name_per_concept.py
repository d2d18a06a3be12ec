# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 26: "history" named four different things. Each now has a name that says what it is; the old names
are gone from the code, the tests and the docs (rule ids like history.*, policy keys and report fields stay)."""

import os

import pytest

from tests.support.schema_check import ROOT

PLUGIN_UTILS = os.path.join(ROOT, "plugins", "plugin_utils")

# the old name -> what it is now
RENAMED = {
    "rules/history.py": "rules/drift_trend.py",
    "audit/history_step.py": "audit/record_step.py",
    "timeline/history.py": "timeline/past_runs.py",
    "reports/changes.py": "reports/since_previous.py",
}
OLD_NAMES = ("rules/history.py", "rules.history", "history_step", "timeline/history.py", "timeline.history",
             "reports/changes.py", "reports.changes", "collect_host_history", "rules_history")
SEARCHED = ("plugins", "tests", "tools", "bench", "docs", "roles", "playbooks", "README.md")


def searched_files():
    for top in SEARCHED:
        path = os.path.join(ROOT, top)
        if os.path.isfile(path):
            yield path
        for folder, _dirs, files in os.walk(path):
            for name in files:
                if name.endswith((".py", ".md", ".yml", ".yaml", ".sh")):
                    yield os.path.join(folder, name)


@pytest.mark.parametrize("old, new", sorted(RENAMED.items()))
def test_each_history_module_has_its_new_name_only(old, new):
    assert os.path.isfile(os.path.join(PLUGIN_UTILS, new))
    assert not os.path.exists(os.path.join(PLUGIN_UTILS, old))


def test_no_file_names_a_history_module_by_its_old_name():
    this_file = os.path.abspath(__file__)
    found = []
    for path in searched_files():
        if os.path.abspath(path) == this_file:
            continue
        with open(path, encoding="utf-8", errors="replace") as handle:
            text = handle.read()
        found.extend("%s: %s" % (os.path.relpath(path, ROOT), old) for old in OLD_NAMES if old in text)
    assert found == []
