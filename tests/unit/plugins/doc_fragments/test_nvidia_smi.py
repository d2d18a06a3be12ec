"""The nvidia_smi documentation fragment documents the argument spec gpu_mode and mig_layout share
(module_utils/args_common.py); the modules' side is in tests/unit/plugins/module_utils/test_nvsmi_host.py."""

import yaml

from ansible_collections.gpufleet.core.plugins.doc_fragments.nvidia_smi import ModuleDocFragment
from ansible_collections.gpufleet.core.plugins.module_utils.args_common import nvidia_smi_spec


def test_fragment_documents_the_shared_argument_spec():
    options = yaml.safe_load(ModuleDocFragment.DOCUMENTATION)["options"]
    spec = nvidia_smi_spec()
    assert sorted(options) == sorted(spec) == ["nvidia_smi", "timeout"]
    for name, argument in spec.items():
        assert options[name]["type"] == argument["type"]
        assert options[name].get("default") == argument.get("default")
