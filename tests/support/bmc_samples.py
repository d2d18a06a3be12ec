"""ipmitool output of the project's own, in the formats `ipmitool sdr elist` and `ipmitool sel elist` print, and a
host that answers them."""

import calendar

from ansible_collections.gpufleet.core.plugins.module_utils.host_io import ReplayHost, command_key

# `ipmitool sdr elist` of a GPU server, written for these tests: two PSUs (PSU2 failed), lost redundancy,
# one fan below its lower critical threshold, one slow, inlet 41 C above its non-critical threshold.
SDR_ELIST = """\
Inlet Temp       | 04h | unc | 55.1 | 41 degrees C
Exhaust Temp     | 05h | ok  | 55.2 | 52 degrees C
FAN1             | 30h | ok  | 29.1 | 6000 RPM
FAN2             | 31h | lcr | 29.2 | 400 RPM
FAN3             | 32h | lnc | 29.3 | 1800 RPM
FAN4             | 33h | ns  | 29.4 | No Reading
Pwr Consumption  | 70h | ok  | 21.1 | 2880 Watts
PSU1 Status      | 71h | ok  | 10.1 | Presence detected
PSU2 Status      | 72h | ok  | 10.2 | Presence detected, Failure detected, Power Supply AC lost
PS Redundancy    | 73h | ok  | 10.3 | Redundancy Lost
CPU1 VCORE       | 80h | ok  |  3.1 | 1.79 Volts
"""


# `ipmitool -Z sel elist` as ipmitool 1.8.19 prints it (two-digit years, GMT), with a record from before the
# BMC clock was set, written for these tests.
SEL_ELIST = """\
   1 |  Pre-Init  |0000011205| Power Supply PSU2 Status | Failure detected | Asserted
   2 | 11/29/26 | 21:13:50 GMT | Fan FAN2 | Lower Critical going low  | Asserted | Reading 400 < Threshold 500 RPM
   3 | 11/29/26 | 21:14:02 GMT | Power Supply PS Redundancy | Redundancy Lost | Asserted
   4 | 11/29/26 | 22:00:00 GMT | Temperature Inlet Temp | Upper Non-critical going high | Asserted | Reading 41 > Threshold 40 degrees C
   5 | 11/30/26 | 01:00:00 GMT | Temperature Inlet Temp | Upper Non-critical going high | Deasserted | Reading 38 < Threshold 40 degrees C
   6 | 11/30/26 | 02:00:00 GMT | Memory #0x2b | Uncorrectable ECC | Asserted
   7 | 10/01/26 | 02:00:00 GMT | Critical Interrupt #0x90 | Bus Fatal Error | Asserted
"""

IPMITOOL = "/usr/bin/ipmitool"
NOW = calendar.timegm((2026, 11, 30, 6, 0, 0))


def key(*args):
    return command_key([IPMITOOL, "-I", "open", "-Z"] + list(args))


def answering_host(overrides=None):
    commands = {
        key("sdr", "elist"): {"rc": 0, "stdout": SDR_ELIST},
        key("sel", "elist"): {"rc": 0, "stdout": SEL_ELIST},
        key("sel", "time", "get"): {"rc": 0, "stdout": "11/30/26 06:00:42 GMT\n"},
        key("dcmi", "power", "reading"): {"rc": 1, "stdout": "", "stderr": "DCMI request failed because: Invalid command (c1)"},
    }
    commands.update(overrides or {})
    return ReplayHost({"now": NOW, "dirs": {"/dev": ["null", "ipmi0", "tty"]}, "bins": {"ipmitool": IPMITOOL},
                       "files": {}, "commands": commands})
