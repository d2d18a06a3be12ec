"""The facts' inputs (issue 31 section 4): each step's sources read, absent, failed or not supported, on a live
host as on a capture, so a clean host is told from one whose evidence was never looked at."""

from ansible_collections.gpufleet.core.plugins.module_utils import collector
from ansible_collections.gpufleet.core.plugins.module_utils.host_io import CommandResult
from ansible_collections.gpufleet.core.plugins.module_utils.input_ledger import InputLedger, command_source
from ansible_collections.gpufleet.core.plugins.plugin_utils.reports.coverage import host_inputs, unread_inputs


class Host:
    def __init__(self, files=None, commands=None):
        self.files = files or {}
        self.commands = commands or {}

    def now(self):
        return 1796585242.0

    def find_bin(self, name):
        return "/usr/bin/" + name if any(key.startswith(name) for key in self.commands) else None

    def read_text(self, path, limit=None):
        return self.files.get(path)

    def listdir(self, path):
        return None

    def run(self, argv, timeout):
        answer = self.commands.get(" ".join([argv[0].rsplit("/", 1)[-1]] + list(argv[1:])))
        return answer or CommandResult(None, "", "No such file", missing=True)


def test_each_step_says_what_it_read_and_what_was_absent():
    host = Host(files={"/proc/pressure/cpu": "some avg10=1.00 avg60=1.00 avg300=1.00 total=1\n"})
    facts, _recorded = collector.Collection(source="nvidia_smi", host=host,
                                            gather_subset=["driver", "host_pressure", "bmc"]).run()
    steps = dict((entry["input"], entry) for entry in facts["inputs"])
    assert steps["host_pressure"]["status"] == "read"
    assert steps["host_pressure"]["sources_read"] == 1
    assert {"source": "/proc/pressure/io", "status": "absent"} in steps["host_pressure"]["sources"]
    assert not [source for source in steps["host_pressure"]["sources"] if source["source"] == "/proc/pressure/cpu"]
    assert steps["bmc"]["status"] == "absent" and steps["driver"]["status"] == "absent"


def test_a_command_that_ran_and_failed_is_failed_not_absent():
    ledger = InputLedger(Host(commands={"ipmitool sel elist": CommandResult(1, "", "Could not open device")}))
    ledger.step = "bmc"
    ledger.run(["/usr/bin/ipmitool", "sel", "elist"], 5)
    ledger.run(["/usr/bin/ipmitool", "sdr", "elist"], 5)
    sources = [{"source": "ipmitool sdr elist", "status": "absent"}, {"source": "ipmitool sel elist", "status": "failed"}]
    assert ledger.summary(["bmc"]) == [{"input": "bmc", "status": "failed", "sources_read": 0, "sources_left_out": 0,
                                        "sources": sources}]


def test_a_source_is_named_without_its_window_or_process():
    assert command_source(["/bin/journalctl", "--unit=a.service", "--output=json", "--since=-72h", "--lines=20"]) == (
        "journalctl --unit=a.service --output=json")
    ledger = InputLedger(Host())
    ledger.step = "workload"
    ledger.read_text("/proc/4242/environ")
    assert ledger.summary(["workload"])[0]["sources"] == [{"source": "/proc/<pid>/environ", "status": "absent"}]


def test_a_step_lists_the_sources_it_could_not_read_and_counts_the_others():
    ledger = InputLedger(Host(files={"/a": "x", "/b": "y"}))
    ledger.step = "host"
    for path in ("/a", "/b", "/c"):
        ledger.read_text(path)
    assert ledger.summary(["host"]) == [{"input": "host", "status": "read", "sources_read": 2, "sources_left_out": 0,
                                         "sources": [{"source": "/c", "status": "absent"}]}]


def test_the_report_groups_a_hosts_steps_by_status_and_names_its_capture():
    facts = {"inputs": [{"input": "driver", "status": "read"}, {"input": "bmc", "status": "absent"},
                        {"input": "workload", "status": "not_supported"}, {"input": "kernel_log", "status": "failed"}],
             "capture": {"kind": "nvidia_bug_report", "path": "/tmp/r.log.gz", "clock_source": "x"}}
    inputs = host_inputs(facts)
    assert inputs == {"read": ["driver"], "failed": ["kernel_log"], "not_supported": ["workload"], "absent": ["bmc"],
                      "capture": {"kind": "nvidia_bug_report", "path": "/tmp/r.log.gz"}}
    assert unread_inputs({"inputs": inputs}) == ["kernel_log", "workload", "bmc"]
    assert host_inputs({"schema_version": "1.4"}) is None
