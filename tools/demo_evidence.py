"""What two demo hosts answer to the incident evidence collector (gpufleet.core.gpu_evidence).

tools/make_demo_fleet.py runs the real collector (module_utils/evidence.py) against IncidentHost, which
answers the evidence commands from a story below, and keeps in the fixture exactly what it asked for, as it
does for gpu_facts. The other demo hosts have no story: there the replay answers "not recorded", and the
manifest says so.

- gpu-h100-xid79-02: the BMC logs a power supply losing its input 9 s before GPU 5 falls off the bus
  (Xid 79); nvidia-smi cannot reach the lost GPU; the fabric manager fails and systemd restarts it.
- gpu-l40s-crowded-10: one of the 12 inference workers on GPU 0 runs out of memory, the kernel's OOM
  killer kills it in the service's cgroup, systemd restarts inference.service.

Every value is simulated, in the formats the real programs print.
"""

import calendar
import json
import re
import time

from ansible_collections.gpufleet.core.plugins.module_utils.host_io import CommandResult

BOOT_ID = "5d1c0f3ab6e94f3c9a0e2b7c4d8e1f20"
PREVIOUS_BOOT_ID = "9a8b7c6d5e4f40312233445566778899"
# message ids of systemd's catalog (systemd/sd-messages.h)
STARTED = "39f53479d3a045ac8e11786248231fbf"
PROCESS_EXITED = "98e322203f7a4ed290d09fe03c09fe15"
UNIT_RESULT = "d9b373ed55a64feb8242e02dbe79a49c"
RESTART_SCHEDULED = "5eb03494b6584870a536b337290809b3"
OUT_OF_MEMORY = "fe6faa94e7774663a0da52717891d8ef"


def epoch(stamp):
    """'2026-11-29T21:14:07' (UTC) -> epoch seconds."""
    return calendar.timegm(tuple(int(part) for part in re.split(r"[-T:]", stamp)) + (0, 0, 0))


def systemd_record(stamp, unit, message, message_id=None, **fields):
    """One record from PID 1 about a unit."""
    record = {"MESSAGE": message, "UNIT": unit, "_PID": "1", "_COMM": "systemd", "SYSLOG_IDENTIFIER": "systemd",
              "PRIORITY": "6", "_SYSTEMD_UNIT": "init.scope"}
    if message_id:
        record["MESSAGE_ID"] = message_id
    record.update(fields)
    return stamp, record


def service_record(stamp, unit, pid, comm, message, priority="3"):
    """One line a service wrote to its stdout/stderr."""
    return stamp, {"MESSAGE": message, "_SYSTEMD_UNIT": unit, "_PID": str(pid), "_COMM": comm,
                   "SYSLOG_IDENTIFIER": comm, "PRIORITY": priority}


def restart_sequence(stamp_exit, stamp_restart, unit, description, result, code, status, counter):
    return [
        systemd_record(stamp_exit, unit, "%s: Main process exited, code=%s, status=%s" % (unit, code, status),
                       PROCESS_EXITED, EXIT_CODE=code, EXIT_STATUS=status.split("/")[0]),
        systemd_record(stamp_exit, unit, "%s: Failed with result '%s'." % (unit, result), UNIT_RESULT,
                       UNIT_RESULT=result),
        systemd_record(stamp_restart, unit, "%s: Scheduled restart job, restart counter is at %d." % (unit, counter),
                       RESTART_SCHEDULED, N_RESTARTS=str(counter)),
        systemd_record(stamp_restart, unit, "Started %s." % description, STARTED, JOB_TYPE="start", JOB_RESULT="done"),
    ]


FABRIC_MANAGER_UNIT = """# /lib/systemd/system/nvidia-fabricmanager.service
[Unit]
Description=NVIDIA fabric manager service

[Service]
User=root
PrivateTmp=false
Type=forking
ExecStart=/usr/bin/nv-fabricmanager -c /usr/share/nvidia/nvswitch/fabricmanager.cfg
LimitCORE=infinity
Restart=on-failure

[Install]
WantedBy=multi-user.target
"""

INFERENCE_UNIT = """# /etc/systemd/system/inference.service
[Unit]
Description=Inference workers
After=network-online.target

[Service]
User=inference
Environment=WORKERS=12 MODEL=/srv/models/llama-3-8b
Environment="HF_TOKEN=hf_demo0not0a0real0token0000000000"
ExecStart=/opt/conda/bin/python -m serve --workers ${WORKERS} --model ${MODEL}
MemoryMax=96G
Restart=always
RestartSec=5

[Install]
WantedBy=multi-user.target
"""

XID79_STORY = {
    "bmc": {
        "sel": [
            "   1 | 11/20/2026 | 07:58:12 | System Event #0x83 | Timestamp Clock Sync | Asserted",
            "   2 | 11/29/2026 | 21:13:58 | Power Supply #0x51 | Power Supply AC lost | Asserted",
            "   3 | 11/29/2026 | 21:13:58 | Power Unit #0x50 | Redundancy Lost | Asserted",
            "   4 | 11/29/2026 | 21:16:40 | Power Supply #0x51 | Power Supply AC lost | Deasserted",
            "   5 | 11/29/2026 | 21:16:41 | Power Unit #0x50 | Fully Redundant | Asserted",
        ],
        # the BMC's clock runs 4 s ahead of the host's
        "time": "11/30/2026 06:00:04",
        "sdr": [
            "PSU1 Status      | 51h | ok  | 10.1 | Presence detected",
            "PSU2 Status      | 52h | ok  | 10.2 | Presence detected",
            "Fan1A            | 30h | ok  | 29.1 | 9120 RPM",
            "Inlet Temp       | 04h | ok  |  7.1 | 24 degrees C",
        ],
    },
    "journal": restart_sequence("2026-11-29T21:14:09", "2026-11-29T21:14:19", "nvidia-fabricmanager.service",
                                "NVIDIA fabric manager service", "exit-code", "exited", "1/FAILURE", 1) + [
        service_record("2026-11-29T21:14:08", "nvidia-fabricmanager.service", 2210, "nv-fabricmanage",
                       "request to query NVSwitch device information from NVSwitch driver failed with error:"
                       " unspecified error"),
    ],
    "units": {"nvidia-fabricmanager.service": FABRIC_MANAGER_UNIT},
    "lost_gpu": "00000000:AB:00.0",
    "dpkg": [
        "2026-11-12 09:41:27 startup archives unpack",
        "2026-11-12 09:41:29 upgrade libnvidia-compute-550:amd64 550.54.15-0ubuntu1 550.90.07-0ubuntu1",
        "2026-11-12 09:41:31 upgrade nvidia-driver-550:amd64 550.54.15-0ubuntu1 550.90.07-0ubuntu1",
        "2026-11-29 11:02:44 upgrade tzdata:all 2024a-0ubuntu0.22.04 2024b-0ubuntu0.22.04",
    ],
    "boots": [(PREVIOUS_BOOT_ID, "2026-11-12T09:50:03", "2026-11-20T07:55:41"),
              (BOOT_ID, "2026-11-20T07:58:02", "2026-11-30T06:00:00")],
}

L40S_STORY = {
    "journal": [
        service_record("2026-11-30T03:41:09", "inference.service", 31007, "python",
                       "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
                       "capacity of 44.99 GiB of which 429.00 MiB is free."),
        systemd_record("2026-11-30T03:41:12", "inference.service",
                       "inference.service: A process of this unit has been killed by the OOM killer.", OUT_OF_MEMORY),
    ] + restart_sequence("2026-11-30T03:41:13", "2026-11-30T03:41:18", "inference.service", "Inference workers",
                         "oom-kill", "killed", "9/KILL", 3),
    "units": {"inference.service": INFERENCE_UNIT},
    "cgroup_unit": "inference.service",
    "dpkg": ["2026-11-29 14:05:10 install cuda-toolkit-12-4:amd64 <none> 12.4.1-1"],
    "boots": [(BOOT_ID, "2026-11-18T10:12:55", "2026-11-30T06:00:00")],
}

STORIES = {"gpu-h100-xid79-02": XID79_STORY, "gpu-l40s-crowded-10": L40S_STORY}


class IncidentHost:
    """A ReplayHost of a demo host that also answers the evidence commands from its story."""

    def __init__(self, inner, story, facts):
        self._inner = inner
        self._story = story
        self._facts = facts

    def now(self):
        return self._inner.now()

    def find_bin(self, name):
        extra = {"lspci": "/usr/bin/lspci"}
        if "bmc" in self._story:
            extra["ipmitool"] = "/usr/bin/ipmitool"
        return self._inner.find_bin(name) or extra.get(name)

    def read_text(self, path, limit=None):
        text = self._files().get(path)
        return text if text is not None else self._inner.read_text(path, limit)

    def listdir(self, path):
        return self._inner.listdir(path)

    def _files(self):
        files = {}
        if self._story.get("dpkg"):
            files["/var/log/dpkg.log"] = "\n".join(self._story["dpkg"]) + "\n"
        unit = self._story.get("cgroup_unit")
        if unit:
            for pid in gpu_pids(self._facts):
                files["/proc/%d/cgroup" % pid] = "0::/system.slice/%s\n" % unit
        return files

    def run(self, argv, timeout):
        name, arguments = argv[0].rsplit("/", 1)[-1], list(argv[1:])
        answer = self._answer(name, arguments)
        if answer is None:
            return self._inner.run(argv, timeout)
        rc, stdout = answer
        return CommandResult(rc, stdout, "" if rc == 0 else stdout)

    def _answer(self, name, arguments):
        if name == "nvidia-smi":
            return self._nvidia_smi(arguments)
        if name == "journalctl":
            return self._journalctl(arguments)
        if name == "systemctl" and arguments[:1] == ["cat"]:
            return self._systemctl_cat(arguments)
        if name == "systemctl" and arguments[:1] == ["show"]:
            return 0, "".join(systemctl_show_block(unit, self._story) for unit in unit_arguments(arguments))
        if name == "lspci":
            return 0, lspci_text(self._facts, arguments, (self._story.get("lost_gpu") or "")[4:].lower())
        if name == "ipmitool" and "bmc" in self._story:
            return self._ipmitool(arguments)
        return None

    def _nvidia_smi(self, arguments):
        lost = self._story.get("lost_gpu")
        if lost:
            return 15, "Unable to determine the device handle for GPU%s: Unknown Error\n" % lost
        if arguments == ["-q"]:
            return 0, nvidia_smi_q(self._facts)
        return 0, nvidia_smi_q_x(self._facts)

    def _journalctl(self, arguments):
        if "--list-boots" in arguments:
            return 0, list_boots(self._story["boots"])
        since, until = window_of(arguments)
        if "_TRANSPORT=kernel" in arguments:
            return 0, kernel_text(self._inner, since, until)
        records = [(stamp, record) for stamp, record in self._story.get("journal", ()) if since <= epoch(stamp) <= until]
        grep = next((a.split("=", 1)[1] for a in arguments if a.startswith("--grep=")), None)
        if grep:
            pattern = re.compile(grep, re.I)
            records = [(s, r) for s, r in records if pattern.search(r["MESSAGE"])]
            if not records:
                return 1, "-- No entries --\n"
        else:
            units = set(unit_arguments(arguments))
            records = [(s, r) for s, r in records if r.get("UNIT") in units or r.get("_SYSTEMD_UNIT") in units]
        return 0, journal_json(sorted(records, key=lambda pair: pair[0]))

    def _systemctl_cat(self, arguments):
        units = [unit for unit in arguments[1:] if not unit.startswith("-")]
        known = [self._story["units"][unit] for unit in units if unit in self._story.get("units", {})]
        missing = [unit for unit in units if unit not in self._story.get("units", {})]
        text = "\n".join(known)
        if missing:
            return 1, text + "".join("No files found for %s.\n" % unit for unit in missing)
        return 0, text

    def _ipmitool(self, arguments):
        bmc = self._story["bmc"]
        if arguments == ["sel", "elist"]:
            return 0, "\n".join(bmc["sel"]) + "\n"
        if arguments == ["sel", "time", "get"]:
            return 0, bmc["time"] + "\n"
        if arguments == ["sdr", "elist"]:
            return 0, "\n".join(bmc["sdr"]) + "\n"
        return None


def unit_arguments(arguments):
    units = []
    for position, argument in enumerate(arguments):
        if argument == "-u" and position + 1 < len(arguments):
            units.append(arguments[position + 1])
        elif argument.endswith(".service") and (position == 0 or arguments[position - 1] != "-u"):
            units.append(argument)
    return units


def window_of(arguments):
    since = next(float(a.split("@", 1)[1]) for a in arguments if a.startswith("--since=@"))
    until = next(float(a.split("@", 1)[1]) for a in arguments if a.startswith("--until=@"))
    return since, until


def gpu_pids(facts):
    """The pids the playbook passes to gpu_evidence (playbooks/tasks/incident.yml)."""
    return [process["pid"] for gpu in facts.get("gpus") or [] for process in gpu.get("processes") or []
            if isinstance(process.get("pid"), int)]


def kernel_text(inner, since, until):
    """The kernel lines the facts' journalctl read, in journalctl -o short-iso-precise --utc."""
    recorded = next(result for key, result in inner_commands(inner).items() if key.startswith("journalctl _TRANSPORT"))
    lines = []
    for line in recorded["stdout"].splitlines():
        stamp, rest = line.split(" ", 1)
        moment = epoch(stamp[:19])
        if since <= moment <= until:
            lines.append("%s.000000+00:00 %s" % (stamp[:19], rest))
    return "\n".join(lines) + "\n" if lines else "-- No entries --\n"


def inner_commands(inner):
    return inner._fixture.get("commands", {})  # pylint: disable=protected-access


def journal_json(records):
    lines = []
    for position, (stamp, record) in enumerate(records):
        entry = dict(record)
        entry["__REALTIME_TIMESTAMP"] = str(epoch(stamp) * 1000000)
        entry["__CURSOR"] = "s=%s;i=%x" % (BOOT_ID[:16], 0x4000 + position)
        entry["_BOOT_ID"] = BOOT_ID
        lines.append(json.dumps(entry, sort_keys=True))
    return "\n".join(lines) + "\n" if lines else ""


def list_boots(boots):
    rows = ["IDX BOOT ID                          FIRST ENTRY                 LAST ENTRY"]
    for index, (boot_id, first, last) in enumerate(boots):
        rows.append("%3d %s %s %s" % (index - len(boots) + 1, boot_id, utc_day(first), utc_day(last)))
    return "\n".join(rows) + "\n"


def utc_day(stamp):
    return time.strftime("%a %Y-%m-%d %H:%M:%S UTC", time.gmtime(epoch(stamp)))


def systemctl_show_block(unit, story):
    restarts = sum(1 for _s, record in story.get("journal", ()) if record.get("UNIT") == unit
                   and record.get("MESSAGE_ID") == RESTART_SCHEDULED)
    known = unit in story.get("units", {})
    return ("Id=%s\nLoadState=%s\nActiveState=%s\nSubState=%s\nResult=success\nNRestarts=%d\n\n"
            % (unit, "loaded" if known else "not-found", "active" if known else "inactive",
               "running" if known else "dead", restarts))


def nvidia_smi_q(facts):
    driver = facts.get("driver") or {}
    lines = ["", "==============NVSMI LOG==============", "",
             "Driver Version                            : %s" % driver.get("version"),
             "CUDA Version                              : %s" % driver.get("cuda_driver_version"), "",
             "Attached GPUs                             : %d" % len(facts.get("gpus") or [])]
    for gpu in facts.get("gpus") or []:
        lines += ["GPU %s" % gpu.get("pci_bus_id", "").upper().replace("0000:", "00000000:", 1),
                  "    Product Name                          : %s" % gpu.get("name"),
                  "    MIG Mode",
                  "        Current                           : N/A",
                  "        Pending                           : N/A",
                  "    GPU UUID                              : %s" % gpu.get("uuid")]
    return "\n".join(lines) + "\n"


def nvidia_smi_q_x(facts):
    driver = facts.get("driver") or {}
    gpus = "".join('<gpu id="%s"><product_name>%s</product_name><uuid>%s</uuid></gpu>' % (
        gpu.get("pci_bus_id"), gpu.get("name"), gpu.get("uuid")) for gpu in facts.get("gpus") or [])
    count = len(facts.get("gpus") or [])
    return ('<?xml version="1.0" ?>\n<nvidia_smi_log><driver_version>%s</driver_version>'
            '<attached_gpus>%d</attached_gpus>%s</nvidia_smi_log>\n' % (driver.get("version"), count, gpus))


def lspci_text(facts, arguments, lost=""):
    """lspci of the GPUs and their switch ports; a GPU that fell off the bus reads as all ones (rev ff)."""
    buses = [gpu.get("pci_bus_id") for gpu in facts.get("gpus") or [] if gpu.get("pci_bus_id")]
    if arguments == ["-tv"]:
        return "-[0000:00]-+-00.0  Intel Corporation Device 09a2\n" + "".join(
            "           +-%s.0-[%s]----00.0  NVIDIA Corporation Device\n" % (bus[5:7], bus[5:7]) for bus in buses)
    if "::0604" in arguments:
        return "".join(
            "%s:%s.0 PCI bridge: Broadcom / LSI PEX890xx PCIe Gen 5 Switch (rev b0) (prog-if 00 [Normal decode])\n"
            "\tLnkSta:\tSpeed 32GT/s, Width x16\n\tCapabilities: [100 v2] Advanced Error Reporting\n"
            "\t\tUESta:\tDLP- SDES- TLP- FCP- CmpltTO- CmpltAbrt- UnxCmplt- RxOF- MalfTLP- ECRC- UnsupReq- ACSViol-\n\n"
            % (bus[5:7], "00") for bus in buses)
    return "".join(
        ("%s 3D controller: NVIDIA Corporation Device (rev ff) (prog-if ff)\n\t!!! Unknown header type 7f\n"
         "\tKernel driver in use: nvidia\n\n" % bus[5:]) if bus == lost else
        ("%s 3D controller: NVIDIA Corporation Device (rev a1)\n\tSubsystem: NVIDIA Corporation Device\n"
         "\tLnkCap:\tPort #0, Speed 32GT/s, Width x16\n\tLnkSta:\tSpeed 32GT/s, Width x16\n"
         "\tKernel driver in use: nvidia\n\n" % bus[5:]) for bus in buses)
