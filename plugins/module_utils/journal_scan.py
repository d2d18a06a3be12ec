# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A GPU service's journal, searched for the failures that show first under concurrency.

Reads `journalctl -o json` (one entry a line; also `-o json-pretty`), or a plain log (one message a line),
and counts, per kind, the entries whose MESSAGE matches (see PATTERNS): framework out-of-memory errors
(PyTorch, TensorFlow, JAX/XLA, TensorRT, vLLM, Triton), CUDA runtime errors (uncorrectable ECC, driver too old,
forward compatibility, devices busy, no kernel image for the GPU, device-side assert, illegal address), cuDNN
version mismatches, NCCL failures by cause (network or peer, local resource, CUDA error, timeout, other),
Python tracebacks, and systemd's own note that the OOM killer hit the unit. Of each kind the first and the last
line are kept (time and text, printable and clipped) with what the message says in numbers (detail: memory
figures, versions, the peer), never more: a journal holds user data.

MESSAGE comes as a string, as an array of byte values (not UTF-8), as an array of strings (a field set
twice), or null (too large without --all). Old systemd wrote invalid escapes (\\uffffffd0); they are
read as the bytes they meant.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
import re
import time

from ansible_collections.gpufleet.core.plugins.module_utils import failure_detail

MESSAGE_LIMIT = 300
# the lines after a match that may carry the rest of its message (a wrapped or multi-line error)
DETAIL_LINES = 8
DETAIL_LIMIT = 3000

# kind -> what the journal says; the first match wins, in this order (a CUDA error inside an NCCL watchdog
# line is the CUDA error; an NCCL line that carries an out-of-memory is NCCL's resource failure)
PATTERNS = (
    ("cuda_ecc", re.compile(r"uncorrectable ECC error encountered|cudaErrorECCUncorrectable"
                            r"|CUDA_ERROR_ECC_UNCORRECTABLE")),
    ("cuda_driver_insufficient", re.compile(r"driver version is insufficient for CUDA runtime version"
                                            r"|cudaErrorInsufficientDriver|CUDA_ERROR_INSUFFICIENT_DRIVER"
                                            r"|CUDA initialization failure with error:? 35\b")),
    ("cuda_forward_compat", re.compile(r"forward compatibility was attempted on non supported HW"
                                       r"|cudaErrorCompatNotSupportedOnDevice|CUDA_ERROR_COMPAT_NOT_SUPPORTED")),
    ("cuda_devices_busy", re.compile(r"CUDA-capable device(?:\(s\)|s)? (?:is/are|are|is) busy or unavailable"
                                     r"|cudaErrorDevicesUnavailable|CUDA_ERROR_DEVICE_UNAVAILABLE")),
    ("cuda_no_kernel_image", re.compile(r"no kernel image is available for execution on the device"
                                        r"|cudaErrorNoKernelImageForDevice"
                                        r"|with CUDA capability sm_\d+ is not compatible with the current")),
    ("cudnn_mismatch", re.compile(r"Loaded runtime CuDNN library: \S+ but source was compiled with"
                                  r"|cuDNN version (?:incompatibility|mismatch)"
                                  r"|cuDNN compiled \(\d+\) and runtime \(\d+\) versions mismatch", re.IGNORECASE)),
    ("device_side_assert", re.compile(r"device-side assert triggered|\.cu:\d+:.*Assertion `[^`]*` failed")),
    ("illegal_memory_access", re.compile(r"illegal memory access", re.IGNORECASE)),
    ("nccl_resource", re.compile(r"NCCL.*Cuda failure \d*\s*'out of memory'"
                                 r"|NCCL WARN .*(?:/dev/shm|Cannot allocate memory|ibv_\w+ failed)")),
    ("nccl_network", re.compile(r"NET/IB ?: Got completion from peer|remote process exited or there was a network error"
                                r"|ncclRemoteError|NCCL WARN (?:NET|Net)\b.*(?:failed|closed|[Ee]rror)")),
    ("nccl_cuda", re.compile(r"unhandled cuda error|ncclUnhandledCudaError|NCCL WARN Cuda failure")),
    ("nccl_timeout", re.compile(r"Watchdog caught collective operation timeout|NCCL[^\n]{0,200}?tim(?:ed|e)[ -]?out"
                                r"|ProcessGroupNCCL[^\n]{0,200}?[Tt]imeout", re.IGNORECASE)),
    ("nccl_error", re.compile(r"NCCL error|NCCL WARN|nccl(?:System|Internal|UnhandledCuda|Remote|InvalidUsage"
                              r"|InvalidArgument)Error|ProcessGroupNCCL[^\n]{0,200}?Exception")),
    ("cuda_oom", re.compile(r"CUDA out of memory|CUBLAS_STATUS_ALLOC_FAILED|cudaErrorMemoryAllocation"
                            r"|CUDA_ERROR_OUT_OF_MEMORY|\bOutOfMemoryError\b|RESOURCE_EXHAUSTED: Out of memory"
                            r"|OOM when allocating tensor|ran out of memory when allocating|Error Code 2: OutOfMemory"
                            r"|CUDA runtime error in [^\n]*: out of memory|CUDA OOMs: [1-9]"
                            r"|No available memory for the cache blocks|# GPU blocks: 0\b"
                            r"|larger than the maximum number of tokens that can be stored in KV cache"
                            r"|KV cache is needed, which is larger than the available KV cache memory"
                            r"|failed to create cublas handle: CUBLAS_STATUS_NOT_INITIALIZED"
                            r"|Could not create cudnn handle: CUDNN_STATUS_(?:INTERNAL_ERROR|ALLOC_FAILED)")),
    ("python_traceback", re.compile(r"Traceback \(most recent call last\)")),
    # systemd's whole message about the unit, so that text it quotes (a unit's description) never matches
    ("oom_killed", re.compile(r"^[\w@.:\\-]+: (?:A process of this unit has been killed by the OOM killer"
                              r"|Failed with result 'oom-kill')\.?$")),
)
# A word every pattern's match contains: a message without any is no failure, and most messages of a busy
# service are none, so the patterns run only on the few that have one.
_ANY_KIND = re.compile("|".join(re.escape(word) for word in (
    "cuda", "nccl", "ecc error", "memory", "oom", "resource_exhausted", "traceback", "cudnn", "assert", "kv cache is",
    "in kv cache", "gpu blocks", "timeout", "timed out", "time out", "time-out", "cublas", "kernel image",
    "busy or unavailable", "forward compat", "driver version")))  # searched in the message in lower case
# Lines that follow from a failure already counted, or say themselves that they are none: TensorFlow's BFC
# allocator retrying ("not a failure"), an InfiniBand flush after the queue pair failed (status 5), NCCL's
# explanation of the error code on the line before, and its proxy threads passing the error on.
SECONDARY = re.compile(r"The caller indicates that this is not a failure|Got completion from peer .* with status=5\b"
                       r"|(?:^|:\s)nccl[A-Z]\w*Error: |\[Proxy Service \d+\] Failed to execute operation"
                       r"|\[Service thread\] Error encountered progressing")
# An NCCL error whose following lines name its cause
_NCCL_OUT_OF_MEMORY = re.compile(r"Cuda failure \d*\s*'out of memory'")
_NETWORK_CAUSE = re.compile(r"Connection (?:closed by remote peer|reset by peer)|Broken pipe"
                            r"|Call to (?:recv|send|connect) (?:from|to) \S+ failed")
KINDS = tuple(kind for kind, _pattern in PATTERNS)
# What systemd (PID 1) says about the unit; the other kinds are read only in the service's own messages, so that
# neither a service printing systemd's words nor systemd quoting the unit's description ("Started <description>")
# counts as the other.
SERVICE_MANAGER_KINDS = ("oom_killed",)
SERVICE_KINDS = tuple(kind for kind in KINDS if kind not in SERVICE_MANAGER_KINDS)

_BAD_ESCAPE = re.compile(r"(?:\\uffffff[0-9a-fA-F]{2})+")
_GPU_INDEX = re.compile(r"\bGPU (\d{1,2})\b")


def _bytes_of_escapes(match):
    raw = bytes(int(match.group(0)[i + 8:i + 10], 16) for i in range(0, len(match.group(0)), 10))
    return json.dumps(raw.decode("utf-8", "replace"))[1:-1]


def repair_escapes(text):
    """`\\uffffffd0\\uffffff9f` (systemd 224 and older) as the JSON escape of the UTF-8 text those bytes are."""
    return _BAD_ESCAPE.sub(_bytes_of_escapes, text) if "\\uffffff" in text else text


def message_text(value):
    """MESSAGE as text: a string, bytes as a list of integers, several values as a list of strings."""
    if value is None:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        if value and all(isinstance(item, int) and 0 <= item < 256 for item in value):
            return bytes(value).decode("utf-8", "replace")
        parts = [message_text(item) for item in value]
        return "\n".join(part for part in parts if part)
    return str(value)


def _decode(text):
    try:
        entry = json.loads(repair_escapes(text))
    except ValueError:
        return None
    return entry if isinstance(entry, dict) else None


def iter_entries(text):
    """(entry dict or None, raw text) for each journal entry of `-o json` or `-o json-pretty` output; None
    for an entry that does not parse (cut off, not JSON). Lines outside an entry are skipped."""
    buffer = []
    for line in (text or "").splitlines():
        stripped = line.strip()
        if line.startswith("{"):
            if buffer:
                yield None, "\n".join(buffer)
            buffer = [line]
            if stripped.endswith("}"):
                raw = "\n".join(buffer)
                buffer = []
                yield _decode(raw), raw
            continue
        if not buffer:
            continue
        buffer.append(line)
        if stripped == "}":
            raw = "\n".join(buffer)
            buffer = []
            yield _decode(raw), raw
    if buffer:
        yield None, "\n".join(buffer)


def entry_time(entry):
    """ISO 8601 UTC of __REALTIME_TIMESTAMP (microseconds since the epoch), or None."""
    try:
        micros = int(entry.get("__REALTIME_TIMESTAMP"))
    except (TypeError, ValueError):
        return None
    whole, micro = divmod(micros, 1000000)
    try:
        return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(whole)) + (".%06dZ" % micro if micro else "Z")
    except (OverflowError, OSError, ValueError):
        return None


def clip(text, limit=MESSAGE_LIMIT):
    """Host text as data: printable characters only (a newline becomes a space), at most limit of them."""
    if text is None:
        return None
    text = text.strip()
    cleaned = "".join(char if char.isprintable() else " " for char in text[:limit])
    return cleaned + ("..." if len(text) > limit else "")


def classify(message, kinds=KINDS):
    """The kind of a message among kinds (see PATTERNS), or None (also for a SECONDARY line)."""
    if not message or not _ANY_KIND.search(message.lower()) or SECONDARY.search(message):
        return None
    for kind, pattern in PATTERNS:
        if kind in kinds and pattern.search(message):
            return kind
    return None


def refine(kind, following):
    """An NCCL error whose next lines name its cause ("Last error: ... Connection closed by remote peer",
    "Cuda failure 'out of memory'") is a failure of that cause."""
    if kind == "nccl_error" and _NETWORK_CAUSE.search(following):
        return "nccl_network"
    if kind == "nccl_cuda" and _NCCL_OUT_OF_MEMORY.search(following):
        return "nccl_resource"
    return kind


def sender_kinds(entry):
    """The kinds an entry can be: journald's trusted _PID says whether systemd or the service wrote it."""
    return SERVICE_MANAGER_KINDS if entry.get("_PID") in ("1", 1) else SERVICE_KINDS


def new_match():
    return {"count": 0, "first": None, "last": None}


def new_scan():
    return {"entries": 0, "unparsed": 0, "matches": dict((kind, new_match()) for kind in KINDS), "cuda_oom_gpus": [],
            "details": {}}


def _int(value):
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _following(messages, position):
    """The message at position and the DETAIL_LINES after it, as the text a detail is read from."""
    text = "\n".join(message or "" for _time, _pid, message in messages[position:position + DETAIL_LINES + 1])
    return text[:DETAIL_LIMIT]


def _line(messages, position):
    time_, pid, message = messages[position]
    return {"time": time_, "pid": pid, "message": clip(message)}


def _detail(messages, positions, kind):
    """What the first and the last message of a kind say (the last one's figures win)."""
    merged = {}
    for position in positions:
        merged.update(failure_detail.detail(kind, _following(messages, position)))
    return merged


def scan_messages(messages, kinds_of=lambda position: KINDS):
    """The scan (see new_scan) of [(time, pid, message)]; kinds_of(position) gives the kinds a message can be."""
    scan = new_scan()
    oom_gpus = set()
    positions = dict((kind, []) for kind in KINDS)
    for position, (_time, _pid, message) in enumerate(messages):
        kind = classify(message, kinds_of(position))
        if kind is None:
            continue
        kind = refine(kind, _following(messages, position + 1) if kind in ("nccl_error", "nccl_cuda") else "")
        scan["matches"][kind]["count"] += 1
        positions[kind][1:] = [position]  # the first one and the latest
        if kind == "cuda_oom":
            oom_gpus.update(int(index) for index in _GPU_INDEX.findall(message))
    for kind, found in positions.items():
        if found:
            scan["matches"][kind]["first"] = _line(messages, found[0])
            scan["matches"][kind]["last"] = _line(messages, found[-1])
            detail = _detail(messages, found, kind)
            if detail:
                scan["details"][kind] = detail
    scan["cuda_oom_gpus"] = sorted(oom_gpus)
    return scan


def scan_journal(text):
    """Counts of each kind of failure in journal JSON, with the first and last line of each."""
    messages, kinds, unparsed = [], [], 0
    for entry, _raw in iter_entries(text):
        if entry is None:
            unparsed += 1
            continue
        messages.append((entry_time(entry), _int(entry.get("_PID")), message_text(entry.get("MESSAGE"))))
        kinds.append(sender_kinds(entry))
    scan = scan_messages(messages, lambda position: kinds[position])
    scan["entries"], scan["unparsed"] = len(messages), unparsed
    return scan


def scan_log(text):
    """The same scan of a plain log (a service's log file, a captured console): one message a line, no times."""
    messages = [(None, None, line) for line in (text or "").splitlines()]
    scan = scan_messages(messages, lambda position: SERVICE_KINDS)
    scan["entries"] = len(messages)
    return scan


def journalctl_argv(path, unit, window_hours, max_entries):
    """The unit's entries of the window (every boot), newest max_entries, as JSON with full fields."""
    return [path, "--unit=%s" % unit, "--output=json", "--all", "--no-pager",
            "--since=-%dh" % int(window_hours), "--lines=%d" % int(max_entries)]
