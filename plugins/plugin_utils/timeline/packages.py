# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Driver package installs, upgrades and removals from /var/log/dpkg.log and /var/log/dnf.rpm.log.

dpkg.log is written in the host's local time with no zone: it is moved to UTC by the host's UTC offset at
the time of the collection (a change of daylight saving time inside the window is not seen). dnf.rpm.log
carries its offset."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import calendar
import re

from ansible_collections.gpufleet.core.plugins.plugin_utils.timeline.events import event

SOURCE = "packages"
GPU_PACKAGE_RE = re.compile(r"nvidia|cuda|libnvidia|dcgm|fabricmanager|nvlsm|libnccl|libxnvctrl", re.I)
_DPKG_RE = re.compile(r"^(\d{4})-(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d) (install|upgrade|remove|purge) (\S+) (\S+) (\S+)")
_DNF_RE = re.compile(r"^(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(?:\.\d+)?(Z|[+-]\d\d:?\d\d) \w+ "
                     r"(Installed|Upgrade|Upgraded|Downgrade|Downgraded|Erase|Reinstall|Reinstalled|Obsoleted): (\S+)")
_KINDS = {"install": "package_install", "upgrade": "package_upgrade", "remove": "package_remove",
          "purge": "package_remove", "Installed": "package_install", "Upgrade": "package_upgrade",
          "Upgraded": "package_upgrade", "Downgrade": "package_downgrade", "Downgraded": "package_downgrade",
          "Erase": "package_remove", "Reinstall": "package_install", "Reinstalled": "package_install",
          "Obsoleted": "package_remove"}


def _timegm(groups):
    return float(calendar.timegm(tuple(int(part) for part in groups) + (0, 0, 0)))


def _zone_seconds(zone):
    if zone in (None, "Z"):
        return 0
    sign = -1 if zone[0] == "-" else 1
    digits = zone[1:].replace(":", "")
    return sign * (int(digits[:2]) * 3600 + int(digits[2:4]) * 60)


def dpkg_events(text, host, file_name, utc_offset_seconds=0):
    clock = "host local time (dpkg.log has no zone), moved to UTC by the host's offset %+d s" % (utc_offset_seconds or 0)
    found = []
    for number, line in enumerate((text or "").splitlines(), 1):
        match = _DPKG_RE.match(line)
        if match is None or not GPU_PACKAGE_RE.search(match.group(8)):
            continue
        action, package, old, new = match.group(7), match.group(8), match.group(9), match.group(10)
        epoch = _timegm(match.groups()[:6]) - (utc_offset_seconds or 0)
        versions = {"install": "version %s" % new, "upgrade": "%s -> %s" % (old, new)}.get(action, "version %s" % old)
        found.append(event(epoch, host, "driver", SOURCE, _KINDS[action], "dpkg %s %s (%s)" % (action, package, versions),
                           clock, file_name, number, line, package=package))
    return found


def dnf_events(text, host, file_name):
    clock = "host clock, with the offset dnf wrote"
    found = []
    for number, line in enumerate((text or "").splitlines(), 1):
        match = _DNF_RE.match(line)
        if match is None or not GPU_PACKAGE_RE.search(match.group(9)):
            continue
        epoch = _timegm(match.groups()[:6]) - _zone_seconds(match.group(7))
        found.append(event(epoch, host, "driver", SOURCE, _KINDS[match.group(8)],
                           "dnf %s %s" % (match.group(8).lower(), match.group(9)), clock, file_name, number, line,
                           package=match.group(9)))
    return found
