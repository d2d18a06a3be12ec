# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A BMC read over the network from the controller: ipmitool over LAN or Redfish over HTTPS. One code path for
the bmc_facts module and for the gpu_facts action plugin, which reads the BMC in-process on the controller
where the inventory gives gpufleet_bmc_address.

The password reaches ipmitool only as a file of mode 0600 (-f) that is removed afterwards, and Redfish only as
HTTP basic authentication; it is never on a command line, in the facts or in an error text."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
import os
import tempfile

from ansible.module_utils.common.text.converters import to_native
from ansible.module_utils.urls import open_url

from ansible_collections.gpufleet.core.plugins.module_utils.args_common import BMC_CONNECTION_SPEC, WINDOW_HOURS
from ansible_collections.gpufleet.core.plugins.module_utils.bmc_collect import (
    BmcReader, lan_arguments, new_bmc, read_bmc)
from ansible_collections.gpufleet.core.plugins.module_utils.ipmi_sel import window_events
from ansible_collections.gpufleet.core.plugins.module_utils.redfish_chassis import (
    MAX_LOG_PAGES, parse_log_entries, summarize_redfish)

IPMI_PORT = 623
REDFISH_PORT = 443
# bmc_facts' options beyond the connection (args_common.BMC_CONNECTION_SPEC): how the BMC is read
BMC_READ_SPEC = dict(
    window_hours=dict(type="int", default=WINDOW_HOURS),
    timeout=dict(type="int", default=20),
    ipmitool=dict(type="path"),
    redfish_base_url=dict(type="str"),
    redfish_chassis=dict(type="str"),
    validate_certs=dict(type="bool", default=True),
)
# the options of a read over the network and their defaults, for a caller without bmc_facts' argument spec
LAN_DEFAULTS = dict((name, argument.get("default"))
                    for name, argument in dict(BMC_CONNECTION_SPEC, **BMC_READ_SPEC).items()
                    if not argument.get("required"))


def write_password_file(password):
    """A new file of mode 0600 (mkstemp's) holding the password; the caller removes it."""
    descriptor, path = tempfile.mkstemp(prefix=".gpufleet-bmc-")
    with os.fdopen(descriptor, "w") as handle:
        handle.write(password)
    return path


def read_lan_bmc(host, ipmitool, params):
    bmc = new_bmc("lan", params["address"])
    password_file = write_password_file(params["password"])
    try:
        connection = lan_arguments(params["address"], params["user"], password_file, params["port"] or IPMI_PORT,
                                   params["interface"], params["cipher_suite"])
        reader = BmcReader(host, ipmitool, connection, params["timeout"], secrets=[params["password"]])
        read_bmc(reader, bmc, host.now(), params["window_hours"])
    finally:
        os.unlink(password_file)
    return bmc


class RedfishClient:
    """GETs JSON documents of one Redfish service with basic authentication; (document, None) or (None, reason),
    the reason scrubbed of the password."""

    def __init__(self, base_url, user, password, timeout, validate_certs=True, opener=open_url):
        self.base_url = base_url.rstrip("/")
        self.user, self.password = user, password
        self.timeout, self.validate_certs, self.opener = timeout, validate_certs, opener

    def get(self, path):
        try:
            response = self.opener(self.base_url + path, method="GET", url_username=self.user,
                                   url_password=self.password, force_basic_auth=True, timeout=self.timeout,
                                   validate_certs=self.validate_certs, headers={"Accept": "application/json"})
            return json.loads(response.read().decode("utf-8", "replace")), None
        except ValueError:
            return None, "the answer is not JSON"
        except Exception as exc:  # pylint: disable=broad-except  # open_url raises URLError, HTTPError, socket errors
            return None, to_native(exc).replace(self.password, "********") if self.password else to_native(exc)


def _chassis_path(client, chassis):
    if chassis:
        return "/redfish/v1/Chassis/%s" % chassis, None
    collection, reason = client.get("/redfish/v1/Chassis")
    members = (collection or {}).get("Members") if isinstance(collection, dict) else None
    first = members[0].get("@odata.id") if members and isinstance(members[0], dict) else None
    if not first:
        return None, reason or "the Chassis collection has no member"
    return first, None


# Members of a collection (power supplies, leak detectors) read one by one, at most
MAX_MEMBERS = 32
# The chassis's links read, and the summarize_redfish argument each document goes to
CHASSIS_DOCUMENTS = (("Power", "power"), ("Thermal", "thermal"), ("PowerSubsystem", "power_subsystem"),
                     ("ThermalSubsystem", None), ("EnvironmentMetrics", "environment_metrics"))


def _link(document, key):
    """The @odata.id of document's key ({"Power": {"@odata.id": ...}}), or None."""
    value = document.get(key) if isinstance(document, dict) else None
    target = value.get("@odata.id") if isinstance(value, dict) else None
    return target if isinstance(target, str) and target else None


class RedfishWalk:
    """GETs of one read: the documents fetched, and each linked document that failed as an error of bmc."""

    def __init__(self, client, bmc):
        self.client, self.bmc = client, bmc

    def get(self, path):
        document, reason = self.client.get(path)
        if reason:
            self.bmc["errors"].append({"call": "GET %s" % path, "reason": reason})
            return None
        return document

    def linked(self, document, key):
        path = _link(document, key)
        return self.get(path) if path else None

    def members(self, collection):
        """The member documents of a collection: inline when the service expanded them, else one GET each."""
        found = []
        for member in (collection or {}).get("Members") or () if isinstance(collection, dict) else ():
            if not isinstance(member, dict) or len(found) >= MAX_MEMBERS:
                continue
            if "Status" in member or "@odata.id" not in member:
                found.append(member)
            else:
                document = self.get(member["@odata.id"])
                if isinstance(document, dict):
                    found.append(document)
        return found


def _chassis_documents(walk, path):
    """{summarize_redfish argument: document} of one chassis: what its document links (the legacy Power and Thermal,
    PowerSubsystem and its PowerSupplies, ThermalSubsystem's ThermalMetrics and LeakDetection with its
    LeakDetectors, EnvironmentMetrics). A service that does not give the chassis document is read at the legacy
    paths."""
    chassis, _reason = walk.client.get(path)
    if not isinstance(chassis, dict):
        chassis = {"Power": {"@odata.id": path + "/Power"}, "Thermal": {"@odata.id": path + "/Thermal"}}
    documents = {}
    for key, argument in CHASSIS_DOCUMENTS:
        document = walk.linked(chassis, key)
        if argument and document is not None:
            documents[argument] = document
        if key == "PowerSubsystem" and document is not None:
            documents["power_supplies"] = walk.members(walk.linked(document, "PowerSupplies"))
        if key == "ThermalSubsystem" and document is not None:
            documents["thermal_metrics"] = walk.linked(document, "ThermalMetrics")
            leak_detection = walk.linked(document, "LeakDetection")
            documents["leak_detection"] = leak_detection
            documents["leak_detectors"] = walk.members(walk.linked(leak_detection, "LeakDetectors"))
    return documents


def _sel_entries_path(client):
    """The Entries of the first system's SEL log service, or None when the service has none."""
    systems, _reason = client.get("/redfish/v1/Systems")
    members = (systems or {}).get("Members") if isinstance(systems, dict) else None
    system = members[0].get("@odata.id") if members and isinstance(members[0], dict) else None
    services, _reason = client.get(system + "/LogServices") if system else (None, None)
    for member in (services or {}).get("Members") or () if isinstance(services, dict) else ():
        target = member.get("@odata.id") if isinstance(member, dict) else None
        if isinstance(target, str) and target.rstrip("/").rsplit("/", 1)[-1].lower() == "sel":
            return target.rstrip("/") + "/Entries"
    return None


def read_redfish_sel(walk, now, window_hours):
    """The SEL of the window from its LogEntryCollection, every page (@odata.nextLink) up to MAX_LOG_PAGES; None when
    the service has no SEL or its first page could not be read."""
    path = _sel_entries_path(walk.client)
    records, pages = [], 0
    while path and pages < MAX_LOG_PAGES:
        page = walk.get(path)
        if page is None:
            if not pages:
                return None
            break
        found, path = parse_log_entries(page)
        records += found
        pages += 1
    if not pages:
        return None
    return dict(window_events(records, now, window_hours), window_hours=window_hours)


def read_redfish_bmc(client, address, chassis=None, now=None, window_hours=WINDOW_HOURS):
    """The bmc facts of one chassis from the documents it links, and the SEL of its system."""
    bmc = new_bmc("redfish", address)
    path, reason = _chassis_path(client, chassis)
    if path is None:
        bmc["errors"].append({"call": "GET /redfish/v1/Chassis", "reason": reason})
        bmc["status"], bmc["reasons"] = "failed", ["the Redfish service did not answer: %s" % reason]
        return bmc
    walk = RedfishWalk(client, bmc)
    documents = _chassis_documents(walk, path)
    bmc.update(summarize_redfish(**documents))
    bmc["sel"] = read_redfish_sel(walk, now, window_hours)
    if bmc["errors"]:
        read_any = any(document for document in documents.values()) or bmc["sel"] is not None
        bmc["status"] = "partial" if read_any else "failed"
        bmc["reasons"] = ["%s: %s" % (error["call"], error["reason"]) for error in bmc["errors"]]
    return bmc


def redfish_client(params):
    base = params["redfish_base_url"] or "https://%s:%d" % (params["address"], params["port"] or REDFISH_PORT)
    return RedfishClient(base, params["user"], params["password"], params["timeout"], params["validate_certs"])


def read_bmc_over_lan(host, params):
    """The bmc facts of params' BMC (bmc_facts' options: address, user, password, protocol, ...), read from host
    (a LiveHost of the controller): Redfish, or ipmitool (params' ipmitool, else found on the host's PATH)."""
    if params["protocol"] == "redfish":
        return read_redfish_bmc(redfish_client(params), params["address"], params["redfish_chassis"], host.now(),
                                params["window_hours"])
    ipmitool = params["ipmitool"] or host.find_bin("ipmitool")
    if not ipmitool:
        bmc = new_bmc("lan", params["address"])
        bmc["status"] = "failed"
        bmc["errors"].append({"call": "ipmitool", "reason": "ipmitool is not installed on the controller"})
        bmc["reasons"] = ["ipmitool is not installed on the controller"]
        return bmc
    return read_lan_bmc(host, ipmitool, params)
