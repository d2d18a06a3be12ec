"""Whether remediate.yml and driver_rollout.yml may act on a host (plugin_utils/acting_target.py): never on
replayed facts, never through a local connection that reaches this controller while the facts (or the inventory
name) describe another machine."""

import socket

import pytest

from ansible_collections.gpufleet.core.plugins.plugin_utils.acting_target import (
    HOW_TO_PROCEED, controller_names, refusal, refusal_message)

CONTROLLER = {"localhost", "127.0.0.1", "::1", "ctl", "ctl.example.net"}
REPLAYED = "its facts are replayed from a recorded fixture (gpufleet_facts_source=replay), not read from a machine"


@pytest.mark.parametrize("host, connection, source, hostname, expected", [
    # the demo inventory: local connection, replayed facts
    ("gpu-h100-ok-01", "local", "replay", "gpu-h100-ok-01", REPLAYED),
    # replayed facts through any connection
    ("gpu-7", "ssh", "replay", "gpu-7", REPLAYED),
    # before any facts, the inventory says replay
    ("gpu-7", "ssh", "replay", None, REPLAYED),
    # live facts of another machine, read... but the connection is local: they cannot be this machine's
    ("gpu-7", "local", "nvml", "gpu-7",
     "its connection is local, so it would act on this controller (ctl), while its facts describe gpu-7"),
    ("gpu-7", "ansible.builtin.local", None, None,
     "its connection is local, so it would act on this controller (ctl), while its inventory name is gpu-7"),
    # an ansible_host that resolves to the controller: the live facts read through it are the controller's
    ("gpu-7", "ssh", "nvml", "ctl.example.net",
     "its connection (ssh) reached this controller (ctl: the facts read through it are this machine's), "
     "while its inventory name is gpu-7 (to act on the controller itself, name it ctl or localhost)"),
    # the controller under another name
    ("gpu-head", "local", "nvidia_smi", "CTL",
     "its connection (local) reached this controller (ctl: the facts read through it are this machine's), "
     "while its inventory name is gpu-head (to act on the controller itself, name it ctl or localhost)"),
])
def test_refused(host, connection, source, hostname, expected):
    assert refusal(host, connection, source, hostname, CONTROLLER) == expected


@pytest.mark.parametrize("host, connection, source, hostname", [
    # the controller itself, named as it is, with its own live facts, also over ssh
    ("localhost", "local", "nvml", "ctl.example.net"),
    ("ctl.example.net", "ssh", "nvml", "ctl"),
    ("ctl", "local", None, None),
    # the simulated fleet (tests/fleet): ssh to 127.0.0.1 on the container's port, live facts of the container
    ("fleet-01", "ssh", "nvidia_smi", "fleet-01"),
    ("fleet-01", "ssh", None, None),
    # a host without an NVIDIA stack: source none, read live
    ("cpu-3", "ssh", "none", "cpu-3"),
])
def test_allowed(host, connection, source, hostname):
    assert refusal(host, connection, source, hostname, CONTROLLER) is None


def test_the_controller_knows_its_own_names():
    names = controller_names()
    assert socket.gethostname().lower() in names and "localhost" in names
    assert refusal(socket.gethostname(), "local", "nvml", socket.gethostname()) is None
    assert refusal("not-" + socket.gethostname(), "local", "nvml", None) is not None


def test_the_message_names_the_host_its_plan_why_and_how_to_proceed():
    assert refusal_message("gpu-7", REPLAYED, "would run driver") == (
        "gpu-7: not acted on, plan only: would run driver. Refused because %s. %s" % (REPLAYED, HOW_TO_PROCEED))
    assert refusal_message("gpu-7", REPLAYED) == "gpu-7: not acted on. Refused because %s. %s" % (
        REPLAYED, HOW_TO_PROCEED)
    assert "audit it live" in HOW_TO_PROCEED and "plan only" in HOW_TO_PROCEED
