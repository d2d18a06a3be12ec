#!/usr/bin/env bash
# ansible-lint (production profile, settings in .ansible-lint) over the collection's Ansible content:
# roles/, playbooks/, playbooks in the repository root and inventories/, whichever exist.
# Called by `make lint`; extra arguments go to ansible-lint.
set -euo pipefail

repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
venv_bin="$repo_root/.venv/bin"

die() { echo "lint.sh: $*" >&2; exit 1; }

[[ -x "$venv_bin/ansible-lint" ]] || die "$venv_bin/ansible-lint not found: run 'make venv' first"

# True when a YAML file's first line of content starts a list, as a playbook does (galaxy.yml and other
# root files are mappings).
is_playbook() {
    awk '/^[[:space:]]*(#.*)?$/ || /^---[[:space:]]*$/ { next } { exit !/^- / }' "$1"
}

lint_targets() {
    local dir file
    for dir in roles playbooks inventories; do
        [[ -d "$dir" ]] && echo "$dir"
    done
    for file in *.yml *.yaml; do
        [[ -f "$file" ]] && is_playbook "$file" && echo "$file"
    done
    return 0
}

main() {
    local started=$SECONDS status=0 targets
    cd "$repo_root"
    mapfile -t targets < <(lint_targets)
    ((${#targets[@]})) || die "nothing to lint: no roles/, playbooks/, inventories/ or root playbook"
    echo "lint.sh: linting ${targets[*]}"
    PATH="$venv_bin:$PATH" ANSIBLE_CONFIG="${ANSIBLE_CONFIG:-$repo_root/ansible.cfg}" \
        "$venv_bin/ansible-lint" --config-file "$repo_root/.ansible-lint" --nocolor "$@" "${targets[@]}" \
        || status=$?
    echo "lint.sh: finished in $((SECONDS - started)) s with status $status"
    return "$status"
}

main "$@"
