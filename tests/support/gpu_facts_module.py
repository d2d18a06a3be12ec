"""Running the gpu_facts module in-process, as Ansible would, and the project's T4 sample it is pointed at."""

import json
import os

import pytest
from ansible.module_utils.testing import patch_module_args

from ansible_collections.gpufleet.core.plugins.modules import gpu_facts
from tests.support.schema_check import ROOT

T4_XML = os.path.join(ROOT, "tests", "fixtures", "samples", "nvsmi-q-x_tesla-t4_515.105.01.xml")


def run_module(capsys, **args):
    """The module's JSON result for these arguments."""
    with patch_module_args(args):
        with pytest.raises(SystemExit):
            gpu_facts.main()
    return json.loads(capsys.readouterr().out)
