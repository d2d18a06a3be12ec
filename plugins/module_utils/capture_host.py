# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A captured host that the collectors read instead of the live one (docs/offline.md).

open_capture(path) reads one of three kinds of capture and returns a CapturedHost, which answers the calls of
host_io's LiveHost (now, find_bin, euid, read_text, listdir, run) from the capture:
- a captured root: a folder laid out like the host (proc/, sys/, etc/, var/log/, ...) with the outputs of the
  commands the collectors run under sos_commands/<any folder>/<command line, spaces as _ and / as .>, as a
  sosreport lays them out; its clock is capture.json's collected_at, else the output of `date`;
- this project's incident bundle (evidence/<host>/ with manifest.json, or its evidence-<host>.tar.gz);
- an nvidia-bug-report.log or .log.gz: its sections of files (*** /path), `dmesg:`, the kernel messages it
  scanned, `nvidia-smi --query` and `lspci`.
Nothing here runs a program: a command the capture does not hold answers as a program that is not there, and
the kinds of command no capture can hold (NVML, a live Python probe) answer as not supported.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import calendar
import gzip
import json
import os
import re
import tarfile
import time

from ansible_collections.gpufleet.core.plugins.module_utils.host_io import CommandResult, command_key
from ansible_collections.gpufleet.core.plugins.module_utils.nvsmi_text import nvidia_smi_text_as_xml
from ansible_collections.gpufleet.core.plugins.module_utils.nvsmi_xml import NvidiaSmiParseError

KIND_ROOT = "root"
KIND_INCIDENT = "incident_bundle"
KIND_BUG_REPORT = "nvidia_bug_report"
CAPTURE_METADATA = "capture.json"
COMMANDS_FOLDER = "sos_commands"
MAX_CAPTURE_FILE = 64 * 1024 * 1024
# where the programs of a capture "are": the collectors only need a path to pass back to run()
CAPTURED_BIN = "/captured/bin/"
# programs whose answer no capture can hold: they run code on the live host (the framework probe)
NOT_SUPPORTED_PROGRAMS = ("python3", "python", "runuser")
NOT_SUPPORTED = "not supported offline: it runs code on the live host"
NOT_CAPTURED = "not in the capture"
IPMI_DEVICE = "ipmi0"
# an incident bundle's systemctl show, whatever properties it asked for: answers every systemctl show
SYSTEMCTL_SHOW = "systemctl show"
# a file a sosreport keeps elsewhere: the host name
# the XML report the GPU collector reads, and the text form a capture may hold instead (read as the XML)
NVSMI_XML = "nvidia-smi -q -x"
NVSMI_TEXT = "nvidia-smi -q"
FILE_FALLBACKS = {"/proc/sys/kernel/hostname": ("/etc/hostname",)}
# the file of a unit's journal the collectors read per service, as a captured root may hold it
_JOURNAL_UNIT = re.compile(r"--unit=(\S+)")
_DATE = re.compile(r"(?:[A-Z][a-z]{2}\s+)?(?P<month>[A-Z][a-z]{2})\s+(?P<day>\d{1,2})\s+(?P<clock>\d{2}:\d{2}:\d{2})"
                   r"\s+(?:(?P<zone>[A-Z]{2,5}|[+-]\d{4})\s+)?(?P<year>\d{4})")
_MONTHS = dict((name, number) for number, name in enumerate(
    ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"), 1))
_UTC_ZONES = ("UTC", "GMT", "Z", "+0000", "-0000", None)


class CaptureError(Exception):
    """The path is not a capture this module reads; the message names it and says why."""


def parse_date_output(text):
    """(epoch, note) of the output of `date` ("Sun Dec  6 19:27:22 UTC 2026"), or (None, why). A time zone other
    than UTC is taken as UTC and the note says so: a capture names its zone, not its offset."""
    match = _DATE.search(text or "")
    if not match or match.group("month") not in _MONTHS:
        return None, "no date in %r" % (text or "")[:80]
    hours, minutes, seconds = (int(part) for part in match.group("clock").split(":"))
    epoch = calendar.timegm((int(match.group("year")), _MONTHS[match.group("month")], int(match.group("day")),
                             hours, minutes, seconds))
    zone = match.group("zone")
    if zone in _UTC_ZONES:
        return epoch, None
    if re.match(r"[+-]\d{4}\Z", zone):
        sign = 1 if zone[0] == "+" else -1
        return epoch - sign * (int(zone[1:3]) * 3600 + int(zone[3:]) * 60), None
    return epoch, "time zone %s taken as UTC" % zone


def parse_iso_time(text):
    try:
        return calendar.timegm(time.strptime(str(text).strip()[:19], "%Y-%m-%dT%H:%M:%S"))
    except (TypeError, ValueError):
        return None


def mangled_command(key):
    """The file name sos gives a command's output: spaces become _, slashes become dots."""
    return key.replace(" ", "_").replace("/", ".")


def ipmitool_lookup_key(argv):
    """ipmitool's command without its interface and connection options (-I open, -Z, -H ..., -U ...)."""
    words, skip = [os.path.basename(argv[0])], False
    for word in argv[1:]:
        if skip:
            skip = False
        elif word in ("-I", "-H", "-U", "-P", "-p", "-C", "-f", "-L"):
            skip = True
        elif word not in ("-Z", "-E"):
            words.append(str(word))
    return " ".join(words)


class CapturedHost:
    """A host read from a capture. files: {absolute path on the host: text} (besides root's files); commands:
    {command key: text}; texts: {name: text} of the capture's own documents (a kernel log section), read by the
    name; kernel_logs: those names that hold the kernel log."""

    def __init__(self, kind, path, clock, clock_source, root=None, files=None, commands=None, texts=None,
                 kernel_logs=None, lacks=None, host_name=None):
        self.kind = kind
        # the captured host's name where the capture says it outside its files (an incident manifest's host)
        self.host_name = host_name
        self.path = path
        self.clock = clock
        self.clock_source = clock_source
        self.root = root
        self.files = files or {}
        self.commands = commands or {}
        self.texts = texts or {}
        self.kernel_logs = list(kernel_logs or ())
        self.lacks = list(lacks or ())
        self._command_files = _command_file_index(root)

    def describe(self):
        """The facts' capture record."""
        return {"kind": self.kind, "path": self.path, "clock_source": self.clock_source,
                "kernel_log_files": list(self.kernel_logs), "lacks": list(self.lacks)}

    def now(self):
        return self.clock

    def euid(self):
        return 0

    def find_bin(self, name):
        if name in NOT_SUPPORTED_PROGRAMS or self._holds_program(name):
            return CAPTURED_BIN + name
        return None

    def _holds_program(self, name):
        prefix = name + " "
        if any(key == name or key.startswith(prefix) for key in self.commands):
            return True
        return any(file_name == name or file_name.startswith(name + "_") for file_name in self._command_files)

    def read_text(self, path, limit=None):
        text = self.texts.get(path)
        if text is None:
            text = self.files.get(path)
        if text is None:
            text = _read_under(self.root, path)
        if text is None:
            text = self._fallback(path)
        if text is not None and limit:
            return text[:limit]
        return text

    def _fallback(self, path):
        for other in FILE_FALLBACKS.get(path, ()):
            text = self.files.get(other) or _read_under(self.root, other)
            if text is not None:
                return text
        return None

    def listdir(self, path):
        entries = set()
        found = False
        if path.rstrip("/") == "/dev" and self._holds_program("ipmitool"):
            # ipmitool's in-band answers in the capture: the host had its BMC device
            entries.add(IPMI_DEVICE)
            found = True
        folder = path.rstrip("/") + "/"
        for name in self.files:
            if name.startswith(folder):
                entries.add(name[len(folder):].split("/", 1)[0])
                found = True
        on_disk = _list_under(self.root, path)
        if on_disk is not None:
            entries.update(on_disk)
            found = True
        return sorted(entries) if found else None

    def supports(self, argv):
        return os.path.basename(str(argv[0])) not in NOT_SUPPORTED_PROGRAMS

    def run(self, argv, timeout):
        if not self.supports(argv):
            return CommandResult(None, "", NOT_SUPPORTED, missing=True)
        text = self.command_text(argv)
        if text is None:
            return CommandResult(None, "", "%s: %s" % (NOT_CAPTURED, command_key(argv)), missing=True)
        return CommandResult(0, text, "")

    def command_text(self, argv):
        key = command_key(argv)
        text = self._captured_text(argv, key)
        if text is None and key == NVSMI_XML:
            return self._nvsmi_text_as_xml()
        return text

    def _nvsmi_text_as_xml(self):
        """The text `nvidia-smi -q` as its XML report, where the capture holds only the text; the text as it is
        when it is no report (nvidia-smi's error), for the reader of the XML to say so."""
        text = self._captured_text([NVSMI_TEXT], NVSMI_TEXT)
        if text is None:
            return None
        try:
            return nvidia_smi_text_as_xml(text)
        except NvidiaSmiParseError:
            return text

    def _captured_text(self, argv, key):
        for candidate in _lookup_keys(argv, key):
            if candidate == SYSTEMCTL_SHOW and candidate in self.commands:
                return units_in_order(self.commands[candidate], [str(word) for word in argv[2:]
                                                                 if not str(word).startswith("-")])
            if candidate in self.commands:
                return self.commands[candidate]
            path = self._command_files.get(mangled_command(candidate))
            if path is not None:
                return _read_file(path)
        return self._unit_journal(key)

    def _unit_journal(self, key):
        """A unit's journal from a journal of several units (-o json: one entry a line), when the capture holds one."""
        match = _JOURNAL_UNIT.search(key)
        shared = self.commands.get("journalctl units")
        if not match or not key.startswith("journalctl ") or shared is None:
            return None
        unit = match.group(1)
        lines = [line for line in shared.splitlines() if _journal_unit(line) == unit]
        return "\n".join(lines) + ("\n" if lines else "")


def units_in_order(text, units):
    """The blocks of a captured `systemctl show` of the units asked for, in the order asked (systemctl's own order,
    which its readers rely on); a unit the capture lacks is left out."""
    blocks = dict((_block_id(block), block) for block in re.split(r"\n\s*\n", text or "") if block.strip())
    return "\n\n".join(blocks[unit].strip("\n") for unit in units if unit in blocks) + "\n"


def _block_id(block):
    match = re.search(r"^Id=(.*)$", block, re.M)
    return match.group(1).strip() if match else None


def _journal_unit(line):
    try:
        entry = json.loads(line)
    except ValueError:
        return None
    return entry.get("_SYSTEMD_UNIT") if isinstance(entry, dict) else None


def _lookup_keys(argv, key):
    keys = [key]
    program = os.path.basename(str(argv[0]))
    if program == "ipmitool":
        keys.append(ipmitool_lookup_key(argv))
    if program == "systemctl" and len(argv) > 1 and argv[1] == "show":
        keys.append(SYSTEMCTL_SHOW)
    return keys


def _inside(root, path):
    if root is None:
        return None
    full = os.path.realpath(os.path.join(root, str(path).lstrip("/")))
    base = os.path.realpath(root)
    if full != base and not full.startswith(base + os.sep):
        return None  # a link that leads out of the capture is not the captured host's
    return full


def _read_file(full, limit=MAX_CAPTURE_FILE):
    try:
        with open(full, "rb") as handle:
            data = handle.read(limit)
    except (IOError, OSError):
        return None
    if full.endswith(".gz"):
        try:
            data = gzip.decompress(data)
        except (IOError, OSError, EOFError):
            return None
    return data.decode("utf-8", "replace")


def _read_under(root, path):
    full = _inside(root, path)
    if full is None or not os.path.isfile(full):
        return None
    return _read_file(full)


def _list_under(root, path):
    full = _inside(root, path)
    if full is None:
        return None
    try:
        return os.listdir(full)
    except (IOError, OSError):
        return None


def _command_file_index(root):
    """{file name: path} of the command outputs under root/sos_commands (any depth; the first of a name wins)."""
    index = {}
    base = os.path.join(root, COMMANDS_FOLDER) if root else None
    if not base or not os.path.isdir(base):
        return index
    for folder, _dirs, names in sorted(os.walk(base)):
        for name in sorted(names):
            index.setdefault(name, os.path.join(folder, name))
    return index


# --- the three kinds -------------------------------------------------------------------------------

def open_capture(path):
    """The CapturedHost of path (a captured root, an incident bundle or its archive, an nvidia-bug-report.log or
    .log.gz); CaptureError names the path and says why it cannot be read."""
    path = os.path.abspath(str(path))
    if os.path.isdir(path):
        if _is_incident_manifest(os.path.join(path, "manifest.json")):
            return open_incident_bundle(path)
        return open_captured_root(path)
    if not os.path.isfile(path):
        raise CaptureError("capture %s does not exist" % path)
    if path.endswith((".tar.gz", ".tgz")):
        return open_incident_archive(path)
    text = _read_file(path)
    if text is None:
        raise CaptureError("capture %s cannot be read (not a file, not gzip, or not readable)" % path)
    if BUG_REPORT_START in text[:4096]:
        return open_bug_report(path, text)
    raise CaptureError("capture %s is neither a folder (a captured root or an incident bundle), an incident "
                       "bundle's .tar.gz, nor an nvidia-bug-report.log(.gz)" % path)


def _is_incident_manifest(path):
    text = _read_file(path)
    try:
        return bool(text) and json.loads(text).get("format") == "gpufleet-evidence"
    except (ValueError, AttributeError):
        return False


def root_clock(root):
    """(epoch, source) of a captured root: capture.json's collected_at, else the captured `date`."""
    metadata = _read_under(root, CAPTURE_METADATA)
    if metadata:
        try:
            moment = parse_iso_time(json.loads(metadata).get("collected_at"))
        except (ValueError, AttributeError):
            moment = None
        if moment is not None:
            return moment, "%s collected_at" % CAPTURE_METADATA
    for name in ("date", "date_--utc", "date_-u"):
        path = _command_file_index(root).get(name)
        text = _read_file(path) if path else None
        if text:
            moment, note = parse_date_output(text)
            if moment is not None:
                return moment, "%s/.../%s%s" % (COMMANDS_FOLDER, name, " (%s)" % note if note else "")
    raise CaptureError("captured root %s has no clock: write %s with collected_at (UTC, ISO 8601) or capture the "
                       "output of `date` as %s/date/date" % (root, CAPTURE_METADATA, COMMANDS_FOLDER))


KERNEL_LOG_FILES = ("var/log/kern.log", "var/log/messages", "var/log/syslog", "var/log/dmesg")
# command outputs that hold the kernel log, by the start of their file name, the most complete first
KERNEL_LOG_COMMANDS = ("journalctl__TRANSPORT=kernel", "journalctl_-k", "journalctl_--dmesg",
                       "journalctl_--no-pager_--catalog_--boot_-k", "journalctl_--no-pager_-k", "dmesg")


def kernel_log_command_files(index):
    """The one command output of the index read as the kernel log (see KERNEL_LOG_COMMANDS), as a list."""
    for prefix in KERNEL_LOG_COMMANDS:
        names = sorted(name for name in index if name == prefix or name.startswith(prefix + "_"))
        if names:
            return [index[names[0]]]
    return []


def open_captured_root(root):
    clock, clock_source = root_clock(root)
    host = CapturedHost(KIND_ROOT, root, clock, clock_source, root=root)
    logs = [os.path.join(root, name) for name in KERNEL_LOG_FILES if os.path.isfile(os.path.join(root, name))]
    if not logs:
        # the command outputs only when the log files are not there: the same lines, read twice, would count twice
        logs = kernel_log_command_files(host._command_files)  # pylint: disable=protected-access
    host.kernel_logs = logs
    host.texts = dict((name, _read_file(name)) for name in logs)
    return host


def open_incident_archive(path):
    try:
        with tarfile.open(path, "r:gz") as archive:
            members = dict((os.path.basename(member.name), archive.extractfile(member).read())
                           for member in archive.getmembers() if member.isfile())
    except (tarfile.TarError, IOError, OSError, EOFError) as exc:
        raise CaptureError("capture %s is not a readable .tar.gz: %s" % (path, exc))
    if "manifest.json" not in members:
        raise CaptureError("capture %s holds no manifest.json: not an incident bundle" % path)
    texts = dict((name, data.decode("utf-8", "replace")) for name, data in members.items())
    return _incident_host(path, texts)


def open_incident_bundle(folder):
    texts = {}
    for name in os.listdir(folder):
        full = os.path.join(folder, name)
        if os.path.isfile(full) and not name.endswith(".tar.gz"):
            texts[name] = _read_file(full)
    return _incident_host(folder, texts)


# the bundle's files that hold what a collector's command answers, by the bundle's command
_INCIDENT_COMMANDS = {"nvidia-smi-q.xml": "nvidia-smi -q -x", "nvidia-smi-q.txt": "nvidia-smi -q",
                      "ipmitool-sel-elist.txt": "ipmitool sel elist", "ipmitool-sdr-elist.txt": "ipmitool sdr elist",
                      "ipmitool-sel-time.txt": "ipmitool sel time get", "systemctl-show.txt": "systemctl show",
                      "journal-services.json": "journalctl units", "lspci-nvidia.txt": "lspci -vvv -d 10de:"}


def _number(value):
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _incident_host(path, texts):
    try:
        manifest = json.loads(texts.get("manifest.json") or "")
    except ValueError:
        raise CaptureError("capture %s: manifest.json is not JSON" % path)
    if manifest.get("format") != "gpufleet-evidence":
        raise CaptureError("capture %s: manifest.json is not a gpufleet evidence manifest" % path)
    clock, clock_source = _number((manifest.get("host_clock") or {}).get("now")), "manifest.json host_clock"
    if clock is None:
        clock, clock_source = _number((manifest.get("window") or {}).get("until")), "manifest.json window until"
    if clock is None:
        raise CaptureError("capture %s: manifest.json gives neither host_clock nor the window's end" % path)
    ok = dict((entry.get("file"), entry) for entry in manifest.get("files") or () if entry.get("file"))
    commands = dict((command, texts[name]) for name, command in _INCIDENT_COMMANDS.items()
                    if name in ok and texts.get(name) is not None)
    kernel_logs = sorted(name for name in ok if name == "kernel.log" or name.startswith("kernel-log-"))
    own = dict((name, texts[name]) for name in kernel_logs if texts.get(name) is not None)
    lacks = ["/proc and /sys (the bundle holds command outputs, not the host's files): host pressure, "
             "processes' units, PCIe AER counters, the kernel module's version"]
    return CapturedHost(KIND_INCIDENT, path, float(clock), clock_source, commands=commands, texts=own,
                        kernel_logs=kernel_logs, lacks=lacks, host_name=manifest.get("host"))


# --- nvidia-bug-report.log ---------------------------------------------------------------------------

BUG_REPORT_START = "Start of NVIDIA bug report log file"
BUG_REPORT_SEPARATOR = "____________________________________________"
BUG_REPORT_KERNEL_SCAN = "Scanning kernel log files for NVIDIA kernel messages:"
BUG_REPORT_LACKS = ["the BMC (ipmitool)", "service journals and systemctl",
                    "/proc/pressure, /proc/vmstat", "Kubernetes"]
_SMI_COMMAND = re.compile(r"^\S*nvidia-smi (?P<args>--query(?: --xml-format| -x)?|-q(?: -x)?)\s*$")


def split_bug_report(text):
    """The report's sections: lists of lines between its separator lines."""
    sections, current = [], []
    for line in text.splitlines():
        if line.strip() == BUG_REPORT_SEPARATOR:
            sections.append(current)
            current = []
        else:
            current.append(line)
    sections.append(current)
    return [section for section in sections if any(line.strip() for line in section)]


def _section_body(lines, after):
    body = lines[after:]
    while body and not body[0].strip():
        body = body[1:]
    return "\n".join(body).rstrip("\n") + "\n"


def read_bug_report_sections(text):
    """(files, commands, kernel texts, header fields) of a bug report."""
    files, commands, kernel, header = {}, {}, {}, {}
    for section in split_bug_report(text):
        first = next(index for index, line in enumerate(section) if line.strip())
        head = section[first].strip()
        if head.startswith("*** /"):
            path = head[4:].split()[0]
            body_start = first + 1
            if body_start < len(section) and section[body_start].startswith("*** ls:"):
                body_start += 1
            files[path] = _section_body(section, body_start)
        elif head == "dmesg:":
            kernel["dmesg"] = _section_body(section, first + 1)
        elif head == BUG_REPORT_KERNEL_SCAN:
            lines = [line for line in section[first + 1:] if line.strip() and not line.startswith("  journalctl -b")
                     and not line.startswith(("No NVIDIA kernel messages", "No suitable log"))]
            if lines:
                kernel["kernel messages"] = "\n".join(lines) + "\n"
        elif _SMI_COMMAND.match(head):
            xml = "-x" in head or "--xml-format" in head
            commands[NVSMI_XML if xml else NVSMI_TEXT] = _section_body(section, first + 1)
        elif BUG_REPORT_START in "\n".join(section):
            for line in section:
                if ":" in line:
                    key, value = line.split(":", 1)
                    header.setdefault(key.strip(), value.strip())
    return files, commands, kernel, header


def open_bug_report(path, text):
    files, commands, kernel, header = read_bug_report_sections(text)
    clock, note = parse_date_output(header.get("Date"))
    if clock is None:
        raise CaptureError("capture %s: the bug report's header has no Date line (%s)" % (path, note))
    uname = (header.get("uname") or "").split()
    if len(uname) >= 3 and "/proc/sys/kernel/hostname" not in files:
        files["/proc/sys/kernel/hostname"] = uname[1] + "\n"
        files.setdefault("/proc/sys/kernel/osrelease", uname[2] + "\n")
    # the scan holds the NVIDIA lines with their wall-clock times; dmesg holds every line, with times since boot
    # only: one of them, never both (the same Xid would count twice)
    name = "kernel messages" if "kernel messages" in kernel else ("dmesg" if "dmesg" in kernel else None)
    texts = {"bug report: " + name: kernel[name]} if name else {}
    lacks = list(BUG_REPORT_LACKS)
    if NVSMI_XML not in commands and NVSMI_TEXT not in commands:
        lacks.insert(0, "nvidia-smi --query (the report holds no nvidia-smi section: no GPU facts)")
    clock_source = "the report's Date line%s" % (" (%s)" % note if note else "")
    return CapturedHost(KIND_BUG_REPORT, path, float(clock), clock_source,
                        files=files, commands=commands, texts=texts, kernel_logs=sorted(texts), lacks=lacks)
