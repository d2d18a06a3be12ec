"""Where a value was written, as plain data: the policy_check action reads Ansible's origin tags into
{path: (file, line)} and the engine (which never imports Ansible) places each problem with it."""

import pytest
from ansible.inventory.manager import InventoryManager
from ansible.parsing.dataloader import DataLoader
from ansible.vars.hostvars import HostVars
from ansible.vars.manager import VariableManager

from ansible_collections.gpufleet.core.plugins.action.policy_check import HostVariables, OriginIndex, value_origins
from ansible_collections.gpufleet.core.plugins.plugin_utils.policy import FleetPolicies, Problem
from ansible_collections.gpufleet.core.plugins.plugin_utils.policy.sources import origin_of_problem

GROUP_VARS = """\
gpufleet_policy_svc:
  workload:
    services:
      - name: vllm
        workers_per_gpu: 2
      - name: triton
        restart: sometimes
  thresholds: &limits
    memory_used_pct: 90
  catalogs:
    xid: *limits
"""


@pytest.fixture
def host_variables(tmp_path):
    (tmp_path / "group_vars").mkdir()
    (tmp_path / "hosts.yml").write_text("all:\n  hosts:\n    g1:\n    g2:\n")
    (tmp_path / "group_vars" / "all.yml").write_text(GROUP_VARS)
    loader = DataLoader()
    inventory = InventoryManager(loader=loader, sources=[str(tmp_path / "hosts.yml")])
    hostvars = HostVars(inventory=inventory, variable_manager=VariableManager(loader=loader, inventory=inventory),
                        loader=loader)
    return hostvars, str(tmp_path / "group_vars" / "all.yml")


def test_origins_are_plain_paths_to_file_and_line(host_variables):
    hostvars, path = host_variables
    places = value_origins(hostvars.raw_get("g1")["gpufleet_policy_svc"])
    assert places[()] == (path, 2)
    assert places[("workload", "services", 1, "restart")] == (path, 7)
    assert places[("thresholds", "memory_used_pct")] == (path, 9)
    assert all(isinstance(key, tuple) and isinstance(place, tuple) and isinstance(place[0], str)
               for key, place in places.items())
    # the alias is placed where it is written; what it refers to is not walked a second time
    assert ("catalogs", "xid", "memory_used_pct") not in places


def test_a_problem_in_a_named_entry_is_placed_on_its_line(host_variables):
    hostvars, path = host_variables
    problem = Problem(("workload", "services", "triton", "restart"), "bad", "gpufleet_policy_svc")
    variables = HostVariables(hostvars, "g1")
    fragments = [("gpufleet_policy_svc", variables["gpufleet_policy_svc"])]
    origins = {"gpufleet_policy_svc": variables.origins("gpufleet_policy_svc")}
    assert origin_of_problem(problem, fragments, origins) == (path, 7)
    deeper = problem._replace(path=("workload", "services", "triton", "restart", "x"))
    assert origin_of_problem(deeper, fragments, origins) == (path, 7)  # the deepest part that has a line
    assert origin_of_problem(problem, fragments, {}) is None


def test_the_fleet_places_problems_with_the_origins_of_the_action(host_variables):
    hostvars, path = host_variables
    index = OriginIndex()
    fleet = FleetPolicies(lambda host: HostVariables(hostvars, host, index), {"all": ["g1", "g2"]}).check(["g1", "g2"])
    [entry] = fleet.errors.values()
    assert (entry["path"], entry["file"], entry["hosts"]) == (
        "gpufleet_policy_svc.workload.services.triton.restart", "%s, line 7" % path, ["g1", "g2"])
