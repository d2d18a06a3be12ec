#!/usr/bin/env bash
# ansible-test sanity for gpufleet.core, run locally (no containers). Called by `make sanity`.
#
# ansible-test needs the collection under a real path ending in ansible_collections/gpufleet/core (a
# symlink resolves to the checkout and fails), so the files git knows about (tracked, plus untracked
# ones that are not ignored) are copied to build/sanity/ansible_collections/gpufleet/core, fresh each run.
#
# Pythons: the controller is the venv's Python (3.12). Modules and module_utils run on GPU hosts with
# Python 3.9+, so the multi-version tests (compile, import) also run on 3.9, 3.10 and 3.11, found under
# pyenv, /usr/local/bin or /usr/bin; a version that is not installed is left out with a warning.
# SANITY_PYTHONS="3.12" tests the controller Python only. 3.13 and 3.14 are left out by default: they are
# controller-only Pythons this project does not run on.
set -euo pipefail

repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
venv_bin="$repo_root/.venv/bin"
build_root="$repo_root/build/sanity"
collection_copy="$build_root/ansible_collections/gpufleet/core"
sanity_pythons=${SANITY_PYTHONS:-"3.9 3.10 3.11 3.12"}

# shellcheck source=tools/collection_copy.sh
source "$repo_root/tools/collection_copy.sh"

die() { echo "sanity.sh: $*" >&2; exit 1; }

[[ -x "$venv_bin/ansible-test" ]] || die "$venv_bin/ansible-test not found: run 'make venv' first"

# Print the interpreter to use for one Python version, or nothing. pyenv shims are not used: they fail
# for versions that are not pyenv's current one.
find_python() {
    local version=$1 candidate
    if [[ "$version" == "$(venv_python_version)" ]]; then
        echo "$venv_bin/python"
        return
    fi
    for candidate in "${PYENV_ROOT:-$HOME/.pyenv}"/versions/"$version".*/bin/python"$version" \
                     /usr/local/bin/python"$version" /usr/bin/python"$version"; do
        if [[ -x "$candidate" ]] && "$candidate" -c 'import ensurepip, venv' >/dev/null 2>&1; then
            echo "$candidate"
            return
        fi
    done
}

venv_python_version() {
    "$venv_bin/python" -c 'import sys; print("%d.%d" % sys.version_info[:2])'
}

# The folders of the chosen interpreters, for PATH: ansible-test's import test runs "pythonX.Y" from PATH
# whatever --target-python names, and on PATH a pyenv shim answers "command not found" for every version
# but pyenv's global one. Putting each interpreter's own folder first makes them all reachable.
interpreter_dirs() {
    local option dirs=""
    for option in "$@"; do
        [[ "$option" == *@* ]] || continue
        dirs+="$(dirname "${option#*@}"):"
    done
    printf '%s' "$dirs"
}

# One --target-python option per chosen version that is installed. Naming them (rather than --local,
# which tests every pythonX.Y it finds on PATH) keeps the set the same on every machine.
target_python_options() {
    local version interpreter
    for version in $sanity_pythons; do
        interpreter=$(find_python "$version")
        if [[ -n "$interpreter" ]]; then
            echo "sanity.sh: Python $version: $interpreter" >&2
            printf '%s\n' --target-python "$version@$interpreter"
        else
            echo "sanity.sh: WARNING: Python $version is not installed: compile and import are not tested on it" >&2
        fi
    done
}

main() {
    local started=$SECONDS status=0 targets
    copy_collection "$repo_root" "$build_root" "$collection_copy" skip-dir-links
    cd "$repo_root"
    mapfile -t targets < <(target_python_options)
    "$venv_bin/python" "$repo_root/tools/get_pip_standin.py" >/dev/null
    cd "$collection_copy"
    # The content root is named so ansible-test does not walk up to this repository's .git, where build/
    # is ignored and every file of the copy would be skipped. "origin" is this machine, as with --local.
    ANSIBLE_TEST_CONTENT_ROOT="$collection_copy" PATH="$venv_bin:$(interpreter_dirs "${targets[@]}")$PATH" \
        "$venv_bin/ansible-test" sanity --color no \
        --controller "origin:python=$(venv_python_version)@$venv_bin/python" "${targets[@]}" "$@" \
        || status=$?
    echo "sanity.sh: finished in $((SECONDS - started)) s with status $status"
    return "$status"
}

main "$@"
