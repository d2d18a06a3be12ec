"""Random damage to nvidia-smi -q -x documents (the project's own samples; the real captures of the
public corpus in the tests marked corpus): the parser answers with schema-valid GPUs or
NvidiaSmiParseError, and collect_nvidia_smi never raises."""

import functools
import os
import re
from xml.sax.saxutils import escape

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ansible_collections.gpufleet.core.plugins.module_utils.facts_model import new_facts
from ansible_collections.gpufleet.core.plugins.module_utils.host_io import CommandResult
from ansible_collections.gpufleet.core.plugins.module_utils.nvsmi_xml import (
    NvidiaSmiParseError, collect_nvidia_smi, parse_nvidia_smi_xml)
from tests.support.corpus import NVSMI_XML_CAPTURES, read_realdata
from tests.support.schema_check import ROOT, assert_valid_facts, assert_valid_gpu

SAMPLES = os.path.join(ROOT, "tests", "fixtures", "samples")
OWN_MIG_SAMPLE = "nvsmi-q-x_a100-sxm4-40gb_mig-2x3g.20gb_550.90.07.xml"
MIG_CAPTURE = "nvsmi-q-x_a100-sxm4-40gb_mig-2x3g.20gb_510.47.03_v11_netdata.xml"


@functools.lru_cache(maxsize=None)
def own_samples():
    documents = {}
    for name in sorted(os.listdir(SAMPLES)):
        if name.endswith(".xml"):
            with open(os.path.join(SAMPLES, name)) as handle:
                documents[name] = handle.read()
    return documents


@functools.lru_cache(maxsize=None)
def captures():
    return dict((name, read_realdata(name)) for name in NVSMI_XML_CAPTURES)


LEAF_RE = re.compile(r"<(\w+)>([^<]*)</\1>")


def tag_names(text):
    return sorted(set(re.findall(r"<(\w+)>", text))) or ["gpu"]


FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

junk = st.text(max_size=40)
# Values that look like what nvidia-smi prints, so the damage reaches the value parsers.
plausible = st.one_of(
    junk,
    st.sampled_from(["N/A", "[N/A]", "[Not Supported]", "Unknown Error", "GPU is lost", "Enabled", "Disabled",
                     "Active", "Not Active", "Yes", "No", "16x", "x", "-1 W", "1e99 W", "99999999999999999999 MiB",
                     "0.5 MiB", "P", "P99", "C+G", "M", "00000000:ZZ:00.0", "FFFFFFFFF:00:00.0", "12.4.", ""]),
    st.integers(min_value=-10 ** 20, max_value=10 ** 20).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(lambda f: "%s W" % f),
)


def truncate(data, text):
    return text[:data.draw(st.integers(0, len(text)))]


def delete_range(data, text):
    start = data.draw(st.integers(0, len(text)))
    return text[:start] + text[start + data.draw(st.integers(1, 200)):]


def insert_garbage(data, text):
    at = data.draw(st.integers(0, len(text)))
    return text[:at] + data.draw(st.one_of(junk, st.sampled_from(["<", ">", "&", "</gpu>", "<gpu>", "]]>", "<!--"]))) + text[at:]


def swap_tag_names(data, text):
    """Exchanges two element names everywhere: still well formed, values land in the wrong fields."""
    names = tag_names(text)
    first, second = data.draw(st.sampled_from(names)), data.draw(st.sampled_from(names))
    for token in ("<%s>", "</%s>"):
        text = text.replace(token % first, "\x01").replace(token % second, token % first).replace("\x01", token % second)
    return text


def rename_one_tag(data, text):
    """Renames a single opening tag, which unbalances the document."""
    tags = list(re.finditer(r"<(\w+)>", text))
    if not tags:
        return text
    match = tags[data.draw(st.integers(0, len(tags) - 1))]
    return text[:match.start(1)] + data.draw(st.sampled_from(tag_names(text))) + text[match.end(1):]


def replace_values(data, text):
    """Gives every leaf of one name a new value, escaped (well formed) or raw."""
    name = data.draw(st.sampled_from(tag_names(text)))
    value = data.draw(plausible)
    value = escape(value) if data.draw(st.booleans()) else value
    return re.sub(r"<%s>[^<]*</%s>" % (name, name), lambda m: "<%s>%s</%s>" % (name, value, name), text)


def replace_one_value(data, text):
    leaves = list(LEAF_RE.finditer(text))
    if not leaves:
        return text
    match = leaves[data.draw(st.integers(0, len(leaves) - 1))]
    return text[:match.start(2)] + escape(data.draw(plausible)) + text[match.end(2):]


DAMAGE = [truncate, delete_range, insert_garbage, swap_tag_names, rename_one_tag, replace_values, replace_one_value]


def damaged(data, documents):
    text = documents[data.draw(st.sampled_from(sorted(documents)))]
    for damage in data.draw(st.lists(st.sampled_from(DAMAGE), min_size=1, max_size=4)):
        text = damage(data, text)
    return text


def check_damaged_document(data, documents):
    text = damaged(data, documents)
    try:
        report = parse_nvidia_smi_xml(text)
    except NvidiaSmiParseError:
        return
    for gpu in report["gpus"]:
        assert_valid_gpu(gpu)


@FUZZ
@given(data=st.data())
def test_damaged_own_samples_parse_to_valid_gpus_or_parse_error(data):
    check_damaged_document(data, own_samples())


@pytest.mark.corpus
@FUZZ
@given(data=st.data())
def test_damaged_captures_parse_to_valid_gpus_or_parse_error(data):
    check_damaged_document(data, captures())


class FuzzHost:
    """nvidia-smi whose answers are drawn by hypothesis."""

    def __init__(self, data, documents):
        self.data = data
        self.documents = documents

    def find_bin(self, name):
        return "/usr/bin/" + name

    def run(self, argv, timeout):
        if argv[1:] == ["-q", "-x"]:
            stdout = damaged(self.data, self.documents)
        else:
            stdout = self.data.draw(st.one_of(junk, st.sampled_from([
                "No GPU instances found: Not Found",
                "|   0  MIG 3g.20gb         9        1          4:4     |",
                "|   7  MIG 3g.20gb         9        1          4:4     |",
                "|   0      1       MIG 3g.20gb          2         0          0:3      |"])))
        rc = self.data.draw(st.sampled_from([0, 0, 0, 1, 6, 9, 15, 255, None]))
        stderr = self.data.draw(st.one_of(junk, st.sampled_from([
            "", "Unable to determine the device handle for GPU0000:03:00.0: Unknown Error",
            "Failed to initialize NVML: Driver/library version mismatch\nNVML library version: 535.129"])))
        return CommandResult(rc, stdout, stderr, timed_out=rc is None)


def check_collect_never_raises(data, documents):
    facts = new_facts()
    facts["collected_at"] = "2026-01-01T00:00:00Z"
    answered = collect_nvidia_smi(FuzzHost(data, documents), facts, timeout=1)
    assert answered in (True, False)
    assert answered or facts["gpus"] == []
    assert_valid_facts(facts)


@FUZZ
@given(data=st.data())
def test_collect_never_raises_on_own_samples(data):
    check_collect_never_raises(data, own_samples())


@pytest.mark.corpus
@FUZZ
@given(data=st.data())
def test_collect_never_raises_on_captures(data):
    check_collect_never_raises(data, captures())


def check_mig_document_with_damaged_values(data, text):
    """A MIG report keeps its structure; only values change."""
    for _round in range(data.draw(st.integers(1, 6))):
        text = replace_values(data, text)
    try:
        report = parse_nvidia_smi_xml(text)
    except NvidiaSmiParseError:
        return
    for gpu in report["gpus"]:
        assert_valid_gpu(gpu)
    for per_gpu in report["mig_memory_mib"].values():
        assert all(isinstance(k, int) and isinstance(v, int) for k, v in per_gpu.items())


@FUZZ
@given(data=st.data())
def test_own_mig_sample_with_damaged_values_still_valid(data):
    check_mig_document_with_damaged_values(data, own_samples()[OWN_MIG_SAMPLE])


@pytest.mark.corpus
@FUZZ
@given(data=st.data())
def test_mig_capture_with_damaged_values_still_valid(data):
    check_mig_document_with_damaged_values(data, captures()[MIG_CAPTURE])
