#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
---
module: bmc_facts
short_description: Read a host's BMC (sensors and event log) over the network with ipmitool or Redfish
version_added: 1.0.0
description:
  - Reads the sensors (C(ipmitool sdr elist)), the event log of the window (C(ipmitool -Z sel elist), times in UTC),
    the BMC clock and the DCMI power reading of one BMC over IPMI-over-LAN, and returns them as C(bmc), in the
    shape of C(ansible_facts.gpufleet.bmc) of M(gpufleet.core.gpu_facts) (C(docs/schema/gpu_facts.schema.json)).
  - Meant to run on the controller, delegated (C(delegate_to=localhost)), for the host whose BMC it is; the audit
    (C(playbooks/tasks/audit.yml)) runs it when the inventory gives C(gpufleet_bmc_address) and joins the result
    to the host's facts, so the BMC's findings and its event times sit beside the host's Xids.
  - The password is given to ipmitool only as a file of mode 0600 (C(-f)) that is removed afterwards; it is never
    on a command line, in the result, or in an error text. Keep it in a vault.
  - With O(protocol=redfish) it reads the chassis's Redfish C(Power) and C(Thermal) documents over HTTPS instead
    (fans, power supplies and their redundancy, temperatures, power draw; no event log, C(bmc.sel) is null), with
    the password sent as HTTP basic authentication.
  - Read only. A BMC that does not answer, refuses the login or times out gives C(bmc.status=failed) with the
    reason in C(bmc.errors); the module itself still succeeds.
author:
  - gpufleet contributors (!UNKNOWN)
requirements:
  - C(ipmitool) where the module runs.
options:
  address:
    description: Host name or IP address of the BMC.
    type: str
    required: true
  protocol:
    description: V(ipmi) (ipmitool over LAN) or V(redfish) (HTTPS).
    type: str
    choices: [ipmi, redfish]
    default: ipmi
  port:
    description: Port of the BMC's service; unset, 623 (UDP) for V(ipmi) and 443 for V(redfish).
    type: int
  user:
    description: BMC user name.
    type: str
    required: true
  password:
    description: BMC password (from a vault). Never logged or returned.
    type: str
    required: true
  interface:
    description: V(lanplus) (IPMI 2.0, RMCP+) or V(lan) (IPMI 1.5).
    type: str
    choices: [lanplus, lan]
    default: lanplus
  cipher_suite:
    description:
      - RMCP+ cipher suite (C(ipmitool -C)), for example V(17) or V(3); unset, ipmitool asks the BMC for the suites it
        offers first.
    type: int
  window_hours:
    description: Event-log records of the last this many hours are returned (records without a time too).
    type: int
    default: 72
  timeout:
    description: Seconds one ipmitool command may run before it is killed and reported in C(bmc.errors).
    type: int
    default: 20
  ipmitool:
    description: Path of ipmitool; unset, it is looked up on C(PATH).
    type: path
  redfish_base_url:
    description: With O(protocol=redfish), the service's base URL; unset, C(https://<address>:<port>).
    type: str
  redfish_chassis:
    description: With O(protocol=redfish), the chassis id under C(/redfish/v1/Chassis); unset, the first member.
    type: str
  validate_certs:
    description: With O(protocol=redfish), verify the BMC's TLS certificate.
    type: bool
    default: true
attributes:
  check_mode:
    description: Reads only; behaves the same in check mode.
    support: full
  diff_mode:
    description: Changes nothing, so there is no diff.
    support: none
seealso:
  - module: gpufleet.core.gpu_facts
"""

EXAMPLES = r"""
- name: Read the BMC of each host from the controller
  gpufleet.core.bmc_facts:
    address: "{{ gpufleet_bmc_address }}"
    user: "{{ gpufleet_bmc_user }}"
    password: "{{ gpufleet_bmc_password }}"
  delegate_to: localhost
  register: bmc_lan

- name: Show the power supplies
  ansible.builtin.debug:
    msg: "{{ bmc_lan.bmc.power_supplies }}"
"""

RETURN = r"""
bmc:
  description:
    - The BMC's facts, as C(ansible_facts.gpufleet.bmc) of M(gpufleet.core.gpu_facts) with C(source=lan); see
      that module's C(bmc) for every field.
  returned: always
  type: dict
  contains:
    source:
      description: lan (ipmitool) or redfish.
      type: str
      returned: always
    address:
      description: The BMC's address.
      type: str
      returned: always
    status:
      description: complete, partial or failed.
      type: str
      returned: always
    sensors:
      description: Every SDR sensor, at most 256.
      type: list
      elements: dict
      returned: always
    sel:
      description: The event log of the window; null when it could not be read.
      type: dict
      returned: always
    errors:
      description: The queries that failed, with ipmitool's reason.
      type: list
      elements: dict
      returned: always
"""

import json
import os
import tempfile

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.text.converters import to_native
from ansible.module_utils.urls import open_url

from ansible_collections.gpufleet.core.plugins.module_utils.bmc_collect import (
    BmcReader, lan_arguments, new_bmc, read_bmc)
from ansible_collections.gpufleet.core.plugins.module_utils.host_io import module_host
from ansible_collections.gpufleet.core.plugins.module_utils.redfish_chassis import summarize_redfish

IPMI_PORT = 623
REDFISH_PORT = 443


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


def read_redfish_bmc(client, address, chassis=None):
    """The bmc facts of one chassis from its Power and Thermal documents."""
    bmc = new_bmc("redfish", address)
    path, reason = _chassis_path(client, chassis)
    if path is None:
        bmc["errors"].append({"call": "GET /redfish/v1/Chassis", "reason": reason})
        bmc["status"], bmc["reasons"] = "failed", ["the Redfish service did not answer: %s" % reason]
        return bmc
    documents = {}
    for name in ("Power", "Thermal"):
        documents[name], reason = client.get("%s/%s" % (path, name))
        if reason:
            bmc["errors"].append({"call": "GET %s/%s" % (path, name), "reason": reason})
    bmc.update(summarize_redfish(documents["Power"], documents["Thermal"]))
    if bmc["errors"]:
        bmc["status"] = "failed" if len(bmc["errors"]) == 2 else "partial"
        bmc["reasons"] = ["%s: %s" % (error["call"], error["reason"]) for error in bmc["errors"]]
    return bmc


def redfish_client(params):
    base = params["redfish_base_url"] or "https://%s:%d" % (params["address"], params["port"] or REDFISH_PORT)
    return RedfishClient(base, params["user"], params["password"], params["timeout"], params["validate_certs"])


def main():
    module = AnsibleModule(
        argument_spec=dict(
            address=dict(type="str", required=True),
            protocol=dict(type="str", default="ipmi", choices=["ipmi", "redfish"]),
            port=dict(type="int"),
            user=dict(type="str", required=True),
            password=dict(type="str", required=True, no_log=True),
            interface=dict(type="str", default="lanplus", choices=["lanplus", "lan"]),
            cipher_suite=dict(type="int"),
            window_hours=dict(type="int", default=72),
            timeout=dict(type="int", default=20),
            ipmitool=dict(type="path"),
            redfish_base_url=dict(type="str"),
            redfish_chassis=dict(type="str"),
            validate_certs=dict(type="bool", default=True),
        ),
        supports_check_mode=True,
    )
    params = module.params
    for name in ("window_hours", "timeout"):
        if params[name] <= 0:
            module.fail_json(msg="%s must be positive, not %s" % (name, params[name]))
    if params["protocol"] == "redfish":
        module.exit_json(changed=False, bmc=read_redfish_bmc(redfish_client(params), params["address"],
                                                             params["redfish_chassis"]))
    host = module_host(module)
    ipmitool = params["ipmitool"] or host.find_bin("ipmitool")
    if not ipmitool:
        bmc = new_bmc("lan", params["address"])
        bmc["status"] = "failed"
        bmc["errors"].append({"call": "ipmitool", "reason": "ipmitool is not installed on the controller"})
        bmc["reasons"] = ["ipmitool is not installed on the controller"]
        module.exit_json(changed=False, bmc=bmc)
    module.exit_json(changed=False, bmc=read_lan_bmc(host, ipmitool, params))


if __name__ == "__main__":
    main()
