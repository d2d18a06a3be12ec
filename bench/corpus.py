# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where the benchmarks find the public corpus: GPUFLEET_CORPUS if set, else ../shared beside the checkout,
the same rule as the tests (tests/support/corpus.py; tests/unit/tools/test_corpus_location.py checks that both
agree). The benchmarks do not import the tests for it."""

import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ENV = "GPUFLEET_CORPUS"


def corpus_root(environ=None):
    """The corpus folder (a Path), or None when there is none; a folder counts when it holds realdata/ or
    reference/."""
    environ = os.environ if environ is None else environ
    root = Path(environ.get(ENV) or REPO.parent / "shared").absolute()
    if any((root / part).is_dir() for part in ("realdata", "reference")):
        return root
    return None


def realdata_dir(environ=None):
    """realdata/ of the corpus, or None."""
    root = corpus_root(environ)
    return root / "realdata" if root is not None else None
