"""The kernel OOM killer's reports, in the layouts of kernels before and after 5.0, cgroup v1 and v2, global
and memcg, in every kernel log format the collector reads."""

import calendar

import pytest

from ansible_collections.gpufleet.core.plugins.module_utils.kernel_oom import (
    cgroup_unit, host_oom_record, oom_attribution, parse_oom_kills)

NOW = calendar.timegm((2026, 11, 30, 12, 0, 0))

# journalctl _TRANSPORT=kernel -o short-iso: a cgroup v2 memcg OOM of a systemd service (kernel 6.x)
MEMCG_V2 = "".join(line + "\n" for line in [
    ("2026-11-30T09:14:02+0000 gpu-07 kernel: python3 invoked oom-killer: gfp_mask=0xcc0(GFP_KERNEL), order=0,"
     " oom_score_adj=0"),
    "2026-11-30T09:14:02+0000 gpu-07 kernel: memory: usage 67108864kB, limit 67108864kB, failcnt 1532",
    ("2026-11-30T09:14:02+0000 gpu-07 kernel: [  pid  ]   uid  tgid total_vm      rss rss_anon rss_file rss_shmem "
     "pgtables_bytes swapents oom_score_adj name"),
    ("2026-11-30T09:14:02+0000 gpu-07 kernel: [  81234]   998 81234 19822311 16711234 16700001    11233         0 "
     "134844416        0             0 python3"),
    ("2026-11-30T09:14:02+0000 gpu-07 kernel: oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/,"
     "mems_allowed=0-1,oom_memcg=/system.slice/vllm.service,task_memcg=/system.slice/vllm.service,task=python3,"
     "pid=81234,uid=998"),
    ("2026-11-30T09:14:02+0000 gpu-07 kernel: Memory cgroup out of memory: Killed process 81234 (python3) "
     "total-vm:79289244kB, anon-rss:66800004kB, file-rss:44932kB, shmem-rss:0kB,"
     " UID:998 pgtables:131684kB oom_score_adj:0"),
    ("2026-11-30T09:14:03+0000 gpu-07 kernel: oom_reaper: reaped process 81234 (python3), now anon-rss:0kB,"
     " file-rss:0kB, shmem-rss:0kB"),
])

# dmesg --ctime: a global OOM that killed a process of trainer.service, and an old one outside the window
GLOBAL_CTIME = "".join(line + "\n" for line in [
    ("[Mon Nov 23 08:00:00 2026] Out of memory: Killed process 100 (old) total-vm:1kB, anon-rss:1kB, file-rss:0kB,"
     " shmem-rss:0kB"),
    ("[Mon Nov 30 11:02:41 2026] oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0,"
     "global_oom,task_memcg=/system.slice/trainer.service,task=pt_main_thread,pid=5512,uid=0"),
    ("[Mon Nov 30 11:02:41 2026] Out of memory: Killed process 5512 (pt_main_thread) total-vm:412009812kB,"
     " anon-rss:198877312kB, file-rss:0kB, shmem-rss:4kB, UID:0 pgtables:402112kB oom_score_adj:0"),
])

# kernel 3.x/4.x, cgroup v1: "Task in ... killed as a result of limit of ...", "Kill process ... or sacrifice child"
MEMCG_V1 = "".join(line + "\n" for line in [
    ("[ 9001.100001] Task in /system.slice/inference.service killed as a result of limit of "
     "/system.slice/inference.service"),
    "[ 9001.100002] memory: usage 2097152kB, limit 2097152kB, failcnt 71",
    "[ 9001.100010] Memory cgroup out of memory: Kill process 7321 (inference-worke) score 1012 or sacrifice child",
    "[ 9001.100011] Killed process 7321 (inference-worke) total-vm:4012344kB, anon-rss:2090000kB, file-rss:1200kB",
])


def test_a_cgroup_v2_memcg_kill_names_the_service_and_what_it_held():
    (event,) = parse_oom_kills(MEMCG_V2, now=NOW, window_seconds=72 * 3600)
    assert event == {"time": "2026-11-30T09:14:02Z", "pid": 81234, "process": "python3",
                     "cgroup": "/system.slice/vllm.service", "limit_cgroup": "/system.slice/vllm.service",
                     "constraint": "memcg", "anon_rss_kib": 66800004}
    assert cgroup_unit(event["cgroup"]) == "vllm.service"


def test_a_global_oom_in_the_window_and_not_before_it():
    (event,) = parse_oom_kills(GLOBAL_CTIME, now=NOW, window_seconds=72 * 3600)
    assert (event["pid"], event["constraint"], event["cgroup"], event["limit_cgroup"]) == (
        5512, "global", "/system.slice/trainer.service", None)
    assert len(parse_oom_kills(GLOBAL_CTIME, now=NOW)) == 2


def test_an_old_kernel_cgroup_v1_report_is_one_event():
    (event,) = parse_oom_kills(MEMCG_V1, now=NOW, boot_time=NOW - 10000)
    assert (event["pid"], event["process"], event["cgroup"], event["constraint"], event["anon_rss_kib"]) == (
        7321, "inference-worke", "/system.slice/inference.service", "memcg", 2090000)
    assert event["time"] == "2026-11-30T11:43:21.100010Z"


def test_lines_without_a_kill_give_nothing():
    text = "2026-11-30T09:14:02+0000 gpu-07 kernel: NVRM: Xid (PCI:0000:3b:00): 31, pid=1, name=x, Ch 0000001\n"
    assert parse_oom_kills(text + "garbage\x00\n\n", now=NOW) == []


@pytest.mark.parametrize("cgroup, unit", [
    ("/system.slice/vllm.service", "vllm.service"),
    ("/kubepods.slice/kubepods-pod1.slice/cri-containerd-4f1c.scope", "cri-containerd-4f1c.scope"),
    ("/docker/2e088fe462e2", None),
    (None, None),
])
def test_the_unit_of_a_cgroup(cgroup, unit):
    assert cgroup_unit(cgroup) == unit


@pytest.mark.parametrize("name, expected", [
    ("kernel-oom_global_gce-vm-ubuntu-3.13_cadvisor.txt", [(1532, "badsysprogram", "global", None, 1595164)]),
    ("kernel-oom_memcg-v1_hp-z420-ubuntu-3.13_cadvisor.txt", [(13536, "memorymonster", "memcg", "/mem2", 920)]),
    ("kernel-oom_memcg-docker_thinkpad-gentoo-4.8_kmsg_cadvisor.txt",
     [(1381, "gunpowder-memho", "memcg", "/docker/2e088fe462e25e60be1dafafe2c05c47bda1a97978648d10ad2b7484fc0b8f50",
       18624)]),
    ("syslog-journal_oom-killer-and-systemd-unit-killed_issue-quotes_part1.txt",
     [(50111, "main", "global", "/docker/d1dfb06deee8498945c4fa337c6ec6d8336755e2f7be147ec3ec9190bfe224cc", 197036),
      (401, "systemd-journal", "global", None, 1112),
      (265, "plymouthd", "global", "/system.slice/plymouth-start.service", 520)]),
])
def test_every_oom_report_of_the_corpus(corpus, name, expected):
    events = parse_oom_kills(corpus.read_realdata(name), now=NOW)
    assert [(e["pid"], e["process"], e["constraint"], e["cgroup"], e["anon_rss_kib"]) for e in events] == expected


# --- issue 31: other wordings, the child the kernel sacrificed, the memcg of a stats dump, attribution ------------

def test_the_rhel6_wording_with_uid_before_the_name():
    text = "Nov 30 10:00:00 h kernel: Out of memory: Killed process 123, UID 48, (httpd).\n"
    (event,) = parse_oom_kills(text, now=NOW)
    assert (event["pid"], event["process"], event["constraint"]) == (123, "httpd", "global")


def test_a_sacrificed_child_is_the_one_kill_not_two():
    text = ("[Thu Nov 26 00:05:15 2026] Memory cgroup out of memory: Kill process 24572 (java) score 0 or sacrifice "
            "child\n[Thu Nov 26 00:05:15 2026] Killed process 28438 (java-worker) total-vm:20255636kB, "
            "anon-rss:466160kB, file-rss:13684kB\n")
    (event,) = parse_oom_kills(text, now=NOW)
    assert (event["pid"], event["process"], event["constraint"], event["anon_rss_kib"]) == (
        28438, "java-worker", "memcg", 466160)


def test_the_cgroup_of_a_stats_dump_names_the_victims_and_a_new_report_forgets_it():
    text = ("[100.1] python3 invoked oom-killer: gfp_mask=0xcc0(GFP_KERNEL), order=0, oom_score_adj=-997\n"
            "[100.2] Memory cgroup stats for /kubepods.slice/kubepods-pod06d44939_d15e_491f_84a3_2dbba9fc0440.slice/"
            "cri-containerd-" + "a" * 64 + ".scope:\n"
            "[100.3] Memory cgroup out of memory: Killed process 140339 (python3) total-vm:120832kB, anon-rss:15596kB\n"
            "[200.1] bash invoked oom-killer: gfp_mask=0x0, order=0, oom_score_adj=0\n"
            "[200.2] Out of memory: Killed process 999 (bash) total-vm:1kB, anon-rss:1kB\n")
    first, second = parse_oom_kills(text, now=NOW)
    assert first["cgroup"].endswith("cri-containerd-" + "a" * 64 + ".scope") and first["constraint"] == "memcg"
    assert (second["pid"], second["cgroup"], second["constraint"]) == (999, None, "global")


@pytest.mark.parametrize("cgroup, expected", [
    ("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-podeded8c65_6e8e_4c6e_a889_3e427565c740.slice/"
     "cri-containerd-" + "e" * 64 + ".scope",
     {"unit": None, "pod_uid": "eded8c65-6e8e-4c6e-a889-3e427565c740", "container_id": "e" * 64}),
    ("/kubepods/pod95387fa4-da9c-11e7-9d36-5254b24cbf5e/" + "6" * 64,
     {"unit": None, "pod_uid": "95387fa4-da9c-11e7-9d36-5254b24cbf5e", "container_id": "6" * 64}),
    ("/system.slice/docker-" + "d" * 64 + ".scope", {"unit": None, "pod_uid": None, "container_id": "d" * 64}),
    ("/system.slice/vllm.service", {"unit": "vllm.service", "pod_uid": None, "container_id": None}),
    ("/mem2", {"unit": None, "pod_uid": None, "container_id": None}),
    (None, {"unit": None, "pod_uid": None, "container_id": None}),
])
def test_what_a_cgroup_path_says_of_its_process(cgroup, expected):
    assert oom_attribution(cgroup) == expected


def test_the_host_record_counts_every_kill_and_keeps_the_first_and_last():
    events = [{"pid": pid, "process": "p%d" % pid, "cgroup": None, "limit_cgroup": None,
               "constraint": "global" if pid % 2 else "memcg", "time": None, "anon_rss_kib": None}
              for pid in range(1, 15)]
    record = host_oom_record(events)
    assert (record["count"], record["global"]) == (14, 7)
    assert [event["pid"] for event in record["events"]] == list(range(1, 10)) + [14]
    assert record["events"][0]["unit"] is None


@pytest.mark.corpus
@pytest.mark.parametrize("name, expected", [
    ("kernel-oom-memcg-kubernetes-pods_cgroup-v1-and-v2_issue-quotes.txt",
     [(461754, "pt_main_thread", "memcg", "eded8c65-6e8e-4c6e-a889-3e427565c740", "ec9ee26695de"),
      (140339, "python3", "memcg", "06d44939-d15e-491f-84a3-2dbba9fc0440", "f6b09caae6cf"),
      (141313, "mount", "memcg", "06d44939-d15e-491f-84a3-2dbba9fc0440", "f6b09caae6cf"),
      (141314, "mount", "memcg", "06d44939-d15e-491f-84a3-2dbba9fc0440", "f6b09caae6cf"),
      (28438, "java", "memcg", "95387fa4-da9c-11e7-9d36-5254b24cbf5e", "6895a3e13439")]),
    ("dmesg-decode-iso_xid13-43-and-oom-kill-variants_gpud.log",
     [(123, "httpd", "global", None, None), (456, "python", "global", None, None),
      (863987, "node", "memcg", "a8697f49-441d-4d4f-90d2-6d8e1fa3bbe7", "3fc28fa1c647")]),
    ("kernel-oom_global-sysrq-f-with-oom-kill-line_qemu-ubuntu-5.4_kernlog_hotsos.txt",
     [(955, "gnome-shell", "global", None, None)]),
])
def test_every_kill_of_the_corpus_is_counted_on_the_host_and_attributed(corpus, name, expected):
    record = host_oom_record(parse_oom_kills(corpus.read_realdata(name), now=NOW))
    assert [(e["pid"], e["process"], e["constraint"], e["pod_uid"], (e["container_id"] or "")[:12] or None)
            for e in record["events"]] == expected
    assert record["count"] == len(expected)
