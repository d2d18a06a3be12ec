"""Every module describes its standard attributes through the doc fragment gpufleet.core.attributes (as
community.general does) and states only its support, with details where it behaves in its own way."""

import glob
import os

import pytest
import yaml

from ansible_collections.gpufleet.core.plugins.doc_fragments.attributes import ModuleDocFragment
from tests.support.ansible_doc import rendered_docs
from tests.support.schema_check import ROOT

MODULES = sorted(os.path.basename(path)[:-3] for path in glob.glob(os.path.join(ROOT, "plugins", "modules", "*.py"))
                 if not os.path.basename(path).startswith("_"))
# (check_mode, diff_mode) support: only gpu_mode and mig_layout return a diff
DIFF_MODULES = ("gpu_mode", "mig_layout")
FACTS_MODULES = ("gpu_facts", "run_folder")
# the modules that run on the managed host (or, bmc_facts, wherever it is delegated)
PLATFORMS = {"bmc_facts": "posix", "gpu_evidence": "linux", "gpu_facts": "linux", "gpu_mode": "linux",
             "gpu_reset": "linux", "gpu_validate": "linux", "loadstep": "linux", "mig_layout": "linux"}


def module_source(name):
    with open(os.path.join(ROOT, "plugins", "modules", "%s.py" % name)) as handle:
        return handle.read()


def own_documentation(name):
    source = module_source(name)
    start = source.index('DOCUMENTATION = r"""') + len('DOCUMENTATION = r"""')
    return yaml.safe_load(source[start:source.index('"""', start)])


def fragment(variant):
    return yaml.safe_load(getattr(ModuleDocFragment, variant))["attributes"]


@pytest.mark.parametrize("name", MODULES)
def test_a_module_states_support_and_leaves_the_descriptions_to_the_fragment(name):
    doc = own_documentation(name)
    assert "gpufleet.core.attributes" in doc["extends_documentation_fragment"]
    assert ("gpufleet.core.attributes.facts" in doc["extends_documentation_fragment"]) == (name in FACTS_MODULES)
    assert ("gpufleet.core.attributes.platform" in doc["extends_documentation_fragment"]) == (name in PLATFORMS)
    for attribute, entry in doc["attributes"].items():
        assert "description" not in entry, (name, attribute)


def test_every_module_renders_the_standard_attributes_with_its_own_support():
    docs = rendered_docs("module", MODULES)
    standard = fragment("DOCUMENTATION")
    for name in MODULES:
        attributes = docs[name]["attributes"]
        for attribute in ("check_mode", "diff_mode"):
            assert attributes[attribute]["description"] == standard[attribute]["description"], name
        assert attributes["check_mode"]["support"] == "full", name
        assert "supports_check_mode=True" in module_source(name), name
        assert attributes["diff_mode"]["support"] == ("full" if name in DIFF_MODULES else "none"), name
        assert ("facts" in attributes) == (name in FACTS_MODULES), name
        if name in PLATFORMS:
            assert attributes["platform"] == dict(fragment("PLATFORM")["platform"], platforms=PLATFORMS[name])
        else:
            assert "platform" not in attributes, name
    assert docs["gpu_facts"]["attributes"]["facts"]["details"] == "Under C(ansible_facts.gpufleet)."
    assert docs["loadstep_report"]["attributes"]["check_mode"]["details"] == "Writes nothing in check mode."
