"""Each role's defaults/main.yml and the options of its meta/argument_specs.yml agree: every default is a
documented option of the same type with the same default, and every documented default is one the role
really has (in defaults/main.yml, or applied by its tasks with Jinja's default() for a collection-wide
variable such as gpufleet_facts_source)."""

import glob
import os
import re

import pytest
import yaml
from tests.support.schema_check import ROOT

ROLES = sorted(os.path.basename(os.path.dirname(path)) for path in glob.glob(os.path.join(ROOT, "roles", "*", "tasks")))

# The Python types a value of each argument-spec type may have in YAML.
SPEC_TYPES = {
    "str": (str,),
    "path": (str,),
    "raw": (object,),
    "bool": (bool,),
    "int": (int,),
    "float": (float, int),
    "list": (list,),
    "dict": (dict,),
}


def read_yaml(*parts):
    path = os.path.join(ROOT, *parts)
    if not os.path.exists(path):
        return None
    with open(path) as handle:
        return yaml.safe_load(handle)


def role_defaults(role):
    return read_yaml("roles", role, "defaults", "main.yml") or {}


def main_options(role):
    """Options of the role's main entry point; of every entry point for a role without one (systemd_dropin,
    which the other roles include with tasks_from)."""
    specs = read_yaml("roles", role, "meta", "argument_specs.yml")
    assert specs and specs.get("argument_specs"), "roles/%s has no argument_specs" % role
    entry_points = specs["argument_specs"]
    if "main" in entry_points or role != "systemd_dropin":
        assert "main" in entry_points, "roles/%s has no argument_specs for main" % role
        return entry_points["main"].get("options") or {}
    options = {}
    for entry_point in entry_points.values():
        options.update(entry_point.get("options") or {})
    return options


def role_task_text(role):
    text = []
    for path in sorted(glob.glob(os.path.join(ROOT, "roles", role, "tasks", "**", "*.yml"), recursive=True)):
        with open(path) as handle:
            text.append(handle.read())
    return "\n".join(text)


def type_matches(value, spec):
    spec_type = spec.get("type", "str")
    if isinstance(value, bool) and spec_type in ("int", "float"):
        return False
    if not isinstance(value, SPEC_TYPES[spec_type]):
        return False
    elements = spec.get("elements")
    if spec_type == "list" and elements:
        return all(type_matches(item, {"type": elements}) for item in value)
    return True


def jinja_default_of(name, task_text):
    """The literal a role's tasks give NAME with `NAME | default(literal)`, parsed as YAML, or None."""
    match = re.search(r"\b%s\s*\|\s*default\(\s*('[^']*'|\"[^\"]*\"|[0-9]+|true|false|True|False)\s*\)" % re.escape(name),
                      task_text)
    return yaml.safe_load(match.group(1)) if match else None


def test_every_role_is_checked():
    assert ROLES == ["driver", "gpu_settings", "mig_layout", "restart_policy", "systemd_dropin", "worker_limits"]


@pytest.mark.parametrize("role", ROLES)
def test_every_default_is_a_documented_option(role):
    options = main_options(role)
    undocumented = sorted(set(role_defaults(role)) - set(options))
    assert undocumented == [], "roles/%s/defaults/main.yml sets options argument_specs does not name" % role


@pytest.mark.parametrize("role", ROLES)
def test_defaults_have_the_documented_type_and_value(role):
    options = main_options(role)
    disagreements = []
    for name, value in role_defaults(role).items():
        spec = options.get(name, {})
        if not type_matches(value, spec):
            disagreements.append("%s: %r is not of type %s" % (name, value, spec.get("type", "str")))
        if "default" not in spec:
            disagreements.append("%s: argument_specs gives no default (defaults/main.yml: %r)" % (name, value))
        elif spec["default"] != value:
            disagreements.append("%s: argument_specs says %r, defaults/main.yml %r" % (name, spec["default"], value))
    assert disagreements == []


@pytest.mark.parametrize("role", ROLES)
def test_every_documented_default_is_the_roles_default(role):
    defaults, task_text = role_defaults(role), role_task_text(role)
    missing = []
    for name, spec in main_options(role).items():
        if "default" not in spec or spec["default"] is None or name in defaults:
            continue
        if name.startswith(role + "_") or jinja_default_of(name, task_text) != spec["default"]:
            missing.append("%s (argument_specs default %r)" % (name, spec["default"]))
    assert missing == [], "roles/%s documents defaults it does not have" % role


def test_documented_options_have_a_type():
    untyped = ["%s: %s" % (role, name) for role in ROLES for name, spec in main_options(role).items()
               if "type" not in spec]
    assert untyped == []


def test_the_check_sees_a_disagreement():
    spec = {"type": "int", "default": 900}
    assert type_matches(900, spec) and not type_matches("900", spec) and not type_matches(True, spec)
    assert not type_matches(["a", 1], {"type": "list", "elements": "str"})
    assert jinja_default_of("gpufleet_facts_source", "x: \"{{ gpufleet_facts_source | default('auto') }}\"") == "auto"
    assert jinja_default_of("gpufleet_facts_source", "x: \"{{ gpufleet_facts_source }}\"") is None
