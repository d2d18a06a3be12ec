# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type


class ModuleDocFragment(object):
    """How to reach a BMC over the network: module_utils/args_common.py's BMC_CONNECTION_SPEC (DOCUMENTATION) and
    inventory_bmc_spec() (INVENTORY, the same options named bmc_*)."""

    DOCUMENTATION = r"""
options:
  address:
    description: Host name or IP address of the BMC.
    type: str
    required: true
  user:
    description: BMC user name.
    type: str
    required: true
  password:
    description:
      - BMC password (from a vault). Given to ipmitool only as a file of mode 0600 (C(-f)) that is removed afterwards,
        to Redfish only as HTTP basic authentication; never logged or returned.
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
  interface:
    description: With O(protocol=ipmi), V(lanplus) (IPMI 2.0, RMCP+) or V(lan) (IPMI 1.5).
    type: str
    choices: [lanplus, lan]
    default: lanplus
  cipher_suite:
    description:
      - With O(protocol=ipmi), the RMCP+ cipher suite (C(ipmitool -C)), for example V(17) or V(3); unset, ipmitool
        asks the BMC for the suites it offers first.
    type: int
"""

    # The inventory's BMC of a host (gpufleet_bmc_* in playbooks/tasks/audit_run.yml), read by gpu_facts' action
    # plugin on the controller.
    INVENTORY = r"""
options:
  bmc_address:
    description:
      - Read on the controller by the action plugin. When set, after the collection the host's BMC at this address is
        read over the network from the controller, in-process, by the code of M(gpufleet.core.bmc_facts) (ipmitool
        over LAN or Redfish), and the result replaces C(bmc) of the facts. A BMC that does not answer is
        C(bmc.status=failed) with the reasons, never a failed host.
      - Needs O(bmc_user) and O(bmc_password); without them the BMC is not read and the task warns.
    type: str
  bmc_user:
    description: BMC user name, with O(bmc_address).
    type: str
  bmc_password:
    description:
      - BMC password (from a vault), with O(bmc_address). Given to ipmitool only as a file of mode 0600 that is removed
        afterwards; never sent to the host, logged or returned.
    type: str
  bmc_protocol:
    description: With O(bmc_address), V(ipmi) (ipmitool over LAN) or V(redfish) (HTTPS).
    type: str
    choices: [ipmi, redfish]
    default: ipmi
  bmc_port:
    description: With O(bmc_address), the port of the BMC's service; unset, 623 (UDP) for V(ipmi) and 443 for V(redfish).
    type: int
  bmc_interface:
    description: With O(bmc_address) and O(bmc_protocol=ipmi), V(lanplus) (IPMI 2.0) or V(lan) (IPMI 1.5).
    type: str
    choices: [lanplus, lan]
    default: lanplus
  bmc_cipher_suite:
    description: With O(bmc_address) and O(bmc_protocol=ipmi), the RMCP+ cipher suite (C(ipmitool -C)).
    type: int
"""
