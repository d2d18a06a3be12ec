"""Kernel-log test helpers: UTC times, facts holding given events, the fixture pinning TZ=UTC."""

import calendar
import time

import pytest

from ansible_collections.gpufleet.core.plugins.module_utils.facts_model import new_facts


def utc_epoch(text):
    return calendar.timegm(time.strptime(text, "%Y-%m-%dT%H:%M:%S"))


NOW = utc_epoch("2026-11-30T12:00:00")


@pytest.fixture(autouse=True)
def utc_zone(monkeypatch):
    """syslog and dmesg --ctime times are local: pin the zone so results do not depend on the machine."""
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def facts_with_events(xids, kernel):
    facts = new_facts()
    facts["collected_at"] = "2026-11-30T12:00:00Z"
    facts["xid_events"] = xids
    facts["kernel_events"] = kernel
    return facts
