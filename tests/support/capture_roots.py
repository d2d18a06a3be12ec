"""Captured roots made from recorded fixtures, as a sosreport-style capture of the same host would hold them
(docs/offline.md): each recorded file at its path under the root, each recorded command's output under
sos_commands/gpufleet/<command line, spaces as _ and / as .>, and capture.json with the recording's clock."""

import datetime
import json
import os

from ansible_collections.gpufleet.core.plugins.module_utils.capture_host import COMMANDS_FOLDER, mangled_command

# longer command lines (the framework probe's script) cannot be file names: a capture never holds them
MAX_NAME = 255


def write_file(root, path, text):
    full = os.path.join(root, path.lstrip("/"))
    os.makedirs(os.path.dirname(full), exist_ok=True)
    with open(full, "w") as handle:
        handle.write(text)
    return full


def root_from_fixture(fixture, root):
    """Writes the captured root of a fixture's recorded host into root; returns root."""
    host = fixture["host"]
    for path, text in host.get("files", {}).items():
        if text is not None:
            write_file(root, path, text)
    for path, entries in host.get("dirs", {}).items():
        for entry in entries or ():
            folder = os.path.join(root, path.lstrip("/"), entry)
            if not os.path.exists(folder):
                os.makedirs(folder, exist_ok=True)
    for key, result in host.get("commands", {}).items():
        name = mangled_command(key)
        if result.get("rc") == 0 and len(name) <= MAX_NAME:
            write_file(root, "%s/gpufleet/%s" % (COMMANDS_FOLDER, name), result.get("stdout") or "")
    moment = datetime.datetime.fromtimestamp(host["now"], datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    write_file(root, "capture.json", json.dumps({"collected_at": moment}))
    return root
