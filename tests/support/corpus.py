"""Where the public corpus is: test data and researched facts from other projects, kept outside the
repository (realdata/ and reference/ of ../shared beside the checkout, or GPUFLEET_CORPUS).

Tests that read it are marked ``corpus``; tests/conftest.py skips them, with ABSENT as the one reason,
when no corpus is found, and fails them instead when GPUFLEET_CORPUS_REQUIRED is set (`make corpus-test`).
Nothing here reads the corpus at import time: paths are resolved when a test asks for them.
"""

import os

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ENV = "GPUFLEET_CORPUS"
REQUIRED_ENV = "GPUFLEET_CORPUS_REQUIRED"
ABSENT = "public corpus not found: set GPUFLEET_CORPUS or place shared/ beside the checkout"

# The nvidia-smi -q -x captures of realdata/, named here so that tests parametrize over them without
# listing a folder at collection time (tests/unit/plugins/module_utils/test_nvsmi_xml.py checks this list against the folder).
NVSMI_XML_CAPTURES = (
    "nvsmi-q-x_2x-rtx-2080_590.44.01_v13_telegraf.xml",
    "nvsmi-q-x_a100-sxm4-40gb_mig-2x3g.20gb_510.47.03_v11_netdata.xml",
    "nvsmi-q-x_a10g_515.105.01_v11_telegraf.xml",
    "nvsmi-q-x_gt-1030_470.74_v11_telegraf.xml",
    "nvsmi-q-x_quadro-p2000_525.125.06_v12_telegraf.xml",
    "nvsmi-q-x_quadro-p400_418.43_no-doctype_telegraf.xml",
    "nvsmi-q-x_rtx-3060-laptop_515.65.01_v11_netdata.xml",
    "nvsmi-q-x_rtx-3060_570.124.04_v12_telegraf.xml",
    "nvsmi-q-x_rtx-3090_525.147.05_v12_telegraf.xml",
    "nvsmi-q-x_rtx-4000-sff-ada_595.84_v13_telegraf.xml",
    "nvsmi-q-x_rtx-4090_535.86.05_v12_netdata.xml",
    "nvsmi-q-x_tesla-t4_515.105.01_v11_telegraf.xml",
)


def corpus_root(environ=None):
    """The corpus folder, or None when there is none: GPUFLEET_CORPUS if set, else ../shared beside
    the checkout. A folder counts when it holds realdata/ or reference/."""
    environ = os.environ if environ is None else environ
    root = environ.get(ENV) or os.path.join(os.path.dirname(ROOT), "shared")
    root = os.path.abspath(root)
    if any(os.path.isdir(os.path.join(root, part)) for part in ("realdata", "reference")):
        return root
    return None


def required(environ=None):
    """True when a missing corpus is a failure, not a reason to skip."""
    environ = os.environ if environ is None else environ
    return environ.get(REQUIRED_ENV, "") not in ("", "0")


def _path(part, name):
    root = corpus_root()
    if root is None:
        raise FileNotFoundError(ABSENT)  # a test that reads the corpus without the corpus mark
    return os.path.join(root, part, name)


def realdata_path(name):
    return _path("realdata", name)


def reference_path(name):
    return _path("reference", name)


def read_realdata(name):
    with open(realdata_path(name)) as handle:
        return handle.read()


def read_reference(name):
    with open(reference_path(name)) as handle:
        return handle.read()


def main():
    """`python -m tests.support.corpus`: prints where the corpus is, or ABSENT and exits 1."""
    root = corpus_root()
    if root is None:
        print(ABSENT)
        return 1
    print("public corpus: %s" % root)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
