"""gpufleet.core.gpu_evidence's own parts: the window's times and the replay of recorded windows."""

import pytest

from ansible_collections.gpufleet.core.plugins.module_utils.host_io import command_key
from ansible_collections.gpufleet.core.plugins.modules.gpu_evidence import WindowReplayHost, parse_time


@pytest.mark.parametrize("text, epoch", [
    ("2026-11-30T06:00:00Z", 1796018400.0),
    ("2026-11-30 06:00:00", 1796018400.0),
    ("2026-11-30T07:00:00+01:00", 1796018400.0),
    ("2026-11-30T01:30:00-0430", 1796018400.0),
    ("2026-11-30T06:00Z", 1796018400.0),
    ("1796018400", 1796018400.0),
    ("2026-11-30T06:00:00.250Z", 1796018400.0),
])
def test_window_times(text, epoch):
    assert parse_time(text) == epoch


@pytest.mark.parametrize("text", ["yesterday", "2026-13-45", "2026-11-31T06:00:00Z", "30/11/2026 06:00", ""])
def test_window_times_that_are_not_times(text):
    with pytest.raises(ValueError):
        parse_time(text)


def test_a_replay_answers_another_window_with_the_recorded_one():
    recorded = ["/usr/bin/journalctl", "-o", "json", "--since=@1795932000", "--until=@1796018400", "-u", "a.service"]
    host = WindowReplayHost({"commands": {command_key(recorded): {"rc": 0, "stdout": "{}\n"}}})
    asked = ["/usr/bin/journalctl", "-o", "json", "--since=@1796000000", "--until=@1796010000", "-u", "a.service"]
    assert host.run(asked, 5).stdout == "{}\n"
    other_unit = asked[:-1] + ["b.service"]
    assert host.run(other_unit, 5).missing
    assert host.run(["/usr/bin/nvidia-smi", "-q"], 5).missing
