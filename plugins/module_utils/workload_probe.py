# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which frameworks a GPU service runs: its interpreter (from ExecStart), and a small probe run with that
interpreter, as the service's user, in a subprocess with a timeout.

The probe imports no framework: it reads package metadata (importlib.metadata) and the version files the
frameworks ship (torch/version.py, tensorflow/python/platform/build_info.py), so it takes a fraction of a
second where `import torch` takes many, and it cannot touch a GPU. What it reports per framework: its
version, the CUDA runtime it was built for, and the cuDNN and NCCL it carries (the nvidia-* wheels).
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
import os
import re

PROBE_SCRIPT = r"""
import json, os, re, sys
out = {"python": "%d.%d.%d" % tuple(sys.version_info[:3]), "packages": []}
try:
    from importlib import metadata
except ImportError:
    metadata = None
try:
    import importlib.util as util
except ImportError:
    util = None
def version(name):
    if metadata is None:
        return None
    try:
        return metadata.version(name)
    except Exception:
        return None
def first(names):
    for name in names:
        found = version(name)
        if found:
            return found
    return None
def nvidia(kind):
    return first(["nvidia-%s-%s" % (kind, cu) for cu in ("cu13", "cu12", "cu11")])
def package_file(package, relative):
    try:
        spec = util.find_spec(package) if util else None
    except Exception:
        spec = None
    for base in (getattr(spec, "submodule_search_locations", None) or []):
        try:
            with open(os.path.join(base, relative)) as handle:
                return handle.read(65536)
        except Exception:
            pass
    return None
def grab(text, pattern):
    match = re.search(pattern, text or "", re.M)
    return match.group(1) if match else None
def minor(text):
    match = re.match(r"(\d+)\.(\d+)", text or "")
    return "%s.%s" % match.groups() if match else None
torch_file = package_file("torch", "version.py")
torch = version("torch") or grab(torch_file, r"^__version__\s*=\s*['\"]([^'\"]+)")
if torch:
    out["packages"].append({"name": "torch", "version": torch,
        "cuda": grab(torch_file, r"^cuda\s*(?::[^=\n]*)?=\s*['\"]([^'\"]+)"),
        "cudnn": nvidia("cudnn"), "nccl": nvidia("nccl")})
tf = first(["tensorflow", "tensorflow-gpu", "tensorflow-cpu", "tf-nightly"])
if tf:
    info = package_file("tensorflow", os.path.join("python", "platform", "build_info.py"))
    out["packages"].append({"name": "tensorflow", "version": tf,
        "cuda": grab(info, r"['\"]cuda_version['\"]\s*:\s*['\"]([^'\"]+)"),
        "cudnn": grab(info, r"['\"]cudnn_version['\"]\s*:\s*['\"]([^'\"]+)") or nvidia("cudnn"),
        "nccl": nvidia("nccl")})
jax = version("jax")
if jax:
    jaxlib = version("jaxlib") or ""
    plugin = [cu for cu in ("13", "12", "11") if version("jax-cuda%s-plugin" % cu) or version("jax-cuda%s-pjrt" % cu)]
    runtime = minor(nvidia("cuda-runtime")) or grab(jaxlib, r"\+cuda(\d+(?:\.\d+)?)") or (plugin[0] if plugin else None)
    out["packages"].append({"name": "jax", "version": jax, "jaxlib": jaxlib or None, "cuda": runtime,
        "cudnn": nvidia("cudnn") or grab(jaxlib, r"cudnn(\d+)"), "nccl": nvidia("nccl")})
print(json.dumps(out))
"""

FRAMEWORKS = ("torch", "tensorflow", "jax")
_PYTHON_NAME = re.compile(r"^(?:python|pypy)[0-9.]*$")
_EXEC_LINE = re.compile(r"^\s*exec\s+(\S+)", re.M)
_EXEC_START_PATH = re.compile(r"\bpath=(\S+)")
_EXEC_START_ARGV = re.compile(r"\bargv\[\]=(.*?) ;")
TEXT_LIMIT = 128
HEAD_BYTES = 4096


def parse_exec_start(value):
    """(path, argv) of the first command in systemctl show's ExecStart= value, or (None, [])."""
    path = _EXEC_START_PATH.search(value or "")
    argv = _EXEC_START_ARGV.search(value or "")
    return (path.group(1) if path else None), (argv.group(1).split() if argv else [])


def is_python(path):
    return bool(path) and bool(_PYTHON_NAME.match(os.path.basename(path)))


def _env_target(host, words):
    """`env [-S] [VAR=x] python3 ...`: the program env would run, found on the host's PATH."""
    for word in words:
        if word.startswith("-") or "=" in word:
            continue
        return word if word.startswith("/") else host.find_bin(word)
    return None


def _from_script(host, path):
    """The interpreter a script runs: its shebang, or the program a shell wrapper execs."""
    head = host.read_text(path, HEAD_BYTES) if path else None
    if not head or not head.startswith("#!"):
        return None
    words = head[2:].splitlines()[0].split()
    if not words:
        return None
    interpreter = words[0]
    if os.path.basename(interpreter) == "env":
        interpreter = _env_target(host, words[1:])
    if is_python(interpreter):
        return interpreter
    if interpreter and os.path.basename(interpreter) in ("sh", "bash", "dash"):
        for target in _EXEC_LINE.findall(head):
            if is_python(target):
                return target
    return None


def interpreter_of(host, path, argv):
    """The Python interpreter an ExecStart runs (directly, through env, a shebang or a shell wrapper's exec),
    or None when it is no Python program."""
    if is_python(path):
        return path
    if path and os.path.basename(path) == "env":
        target = _env_target(host, argv[1:])
        return target if is_python(target) else None
    return _from_script(host, path)


def probe_argv(host, interpreter, user, euid):
    """(argv, None) that runs the probe as the service's user, or (None, reason) when it cannot."""
    command = [interpreter, "-c", PROBE_SCRIPT]
    if user in (None, "", "root", "0") and euid == 0:
        return command, None
    if euid != 0:
        if user in (None, "", "root", "0"):
            return None, "the service runs as root; probing it needs become"
        return None, "the probe runs as the service's user %s, which needs become" % user
    runuser = host.find_bin("runuser")
    if runuser is None:
        return None, "runuser (util-linux) is not on PATH; needed to probe as user %s" % user
    return [runuser, "-u", user, "--"] + command, None


def _text(value):
    if value is None:
        return None
    value = str(value)
    return "".join(char for char in value[:TEXT_LIMIT] if char.isprintable()) or None


def parse_probe_output(stdout):
    """{python, packages: [{name, version, cuda, cudnn, nccl}]} from the probe's JSON; ValueError otherwise."""
    lines = [line for line in (stdout or "").splitlines() if line.startswith("{")]
    if not lines:
        raise ValueError("the probe printed no JSON")
    data = json.loads(lines[-1])
    if not isinstance(data, dict):
        raise ValueError("the probe printed %s, not an object" % type(data).__name__)
    packages = []
    for package in data.get("packages") or []:
        if not isinstance(package, dict) or package.get("name") not in FRAMEWORKS:
            continue
        packages.append({"name": package["name"], "version": _text(package.get("version")),
                         "cuda": _text(package.get("cuda")), "cudnn": _text(package.get("cudnn")),
                         "nccl": _text(package.get("nccl"))})
    return {"python": _text(data.get("python")), "packages": packages}


def new_frameworks(status, interpreter=None, reason=None):
    return {"status": status, "interpreter": _text(interpreter), "python": None, "packages": [], "reason": reason}


def probe_frameworks(host, exec_start, user, timeout, euid=None):
    """facts for workload.services[].frameworks: status read, not_python, not_probed (no permission, no
    runuser) or failed (the probe failed, timed out or printed garbage), with the reason."""
    path, argv = parse_exec_start(exec_start)
    if path is None:
        return new_frameworks("not_python", reason="no ExecStart")
    interpreter = interpreter_of(host, path, argv)
    if interpreter is None:
        return new_frameworks("not_python", reason="ExecStart %s runs no Python interpreter" % _text(path))
    if euid is None:
        euid = host.euid() if hasattr(host, "euid") else os.geteuid()
    command, why_not = probe_argv(host, interpreter, user, euid)
    if command is None:
        return new_frameworks("not_probed", interpreter, why_not)
    result = host.run(command, timeout)
    if result.rc != 0:
        return new_frameworks("failed", interpreter, "framework probe: %s" % result.describe_failure())
    try:
        parsed = parse_probe_output(result.stdout)
    except ValueError as exc:
        return new_frameworks("failed", interpreter, "framework probe: %s" % exc)
    record = new_frameworks("read", interpreter)
    record.update(parsed)
    return record
