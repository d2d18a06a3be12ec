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
  - Meant to run on the controller, delegated (C(delegate_to=localhost)), for the host whose BMC it is. The audit
    (C(playbooks/tasks/audit.yml)) reads the BMC with the same code within the host's collection task, where the
    inventory gives C(gpufleet_bmc_address) (M(gpufleet.core.gpu_facts)' O(gpufleet.core.gpu_facts#module:bmc_address)),
    and joins the result to the host's facts, so the BMC's findings and its event times sit beside the host's Xids.
  - The password is given to ipmitool only as a file of mode 0600 (C(-f)) that is removed afterwards; it is never
    on a command line, in the result, or in an error text. Keep it in a vault.
  - With O(protocol=redfish) it reads the chassis's Redfish documents over HTTPS instead, with the password sent as
    HTTP basic authentication, following the chassis's links - the legacy C(Power) and C(Thermal), the newer
    C(PowerSubsystem) (its redundancy and each C(PowerSupplies) member), C(ThermalSubsystem) (C(ThermalMetrics),
    C(LeakDetection) and its C(LeakDetectors)) and C(EnvironmentMetrics) - and the C(SEL) log service of the first
    system (every page of its C(Entries), through C(@odata.nextLink)); C(bmc.sel) is null when the service has no
    SEL. A document the chassis links that cannot be read is an entry in C(bmc.errors).
  - Read only. A BMC that does not answer, refuses the login or times out gives C(bmc.status=failed) with the
    reason in C(bmc.errors); the module itself still succeeds.
author:
  - gpufleet contributors (!UNKNOWN)
requirements:
  - C(ipmitool) where the module runs.
extends_documentation_fragment:
  - gpufleet.core.bmc_connection
  - gpufleet.core.attributes
  - gpufleet.core.attributes.platform
options:
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
    support: full
    details: Reads only; behaves the same in check mode.
  diff_mode:
    support: none
  platform:
    platforms: posix
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

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufleet.core.plugins.module_utils.args_common import BMC_CONNECTION_SPEC
from ansible_collections.gpufleet.core.plugins.module_utils.bmc_lan import BMC_READ_SPEC, read_bmc_over_lan
from ansible_collections.gpufleet.core.plugins.module_utils.host_io import module_host


def main():
    module = AnsibleModule(
        argument_spec=dict(BMC_CONNECTION_SPEC, **BMC_READ_SPEC),
        supports_check_mode=True,
    )
    params = module.params
    for name in ("window_hours", "timeout"):
        if params[name] <= 0:
            module.fail_json(msg="%s must be positive, not %s" % (name, params[name]))
    host = module_host(module)
    module.exit_json(changed=False, bmc=read_bmc_over_lan(host, params))


if __name__ == "__main__":
    main()
