"""A GPU service's journal (journalctl -o json): failures counted by kind, first and last line kept, and the
MESSAGE forms journald writes (string, byte array, several values, null, old invalid escapes)."""

import json

import pytest

from ansible_collections.gpufleet.core.plugins.module_utils import failure_detail, journal_scan
from ansible_collections.gpufleet.core.plugins.module_utils.journal_scan import (
    classify, iter_entries, message_text, repair_escapes, scan_journal, scan_log)

UNIT = "vllm.service"


def entry(message, micros=1796032800000000, pid=4242, **fields):
    """One journal entry as `journalctl -o json` prints it: every value a string, one object a line."""
    record = {"__CURSOR": "s=7c1d;i=%x;b=0dc8;m=24ea327;t=%x;x=9cee" % (micros % 65536, micros),
              "__REALTIME_TIMESTAMP": str(micros), "__MONOTONIC_TIMESTAMP": "38708007",
              "_BOOT_ID": "0dc874d3fbd44bdbb6fbcfaa27481492", "PRIORITY": "3", "_TRANSPORT": "stdout",
              "SYSLOG_IDENTIFIER": "python3", "_PID": str(pid), "_COMM": "python3",
              "_SYSTEMD_UNIT": UNIT, "_SYSTEMD_CGROUP": "/system.slice/" + UNIT, "MESSAGE": message}
    record.update(fields)
    return json.dumps(record, separators=(", ", " : ")).replace("{", "{ ", 1)[:-1] + " }"


def journal(*messages):
    return "\n".join(entry(message, 1796032800000000 + 1000000 * position) for position, message in
                     enumerate(messages)) + "\n"


OOM = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
       "79.10 GiB of which 1.06 GiB is free. Including non-PyTorch memory, this process has 21.30 GiB memory in use.")
CUBLAS = "RuntimeError: CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`"
WATCHDOG = ("[rank1]:[E1130 03:12:44.903881913 ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught collective "
            "operation timeout: WorkNCCL(SeqNum=808, OpType=ALLREDUCE, NumelIn=9801523, NumelOut=9801523, "
            "Timeout(ms)=600000) ran for 600020 milliseconds before timing out.")
NCCL_ERROR = ("torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:275, "
              "unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.20.5")
ILLEGAL = "RuntimeError: CUDA error: an illegal memory access was encountered"
TRACEBACK = "Traceback (most recent call last):"


def test_each_kind_is_counted_with_its_first_and_last_line():
    text = journal("INFO: serving on :8000", TRACEBACK, OOM, TRACEBACK, CUBLAS, WATCHDOG, WATCHDOG, NCCL_ERROR,
                   ILLEGAL, "INFO: done")
    scan = scan_journal(text)
    counts = dict((kind, match["count"]) for kind, match in scan["matches"].items() if match["count"])
    assert counts == {"cuda_oom": 2, "illegal_memory_access": 1, "nccl_timeout": 2, "nccl_error": 1,
                      "python_traceback": 2}
    oom = scan["matches"]["cuda_oom"]
    assert oom["first"]["time"] == "2026-11-30T10:00:02Z"
    assert oom["first"]["message"].startswith("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00")
    assert oom["last"]["message"] == CUBLAS and oom["last"]["pid"] == 4242
    assert (scan["entries"], scan["unparsed"], scan["cuda_oom_gpus"]) == (10, 0, [0])


def test_a_clean_journal_counts_nothing():
    scan = scan_journal(journal("INFO: model loaded in 41.2 s", "INFO: 200 POST /v1/completions"))
    assert all(match == {"count": 0, "first": None, "last": None} for match in scan["matches"].values())
    assert scan["entries"] == 2


def test_systemd_says_when_the_oom_killer_hit_the_unit():
    systemd = {"_TRANSPORT": "journal", "SYSLOG_IDENTIFIER": "systemd", "_PID": "1"}
    text = (entry("vllm.service: A process of this unit has been killed by the OOM killer.", **systemd) + "\n"
            + entry("vllm.service: Failed with result 'oom-kill'.", **systemd))
    assert scan_journal(text)["matches"]["oom_killed"]["count"] == 2


def test_message_as_bytes_as_several_values_and_null():
    assert message_text(list("CUDA out of memory \xff".encode("latin-1"))) == "CUDA out of memory \ufffd"
    assert message_text(["NCCL WARN Call to connect returned", "Connection refused"]) == \
        "NCCL WARN Call to connect returned\nConnection refused"
    assert message_text(None) is None
    lines = [json.dumps({"__REALTIME_TIMESTAMP": "1796032800000000", "MESSAGE": list(OOM.encode())}),
             json.dumps({"__REALTIME_TIMESTAMP": "1796032801000000", "MESSAGE": None})]
    scan = scan_journal("\n".join(lines))
    assert (scan["entries"], scan["matches"]["cuda_oom"]["count"]) == (2, 1)


def test_old_invalid_escapes_are_read_as_the_utf8_they_meant():
    line = '{ "__REALTIME_TIMESTAMP" : "1439903275885223", "MESSAGE" : "\\uffffffd0\\uffffff9f\\uffffffd1\\uffffff80" }'
    assert repair_escapes("plain") == "plain"
    (parsed, _raw), = list(iter_entries(line))
    assert message_text(parsed["MESSAGE"]) == "\u041f\u0440"


def test_garbage_and_cut_entries_are_counted_not_fatal():
    text = entry(OOM) + "\n{ \"MESSAGE\" : \"cut off\n" + "Hint: You are currently not seeing messages\n" + \
        "{ not json }\n" + entry(ILLEGAL) + "\n"
    scan = scan_journal(text)
    assert (scan["entries"], scan["unparsed"]) == (2, 2)
    assert scan["matches"]["illegal_memory_access"]["count"] == 1


def test_host_text_is_kept_as_short_printable_data():
    scan = scan_journal(entry("CUDA out of memory \x1b[31m" + "x" * 1000))
    message = scan["matches"]["cuda_oom"]["first"]["message"]
    assert len(message) == journal_scan.MESSAGE_LIMIT + 3 and "\x1b" not in message and message.endswith("...")


def test_journalctl_reads_the_unit_in_the_window_bounded():
    assert journal_scan.journalctl_argv("/usr/bin/journalctl", UNIT, 72, 20000) == [
        "/usr/bin/journalctl", "--unit=vllm.service", "--output=json", "--all", "--no-pager", "--since=-72h",
        "--lines=20000"]


@pytest.mark.parametrize("name, kinds", [
    ("pytorch-cuda-oom_messages-by-version_issue-quotes_part1.txt", {"cuda_oom"}),
    ("nccl-watchdog-timeout_processgroupnccl_issue-quotes_part1.txt", {"nccl_timeout"}),
    ("cuda-runtime-errors_cublas-alloc-failed_illegal-memory-access_issue-quotes_part1.txt",
     {"cuda_oom", "illegal_memory_access"}),
])
def test_every_quoted_block_of_the_corpus_is_recognised(corpus, name, kinds):
    """Each "## " block of the quotes is one user's failure: at least one of its lines must be classified."""
    blocks = corpus.read_realdata(name).split("\n## ")[1:]
    assert blocks
    found = set()
    for block in blocks:
        classified = [classify(line) for line in block.splitlines()[1:]]
        assert any(classified), block.splitlines()[0]
        found.update(kind for kind in classified if kind)
    assert kinds <= found


def test_the_corpus_journal_json_files_parse(corpus):
    """One-object-a-line json and json-pretty with invalid escapes and cut entries: nothing raises, what is
    whole parses, what is cut is counted."""
    lines = scan_journal(corpus.read_realdata("journalctl-o-json_imx6ul-embedded-python-unit_lnav.json"))
    assert (lines["entries"], lines["unparsed"]) == (2, 0)
    entries = list(iter_entries(corpus.read_realdata(
        "journalctl-o-json-pretty_invalid-escapes-and-multivalue-message_issue-quotes_part1.txt")))
    parsed = [item for item, _raw in entries if item is not None]
    assert [message_text(item["MESSAGE"]) for item in parsed] == ["\u041f\u0440\u0438\u0432\u0435\u0442"]
    assert len(entries) - len(parsed) == 2


# ---------------------------------------------------------------- every kind, in wordings of several versions

def _kinds(text):
    return dict((kind, match["count"]) for kind, match in scan_log(text)["matches"].items() if match["count"])


@pytest.mark.parametrize("line, kind", [
    ("RuntimeError: CUDA error: uncorrectable ECC error encountered", "cuda_ecc"),
    ("[E ProcessGroupNCCL.cpp:916] [Rank 3] NCCL watchdog thread terminated with exception: CUDA error: "
     "uncorrectable ECC error encountered", "cuda_ecc"),
    ("cudaErrorInsufficientDriver: CUDA driver version is insufficient for CUDA runtime version", "cuda_driver_insufficient"),
    ("E0101 00:00:00.1 1 logging.cc:40] Error Code 6: Internal Error (CUDA initialization failure with error: 35.",
     "cuda_driver_insufficient"),
    ("RuntimeError: CUDA error: forward compatibility was attempted on non supported HW", "cuda_forward_compat"),
    ("RuntimeError: CUDA error: CUDA-capable device(s) is/are busy or unavailable", "cuda_devices_busy"),
    ("cudaErrorDevicesUnavailable: all CUDA-capable devices are busy or unavailable", "cuda_devices_busy"),
    ("NVIDIA H200 with CUDA capability sm_90 is not compatible with the current PyTorch installation.",
     "cuda_no_kernel_image"),
    ("E0000 external/local_xla/xla/stream_executor/cuda/cuda_dnn.cc:536] Loaded runtime CuDNN library: 9.1.0 but "
     "source was compiled with: 9.3.0.", "cudnn_mismatch"),
    ("RuntimeError: CUDA error: device-side assert triggered", "device_side_assert"),
    ("node-7:11:12 [0] net_ib.cc:1400 NCCL WARN NET/IB: Got completion from peer 10.0.0.9<4242> with status=12 "
     "opcode=0 len=0 vendor err 129 (Send) localGid ::ffff:10.0.0.8 remoteGids::ffff:10.0.0.9", "nccl_network"),
    ("node-7:11:12 [0] misc/socket.cc:50 NCCL WARN Net : Connection closed by remote peer node-9<4242>", "nccl_network"),
    ("node-7:11:12 [0] misc/shmutils.cc:71 NCCL WARN Error: failed to extend /dev/shm/nccl-x to 9 bytes", "nccl_resource"),
    ("node-7:11:12 [0] enqueue.cc:1 NCCL WARN Cuda failure 'out of memory'", "nccl_resource"),
    ("node-7:11:12 [0] enqueue.cc:1 NCCL WARN Cuda failure 'an illegal instruction was encountered'", "nccl_cuda"),
    ("tensorflow.python.framework.errors_impl.ResourceExhaustedError: OOM when allocating tensor with shape[8,1024]",
     "cuda_oom"),
    ("jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to allocate 1024 bytes.",
     "cuda_oom"),
    ("[08/11/2025-06:10:36] [TRT] [E] [resizePhysical::151] Error Code 2: OutOfMemory (Requested size was 1 bytes.)",
     "cuda_oom"),
    ("ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization`", "cuda_oom"),
])
def test_each_kind_in_other_wordings(line, kind):
    assert classify(line) == kind


@pytest.mark.parametrize("line", [
    "W tensorflow/core/common_runtime/bfc_allocator.cc:272] Allocator (GPU_0_bfc) ran out of memory trying to "
    "allocate 16.00MiB with freed_by_count=0. The caller indicates that this is not a failure, but may mean that",
    "h:1:2 [4] ib_plugin.c:1615 NCCL WARN NET/IB : Got completion from peer 10.0.0.9<1> with status=5 opcode=1 len=0 "
    "vendor err 249 (Recv)",
    "ncclRemoteError: A call failed possibly due to a network error or a remote process exiting prematurely.",
    "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.",
    "node-7:11:12 [0] NCCL INFO Using /dev/shm for the SHM transport",
    "INFO 04-27 10:11:03 metrics.py:351] Avg prompt throughput: 0.0 tokens/s, GPU KV cache usage: 0.1%, CPU KV cache "
    "usage: 0.0%.",
    "2021-06-11 15:49:39.798483: I tensorflow/stream_executor/cuda/cuda_dnn.cc:359] Loaded cuDNN version 8200",
])
def test_lines_that_follow_a_failure_or_say_they_are_none_count_nothing(line):
    assert classify(line) is None


def test_oom_detail_reads_allocated_against_reserved_and_other_processes():
    text = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 1 has a total capacity of "
            "79.10 GiB of which 1.06 GiB is free. Process 777 has 3.00 GiB memory in use. Including non-PyTorch "
            "memory, this process has 75.00 GiB memory in use. Of the allocated memory 40.00 GiB is allocated by\n"
            "PyTorch, and 30.00 GiB is reserved by PyTorch but unallocated.\n")
    scan = scan_log(text)
    assert scan["details"]["cuda_oom"] == {
        "framework": "pytorch", "requested_mib": 2048.0, "total_mib": 80998.4, "free_mib": 1085.44,
        "allocated_mib": 40960.0, "reserved_mib": 71680.0, "process_mib": 76800.0, "other_processes": 1,
        "other_processes_mib": 3072.0}
    assert scan["cuda_oom_gpus"] == [1]


def test_cudnn_versions_in_every_encoding():
    assert failure_detail.cudnn_version("(8, 9, 7)") == "8.9.7"
    assert failure_detail.cudnn_version("7605") == "7.6.5"
    assert failure_detail.cudnn_version("90100") == "9.1.0"
    assert scan_log("RuntimeError: cuDNN version mismatch: PyTorch was compiled against 8500 but linked against "
                    "8302")["details"]["cudnn_mismatch"] == {
        "library": "cuDNN", "runtime_version": "8.3.2", "compiled_version": "8.5.0"}


def test_an_nccl_error_whose_next_lines_name_the_peer_is_a_network_failure():
    text = ("torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, internal error - please "
            "report this issue to the NCCL developers, NCCL version 2.20.5\nncclInternalError: Internal check failed."
            "\nLast error:\nNet : Connection closed by remote peer gpu-node-12.cluster<35218>\n")
    scan = scan_log(text)
    assert _kinds(text) == {"nccl_network": 1}
    assert scan["details"]["nccl_network"] == {"peer": "gpu-node-12.cluster", "nccl_version": "2.20.5"}


def test_an_nccl_cuda_failure_carries_its_cuda_error():
    text = ("torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1, unhandled cuda error (run "
            "with NCCL_DEBUG=INFO for details), NCCL version 2.21.5\nncclUnhandledCudaError: Call to CUDA function "
            "failed.\nLast error:\nCuda failure 'invalid device ordinal'\n")
    assert _kinds(text) == {"nccl_cuda": 1}
    assert scan_log(text)["details"]["nccl_cuda"]["cuda_error"] == "invalid device ordinal"


def test_journal_json_entries_carry_details_too():
    scan = scan_journal(journal("INFO: start", OOM))
    assert scan["details"]["cuda_oom"]["process_mib"] == 21811.2


# ---------------------------------------------------------------- the public corpus, every file of its kinds

FRAMEWORK_FILES = {
    "cuda-device-side-assert_index-and-loss-assertions_issue-quotes.txt": {"device_side_assert"},
    "cuda-error35-driver-insufficient_pytorch-onnxruntime-ctranslate2-bandwidthtest_issue-quotes.txt":
        {"cuda_driver_insufficient"},
    "cuda-error46-devices-busy-or-unavailable_llamacpp-pytorch-caffe_issue-quotes.txt": {"cuda_devices_busy"},
    "cuda-error804-forward-compat-unsupported_torch-warning-and-vllm-engine_issue-quotes.txt": {"cuda_forward_compat"},
    "cuda-no-kernel-image-sm-arch-not-in-build_pytorch_issue-quotes.txt": {"cuda_no_kernel_image"},
    "cuda-runtime-errors_cublas-alloc-failed_illegal-memory-access_issue-quotes_part1.txt":
        {"cuda_oom", "illegal_memory_access"},
    "cuda-uncorrectable-ecc-error_pytorch-runtime-and-nccl-watchdog_issue-quotes.txt": {"cuda_ecc"},
    "cudnn-version-mismatch_pytorch-caffe2-compiled-vs-runtime_issue-quotes.txt": {"cudnn_mismatch"},
    "cudnn-version-mismatch_tensorflow-xla-loaded-runtime-vs-compiled_issue-quotes.txt": {"cudnn_mismatch"},
    "deepspeed-training-cuda-oom_zero3-ddp-init-mii_issue-quotes.txt": {"cuda_oom"},
    "jax-xla-gpu-oom_resource-exhausted-and-cuda-error-out-of-memory_issue-quotes.txt": {"cuda_oom"},
    "tensorflow-gpu-oom_resourceexhausted-and-bfc-allocator_issue-quotes.txt": {"cuda_oom"},
    "tensorrt-llm-engine-build-gpu-oom_trt-error-code-2_issue-quotes.txt": {"cuda_oom"},
    "triton-inference-server-model-load-gpu-failures_oom-cuda-init-stream_issue-quotes.txt":
        {"cuda_oom", "cuda_driver_insufficient"},
    "vllm-kv-cache-insufficient-memory_v0-and-v1-engine-logs_issue-quotes.txt": {"cuda_oom"},
    "nccl-net-ib-completion-error-status12-vendor-err-129_issue-quotes.txt": {"nccl_network"},
    "nccl-remote-process-exited-network-error-and-system-error_torch-distbackenderror_issue-quotes.txt":
        {"nccl_network", "nccl_error"},
    "nccl-resource-failures_cuda-oom-init-error-shm-ibv-create-cq_issue-quotes.txt": {"nccl_resource", "nccl_cuda"},
    "nccl-watchdog-timeout_processgroupnccl_issue-quotes_part1.txt": {"nccl_timeout"},
    "pytorch-cuda-oom_messages-by-version_issue-quotes_part1.txt": {"cuda_oom"},
    "pytorch-cuda-oom_messages-by-version_issue-quotes_part2.txt": {"cuda_oom"},
}
# blocks that show no failure of their own (the INDEX: an nvidia-smi table quoted beside the error, TensorFlow's
# BFC "not a failure" warnings, a success line, a traceback whose error is further on in the thread, a pinned
# memory warning on a vGPU that no kind covers)
QUIET_BLOCKS = ("NVIDIA/DIGITS#2005 (same post, further down)", "tensorflow/tensorflow#43546",
                "tensorflow/tensorflow#50217 (https", "triton-inference-server/server#7958", "vllm-project/vllm#17431")


def quoted_blocks(text):
    """(header, the quoted lines) of each "## " block, or one block of the whole raw file."""
    blocks = text.split("\n## ")
    if len(blocks) == 1:
        return [("", text)]
    return [(block.split("\n", 1)[0], block.split("\n", 1)[1] if "\n" in block else "") for block in blocks[1:]]


@pytest.mark.corpus
@pytest.mark.parametrize("name", sorted(FRAMEWORK_FILES))
def test_every_framework_failure_file_is_read_as_the_index_says(corpus, name):
    """Each block of quotes is one user's failure: its lines are scanned as a log, and the kinds the INDEX's ground
    truth names are found (the header, our own words, is left out)."""
    found = set()
    for header, lines in quoted_blocks(corpus.read_realdata(name)):
        kinds = set(_kinds(lines))
        if header.startswith(QUIET_BLOCKS):
            assert kinds <= {"python_traceback"}, header
            continue
        assert kinds - {"python_traceback"}, header
        found |= kinds
    assert FRAMEWORK_FILES[name] <= found
    assert found - {"python_traceback"} <= FRAMEWORK_FILES[name] | {"illegal_memory_access"}


def _block_details(corpus, name, kind):
    return [scan_log(lines)["details"].get(kind) for _header, lines in quoted_blocks(corpus.read_realdata(name))]


@pytest.mark.corpus
def test_corpus_cudnn_versions_both_ways(corpus):
    pytorch = _block_details(corpus, "cudnn-version-mismatch_pytorch-caffe2-compiled-vs-runtime_issue-quotes.txt",
                             "cudnn_mismatch")
    assert [(item["runtime_version"], item["compiled_version"]) for item in pytorch] == [
        ("8.2.1", "8.3.2"), ("8.0.3", "8.3.2"), ("7.6.0", "7.1.2"), ("7.0.5", "7.1.2")]
    tensorflow = _block_details(
        corpus, "cudnn-version-mismatch_tensorflow-xla-loaded-runtime-vs-compiled_issue-quotes.txt", "cudnn_mismatch")
    assert [(item or {}).get("runtime_version") for item in tensorflow] == ["8.0.4", None, "8.0.5", "8.7.0", "9.0.0"]


@pytest.mark.corpus
def test_corpus_pytorch_oom_figures(corpus):
    part1 = _block_details(corpus, "pytorch-cuda-oom_messages-by-version_issue-quotes_part1.txt", "cuda_oom")
    assert [(item.get("allocated_mib"), item.get("reserved_mib")) for item in part1] == [
        (8.57, 4.68), (8980.48, 14039.04), (17612.8, 19609.6), (984.52, 1448.0), (23449.6, 23644.47),
        (9297.92, 18872.32)]
    part2 = _block_details(corpus, "pytorch-cuda-oom_messages-by-version_issue-quotes_part2.txt", "cuda_oom")
    assert [(item.get("other_processes"), item.get("process_mib")) for item in part2[:3]] == [
        (4, 38359.04), (1, 15687.68), (None, 6840.32)]


@pytest.mark.corpus
def test_corpus_vllm_and_trt_and_nccl_details(corpus):
    vllm = _block_details(corpus, "vllm-kv-cache-insufficient-memory_v0-and-v1-engine-logs_issue-quotes.txt",
                          "cuda_oom")
    assert (vllm[2]["max_model_len"], vllm[2]["kv_cache_tokens"]) == (32768, 7344)
    assert (vllm[4]["kv_cache_needed_mib"], vllm[4]["kv_cache_available_mib"]) == (24576.0, 10209.28)
    trt = _block_details(corpus, "tensorrt-llm-engine-build-gpu-oom_trt-error-code-2_issue-quotes.txt", "cuda_oom")
    assert [item["framework"] for item in trt] == ["tensorrt_llm", "tensorrt", "tensorrt_llm"]
    ib = _block_details(corpus, "nccl-net-ib-completion-error-status12-vendor-err-129_issue-quotes.txt",
                        "nccl_network")
    assert [(item["peer"], item["ib_status"], item["vendor_error"]) for item in ib] == [
        ("10.216.210.236", 12, 129), ("172.36.143.59", 12, 129), ("fe80::966d:ae03:8b:df50%ib0", 4, 81)]
    resource = _block_details(corpus, "nccl-resource-failures_cuda-oom-init-error-shm-ibv-create-cq_issue-quotes.txt",
                              "nccl_resource")
    assert [(item or {}).get("resource") for item in resource] == ["gpu_memory", None, "shm", "locked_memory"]


def test_an_nccl_cuda_failure_on_out_of_memory_is_a_resource_failure():
    text = ("torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1, unhandled cuda error, NCCL "
            "version 2.18.1\nncclUnhandledCudaError: Call to CUDA function failed.\nLast error:\n"
            "Cuda failure 'out of memory'\n")
    assert _kinds(text) == {"nccl_resource": 1}
    assert scan_log(text)["details"]["nccl_resource"]["resource"] == "gpu_memory"


def test_what_a_detail_keeps_of_host_text_is_bounded():
    text = "h:1:2 [0] net.cc:1 NCCL WARN Net : Connection closed by remote peer %s<1>\n" % ("p" * 1000)
    detail = scan_log(text)["details"]["nccl_network"]
    assert detail["peer"] == "p" * failure_detail.FIELD_LIMIT
