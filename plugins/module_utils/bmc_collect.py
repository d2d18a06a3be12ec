# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The `bmc` facts: the BMC's sensors and event log through ipmitool, in-band on the host (/dev/ipmi0)
or over LAN (the bmc_facts module, run on the controller). Read only: ipmitool is asked for the SDR,
the SEL, the SEL clock and the DCMI power reading, nothing is set.

Over LAN the password reaches ipmitool only as a file of mode 0600 (-f) that the caller writes and
removes; it is never on a command line, in the facts or in an error text."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

# The parsers (ipmi_sel, ipmi_sensors) are imported where a BMC answered: every module run compiles the
# collection's module_utils again (AnsiballZ ships sources), and most hosts have no /dev/ipmi0 to read.

# Where the kernel's IPMI driver (ipmi_devintf) puts its device, as ipmitool looks for it.
IPMI_DEVICE_PATHS = (("/dev", "ipmi0"), ("/dev/ipmi", "0"), ("/dev/ipmidev", "0"))
SDR_ARGS = ("sdr", "elist")
SEL_ARGS = ("sel", "elist")
CLOCK_ARGS = ("sel", "time", "get")
DCMI_ARGS = ("dcmi", "power", "reading")
# What the parsers could not read of one answer, listed one by one at most
MAX_PROBLEMS = 5


def new_bmc(source, address=None):
    return {
        "source": source, "address": address, "status": "complete", "reasons": [],
        "sensors": [], "sensors_left_out": 0,
        "fans": [], "power_supplies": [], "redundancy": [], "temperatures": [],
        "inlet_temperature_c": None, "exhaust_temperature_c": None,
        "power_draw_w": None, "power_draw_source": None,
        "clock_offset_s": None,
        "leak_detectors": [],
        "sel": None,
        "errors": [],
    }


def ipmi_device(host):
    """The IPMI device path on the host, or None (no BMC driver loaded, or a VM without a BMC)."""
    for folder, name in IPMI_DEVICE_PATHS:
        if name in (host.listdir(folder) or ()):
            return "%s/%s" % (folder, name)
    return None


def lan_arguments(address, user, password_file, port=623, interface="lanplus", cipher_suite=None):
    """ipmitool's LAN options; the password is read from password_file (-f), never given as an argument."""
    argv = ["-I", interface, "-H", address, "-p", str(port), "-U", user, "-f", password_file]
    if cipher_suite is not None:
        argv += ["-C", str(cipher_suite)]
    return argv


class BmcReader:
    """Runs ipmitool on a host (a LiveHost, or a recorded one) with the given connection options.
    ipmitool runs with -Z: every date it prints is UTC."""

    def __init__(self, host, ipmitool, connection=(), timeout=20, secrets=()):
        self.host = host
        self.ipmitool = ipmitool
        self.connection = list(connection)
        self.timeout = timeout
        self.secrets = [secret for secret in secrets if secret]
        self.timed_out = False

    def run(self, args):
        """(stdout or None, error reason or None). After a command timed out the BMC is taken as hung and
        nothing more is asked of it (each further query would only wait as long again)."""
        if self.timed_out:
            return None, "not asked: an earlier ipmitool command timed out"
        result = self.host.run([self.ipmitool] + self.connection + ["-Z"] + list(args), self.timeout)
        if result.rc == 0:
            return result.stdout, None
        self.timed_out = bool(result.timed_out)
        return None, self._scrub(result.describe_failure())

    def _scrub(self, text):
        for secret in self.secrets:
            text = text.replace(secret, "********")
        return text


def _add_error(bmc, args, reason):
    bmc["errors"].append({"call": "ipmitool %s" % " ".join(args), "reason": reason})


def read_bmc(reader, bmc, now, window_hours):
    """Fills bmc from the reader's answers; each query that fails is an entry in bmc.errors and the
    status says how much was read (complete, partial, failed)."""
    # here, not at the top: only a host whose BMC answered compiles the parsers (the note at the top)
    from ansible_collections.gpufleet.core.plugins.module_utils.ipmi_sel import (
        parse_sel, parse_sel_clock, window_events)
    from ansible_collections.gpufleet.core.plugins.module_utils.ipmi_sensors import parse_dcmi_power
    sdr_text, sdr_error = reader.run(SDR_ARGS)
    if sdr_error:
        _add_error(bmc, SDR_ARGS, sdr_error)
    else:
        _add_problems(bmc, SDR_ARGS, fill_sensors(bmc, sdr_text))
    sel_text, sel_error = reader.run(SEL_ARGS)
    if sel_error:
        _add_error(bmc, SEL_ARGS, sel_error)
    if sdr_error and sel_error:
        bmc["status"] = "failed"
        bmc["reasons"] = ["the BMC did not answer: %s" % sdr_error]
        return bmc
    clock_text, _clock_error = reader.run(CLOCK_ARGS)
    clock = parse_sel_clock(clock_text)
    if clock is not None and now is not None:
        bmc["clock_offset_s"] = int(round(clock - now))
    elif clock_text and clock_text.strip():
        _add_problems(bmc, CLOCK_ARGS, ["clock %r in a form not read (another locale?)" % clock_text.strip()[:80]])
    if not sel_error:
        # the records carry the BMC's clock: the window ends at the BMC's now, so a BMC clock hours off
        # neither loses nor gains records
        bmc_now = now + bmc["clock_offset_s"] if now is not None and bmc["clock_offset_s"] is not None else now
        problems = []
        bmc["sel"] = dict(window_events(parse_sel(sel_text, problems), bmc_now, window_hours),
                          window_hours=window_hours)
        _add_problems(bmc, SEL_ARGS, problems)
    # many BMCs have no DCMI: then the power draw comes from a power sensor of the SDR, without an error
    dcmi_text, _dcmi_error = reader.run(DCMI_ARGS)
    problems = []
    watts = parse_dcmi_power(dcmi_text, problems)
    _add_problems(bmc, DCMI_ARGS, problems)
    if watts is not None:
        bmc["power_draw_w"], bmc["power_draw_source"] = watts, "dcmi"
    if bmc["errors"]:
        bmc["status"] = "partial"
        bmc["reasons"] = ["%s: %s" % (error["call"], error["reason"]) for error in bmc["errors"]]
    return bmc


def _add_problems(bmc, args, problems):
    """What the parsers could not read of an answer (a line cut, another locale): errors, so the reading is
    partial and says why."""
    for problem in problems[:MAX_PROBLEMS]:
        _add_error(bmc, args, problem)
    if len(problems) > MAX_PROBLEMS:
        _add_error(bmc, args, "%d more parts not read" % (len(problems) - MAX_PROBLEMS))


def fill_sensors(bmc, sdr_text):
    """Fills bmc from the SDR's text; returns what of it could not be read."""
    # here, not at the top: only a host whose BMC answered compiles the parsers (the note at the top)
    from ansible_collections.gpufleet.core.plugins.module_utils.ipmi_sensors import (
        MAX_SENSORS, parse_sdr, summarize_sensors)
    problems = []
    sensors = parse_sdr(sdr_text, problems)
    bmc.update(summarize_sensors(sensors))
    bmc["sensors"] = [{key: sensor[key] for key in ("name", "kind", "status", "reading", "unit", "states")}
                      for sensor in sensors[:MAX_SENSORS]]
    bmc["sensors_left_out"] = max(0, len(sensors) - MAX_SENSORS)
    return problems


def collect_bmc_in_band(host, facts, window_hours, timeout):
    """gather_subset bmc: the host's own BMC through /dev/ipmi0. A host without the device has no BMC
    to read (status no_device, no error); one with the device but without ipmitool, or without the
    permission to open it, gets an error entry."""
    bmc = new_bmc("in_band")
    facts["bmc"] = bmc
    device = ipmi_device(host)
    if device is None:
        bmc["status"] = "no_device"
        return bmc
    ipmitool = host.find_bin("ipmitool")
    if not ipmitool:
        bmc["status"] = "failed"
        bmc["errors"].append({"call": "ipmitool", "reason": "ipmitool is not installed, though %s is there" % device})
        bmc["reasons"] = ["ipmitool is not installed"]
    else:
        read_bmc(BmcReader(host, ipmitool, ("-I", "open"), timeout), bmc, host.now(), window_hours)
    for error in bmc["errors"]:
        facts["errors"].append({"gpu": None, "call": error["call"], "reason": error["reason"], "code": None})
    return bmc
