# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Whether a playbook that changes hosts (remediate.yml, driver_rollout.yml) may act on a host.

Never on a host whose facts were replayed from a recorded fixture (the demo inventory's hosts): they describe
a machine that was recorded, not the one the connection reaches. Never through a local connection, which acts
on this controller, while the host's facts (or, before any facts are read, its inventory name) describe another
machine. Never where live facts read through the host's connection describe this controller while the inventory
names another machine (an ansible_host that resolves to the controller). Otherwise the connection reached the
machine its live facts describe: they were read through it (ssh to a container on a loopback port included).
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import socket

REPLAY_SOURCE = "replay"
LOCAL_CONNECTIONS = ("local", "ansible.builtin.local")
LOOPBACK_NAMES = ("localhost", "localhost.localdomain", "127.0.0.1", "::1")
HOW_TO_PROCEED = ("Nothing was read or changed on it. To act on it, give it its own address and connection in the "
                  "inventory and audit it live (without gpufleet_facts_source=replay); the demo inventory's hosts "
                  "are replayed, so a run on them is a plan only.")


def controller_names():
    """This controller's names (host name, fully qualified name, loopback names), lower case."""
    names = set(LOOPBACK_NAMES)
    for name in (socket.gethostname(), socket.getfqdn()):
        if name:
            names.add(name.lower())
    return names


def display_name(controller):
    """The controller's own name among its names (the shortest that is not a loopback name)."""
    own = sorted((name for name in controller if name not in LOOPBACK_NAMES), key=lambda name: (len(name), name))
    return own[0] if own else "localhost"


def names_this_machine(name, controller):
    """True when name (a host name, fully qualified or not) is one of controller's names."""
    name = (name or "").strip().lower()
    if not name:
        return False
    short = {known.split(".")[0] for known in controller if not known.replace(".", "").isdigit()}
    return name in controller or name.split(".")[0] in short


def refusal(host, connection, facts_source=None, facts_hostname=None, controller=None):
    """Why nothing may act on host; None when nothing speaks against it.

    connection: the connection plugin the host's tasks use (ansible_connection). facts_source: the facts'
    `source`, or before any facts are read the inventory's gpufleet_facts_source. facts_hostname: the host name
    the facts read (facts host.hostname); without it the inventory name stands for the machine meant."""
    if facts_source == REPLAY_SOURCE:
        return "its facts are replayed from a recorded fixture (gpufleet_facts_source=replay), not read from a machine"
    controller = controller_names() if controller is None else controller
    if connection in LOCAL_CONNECTIONS:
        described = facts_hostname or host
        if not names_this_machine(described, controller):
            return ("its connection is local, so it would act on this controller (%s), while its %s %s"
                    % (display_name(controller), "facts describe" if facts_hostname else "inventory name is",
                       described))
    if facts_hostname and names_this_machine(facts_hostname, controller) and not names_this_machine(host, controller):
        return ("its connection (%s) reached this controller (%s: the facts read through it are this machine's), "
                "while its inventory name is %s (to act on the controller itself, name it %s or localhost)"
                % (connection, display_name(controller), host, display_name(controller)))
    return None


def refusal_message(host, reason, plan=None):
    """The message of a host nothing acts on: what would have been done, why not, how to proceed."""
    return "%s: not acted on%s. Refused because %s. %s" % (
        host, ", plan only: %s" % plan if plan else "", reason, HOW_TO_PROCEED)
