"""Every failure a GPU service's journal records gets a verdict in its layer (issue 31 section 3): out of memory
in the workload layer with an action that follows the evidence, CUDA stack mismatches in the driver layer naming
both versions, uncorrectable ECC and NCCL network failures in the hardware layer, the job's own failures in the
workload layer; and each corpus file of framework failures comes out with the INDEX's severity."""

import pytest

from ansible_collections.gpufleet.core.plugins.module_utils import journal_scan
from ansible_collections.gpufleet.core.plugins.plugin_utils.rules.workload import oom_reading
from tests.support.rule_builders import findings_of, only
from tests.unit.plugins.plugin_utils.rules.test_workload_health import node_with, process_on, running, share_gpu0


def journal_of(text):
    """A service's journal record as workload_facts makes it, of these log lines."""
    record = journal_scan.scan_log(text)
    record.update(status="read", reason=None, truncated=False)
    return record


def service_logging(text, **changes):
    service = running(**changes)
    service["journal"] = journal_of(text)
    return service


SINGLE_OOM = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity "
              "of 79.10 GiB of which 1.06 GiB is free. Including non-PyTorch memory, this process has 78.00 GiB memory "
              "in use. Of the allocated memory 76.00 GiB is allocated by PyTorch, and 1.00 GiB is reserved by PyTorch "
              "but unallocated.")
FRAGMENTED_OOM = ("RuntimeError: CUDA out of memory. Tried to allocate 2.87 GiB (GPU 0; 79.10 GiB total capacity; "
                  "30.00 GiB already allocated; 19.75 MiB free; 70.00 GiB reserved in total by PyTorch)")
NEIGHBOUR_OOM = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 572.00 MiB. GPU 0 has a total "
                 "capacity of 39.49 GiB of which 321.31 MiB is free. Process 3721648 has 414.00 MiB memory in use. "
                 "Including non-PyTorch memory, this process has 37.46 GiB memory in use.")


# ---------------------------------------------------------------- out of memory: the action follows the evidence

def test_an_oom_of_one_process_points_at_model_batch_and_input_size():
    facts = node_with(service_logging(SINGLE_OOM, processes=[process_on(0, 40210)]))
    finding = only(facts, "workload.out_of_memory")
    assert (finding["layer"], finding["severity"], finding["gpu"]) == ("workload", "warning", "0000:18:00.0")
    assert finding["evidence"]["points_at"] == ["model_size", "batch_or_input_size"]
    assert finding["evidence"]["message_says"]["allocated_mib"] == 77824.0
    assert "batch size" in finding["action"] and "worker" not in finding["action"]
    assert "ran out of GPU memory in the window (1 pytorch out-of-memory errors)" in finding["summary"]
    assert findings_of(facts, "workload.oom_shared_gpu") == []


def test_an_oom_with_nothing_known_of_its_gpus_is_still_a_finding():
    text = "ResourceExhaustedError: OOM when allocating tensor with shape[64,2016,9,9] and type float on /device:GPU:0"
    finding = only(node_with(service_logging(text, processes=[])), "workload.out_of_memory")
    assert finding["gpu"] is None and finding["evidence"]["processes"] == 0
    assert finding["evidence"]["message_says"] == {"framework": "tensorflow"}


def test_an_oom_whose_message_names_the_gpu_is_placed_there_when_nothing_else_is_known():
    finding = only(node_with(service_logging(SINGLE_OOM, processes=[])), "workload.out_of_memory")
    assert finding["gpu"] == "0000:18:00.0"


def test_reserved_far_above_allocated_points_at_the_allocator_reserve():
    finding = only(node_with(service_logging(FRAGMENTED_OOM, processes=[process_on(0, 40210)])),
                   "workload.out_of_memory")
    assert "allocator_reserve" in finding["evidence"]["points_at"]
    assert "expandable_segments" in finding["action"] and "71680 MiB" in finding["action"]


def test_other_processes_the_message_names_point_at_worker_count():
    finding = only(node_with(service_logging(NEIGHBOUR_OOM, processes=[process_on(0, 40210)])),
                   "workload.out_of_memory")
    assert finding["evidence"]["points_at"] == ["worker_count", "model_copies"]
    assert "2 processes held memory" in finding["action"]


def test_several_processes_on_the_gpu_is_the_shared_rule_with_the_same_reading():
    facts = share_gpu0(node_with(service_logging(FRAGMENTED_OOM)))
    finding = only(facts, "workload.oom_shared_gpu")
    assert finding["evidence"]["points_at"] == ["worker_count", "model_copies", "allocator_reserve"]
    assert "fewer workers per GPU" in finding["action"]
    assert findings_of(facts, "workload.out_of_memory") == []


def test_a_kernel_oom_kill_alone_is_left_to_the_kernel_log_rule():
    """Host memory, not GPU memory: workload.kernel_oom_kill judges the kills the kernel log names."""
    service = running(processes=[process_on(0, 40210)])
    service["oom_kills"] = {"count": 1, "events": [], "read": True}
    assert findings_of(node_with(service), "workload.out_of_memory") == []


def test_a_gpu_oom_with_kernel_kills_counts_both():
    service = service_logging(SINGLE_OOM, processes=[process_on(0, 40210)])
    service["oom_kills"] = {"count": 2, "events": [], "read": True}
    finding = only(node_with(service), "workload.out_of_memory")
    assert (finding["evidence"]["cuda_oom"], finding["evidence"]["kernel_oom_kills"]) == (1, 2)


def test_systemds_note_of_an_oom_kill_the_kernel_log_does_not_name_is_host_memory():
    service = running(processes=[process_on(0, 40210)])
    line = {"time": None, "pid": 1, "message": "vllm.service: Failed with result 'oom-kill'."}
    service["journal"]["matches"]["oom_killed"] = {"count": 2, "first": line, "last": line}
    finding = only(node_with(service), "workload.out_of_memory")
    assert finding["evidence"]["kernel_oom_kills"] == 2 and finding["evidence"]["points_at"] == ["host_memory"]
    assert "MemoryMax" in finding["action"] and finding["gpu"] is None


def test_a_single_allocation_larger_than_the_gpu_says_no_allocator_setting_helps():
    points_at, action = oom_reading(1, {"requested_mib": 56903.68, "total_mib": 12288.0})
    assert points_at == ["model_size", "batch_or_input_size"] and "more than the GPU's 12288 MiB" in action


def test_a_vllm_kv_cache_too_small_points_at_its_configuration():
    points_at, action = oom_reading(1, {"framework": "vllm", "kv_cache_needed_mib": 24576.0,
                                        "kv_cache_available_mib": 10209.28})
    assert points_at[0] == "kv_cache_config" and "max_model_len" in action


def test_no_oom_no_out_of_memory_finding():
    assert findings_of(node_with(running(processes=[process_on(0, 40210)])), "workload.out_of_memory") == []


# ---------------------------------------------------------------- CUDA stack mismatches: the driver layer

def test_a_cudnn_mismatch_names_both_versions():
    facts = node_with(service_logging(
        "E external/local_xla/xla/stream_executor/cuda/cuda_dnn.cc:447] Loaded runtime CuDNN library: 8.7.0 but "
        "source was compiled with: 8.9.4.  CuDNN library needs to have matching major version"))
    finding = only(facts, "driver.cuda_stack_mismatch")
    assert (finding["layer"], finding["severity"]) == ("driver", "warning")
    assert "cuDNN 8.7.0" in finding["summary"] and "cuDNN 8.9.4" in finding["summary"]
    assert "LD_LIBRARY_PATH" in finding["action"]


def test_a_driver_too_old_names_the_driver_and_the_services_cuda_runtime():
    facts = node_with(service_logging("RuntimeError: CUDA error: CUDA driver version is insufficient for CUDA "
                                      "runtime version"), driver="470.82.01")
    facts["driver"]["cuda_driver_version"] = "11.4"
    finding = only(facts, "driver.cuda_stack_mismatch")
    assert "470.82.01" in finding["summary"] and "CUDA 11.4" in finding["summary"]
    assert "CUDA 12.4" in finding["summary"]  # the service's torch 2.5.1+cu124
    assert "Upgrade the driver to 550.54.14 or newer" in finding["action"]  # CUDA 12.4's minimum


def test_forward_compatibility_on_a_gpu_without_it():
    facts = node_with(service_logging("RuntimeError: Unexpected error from cudaGetDeviceCount(). Error 804: forward "
                                      "compatibility was attempted on non supported HW"), driver="470.141.03")
    finding = only(facts, "driver.cuda_stack_mismatch")
    assert "470.141.03" in finding["summary"] and "cuda-compat" in finding["action"]


# ---------------------------------------------------------------- the hardware layer

def test_an_uncorrectable_ecc_error_in_the_job_is_critical_hardware_once():
    text = ("RuntimeError: CUDA error: uncorrectable ECC error encountered\n[E ProcessGroupNCCL.cpp:916] [Rank 1] NCCL "
            "watchdog thread terminated with exception: CUDA error: uncorrectable ECC error encountered\n")
    finding = only(node_with(service_logging(text, processes=[process_on(1, 40210)])), "hardware.cuda_ecc_reported")
    assert (finding["layer"], finding["severity"], finding["evidence"]["gpus"]) == ("hardware", "critical", [1])
    assert finding["evidence"]["count"] == 2


def test_an_ib_completion_error_is_critical_and_names_the_peer():
    text = ("kp-ddp-worker-0:3468:3905 [4] ib_plugin.c:1615 NCCL WARN NET/IB : Got completion from peer "
            "10.216.210.236<54862> with status=12 opcode=0 len=0 vendor err 129 (Recv)\n")
    finding = only(node_with(service_logging(text)), "hardware.nccl_network")
    assert (finding["layer"], finding["severity"], finding["evidence"]["peer"]) == (
        "hardware", "critical", "10.216.210.236")
    assert "10.216.210.236" in finding["summary"] and "kp-ddp-worker-0" in finding["summary"]


def test_a_peer_that_went_away_is_a_warning_naming_its_host():
    text = ("node-3:183006:183181 [1] misc/socket.cc:538 NCCL WARN Net : Connection closed by remote peer "
            "gpu-node-7.cluster<47861>\n")
    finding = only(node_with(service_logging(text)), "hardware.nccl_network")
    assert finding["severity"] == "warning" and "gpu-node-7.cluster" in finding["action"]


# ---------------------------------------------------------------- the job's own failures

@pytest.mark.parametrize("line, severity", [
    ("RuntimeError: CUDA error: CUDA-capable device(s) is/are busy or unavailable", "warning"),
    ("RuntimeError: CUDA error: no kernel image is available for execution on the device", "warning"),
    ("RuntimeError: CUDA error: device-side assert triggered", "info"),
    ("RuntimeError: CUDA error: an illegal memory access was encountered", "warning"),
    ("h:1:2 [3] misc/shmutils.cc:112 NCCL WARN Error while creating shared memory segment /dev/shm/nccl-x", "warning"),
    ("[Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE)", "warning"),
    ("RuntimeError: NCCL error in: DataChannelNccl.cpp:324, unhandled system error", "warning"),
    ("Traceback (most recent call last):", "info"),
])
def test_each_runtime_failure_has_its_verdict(line, severity):
    finding = only(node_with(service_logging(line)), "workload.runtime_failure")
    assert (finding["layer"], finding["severity"]) == ("workload", severity)


def test_no_kernel_image_names_the_gpu_arch_and_the_build():
    text = ("NVIDIA GeForce RTX 3090 with CUDA capability sm_86 is not compatible with the current PyTorch "
            "installation.\nThe current PyTorch install supports CUDA capabilities sm_37 sm_50 sm_60 sm_70.\n")
    finding = only(node_with(service_logging(text)), "workload.runtime_failure")
    assert "sm_86, the build has sm_37 sm_50 sm_60 sm_70" in finding["summary"]


def test_a_clean_journal_has_no_journal_verdict():
    facts = node_with(service_logging("INFO: serving\nINFO: 200 OK\n", processes=[process_on(0, 40210)]))
    rules = {finding["rule"] for finding in findings_of(facts)}
    assert not rules & set(JOURNAL_RULES)


# ---------------------------------------------------------------- the corpus: each file with the INDEX's verdict

JOURNAL_RULES = ("workload.out_of_memory", "workload.oom_shared_gpu", "workload.runtime_failure",
                 "driver.cuda_stack_mismatch", "hardware.cuda_ecc_reported", "hardware.nccl_network")
# file -> (the worst severity the INDEX gives, the rules that must speak)
CORPUS_VERDICTS = {
    "cuda-device-side-assert_index-and-loss-assertions_issue-quotes.txt": ("info", {"workload.runtime_failure"}),
    "cuda-error35-driver-insufficient_pytorch-onnxruntime-ctranslate2-bandwidthtest_issue-quotes.txt":
        ("warning", {"driver.cuda_stack_mismatch"}),
    "cuda-error46-devices-busy-or-unavailable_llamacpp-pytorch-caffe_issue-quotes.txt":
        ("warning", {"workload.runtime_failure"}),
    "cuda-error804-forward-compat-unsupported_torch-warning-and-vllm-engine_issue-quotes.txt":
        ("warning", {"driver.cuda_stack_mismatch"}),
    "cuda-no-kernel-image-sm-arch-not-in-build_pytorch_issue-quotes.txt": ("warning", {"workload.runtime_failure"}),
    "cuda-runtime-errors_cublas-alloc-failed_illegal-memory-access_issue-quotes_part1.txt":
        ("warning", {"workload.out_of_memory", "workload.runtime_failure"}),
    "cuda-uncorrectable-ecc-error_pytorch-runtime-and-nccl-watchdog_issue-quotes.txt":
        ("critical", {"hardware.cuda_ecc_reported"}),
    "cudnn-version-mismatch_pytorch-caffe2-compiled-vs-runtime_issue-quotes.txt":
        ("warning", {"driver.cuda_stack_mismatch"}),
    "cudnn-version-mismatch_tensorflow-xla-loaded-runtime-vs-compiled_issue-quotes.txt":
        ("warning", {"driver.cuda_stack_mismatch"}),
    "deepspeed-training-cuda-oom_zero3-ddp-init-mii_issue-quotes.txt": ("warning", {"workload.out_of_memory"}),
    "jax-xla-gpu-oom_resource-exhausted-and-cuda-error-out-of-memory_issue-quotes.txt":
        ("warning", {"workload.out_of_memory"}),
    "tensorflow-gpu-oom_resourceexhausted-and-bfc-allocator_issue-quotes.txt": ("warning", {"workload.out_of_memory"}),
    "tensorrt-llm-engine-build-gpu-oom_trt-error-code-2_issue-quotes.txt": ("warning", {"workload.out_of_memory"}),
    "triton-inference-server-model-load-gpu-failures_oom-cuda-init-stream_issue-quotes.txt":
        ("warning", {"workload.out_of_memory", "driver.cuda_stack_mismatch"}),
    "vllm-kv-cache-insufficient-memory_v0-and-v1-engine-logs_issue-quotes.txt": ("warning", {"workload.out_of_memory"}),
    "nccl-net-ib-completion-error-status12-vendor-err-129_issue-quotes.txt": ("critical", {"hardware.nccl_network"}),
    # the INDEX: warning by itself, critical with a fabric signal; the stanford_alpaca block carries one (NET/IB
    # completion error 12, vendor err 129): see the block test below
    "nccl-remote-process-exited-network-error-and-system-error_torch-distbackenderror_issue-quotes.txt":
        ("critical", {"hardware.nccl_network", "workload.runtime_failure"}),
    "nccl-resource-failures_cuda-oom-init-error-shm-ibv-create-cq_issue-quotes.txt":
        ("warning", {"workload.runtime_failure"}),
    "nccl-watchdog-timeout_processgroupnccl_issue-quotes_part1.txt": ("warning", {"workload.runtime_failure"}),
    "pytorch-cuda-oom_messages-by-version_issue-quotes_part1.txt": ("warning", {"workload.out_of_memory"}),
    "pytorch-cuda-oom_messages-by-version_issue-quotes_part2.txt": ("warning", {"workload.out_of_memory"}),
}
RANK = {"info": 1, "warning": 2, "critical": 3}


def quoted_lines(text):
    """The quoted lines of a quotes file: our own '#' comments and '## ' headers left out."""
    return "\n".join(line for line in text.splitlines() if not line.startswith("#"))


@pytest.mark.corpus
@pytest.mark.parametrize("name", sorted(CORPUS_VERDICTS))
def test_each_corpus_file_gets_the_index_verdict(corpus, name):
    """The file as one service's log on a healthy node with its process alone on GPU 0: the rules that must speak
    do, in their layer, and the worst severity of the journal's verdicts is the INDEX's."""
    facts = node_with(service_logging(quoted_lines(corpus.read_realdata(name)), processes=[process_on(0, 40210)]))
    found = [finding for finding in findings_of(facts) if finding["rule"] in JOURNAL_RULES]
    severity, rules = CORPUS_VERDICTS[name]
    assert rules <= {finding["rule"] for finding in found}
    assert max(RANK[finding["severity"]] for finding in found) == RANK[severity]


@pytest.mark.corpus
def test_remote_exits_are_warnings_unless_the_block_carries_an_ib_completion_error(corpus):
    text = corpus.read_realdata(
        "nccl-remote-process-exited-network-error-and-system-error_torch-distbackenderror_issue-quotes.txt")
    verdicts = {}
    for block in text.split("\n## ")[1:]:
        header, _sep, lines = block.partition("\n")
        facts = node_with(service_logging(lines, processes=[process_on(0, 40210)]))
        found = [finding for finding in findings_of(facts) if finding["rule"] in JOURNAL_RULES]
        verdicts[header.split(" ", 1)[0]] = max((finding["severity"] for finding in found), key=RANK.get)
    assert verdicts == {"NVIDIA/nccl#2076": "warning", "tatsu-lab/stanford_alpaca#207": "critical",
                        "NVIDIA/nccl#795": "warning", "NVIDIA/nccl#1514": "warning", "zai-org/CogVLM2#178": "warning",
                        "pytorch/pytorch#4921": "warning"}
