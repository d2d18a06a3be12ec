# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The import rules of docs/architecture.md ("What each may import"), checked on every file under plugins/ with
ast: what each wing may not import, and no import inside a function without a comment saying why. IMPORT_RULES
is the document's table, and a test holds the two to the same rows."""

import ast
import os
import re

import pytest

from tests.support.schema_check import ROOT

PLUGINS = os.path.join(ROOT, "plugins")
PACKAGE = "ansible_collections.gpufleet.core.plugins."
ARCHITECTURE_DOC = os.path.join(ROOT, "docs", "architecture.md")

# (files, may not import, except): names under plugins/, as docs/architecture.md's table writes them. A file
# name ends in .py; any other name is a folder and covers every file under it.
IMPORT_RULES = (
    (("module_utils",), ("plugin_utils", "modules", "action", "filter", "callback"), ()),
    (("modules",), ("plugin_utils", "action", "filter", "callback"), ()),
    (("plugin_utils",), ("action", "filter", "callback"), ()),
    (("plugin_utils/rules",),
     ("plugin_utils.audit", "plugin_utils.reports", "plugin_utils.store", "plugin_utils.cli", "plugin_utils.run_folder",
      "plugin_utils.incident", "plugin_utils.timeline", "plugin_utils.loadstep", "plugin_utils.rollout", "modules"),
     ("plugin_utils.store.identity", "plugin_utils.store.counters")),
    (("plugin_utils/reports",),
     ("plugin_utils.audit", "plugin_utils.store", "plugin_utils.cli", "plugin_utils.rules", "plugin_utils.incident",
      "plugin_utils.loadstep", "plugin_utils.rollout", "modules"),
     ("plugin_utils.rules.findings",)),
    (("plugin_utils/store",),
     ("plugin_utils.audit", "plugin_utils.rules", "plugin_utils.reports", "plugin_utils.cli", "plugin_utils.incident",
      "plugin_utils.timeline", "plugin_utils.loadstep", "plugin_utils.rollout", "modules"),
     ()),
    (("plugin_utils/policy",),
     ("plugin_utils.audit", "plugin_utils.reports", "plugin_utils.store", "plugin_utils.cli", "plugin_utils.run_folder",
      "plugin_utils.rules", "plugin_utils.incident", "plugin_utils.timeline", "plugin_utils.loadstep",
      "plugin_utils.rollout", "modules"),
     ("plugin_utils.rules.knowledge", "plugin_utils.rules.mig_config", "plugin_utils.rules.custom")),
    (("plugin_utils/timeline",),
     ("plugin_utils.audit", "plugin_utils.store", "plugin_utils.cli", "plugin_utils.rules", "modules"), ()),
    (("plugin_utils/incident", "plugin_utils/loadstep", "plugin_utils/rollout"),
     ("plugin_utils.store", "plugin_utils.cli", "modules"), ()),
    (("plugin_utils/audit",),
     ("plugin_utils.cli", "plugin_utils.incident", "plugin_utils.loadstep", "plugin_utils.rollout"), ()),
    (("plugin_utils/quarantine",), ("plugin_utils.cli", "modules"), ()),
    (("plugin_utils/run_folder.py", "plugin_utils/text_safety.py", "plugin_utils/bounded_data.py",
      "plugin_utils/collection_version.py", "plugin_utils/orchestration.py", "plugin_utils/acting_target.py",
      "plugin_utils/systemd_dropins.py"),
     ("plugin_utils", "modules"), ()),
    (("action",), ("action",), ()),
)


def plugin_files():
    """Every .py file under plugins/, as its path relative to plugins/ with / between names."""
    found = []
    for folder, _dirs, files in os.walk(PLUGINS):
        found.extend(os.path.relpath(os.path.join(folder, name), PLUGINS).replace(os.sep, "/")
                     for name in files if name.endswith(".py"))
    return sorted(found)


def covers(name, path):
    """Whether a table name (a folder or a .py file under plugins/) covers the file at path."""
    return path == name if name.endswith(".py") else path.startswith(name + "/")


def module_name(path):
    """plugins/<path> as the dotted name under plugins (plugin_utils/rules/diagnose.py: plugin_utils.rules.diagnose)."""
    name = path[:-len(".py")].replace("/", ".")
    return name[:-len(".__init__")] if name.endswith(".__init__") else name


def imported_names(node, path):
    """The names under plugins that an import statement brings in, each as module or module.name (the name may be a
    submodule); imports of anything outside the collection give none."""
    if isinstance(node, ast.Import):
        modules = [alias.name for alias in node.names]
        return [module[len(PACKAGE):] for module in modules if module.startswith(PACKAGE)]
    module = node.module or ""
    if node.level:
        base = module_name(path).split(".")[:-node.level]
        module = ".".join(base + ([module] if module else []))
    elif module.startswith(PACKAGE):
        module = module[len(PACKAGE):]
    else:
        return []
    return ["%s.%s" % (module, alias.name) for alias in node.names]


def under(name, prefix):
    return name == prefix or name.startswith(prefix + ".")


def forbidden_imports(path, source, forbidden, allowed):
    """[(line, name)] of the imports of one file that the rule forbids, at the top or inside a function."""
    found = []
    for node in ast.walk(ast.parse(source, path)):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.extend((node.lineno, name) for name in imported_names(node, path)
                         if any(under(name, prefix) for prefix in forbidden)
                         and not any(under(name, prefix) for prefix in allowed))
    return found


def unexplained_imports_inside_functions(source):
    """[(line, statement)] of the imports inside a function with no comment on their line or the line before; imports
    that follow one another form a group, and the comment before the group's first line covers it."""
    lines = source.splitlines()
    found = set()
    for function in ast.walk(ast.parse(source)):
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        imports = sorted((node for node in ast.walk(function) if isinstance(node, (ast.Import, ast.ImportFrom))),
                         key=lambda node: node.lineno)
        explained, previous = False, None
        for node in imports:
            in_group = previous is not None and previous.end_lineno == node.lineno - 1
            before = lines[node.lineno - 2].strip() if node.lineno > 1 else ""
            explained = "#" in lines[node.lineno - 1] or before.startswith("#") or (in_group and explained)
            if not explained:
                found.add((node.lineno, lines[node.lineno - 1].strip()))
            previous = node
    return sorted(found)


def read(path):
    with open(os.path.join(PLUGINS, path), encoding="utf-8") as stream:
        return stream.read()


def rule_id(rule):
    return "+".join(rule[0])


@pytest.mark.parametrize("rule", [pytest.param(rule, id=rule_id(rule)) for rule in IMPORT_RULES])
def test_no_wing_imports_what_the_table_forbids(rule):
    names, forbidden, allowed = rule
    files = [path for path in plugin_files() if any(covers(name, path) for name in names)]
    assert files, "no file under plugins/ is covered by %s" % (names,)
    broken = {path: found for path in files for found in [forbidden_imports(path, read(path), forbidden, allowed)]
              if found}
    assert broken == {}


def test_no_import_inside_a_function_without_a_comment_saying_why():
    broken = {path: found for path in plugin_files() for found in [unexplained_imports_inside_functions(read(path))]
              if found}
    assert broken == {}


# ---------------------------------------------------------------- the table is the document's

def document_table():
    """The rows of docs/architecture.md's table "Files | May not import | Except", as IMPORT_RULES writes them."""
    with open(ARCHITECTURE_DOC, encoding="utf-8") as stream:
        text = stream.read()
    start = text.index("| Files | May not import | Except |")
    rows = []
    for line in text[start:].splitlines()[2:]:
        if not line.startswith("|"):
            break
        cells = [re.findall(r"`([^`]+)`", cell) for cell in line.strip("|").split("|")]
        rows.append(tuple(tuple(name.rstrip("/") for name in cell) for cell in cells))
    return rows


def test_the_table_here_is_the_documents_table():
    assert document_table() == [tuple(rule) for rule in IMPORT_RULES]


def test_every_file_under_plugins_is_covered_by_a_rule_of_its_kind():
    kinds = {names[0].split("/", maxsplit=1)[0] for names, _forbidden, _allowed in IMPORT_RULES}
    uncovered = {path.split("/", maxsplit=1)[0] for path in plugin_files() if "/" in path} - kinds
    assert uncovered == {"callback", "doc_fragments", "filter"}


# ---------------------------------------------------------------- the checker itself

def test_a_forbidden_import_is_found_at_the_top_and_inside_a_function():
    source = ("from ansible_collections.gpufleet.core.plugins.plugin_utils.audit.run import run_audit\n"
              "def rebuild():\n"
              "    # a reason\n"
              "    from ansible_collections.gpufleet.core.plugins.plugin_utils.reports import writer\n")
    assert forbidden_imports("plugin_utils/store/example.py", source, ("plugin_utils.audit", "plugin_utils.reports"),
                             ()) == [(1, "plugin_utils.audit.run.run_audit"), (4, "plugin_utils.reports.writer")]


def test_an_allowed_exception_is_not_reported_and_a_name_beside_it_is():
    source = ("from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.findings import severity_rank\n"
              "from ansible_collections.gpufleet.core.plugins.plugin_utils.rules import findings, diagnose\n"
              "import ansible_collections.gpufleet.core.plugins.plugin_utils.rules.correlate\n")
    assert forbidden_imports("plugin_utils/reports/example.py", source, ("plugin_utils.rules",),
                             ("plugin_utils.rules.findings",)) == [
        (2, "plugin_utils.rules.diagnose"), (3, "plugin_utils.rules.correlate")]


def test_a_relative_import_is_read_from_the_files_package():
    source = "from ..audit import run\nfrom . import engine\n"
    assert forbidden_imports("plugin_utils/store/record.py", source, ("plugin_utils.audit",), ()) == [
        (1, "plugin_utils.audit.run")]


def test_an_import_inside_a_function_needs_a_comment_on_its_line_or_the_line_before():
    source = ("import json\n"
              "def a():\n"
              "    import yaml\n"
              "def b():\n"
              "    # optional dependency\n"
              "    import yaml\n"
              "    import jmespath\n"
              "\n"
              "    import sqlalchemy\n"
              "def c():\n"
              "    try:\n"
              "        import pynvml  # optional: read through nvidia-smi without it\n"
              "    except ImportError:\n"
              "        pass\n"
              "class D:\n"
              "    def e(self):\n"
              "        def f():\n"
              "            from os import path\n")
    assert unexplained_imports_inside_functions(source) == [(3, "import yaml"), (9, "import sqlalchemy"),
                                                            (18, "from os import path")]
