"""The local apt repository of stub NVIDIA driver packages that the simulated fleet's hosts install from.

    python3 tests/fleet/driver_repo.py build DIR    build the packages and the repository into DIR
    python3 tests/fleet/driver_repo.py list         the versions and what each one is for

One package name, `gpufleet-nvidia-driver`, in one version per driver release (Debian revision -1), so
that an apt-based role installs an exact version, holds it and rolls back the way it does on a real
host. The package sources are the plain folder sim/driver-package/ (DEBIAN/control, postinst, postrm
and one payload file); `@NAME@` markers in every file are filled in per release and the result is
built with `dpkg-deb`. The postinst runs `nvidia-smi --sim-install-library VERSION`: the simulated
userspace library changes at once and the kernel module only at the next boot or module reload, so a
host upgraded without a reboot shows the driver/library version mismatch. The postrm of a removal
runs `nvidia-smi --sim-remove-library`. Both do nothing on a host without the simulated GPUs.

| version      | what it is for                                                                        |
|--------------|---------------------------------------------------------------------------------------|
| 535.183.06-1 | an older branch (R535): refused on an H200, whose first branch is R550                 |
| 550.90.07-1  | the fleet's starting version (sim/state.py's default driver), installed on every host |
| 550.127.05-1 | the upgrade target; 550.90.07-1 is its rollback                                       |
| 550.144.03-1 | BROKEN on purpose: GPU 0 (state position 0) does not come up at the next module load   |
| 565.57.01-1  | a newer branch (R565, CUDA 12.7)                                                      |

The repository is flat (`deb [trusted=yes] file:/srv/gpufleet-apt ./`): the .deb files, Packages,
Packages.gz and an unsigned Release side by side, the index written here from each package's own
control file (no dpkg-dev needed). fleet.py builds it once into work/driver-repo (rebuilt when this
file or the package sources change, well under a second) and `add_to_host` copies it into each
host's overlay with the apt source, and marks the package of the host's driver version installed in
the host's dpkg database, as if it had been installed before the scenario began, so `apt-cache
policy` shows it and a rollback has a version to return to. The host's apt lists already hold the
repository's index (as `apt-get update` leaves them), and its Debian mirror source is emptied: apt in
the hosts reads only this repository, offline. Only the standard library is used here.
"""

import argparse
import collections
import gzip
import hashlib
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

FLEET_DIR = Path(__file__).resolve().parent
PACKAGE_SOURCES = FLEET_DIR / "sim" / "driver-package"

PACKAGE = "gpufleet-nvidia-driver"
REVISION = "1"
ARCHITECTURE = "all"
REPO_IN_HOST = "/srv/gpufleet-apt"
SOURCE_LIST_IN_HOST = "/etc/apt/sources.list.d/gpufleet-driver.list"
SOURCE_LINE = "deb [trusted=yes] file:%s ./\n" % REPO_IN_HOST
# The hosts reach no Debian mirror: apt-get update there reads only the local repository.
DEBIAN_SOURCES_IN_HOST = "/etc/apt/sources.list"
DEBIAN_SOURCES_TEXT = "# The fleet's hosts use only the local driver repository (%s).\n" % SOURCE_LIST_IN_HOST
# Timestamps inside the packages and the Release date: a fixed time makes the build reproducible.
SOURCE_DATE_EPOCH = 1727740800  # 2024-10-01

REPO_SUBDIR = "apt"       # what the hosts get: the .deb files and the index
TREES_SUBDIR = "trees"    # the package folders dpkg-deb built from, used to mark a package installed
STAMP_NAME = "stamp"

Release = collections.namedtuple("Release", "version lost_after_load note")

RELEASES = (
    Release("535.183.06", "", "An older branch (R535): it does not support the H200, whose first branch is R550."),
    Release("550.90.07", "", "The fleet's starting version, installed on every host with a simulated GPU."),
    Release("550.127.05", "", "A newer R550 release: the upgrade target, with 550.90.07 to roll back to."),
    Release("550.144.03", "0", "BROKEN on purpose: GPU 0 does not come up at the next module load (reboot)."),
    Release("565.57.01", "", "A newer branch (R565, CUDA 12.7)."),
)

# The order in which dpkg writes an installed package's fields into /var/lib/dpkg/status.
STATUS_FIELD_ORDER = ("Package", "Status", "Priority", "Section", "Installed-Size", "Maintainer", "Architecture",
                      "Version", "Description")
MAINTAINER_SCRIPTS = ("preinst", "postinst", "prerm", "postrm")


class RepoError(Exception):
    """A failure building the repository, with a message for the person running the fleet."""


def debian_version(driver_version):
    """'550.90.07' -> '550.90.07-1', the package version apt and dpkg see."""
    return "%s-%s" % (driver_version, REVISION)


def deb_filename(release):
    return "%s_%s_%s.deb" % (PACKAGE, debian_version(release.version), ARCHITECTURE)


def release_for(driver_version):
    """The release of a driver version ('550.90.07' or '550.90.07-1'), or None when the repo lacks it."""
    for release in RELEASES:
        if driver_version in (release.version, debian_version(release.version)):
            return release
    return None


# ---------------------------------------------------------------------------------------------------
# Packages


def markers(release):
    """The @NAME@ markers of the package sources; @INSTALLED_SIZE@ is filled in once the files are known."""
    return {"@PACKAGE@": PACKAGE, "@VERSION@": release.version, "@DEBIAN_VERSION@": debian_version(release.version),
            "@LOST_AFTER_LOAD@": release.lost_after_load, "@NOTE@": release.note}


def fill_markers(text, values):
    for marker, value in values.items():
        text = text.replace(marker, value)
    return text


def payload_files(tree):
    """Paths of the package's files, relative to its tree, in sorted order (DEBIAN/ left out)."""
    return sorted(path.relative_to(tree) for path in tree.rglob("*")
                  if path.is_file() and path.relative_to(tree).parts[0] != "DEBIAN")


def installed_size_kib(tree):
    """Installed-Size as dpkg counts it: each file rounded up to whole KiB."""
    return max(1, sum(-(-(tree / path).stat().st_size // 1024) for path in payload_files(tree)))


def md5sums_text(tree):
    return "".join("%s  %s\n" % (hashlib.md5((tree / path).read_bytes()).hexdigest(), path)
                   for path in payload_files(tree))


def package_tree(release, tree):
    """Copies sim/driver-package into tree with the release's markers filled in, DEBIAN/md5sums added
    and the modes dpkg-deb wants (scripts and folders 0755, other files 0644)."""
    if tree.exists():
        shutil.rmtree(tree)
    for source in sorted(PACKAGE_SOURCES.rglob("*")):
        target = tree / source.relative_to(PACKAGE_SOURCES)
        if source.is_dir():
            target.mkdir(parents=True, exist_ok=True)
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(fill_markers(source.read_text(), markers(release)))
        os.chmod(target, 0o755 if target.name in MAINTAINER_SCRIPTS and target.parent.name == "DEBIAN" else 0o644)
    for folder in [tree] + [path for path in tree.rglob("*") if path.is_dir()]:
        os.chmod(folder, 0o755)
    control = tree / "DEBIAN" / "control"
    control.write_text(control.read_text().replace("@INSTALLED_SIZE@", str(installed_size_kib(tree))))
    (tree / "DEBIAN" / "md5sums").write_text(md5sums_text(tree))
    os.chmod(tree / "DEBIAN" / "md5sums", 0o644)
    return tree


def build_package(tree, deb_path):
    """dpkg-deb --build of a package tree; files owned by root, timestamps from SOURCE_DATE_EPOCH."""
    if shutil.which("dpkg-deb") is None:
        raise RepoError("dpkg-deb is missing: install the dpkg package")
    env = dict(os.environ, SOURCE_DATE_EPOCH=str(SOURCE_DATE_EPOCH))
    result = subprocess.run(["dpkg-deb", "--root-owner-group", "-Zgzip", "--build", str(tree), str(deb_path)],
                            stdin=subprocess.DEVNULL, capture_output=True, text=True, env=env, check=False)
    if result.returncode != 0:
        raise RepoError("dpkg-deb --build %s failed (exit %d): %s" % (tree, result.returncode, result.stderr))
    return deb_path


# ---------------------------------------------------------------------------------------------------
# The repository index


def control_fields(text):
    """A control stanza as an ordered {field: value}; continuation lines stay in the value."""
    fields = collections.OrderedDict()
    name = None
    for line in text.rstrip("\n").split("\n"):
        if line.startswith((" ", "\t")) and name:
            fields[name] += "\n" + line
        elif ":" in line:
            name, value = line.split(":", 1)
            fields[name] = value.strip()
    return fields


def stanza(fields):
    return "".join("%s: %s\n" % (name, value) for name, value in fields.items())


def packages_entry(control_text, deb_path, filename):
    """One Packages stanza: the package's control fields with Filename, Size and hashes before Description."""
    fields = control_fields(control_text)
    description = fields.pop("Description")
    data = deb_path.read_bytes()
    fields["Filename"] = filename
    fields["Size"] = str(len(data))
    fields["MD5sum"] = hashlib.md5(data).hexdigest()
    fields["SHA256"] = hashlib.sha256(data).hexdigest()
    fields["Description"] = description
    return stanza(fields)


def release_text(repo_dir, index_names):
    """An unsigned Release for the flat repository (the hosts' source says [trusted=yes])."""
    date = time.strftime("%a, %d %b %Y %H:%M:%S UTC", time.gmtime(SOURCE_DATE_EPOCH))
    lines = ["Origin: gpufleet", "Label: gpufleet test fleet NVIDIA driver stubs", "Suite: gpufleet",
             "Codename: gpufleet", "Date: %s" % date,
             "Description: stub NVIDIA driver packages for the simulated fleet (tests/fleet/driver_repo.py)"]
    for title, algorithm in (("MD5Sum", hashlib.md5), ("SHA256", hashlib.sha256)):
        lines.append("%s:" % title)
        for name in index_names:
            data = (repo_dir / name).read_bytes()
            lines.append(" %s %d %s" % (algorithm(data).hexdigest(), len(data), name))
    return "\n".join(lines) + "\n"


def write_index(repo_dir, entries):
    """Packages, Packages.gz and Release of a flat repository from its Packages stanzas."""
    packages = "\n".join(entries).encode()
    (repo_dir / "Packages").write_bytes(packages)
    (repo_dir / "Packages.gz").write_bytes(gzip.compress(packages, mtime=0))
    (repo_dir / "Release").write_text(release_text(repo_dir, ["Packages", "Packages.gz"]))


def build_repo(out_dir):
    """Every release's package and the flat repository: out_dir/apt (Packages, Packages.gz, Release and
    the .deb files) and out_dir/trees/<debian version> (what each was built from). Returns the .deb paths."""
    repo_dir, trees_dir = out_dir / REPO_SUBDIR, out_dir / TREES_SUBDIR
    for folder in (repo_dir, trees_dir):
        folder.mkdir(parents=True, exist_ok=True)
        os.chmod(folder, 0o755)
    os.chmod(out_dir, 0o755)
    debs, entries = [], []
    for release in RELEASES:
        tree = package_tree(release, trees_dir / debian_version(release.version))
        deb = build_package(tree, repo_dir / deb_filename(release))
        os.chmod(deb, 0o644)
        entries.append(packages_entry((tree / "DEBIAN" / "control").read_text(), deb, "./" + deb.name))
        debs.append(deb)
    write_index(repo_dir, entries)
    return debs


def sources_stamp():
    """A hash of everything the repository is built from: this file and the package sources."""
    digest = hashlib.sha256(Path(__file__).read_bytes())
    for path in sorted(PACKAGE_SOURCES.rglob("*")):
        if path.is_file():
            digest.update(str(path.relative_to(PACKAGE_SOURCES)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def repo_current(out_dir):
    try:
        return (out_dir / STAMP_NAME).read_text().strip() == sources_stamp()
    except OSError:
        return False


def ensure_repo(out_dir):
    """Builds the repository into out_dir unless the one there was built from the current sources.

    The build happens beside it and is renamed into place, the stamp written last, so a build that
    stopped halfway is never used. Returns True when it built."""
    out_dir = Path(out_dir)
    if repo_current(out_dir):
        return False
    building = out_dir.with_name(out_dir.name + ".building")
    for path in (building, out_dir):
        if path.exists():
            shutil.rmtree(path)
    building.mkdir(parents=True)
    build_repo(building)
    (building / STAMP_NAME).write_text(sources_stamp() + "\n")
    building.rename(out_dir)
    return True


# ---------------------------------------------------------------------------------------------------
# A host's overlay


def add_to_host(upper, lower, out_dir, driver_version):
    """Makes the repository an apt source of a host and, when the repository has the host's driver
    version, marks that package installed in the host's dpkg database.

    upper: the host's overlay upper folder; lower: the root filesystem under it (its dpkg status is
    the starting point); out_dir: what ensure_repo built; driver_version: the simulated library's
    version, or None (a CPU node, or no library installed). A version the repository lacks gets no
    package, like a driver installed with NVIDIA's .run installer. Returns the release marked installed,
    or None."""
    upper, lower, out_dir = Path(upper), Path(lower), Path(out_dir)
    copy_repo(out_dir / REPO_SUBDIR, upper / REPO_IN_HOST.lstrip("/"))
    write_host_file(upper, SOURCE_LIST_IN_HOST, SOURCE_LINE)
    write_host_file(upper, DEBIAN_SOURCES_IN_HOST, DEBIAN_SOURCES_TEXT)
    write_apt_lists(upper, out_dir / REPO_SUBDIR)
    release = release_for(driver_version) if driver_version else None
    if release is not None:
        mark_installed(upper, lower, out_dir / TREES_SUBDIR / debian_version(release.version))
    return release


def copy_repo(repo_dir, target):
    """A copy (never links: the overlay would let a host change the shared files) readable by apt's _apt user."""
    if target.exists():
        shutil.rmtree(target)
    make_dirs(target)
    for source in sorted(repo_dir.iterdir()):
        shutil.copyfile(source, target / source.name)
        os.chmod(target / source.name, 0o644)


def apt_list_path(name):
    """Where `apt-get update` keeps an index of the repository: apt names it after the URI,
    file:/srv/gpufleet-apt/./Packages -> /var/lib/apt/lists/_srv_gpufleet-apt_._Packages."""
    return "/var/lib/apt/lists/%s_._%s" % (REPO_IN_HOST.replace("/", "_"), name)


def write_apt_lists(upper, repo_dir):
    """What `apt-get update` leaves for the repository (the Release and the uncompressed Packages), so that
    apt knows every version from the first boot on, check mode included; an update rewrites the same."""
    for name in ("Release", "Packages"):
        write_host_file(upper, apt_list_path(name), (repo_dir / name).read_text())


def make_dirs(path):
    """mkdir -p with mode 0755 whatever the umask: in an overlay, the upper folder's mode is the host's."""
    missing = []
    while not path.exists():
        missing.append(path)
        path = path.parent
    for folder in reversed(missing):
        folder.mkdir()
        os.chmod(folder, 0o755)


def write_host_file(upper, path_in_host, content, mode=0o644):
    target = upper / path_in_host.lstrip("/")
    make_dirs(target.parent)
    if target.exists() or target.is_symlink():
        target.unlink()
    target.write_text(content)
    os.chmod(target, mode)


def status_entry(control_text):
    """The /var/lib/dpkg/status stanza of an installed package, from its control file."""
    fields = control_fields(control_text)
    fields["Status"] = "install ok installed"
    ordered = collections.OrderedDict((name, fields.pop(name)) for name in STATUS_FIELD_ORDER if name in fields)
    ordered.update(fields)
    description = ordered.pop("Description", None)
    if description is not None:
        ordered["Description"] = description
    return stanza(ordered)


def without_package(status_text, package):
    """The status file's stanzas other than the named package's."""
    stanzas = [block for block in status_text.strip("\n").split("\n\n") if block.strip()]
    kept = [block for block in stanzas if control_fields(block).get("Package") != package]
    return "".join(block + "\n\n" for block in kept)


def list_file_text(tree):
    """dpkg's info/<package>.list: '/.', then every folder and file of the package, parents first."""
    paths = set()
    for path in payload_files(tree):
        for depth in range(1, len(path.parts) + 1):
            paths.add("/" + "/".join(path.parts[:depth]))
    return "/.\n" + "".join(path + "\n" for path in sorted(paths))


def mark_installed(upper, lower, tree):
    """What `dpkg -i` of the package leaves in the host, written into its overlay before the first boot:
    the status stanza (appended to the root filesystem's status), info/<package>.list, .md5sums and the
    maintainer scripts, and the package's files. The postinst does not run: the scenario's state already
    has the driver version."""
    status_path = "var/lib/dpkg/status"
    try:
        status = (lower / status_path).read_text()
    except OSError as error:
        raise RepoError("no dpkg status in the root filesystem %s: %s" % (lower, error))
    control_text = (tree / "DEBIAN" / "control").read_text()
    write_host_file(upper, status_path, without_package(status, PACKAGE) + status_entry(control_text))
    info = "var/lib/dpkg/info/%s." % PACKAGE
    write_host_file(upper, info + "list", list_file_text(tree))
    write_host_file(upper, info + "md5sums", (tree / "DEBIAN" / "md5sums").read_text())
    for script in MAINTAINER_SCRIPTS:
        if (tree / "DEBIAN" / script).exists():
            write_host_file(upper, info + script, (tree / "DEBIAN" / script).read_text(), mode=0o755)
    for path in payload_files(tree):
        write_host_file(upper, str(path), (tree / path).read_text())


# ---------------------------------------------------------------------------------------------------
# Command line


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    commands = parser.add_subparsers(dest="command", required=True)
    build_parser = commands.add_parser("build", help="build the packages and the repository into DIR")
    build_parser.add_argument("dir")
    commands.add_parser("list", help="the versions and what each one is for")
    args = parser.parse_args(argv)
    if args.command == "list":
        for release in RELEASES:
            print("%s %s  %s" % (PACKAGE, debian_version(release.version), release.note))
        return 0
    try:
        built = ensure_repo(Path(args.dir).resolve())
    except RepoError as error:
        print("driver_repo: error: %s" % error, file=sys.stderr)
        return 1
    print("%s %s" % ("built" if built else "up to date:", Path(args.dir).resolve() / REPO_SUBDIR))
    return 0


if __name__ == "__main__":
    sys.exit(main())
