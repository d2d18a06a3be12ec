# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a framework or runtime failure message says in numbers: the memory figures of an out-of-memory
error (asked for, total, free, allocated against reserved, other processes), the two versions of a cuDNN
mismatch, the GPU architecture a build lacks, the peer and status of an NCCL network failure, the CUDA error
an NCCL failure carries. Pure functions of the text (the message and the lines after it, joined); a figure
the text does not give is left out, never guessed."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re

_SIZE = r"(\d+(?:\.\d+)?)\s*(bytes|B|KiB|MiB|GiB|TiB|KB|MB|GB|TB|K|M|G)\b"
_MIB_PER_UNIT = {"bytes": 1.0 / 1048576, "B": 1.0 / 1048576, "KiB": 1.0 / 1024, "KB": 1.0 / 1024, "K": 1.0 / 1024,
                 "MiB": 1.0, "MB": 1.0, "M": 1.0, "GiB": 1024.0, "GB": 1024.0, "G": 1024.0,
                 "TiB": 1048576.0, "TB": 1048576.0}

# (field, pattern): the first pattern of a field that matches gives it
OOM_SIZES = (
    ("requested_mib", r"Tried to allocate " + _SIZE),
    ("requested_mib", r"(?:trying to allocate|Out of memory allocating|Requested size was|requested size of) "
                      r"(\d+)()\s*bytes"),
    ("requested_mib", r"GPU memory \((\d+)() bytes\) could not be allocated"),
    ("requested_mib", r"failed to allocate " + _SIZE),
    ("total_mib", _SIZE + r" total capacity"),
    ("total_mib", r"total capac(?:i)?ty of " + _SIZE),
    ("free_mib", r"of which " + _SIZE + r" is free"),
    ("free_mib", _SIZE + r" free\b"),
    ("allocated_mib", _SIZE + r" already allocated"),
    ("allocated_mib", r"Of the allocated memory " + _SIZE + r" is allocated by PyTorch"),
    ("reserved_mib", _SIZE + r" reserved in total by PyTorch"),
    ("reserved_mib", _SIZE + r" cached\)"),
    ("reserved_unallocated_mib", _SIZE + r" is reserved by PyTorch but unallocated"),
    ("process_mib", r"this process has " + _SIZE + r" memory in use"),
    ("kv_cache_needed_mib", _SIZE + r" KV cache is needed"),
    ("kv_cache_available_mib", r"available KV cache memory \(" + _SIZE + r"\)"),
)
_OTHER_PROCESS = re.compile(r"Process (\d+) has " + _SIZE + r" memory in use")
_KV_TOKENS = re.compile(r"max seq len \((\d+)\) is larger than the maximum number of tokens that can be stored in "
                        r"KV cache \((\d+)\)")
# framework -> its words, first match wins (TensorRT-LLM before TensorRT, vLLM's KV cache before PyTorch)
FRAMEWORKS = (
    ("vllm", re.compile(r"KV cache|cache blocks|GPU blocks|vllm", re.IGNORECASE)),
    ("tensorrt_llm", re.compile(r"TensorRT-LLM|TRT-LLM|tensorrt_llm")),
    ("tensorrt", re.compile(r"\[TRT\]|Error Code 2: OutOfMemory|TensorRT")),
    ("jax_xla", re.compile(r"XlaRuntimeError|RESOURCE_EXHAUSTED|BufferAssignment|jaxlib|/xla/")),
    ("tensorflow", re.compile(r"ResourceExhaustedError|OOM when allocating tensor|_bfc|EigenAllocator|tensorflow")),
    ("deepspeed", re.compile(r"deepspeed", re.IGNORECASE)),
    ("pytorch", re.compile(r"torch|PyTorch|CUDA out of memory|CUBLAS_STATUS")),
)

_CUDNN_FORMS = (
    # (pattern, group of the runtime version, group of the compiled one)
    (re.compile(r"Loaded runtime CuDNN library: (\d+(?:\.\d+)*)\.? but source was compiled with: (\d+(?:\.\d+)*)",
                re.IGNORECASE), 1, 2),
    (re.compile(r"compiled\s+against \(([\d, ]+)\) but found runtime version \(([\d, ]+)\)"), 2, 1),
    (re.compile(r"compiled against (\d+) but linked against (\d+)"), 2, 1),
    (re.compile(r"cuDNN compiled \((\d+)\) and runtime \((\d+)\)"), 2, 1),
)
_ARCH = re.compile(r"(\S(?:[^\n]*?\S)?) with CUDA capability (sm_\d+) is not compatible")
_BUILD_ARCHS = re.compile(r"supports CUDA capabilities ((?:sm_\d+\s*)+)")
_DRIVER = re.compile(r"Driver Version: (\d+\.\d+(?:\.\d+)?)")
_DRIVER_CUDA = re.compile(r"CUDA Version: (\d+\.\d+)")
_NCCL_HOST = re.compile(r"^(?:\S+: )?([A-Za-z0-9][\w.-]*):\d+:\d+ \[\d+\]")
_PEER = re.compile(r"(?:from peer|recv from|send to|connect to|remote peer) (\S+?)<\d+>")
_IB_STATUS = re.compile(r"with (?:status=|error )(\d+)")
_VENDOR_ERROR = re.compile(r"vendor err (\d+)")
_CUDA_FAILURE = re.compile(r"Cuda failure (?:\d+ )?'([^']+)'|CUDA error: ([A-Za-z][^.\n]*)")
_NCCL_VERSION = re.compile(r"NCCL version (\d+\.\d+\.\d+)")


def to_mib(number, unit):
    """A size as the message prints it ("12.50 MiB", "528.00M", "6291456 bytes") in MiB, 2 decimals."""
    return round(float(number) * _MIB_PER_UNIT.get(unit or "bytes", 1.0 / 1048576), 2)


def flatten(text):
    """The message and the lines after it as one line (a wrapped message reads whole)."""
    return re.sub(r"\s+", " ", text or "")


def framework_of(text):
    for name, pattern in FRAMEWORKS:
        if pattern.search(text):
            return name
    return None


def oom_detail(text):
    """{framework, requested_mib, total_mib, free_mib, allocated_mib, reserved_mib, process_mib,
    other_processes, other_processes_mib, kv_cache_*}: what the out-of-memory message gives."""
    detail = {"framework": framework_of(text)}
    for field, pattern in OOM_SIZES:
        if field in detail:
            continue
        match = re.search(pattern, text)
        if match:
            detail[field] = to_mib(match.group(1), match.group(2))
    unallocated = detail.pop("reserved_unallocated_mib", None)
    if unallocated is not None and "allocated_mib" in detail and "reserved_mib" not in detail:
        detail["reserved_mib"] = round(detail["allocated_mib"] + unallocated, 2)
    others = dict((pid, to_mib(number, unit)) for pid, number, unit in _OTHER_PROCESS.findall(text))
    if others:
        detail["other_processes"] = len(others)
        detail["other_processes_mib"] = round(sum(others.values()), 2)
    tokens = _KV_TOKENS.search(text)
    if tokens:
        detail["max_model_len"], detail["kv_cache_tokens"] = int(tokens.group(1)), int(tokens.group(2))
    return detail


def cudnn_version(text):
    """'8.3.2' of "(8, 3, 2)", "8.3.2" or the integer encodings 7102 (7.1.2) and 90100 (9.1.0)."""
    text = text.strip().strip("()")
    if "," in text:
        return ".".join(part.strip() for part in text.split(","))
    if "." in text or not text.isdigit():
        return text
    number = int(text)
    major, rest = (number // 10000, number % 10000) if number >= 10000 else (number // 1000, number % 1000)
    return "%d.%d.%d" % (major, rest // 100, rest % 100)


def cudnn_detail(text):
    for pattern, runtime, compiled in _CUDNN_FORMS:
        match = pattern.search(text)
        if match:
            return {"library": "cuDNN", "runtime_version": cudnn_version(match.group(runtime)),
                    "compiled_version": cudnn_version(match.group(compiled))}
    return {"library": "cuDNN"}


def arch_detail(text):
    detail = {}
    match = _ARCH.search(text)
    if match:
        detail["gpu_name"], detail["gpu_arch"] = match.group(1).strip()[-FIELD_LIMIT:], match.group(2)
    build = _BUILD_ARCHS.search(text)
    if build:
        detail["build_archs"] = build.group(1).split()[:32]
    return detail


def driver_detail(text):
    detail = {}
    for field, pattern in (("driver_version", _DRIVER), ("driver_cuda_version", _DRIVER_CUDA)):
        match = pattern.search(text)
        if match:
            detail[field] = match.group(1)
    return detail


FIELD_LIMIT = 120


def _first(pattern, text):
    """The first group of pattern's first match, at most FIELD_LIMIT characters (host text is data)."""
    match = pattern.search(text)
    return match.group(1)[:FIELD_LIMIT] if match else None


def nccl_detail(text, first_line):
    """{cause, peer, reporter, ib_status, vendor_error, cuda_error, nccl_version}."""
    detail = {"reporter": _first(_NCCL_HOST, first_line), "peer": _first(_PEER, text),
              "nccl_version": _first(_NCCL_VERSION, text)}
    status = _first(_IB_STATUS, text)
    if status is not None and "Got completion from peer" in text:
        detail["cause"] = "ib_completion_error"
        detail["ib_status"] = int(status)
        vendor = _first(_VENDOR_ERROR, text)
        detail["vendor_error"] = int(vendor) if vendor is not None else None
    cuda = _CUDA_FAILURE.search(text)
    if cuda:
        detail["cuda_error"] = (cuda.group(1) or cuda.group(2)).strip()[:FIELD_LIMIT]
    if "/dev/shm" in text:
        detail["resource"] = "shm"
    elif "out of memory" in (detail.get("cuda_error") or ""):
        detail["resource"] = "gpu_memory"
    elif "Cannot allocate memory" in text or re.search(r"ibv_\w+ failed", text):
        detail["resource"] = "locked_memory"
    return dict((key, value) for key, value in detail.items() if value is not None)


def detail(kind, text):
    """What a message of `kind` (journal_scan.PATTERNS) and the lines after it say in numbers; {} when nothing."""
    first_line = (text or "").split("\n", 1)[0]
    flat = flatten(text)
    if kind == "cuda_oom":
        return oom_detail(flat)
    if kind == "cudnn_mismatch":
        return cudnn_detail(flat)
    if kind == "cuda_no_kernel_image":
        return arch_detail(text)
    if kind in ("cuda_driver_insufficient", "cuda_forward_compat"):
        return driver_detail(flat)
    if kind.startswith("nccl_"):
        return nccl_detail(flat, first_line)
    return {}
