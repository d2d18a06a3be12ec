#!/usr/bin/env python
"""Writes the demo fleet's fixtures, inventories/demo/fixtures/<host>.json.

Each host of tools/demo_scenarios.py is collected by the real gpu_facts code (Collection with
record=True) against a simulated libnvidia-ml and a simulated host, so a fixture holds exactly
what the collectors asked for: every NVML call, file, folder and command. The output is
byte-identical from run to run; tests/unit/tools/test_demo_fleet.py checks the committed files.

    .venv/bin/python tools/make_demo_fleet.py            # all hosts
    .venv/bin/python tools/make_demo_fleet.py --check    # exit 1 when a fixture is stale
    .venv/bin/python tools/make_demo_fleet.py gpu-h100-ok-01 --out /tmp/fixtures
"""

import argparse
import contextlib
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
for _path in (HERE, ROOT, os.path.join(ROOT, "collections")):
    if _path not in sys.path:
        sys.path.insert(0, _path)

import pynvml  # noqa: E402  pylint: disable=wrong-import-position

import demo_evidence  # noqa: E402  pylint: disable=wrong-import-position
import demo_scenarios  # noqa: E402  pylint: disable=wrong-import-position
from ansible_collections.gpufleet.core.plugins.module_utils.collector import Collection  # noqa: E402
from ansible_collections.gpufleet.core.plugins.module_utils.evidence import collect_evidence  # noqa: E402
from ansible_collections.gpufleet.core.plugins.module_utils.host_io import RecordingHost, ReplayHost  # noqa: E402
from simulator.nvml_sim import SimulatedNvmlLibrary  # noqa: E402

FIXTURES = os.path.join(ROOT, "inventories", "demo", "fixtures")
# The simulated hosts have no process address spaces (/proc/<pid>/maps) to scan for driver clients; a host
# records workload, host_pressure and fabric only when its scenario says so (spec "gather_subset").
DEMO_SUBSETS = ["all", "!driver_clients", "!workload", "!host_pressure", "!fabric"]
# containers nested deeper than this are written on one line: one NVML call, command or folder per line
PRETTY_DEPTH = 3


@contextlib.contextmanager
def known_error_strings():
    """pynvml asks the library for the text of an error code it has not seen before, and remembers
    it for the rest of the process; the recorder keeps such calls. Knowing every text up front keeps
    a fixture independent of what ran before it (the recorder still stores every code's text)."""
    cache = pynvml.NVMLError._errcode_to_string  # pylint: disable=protected-access
    saved = dict(cache)
    texts = SimulatedNvmlLibrary({})
    for name in dir(pynvml):
        if name.startswith("NVML_ERROR_"):
            code = getattr(pynvml, name)
            cache.setdefault(code, texts.nvmlErrorString(code).decode())
    try:
        yield
    finally:
        cache.clear()
        cache.update(saved)


def record(spec):
    """The fixture document of one demo host, recorded through the real collectors."""
    host = ReplayHost(spec["host"])
    options = dict(gather_subset=spec.get("gather_subset", DEMO_SUBSETS), record=True, scrub=False, host=host,
                   services=spec.get("services"))
    if spec["source"] == "nvidia_smi":
        collection = Collection(source="nvidia_smi", **options)
    else:
        collection = Collection(source="auto", nvml_library=SimulatedNvmlLibrary(spec["nvml"]), pynvml=pynvml,
                                **options)
    with known_error_strings():
        facts, document = collection.run()
    document["recorded_at"] = demo_scenarios.RECORDED_AT
    record_evidence(spec, facts, document)
    return document


def record_evidence(spec, facts, document):
    """For a host with an incident story (tools/demo_evidence.py), what the real evidence collector asks for, as
    incident.yml asks it (no policy services in the demo; the GPU processes of the facts; the default window),
    added to the fixture's host part. Only answered calls are kept: the rest replays as not recorded."""
    story = demo_evidence.STORIES.get(spec["name"])
    if story is None:
        return
    recorder = RecordingHost(demo_evidence.IncidentHost(ReplayHost(document["host"]), story, facts))
    collect_evidence(recorder, pids=demo_evidence.gpu_pids(facts))
    host = document["host"]
    host["bins"].update((name, path) for name, path in recorder.bins.items() if path)
    host["files"].update((path, text) for path, text in recorder.files.items() if text is not None)
    host["commands"].update((key, result) for key, result in recorder.commands.items() if not result["missing"])


def to_json(value, depth=0):
    """JSON with sorted keys: one key per line near the top, compact below PRETTY_DEPTH."""
    if depth >= PRETTY_DEPTH or not isinstance(value, (dict, list)) or not value:
        return json.dumps(value, sort_keys=True, separators=(",", ":"))
    pad = " " * (depth + 1)
    if isinstance(value, dict):
        items = ["%s%s: %s" % (pad, json.dumps(key), to_json(value[key], depth + 1)) for key in sorted(value)]
        return "{\n%s\n%s}" % (",\n".join(items), " " * depth)
    items = [pad + to_json(item, depth + 1) for item in value]
    return "[\n%s\n%s]" % (",\n".join(items), " " * depth)


def fixture_text(document):
    return to_json(document) + "\n"


def select_hosts(names):
    hosts = demo_scenarios.demo_hosts()
    if not names:
        return hosts
    known = dict((spec["name"], spec) for spec in hosts)
    unknown = sorted(set(names) - set(known))
    if unknown:
        raise SystemExit("unknown demo host(s): %s; known: %s" % (", ".join(unknown), ", ".join(sorted(known))))
    return [known[name] for name in names]


def render_fleet(names=None):
    """{file name: fixture text} of the chosen hosts (all when names is empty)."""
    return dict(("%s.json" % spec["name"], fixture_text(record(spec))) for spec in select_hosts(names))


def stale_files(rendered, folder):
    stale = []
    for filename, text in sorted(rendered.items()):
        path = os.path.join(folder, filename)
        try:
            with open(path) as handle:
                current = handle.read()
        except IOError:
            current = None
        if current != text:
            stale.append(path)
    return stale


def write_fleet(rendered, folder):
    if not os.path.isdir(folder):
        os.makedirs(folder)
    for filename, text in sorted(rendered.items()):
        with open(os.path.join(folder, filename), "w") as handle:
            handle.write(text)
        print("%7.1f KB  %s" % (len(text) / 1024.0, os.path.join(folder, filename)))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("hosts", nargs="*", help="demo hosts to write (default: all)")
    parser.add_argument("--out", default=FIXTURES, help="folder for the fixtures (default: %(default)s)")
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 when a fixture differs")
    options = parser.parse_args(argv)
    rendered = render_fleet(options.hosts)
    if options.check:
        stale = stale_files(rendered, options.out)
        for path in stale:
            print("stale: %s (run tools/make_demo_fleet.py)" % path)
        return 1 if stale else 0
    write_fleet(rendered, options.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
