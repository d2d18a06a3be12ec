"""A LiveHost wired to a real AnsibleModule, as the gpu_facts module wires it on a target."""

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.testing import patch_module_args

from ansible_collections.gpufleet.core.plugins.module_utils.host_io import LiveHost


def ansible_module():
    with patch_module_args({}):
        return AnsibleModule(argument_spec={})


def live_host(find_bin=None):
    module = ansible_module()
    return LiveHost(find_bin=find_bin or (lambda name: module.get_bin_path(name, required=False)))
