# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type


class ModuleDocFragment(object):
    """Options of the modules that change GPUs with nvidia-smi (module_utils/args_common.py nvidia_smi_spec)."""

    # A module whose timeout default is not 60 documents its own timeout option, which replaces this one.
    DOCUMENTATION = r"""
options:
  nvidia_smi:
    description:
      - Path of C(nvidia-smi); found on the C(PATH) when not given.
    type: path
  timeout:
    description:
      - Seconds one C(nvidia-smi) call may run before it is killed and the module fails.
    type: int
    default: 60
"""
