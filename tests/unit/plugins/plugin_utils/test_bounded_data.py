"""Bounds with a clear error instead of unbounded work, and errors about a file that never quote it.

- YAML aliases in the policy: a "billion laughs" in group_vars arrives from Ansible as shared references;
  the policy check counts values as if they were written out and stops past a limit, naming the variable.
- YAML files the project loads itself (mig.config_file): a loader that refuses alias bombs and recursive
  aliases; files that are not regular or too big are refused unread.
- Custom-rule expressions: bounded length, nesting and work per evaluation, with errors naming the rule.
- mig.config_file pointing at a secret: the error names the file (and line, column), never its content.
"""

import os
import time

import pytest
import yaml
from ansible.inventory.manager import InventoryManager
from ansible.parsing.dataloader import DataLoader
from ansible.vars.hostvars import HostVars
from ansible.vars.manager import VariableManager

from ansible_collections.gpufleet.core.plugins.action.policy_check import HostVariables
from ansible_collections.gpufleet.core.plugins.module_utils.mig_plan import MigConfigError
from ansible_collections.gpufleet.core.plugins.plugin_utils import bounded_data
from ansible_collections.gpufleet.core.plugins.plugin_utils.rules import custom as rules_custom
from ansible_collections.gpufleet.core.plugins.plugin_utils.bounded_data import (
    BoundedSafeLoader, FileLimitError, expanded_size_problem, read_bounded_file, yaml_error_text)
from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.mig_config import (
    load_mig_parted_config, load_mig_parted_config_file)
from ansible_collections.gpufleet.core.plugins.plugin_utils.policy import (
    FleetPolicies, PolicyError, effective_policy_of, validate_fragments, validate_policy)
from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.scheduling import mig_plan
from tests.support.rule_builders import custom
from tests.support.rule_builders import findings_of, healthy_node
from tests.support.timings import record_timing

SECRET = "SECRETd3adb33f"
MIG_V1 = "version: v1\nmig-configs:\n  all-disabled:\n    - devices: all\n      mig-enabled: false\n"


def laughs_yaml(levels=9, width=10, prefix="", key="custom_rules"):
    """The billion laughs: level n is a list of width aliases of level n-1 (width**levels values)."""
    lines = [prefix + "l0: &l0 [%s]" % ", ".join(["lol"] * width)]
    for level in range(1, levels):
        lines.append(prefix + "l%d: &l%d [%s]" % (level, level, ", ".join(["*l%d" % (level - 1)] * width)))
    lines.append(prefix + "%s: *l%d" % (key, levels - 1))
    return "\n".join(lines) + "\n"


def laughs(levels=9, width=10):
    """The same as Python data with shared references, as yaml (and Ansible) build it."""
    value = ["lol"] * width
    for _level in range(1, levels):
        value = [value] * width
    return value


def quick(seconds=2.0):
    """Times a step that must stop early (a runaway one would not end): recorded with the time it had on an idle
    machine, never asserted, since a loaded machine stretches any time (tests/support/timings.py)."""
    class Timer:
        def __enter__(self):
            self.start = time.perf_counter()
            return self

        def __exit__(self, *exc):
            record_timing("bounded step (took under %ss on an idle machine)" % seconds, time.perf_counter() - self.start)
    return Timer()


# --- data already parsed: the policy ------------------------------------------------------------------------

def test_counting_stops_at_the_limit_whatever_the_size():
    with quick(1.0):
        assert "more than 100000 values" in expanded_size_problem(laughs(levels=9))  # 10**9 values
    assert expanded_size_problem({"a": [1, 2, {"b": "c"}]}) is None
    assert expanded_size_problem(laughs(levels=4), max_nodes=20000) is None  # 10**4 leaves + lists


def test_recursive_data_is_too_deep():
    loop = {"thresholds": None}
    loop["thresholds"] = loop
    assert "nested deeper than 64 levels" in expanded_size_problem(loop)


def test_a_billion_laughs_fragment_names_its_variable_quickly():
    fragments = [("gpufleet_policy", {"driver": {"pin": "550.90.07"}}), ("gpufleet_policy_lol", {"custom_rules": laughs()})]
    with quick(), pytest.raises(PolicyError) as caught:
        validate_fragments(fragments)
    assert str(caught.value) == ("gpufleet_policy_lol: holds more than 100000 values once its YAML aliases (*name) "
                                 "are expanded; write the repeated parts out or make them smaller")


def test_a_policy_with_small_shared_parts_is_fine():
    shared = {"workers_per_gpu": 2}
    policy = validate_fragments([("gpufleet_policy", {"workload": {"services": {"a": shared, "b": shared}}})])
    assert [service["workers_per_gpu"] for service in policy["workload"]["services"]] == [2, 2]


def test_the_fleet_check_refuses_the_bomb_before_templating_it():
    class Variables(dict):
        def raw_value(self, name):
            return dict.__getitem__(self, name)

        def __getitem__(self, name):
            if name == "gpufleet_policy_lol":
                raise AssertionError("templated (walked) a value that expands to 10**9 items")
            return dict.__getitem__(self, name)

    variables = Variables(gpufleet_policy={}, gpufleet_policy_lol={"custom_rules": laughs()})
    with quick():
        fleet = FleetPolicies(lambda host: variables, {"all": ["a", "b"]}).check(["a", "b"])
    assert fleet.error_lines() == [
        "gpufleet_policy_lol: holds more than 100000 values once its YAML aliases (*name) are expanded; write the "
        "repeated parts out or make them smaller - 2 hosts: every host of group all"]


def test_a_billion_laughs_in_real_group_vars_is_refused_with_its_file(tmp_path):
    (tmp_path / "group_vars").mkdir()
    (tmp_path / "hosts.yml").write_text("all:\n  hosts:\n    gpu1:\n    gpu2:\n")
    (tmp_path / "group_vars" / "all.yml").write_text("gpufleet_policy_lol:\n" + laughs_yaml(prefix="  "))
    loader = DataLoader()
    inventory = InventoryManager(loader=loader, sources=[str(tmp_path / "hosts.yml")])
    hostvars = HostVars(inventory=inventory, variable_manager=VariableManager(loader=loader, inventory=inventory),
                        loader=loader)
    with quick(5.0):
        fleet = FleetPolicies(lambda host: HostVariables(hostvars, host), {"all": ["gpu1", "gpu2"]}).check(
            ["gpu1", "gpu2"])
    [entry] = fleet.errors.values()
    assert entry["variable"] == "gpufleet_policy_lol" and sorted(entry["hosts"]) == ["gpu1", "gpu2"]
    assert "more than 100000 values" in entry["message"]
    assert entry["file"] == "%s, line 2" % (tmp_path / "group_vars" / "all.yml")


# --- YAML files the project reads ----------------------------------------------------------------------------

def test_the_loader_refuses_an_alias_bomb_before_building_it():
    with quick(1.0), pytest.raises(yaml.YAMLError) as caught:
        bounded_data.load(laughs_yaml())
    assert yaml_error_text(caught.value).endswith("more than 100000 values once its aliases (*name) are expanded")


def test_the_loader_refuses_a_recursive_alias():
    with pytest.raises(yaml.YAMLError) as caught:
        bounded_data.load("a: &a [1, *a]\n")
    assert yaml_error_text(caught.value) == "line 1, column 4: an alias refers to the node it is part of (a recursive alias)"


def test_the_loader_reads_ordinary_anchors_and_merge_keys():
    document = bounded_data.load("base: &b {devices: all}\none: {<<: *b, mig-enabled: true}\ntwo: [*b, *b]\n")
    assert document["one"] == {"devices": "all", "mig-enabled": True} and document["two"] == [{"devices": "all"}] * 2
    assert issubclass(BoundedSafeLoader, yaml.SafeLoader)


def test_a_mig_config_file_with_an_alias_bomb_is_a_config_error(tmp_path):
    path = tmp_path / "mig.yaml"
    path.write_text("version: v1\nmig-configs:\n" + laughs_yaml(prefix="  ", key="all-1g"))
    with quick(1.0), pytest.raises(MigConfigError) as caught:
        load_mig_parted_config_file(str(path))
    assert str(caught.value) == ("%s: not valid YAML: line 7, column 7: more than 100000 values once its aliases "
                                 "(*name) are expanded" % path)


@pytest.mark.parametrize("special", ["/dev/zero", "fifo", "folder"])
def test_files_that_are_not_regular_are_refused_unread(tmp_path, special):
    path = {"/dev/zero": "/dev/zero", "fifo": str(tmp_path / "fifo"), "folder": str(tmp_path)}[special]
    if special == "fifo":
        os.mkfifo(path)
    with quick(1.0), pytest.raises(FileLimitError, match="not a regular file"):
        read_bounded_file(path)
    with pytest.raises(MigConfigError, match="cannot read the MIG config: not a regular file"):
        load_mig_parted_config_file(path)
    with pytest.raises(PolicyError, match="cannot read %s: not a regular file" % path):
        effective_policy_of([("gpufleet_policy", {"mig": {"config_file": path}})])


def test_a_huge_file_is_refused(tmp_path):
    path = tmp_path / "huge.yaml"
    with open(path, "wb") as handle:
        handle.truncate(17 * 1024 * 1024)
    with pytest.raises(FileLimitError, match="larger than 16 MiB"):
        read_bounded_file(str(path))
    assert read_bounded_file(str(path), max_bytes=32 * 1024 * 1024)[:4] == b"\0\0\0\0"


# --- a mig.config_file that points at a secret ---------------------------------------------------------------

SECRET_FILES = {
    "shadow": "root:$6$%s$x:19000:0:99999:7:::\ndaemon:*:19000:0:99999:7:::\n" % SECRET,
    "invalid_yaml": "root:%s\n  password: [%s\n" % (SECRET, SECRET),
    "mapping": "PASSWORD: %s\nTOKEN: %s\n" % (SECRET, SECRET),
    "tab": "key:\t%s\n\t%s: x\n" % (SECRET, SECRET),
    "undefined_alias": "a: *%s\n" % SECRET,
    "tag": "a: !%s x\n" % SECRET,
    "nul": "%s\x00\x01" % SECRET,
    "version": "version: %s\nmig-configs: {}\n" % SECRET,
    "private_key": "-----BEGIN OPENSSH PRIVATE KEY-----\n%s\n-----END OPENSSH PRIVATE KEY-----\n" % SECRET,
    "not_utf8": SECRET.encode() + b"\xff\xfe",
}


@pytest.mark.parametrize("name", sorted(SECRET_FILES))
def test_errors_about_a_secret_file_name_it_but_never_quote_it(tmp_path, name):
    path = tmp_path / name
    content = SECRET_FILES[name]
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    with pytest.raises(PolicyError) as caught:
        effective_policy_of([("gpufleet_policy", {"mig": {"config_file": str(path)}})])
    message = str(caught.value)
    assert message.startswith("gpufleet_policy.mig.config_file: ") and str(path) in message
    rest = message.replace(str(path), "")
    assert SECRET not in rest and "root" not in rest and "PASSWORD" not in rest and "BEGIN" not in rest
    plan = mig_plan(validate_policy({"mig": {"config_file": str(path)}}))  # the rule's own reading
    assert str(path) in plan.error and SECRET not in plan.error


def test_a_yaml_error_in_a_secret_file_gives_line_and_column():
    with pytest.raises(MigConfigError) as caught:
        load_mig_parted_config("root:%s\n  password: [%s\n" % (SECRET, SECRET), "/etc/shadow")
    assert str(caught.value) == "/etc/shadow: not valid YAML: line 2, column 11: mapping values are not allowed here"


def test_a_real_mig_config_still_gets_its_values_quoted():
    with pytest.raises(MigConfigError, match=r"mig-configs.custom\[0\].mig-devices: '3g.40g' is not a MIG profile"):
        load_mig_parted_config(MIG_V1.replace("all-disabled", "custom").replace(
            "mig-enabled: false", "mig-enabled: true\n      mig-devices: {3g.40g: 2}"), "site.yml")
    with pytest.raises(MigConfigError, match="unknown version 'v2'"):
        load_mig_parted_config(MIG_V1.replace("v1", "v2"), "site.yml")


def test_quoted_values_are_clipped():
    with pytest.raises(MigConfigError) as caught:
        load_mig_parted_config({"version": "v1", "mig-configs": {"x": [{"devices": "all", "mig-enabled": "y" * 500}]}},
                               "site.yml")
    assert str(caught.value) == "site.yml: mig-configs.x[0].mig-enabled: must be true or false, got '%s...'" % ("y" * 37)


# --- custom-rule expressions -----------------------------------------------------------------------------------

@pytest.mark.parametrize("expression, problem", [
    ("driver.version == '%s'" % ("x" * 2000), "the expression has 2020 characters, more than 2000"),
    ("(" * 33 + "driver" + ")" * 33, "the expression nests brackets deeper than 32 levels"),
    (" || ".join(["driver.version"] * 70), "the expression is 71 operations deep, more than 64"),
])
def test_expressions_too_big_stop_the_policy_naming_the_rule(expression, problem):
    with pytest.raises(PolicyError) as caught:
        validate_policy({"custom_rules": [custom("too_big", expression)]})
    assert str(caught.value).startswith("gpufleet_policy.custom_rules.too_big.expression: JMESPath expression ")
    assert len(str(caught.value)) < 200  # the expression is clipped
    assert str(caught.value).endswith(": " + problem)


def test_brackets_inside_string_literals_do_not_count_as_nesting():
    expression = "driver.version == '%s'" % ("(" * 100)
    assert rules_custom.expression_problem(expression) is None
    assert validate_policy({"custom_rules": [custom("parens", expression)]})["custom_rules"][0]["name"] == "parens"


DOUBLING = " | ".join(["[@, @][]"] * 40)  # 2**40 references after 40 cheap steps


@pytest.mark.parametrize("expression", [
    "gpus | " + DOUBLING,
    "driver.version | " + " | ".join(["join('', [@, @])"] * 40),
    "[" + ", ".join(["@"] * 50) + "] | " + " | ".join(["[@, @][]"] * 12) + " | to_string(@)",
])
def test_an_expression_that_explodes_is_stopped_and_named(expression):
    the_policy = validate_policy({"custom_rules": [custom("boom", expression)]})
    with quick():
        found = findings_of(healthy_node(gpus=2), "custom.boom", the_policy)
    assert len(found) == 1 and found[0]["severity"] == "info"
    assert found[0]["summary"].startswith("Custom rule boom could not be evaluated: stopped after 200000 units of work")


def test_an_evaluation_past_its_time_is_stopped():
    compiled = rules_custom.compile_expression("gpus[*].processes[*].pid")
    with pytest.raises(rules_custom.WorkLimitExceeded, match="stopped after 0.0 s"):
        rules_custom.search(compiled, {"gpus": [{"processes": [{"pid": n} for n in range(300)]}]}, max_seconds=0.0)


def test_ordinary_rules_fit_the_budget_with_room_to_spare():
    facts = healthy_node(gpus=8)
    compiled = rules_custom.compile_expression(
        "gpus[?temperature.gpu_c > `60`].{bus: pci_bus_id, procs: processes[*].name, links: length(nvlinks)}")
    interpreter = rules_custom.BudgetedInterpreter()
    assert len(interpreter.visit(compiled.parsed, facts)) == 8
    assert rules_custom.MAX_WORK - interpreter.left < rules_custom.MAX_WORK // 50
