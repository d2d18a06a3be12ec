# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""One host's evidence bundle in the run folder: evidence/<host>/ with every file gpu_evidence returned,
the host's facts, its active checks when the incident ran them (validation.json), manifest.json (command,
exit status, duration, size, sha256 of each file; what is missing and why) and evidence-<host>.tar.gz holding
all of them."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import base64
import hashlib
import io
import json
import os
import re
import tarfile
import time

from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.active_checks import validation_of
from ansible_collections.gpufleet.core.plugins.plugin_utils.run_folder import FACTS_MODE, file_mode, write_atomically

MANIFEST = "manifest.json"
MANIFEST_FORMAT = "gpufleet-evidence"
MANIFEST_VERSION = 1
VALIDATION_FILE = "validation.json"
_SAFE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,120}\Z")


def safe_item_name(name, taken):
    """The file name an item gets: its own when harmless and not yet taken, else a sanitized one."""
    text = str(name or "item")
    if not _SAFE_NAME.match(text):
        text = re.sub(r"[^A-Za-z0-9._-]+", "_", text).lstrip("._")[:120] or "item"
    candidate, number = text, 2
    while candidate in taken or candidate == MANIFEST:
        candidate = "%s.%d" % (text, number)
        number += 1
    taken.add(candidate)
    return candidate


def item_bytes(item):
    content = item.get("content")
    if content is None:
        return None
    if item.get("encoding") == "base64":
        return base64.b64decode(content)
    return content.encode("utf-8", "replace")


def manifest_entry(item, file_name, data):
    keys = ("layer", "command", "status", "why", "rc", "duration_s", "cut", "redacted", "stderr")
    entry = {key: item.get(key) for key in keys}
    entry["file"] = file_name if data is not None else None
    entry["size"] = len(data) if data is not None else 0
    entry["sha256"] = hashlib.sha256(data).hexdigest() if data is not None else None
    if data is not None and item.get("sha256") and item["sha256"] != entry["sha256"]:
        entry["status"] = "failed"
        entry["why"] = "sha256 differs from the one computed on the host (%s): damaged in transfer" % item["sha256"]
    return entry


def failed_collection_manifest(host, result):
    """The manifest of a host whose evidence module did not answer at all."""
    result = result or {}
    why = " ".join(str(result.get("msg") or "no result from the host").split())
    status = "unreachable" if result.get("unreachable") else "failed"
    return {"format": MANIFEST_FORMAT, "format_version": MANIFEST_VERSION, "host": host, "status": status,
            "why": why, "window": None, "host_clock": None, "files": [], "archive": None}


def write_bundle(run_dir, host, dir_name, result, facts=None):
    """Writes evidence/<dir_name>/ and returns its manifest (also written as manifest.json)."""
    folder = os.path.join(run_dir, "evidence", dir_name)
    os.makedirs(folder, exist_ok=True)
    if not result or result.get("failed") or result.get("unreachable") or "evidence" not in result:
        manifest = failed_collection_manifest(host, result)
        payloads = {}
    else:
        manifest, payloads = bundle_files(host, result)
    if facts is not None:
        add_controller_file(manifest, payloads, "facts.json", facts, None, "gpufleet.core.gpu_facts")
        validation = validation_of(facts)
        if validation is not None:
            add_controller_file(manifest, payloads, VALIDATION_FILE, validation, "hardware",
                                "gpufleet.core.gpu_validate", validation_refusal(validation))
    for name, data in payloads.items():
        write_binary(os.path.join(folder, name), data, FACTS_MODE)
    archive = "evidence-%s.tar.gz" % dir_name
    manifest["archive"] = archive
    manifest_text = json.dumps(manifest, indent=1, sort_keys=True) + "\n"
    write_atomically(os.path.join(folder, MANIFEST), manifest_text, durable=False, mode=FACTS_MODE)
    payloads[MANIFEST] = manifest_text.encode("utf-8")
    write_binary(os.path.join(folder, archive), pack(dir_name, payloads), FACTS_MODE)
    return manifest


def add_controller_file(manifest, payloads, name, value, layer, command, why=None):
    """A file the controller writes from what it holds (value as JSON), listed in the manifest."""
    data = (json.dumps(value, sort_keys=True, indent=1) + "\n").encode("utf-8")
    payloads[name] = data
    manifest["files"].append({"file": name, "layer": layer, "command": command, "status": "skipped" if why else "ok",
                              "why": why, "rc": 0, "duration_s": None, "cut": None, "size": len(data),
                              "sha256": hashlib.sha256(data).hexdigest()})


def validation_refusal(validation):
    """Why the active checks were refused (the file then holds the refusal), or None."""
    refused = validation.get("refused")
    if not isinstance(refused, dict):
        return None
    return "refused, no check ran: %s" % (refused.get("reason") or "no reason given")


def bundle_files(host, result):
    taken, payloads, files = set(), {}, []
    for item in result["evidence"]:
        data = item_bytes(item)
        name = safe_item_name(item.get("name"), taken) if data is not None else None
        files.append(dict(manifest_entry(item, name, data), name=item.get("name")))
        if data is not None:
            payloads[name] = data
    manifest = {"format": MANIFEST_FORMAT, "format_version": MANIFEST_VERSION, "host": host, "status": "ok",
                "why": None, "window": result.get("window"), "host_clock": result.get("host_clock"),
                "kernel_log_source": result.get("kernel_log_source"), "units": result.get("units", []),
                "pid_units": result.get("pid_units", {}), "files": files}
    return manifest, payloads


def write_binary(path, data, mode):
    """write_atomically for bytes: a new temporary file renamed over path."""
    folder, name = os.path.split(path)
    temporary = os.path.join(folder, ".%s.%d.tmp" % (name, os.getpid()))
    try:
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "wb") as stream:
            stream.write(data)
        os.chmod(temporary, file_mode(mode))
        os.replace(temporary, path)
    except BaseException:
        if os.path.lexists(temporary):
            os.unlink(temporary)
        raise


def pack(dir_name, payloads):
    """A gzip'd tar of the payloads under <dir_name>/, with fixed owners and the current time."""
    buffer = io.BytesIO()
    moment = int(time.time())
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name in sorted(payloads):
            info = tarfile.TarInfo("%s/%s" % (dir_name, name))
            info.size = len(payloads[name])
            info.mtime = moment
            info.mode = 0o640
            archive.addfile(info, io.BytesIO(payloads[name]))
    return buffer.getvalue()


def read_evidence_file(run_dir, dir_name, file_name):
    """The text of one evidence file of a bundle, or None."""
    try:
        with open(os.path.join(run_dir, "evidence", dir_name, file_name), "rb") as stream:
            return stream.read().decode("utf-8", "replace")
    except (IOError, OSError):
        return None
