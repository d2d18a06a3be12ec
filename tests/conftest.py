"""Makes the checkout importable as ansible_collections.gpufleet.core for the tests, and gives them the
public corpus: the `corpus` fixture and marker (tests/support/corpus.py says where it is looked for)."""

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COLLECTIONS = os.path.join(ROOT, "collections")
if COLLECTIONS not in sys.path:
    sys.path.insert(0, COLLECTIONS)

import pytest  # noqa: E402

from tests.support import corpus as corpus_location  # noqa: E402


class Corpus:
    """The public corpus found beside the checkout (see tests/support/corpus.py)."""

    def __init__(self, root):
        self.root = root

    def realdata(self, name):
        return os.path.join(self.root, "realdata", name)

    def reference(self, name):
        return os.path.join(self.root, "reference", name)

    def read_realdata(self, name):
        with open(self.realdata(name)) as handle:
            return handle.read()


def _corpus_missing():
    """pytest.fail under `make corpus-test` (GPUFLEET_CORPUS_REQUIRED), else pytest.skip, with ABSENT."""
    if corpus_location.required():
        pytest.fail("%s (%s is set: the corpus tests must run)" % (corpus_location.ABSENT, corpus_location.REQUIRED_ENV),
                    pytrace=False)
    pytest.skip(corpus_location.ABSENT)


# Registered here rather than in pyproject.toml: `ansible-test units` runs pytest with an ini file of its own.
MARKERS = [
    "integration: runs ansible-playbook",
    "corpus: reads the public corpus (GPUFLEET_CORPUS, else ../shared beside the checkout); skipped when it is absent",
]


def pytest_configure(config):
    for marker in MARKERS:
        config.addinivalue_line("markers", marker)


def pytest_collection_modifyitems(items):
    """A test that takes the corpus fixture is a corpus test, so that `-m corpus` selects it."""
    for item in items:
        if "corpus" in getattr(item, "fixturenames", ()) and item.get_closest_marker("corpus") is None:
            item.add_marker(pytest.mark.corpus)


def pytest_runtest_setup(item):
    if item.get_closest_marker("corpus") is not None and corpus_location.corpus_root() is None:
        _corpus_missing()


@pytest.fixture(scope="session")
def corpus():
    """The public corpus; a test that takes it is marked corpus and never runs without it."""
    root = corpus_location.corpus_root()
    if root is None:
        _corpus_missing()
    return Corpus(root)
