# shellcheck shell=bash
# Sourced by tools/sanity.sh and tools/units.sh. ansible-test needs the collection under a real path ending
# in ansible_collections/gpufleet/core (a symlink resolves to the checkout and fails), so the files git knows
# about (tracked, plus untracked ones that are not ignored) are copied there, fresh each run.

# copy_collection REPO_ROOT BUILD_ROOT COPY [skip-dir-links]
# Copies into COPY, after removing BUILD_ROOT, every file git lists in REPO_ROOT except tracked files deleted
# from the working tree. With skip-dir-links, links to directories are left out
# (collections/ansible_collections/gpufleet/core points back at the root); otherwise links are copied as links.
copy_collection() {
    local repo_root=$1 build_root=$2 copy=$3 skip_dir_links=${4:-}
    rm -rf "$build_root"
    mkdir -p "$copy"
    (
        cd "$repo_root" || exit 1
        git ls-files -z --cached --others --exclude-standard \
            | while IFS= read -r -d '' path; do
                [[ -e "$path" || -L "$path" ]] || continue
                [[ -n "$skip_dir_links" && -L "$path" && -d "$path" ]] && continue
                printf '%s\0' "$path"
            done \
            | sort -zu \
            | tar --create --null --files-from=- --file=- \
            | tar --extract --file=- --directory="$copy"
    )
}
