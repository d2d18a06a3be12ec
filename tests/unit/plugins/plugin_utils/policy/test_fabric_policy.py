# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The policy's fabric section (issue 32): what a group's hosts should have on their fabric."""

import pytest

from ansible_collections.gpufleet.core.plugins.plugin_utils.policy import PolicyError, validate_policy


def problems_of(policy):
    with pytest.raises(PolicyError) as raised:
        validate_policy(policy)
    return str(raised.value).splitlines()


def test_the_default_fabric_judges_link_flaps_but_not_congestion():
    fabric = validate_policy({})["fabric"]
    assert fabric["hcas"] == {"count": None, "names": [], "link_layer": None, "rate_gbps": None, "width": None}
    assert fabric["ports"] == [] and fabric["gpudirect"] == {"required": False}
    assert fabric["topology"] == {"max_nic_distance": "NODE"}
    assert fabric["counters"]["link_downed"] == {"warning": 1, "critical": 3}
    assert fabric["counters"]["port_xmit_wait"] == {"warning": None, "critical": None}


def test_a_group_sets_its_hcas_and_one_counter_keeping_the_other_defaults():
    fabric = validate_policy({"fabric": {
        "hcas": {"count": 8, "names": ["mlx5_0", "mlx5_1"], "link_layer": "InfiniBand", "rate_gbps": 400,
                 "width": "4X"},
        "ports": ["mlx5_0/1", "mlx5_1"], "gpudirect": {"required": True}, "topology": {"max_nic_distance": "PXB"},
        "counters": {"symbol_error": {"warning": 100}}}})["fabric"]
    assert fabric["hcas"]["names"] == ["mlx5_0", "mlx5_1"] and fabric["hcas"]["rate_gbps"] == 400
    assert fabric["ports"] == ["mlx5_0/1", "mlx5_1"] and fabric["topology"]["max_nic_distance"] == "PXB"
    assert fabric["counters"]["symbol_error"] == {"warning": 100, "critical": 1000}
    assert fabric["counters"]["link_downed"] == {"warning": 1, "critical": 3}


@pytest.mark.parametrize("fabric, expected", [
    ({"topology": {"max_nic_distance": "PBX"}},
     "fabric.topology.max_nic_distance: must be one of 'PIX', 'PXB', 'PHB', 'NODE', 'SYS', got 'PBX' "
     "(did you mean 'PXB'?)"),
    ({"hcas": {"link_layer": "IB"}}, "fabric.hcas.link_layer: must be one of null, 'InfiniBand', 'Ethernet', got 'IB'"),
    ({"hcas": {"width": "4x"}}, "fabric.hcas.width: must be null or a link width such as '4X', got '4x'"),
    ({"hcas": {"count": -1}}, "fabric.hcas.count: must be null or a whole number between 0 and 64, got -1"),
    ({"ports": ["mlx5_0:1"]}, "fabric.ports[0]: must be an HCA or one of its ports such as 'mlx5_0' or 'mlx5_0/1'"),
    ({"counters": {"link_down": {"warning": 1}}},
     "fabric.counters.link_down: unknown key (did you mean 'link_downed'?)"),
    ({"counters": {"link_downed": {"warning": 0}}},
     "fabric.counters.link_downed.warning: must be null or a whole number 1 or more, got 0"),
    ({"gpudirect": {"required": "yes"}}, "fabric.gpudirect.required: must be true or false, got 'yes'"),
])
def test_a_bad_fabric_value_names_its_key(fabric, expected):
    lines = problems_of({"fabric": fabric})
    assert any(expected in line for line in lines), lines
