"""Times that tests read and record, never assert on (bench/README.md quotes them): one JSON line per
measurement appended to $GPUFLEET_TEST_TIMINGS, else bench/results/test-timings.jsonl (ignored by git)."""

import datetime
import json
import os

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEFAULT_PATH = os.path.join(ROOT, "bench", "results", "test-timings.jsonl")


def record_timing(name, seconds, **details):
    """Appends {"test", "seconds", "at", "load", **details} and prints it (pytest -s shows it)."""
    entry = dict(details, test=name, seconds=round(seconds, 4),
                 at=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
                 load=[round(load, 2) for load in os.getloadavg()], cpus=os.cpu_count())
    path = os.environ.get("GPUFLEET_TEST_TIMINGS") or DEFAULT_PATH
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(json.dumps(entry, sort_keys=True) + "\n")
    print("timing: %s" % json.dumps(entry, sort_keys=True))
    return entry
