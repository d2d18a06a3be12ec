"""A GPU service's journal (journalctl -o json): failures counted by kind, first and last line kept, and the
MESSAGE forms journald writes (string, byte array, several values, null, old invalid escapes)."""

import json

import pytest

from ansible_collections.gpufleet.core.plugins.module_utils import journal_scan
from ansible_collections.gpufleet.core.plugins.module_utils.journal_scan import (
    classify, iter_entries, message_text, repair_escapes, scan_journal)

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
    counts = dict((kind, match["count"]) for kind, match in scan["matches"].items())
    assert counts == {"cuda_oom": 2, "illegal_memory_access": 1, "nccl_timeout": 2, "nccl_error": 1,
                      "python_traceback": 2, "oom_killed": 0}
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
