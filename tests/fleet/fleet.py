"""The simulated GPU fleet: Debian hosts booted with systemd-nspawn and reached by Ansible over ssh.

    fleet.py up [--hosts N] [--scenario NAME] [--fresh]   boot the fleet (missing hosts only), wait for ssh
    fleet.py down                                         stop every host, remove their overlays
    fleet.py status                                       one line per host; exit 0 only when all answer
    fleet.py inventory                                    print the inventory path
    fleet.py build                                        install the tools, build the root filesystem and
                                                          the driver package repository

Runs as root. This file needs only the standard library; the simulator's state builder it imports
(sim/state.py) reads the collection's knowledge with PyYAML, so run it with the project's virtualenv
Python as `make fleet-up` does. One read-only Debian root filesystem (debootstrap, cached in
work/rootfs) is shared by every host; each host writes to its own overlay upper directory, which also
holds its sshd port, root key, host key and the simulated NVIDIA stack of its scenario. A supervisor
process per host runs systemd-nspawn and starts it again when the container reboots (exit status 133).
See README.md beside this file.
"""

import argparse
import concurrent.futures
import contextlib
import fcntl
import functools
import hashlib
import importlib.util
import inspect
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

FLEET_DIR = Path(__file__).resolve().parent
REPO_ROOT = FLEET_DIR.parent.parent
SIM_DIR = FLEET_DIR / "sim"
SCENARIO_DIR = FLEET_DIR / "scenarios"
WORK = Path(os.environ.get("FLEET_WORK", FLEET_DIR / "work")).resolve()
ROOTFS = WORK / "rootfs"
ROOTFS_STAMP = WORK / "rootfs.stamp"
ROOTFS_BUILDING = WORK / "rootfs.building"
# The local apt repository of stub driver packages (driver_repo.py), copied into every host.
DRIVER_REPO = WORK / "driver-repo"
HOSTS_DIR = WORK / "hosts"
KEY = WORK / "id_ed25519"
INVENTORY = WORK / "inventory.yml"
FLEET_STATE = WORK / "fleet.json"

SUITE = "bookworm"
# python3-apt: Ansible's apt module needs it to install the driver packages (driver_repo.py).
# slurmctld, slurmd, slurm-client and munge: a real Slurm cluster for the drain tests (scenario slurm); their
# services start only on the hosts a scenario enables them on (system_units).
PACKAGES = ["systemd", "systemd-sysv", "dbus", "python3", "python3-apt", "openssh-server", "iproute2", "procps",
            "munge", "slurmctld", "slurmd", "slurm-client"]
# Services of PACKAGES that no host starts unless its scenario entry names them in system_units.
OPT_IN_UNITS = ("slurmctld.service", "slurmd.service")
DEFAULT_MIRROR = "http://deb.debian.org/debian"
DEFAULT_HOSTS = 4
DEFAULT_SCENARIO = "default"
# FLEET_WORK and FLEET_BASE_PORT let a second fleet run beside the first (ports BASE_PORT+1...).
BASE_PORT = int(os.environ.get("FLEET_BASE_PORT", "22200"))
REBOOT_STATUS = 133
SIM_BOOT_UNIT = "gpufleet-sim-boot.service"
BOOT_TIMEOUT_S = 120
STOP_TIMEOUT_S = 20
# A container that reboots faster than this, this many times in a row, is stuck in a loop.
REBOOT_LOOP_S, REBOOT_LOOP_COUNT = 5, 5
SSH_OPTIONS = ["-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null",
               "-o", "LogLevel=ERROR", "-o", "ConnectTimeout=3"]


class FleetError(Exception):
    """A failure with a message for the person running the fleet."""


def log(message):
    print("fleet: %s" % message, flush=True)


# ---------------------------------------------------------------------------------------------------
# Hosts and their files


class Host:
    """One simulated host: its name, ssh port and the files under work/hosts/<name>."""

    def __init__(self, index):
        self.index = index
        self.name = "fleet-%02d" % index
        self.port = BASE_PORT + index
        # nspawn keeps per-machine state under /run/systemd/nspawn: a second fleet needs other names.
        self.machine = self.name if BASE_PORT == 22200 else "%s-%d" % (self.name, self.port)
        self.dir = HOSTS_DIR / self.name
        self.upper = self.dir / "upper"
        self.supervisor_pid_file = self.dir / "supervisor.pid"
        self.nspawn_pid_file = self.dir / "nspawn.pid"
        self.stop_file = self.dir / "stop"
        self.console_log = self.dir / "console.log"
        self.supervisor_log = self.dir / "supervisor.log"
        self.exit_file = self.dir / "exit"
        self.cgroups_file = self.dir / "cgroups"
        self.enable_after_boot_file = self.dir / "enable-after-boot"
        self.bind_ro_file = self.dir / "bind-ro"

    @classmethod
    def named(cls, name):
        return cls(int(name.rsplit("-", 1)[1]))


def fleet_hosts(count):
    if not 1 <= count <= 99:
        raise FleetError("--hosts must be between 1 and 99, got %d" % count)
    return [Host(index) for index in range(1, count + 1)]


def hosts_on_disk():
    """Every host that has a directory under work/hosts, whatever fleet it was started with."""
    if not HOSTS_DIR.is_dir():
        return []
    return [Host.named(entry.name) for entry in sorted(HOSTS_DIR.iterdir()) if entry.name.startswith("fleet-")]


def read_pid(path):
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return None


def process_cmdline(pid):
    try:
        return (Path("/proc/%d/cmdline" % pid).read_bytes()).replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def owned_pid(path, marker):
    """The pid in a pid file when that process is still ours (its command line names our directory)."""
    pid = read_pid(path)
    if pid is not None and marker in process_cmdline(pid):
        return pid
    return None


def supervisor_pid(host):
    return owned_pid(host.supervisor_pid_file, str(host.dir))


def supervisor_gone(host):
    """True once the supervisor has exited. Right after it is started, its command line is still the
    parent's until exec, so an unrecognised pid that is alive counts as starting, not gone."""
    if supervisor_pid(host) is not None:
        return False
    pid = read_pid(host.supervisor_pid_file)
    return pid is None or not alive(pid)


def nspawn_pid(host):
    return owned_pid(host.nspawn_pid_file, str(host.upper))


def stray_pids(host):
    """Processes of this host that lost their pid files: supervisors and nspawn naming its directory."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            cmdline = process_cmdline(int(entry.name))
            if str(host.dir) + " " in cmdline + " " or str(host.upper) in cmdline:
                found.append(int(entry.name))
    return found


def child_pids(pid):
    pids = []
    for task in Path("/proc/%d/task" % pid).glob("*/children"):
        try:
            pids += [int(child) for child in task.read_text().split()]
        except OSError:
            continue
    return pids


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        state = Path("/proc/%d/stat" % pid).read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def signal_pid(pid, signum):
    try:
        os.kill(pid, signum)
    except ProcessLookupError:
        pass


def wait_gone(pids, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not any(alive(pid) for pid in pids):
            return True
        time.sleep(0.1)
    return not any(alive(pid) for pid in pids)


# ---------------------------------------------------------------------------------------------------
# Tools and the root filesystem


def require_root():
    if os.geteuid() != 0:
        raise FleetError("the fleet needs root (debootstrap, systemd-nspawn, overlay mounts); run it as root")


def ensure_tools():
    """Installs debootstrap, systemd-nspawn, the ssh client and dpkg-deb with apt-get when one is missing."""
    wanted = {"debootstrap": "debootstrap", "systemd-nspawn": "systemd-container", "ssh": "openssh-client",
              "ssh-keygen": "openssh-client", "dpkg-deb": "dpkg"}
    missing = sorted({package for command, package in wanted.items() if shutil.which(command) is None})
    if not missing:
        return
    if shutil.which("apt-get") is None:
        raise FleetError("missing %s and no apt-get to install them" % ", ".join(missing))
    log("installing %s with apt-get" % " ".join(missing))
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    run_checked(["apt-get", "update", "-qq"], env=env)
    run_checked(["apt-get", "install", "-y", "-qq", "--no-install-recommends"] + missing, env=env)


def run_checked(argv, **kwargs):
    result = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True, check=False, **kwargs)
    if result.returncode != 0:
        raise FleetError("%s failed (exit %d):\n%s"
                         % (" ".join(argv), result.returncode, (result.stdout + result.stderr)[-3000:]))
    return result


def apt_sources():
    """(uri, suites) pairs from the machine's apt sources, deb822 and one-line formats."""
    sources = []
    paths = [Path("/etc/apt/sources.list")] + sorted(Path("/etc/apt/sources.list.d").glob("*"))
    for path in paths:
        try:
            text = path.read_text()
        except OSError:
            continue
        if path.suffix == ".sources":
            sources += deb822_sources(text)
        elif path.name == "sources.list" or path.suffix == ".list":
            sources += one_line_sources(text)
    return sources


def deb822_sources(text):
    sources = []
    for stanza in text.split("\n\n"):
        fields = {}
        for line in stanza.splitlines():
            if ":" in line and not line.startswith(("#", " ")):
                key, value = line.split(":", 1)
                fields[key.strip().lower()] = value.split()
        if "deb" in fields.get("types", []):
            sources += [(uri, fields.get("suites", [])) for uri in fields.get("uris", [])]
    return sources


def one_line_sources(text):
    sources = []
    for line in text.splitlines():
        words = line.split("#", 1)[0].split()
        if words[:1] != ["deb"]:
            continue
        words = words[1:]
        if words and words[0].startswith("["):
            while words and not words[0].endswith("]"):
                words.pop(0)
            words = words[1:]
        if len(words) >= 2:
            sources.append((words[0], [words[1]]))
    return sources


def debian_mirror():
    """The Debian mirror this machine uses for the suite (FLEET_MIRROR overrides it)."""
    if os.environ.get("FLEET_MIRROR"):
        return os.environ["FLEET_MIRROR"]
    for uri, suites in apt_sources():
        if SUITE in suites and "security" not in uri:
            return uri
    return DEFAULT_MIRROR


def customize_rootfs(root):
    """Makes the debootstrap result a small, quick-booting base shared read-only by every host."""
    for pattern in ("var/cache/apt/archives/*.deb", "var/lib/apt/lists/*", "usr/share/doc/*", "usr/share/man/*",
                    "usr/share/locale/*", "usr/share/info/*", "etc/ssh/ssh_host_*"):
        for path in root.glob(pattern):
            remove_path(path)
    # Each host's overlay sets its own name and machine id.
    (root / "etc/hostname").write_text("localhost\n")
    (root / "etc/machine-id").write_text("")
    # Timers that would run apt or disk jobs in every container for nothing.
    for unit in ("apt-daily.timer", "apt-daily-upgrade.timer", "dpkg-db-backup.timer", "e2scrub_all.timer",
                 "fstrim.timer", "e2scrub_reap.service"):
        mask = root / "etc/systemd/system" / unit
        remove_path(mask)
        mask.symlink_to("/dev/null")
    # Slurm daemons only where a scenario wants them (the hosts share one network namespace: one slurmctld).
    for wants in root.glob("etc/systemd/system/*.wants"):
        for unit in OPT_IN_UNITS:
            remove_path(wants / unit)
    # One munge key for every host (the hosts share the root filesystem), readable by munge only.
    munge_key = root / "etc/munge/munge.key"
    if not munge_key.exists():
        write_file(munge_key, os.urandom(1024).hex() + "\n", mode=0o400)
    munge_ids = [line.split(":")[2:4] for line in (root / "etc/passwd").read_text().splitlines()
                 if line.startswith("munge:")]
    if munge_ids:
        os.chown(munge_key, int(munge_ids[0][0]), int(munge_ids[0][1]))
    write_file(root / "etc/systemd/journald.conf.d/50-fleet.conf", "[Journal]\nStorage=volatile\nRuntimeMaxUse=16M\n")
    # Port and ListenAddress come from each host's overlay (sshd_config.d/50-fleet-port.conf).
    write_file(root / "etc/ssh/sshd_config.d/40-fleet.conf",
               "HostKey /etc/ssh/ssh_host_ed25519_key\nPermitRootLogin prohibit-password\n"
               "PasswordAuthentication no\nUseDNS no\nMaxStartups 100:30:200\nMaxSessions 100\n")


def rootfs_recipe():
    """What the root filesystem is built from; any change here or in customize_rootfs rebuilds it."""
    recipe = {"suite": SUITE, "variant": "minbase", "packages": PACKAGES, "opt_in_units": OPT_IN_UNITS,
              "customize": inspect.getsource(customize_rootfs)}
    return hashlib.sha256(json.dumps(recipe, sort_keys=True).encode()).hexdigest()


def rootfs_current():
    try:
        return ROOTFS_STAMP.read_text().strip() == rootfs_recipe() and (ROOTFS / "usr/bin/python3").exists()
    except OSError:
        return False


def build_rootfs():
    """Builds work/rootfs with debootstrap unless the cached one matches the recipe.

    The build happens in work/rootfs.building and is renamed into place; the stamp is written last, so a
    build that stopped halfway is never reused.
    """
    if rootfs_current():
        return
    if any(supervisor_pid(host) or nspawn_pid(host) for host in hosts_on_disk()):
        raise FleetError("the root filesystem must be rebuilt but the fleet is running: run 'fleet.py down' first")
    WORK.mkdir(parents=True, exist_ok=True)
    remove_path(ROOTFS_BUILDING)
    mirror = debian_mirror()
    argv = ["debootstrap", "--variant=minbase", "--include=" + ",".join(PACKAGES), SUITE, str(ROOTFS_BUILDING), mirror]
    keyring = Path("/usr/share/keyrings/debian-archive-keyring.gpg")
    if keyring.exists():
        argv.insert(1, "--keyring=%s" % keyring)
    log("building the root filesystem from %s (debootstrap, about a minute)" % mirror)
    started = time.monotonic()
    debootstrap_log = WORK / "debootstrap.log"
    with open(debootstrap_log, "w") as handle:
        status = subprocess.call(argv, stdin=subprocess.DEVNULL, stdout=handle, stderr=subprocess.STDOUT)
    if status != 0:
        remove_path(ROOTFS_BUILDING)
        raise FleetError("debootstrap failed (exit %d); last lines of %s:\n%s"
                         % (status, debootstrap_log, tail(debootstrap_log, 20)))
    customize_rootfs(ROOTFS_BUILDING)
    remove_path(ROOTFS_STAMP)
    remove_path(ROOTFS)
    ROOTFS_BUILDING.rename(ROOTFS)
    ROOTFS_STAMP.write_text(rootfs_recipe() + "\n")
    log("root filesystem ready in %.0f s" % (time.monotonic() - started))


def build_driver_repo():
    """Builds work/driver-repo (driver_repo.py) unless it was built from the current package sources."""
    repo = driver_repo_module()
    try:
        if repo.ensure_repo(DRIVER_REPO):
            log("driver package repository built in %s" % DRIVER_REPO)
    except repo.RepoError as error:
        raise FleetError(str(error))


def ensure_key():
    if KEY.exists() and KEY.with_suffix(".pub").exists():
        return
    WORK.mkdir(parents=True, exist_ok=True)
    remove_path(KEY)
    remove_path(KEY.with_suffix(".pub"))
    run_checked(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "gpufleet-fleet", "-f", str(KEY)])


# ---------------------------------------------------------------------------------------------------
# Scenarios and each host's overlay


def load_scenario(name):
    path = Path(name) if name.endswith(".json") else SCENARIO_DIR / ("%s.json" % name)
    try:
        scenario = json.loads(path.read_text())
    except OSError as error:
        raise FleetError("scenario %s not found (%s)" % (name, error))
    except ValueError as error:
        raise FleetError("scenario %s is not valid JSON: %s" % (path, error))
    scenario["name"] = path.stem
    return scenario


def host_spec(scenario, host):
    """The scenario entry for a host: its own, or the scenario's default_host for hosts it does not list;
    the scenario's top-level files (for every host) are under the host's own."""
    spec = dict(scenario.get("hosts", {}).get(host.name, scenario.get("default_host", {})))
    if scenario.get("files"):
        spec["files"] = dict(scenario["files"], **spec.get("files", {}))
    return spec


def prepare_upper(host, spec):
    """A fresh overlay upper directory: identity, sshd port, keys, then the simulated stack."""
    remove_path(host.dir)
    host.upper.mkdir(parents=True)
    upper = host.upper
    write_file(upper / "etc/hostname", host.name + "\n")
    write_file(upper / "etc/hosts", "127.0.0.1\tlocalhost\n127.0.1.1\t%s\n::1\tlocalhost ip6-localhost\n" % host.name)
    write_file(upper / "etc/machine-id", uuid.uuid4().hex + "\n", mode=0o444)
    write_file(upper / "etc/ssh/sshd_config.d/50-fleet-port.conf", "Port %d\nListenAddress 127.0.0.1\n" % host.port)
    host_key = upper / "etc/ssh/ssh_host_ed25519_key"
    run_checked(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "root@" + host.name, "-f", str(host_key)])
    write_file(upper / "root/.ssh/authorized_keys", KEY.with_suffix(".pub").read_text(), mode=0o600)
    os.chmod(upper / "root/.ssh", 0o700)
    install_simulator(upper, host, spec)
    write_bind_ro(host, spec.get("bind_ro", []))


def write_bind_ro(host, paths):
    """Folders of this machine the host sees read-only at the same path (spec["bind_ro"]: a controller's
    Python and checkout, tests/fleet/test_scheduled_audit.py); nspawn_argv reads the list at every boot."""
    for path in paths:
        if not (os.path.isabs(path) and os.path.isdir(path)):
            raise FleetError("%s: bind_ro %r is not an existing absolute folder" % (host.name, path))
    if paths:
        write_file(host.bind_ro_file, "".join(path + "\n" for path in paths))


def install_simulator(upper, host, spec):
    """Places the simulated NVIDIA stack (tests/fleet/sim/state.py) and the scenario's files in the overlay.

    Without spec["state"] the host gets no NVIDIA stack at all; spec["units"] are enabled (started at
    boot) and spec["files"] written as they are."""
    driver_version = None
    if spec.get("state"):
        state = build_state(host, spec)
        simulator_state_module().install(str(upper), state, enable=tuple(spec.get("units", [])))
        driver_version = state["driver"]["library_version"]
        # The boot hook applies what a reboot does (pending MIG modes, instances gone, settings reset); the
        # first boot must show the state as the scenario built it, so the hook is enabled (and run once, which
        # counts that boot) once booted.
        write_file(host.enable_after_boot_file, "%s\n" % SIM_BOOT_UNIT)
    elif spec.get("units"):
        raise FleetError("%s: units %s need a simulated NVIDIA stack (a state)" % (host.name, spec["units"]))
    # The driver package repository as an apt source, and the package of the state's driver installed.
    driver_repo_module().add_to_host(upper, ROOTFS, DRIVER_REPO, driver_version)
    for path, content in spec.get("files", {}).items():
        write_file(upper / path.lstrip("/"), content if isinstance(content, str) else "\n".join(content) + "\n")
    enable_system_units(upper, spec.get("system_units", []))


def enable_system_units(upper, units):
    """Enables units of the root filesystem's packages (OPT_IN_UNITS, such as slurmd) on this host only."""
    for unit in units:
        if unit not in OPT_IN_UNITS:
            raise FleetError("system_units: %s is not one of %s" % (unit, ", ".join(OPT_IN_UNITS)))
        wants = upper / "etc/systemd/system/multi-user.target.wants" / unit
        wants.parent.mkdir(parents=True, exist_ok=True)
        remove_path(wants)
        wants.symlink_to("/lib/systemd/system/" + unit)


def build_state(host, spec):
    """The simulator's state for a host: state.state_for(**spec["state"]), then spec["overrides"] merged in."""
    arguments = dict(spec["state"])
    gpu, count = arguments.pop("gpu"), arguments.pop("count", 1)
    if "mig_layouts" in arguments:
        arguments["mig_layouts"] = {int(index): tokens for index, tokens in arguments["mig_layouts"].items()}
    try:
        state = simulator_state_module().state_for(gpu, count, host=host.name, **arguments)
    except ImportError as error:
        raise FleetError("sim/state.py needs %s, which %s cannot import: run fleet.py with the project's "
                         "virtualenv Python (make fleet-up does)" % (error.name, sys.executable))
    except (TypeError, ValueError) as error:
        raise FleetError("%s: scenario state %s: %s" % (host.name, json.dumps(spec["state"]), error))
    merge_state(state, spec.get("overrides", {}))
    return state


@functools.lru_cache(maxsize=None)
def simulator_state_module():
    """tests/fleet/sim/state.py, imported from its file."""
    spec = importlib.util.spec_from_file_location("gpufleet_sim_state", SIM_DIR / "state.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@functools.lru_cache(maxsize=None)
def driver_repo_module():
    """tests/fleet/driver_repo.py, imported from its file."""
    spec = importlib.util.spec_from_file_location("gpufleet_driver_repo", FLEET_DIR / "driver_repo.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def merge_state(state, overrides):
    """Deep-merges overrides into the state; under "gpus", keys are GPU indexes."""
    for key, value in overrides.items():
        if key == "gpus" and isinstance(value, dict):
            for index, patch in value.items():
                deep_merge(state["gpus"][int(index)], patch)
        elif isinstance(value, dict) and isinstance(state.get(key), dict):
            deep_merge(state[key], value)
        else:
            state[key] = value


def deep_merge(target, patch):
    for key, value in patch.items():
        if isinstance(value, dict) and isinstance(target.get(key), dict):
            deep_merge(target[key], value)
        else:
            target[key] = value


def write_file(path, content, mode=0o644):
    path.parent.mkdir(parents=True, exist_ok=True)
    remove_path(path)
    path.write_text(content)
    os.chmod(path, mode)


def remove_path(path):
    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.is_dir():
        shutil.rmtree(path)


def tail(path, lines):
    try:
        return "\n".join(Path(path).read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no %s)" % path


# ---------------------------------------------------------------------------------------------------
# The supervisor: one per host, detached from whoever ran `up`


def nspawn_argv(host):
    binds = host.bind_ro_file.read_text().split() if host.bind_ro_file.exists() else []
    return ["systemd-nspawn", "--quiet", "--register=no", "--keep-unit", "--machine=" + host.machine,
            "--directory=" + str(ROOTFS), "--overlay=%s:%s:/" % (ROOTFS, host.upper), "--boot",
            "--console=read-only", "--link-journal=no"] + ["--bind-ro=" + path for path in binds]


def systemd_cgroup_dirs():
    """(mount point, our cgroup path) of the hierarchies systemd uses: cgroup2 and the v1 name=systemd one."""
    mounts = {}
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        fields, _sep, rest = line.partition(" - ")
        fstype, _source, options = (rest.split() + ["", "", ""])[:3]
        if fstype == "cgroup2":
            mounts[""] = fields.split()[4]
        elif fstype == "cgroup" and "name=systemd" in options.split(","):
            mounts["name=systemd"] = fields.split()[4]
    dirs = []
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _hierarchy, controllers, path = line.split(":", 2)
        if controllers in mounts:
            dirs.append((mounts[controllers], path))
    return dirs


# One parent cgroup per work directory, so that two fleets never share one.
CGROUP_PARENT = "gpufleet-%s" % hashlib.sha1(bytes(WORK)).hexdigest()[:8]


def join_own_cgroup(host):
    """Moves the supervisor into a cgroup of its own so that nspawn --keep-unit gives each container its
    own payload cgroup: containers sharing one clash when their systemd creates and removes unit cgroups.
    The paths are recorded in work/hosts/<name>/cgroups for remove_cgroups."""
    joined = []
    for mount, path in systemd_cgroup_dirs():
        cgroup = Path(mount + path.rstrip("/")) / CGROUP_PARENT / host.name
        try:
            cgroup.mkdir(parents=True, exist_ok=True)
            (cgroup / "cgroup.procs").write_text("%d\n" % os.getpid())
            joined.append(str(cgroup))
        except OSError as error:
            print("could not use cgroup %s: %s" % (cgroup, error), flush=True)
    host.cgroups_file.write_text("".join(path + "\n" for path in joined))
    return joined


def leave_cgroups(cgroups):
    for cgroup in cgroups:
        try:
            (Path(cgroup).parent.parent / "cgroup.procs").write_text("%d\n" % os.getpid())
        except OSError:
            pass


def remove_cgroups(host):
    """Removes the host's cgroups, innermost first; ones still holding processes stay."""
    try:
        cgroups = host.cgroups_file.read_text().split()
    except OSError:
        return
    for cgroup in cgroups:
        for directory, _subdirs, _files in sorted(os.walk(cgroup), key=lambda entry: -len(entry[0])):
            try:
                os.rmdir(directory)
            except OSError:
                pass
        try:
            os.rmdir(Path(cgroup).parent)
        except OSError:
            pass


def start_supervisor(host):
    host.stop_file.unlink(missing_ok=True)
    host.exit_file.unlink(missing_ok=True)
    with open(host.supervisor_log, "a") as handle:
        process = subprocess.Popen([sys.executable, str(Path(__file__).resolve()), "_supervise", str(host.dir)],
                                   stdin=subprocess.DEVNULL, stdout=handle, stderr=subprocess.STDOUT,
                                   start_new_session=True, close_fds=True, cwd="/")
    host.supervisor_pid_file.write_text("%d\n" % process.pid)


def supervise(host_dir):
    """Runs nspawn for one host until it powers off or `down` asks it to stop; a reboot starts it again."""
    host = Host.named(Path(host_dir).name)
    host.supervisor_pid_file.write_text("%d\n" % os.getpid())
    generation = host.dir.stat().st_ino
    child = {}

    def stop(signum, _frame):
        host.stop_file.touch()
        if "process" in child:
            signal_pid(child["process"].pid, signal.SIGTERM)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    cgroups = join_own_cgroup(host)
    quick_reboots, boots, status = 0, 0, None
    while not host.stop_file.exists():
        boots += 1
        started = time.monotonic()
        with open(host.console_log, "a") as console:
            child["process"] = subprocess.Popen(nspawn_argv(host), stdin=subprocess.DEVNULL, stdout=console,
                                                stderr=subprocess.STDOUT)
        host.nspawn_pid_file.write_text("%d\n" % child["process"].pid)
        status = child["process"].wait()
        host.nspawn_pid_file.unlink(missing_ok=True)
        print("%s boot %d ended with exit status %d" % (time.strftime("%H:%M:%S"), boots, status), flush=True)
        if status != REBOOT_STATUS:
            break
        quick_reboots = quick_reboots + 1 if time.monotonic() - started < REBOOT_LOOP_S else 0
        if quick_reboots >= REBOOT_LOOP_COUNT:
            print("rebooting in a loop; giving up", flush=True)
            break
    leave_cgroups(cgroups)
    finish_supervisor(host, generation, {"status": status, "boots": boots, "stopped": host.stop_file.exists()})


def finish_supervisor(host, generation, ended):
    """Records how the host ended, unless `down` or a new `up` has already replaced its directory."""
    try:
        if host.dir.stat().st_ino != generation or read_pid(host.supervisor_pid_file) != os.getpid():
            return
        host.exit_file.write_text(json.dumps(ended))
        remove_cgroups(host)
        host.supervisor_pid_file.unlink()
    except OSError:
        pass


# ---------------------------------------------------------------------------------------------------
# ssh


def ssh_argv(host, command):
    """The ssh command line that runs a shell command as root on a fleet host."""
    return ["ssh", "-i", str(KEY), "-p", str(host.port)] + SSH_OPTIONS + ["root@127.0.0.1", command]


def ssh(host, command, timeout=30):
    try:
        return subprocess.run(ssh_argv(host, command), stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return subprocess.CompletedProcess(command, 255, "", "timed out after %d s" % timeout)


def system_state(host, wait=False):
    """`systemctl is-system-running` of a host, or None when it does not answer ssh."""
    command = "systemctl is-system-running" + (" --wait" if wait else "")
    result = ssh(host, command, timeout=BOOT_TIMEOUT_S if wait else 10)
    if result.returncode == 255 or not result.stdout.strip():
        return None
    return result.stdout.strip()


def wait_until_booted(host, deadline):
    """Waits for ssh and for systemd to finish booting, then enables the units meant for later boots;
    returns the system state."""
    state = None
    while time.monotonic() < deadline:
        if supervisor_gone(host):
            raise FleetError("%s stopped while booting; supervisor:\n%s\nconsole:\n%s"
                             % (host.name, tail(host.supervisor_log, 10), tail(host.console_log, 30)))
        state = system_state(host, wait=True)
        if state in ("running", "degraded"):
            enable_after_boot(host)
            return state
        time.sleep(0.5)
    raise FleetError("%s did not finish booting within %d s (last state: %s); console:\n%s"
                     % (host.name, BOOT_TIMEOUT_S, state, tail(host.console_log, 30)))


def enable_after_boot(host):
    """Enables the units meant for later boots and starts them once, for the boot that has just happened:
    the simulator's boot hook counts this first boot (it keeps the state as written), so the next boot
    is a reboot to it (the kernel module loads the installed driver, pending MIG modes apply)."""
    if not host.enable_after_boot_file.exists():
        return
    units = host.enable_after_boot_file.read_text().split()
    result = ssh(host, "systemctl enable --now --quiet " + " ".join(units))
    if result.returncode != 0:
        raise FleetError("%s: systemctl enable --now %s failed: %s" % (host.name, " ".join(units), result.stderr))
    host.enable_after_boot_file.unlink()


def port_in_use(port):
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return True
    return False


# ---------------------------------------------------------------------------------------------------
# Inventory


def inventory(hosts, scenario):
    """The Ansible inventory of the fleet: every host in group `fleet`, plus the scenario's groups."""
    fleet_vars = {
        "ansible_host": "127.0.0.1",
        "ansible_user": "root",
        "ansible_ssh_private_key_file": str(KEY),
        "ansible_ssh_common_args": "-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR",
        "ansible_ssh_pipelining": True,
        "ansible_python_interpreter": "/usr/bin/python3",
        "gpufleet_fleet_scenario": scenario["name"],
    }
    fleet_vars.update(scenario.get("vars", {}))
    fleet_hosts_vars, groups = {}, {}
    for host in hosts:
        spec = host_spec(scenario, host)
        host_vars = {"ansible_port": host.port, "gpufleet_fleet_host": spec.get("description", "")}
        host_vars.update(spec.get("host_vars", {}))
        fleet_hosts_vars[host.name] = host_vars
        for group in spec.get("groups", []):
            groups.setdefault(group, {"hosts": {}})["hosts"][host.name] = None
    for group, settings in scenario.get("groups", {}).items():
        if group in groups and settings.get("vars"):
            groups[group]["vars"] = settings["vars"]
    fleet = {"hosts": fleet_hosts_vars, "vars": fleet_vars}
    if groups:
        fleet["children"] = groups
    return {"all": {"children": {"fleet": fleet}}}


def to_yaml(value, indent=0):
    """YAML for plain data: strings as JSON strings (valid YAML), so nothing needs PyYAML here."""
    pad = "  " * indent
    if isinstance(value, dict) and value:
        lines = []
        for key, item in value.items():
            if isinstance(item, (dict, list)) and item:
                lines.append("%s%s:\n%s" % (pad, key_yaml(key), to_yaml(item, indent + 1)))
            else:
                lines.append("%s%s: %s" % (pad, key_yaml(key), scalar_yaml(item)))
        return "\n".join(lines)
    if isinstance(value, list) and value:
        lines = []
        for item in value:
            if isinstance(item, (dict, list)) and item:
                lines.append("%s-\n%s" % (pad, to_yaml(item, indent + 1)))
            else:
                lines.append("%s- %s" % (pad, scalar_yaml(item)))
        return "\n".join(lines)
    return pad + scalar_yaml(value)


def key_yaml(key):
    key = str(key)
    plain = key.replace("_", "a").replace("-", "a").replace(".", "a").isalnum() and key[:1].isalpha()
    if plain and key.lower() not in ("y", "n", "yes", "no", "on", "off", "true", "false", "null"):
        return key
    return json.dumps(key)


def scalar_yaml(value):
    if value is None:
        return "null"
    if isinstance(value, (dict, list)):
        return "{}" if isinstance(value, dict) else "[]"
    return json.dumps(value)


def write_inventory(hosts, scenario):
    header = "---\n# Written by tests/fleet/fleet.py for scenario %s; rewritten by every `fleet.py up`.\n"
    INVENTORY.write_text(header % scenario["name"] + to_yaml(inventory(hosts, scenario)) + "\n")


# ---------------------------------------------------------------------------------------------------
# Commands


def up(count=DEFAULT_HOSTS, scenario_name=DEFAULT_SCENARIO, fresh=False):
    """Boots the hosts that are not running (all of them with fresh=True) and waits until each answers."""
    require_root()
    started = time.monotonic()
    hosts = fleet_hosts(count)
    scenario = load_scenario(scenario_name)
    previous = read_fleet_state()
    if fresh or (previous and previous.get("scenario") != scenario["name"]):
        down()
    extra = [host for host in hosts_on_disk() if host.index > count]
    if extra:
        stop_hosts(extra)
    ensure_tools()
    build_rootfs()
    build_driver_repo()
    ensure_key()
    HOSTS_DIR.mkdir(parents=True, exist_ok=True)
    FLEET_STATE.write_text(json.dumps({"scenario": scenario["name"], "hosts": [h.name for h in hosts]}) + "\n")
    to_start = [host for host in hosts if supervisor_pid(host) is None]
    try:
        for host in to_start:
            stop_hosts([host])
            if port_in_use(host.port):
                raise FleetError("port %d for %s is in use by another program" % (host.port, host.name))
            prepare_upper(host, host_spec(scenario, host))
            start_supervisor(host)
        if to_start:
            log("booting %s" % " ".join(host.name for host in to_start))
        deadline = time.monotonic() + BOOT_TIMEOUT_S
        with concurrent.futures.ThreadPoolExecutor(max_workers=len(hosts)) as pool:
            states = list(pool.map(lambda host: wait_until_booted(host, deadline), hosts))
    except BaseException:
        log("up failed; stopping the hosts it started")
        stop_hosts(to_start)
        raise
    write_inventory(hosts, scenario)
    for host, state in zip(hosts, states):
        if state != "running":
            failed = ssh(host, "systemctl --failed --no-legend --plain").stdout.strip()
            log("%s is %s: %s" % (host.name, state, failed.replace("\n", "; ")))
    log("%d hosts up in %.1f s (scenario %s); inventory: %s"
        % (len(hosts), time.monotonic() - started, scenario["name"], INVENTORY))


def stop_host(host):
    """Asks the container to power off (SIGTERM to nspawn), kills what is left after a timeout."""
    if host.dir.exists():
        host.stop_file.touch()
    supervisor, nspawn = supervisor_pid(host), nspawn_pid(host)
    strays = [pid for pid in stray_pids(host) if pid not in (supervisor, nspawn)]
    pids = [pid for pid in (nspawn, supervisor) if pid] + strays
    if not pids:
        return
    containers = child_pids(nspawn) if nspawn else []
    for pid in ([nspawn] if nspawn else []) + strays:
        signal_pid(pid, signal.SIGTERM)
    if wait_gone([nspawn] if nspawn else strays, STOP_TIMEOUT_S):
        wait_gone(pids, 5)
    leftover = [pid for pid in pids + containers if alive(pid)]
    if leftover:
        log("%s did not stop within %d s; killing %s" % (host.name, STOP_TIMEOUT_S, leftover))
        for pid in containers + pids:
            signal_pid(pid, signal.SIGKILL)
        wait_gone(leftover, 10)


def stop_hosts(hosts):
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, len(hosts))) as pool:
        list(pool.map(stop_host, hosts))
    for host in hosts:
        remove_cgroups(host)
        remove_path(host.dir)


def down():
    """Stops every host this work directory started and removes their overlays; safe to run any time."""
    started = time.monotonic()
    hosts = hosts_on_disk()
    stop_hosts(hosts)
    for path in (INVENTORY, FLEET_STATE):
        remove_path(path)
    if hosts:
        log("stopped %d hosts in %.1f s" % (len(hosts), time.monotonic() - started))


def read_fleet_state():
    try:
        return json.loads(FLEET_STATE.read_text())
    except (OSError, ValueError):
        return None


def host_status(host):
    supervisor, nspawn = supervisor_pid(host), nspawn_pid(host)
    if supervisor is None:
        leftover = [pid for pid in [nspawn] + stray_pids(host) if pid]
        if leftover:
            return False, "%s  port %d  supervisor gone, processes left: %s (run 'fleet.py down')" % (
                host.name, host.port, " ".join(map(str, sorted(set(leftover)))))
        ended = host.exit_file.read_text() if host.exit_file.exists() else "never started"
        return False, "%s  port %d  stopped (%s)" % (host.name, host.port, ended)
    state = system_state(host)
    reboots = tail(host.supervisor_log, 1000).count("exit status %d" % REBOOT_STATUS)
    return state in ("running", "degraded"), "%s  port %d  %s  (supervisor %s, nspawn %s, %d reboots)" % (
        host.name, host.port, state or "not answering ssh", supervisor, nspawn, reboots)


def fleet_status():
    """(every host of the current fleet answers, one line per host)."""
    hosts = hosts_on_disk()
    if not hosts:
        return False, ["fleet: down (no hosts in %s)" % HOSTS_DIR]
    with concurrent.futures.ThreadPoolExecutor(max_workers=len(hosts)) as pool:
        results = list(pool.map(host_status, hosts))
    state = read_fleet_state() or {}
    complete = sorted(state.get("hosts", [])) == [host.name for host in hosts] and INVENTORY.exists()
    return complete and all(ok for ok, _line in results), [line for _ok, line in results]


def status():
    ok, lines = fleet_status()
    print("\n".join(lines))
    return ok


@contextlib.contextmanager
def fleet_lock():
    """Serializes up, down and build: two of them at once would stop each other's hosts."""
    WORK.mkdir(parents=True, exist_ok=True)
    with open(WORK / "lock", "w") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            log("waiting for another fleet.py up/down/build to finish")
            fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    commands = parser.add_subparsers(dest="command", required=True)
    up_parser = commands.add_parser("up", help="boot the fleet and wait until every host answers ssh")
    up_parser.add_argument("--hosts", type=int, default=DEFAULT_HOSTS)
    up_parser.add_argument("--scenario", default=DEFAULT_SCENARIO, help="name in scenarios/ or a .json path")
    up_parser.add_argument("--fresh", action="store_true", help="stop and recreate hosts that are running")
    commands.add_parser("down", help="stop every host and remove their overlays")
    commands.add_parser("status", help="one line per host; exit status 0 only when every host answers")
    commands.add_parser("inventory", help="print the inventory path")
    commands.add_parser("build", help="install the tools, build the root filesystem and the driver repository")
    supervise_parser = commands.add_parser("_supervise")
    supervise_parser.add_argument("host_dir")
    args = parser.parse_args(argv)
    try:
        if args.command == "up":
            require_root()
            with fleet_lock():
                up(args.hosts, args.scenario, args.fresh)
        elif args.command == "down":
            require_root()
            with fleet_lock():
                down()
        elif args.command == "status":
            return 0 if status() else 1
        elif args.command == "inventory":
            if not INVENTORY.exists():
                raise FleetError("no inventory: the fleet is down (run 'fleet.py up')")
            print(INVENTORY)
        elif args.command == "build":
            require_root()
            with fleet_lock():
                ensure_tools()
                build_rootfs()
                build_driver_repo()
                ensure_key()
        elif args.command == "_supervise":
            supervise(args.host_dir)
    except FleetError as error:
        print("fleet: error: %s" % error, file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
