# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A run folder on disk, for every playbook that writes one (audit, incident, load step, rollout): where run
folders go (the report root), creating one exclusively, writing its files atomically with safe modes, the
facts files' names, and the latest / latest-partial links. <report_root>/latest moves to a run only if it does
not already point at a run that started later: two overlapping audits leave it at the newer one, whichever
finishes last (the check and the move hold one lock, on the report root folder itself).

Run folders are created exclusively, so two audits that start in the same second never share one. Files
are created with the umask's permissions, never wider: reports 0666, facts 0640 (serials, UUIDs and
process command lines), both less what the umask takes away.

The layout, the same for every kind of run (docs/report-format.md, "Run folders"): <report root>/<UTC start time>
<kind's suffix>[<suffix>][-N], e.g. 20261206T161400Z (an audit), 20261206T161400Z-incident, -loadstep,
-driver-rollout, -driver-rollback (-check in check mode), -aggregate; each kind's files inside (RUN_FILES); an
audit's facts files in facts/; the latest and latest-partial links at the report root, moved by audits only.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import contextlib
import datetime
import fcntl
import hashlib
import json
import os
import re
import tempfile
import time


DEFAULT_REPORT_DIR = "reports"
LATEST = "latest"
LATEST_PARTIAL = "latest-partial"
# a run folder's name: its UTC start time, then its kind's suffix (RUN_KINDS) and any suffix the run was given
RUN_STAMP_FORMAT = "%Y%m%dT%H%M%SZ"
RUN_NAME_START = re.compile(r"(\d{8}T\d{6}Z)")
RUN_KINDS = {
    "audit": "",
    "incident": "-incident",
    "loadstep": "-loadstep",
    "driver-rollout": "-driver-rollout",
    "driver-rollback": "-driver-rollback",
    "aggregate": "-aggregate",
    "validate": "-validate",
    "quarantine": "-quarantine",
}
CHECK_MODE_SUFFIX = "-check"
# what each kind writes in its run folder (an incident is an audit's folder with its own files added); the
# audit's report files are reports/writer.py's RENDERERS
AUDIT_FILES = ("report.json", "report.html", "junit.xml", "gpufleet.prom", "findings.ndjson", "hosts.txt")
# report.json gzip-compressed beside it, when the audit is asked to (gpufleet_report_compress)
COMPRESSED_REPORT = "report.json.gz"
TIMELINE_FILE = "timeline.json"
FAULT_LOG_FILE = "fault-log.md"
LOADSTEP_FILE = "loadstep.json"
LOADSTEP_HTML = "loadstep.html"
QUARANTINE_FILE = "quarantine.json"
RUN_FILES = {
    "audit": AUDIT_FILES,
    "incident": AUDIT_FILES + (TIMELINE_FILE, FAULT_LOG_FILE),
    "validate": AUDIT_FILES,
    "loadstep": (LOADSTEP_FILE, LOADSTEP_HTML),
    "driver-rollout": ("driver-rollout.json",),
    "driver-rollback": ("driver-rollback.json",),
    "aggregate": AUDIT_FILES,
    "quarantine": (QUARANTINE_FILE,),
}
# a driver rollout's state while it runs, hidden in its run folder (rollout/run.py)
ROLLOUT_STATE_FILE = ".rollout-state.json"
# requested permissions; the umask takes away from them (see file_mode)
REPORT_MODE = 0o666
FACTS_MODE = 0o640
# a registered gpu_facts result's key naming the facts file its worker already wrote, relative to the run folder
FACTS_FILE_KEY = "gpufleet_facts_file"
# a run folder's facts files: <run folder>/facts/<name>.json (facts_file_names gives each host's name)
FACTS_FOLDER = "facts"
MAX_RUN_DIR_ATTEMPTS = 1000


def report_root(report_dir=None):
    """The folder run folders go in: report_dir (default reports, relative to the current directory), as an
    absolute path with links resolved. Every playbook takes it from here (the gpufleet.core.report_root filter)."""
    return os.path.realpath(report_dir or DEFAULT_REPORT_DIR)


def run_stamp(started=None):
    """The UTC start time as a run folder's name begins with it: started a datetime (naive: UTC) or seconds since
    the epoch, by default now."""
    if started is None or isinstance(started, (int, float)):
        started = datetime.datetime.fromtimestamp(time.time() if started is None else started, datetime.timezone.utc)
    return started.strftime(RUN_STAMP_FORMAT)


def run_dir_name(kind, stamp=None, suffix=""):
    """A run folder's name: <stamp><kind's suffix><suffix> (stamp: run_stamp(), by default now)."""
    if kind not in RUN_KINDS:
        raise ValueError("no such kind of run: %r (one of %s)" % (kind, ", ".join(sorted(RUN_KINDS))))
    name = "%s%s%s" % (stamp or run_stamp(), RUN_KINDS[kind], suffix or "")
    if "/" in name or not RUN_NAME_START.match(name):
        raise ValueError("run folder name %r is not <UTC start time>[-suffix] without a /" % name)
    return name


def proposed_run_dir(report_root_dir, kind, stamp=None, suffix=""):
    """<report root>/<run_dir_name>: the folder create_run_dir then makes exclusively."""
    return os.path.join(report_root_dir, run_dir_name(kind, stamp, suffix))


def new_run_dir(report_root_dir, kind, stamp=None, suffix=""):
    """Creates a run folder of this kind in the report root, exclusively (create_run_dir); returns its path."""
    return create_run_dir(proposed_run_dir(report_root_dir, kind, stamp, suffix))


def current_umask():
    """The process umask, read from /proc without changing it where Linux offers it."""
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as stream:
            for line in stream:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o077)
    os.umask(mask)
    return mask


def file_mode(requested):
    """requested less the umask, as open() would create it: never wider than either."""
    return requested & ~current_umask() & 0o777


def write_atomically(path, content, durable=True, mode=REPORT_MODE, umask_applied=False):
    """Write to a temporary file in the same folder, flush it to disk (unless not durable), then rename it
    over path. Readers see the old file or the new one, never half of one. The file gets mode less the
    umask (mkstemp creates it 0600 whatever the umask says); umask_applied: mode is file_mode() already
    (a caller writing thousands of files reads the umask once).

    A lone surrogate (possible in text decoded from a host's JSON) is written as \\udXXX, which JSON reads back.
    content: text, written as UTF-8, or bytes, written as they are.
    """
    folder, name = os.path.split(path)
    handle, temporary = tempfile.mkstemp(prefix="." + name + ".", suffix=".tmp", dir=folder)
    try:
        with _opened(handle, content) as stream:
            stream.write(content)
            stream.flush()
            if durable:
                os.fsync(stream.fileno())
        os.chmod(temporary, mode if umask_applied else file_mode(mode))
        os.replace(temporary, path)
    except BaseException:
        if os.path.lexists(temporary):
            os.unlink(temporary)
        raise
    return path


def _opened(handle, content):
    if isinstance(content, bytes):
        return os.fdopen(handle, "wb")
    return os.fdopen(handle, "w", encoding="utf-8", errors="backslashreplace")


def link_target(run_dir, report_root):
    """Relative when the run folder is inside report_root, so the folder can be moved as a whole."""
    run_dir = os.path.abspath(run_dir)
    report_root = os.path.abspath(report_root)
    if os.path.dirname(run_dir) == report_root:
        return os.path.basename(run_dir)
    return run_dir


def run_started(run_dir):
    """The UTC start time in a run folder's name (20261206T161400Z-incident), or None for another name."""
    match = RUN_NAME_START.match(os.path.basename(os.path.normpath(run_dir)))
    if match is None:
        return None
    return datetime.datetime.strptime(match.group(1), "%Y%m%dT%H%M%SZ")


def started_later(current, run_dir):
    """True when the run folder current (a link's target) started after run_dir's run; False when either start
    is unknown (a folder not named by its start time) or they started in the same second."""
    current_start, own_start = run_started(current), run_started(run_dir)
    return current_start is not None and own_start is not None and current_start > own_start


@contextlib.contextmanager
def links_locked(report_root):
    """A lock on the report_root folder itself (no file to leave behind), held exclusively for the duration:
    another audit's check and move of a link waits."""
    handle = os.open(report_root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield
    finally:
        os.close(handle)


def point_latest(run_dir, report_root, link_name=LATEST):
    """Replace report_root/<link_name> with a symlink to run_dir in one rename, unless it points at a run that
    started later (the newer run keeps it). Returns the link's path, or None when it was left alone."""
    latest = os.path.join(report_root, link_name)
    if os.path.isdir(latest) and not os.path.islink(latest):
        raise OSError("%s is a real directory, not a link; remove it so that it can point at the latest run" % latest)
    with links_locked(report_root):
        if os.path.islink(latest) and started_later(os.readlink(latest), run_dir):
            return None
        temporary = os.path.join(report_root, ".%s.%d.tmp" % (link_name, os.getpid()))
        if os.path.lexists(temporary):
            os.unlink(temporary)
        try:
            os.symlink(link_target(run_dir, report_root), temporary)
            os.replace(temporary, latest)
        except BaseException:
            if os.path.lexists(temporary):
                os.unlink(temporary)
            raise
    return latest


def link_for_status(status):
    """The link a run of this status moves: latest for a complete run, latest-partial for a partial one,
    none for a failed one."""
    return {"complete": LATEST, "partial": LATEST_PARTIAL}.get(status or "complete")


def create_run_dir(proposed):
    """Create the run folder exclusively: proposed, or proposed-2, -3, ... when another audit (one that
    started in the same second) holds the name. Returns the folder created."""
    if os.path.basename(proposed) in ("", ".", ".."):
        raise ValueError("run folder %r has no name of its own" % proposed)
    proposed = os.path.abspath(proposed)
    parent = os.path.dirname(proposed)
    os.makedirs(parent, exist_ok=True)
    for attempt in range(1, MAX_RUN_DIR_ATTEMPTS + 1):
        candidate = proposed if attempt == 1 else "%s-%d" % (proposed, attempt)
        try:
            os.mkdir(candidate)
        except FileExistsError:
            continue
        return candidate
    raise OSError("no free run folder name after %d tries: %s-N" % (MAX_RUN_DIR_ATTEMPTS, proposed))


def existing_run_dir(path):
    """A run folder created before the collection (gpufleet.core.run_folder), as an absolute path; created when
    missing."""
    if os.path.basename(path) in ("", ".", ".."):
        raise ValueError("run folder %r has no name of its own" % path)
    path = os.path.abspath(path)
    os.makedirs(path, exist_ok=True)
    return path


# ----------------------------------------------------------------- host names as file names

# A name used as it is: letters, digits, '.', '_', '-', not starting with '.', short enough for any
# file system once ".json" is added. Anything else, and names that would share a file on a file system
# that ignores case, get a sanitized name plus a hash of the real name.
_SAFE_FILE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,199}\Z")
_UNSAFE_CHARACTERS = re.compile(r"[^a-z0-9._-]+")
HASHED_PREFIX_MAX = 100
HASH_LENGTH = 12


def hashed_file_name(host):
    text = str(host)
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:HASH_LENGTH]
    readable = _UNSAFE_CHARACTERS.sub("_", text.lower())[:HASHED_PREFIX_MAX].lstrip(".") or "host"
    return "%s-%s" % (readable, digest)


def facts_file_text(facts):
    """A facts file's text: compact, keys sorted (indenting makes the encoder several times slower, and a fleet
    writes thousands of these; jq . facts/<host>.json reads one). Strict JSON: NaN or Infinity raises ValueError
    (facts_validation refuses them before they get here)."""
    return json.dumps(facts, sort_keys=True, separators=(",", ":"), allow_nan=False) + "\n"


def write_facts_file(path, facts, mode=None, text=None):
    """One host's facts file at path with the facts files' mode (file_mode(FACTS_MODE), read here when not
    given); text: facts_file_text(facts) when the caller has it already. No fsync per file: the reports
    written after them are durable."""
    write_atomically(path, facts_file_text(facts) if text is None else text, durable=False,
                     mode=file_mode(FACTS_MODE) if mode is None else mode, umask_applied=True)


def facts_file(name):
    """A facts file's path relative to its run folder, as reports and results name it: facts/<name>.json."""
    return "%s/%s.json" % (FACTS_FOLDER, name)


def facts_file_name(host, hosts):
    """The host's facts file name (without .json) among every host of the run, as the audit names them."""
    return facts_file_names(hosts)[host] if host in hosts else facts_file_names([host])[host]


def facts_file_names(hosts):
    """{host: file name without .json}, one distinct name per host even where case is ignored."""
    names = {host: host if _SAFE_FILE_NAME.match(str(host)) else hashed_file_name(host) for host in hosts}
    owners = {}
    for host, name in names.items():
        owners.setdefault(name.casefold(), []).append(host)
    for sharing in owners.values():
        if len(sharing) > 1:
            for host in sharing:
                names[host] = hashed_file_name(host)
    if len({name.casefold() for name in names.values()}) != len(names):
        raise ValueError("two host names hash to the same facts file name; rename one of them")
    return names
