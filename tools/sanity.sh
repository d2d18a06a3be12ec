#!/usr/bin/env bash
# ansible-test sanity for gpufleet.core, run locally (no containers). Called by `make sanity`.
#
# ansible-test needs the collection under a real path ending in ansible_collections/gpufleet/core (a
# symlink resolves to the checkout and fails), so the files git knows about (tracked, plus untracked
# ones that are not ignored) are copied to build/sanity/ansible_collections/gpufleet/core, fresh each run.
#
# Pythons: the controller is the venv's Python (3.12). Modules and module_utils run on GPU hosts with
# Python 3.9+, so the multi-version tests (compile, import) also run on 3.9, 3.10 and 3.11 when those are
# installed (pyenv or /usr/bin); ansible-test skips, with a warning, a version it cannot find. Set
# SANITY_PYTHONS="3.12" to test the controller Python only. 3.13 and 3.14 are left out by default: they
# are controller-only Pythons this project does not run on, and each version adds a minute or so.
set -euo pipefail

repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
venv_bin="$repo_root/.venv/bin"
build_root="$repo_root/build/sanity"
collection_copy="$build_root/ansible_collections/gpufleet/core"
python_links="$build_root/bin"
sanity_pythons=${SANITY_PYTHONS:-"3.9 3.10 3.11 3.12"}

die() { echo "sanity.sh: $*" >&2; exit 1; }

[[ -x "$venv_bin/ansible-test" ]] || die "$venv_bin/ansible-test not found: run 'make venv' first"

# Copy what git lists, skipping links to directories (collections/ansible_collections/gpufleet/core
# points back at the repository root) and tracked files that were deleted from the working tree.
copy_collection() {
    rm -rf "$build_root"
    mkdir -p "$collection_copy"
    cd "$repo_root"
    git ls-files -z --cached --others --exclude-standard \
        | while IFS= read -r -d '' path; do
            if [[ -L "$path" && -d "$path" ]] || [[ ! -e "$path" && ! -L "$path" ]]; then
                continue
            fi
            printf '%s\0' "$path"
        done \
        | sort -zu \
        | tar --create --null --files-from=- --file=- \
        | tar --extract --file=- --directory="$collection_copy"
}

# Print the interpreter to use for one Python version, or nothing. pyenv shims are not used: they fail
# for versions that are not pyenv's current one.
find_python() {
    local version=$1 candidate
    if [[ "$version" == "$("$venv_bin/python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')" ]]; then
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

# ansible-test --local tests every pythonX.Y it finds on PATH: offer it exactly the chosen ones.
link_pythons() {
    local version interpreter
    mkdir -p "$python_links"
    for version in $sanity_pythons; do
        interpreter=$(find_python "$version")
        if [[ -n "$interpreter" ]]; then
            ln -sf "$interpreter" "$python_links/python$version"
            echo "sanity.sh: Python $version: $interpreter"
        else
            echo "sanity.sh: Python $version: not installed, its multi-version tests will be skipped" >&2
        fi
    done
}

# PATH for ansible-test: the venv, the chosen Pythons, then the system without pyenv's shims.
sanity_path() {
    local entry entries kept=()
    IFS=: read -r -a entries <<<"$PATH"
    for entry in "${entries[@]}"; do
        case "$entry" in
            */.pyenv/shims | */pyenv-virtualenv/shims | "$venv_bin") ;;
            *) kept+=("$entry") ;;
        esac
    done
    local IFS=:
    echo "$venv_bin:$python_links:${kept[*]}"
}

main() {
    local started=$SECONDS status=0
    copy_collection
    link_pythons
    "$venv_bin/python" "$repo_root/tools/get_pip_standin.py" >/dev/null
    cd "$collection_copy"
    # The content root is named so ansible-test does not walk up to this repository's .git, where build/
    # is ignored and every file of the copy would be skipped.
    ANSIBLE_TEST_CONTENT_ROOT="$collection_copy" PATH=$(sanity_path) \
        "$venv_bin/ansible-test" sanity --local --color no "$@" || status=$?
    echo "sanity.sh: finished in $((SECONDS - started)) s with status $status"
    return "$status"
}

main "$@"
