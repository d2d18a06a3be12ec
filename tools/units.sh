#!/usr/bin/env bash
# ansible-test units for gpufleet.core, run locally in a virtual environment of ansible-test's own
# (--venv), with the unit tests' requirements from tests/unit/requirements.txt. Called by `make units`;
# extra arguments go to ansible-test (test files, --python, --num-workers ...).
#
# As for tools/sanity.sh, ansible-test needs the collection under a real path ending in
# ansible_collections/gpufleet/core, so the files git knows about are copied to
# build/units/ansible_collections/gpufleet/core, fresh each run; its test results stay in that copy's
# tests/output/. ansible-test collects every tests/unit/**/test_*.py; those under tests/unit/plugins/modules
# and tests/unit/plugins/module_utils run as target-side tests (only ansible.module_utils importable, on
# every Python the collection's modules support), all others as controller tests on the controller Python.
#
# UNITS_PYTHON (default: the venv's Python version) is the Python ansible-test runs the tests with.
set -euo pipefail

repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
venv_bin="$repo_root/.venv/bin"
build_root="$repo_root/build/units"
collection_copy="$build_root/ansible_collections/gpufleet/core"

# shellcheck source=tools/collection_copy.sh
source "$repo_root/tools/collection_copy.sh"

die() { echo "units.sh: $*" >&2; exit 1; }

[[ -x "$venv_bin/ansible-test" ]] || die "$venv_bin/ansible-test not found: run 'make venv' first"

# ansible-test passes only a few environment variables to the tests, so GPUFLEET_CORPUS does not reach
# them: the corpus the checkout's tests use (tests/support/corpus.py) is linked beside the copy instead,
# where they look for ../shared. Without a corpus the corpus tests are skipped, as under plain pytest.
link_corpus() {
    local corpus
    corpus=$(cd "$repo_root" && "$venv_bin/python" -c 'from tests.support.corpus import corpus_root; print(corpus_root() or "")')
    if [[ -n "$corpus" ]]; then
        ln -s "$corpus" "$collection_copy/../shared"
        echo "units.sh: public corpus: $corpus" >&2
    fi
}

main() {
    local started=$SECONDS status=0 python
    python=${UNITS_PYTHON:-$("$venv_bin/python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')}
    copy_collection "$repo_root" "$build_root" "$collection_copy"
    cd "$repo_root"
    link_corpus
    "$venv_bin/python" "$repo_root/tools/get_pip_standin.py" >/dev/null
    cd "$collection_copy"
    # The content root is named so ansible-test does not walk up to this repository's .git, where build/
    # is ignored and every file of the copy would be skipped.
    ANSIBLE_TEST_CONTENT_ROOT="$collection_copy" PATH="$venv_bin:$PATH" \
        "$venv_bin/ansible-test" units --color no --venv --python "$python" "$@" || status=$?
    echo "units.sh: finished in $((SECONDS - started)) s with status $status"
    return "$status"
}

main "$@"
