"""A real IPMI endpoint for the tests: OpenIPMI's ipmi_sim (Debian package openipmi) on loopback, on a free UDP
port, with a BMC of this project's own making: SDRs for two fans (FAN2 below its lower critical threshold), an
inlet temperature above its upper non-critical threshold, a power sensor, two power supplies (PSU2 failed)
and a power-supply redundancy sensor (lost); its event log holds two records from before the clock was set
(Pre-Init) and, after `sel time set now`, the failure records of the last minutes.

    with IpmiSim(tmp_path) as bmc:
        bmc.ipmitool("sdr", "elist")   # the real ipmitool, -I lanplus, password from a 0600 file

Under `make test` (GPUFLEET_IPMI_SIM_REQUIRED=1, set by the Makefile) a missing ipmi_sim or ipmitool fails the
test; plain pytest skips it with the reason.
"""

import os
import shutil
import socket
import subprocess
import time

import pytest

REQUIRED_ENV = "GPUFLEET_IPMI_SIM_REQUIRED"
USER = "gpufleet-audit"
# a password no other text of a run contains, so a test can grep every output for it
PASSWORD = "Vq7-ipmiS3cr9Lwx"  # ipmi_sim takes at most 16 characters
START_SECONDS = 20
# ipmitool asks a BMC for its cipher suites first; ipmi_sim does not answer that query, so name the suite
CIPHER_SUITE = 3

BMC_ADDRESS = 0x20
FAN1, FAN2, INLET, POWER, PSU1, PSU2, PS_REDUNDANCY = 0x10, 0x11, 0x20, 0x30, 0x40, 0x41, 0x42
# sensor types and event/reading types (IPMI 2.0 tables 42-3 and 42-1)
TEMPERATURE, CURRENT, FAN, POWER_SUPPLY = 0x01, 0x03, 0x04, 0x08
THRESHOLD, REDUNDANCY, SENSOR_SPECIFIC = 0x01, 0x0B, 0x6F
# units (table 43-15)
DEGREES_C, WATTS, RPM = 1, 6, 18


def require_tools():
    """Skips (plain pytest) or fails (make test) when ipmi_sim or ipmitool is missing."""
    missing = [name for name in ("ipmi_sim", "ipmitool") if shutil.which(name) is None]
    if not missing:
        return
    reason = "%s not installed (Debian packages openipmi and ipmitool; tools/ensure_system_packages.sh)" % \
        " and ".join(missing)
    if os.environ.get(REQUIRED_ENV, "") not in ("", "0"):
        pytest.fail("%s, and %s is set: the IPMI endpoint test must run" % (reason, REQUIRED_ENV), pytrace=False)
    pytest.skip(reason)


def free_udp_port():
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def full_sensor_record(record_id, number, sensor_type, unit, multiplier, name, thresholds, entity):
    """A Full Sensor Record (SDR type 01h) of a threshold sensor; thresholds: (unr, ucr, unc, lnr, lcr, lnc) raw."""
    body = [BMC_ADDRESS, 0, number, entity, 1, 0x7F, 0x68, sensor_type, THRESHOLD,
            0xFF, 0x0F, 0xFF, 0x0F, 0x3F, 0x3F,          # assertion, deassertion, readable/settable masks
            0x00, unit, 0, 0, multiplier, 0, 0, 0, 0, 0,  # units, linearization, M, B, accuracy, exponents
            0, 0, 0xFF, 0, 0xFF, 0]                       # flags, nominal, normal max/min, sensor max/min
    body += list(thresholds) + [0, 0, 0, 0, 0, 0xC0 | len(name)] + list(name.encode())
    return [record_id & 0xFF, record_id >> 8, 0x51, 0x01, len(body)] + body


def compact_sensor_record(record_id, number, sensor_type, reading_type, name, entity):
    """A Compact Sensor Record (SDR type 02h) of a discrete sensor."""
    body = [BMC_ADDRESS, 0, number, entity, 1, 0x67, 0x40, sensor_type, reading_type,
            0xFF, 0x7F, 0xFF, 0x7F, 0xFF, 0x7F, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xC0 | len(name)]
    body += list(name.encode())
    return [record_id & 0xFF, record_id >> 8, 0x51, 0x02, len(body)] + body


def hex_bytes(values):
    return " ".join("0x%02x" % value for value in values)


def sel_record(sensor_type, number, event_type, data):
    """sel_add of a system event record (type 02h): the simulator stamps it with its clock."""
    return "sel_add 0x%02x 0x02 0 0 0 0 0x%02x 0x00 0x04 0x%02x 0x%02x 0x%02x %s" % (
        BMC_ADDRESS, BMC_ADDRESS, sensor_type, number, event_type, hex_bytes(data))


PSU2_FAILURE = sel_record(POWER_SUPPLY, PSU2, SENSOR_SPECIFIC, [0x01, 0xFF, 0xFF])
REDUNDANCY_LOST = sel_record(POWER_SUPPLY, PS_REDUNDANCY, REDUNDANCY, [0x01, 0xFF, 0xFF])
FAN2_LOWER_CRITICAL = sel_record(FAN, FAN2, THRESHOLD, [0x52, 0x04, 0x05])


def emulation_commands():
    records = [
        full_sensor_record(1, FAN1, FAN, RPM, 100, "FAN1", (0, 0, 0, 2, 5, 10), 0x1D),
        full_sensor_record(2, FAN2, FAN, RPM, 100, "FAN2", (0, 0, 0, 2, 5, 10), 0x1D),
        full_sensor_record(3, INLET, TEMPERATURE, DEGREES_C, 1, "Inlet Temp", (50, 45, 40, 0, 0, 0), 0x37),
        full_sensor_record(4, POWER, CURRENT, WATTS, 10, "Pwr Consumption", (0xFF, 0xFE, 0xFD, 0, 0, 0), 0x15),
        compact_sensor_record(5, PSU1, POWER_SUPPLY, SENSOR_SPECIFIC, "PSU1 Status", 0x0A),
        compact_sensor_record(6, PSU2, POWER_SUPPLY, SENSOR_SPECIFIC, "PSU2 Status", 0x0A),
        compact_sensor_record(7, PS_REDUNDANCY, POWER_SUPPLY, REDUNDANCY, "PS Redundancy", 0x0A),
    ]
    lines = ["mc_setbmc 0x20", "mc_add 0x20 0 no-device-sdrs 0x23 9 8 0x9f 0x1291 0xf02 persist_sdr",
             "sel_enable 0x20 1000 0x0a"]
    lines += ["main_sdr_add 0x20 %s" % hex_bytes(record) for record in records]
    sensors = ((FAN1, FAN, THRESHOLD), (FAN2, FAN, THRESHOLD), (INLET, TEMPERATURE, THRESHOLD),
               (POWER, CURRENT, THRESHOLD), (PSU1, POWER_SUPPLY, SENSOR_SPECIFIC), (PSU2, POWER_SUPPLY, SENSOR_SPECIFIC),
               (PS_REDUNDANCY, POWER_SUPPLY, REDUNDANCY))
    lines += ["sensor_add 0x20 0 0x%02x 0x%02x 0x%02x" % sensor for sensor in sensors]
    lines += ["sensor_set_threshold 0x20 0 0x%02x settable 000111 0 0 0 2 5 10" % fan for fan in (FAN1, FAN2)]
    lines += ["sensor_set_threshold 0x20 0 0x%02x settable 111000 50 45 40 0 0 0" % INLET]
    lines += ["sensor_set_value 0x20 0 0x%02x %d 0" % pair for pair in ((FAN1, 60), (FAN2, 4), (INLET, 41), (POWER, 212))]
    lines += ["sensor_set_bit 0x20 0 0x%02x 0 1 0" % PSU1, "sensor_set_bit 0x20 0 0x%02x 0 1 0" % PSU2,
              "sensor_set_bit 0x20 0 0x%02x 1 1 0" % PSU2, "sensor_set_bit 0x20 0 0x%02x 1 1 0" % PS_REDUNDANCY]
    # before the clock is set: the simulator stamps these with its uptime (ipmitool prints Pre-Init)
    lines += [PSU2_FAILURE, FAN2_LOWER_CRITICAL, "mc_enable 0x20"]
    return "\n".join(lines) + "\n"


def lan_config(port):
    return "\n".join([
        'name "gpufleet-test-bmc"',
        "set_working_mc 0x20",
        "  startlan 1",
        "    addr 127.0.0.1 %d" % port,
        "    priv_limit admin",
        "    allowed_auths_callback none md2 md5 straight",
        "    allowed_auths_user none md2 md5 straight",
        "    allowed_auths_operator none md2 md5 straight",
        "    allowed_auths_admin none md2 md5 straight",
        "    guid a123456789abcdefa123456789abcdef",
        "  endlan",
        '  user 2 true "%s" "%s" admin 10 none md2 md5 straight' % (USER, PASSWORD),
    ]) + "\n"


class IpmiSim:
    """ipmi_sim on 127.0.0.1:<free port>; stopped on exit, also when the test fails."""

    def __init__(self, folder):
        self.folder = str(folder)
        self.port = free_udp_port()
        self.process = None
        self.password_file = os.path.join(self.folder, "bmc-password")

    def __enter__(self):
        require_tools()
        for name, text in (("lan.conf", lan_config(self.port)), ("bmc.emu", emulation_commands())):
            with open(os.path.join(self.folder, name), "w") as handle:
                handle.write(text)
        descriptor = os.open(self.password_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "w") as handle:
            handle.write(PASSWORD)
        self.process = subprocess.Popen(  # the console on stdin takes the commands of add_events
            ["ipmi_sim", "-c", os.path.join(self.folder, "lan.conf"), "-f", os.path.join(self.folder, "bmc.emu"),
             "-s", os.path.join(self.folder, "state")],
            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            self._wait_until_answering()
            self.ipmitool("sel", "time", "set", "now", check=True)
            self.add_events(REDUNDANCY_LOST, PSU2_FAILURE, FAN2_LOWER_CRITICAL)
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc):
        self.stop()

    def stop(self):
        if self.process is None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=5)
        try:
            self.process.stdin.close()
        except OSError:
            pass
        self.process = None

    def connection(self):
        return ["-I", "lanplus", "-C", str(CIPHER_SUITE), "-H", "127.0.0.1", "-p", str(self.port), "-U", USER,
                "-f", self.password_file]

    def ipmitool(self, *args, check=False):
        result = subprocess.run(["ipmitool"] + self.connection() + ["-Z"] + list(args), capture_output=True,
                                text=True, timeout=30, check=False)
        if check and result.returncode != 0:
            raise AssertionError("ipmitool %s: %s" % (" ".join(args), result.stderr))
        return result

    def _wait_until_answering(self):
        deadline = time.monotonic() + START_SECONDS
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise AssertionError("ipmi_sim exited with status %s" % self.process.returncode)
            if self.ipmitool("sel", "time", "get").returncode == 0:
                return
            time.sleep(0.2)
        raise AssertionError("ipmi_sim did not answer on 127.0.0.1:%d within %ss" % (self.port, START_SECONDS))

    def add_events(self, *commands):
        """Adds records through the simulator's console and waits until the event log holds them."""
        before = self._record_count()
        self.process.stdin.write(("\n".join(commands) + "\n").encode())
        self.process.stdin.flush()
        deadline = time.monotonic() + START_SECONDS
        while self._record_count() < before + len(commands):
            if time.monotonic() > deadline:
                raise AssertionError("ipmi_sim did not log the records %s" % (commands,))
            time.sleep(0.2)

    def _record_count(self):
        result = self.ipmitool("sel", "elist")
        return sum(1 for line in result.stdout.splitlines() if "|" in line)
