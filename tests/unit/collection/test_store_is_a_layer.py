"""The run store is a layer (issue 26): no module under plugins/plugin_utils/store/ imports from the wings above it
(audit, rules, reports, cli), at the top of the file or inside a function. It reads and writes the store, and may
use run_folder.py, module_utils and the small shared modules. And in store/, audit/ and cli/store_commands.py an
import made inside a function says why (a comment on its line or just above): there they once hid the cycle."""

import ast
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[3]
STORE = ROOT / "plugins" / "plugin_utils" / "store"
PACKAGE = "ansible_collections.gpufleet.core.plugins.plugin_utils."
ABOVE = ("audit", "rules", "reports", "cli")


def imported_names(tree, package):
    """Every module an import statement of the tree names, absolute (a relative import resolved against package)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(parts + ([base] if base else []))
            yield base
            for alias in node.names:  # from ...plugin_utils import audit
                yield "%s.%s" % (base, alias.name)


def upward(name):
    """The wing above the store that an imported module name belongs to, or None."""
    if not name.startswith(PACKAGE):
        return None
    first = name[len(PACKAGE):].split(".")[0]
    return first if first in ABOVE else None


def store_modules():
    return sorted(STORE.rglob("*.py"))


def package_of(path):
    return PACKAGE + ".".join(path.parent.relative_to(ROOT / "plugins" / "plugin_utils").parts)


@pytest.mark.parametrize("path", store_modules(), ids=lambda path: str(path.relative_to(STORE)))
def test_no_store_module_imports_a_wing_above_it(path):
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    found = sorted({name for name in imported_names(tree, package_of(path)) if upward(name)})
    assert found == [], "%s imports from %s" % (path.relative_to(ROOT), ", ".join(found))


def test_the_check_sees_an_upward_import_inside_a_function():
    source = "\n".join((
        "def f():",
        "    from ansible_collections.gpufleet.core.plugins.plugin_utils.reports.writer import RENDERERS",
        "    from ..audit import fleet_view",
        "    from ansible_collections.gpufleet.core.plugins.plugin_utils import cli", ""))
    names = {upward(name) for name in imported_names(ast.parse(source), PACKAGE + "store")}
    assert names == {None, "reports", "audit", "cli"}


def test_every_store_module_is_checked():
    names = {path.name for path in store_modules()}
    assert {"record.py", "baseline.py", "queries.py", "write.py", "env.py"} <= names


# where an import inside a function must say why (issue 26: they hid the store's import cycle)
EXPLAINED_IMPORTS = (STORE, ROOT / "plugins" / "plugin_utils" / "audit", ROOT / "plugins" / "plugin_utils" / "cli" /
                     "store_commands.py")


def unexplained_imports(source):
    """Line numbers of the imports inside a function without a comment on their line or just above."""
    lines = source.splitlines()
    found = []
    for function in ast.walk(ast.parse(source)):
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for node in ast.walk(function):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                line, above = lines[node.lineno - 1], lines[node.lineno - 2] if node.lineno > 1 else ""
                if "#" not in line and not above.strip().startswith("#"):
                    found.append(node.lineno)
    return sorted(set(found))


def explained_modules():
    for place in EXPLAINED_IMPORTS:
        yield from ([place] if place.is_file() else sorted(place.rglob("*.py")))


@pytest.mark.parametrize("path", list(explained_modules()), ids=lambda path: str(path.relative_to(ROOT)))
def test_an_import_inside_a_function_says_why(path):
    assert unexplained_imports(path.read_text(encoding="utf-8")) == []


def test_the_check_sees_an_unexplained_import_in_a_function():
    source = "import os\n\n\ndef f():\n    import json\n    # optional\n    import yaml\n    import zlib  # why\n"
    assert unexplained_imports(source) == [5]
