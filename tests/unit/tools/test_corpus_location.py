"""Where the tests and the benchmarks find the public corpus, and what a corpus test does without it:
skip with one stated reason, or fail under GPUFLEET_CORPUS_REQUIRED (`make corpus-test`)."""

import importlib.util
import os
import subprocess
import sys

import pytest

from tests.support import corpus
from tests.support.schema_check import ROOT

A_CORPUS_TEST = "tests/unit/plugins/module_utils/test_nvsmi_mig.py::test_h100_lgip"


def bench_corpus():
    spec = importlib.util.spec_from_file_location("bench_corpus", os.path.join(ROOT, "bench", "corpus.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def make_corpus(folder, part="realdata"):
    (folder / part).mkdir(parents=True)
    return str(folder)


def test_the_variable_names_the_corpus(tmp_path):
    root = make_corpus(tmp_path / "elsewhere")
    assert corpus.corpus_root({"GPUFLEET_CORPUS": root}) == root
    assert corpus.corpus_root({"GPUFLEET_CORPUS": make_corpus(tmp_path / "refs", "reference")}) == str(tmp_path / "refs")


def test_a_folder_without_realdata_or_reference_is_no_corpus(tmp_path):
    (tmp_path / "empty").mkdir()
    assert corpus.corpus_root({"GPUFLEET_CORPUS": str(tmp_path / "empty")}) is None
    assert corpus.corpus_root({"GPUFLEET_CORPUS": str(tmp_path / "missing")}) is None


def test_without_the_variable_shared_beside_the_checkout_is_the_corpus():
    beside = os.path.join(os.path.dirname(ROOT), "shared")
    expected = beside if os.path.isdir(os.path.join(beside, "realdata")) or os.path.isdir(
        os.path.join(beside, "reference")) else None
    assert corpus.corpus_root({}) == expected
    assert corpus.corpus_root({"GPUFLEET_CORPUS": ""}) == expected


@pytest.mark.parametrize("value, required", [(None, False), ("", False), ("0", False), ("1", True), ("yes", True)])
def test_required(value, required):
    assert corpus.required({} if value is None else {"GPUFLEET_CORPUS_REQUIRED": value}) is required


def test_the_benchmarks_follow_the_same_rule(tmp_path):
    bench = bench_corpus()
    root = make_corpus(tmp_path / "c")
    for environ in ({"GPUFLEET_CORPUS": root}, {"GPUFLEET_CORPUS": str(tmp_path / "none")}, {}):
        found = bench.corpus_root(environ)
        assert (None if found is None else str(found)) == corpus.corpus_root(environ)
    assert str(bench.realdata_dir({"GPUFLEET_CORPUS": root})) == os.path.join(root, "realdata")
    assert bench.realdata_dir({"GPUFLEET_CORPUS": str(tmp_path / "none")}) is None


def run_pytest(*args, **env):
    environ = dict(os.environ, **env)
    environ.pop("PYTEST_ADDOPTS", None)
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider"] + list(args),
                          cwd=ROOT, env=environ, capture_output=True, text=True, timeout=300, check=False)


def test_a_corpus_test_without_the_corpus_is_skipped_with_the_reason(tmp_path):
    result = run_pytest(A_CORPUS_TEST, GPUFLEET_CORPUS=str(tmp_path / "none"), GPUFLEET_CORPUS_REQUIRED="")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 skipped" in result.stdout
    assert corpus.ABSENT in result.stdout


def test_a_corpus_test_without_the_corpus_fails_when_the_corpus_is_required(tmp_path):
    result = run_pytest(A_CORPUS_TEST, GPUFLEET_CORPUS=str(tmp_path / "none"), GPUFLEET_CORPUS_REQUIRED="1")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "skipped" not in result.stdout and "1 error" in result.stdout
    assert corpus.ABSENT in result.stdout


def test_the_marker_selects_the_corpus_tests(tmp_path):
    result = run_pytest("tests/unit/plugins/module_utils/test_nvsmi_mig.py", "-m", "corpus", "--collect-only",
                        GPUFLEET_CORPUS=str(tmp_path / "none"))
    selected = [line for line in result.stdout.splitlines() if "::" in line]
    assert [line.split("::")[1] for line in selected] == [
        "test_h100_lgip", "test_a30_lgip", "test_a30_session_lgi_listings",
        "test_a30_session_other_tables_are_not_instances", "test_collect_with_real_a30_listing_and_no_compute_instances"]


def test_a_test_that_takes_the_corpus_fixture_is_a_corpus_test(tmp_path):
    """tests/unit/plugins/module_utils/test_nvsmi_xml.py::test_every_capture_has_expectations has no mark, only the fixture."""
    result = run_pytest("tests/unit/plugins/module_utils/test_nvsmi_xml.py", "-m", "corpus", "--collect-only",
                        GPUFLEET_CORPUS=str(tmp_path / "none"))
    assert "test_nvsmi_xml.py::test_every_capture_has_expectations" in result.stdout
    result = run_pytest("tests/unit/plugins/module_utils/test_nvsmi_xml.py::test_every_capture_has_expectations",
                        GPUFLEET_CORPUS=str(tmp_path / "none"), GPUFLEET_CORPUS_REQUIRED="")
    assert "1 skipped" in result.stdout and corpus.ABSENT in result.stdout
