# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type


class ModuleDocFragment(object):
    """The standard attributes of a module, described once (as community.general's attributes fragment). A module
    extends gpufleet.core.attributes and states only each attribute's support, with its own details where it
    behaves in a way the description does not say:

      attributes:
        check_mode:
          support: full
          details: Writes nothing in check mode.
        diff_mode:
          support: none
    """

    DOCUMENTATION = r"""
options: {}
attributes:
  check_mode:
    description: Can run in C(check_mode) and return changed status prediction without modifying the target.
  diff_mode:
    description: Will return details on what has changed (or possibly needs changing in C(check_mode)), when in diff
      mode.
"""

    # gpufleet.core.attributes.platform: a module that runs on the managed host; the module names its platforms.
    PLATFORM = r"""
options: {}
attributes:
  platform:
    description: Target OS/families that can be operated against.
    support: N/A
"""

    # gpufleet.core.attributes.facts: a module that returns ansible_facts.
    FACTS = r"""
options: {}
attributes:
  facts:
    description: Action returns an C(ansible_facts) dictionary that will update existing host facts.
    support: full
"""
